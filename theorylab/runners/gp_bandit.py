"""The runner of ``kind="gp-bandit"``: a GP bandit on a finite grid.

``tl.run("config", "gp-constrained:m=50,kernel=se", iterations=400, seeds=8)`` resolves the
problem (a family spec or a problem object with ``score``), calls the factory ``(problem,
rounds, rngs, **params) -> GridBanditRun`` with one generator per seed (the environment's
stream: a seed index gives the same run alone or batched) and scores the chosen grid points on
the true functions with the problem's own ``score`` (the learner never grades itself).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.mdps.gp_grid import ConstrainedGPProblem, TransferGridProblem
from theorylab.results.gp_bandit import GPBanditResult
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
) -> GPBanditResult:
    """Run ``entry`` for ``iterations`` rounds on every seed and score its choices exactly."""
    T = positive_integer(iterations, "iterations")
    prob = require_problem(
        resolve_mdp(problem),
        (ConstrainedGPProblem, TransferGridProblem),
        f"{entry.name} is a GP-bandit algorithm and",
        "a grid problem",
        f"{entry.problem}:m=50",
        family=entry.problem,
    )
    t0 = time.perf_counter()
    out = entry.factory(prob, T, generators(seed, seeds, ENV_STREAM), **params)
    choices = np.asarray(out.choices, dtype=np.int64)
    scored = prob.score(choices)
    truth = prob.truth()
    return GPBanditResult(
        regret=np.asarray(scored["regret"], dtype=np.float64),
        violation=np.asarray(scored["violation"], dtype=np.float64),
        choices=choices,
        declared=np.asarray(out.declared, dtype=np.int64),
        optimum=float(truth["optimum"]),
        feasible=bool(truth["feasible"]),
        wall_seconds=time.perf_counter() - t0,
        diagnostics=dict(out.diagnostics),
        config={"problem": getattr(prob, "name", type(prob).__name__), "T": T, **out.config},
    )
