"""The runner of ``kind="markov-game-offline"``: an offline zero-sum Markov game.

``tl.run("pessimistic-nash", "random-game:S=3,A=3,B=3,H=3", dataset_size=[1000, 10000],
coverage="unilateral", seeds=4)`` draws the generative dataset of each n (one generator per seed,
the environment's stream), calls the factory ``(data, **params) -> (x, y, lower, upper)`` and
scores the output exactly. The result is a :class:`SuboptimalityResult` whose ``suboptimality``
is the duality gap ``V^{dagger, y}(mu0) - V^{x, dagger}(mu0)``, ``policy_value`` the pair's value
``V^{x, y}(mu0)``, ``value_estimate`` the lower end of the learner's interval, ``pessimism_holds``
the interval's validity (``lower <= V^{x, dagger}`` and ``upper >= V^{dagger, y}``) and
``optimal_value`` the game value ``V*(mu0)``; ``info["width"]`` ``(B, M)`` the interval's
width ``upper - lower``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.results.suboptimality import SuboptimalityResult
from theorylab.runners.arguments import dataset_sizes
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
    dataset_size,
    coverage: str = "unilateral",
) -> SuboptimalityResult:
    """Run ``entry`` on the dataset of every n and score the duality gap of its output."""
    from theorylab.algorithms.offline.markov_game_pessimism import COVERAGES, make_game_dataset
    from theorylab.algorithms.planning.markov_game import (
        best_response_values,
        evaluate,
        nash_backward_induction,
    )
    from theorylab.mdps.markov_game import TabularMarkovGame

    Ns = dataset_sizes(dataset_size)
    if coverage not in COVERAGES:
        raise ValueError(f"coverage must be one of {', '.join(COVERAGES)}, got {coverage!r}")
    game = require_problem(
        resolve_mdp(problem),
        TabularMarkovGame,
        f"{entry.name} is an offline Markov-game algorithm and",
        "a zero-sum Markov game",
        f"{entry.problem}:S=3,A=3,B=3,H=3",
        family=entry.problem,
    )
    t0 = time.perf_counter()
    V_star = float(game.mu0 @ nash_backward_induction(game)[0][0])
    shape = (len(seeds), len(Ns))
    gap, val, lo_est, holds, width = (np.zeros(shape) for _ in range(5))
    for j, n in enumerate(Ns):
        data = make_game_dataset(game, n, coverage, generators(seed, seeds, ENV_STREAM))
        x, y, lo, up = entry.factory(data, **params)
        for i in range(len(seeds)):
            br_max, br_min = best_response_values(game, x[i], y[i])
            v_up, v_lo = float(game.mu0 @ br_max[0]), float(game.mu0 @ br_min[0])
            gap[i, j] = v_up - v_lo
            val[i, j] = float(game.mu0 @ evaluate(game, x[i], y[i])[0])
            lo_est[i, j] = lo[i]
            width[i, j] = up[i] - lo[i]
            holds[i, j] = lo[i] <= v_lo + 1e-9 and up[i] >= v_up - 1e-9
    return SuboptimalityResult(
        suboptimality=gap,
        policy_value=val,
        value_estimate=lo_est,
        pessimism_holds=holds.astype(bool),
        dataset_sizes=np.asarray(Ns, dtype=np.int64),
        optimal_value=V_star,
        wall_seconds=time.perf_counter() - t0,
        config={"mdp": game.name, "coverage": coverage, "score": "duality gap"},
        coverage={"coverage": coverage, "other": "generative data; sub-optimality = duality gap"},
        pessimistic=True,
        info={"width": width.tolist()},  # (B, M) the interval's width V_up - V_lo at mu0
    )
