r"""A memoryless language model with an additive reward: the setting of Yang et al. (2024).

Responses are y = (y_1..y_n), i.i.d. tokens from p (V,), and the reward is additive,
r(y) = sum_t w(y_t), with integer token rewards w (V,) in {0..m}. Every quantity of the
alignment problem is a function of the reward level R = r(y) in {0..n m}:

* the level distribution under p, ``p_R = (sum_v p_v x^{w_v})^n`` as a polynomial (exact
  convolution);
* any policy that weights responses by a function of their reward, phi(y) = p(y) g(r(y)), is
  a distribution q_R over levels, with ``KL(phi || p) = KL(q || p_R)`` (the ratio phi/p is
  constant on a level) and ``E_phi r = sum_R R q_R``. The tilted distribution
  phi_lambda ∝ p e^{lambda r} and best-of-N are both of this form.

Used by :mod:`theorylab.algorithms.policy_optimization.alignment_asymptotics`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class MemorylessLM:
    """p (V,) token probabilities (> 0, sum 1); w (V,) integer token rewards >= 0; n tokens."""

    p: np.ndarray
    w: np.ndarray
    n: int
    name: str = "memoryless-lm"
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        p, w = np.asarray(self.p, dtype=np.float64), np.asarray(self.w)
        if p.ndim != 1 or p.size < 2 or np.any(p <= 0) or abs(p.sum() - 1) > 1e-12:
            raise ValueError(f"p must be a full-support distribution over V >= 2 tokens, got {p}")
        if w.shape != p.shape or np.any(w < 0) or np.any(w != np.round(w)):
            raise ValueError(f"w must be {p.size} non-negative integers, got {w}")
        if isinstance(self.n, bool) or int(self.n) != self.n or self.n < 1:
            raise ValueError(f"n must be a positive integer, got {self.n!r}")

    @property
    def levels(self) -> np.ndarray:
        """(n m + 1,) the reward levels 0..n m."""
        return np.arange(int(self.n) * int(np.max(self.w)) + 1, dtype=np.float64)

    def level_distribution(self) -> np.ndarray:
        """p_R (n m + 1,): the law of r(y) under p^n, by n exact convolutions."""
        token = np.zeros(int(np.max(self.w)) + 1)
        np.add.at(token, np.asarray(self.w, dtype=int), np.asarray(self.p, dtype=np.float64))
        out = np.ones(1)
        for _ in range(int(self.n)):
            out = np.convolve(out, token)
        return out / out.sum()
