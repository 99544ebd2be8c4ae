"""The runner of ``kind="average-reward"``: one non-episodic trajectory of T steps per seed.

``tl.run("ucrl2", "riverswim:S=6", steps=100_000, seeds=8)`` resolves the model (its horizon
and discount are ignored: the objective is the long-run average), solves its optimal gain g*
and bias span exactly (the average-reward LP,
:func:`theorylab.algorithms.planning.average_reward.optimal_gain_bias_lp`), calls the factory
``(mdp, steps, rngs, **params) -> StepRun`` with one generator per seed (the environment's
stream: a seed index gives the same trajectory alone or batched), and records the exact regret
``t g* - sum of the mean rewards played`` on the StepRun's grid of steps.

``run_generative`` (``kind="average-reward-generative"``): ``tl.run("plugin-average", mdp,
samples=[100, 1000])`` gives the estimator n draws per pair at each n and scores the exact gain
gap of each returned policy (``average_reward.policy_gain_bias`` of the planning floor).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.algorithms.planning.average_reward import (
    model_arrays,
    optimal_gain_bias_lp,
    policy_gain_bias,
)
from theorylab.results.average_reward import AverageRewardResult, GenerativeGainResult
from theorylab.runners.arguments import increasing_levels, positive_integer
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


def run_generative(
    entry,
    problem,
    *,
    seeds: list[int],
    seed: int,
    progress: bool,
    params: dict[str, Any],
    samples,
) -> GenerativeGainResult:
    """Run a generative-model estimator at each n of ``samples`` (draws per pair) on every seed
    and score the exact gain gap ``g* - g(pi_hat)`` of every policy it returns."""
    ns = [positive_integer(n, "samples") for n in increasing_levels(samples, "samples")]
    mdp = resolve_mdp(problem)
    P, R = model_arrays(mdp)
    star = optimal_gain_bias_lp(mdp)
    t0 = time.perf_counter()
    policies, estimates, config = entry.factory(
        mdp, ns, generators(seed, seeds, ENV_STREAM), **params
    )
    gains = {}
    gap = np.zeros(policies.shape[:2])
    for idx in np.ndindex(*policies.shape[:2]):
        key = tuple(int(a) for a in policies[idx])
        if key not in gains:
            gains[key] = policy_gain_bias((P, R), np.asarray(key, dtype=np.int64)).gain
        gap[idx] = star.gain - gains[key]
    return GenerativeGainResult(
        samples=np.asarray(ns, dtype=np.int64),
        gain_gap=gap,
        gain_estimate=np.asarray(estimates, dtype=np.float64),
        gain_star=star.gain,
        wall_seconds=time.perf_counter() - t0,
        config={"problem": getattr(mdp, "name", type(mdp).__name__), **config},
    )
