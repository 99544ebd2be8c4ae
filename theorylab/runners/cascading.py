"""The runner of ``kind="cascading"``: K episodes of a list-showing learner on a cascading MDP.

``tl.run("cascading-vi", "cascading:S=3,N=5,m=2,H=3", episodes=2000, seeds=4)`` resolves the
problem (a :class:`~theorylab.mdps.cascading.CascadingMDP`), builds the learner with one
generator per seed (``AGENT_STREAM``) and, each episode, scores its list policy exactly
(``V^{pi_k}_1(mu0)`` by backward induction on the true model), plays one episode per seed
(``ENV_STREAM``) and hands the states, click positions and rewards to ``update``. The comparator
``V*_1(mu0)`` is computed by brute-force planning over all ``N! / (N - m)!`` lists
(:meth:`CascadingMDP.optimal`), never by the learner's oracle.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.mdps.cascading import CascadingMDP
from theorylab.results.regret import RegretResult
from theorylab.runners.arguments import positive_integer
from theorylab.runners.problems import require_problem, resolve_mdp
from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators


def run(
    entry,
    problem,
    *,
    seeds: list[int],
    seed: int,
    progress: bool,
    params: dict[str, Any],
    episodes: int,
) -> RegretResult:
    """Run ``entry`` for ``episodes`` episodes on every seed and score the regret exactly."""
    K = positive_integer(episodes, "episodes")
    mdp = require_problem(
        resolve_mdp(problem),
        CascadingMDP,
        f"{entry.name} is a cascading algorithm and",
        "a cascading MDP",
        "cascading:S=3,N=5,m=2,H=3",
    )
    B = len(seeds)
    v_star = mdp.optimal_value()
    agent = entry.factory(mdp, B, generators(seed, seeds, AGENT_STREAM), K, **params)
    env = generators(seed, seeds, ENV_STREAM)
    values = np.empty((B, K))
    returns = np.empty((B, K))
    t0 = time.perf_counter()
    for k in range(K):
        lists = np.asarray(agent.policy())  # (B, H, S, m)
        values[:, k] = mdp.evaluate(lists)
        states, clicks, rewards = mdp.rollout(lists, env)
        returns[:, k] = rewards.sum(axis=1)
        agent.update(states, clicks, rewards)
    return RegretResult(
        regret=v_star - values,
        returns=returns,
        value_estimates=np.full((B, K), np.nan),
        optimal_value=v_star,
        wall_seconds=time.perf_counter() - t0,
        config={"mdp": mdp.name, "comparator": "V*_1(mu0) by brute-force planning over lists"},
    )
