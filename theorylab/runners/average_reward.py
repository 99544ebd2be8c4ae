"""The runner of ``kind="average-reward"``: one non-episodic trajectory of T steps per seed.

``tl.run("ucrl2", "riverswim:S=6", steps=100_000, seeds=8)`` resolves the model (its horizon
and discount are ignored: the objective is the long-run average), solves its optimal gain g*
and bias span exactly (the average-reward LP,
:func:`theorylab.algorithms.planning.average_reward.optimal_gain_bias_lp`), calls the factory
``(mdp, steps, rngs, **params) -> StepRun`` with one generator per seed (the environment's
stream: a seed index gives the same trajectory alone or batched), and records the exact regret
``t g* - sum of the mean rewards played`` on the StepRun's grid of steps.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.algorithms.planning.average_reward import model_arrays, optimal_gain_bias_lp
from theorylab.results.average_reward import AverageRewardResult
from theorylab.runners.arguments import positive_integer
from theorylab.runners.problems import resolve_mdp
from theorylab.seeding import ENV_STREAM, generators


def run(
    entry,
    problem,
    *,
    seeds: list[int],
    seed: int,
    progress: bool,
    params: dict[str, Any],
    steps: int,
) -> AverageRewardResult:
    """Run ``entry`` for ``steps`` steps on every seed and score the regret exactly."""
    T = positive_integer(steps, "steps")
    mdp = resolve_mdp(problem)
    model_arrays(mdp)  # refuses a stage-dependent model before any work
    star = optimal_gain_bias_lp(mdp)
    t0 = time.perf_counter()
    out = entry.factory(mdp, T, generators(seed, seeds, ENV_STREAM), **params)
    steps_grid = np.asarray(out.steps, dtype=np.int64)
    regret = steps_grid[None, :] * star.gain - np.asarray(out.reward_sum, dtype=np.float64)
    return AverageRewardResult(
        steps=steps_grid,
        regret=regret,
        gain_star=star.gain,
        span=star.span,
        wall_seconds=time.perf_counter() - t0,
        diagnostics=dict(out.diagnostics),
        config={"problem": getattr(mdp, "name", type(mdp).__name__), "T": T, **out.config},
    )
