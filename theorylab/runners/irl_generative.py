"""The runner of ``kind="irl-generative"``: the feasible reward set estimated from a generative
model.

``tl.run("us-irl", "irl-trap:S=4,A=3,H=5", samples=[64, 256, 1024], seeds=16)`` resolves the
problem, calls the factory ``(problem, samples, rngs) -> IRLEstimate`` once per n with one
generator per seed (the environment's stream: a seed index gives the same draws alone or
batched), and scores each estimate against the true model: the exact distance (an LP) of the
true reward to the estimated set ``R_{p_hat}``, and a lower bound on the Hausdorff distance
between ``R_p`` and ``R_{p_hat}`` (``feasible_set.hausdorff_lower``). The learner never grades
itself.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.algorithms.feasible_rewards.feasible_set import distance_to_set, hausdorff_lower
from theorylab.mdps.irl_problem import IRLProblem
from theorylab.results.irl_generative import FeasibleSetResult
from theorylab.runners.problems import require_problem, resolve_mdp
from theorylab.seeding import ENV_STREAM, generators


def sample_ladder(samples) -> list[int]:
    """n draws per triple: a positive integer, an increasing list of them, or the CLI's text
    ``"64,256,1024"`` -> the list of ints; anything else is a one-line error naming it."""
    items = samples.split(",") if isinstance(samples, str) else samples
    items = list(items) if isinstance(items, (list, tuple, np.ndarray)) else [items]
    try:
        ns = [int(v) if isinstance(v, str) else v for v in items]
    except ValueError:
        ns = []
    ok = bool(ns) and all(
        not isinstance(n, bool) and isinstance(n, (int, np.integer)) and n >= 1 for n in ns
    )
    if not ok or any(b <= a for a, b in zip(ns, ns[1:], strict=False)):
        raise ValueError(
            f"samples must be a positive integer or an increasing list of them (draws per "
            f"(h, s, a)), got {samples!r}"
        )
    return [int(n) for n in ns]


def run(
    entry, problem, *, seeds: list[int], seed: int, progress: bool, params: dict[str, Any],
    samples,
) -> FeasibleSetResult:  # fmt: skip
    """Run ``entry`` with every n of ``samples`` draws per triple on every seed."""
    ns = sample_ladder(samples)
    prob = require_problem(resolve_mdp(problem), IRLProblem,
                           f"{entry.name} is an inverse-RL algorithm and",
                           "an MDP with an expert", "irl-trap:S=4,A=3,H=5",
                           family=entry.problem)  # fmt: skip
    t0 = time.perf_counter()
    dist = np.empty((len(seeds), len(ns)))  # (B, M)
    haus = np.empty((len(seeds), len(ns)))  # (B, M)
    radius = np.empty(len(ns))  # (M,)
    for j, n in enumerate(ns):
        est = entry.factory(prob, int(n), generators(seed, seeds, ENV_STREAM), **params)
        radius[j] = est.radius
        for b, p_hat in enumerate(est.p_hat):
            dist[b, j] = distance_to_set(prob.reward, p_hat, prob.expert)
            haus[b, j] = hausdorff_lower(prob.reward, prob.p, prob.expert, p_hat)
    H, S, A = prob.shape
    return FeasibleSetResult(
        distance=dist,
        hausdorff_lower=haus,
        radius=radius,
        samples=np.asarray(ns, dtype=np.int64),
        triples=H * S * A,
        wall_seconds=time.perf_counter() - t0,
        config={"problem": prob.name},
    )
