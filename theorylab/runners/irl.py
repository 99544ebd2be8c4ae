"""The runner of ``kind="irl"``: expert demonstrations, a simulator, exact scoring per round.

``tl.run("irl-expert-resets", "combination-lock:H=6,A=2,code_seed=3", rounds=20, seeds=8)``
resolves a finite-horizon tabular model, plans the expert pi_E exactly (backward induction on
the true reward), draws ``demos`` demonstrations of pi_E per seed from the environment stream,
calls the factory ``(mdp, expert, rounds, rngs, **params) -> IRLRun`` with the agent stream, and
scores every round exactly (the learner never grades itself): the exact occupancy of each pi_t,
the mixture of pi_1..pi_t (the average of their occupancies), its moment gap against pi_E's
exact occupancy on the moment steps (sup over f in [-1, 1] = the L1 distance) and its value gap
V^E(mu0) - V^{mixture}(mu0) on the true reward.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.algorithms.offline.coverage import occupancy
from theorylab.algorithms.planning import backward_induction
from theorylab.algorithms.planning.evaluation import policy_values
from theorylab.mdps import TabularMDP
from theorylab.results.irl import IRLResult
from theorylab.runners.arguments import positive_integer
from theorylab.runners.problems import finite_horizon_problem, require_problem, resolve_mdp
from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators


def run(
    entry,
    problem,
    *,
    seeds: list[int],
    seed: int,
    progress: bool,
    params: dict[str, Any],
    rounds: int,
    demos: int = 16,
) -> IRLResult:
    """Run ``entry`` for ``rounds`` rounds on every seed and score each round exactly."""
    T = positive_integer(rounds, "rounds")
    N = positive_integer(demos, "demos")
    mdp = require_problem(resolve_mdp(problem), TabularMDP, f"{entry.name} is an IRL algorithm and",
                          "a tabular model", "combination-lock:H=6,A=2,code_seed=3")  # fmt: skip
    mdp = finite_horizon_problem(mdp, entry.name)
    if mdp.horizon is None:
        raise ValueError(f"{entry.name} needs a finite horizon; {mdp.name} has none (give H=...)")
    t0 = time.perf_counter()
    pi_E = backward_induction(mdp).policy  # (H, S)
    env_rngs = generators(seed, seeds, ENV_STREAM)
    demo = [mdp.rollout(pi_E, rng=env_rngs) for _ in range(N)]
    expert = (np.stack([d.states for d in demo], axis=1),  # (B, N, H)
              np.stack([d.actions for d in demo], axis=1))  # fmt: skip
    out = entry.factory(mdp, expert, T, generators(seed, seeds, AGENT_STREAM), **params)
    scores = irl_scores(mdp, pi_E, out.policies, out.moment_mask)
    return IRLResult(
        **scores,
        inner_samples=np.asarray(out.inner_samples),
        moment_samples=np.asarray(out.moment_samples),
        expert_value=float(policy_values(mdp, pi_E)),
        wall_seconds=time.perf_counter() - t0,
        config={"problem": mdp.name, "rounds": T, "demos": N, **out.config},
    )


def irl_scores(mdp, pi_E: np.ndarray, policies: np.ndarray, mask: np.ndarray) -> dict:
    """Exact moment gap, mixture value gap and per-round value gap, each ``(B, T)``, of the
    policies ``(B, T, H, S)`` against the expert ``pi_E (H, S)`` on the steps ``mask (H,)``."""
    B, T = policies.shape[:2]
    d_E = occupancy(mdp, pi_E)  # (H, S, A)
    d = np.stack([[occupancy(mdp, policies[b, t]) for t in range(T)] for b in range(B)])
    mix = np.cumsum(d, axis=1) / np.arange(1, T + 1)[None, :, None, None, None]  # (B,T,H,S,A)
    gap = np.abs(mix - d_E[None, None])[:, :, mask].sum(axis=(2, 3, 4))  # (B, T)
    v_E = float(policy_values(mdp, pi_E))
    v = policy_values(mdp, policies.reshape(B * T, *policies.shape[2:]), batched=True)
    round_gap = v_E - v.reshape(B, T)
    value_gap = np.cumsum(round_gap, axis=1) / np.arange(1, T + 1)[None, :]
    return {"moment_gap": gap, "value_gap": value_gap, "round_value_gap": round_gap}
