"""Verifiable rewards on generated text: exact match against the dataset's reference answer.

``exact-match``: reward 1 when the completion, decoded up to its first EOS and stripped of
surrounding white space, equals the answer (stripped), else 0 -- the outcome reward of
DeepSeekMath/R1-style RL on verifiable answers (Shao et al. 2024, sec. 4.1 "rule-based" rewards),
without format rewards. A completion that never emits EOS (cut at ``max_new_tokens``) is scored
on the text it produced. The learned alternative is :mod:`theorylab.algorithms.deep.reward_model`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

REWARDS = ("exact-match",)


def exact_match(completion: str, answer: str) -> float:
    """1.0 when ``completion.strip() == answer.strip()``, else 0.0."""
    return float(completion.strip() == answer.strip())


def exact_match_scores(completions: Sequence[str], answers: Sequence[str]) -> np.ndarray:
    """Exact-match rewards (N,) of decoded completions (N,) against their answers (N,)."""
    return np.array([exact_match(c, a) for c, a in zip(completions, answers, strict=True)])
