"""The runner of ``kind="online"``: K episodes x B seeds of an episodic learner, exact regret.

Per episode k and seed i (for the default, risk-neutral objective; see
``theorylab.algorithms.objectives``):

    regret_k = V*_1(mu0) - V^{pi_k}_1(mu0)

by exact, batched policy evaluation of every seed's policy on the true model (the way Colosseum
does it, not by subtracting noisy returns). The realised return of the sampled episode is kept
beside it. Called through :func:`theorylab.run`, which checks names, parameters and budgets.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.agent import env_spec
from theorylab.algorithms.objectives import RISK_NEUTRAL, BackendRiskNeutral
from theorylab.backends import get_backend
from theorylab.errors import RunInterrupted
from theorylab.results import RegretResult
from theorylab.runners.problems import resolve_mdp
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
    known_rewards: bool = True,
    backend: str = "numpy",
    device: str = "cpu",
) -> RegretResult:
    """Run the online algorithm ``entry`` on ``problem`` (a TabularMDP-like model or a family
    spec) for ``episodes`` episodes and every seed index in ``seeds``.

    known_rewards: give the learner the mean rewards (Azar et al.'s setting).
    backend, device: where the hot kernels run (:func:`theorylab.backends.get_backend`): the
        exact regret (policy evaluation on the true model) and the rollouts of the risk-neutral
        objective, and the agent when its constructor takes ``backend`` (UCBVI does).
    params: the algorithm's typed parameters.
    """
    if isinstance(episodes, bool) or int(episodes) != episodes or episodes < 1:
        raise ValueError(f"episodes must be a positive integer, got {episodes!r}")
    episodes = int(episodes)
    mdp = resolve_mdp(problem)
    B = len(seeds)
    env = env_spec(mdp, known_rewards=known_rewards)
    env_rngs = generators(seed, seeds, ENV_STREAM)
    agent_rngs = generators(seed, seeds, AGENT_STREAM)
    bk = get_backend(backend, device)
    agent_params = dict(params)
    accepted = entry.parameters()
    if "episodes" in accepted:
        agent_params.setdefault("episodes", episodes)  # K enters the confidence widths (T = KH)
    if "backend" in accepted:
        agent_params.setdefault("backend", bk)
    agent = entry.factory(env, B, agent_rngs, **agent_params)

    # What regret measures: the agent's own objective (e.g. CVaR at its tau), else expected return.
    objective = getattr(agent, "objective", None) or RISK_NEUTRAL
    v_star = objective.optimal_value(mdp)
    if objective is RISK_NEUTRAL:  # exact regret and rollouts through the backend's kernels
        objective = BackendRiskNeutral(bk)
    regret = np.empty((B, episodes))
    returns = np.empty((B, episodes))
    estimates = np.full((B, episodes), np.nan)
    has_estimate = hasattr(agent, "value_estimate")
    from theorylab.progress import progress_bar

    bar = progress_bar(episodes, f"{entry.name} on {mdp.name}", "ep", enabled=progress, leave=False)
    t0 = time.perf_counter()
    done = 0  # episodes every seed has finished
    try:
        for k in range(episodes):
            pi = agent.policy()
            if has_estimate:
                estimates[:, k] = agent.value_estimate()
            regret[:, k] = v_star - objective.policy_values(mdp, pi)
            traj = objective.rollout(mdp, pi, env_rngs)
            returns[:, k] = traj.returns()
            agent.update(traj)
            done = k + 1
            bar.update(1)
    except KeyboardInterrupt as exc:
        bar.close()
        if done == 0:
            raise
        partial = _result(
            regret,
            returns,
            estimates,
            done,
            v_star,
            time.perf_counter() - t0,
            mdp,
            known_rewards,
            objective,
            bk,
        )
        partial.config["interrupted_after"] = done
        raise RunInterrupted(partial, done) from exc
    wall = time.perf_counter() - t0
    bar.close()
    return _result(
        regret, returns, estimates, episodes, v_star, wall, mdp, known_rewards, objective, bk
    )


def _result(
    regret, returns, estimates, done, v_star, wall, mdp, known_rewards, objective, bk
) -> RegretResult:
    """The RegretResult of the first ``done`` episodes (all of them unless interrupted)."""
    config = {
        "mdp": mdp.name,
        "S": mdp.S,
        "A": mdp.A,
        "H": mdp.horizon,
        "episodes": done,
        "known_rewards": known_rewards,
        "objective": objective.name,
        "backend": bk.name,
        "device": bk.device,
    }
    return RegretResult(
        regret[:, :done], returns[:, :done], estimates[:, :done], float(v_star), wall, config
    )
