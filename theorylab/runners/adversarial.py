"""The runner of ``kind="adversarial"``: K episodes against an oblivious loss sequence.

``tl.run("ftrl-log-barrier-linear-q", "adversarial-linear:S=4,A=3,d=4,H=3", episodes=2000,
seeds=8)`` resolves the problem (an :class:`~theorylab.mdps.adversarial.AdversarialLinearMDP`),
draws its loss sequence ``l_1..l_K`` once (it depends on the problem's seed only: the adversary
is oblivious, the same for every seed of the learner), builds the learner with one generator per
seed (``AGENT_STREAM``) and, each episode k, scores the learner's policy exactly
(``V^{pi_k}(l_k)`` from its occupancy), plays one trajectory (``ENV_STREAM``; the learner sees
the losses of the visited pairs only) and hands it to ``update`` with a
:class:`~theorylab.mdps.adversarial.Simulator`.

The result is a :class:`~theorylab.results.regret.RegretResult`: ``regret[b, k] =
V^{pi_k}(l_k) - V^{pi*}(l_k)`` with ``pi*`` the best fixed policy in hindsight for the whole run
(``min_pi sum_k V^pi(l_k)``, backward induction on the summed losses), so the cumulative regret
at K is ``sum_k V^{pi_k}(l_k) - min_pi sum_k V^pi(l_k)`` (intermediate points are against the
final comparator; :func:`prefix_regret` gives the regret of every prefix against its own best
policy); ``returns`` holds the learner's expected loss ``V^{pi_k}(l_k)`` (a loss, not a reward:
``config["objective"] = "loss"``).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.mdps.adversarial import AdversarialLinearMDP, Simulator
from theorylab.results.regret import RegretResult
from theorylab.runners.arguments import positive_integer
from theorylab.runners.problems import require_problem, resolve_mdp
from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators


def prefix_regret(mdp: AdversarialLinearMDP, learner_loss: np.ndarray, grid) -> np.ndarray:
    """``(B, G)`` regret of every prefix K' in ``grid`` against its own best fixed policy:
    ``sum_{k <= K'} V^{pi_k}(l_k) - min_pi sum_{k <= K'} V^pi(l_k)``; learner_loss: ``(B, K)``
    the learner's ``V^{pi_k}(l_k)`` (a run's ``returns``)."""
    grid = np.asarray(grid, dtype=np.int64)
    K = learner_loss.shape[1]
    if grid.size == 0 or grid.min() < 1 or grid.max() > K or np.any(np.diff(grid) <= 0):
        raise ValueError(f"grid must be increasing episode counts in [1, {K}], got {grid.tolist()}")
    theta_sum = np.cumsum(mdp.loss_parameters(K), axis=0)  # (K, H, d)
    best = np.array([mdp.best_fixed_policy(mdp.loss_tables(theta_sum[g - 1]))[1] for g in grid])
    return np.cumsum(learner_loss, axis=1)[:, grid - 1] - best[None, :]


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
        AdversarialLinearMDP,
        f"{entry.name} is an adversarial algorithm and",
        "a problem with a loss sequence",
        "adversarial-linear:S=4,A=3,d=4,H=3",
    )
    B = len(seeds)
    theta = mdp.loss_parameters(K)  # (K, H, d)
    loss = mdp.loss_tables(theta)  # (K, H, S, A)
    pi_star, best = mdp.best_fixed_policy(loss.sum(axis=0))
    star = np.eye(mdp.A)[pi_star][None]  # (1, H, S, A)
    q_star = mdp.occupancy(star)[0]  # (H, S, A)
    comparator = np.einsum("hsa,khsa->k", q_star, loss)  # (K,)
    agent = entry.factory(mdp, B, generators(seed, seeds, AGENT_STREAM), K, **params)
    env = generators(seed, seeds, ENV_STREAM)
    simulator = Simulator(mdp)
    learner = np.empty((B, K))
    t0 = time.perf_counter()
    for k in range(K):
        pol = np.asarray(agent.policy())  # (B, H, S, A)
        learner[:, k] = mdp.expected_loss(pol, loss[k])
        states, actions, observed = mdp.rollout(pol, theta[k], env)
        agent.update(states, actions, observed, simulator)
    return RegretResult(
        regret=learner - comparator[None, :],
        returns=learner,
        value_estimates=np.full((B, K), np.nan),
        optimal_value=best / K,
        wall_seconds=time.perf_counter() - t0,
        config={
            "mdp": mdp.name,
            "objective": "loss",
            "comparator": "best fixed policy in hindsight",
            "comparator_total_loss": best,
        },
    )
