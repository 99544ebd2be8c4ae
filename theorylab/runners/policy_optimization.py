"""The runner of ``kind="policy-optimization"``: an exact, deterministic policy iteration.

``tl.run("kl-pg", "tokentree:V=3,L=3,reward=random", iterations=500, beta=0.2)`` resolves the
problem (a family spec or a model), checks the budget, calls the algorithm's factory
``(problem, iterations, **params) -> PolicyPath``
(:mod:`theorylab.algorithms.policy_optimization.path`) and records its exact per-iterate
metrics. An algorithm registered with ``problem="tabular-discounted"`` gets the discounted
problem of a tabular model (``random:S=5,A=3,gamma=0.9``: the horizon dropped). Nothing is
sampled: ``seeds`` is recorded, not used.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.results.policy_optimization import PolicyOptimizationResult
from theorylab.runners.arguments import positive_integer
from theorylab.runners.problems import discounted_problem, resolve_mdp


def run(
    entry,
    problem,
    *,
    seeds: list[int],
    seed: int,
    progress: bool,
    params: dict[str, Any],
    iterations: int,
) -> PolicyOptimizationResult:
    """Run ``entry`` for ``iterations`` exact iterations and record every iterate's metrics."""
    K = positive_integer(iterations, "iterations")
    model = resolve_mdp(problem)
    if entry.problem == "tabular-discounted":  # a model with H and gamma: its discounted problem
        model = discounted_problem(model, entry.name)
    t0 = time.perf_counter()
    path = entry.factory(model, K, **params)
    return PolicyOptimizationResult(
        objective=np.asarray(path.objective, dtype=np.float64),
        regularised=np.asarray(path.regularised, dtype=np.float64),
        entropy=np.asarray(path.entropy, dtype=np.float64),
        target_gap=np.asarray(path.target_gap, dtype=np.float64),
        policies=np.asarray(path.policies),
        target_value=float(path.target_value),
        wall_seconds=time.perf_counter() - t0,
        config={"problem": getattr(model, "name", type(model).__name__), **path.config},
    )
