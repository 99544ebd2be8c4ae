"""Exact solvers for tabular two-player zero-sum Markov games (finite horizon; the model is
:class:`theorylab.mdps.markov_game.TabularMarkovGame`).

* :func:`matrix_game` -- the value and maximin / minimax strategies of a matrix game
  ``max_x min_y x^T M y`` by two LPs (scipy ``linprog``, HiGHS);
* :func:`nash_backward_induction` -- ``V*_h(s) = val(R_h(s) + P_h(s) V*_{h+1})`` with the
  stage-wise equilibrium strategies;
* :func:`evaluate` -- ``V^{x, y}`` of a policy pair;
* :func:`best_response_values` -- ``V^{dagger, y}`` (the max player's best response to y) and
  ``V^{x, dagger}`` (the min player's to x), each an MDP solved by backward induction;
* :func:`duality_gap` -- ``V^{dagger, y}(mu0) - V^{x, dagger}(mu0) >= 0``, zero exactly at a
  Nash equilibrium.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog


def _maximin(M: np.ndarray) -> tuple[float, np.ndarray]:
    """``(v, x)``: ``max_x min_b (x^T M)_b`` for M ``(A, B)``."""
    A, B = M.shape
    c = np.zeros(A + 1)
    c[-1] = -1.0  # maximise v
    A_ub = np.hstack([-M.T, np.ones((B, 1))])  # v - (M^T x)_b <= 0
    A_eq = np.hstack([np.ones((1, A)), np.zeros((1, 1))])
    bounds = [(0, None)] * A + [(None, None)]
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(B), A_eq=A_eq, b_eq=[1.0], bounds=bounds,
                  method="highs")  # fmt: skip
    if res.status != 0:
        raise ValueError(f"matrix game LP failed: {res.message}")
    x = np.clip(res.x[:A], 0.0, None)
    return float(res.x[-1]), x / x.sum()


def matrix_game(M: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """``(value, x (A,), y (B,))`` of the zero-sum matrix game ``max_x min_y x^T M y``."""
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2 or not np.all(np.isfinite(M)):
        raise ValueError(f"a matrix game needs a finite (A, B) matrix, got shape {M.shape}")
    v, x = _maximin(M)
    _, y = _maximin(-M.T)  # the min player maximises -x^T M y
    return v, x, y


def stage_matrix(game, h: int, V_next: np.ndarray) -> np.ndarray:
    """``(S, A, B)``: ``R_h + P_h V_{h+1}``."""
    return game.R[h] + game.P[h] @ V_next


def nash_backward_induction(game):
    """``(V (H+1, S), x (H, S, A), y (H, S, B))``: the game's value and an equilibrium."""
    H, S, A, B = game.horizon, game.S, game.A, game.B
    V = np.zeros((H + 1, S))
    x, y = np.zeros((H, S, A)), np.zeros((H, S, B))
    for h in range(H - 1, -1, -1):
        Q = stage_matrix(game, h, V[h + 1])  # (S, A, B)
        for s in range(S):
            V[h, s], x[h, s], y[h, s] = matrix_game(Q[s])
    return V, x, y


def evaluate(game, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``V^{x, y} (H+1, S)``."""
    V = np.zeros((game.horizon + 1, game.S))
    for h in range(game.horizon - 1, -1, -1):
        Q = stage_matrix(game, h, V[h + 1])
        V[h] = np.einsum("sa,sab,sb->s", x[h], Q, y[h])
    return V


def best_response_values(game, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(V^{dagger, y} (H+1, S), V^{x, dagger} (H+1, S))``: the max player's best response to
    y and the min player's best response to x."""
    H, S = game.horizon, game.S
    up, lo = np.zeros((H + 1, S)), np.zeros((H + 1, S))
    for h in range(H - 1, -1, -1):
        up[h] = np.einsum("sab,sb->sa", stage_matrix(game, h, up[h + 1]), y[h]).max(axis=1)
        lo[h] = np.einsum("sa,sab->sb", x[h], stage_matrix(game, h, lo[h + 1])).min(axis=1)
    return up, lo


def duality_gap(game, x: np.ndarray, y: np.ndarray) -> float:
    """``V^{dagger, y}(mu0) - V^{x, dagger}(mu0)`` (>= 0; 0 at a Nash equilibrium)."""
    up, lo = best_response_values(game, x, y)
    return float(game.mu0 @ (up[0] - lo[0]))
