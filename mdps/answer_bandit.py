"""Answer bandits: P prompts x A answers with a base model's logits and a set of correct answers.

The testbed of the reasoning-boundary analysis (seed row 002-004#G3,
:mod:`theorylab.algorithms.policy_optimization.reasoning_boundary`): a policy is a table of
answer log-probabilities per prompt; pass@k = 1 - (1 - pi(correct | x))^k exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class AnswerBandit:
    """base_logits: (P, A) the base model's answer logits; correct: (P, A) bool, each prompt's
    correct answers (at least one)."""

    base_logits: np.ndarray
    correct: np.ndarray
    name: str = "answer-bandit"

    def __post_init__(self) -> None:
        b = np.asarray(self.base_logits)
        if b.ndim != 2 or b.shape[1] < 2 or not np.all(np.isfinite(b)):
            raise ValueError(f"base_logits must be a finite (P, A >= 2) table, got shape {b.shape}")
        c = np.asarray(self.correct)
        if c.shape != b.shape or c.dtype != bool or not c.any(axis=1).all():
            raise ValueError(
                f"correct must be a (P, A) = {b.shape} bool table with a correct answer in every "
                f"row, got shape {c.shape}, dtype {c.dtype}"
            )

    @property
    def base_logp(self) -> np.ndarray:
        """(P, A) the base model's answer log-probabilities."""
        b = np.asarray(self.base_logits, dtype=np.float64)
        m = b.max(axis=1, keepdims=True)
        return b - m - np.log(np.exp(b - m).sum(axis=1, keepdims=True))

    def accuracy(self, logp: np.ndarray) -> np.ndarray:
        """(..., P) pi(correct | x) of (..., P, A) answer log-probability tables."""
        return (np.exp(logp) * self.correct).sum(axis=-1)
