"""The runner of ``kind="local-agents"``: a global agent learns on k of n local agents and is
scored on all n.

``tl.run("subsample-q", "local-agents:n=256", k=[4, 8, 16, 32], samples=100, seeds=4)`` resolves
the problem, calls the factory ``(problem, k, samples, rng) -> learned`` once per k and seed (one
generator per seed: the generative model's draws), and scores ``learned.deployed_values(problem)``
(the deployed policy's exact values on the n-agent count chain) against V* of that chain, found
by value iteration here (the learner never grades itself). The Bellman noise is measured against
Q* of the k-agent chain, also planned here.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.results.local_agents import LocalAgentsResult
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
    k,
    samples=None,
) -> LocalAgentsResult:
    """Run ``entry`` for every k of ``k`` on every seed (module docstring)."""
    from theorylab.algorithms.planning.value_iteration import value_iteration
    from theorylab.mdps.local_agents import LocalAgentsProblem

    ks = [k] if np.isscalar(k) else list(k)
    ks = [positive_integer(v, "k") for v in ks]
    if not ks or any(b <= a for a, b in zip(ks, ks[1:], strict=False)):
        raise ValueError(f"k must be an integer >= 1 or an increasing list, got {k!r}")
    if samples is not None:
        samples = positive_integer(samples, "samples")
    prob = require_problem(resolve_mdp(problem), LocalAgentsProblem,
                           f"{entry.name} is a local-agents algorithm and",
                           "a global agent with n local agents", "local-agents:n=64",
                           family="local-agents")  # fmt: skip
    if ks[-1] > prob.n:
        raise ValueError(f"k must be <= n = {prob.n} (the agents there are), got k = {ks[-1]}")
    t0 = time.perf_counter()
    chain = prob.count_mdp()
    v_star = value_iteration(chain, tol=1e-12).V.reshape(prob.G, prob.n + 1)  # (G, n+1)
    B, M = len(seeds), len(ks)
    sup_gap, mu0_gap, noise = np.zeros((B, M)), np.zeros((B, M)), np.zeros((B, M))
    draws = np.zeros(M, dtype=np.int64)
    for i, kk in enumerate(ks):
        q_star = value_iteration(prob.count_mdp(kk), tol=1e-12).Q  # (G (kk+1), A)
        for b, rng in enumerate(generators(seed, seeds, ENV_STREAM)):
            learned = entry.factory(prob, kk, samples, rng, **params)
            gap = v_star - learned.deployed_values(prob)  # (G, n+1)
            sup_gap[b, i] = gap.max()
            mu0_gap[b, i] = gap.reshape(-1) @ chain.mu0
            noise[b, i] = np.abs(learned.Q.reshape(q_star.shape) - q_star).max()
            draws[i] = learned.draws
    return LocalAgentsResult(
        sup_gap=sup_gap,
        mu0_gap=mu0_gap,
        bellman_noise=noise,
        ks=np.asarray(ks, dtype=np.int64),
        draws=draws,
        n=prob.n,
        samples=samples,
        wall_seconds=time.perf_counter() - t0,
        config={"problem": prob.name, "samples": samples, "n": prob.n},
    )
