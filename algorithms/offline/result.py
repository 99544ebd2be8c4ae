"""What every offline algorithm returns, and the greedy step they share."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

GREEDY_ATOL = 1e-10
"""Ties in argmax_a Q: actions within ``GREEDY_ATOL * (1 + |max Q|)`` of the maximum count as tied
and the smallest index wins. This makes the choice insensitive to round-off (e.g. the one-hot PEVI
and tabular PEVI computations agree on the policy, not only on Q up to 1e-15)."""


def greedy(Q: np.ndarray, atol: float = GREEDY_ATOL) -> np.ndarray:
    """Deterministic greedy policy of ``Q (..., A)`` -> ``(...)`` int64, ties to the smallest
    index (within a relative tolerance ``atol``)."""
    best = Q.max(axis=-1, keepdims=True)
    return np.argmax(Q >= best - atol * (1.0 + np.abs(best)), axis=-1).astype(np.int64)


@dataclass
class OfflineResult:
    """The output of ``fit(name, dataset)``. Every array has a leading seed axis B.

    policy: finite horizon ``(B, H, S)`` int (deterministic) or ``(B, H, S, A)`` float;
        discounted ``(B, S)`` int or ``(B, S, A)`` float.
    value_estimate: ``(B,)`` the algorithm's own estimate of its policy's value from mu0,
        ``V_hat_1(mu0)`` (a pessimistic lower bound on the good event for the pessimistic
        algorithms; NaN where an algorithm has none).
    V: ``(B, H+1, S)`` (``V[:, H] = 0``) or ``(B, S)``; Q: ``(B, H, S, A)`` or ``(B, S, A)``.
    pessimistic: whether ``value_estimate`` is meant as a lower bound (theory.md 10.2).
    params: the parameters used (constants included); info: diagnostics (seconds, beta, T, ...).
    """

    algorithm: str
    policy: np.ndarray
    value_estimate: np.ndarray
    V: np.ndarray | None
    Q: np.ndarray | None
    pessimistic: bool
    params: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)

    @property
    def n_seeds(self) -> int:
        return int(self.value_estimate.shape[0])

    def only(self, i: int) -> OfflineResult:
        """Seed row i alone (arrays keep a seed axis of length 1)."""
        sl = slice(i, i + 1)
        return replace(
            self,
            policy=self.policy[sl],
            value_estimate=self.value_estimate[sl],
            V=None if self.V is None else self.V[sl],
            Q=None if self.Q is None else self.Q[sl],
        )


def value_at_start(V0: np.ndarray, mu0: np.ndarray) -> np.ndarray:
    """``V(mu0) = sum_s mu0(s) V(s)`` per seed: ``V0 (B, S)`` -> ``(B,)``."""
    return V0 @ np.asarray(mu0, dtype=np.float64)
