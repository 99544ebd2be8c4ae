"""Exact finite-horizon planning: backward induction (Bellman 1957; AJKS section 1.3.3).

    V_H = 0,   Q_h(s, a) = r_h(s, a) + sum_{s'} P_h(s'|s, a) V_{h+1}(s'),   V_h(s) = max_a Q_h(s, a)

for h = H-1, ..., 0 (0-based stages; papers write h = 1..H). Exactly H sweeps, each O(nnz(P_h))
for sparse models and O(S^2 A) dense. Ties (within round-off) go to the smallest action index.
"""

from __future__ import annotations

import time

import numpy as np

from theorylab.algorithms.planning.greedy import greedy_actions
from theorylab.algorithms.planning.solution import Solution


def backward_induction(mdp, *, horizon: int | None = None) -> Solution:
    """Optimal values, Q-functions and a deterministic optimal policy of a finite-horizon MDP.

    mdp: a :class:`~theorylab.mdps.TabularMDP` with a horizon (or pass ``horizon=``) and no
        discount (a model with ``gamma`` is refused: its discount would be ignored).
    Returns a :class:`Solution` with ``V (H+1, S)``, ``Q (H, S, A)``, ``policy (H, S)``.
    """
    if getattr(mdp, "gamma", None) is not None:  # never drop a discount silently
        raise ValueError(
            f"backward_induction solves the undiscounted H-step problem; {mdp!r} has the discount "
            f"gamma={mdp.gamma}, which it would ignore: use value_iteration (the discounted "
            "problem) or mdp.with_objective(horizon=H) (the H-step problem, no discount)"
        )
    H = horizon if horizon is not None else mdp.horizon
    if H is None:
        raise ValueError(f"{mdp!r} has no finite horizon: pass horizon=H or use value_iteration")
    if (mdp.stage_dependent or mdp.reward_stage_dependent) and H != mdp.horizon:
        raise ValueError(
            f"{mdp!r} is stage-dependent with horizon {mdp.horizon}, cannot plan for horizon {H}"
        )
    t0 = time.perf_counter()
    S, A = mdp.S, mdp.A
    if mdp.sparse:  # fused numba CSR kernel, bit-identical to the loop below (tests/test_kernels)
        from theorylab.kernels.bellman import backward_induction_csr

        P = [mdp.P_flat(h) for h in range(H)] if mdp.stage_dependent else mdp.P_flat(0)
        res = backward_induction_csr(P, np.asarray(mdp.R), H, with_q=True)
        V, Q = res.V, res.Q
    else:
        V = np.zeros((H + 1, S))
        Q = np.empty((H, S, A))
        for h in range(H - 1, -1, -1):
            Q[h] = mdp.reward(h) + mdp.expected_next(V[h + 1], h)
            V[h] = Q[h].max(axis=1)
    policy = greedy_actions(Q)  # ties: the smallest action, whatever the storage form
    return Solution(
        V=V,
        Q=Q,
        policy=policy,
        value=float(V[0] @ mdp.mu0),
        info={
            "method": "backward_induction",
            "iterations": H,
            "error_bound": 0.0,
            "seconds": time.perf_counter() - t0,
        },
    )
