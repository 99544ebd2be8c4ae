"""The runner of ``kind="multi-batch"``: policy evaluation from n queries in K batches.

``tl.run("multi-batch-pe", "pointer-chase:d=16,H=8", queries=256, batches=[1, 2, 4, 8],
seeds=8)`` resolves the problem, calls the factory ``(problem, queries, batches, rngs) ->
(B,) estimates`` once per K with one generator per seed (the environment's stream: the answers
are the problem's, a seed index gives the same run alone or batched), and scores the estimates
against the problem's exact value (the learner never grades itself).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.mdps.pointer_chase import PointerChaseProblem
from theorylab.results.multi_batch import MultiBatchResult
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
    queries: int,
    batches,
) -> MultiBatchResult:
    """Run ``entry`` with ``queries`` queries in each K of ``batches`` on every seed."""
    n = positive_integer(queries, "queries")
    Ks = [batches] if np.isscalar(batches) else list(batches)
    Ks = [positive_integer(k, "batches") for k in Ks]
    if not Ks or any(b <= a for a, b in zip(Ks, Ks[1:], strict=False)):
        raise ValueError(f"batches must be an integer >= 1 or an increasing list, got {batches!r}")
    prob = require_problem(
        resolve_mdp(problem),
        PointerChaseProblem,
        f"{entry.name} is a multi-batch algorithm and",
        "a query problem",
        f"{entry.problem}:d=16,H=8",
        family=entry.problem,
    )
    t0 = time.perf_counter()
    est = np.stack(
        [
            np.asarray(entry.factory(prob, n, k, generators(seed, seeds, ENV_STREAM), **params))
            for k in Ks
        ],
        axis=1,
    )  # fmt: skip  (B, M)
    return MultiBatchResult(
        estimates=est,
        batches=np.asarray(Ks, dtype=np.int64),
        queries=n,
        true_value=float(prob.truth()["value"]),
        wall_seconds=time.perf_counter() - t0,
        config={"problem": getattr(prob, "name", type(prob).__name__), "queries": n},
    )
