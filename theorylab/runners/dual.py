"""The runner of ``kind="dual"``: solve the f-regularised occupancy problem at each alpha.

The reference distribution d^O is the occupancy of the behaviour mixture
``coverage * pi* + (1 - coverage) * other`` (:func:`theorylab.algorithms.dual.reference.
behaviour_reference`; default: the uniform policy's occupancy). A model with both a horizon and a
discount (``riverswim:S=6,gamma=0.9``) is solved as the discounted problem; a model with a horizon
and no discount (``riverswim:S=6,H=20``) as the finite-horizon problem (stage-wise flow, d^O one
stage occupancy per stage, ``lp_value = V*_0(mu0)`` by backward induction). The solvers are
deterministic: ``seeds`` is recorded, not used. Called through :func:`theorylab.run`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from theorylab.algorithms.dual.reference import behaviour_reference
from theorylab.algorithms.planning import backward_induction
from theorylab.algorithms.planning.lp import discounted_lp
from theorylab.results.dual import DualResult
from theorylab.runners.arguments import increasing_levels
from theorylab.runners.problems import discounted_problem, resolve_mdp


def run(
    entry,
    problem,
    *,
    seeds: list[int],
    seed: int,
    progress: bool,
    params: dict[str, Any],
    alpha: float | Sequence[float],
    coverage: float = 0.0,
    other: str = "uniform",
) -> DualResult:
    """Solve with the dual solver ``entry`` at each alpha and record primal, dual, gap and flow
    residual (all recomputed exactly from the solver's V and d)."""
    t_start = time.perf_counter()
    alphas = increasing_levels(alpha, "alpha")
    mdp = resolve_mdp(problem)
    finite = mdp.horizon is not None and mdp.gamma is None
    if not finite:
        mdp = discounted_problem(mdp, "dual solvers")
    d_ref = behaviour_reference(mdp, coverage=coverage, other=other)
    lp_value = (
        backward_induction(mdp).value if finite else (1.0 - mdp.gamma) * discounted_lp(mdp).value
    )
    sols = []
    for a in alphas:
        t0 = time.perf_counter()
        sol = entry.factory(mdp, d_ref, a, **params)
        sols.append((sol, time.perf_counter() - t0))
    result = DualResult(
        alphas=np.array(alphas),
        primal=np.array([s.primal_value for s, _ in sols]),
        dual=np.array([s.dual_value for s, _ in sols]),
        gap=np.array([s.gap for s, _ in sols]),
        flow_residual=np.array([s.flow_residual for s, _ in sols]),
        seconds=np.array([t for _, t in sols]),
        V=np.stack([s.V for s, _ in sols]),
        occupancy=np.stack([s.occupancy for s, _ in sols]),
        lp_value=lp_value,
        divergence=sols[0][0].divergence,
        wall_seconds=time.perf_counter() - t_start,
        config={
            "mdp": mdp.name,
            "S": mdp.S,
            "A": mdp.A,
            "gamma": mdp.gamma,
            "H": mdp.horizon if finite else None,
            "coverage": coverage,
            "other": other,
        },
    )
    return result
