"""Discrete-time linear-quadratic games: x' = A x + B u + D w, stage cost x'Q x + u'R u.

The testbed of the H-infinity (soft-constrained zero-sum game) controller of seed row
002-004#D4 (:mod:`theorylab.algorithms.robust.hinf_lq`): the controller u minimises and the
disturber w maximises sum_t x_t'Q x_t + u_t'R u_t - gamma^2 |w_t|^2 from the start state x0;
gamma (the attenuation level) belongs to the algorithm, not to the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LQGame:
    """A (n, n), B (n, m), D (n, q), Q (n, n) symmetric positive definite, R (m, m) symmetric
    positive definite, x0 (n,) the start state."""

    A: np.ndarray
    B: np.ndarray
    D: np.ndarray
    Q: np.ndarray
    R: np.ndarray
    x0: np.ndarray
    name: str = "lq-game"

    def __post_init__(self) -> None:
        A, B, D = (np.asarray(M, dtype=np.float64) for M in (self.A, self.B, self.D))
        n = A.shape[0] if A.ndim == 2 else -1
        if A.ndim != 2 or A.shape != (n, n) or n < 1:
            raise ValueError(f"A must be a square (n, n) matrix, got shape {A.shape}")
        for label, M in (("B", B), ("D", D)):
            if M.ndim != 2 or M.shape[0] != n or M.shape[1] < 1:
                raise ValueError(f"{label} must be an (n={n}, k >= 1) matrix, got {M.shape}")
        for label, M, k in (("Q", self.Q, n), ("R", self.R, B.shape[1])):
            M = np.asarray(M, dtype=np.float64)
            if M.shape != (k, k) or not np.allclose(M, M.T) or np.linalg.eigvalsh(M).min() <= 0:
                raise ValueError(
                    f"{label} must be a symmetric positive definite ({k}, {k}) matrix, got shape "
                    f"{M.shape}"
                )
        x0 = np.asarray(self.x0, dtype=np.float64)
        if x0.shape != (n,):
            raise ValueError(f"x0 must be an (n={n},) vector, got shape {x0.shape}")
        mats = (A, B, D, self.Q, self.R, x0)
        if not all(np.all(np.isfinite(np.asarray(M, dtype=np.float64))) for M in mats):
            raise ValueError(f"{self.name}: the matrices must be finite")

    @property
    def n(self) -> int:
        return int(np.asarray(self.A).shape[0])

    @property
    def m(self) -> int:
        return int(np.asarray(self.B).shape[1])

    @property
    def q(self) -> int:
        return int(np.asarray(self.D).shape[1])


def random_lq_game(n: int = 3, m: int = 1, q: int = 1, rho: float = 1.05, seed: int = 0) -> LQGame:
    """A = rho G / spectral_radius(G) (G standard normal: open-loop unstable for rho > 1),
    B, D standard normal, Q = I_n, R = I_m, x0 = (1, ..., 1) / sqrt(n)."""
    if n < 1 or m < 1 or q < 1 or not (np.isfinite(rho) and rho > 0):
        raise ValueError(f"need n, m, q >= 1 and rho > 0; got n={n}, m={m}, q={q}, rho={rho}")
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((n, n))
    A = rho * G / np.abs(np.linalg.eigvals(G)).max()
    B = rng.standard_normal((n, m))
    D = rng.standard_normal((n, q))
    return LQGame(
        A, B, D, np.eye(n), np.eye(m), np.ones(n) / np.sqrt(n),
        name=f"lq-game:n={n},m={m},q={q},rho={rho:g},seed={seed}",
    )  # fmt: skip
