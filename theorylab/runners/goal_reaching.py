"""The runner of ``kind="goal-reaching"``: learn goal distances, score them on the true model.

``tl.run("qrl", "digraph:S=12,A=2", transitions="all")`` builds each seed's observed transitions
(``"all"``: every edge of the model's support, the same for every seed; an integer n: n draws
with (s, a) uniform and s' ~ P, one generator per seed, the environment's stream), calls the
factory ``(data, **params) -> QuasimetricFit`` and scores it exactly: the true optimal
goal-conditioned cost-to-go with the fit's step cost and cap (shortest paths on a deterministic
model; :func:`~theorylab.algorithms.planning.goal_distances.goal_cost_to_go`) and the expected
cost of the greedy policy ``argmin_a c + E d(s', g)`` of the learned d.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.results.goal_reaching import GoalReachingResult
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
    transitions="all",
) -> GoalReachingResult:
    """Fit ``entry`` on each seed's observed transitions and score the distances it learns."""
    from theorylab.algorithms.goal_reaching.qrl import (
        greedy_goal_policy,
        sampled_data,
        support_data,
    )
    from theorylab.algorithms.planning.goal_distances import goal_cost_to_go
    from theorylab.mdps import TabularMDP

    if transitions != "all" and (
        isinstance(transitions, bool)
        or not isinstance(transitions, (int, np.integer))
        or transitions < 1
    ):
        raise ValueError(
            f"transitions must be 'all' or a positive number of sampled transitions, "
            f"got transitions={transitions!r}"
        )
    mdp = require_problem(
        resolve_mdp(problem),
        TabularMDP,
        f"{entry.name} is a goal-reaching algorithm and",
        "a tabular model",
        "digraph:S=12,A=2",
    )
    if mdp.stage_dependent:
        raise ValueError(f"{entry.name} needs stationary transitions; {mdp.name!r} has stages")
    P = mdp.dense_P()  # (S, A, S)
    t0 = time.perf_counter()
    if transitions == "all":
        datasets = [support_data(P)] * len(seeds)
    else:
        rngs = generators(seed, seeds, ENV_STREAM)
        datasets = [sampled_data(P, int(transitions), rng) for rng in rngs]
    fits = [entry.factory(data, **params) for data in datasets]
    cap, c = fits[0].cap, fits[0].step_cost
    cost = np.full((mdp.S, mdp.A), c)  # (S, A)
    target = goal_cost_to_go(P, cost, cap)  # (S, S)
    distances = np.stack([f.distances for f in fits])  # (B, S, S)
    policy_cost = np.stack(
        [goal_cost_to_go(P, cost, cap, greedy_goal_policy(P, d, c)) for d in distances]
    )  # (B, S, S)
    return GoalReachingResult(
        distances=distances,
        target=target,
        policy_cost=policy_cost,
        cap=cap,
        wall_seconds=time.perf_counter() - t0,
        config={"problem": mdp.name, "transitions": transitions, **fits[0].config},
    )
