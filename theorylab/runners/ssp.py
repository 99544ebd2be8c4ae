"""The runner of ``kind="ssp"``: model-free learning on a stochastic shortest path problem.

``tl.run("ssp-ca", "ssp-trap:S=8,A=3,seed=0", iterations=20000, seeds=8)`` resolves the problem
(an :class:`~theorylab.mdps.ssp.SSPProblem`), calls the factory ``(problem, iterations, rngs,
**params) -> SSPRun`` with one generator per seed (the environment's stream), and scores the
recorded critics and policies against J* from value iteration started at a proper policy
(:func:`~theorylab.algorithms.planning.ssp.ssp_value_iteration`); the learner never grades
itself.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.algorithms.planning.ssp import ssp_value_iteration
from theorylab.mdps.ssp import SSPProblem
from theorylab.results.ssp import SSPResult
from theorylab.runners.arguments import positive_integer
from theorylab.runners.problems import require_problem, resolve_mdp
from theorylab.seeding import ENV_STREAM, generators


def run(
    entry,
    problem,
    *,
    seeds: list[int],
    seed: int,
    progress: bool,
    params: dict[str, Any],
    iterations: int,
) -> SSPResult:
    """Run ``entry`` for ``iterations`` sweeps on every seed; exact errors on its grid."""
    n = positive_integer(iterations, "iterations")
    prob = require_problem(
        resolve_mdp(problem),
        SSPProblem,
        f"{entry.name} is a stochastic shortest path algorithm and",
        "an SSP problem",
        "ssp-trap:S=8,A=3",
        family="ssp-trap",
    )
    J_star = ssp_value_iteration(prob).J  # (S,)
    t0 = time.perf_counter()
    out = entry.factory(prob, n, generators(seed, seeds, ENV_STREAM), **params)
    wall = time.perf_counter() - t0
    B, M = out.critic.shape[:2]
    costs = np.stack(
        [[prob.policy_cost(out.policy[b, m]) for m in range(M)] for b in range(B)]
    )  # fmt: skip  (B, M, S)
    return SSPResult(
        grid=np.asarray(out.grid, dtype=np.int64),
        critic_error=np.max(np.abs(out.critic - J_star), axis=2),
        policy_error=np.max(np.abs(costs - J_star), axis=2),
        optimal_cost=J_star,
        wall_seconds=wall,
        config={"problem": prob.name, "iterations": n, **out.config},
    )
