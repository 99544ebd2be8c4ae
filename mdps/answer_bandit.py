"""Answer bandits: P prompts x A answers with a base model's logits and one correct answer each.

The testbed of the reasoning-boundary analysis (seed row 002-004#G3,
:mod:`theorylab.algorithms.policy_optimization.reasoning_boundary`): a policy is a table of
answer log-probabilities per prompt; pass@k = 1 - (1 - pi(correct | x))^k exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class AnswerBandit:
    """base_logits: (P, A) the base model's answer logits; correct: (P,) each prompt's answer."""

    base_logits: np.ndarray
    correct: np.ndarray
    name: str = "answer-bandit"

    def __post_init__(self) -> None:
        b = np.asarray(self.base_logits)
        if b.ndim != 2 or b.shape[1] < 2 or not np.all(np.isfinite(b)):
            raise ValueError(f"base_logits must be a finite (P, A >= 2) table, got shape {b.shape}")
        c = np.asarray(self.correct)
        if c.shape != (b.shape[0],) or c.min() < 0 or c.max() >= b.shape[1]:
            raise ValueError(
                f"correct must be (P,) = ({b.shape[0]},) answer indices in 0..{b.shape[1] - 1}"
            )
