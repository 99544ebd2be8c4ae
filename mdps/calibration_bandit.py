"""Calibration bandits: P prompts x A answers, each answer correct with a known probability, and a
grid of M confidence levels the policy reports with its answer (seed row 002-004#B6, RLCR).

A policy is a table pi(y, m | x) (P, A, M) over (answer, confidence bin); answer y of prompt x is
correct with probability ``p[x, y]`` (the uncertainty the confidence should report); the levels
are q_m = m / (M - 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class CalibrationBandit:
    """p: (P, A) correctness probabilities in [0, 1]; M: the number of confidence levels."""

    p: np.ndarray
    M: int = 11
    name: str = "calibration-bandit"

    def __post_init__(self) -> None:
        p = np.asarray(self.p, dtype=np.float64)
        if p.ndim != 2 or p.shape[1] < 2 or not np.all((p >= 0) & (p <= 1)):
            raise ValueError(f"p must be a (P, A >= 2) table of probabilities, got shape {p.shape}")
        if isinstance(self.M, bool) or not isinstance(self.M, int) or self.M < 2:
            raise ValueError(f"M (confidence levels) must be an integer >= 2, got {self.M!r}")

    @property
    def levels(self) -> np.ndarray:
        """(M,) the confidence levels q_m = m / (M - 1)."""
        return np.linspace(0.0, 1.0, self.M)


def brier_reward(p: np.ndarray, q: np.ndarray, brier: bool = True) -> np.ndarray:
    """E[1[c] - (q - 1[c])^2] for c ~ Bernoulli(p), broadcast over ``p`` and ``q``: p - p (1 - q)^2
    - (1 - p) q^2 (``brier=False``: the binary reward p alone)."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    if not brier:
        return p + 0.0 * q
    return p - p * (1.0 - q) ** 2 - (1.0 - p) * q**2


def expected_calibration_error(inst: CalibrationBandit, pi: np.ndarray) -> float:
    """ECE of ``pi (P, A, M)`` (prompts uniform): sum_m P(m) |P(correct | m) - q_m|."""
    w = np.asarray(pi, float).sum(axis=1) / pi.shape[0]  # (P, M) -> mass per prompt and level
    mass = w.sum(0)  # (M,)
    hit = np.einsum("xam,xa->m", pi, inst.p) / pi.shape[0]  # (M,) P(correct, m)
    ok = mass > 0
    return float(np.abs(hit[ok] - inst.levels[ok] * mass[ok]).sum())
