"""The runner of ``kind="multitask-bandit"``: M linear bandits sharing a representation.

``tl.run("douexpdes", "multitask-linear:d=16,k=2,M=32", rounds=10**7, seeds=8)`` resolves the
problem, calls the factory ``(problem, rounds, rngs) -> MultitaskBanditRun`` with one generator
per seed (the environment's stream) and scores the run on the true task parameters: each
recommendation against the brute-force best arm (argmax over the arm set of ``x . theta_m``), and
each pulled arm's exact gap (pseudo-regret, averaged over the M tasks).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.mdps.multitask_bandit import MultitaskLinearBandit
from theorylab.results.multitask_bandit import MultitaskBanditResult
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
    rounds: int,
) -> MultitaskBanditResult:
    """Run ``entry`` with the budget ``rounds`` on every seed."""
    T = positive_integer(rounds, "rounds")
    prob = require_problem(
        resolve_mdp(problem),
        MultitaskLinearBandit,
        f"{entry.name} is a multitask-bandit algorithm and",
        "a multi-task linear bandit",
        f"{entry.problem}:d=16,k=2,M=8",
        entry.problem,
    )
    t0 = time.perf_counter()
    out = entry.factory(prob, T, generators(seed, seeds, ENV_STREAM), **params)
    means = prob.means()  # (M, n)
    gaps = means.max(axis=1, keepdims=True) - means  # (M, n)
    choices = np.asarray(out.choices)  # (B, T', M)
    per_round = gaps[np.arange(prob.M)[None, None, :], choices].mean(axis=2)  # (B, T')
    return MultitaskBanditResult(
        recommended=np.asarray(out.recommended),
        samples=np.asarray(out.samples),
        stopped=np.asarray(out.stopped),
        regret=np.cumsum(per_round, axis=1),
        selected=np.asarray(out.selected),
        best=prob.best_arms(),
        true_representation=int(prob.true_index),
        diagnostics={key: np.asarray(v) for key, v in out.diagnostics.items()},
        wall_seconds=time.perf_counter() - t0,
        config={"problem": prob.name, "rounds": T, "learner": dict(out.config), "M": prob.M},
    )
