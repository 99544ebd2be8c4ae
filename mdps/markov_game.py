"""Tabular two-player zero-sum Markov games, finite horizon (seed row 001#43; the offline
equilibrium learner of ``algorithms/offline/markov_game_pessimism.py``).

:class:`TabularMarkovGame` -- stages ``h = 0..H-1``, states S, the max player's actions A and
the min player's actions B; ``P (H, S, A, B, S)`` the transition kernel, ``R (H, S, A, B)`` the
mean reward in [0, 1] that the max player receives and the min player pays, ``mu0 (S,)`` the
initial distribution. A policy pair is ``x (H, S, A)`` (max player) and ``y (H, S, B)`` (min
player). Exact solvers (matrix-game LP, Nash backward induction, best responses, duality gap)
are on the planning floor: ``theorylab.algorithms.planning.markov_game``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class TabularMarkovGame:
    """P ``(H, S, A, B, S)``, R ``(H, S, A, B)`` in [0, 1], mu0 ``(S,)``."""

    P: np.ndarray
    R: np.ndarray
    mu0: np.ndarray
    name: str = "markov-game"

    def __post_init__(self) -> None:
        P, R, mu0 = np.asarray(self.P), np.asarray(self.R), np.asarray(self.mu0)
        if P.ndim != 5 or P.shape[1] != P.shape[4]:
            raise ValueError(f"{self.name}: P must be an (H, S, A, B, S) array, got {P.shape}")
        if R.shape != P.shape[:4]:
            raise ValueError(f"{self.name}: R must have shape {P.shape[:4]}, got {R.shape}")
        if (P < 0).any() or np.abs(P.sum(-1) - 1.0).max() > 1e-9:
            raise ValueError(f"{self.name}: every P[h, s, a, b] must be a probability vector")
        if (R < 0).any() or (R > 1).any():
            raise ValueError(f"{self.name}: rewards must lie in [0, 1]")
        if mu0.shape != (P.shape[1],) or (mu0 < 0).any() or abs(mu0.sum() - 1.0) > 1e-9:
            raise ValueError(f"{self.name}: mu0 must be a probability vector of length S")

    @property
    def horizon(self) -> int:
        return int(self.P.shape[0])

    @property
    def S(self) -> int:
        return int(self.P.shape[1])

    @property
    def A(self) -> int:
        return int(self.P.shape[2])

    @property
    def B(self) -> int:
        return int(self.P.shape[3])
