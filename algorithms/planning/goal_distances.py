"""Goal-conditioned cost-to-go on a tabular model, by monotone value iteration (every goal at once).

``D(s, g)`` is the least expected total step cost from s to reach g, capped at ``cap``:

    D(g, g) = 0,   D(s, g) = min(cap, min_a [c(s, a) + sum_s' P(s' | s, a) D(s', g)])   (s != g),

iterated from D = 0 upward (the least fixed point, the optimal stochastic-shortest-path cost
where it is below ``cap``; ``cap`` for goals that cannot be reached). On a deterministic model it
is the shortest-path distance (at most S sweeps). With ``policy`` ``(S, G)`` (an action per state
and goal) it evaluates that goal-conditioned policy instead of minimising. Used by the
goal-reaching runner to score QRL (``theorylab.algorithms.goal_reaching``) on the true model.
"""

from __future__ import annotations

import numpy as np


def goal_cost_to_go(
    P: np.ndarray,
    cost: np.ndarray,
    cap: float,
    policy: np.ndarray | None = None,
    *,
    tol: float = 1e-12,
    max_sweeps: int = 1_000_000,
) -> np.ndarray:
    """``(S, S)`` D[s, g] for every goal g (see the module docstring).

    P: ``(S, A, S)``; cost: ``(S, A)`` positive step costs; policy: ``(S, S)`` int actions
    ``pi[s, g]`` or None (the optimum). Stops when a sweep changes D by at most ``tol``.
    """
    S, A, _ = P.shape
    D = np.zeros((S, S))  # (S, G)
    eye = np.eye(S, dtype=bool)
    for _ in range(max_sweeps):
        Q = cost[:, :, None] + np.einsum("sat,tg->sag", P, D)  # (S, A, G)
        if policy is None:
            new = Q.min(axis=1)  # (S, G)
        else:
            new = np.take_along_axis(Q, policy[:, None, :], axis=1)[:, 0, :]  # (S, G)
        new = np.minimum(new, cap)
        new[eye] = 0.0
        if np.max(np.abs(new - D)) <= tol:
            return new
        D = new
    return D
