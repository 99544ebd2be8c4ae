"""The runners of ``kind="preference"`` and ``kind="preference-offline"``.

``run`` -- K episodes x B seeds of a learner that sees no rewards, only a comparison oracle built
on the MDP's true mean rewards (``feedback="btl"``: items are the S*A state-action pairs,
P((s, a) > (s', a')) = sigma(r(s, a) - r(s', a')); ``feedback="btl-trajectory"``: whole
trajectories, P(tau1 > tau2) = sigma(sum_h r(s_h, a_h) - sum_h r(s'_h, a'_h)), a linear BTL oracle
over the visit counts psi(tau) in R^{SA}). The default feedback is the learner's first
``feedbacks`` entry ("btl" when it declares none). A *duelling* learner (``duel = True``) plays
two policies per episode (a round): ``policy_pair()`` gives them, both are rolled out and
``update_pair(tau1, tau2)`` learns from the two trajectories; its regret per round is
V* - (V^{pi1} + V^{pi2}) / 2 (both policies counted, halved). A learner with a
``known_model`` parameter is handed the true MDP (the known-transition setting). Per episode
and seed the regret is exact (V*_1(mu0) - V^{pi_k}_1(mu0) by batched policy evaluation on the
true model) and the number of comparisons asked so far is recorded. The oracle draws from the
agent stream's generators of ``theorylab.seeding`` spawned one level further (spawn key (i,
AGENT_STREAM, 1)), so seed i asks and is answered the same alone or in a batch.

``run_offline`` -- fit(bandit, comparisons) for every seed and every dataset size (fresh data per
size, drawn from the environment stream), exact sub-optimality and the comparisons used.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.agent import env_spec
from theorylab.algorithms.objectives import RISK_NEUTRAL
from theorylab.results.preference import PreferenceResult
from theorylab.runners.problems import resolve_mdp
from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators

FEEDBACK = ("btl", "btl-trajectory")
DESIGNS = ("uniform", "zjj-thm39")


def oracle_generators(seed: int, seeds: list[int]) -> list[np.random.Generator]:
    """The comparison oracle's generators: SeedSequence(seed, spawn_key=(i, AGENT_STREAM, 1))."""
    return [
        np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i, AGENT_STREAM, 1)))
        for i in seeds
    ]


def make_oracle(mdp, feedback: str, rngs):
    """The comparison oracle of a stationary-reward tabular MDP: over its S*A pairs ("btl") or
    over whole trajectories through their visit counts ("btl-trajectory")."""
    from theorylab.mdps.preference import LinearBTLOracle, PreferenceMatrixOracle, btl_matrix

    if feedback not in FEEDBACK:
        raise ValueError(f"feedback must be one of {FEEDBACK}, got {feedback!r}")
    R = np.asarray(mdp.R)
    if R.ndim != 2:
        raise ValueError(
            f"{mdp.name}: comparisons of state-action pairs need stationary rewards (S, A); "
            f"this MDP's rewards have shape {R.shape}"
        )
    if feedback == "btl-trajectory":
        return LinearBTLOracle(R.reshape(-1), rngs)
    return PreferenceMatrixOracle(btl_matrix(R.reshape(-1)), rngs)


def run(
    entry,
    problem,
    *,
    seeds: list[int],
    seed: int,
    progress: bool,
    params: dict[str, Any],
    episodes: int,
    feedback: str | None = None,
) -> PreferenceResult:
    """Run the preference-based learner ``entry`` on ``problem`` for ``episodes`` episodes."""
    if isinstance(episodes, bool) or int(episodes) != episodes or episodes < 1:
        raise ValueError(f"episodes must be a positive integer, got {episodes!r}")
    episodes = int(episodes)
    mdp = resolve_mdp(problem)
    B = len(seeds)
    env = env_spec(mdp, known_rewards=False)
    accepted = tuple(getattr(entry.factory, "feedbacks", ("btl",)))
    feedback = accepted[0] if feedback is None else feedback
    if feedback in FEEDBACK and feedback not in accepted:  # unknown names: make_oracle says
        raise ValueError(f"{entry.name} takes feedback in {accepted}, got {feedback!r}")
    oracle = make_oracle(mdp, feedback, oracle_generators(seed, seeds))
    env_rngs = generators(seed, seeds, ENV_STREAM)
    agent_params = dict(params)
    if "episodes" in entry.parameters():
        agent_params.setdefault("episodes", episodes)
    if "known_model" in entry.parameters():
        agent_params.setdefault("known_model", mdp)
    agent = entry.factory(env, B, generators(seed, seeds, AGENT_STREAM), oracle, **agent_params)
    v_star = RISK_NEUTRAL.optimal_value(mdp)
    regret = np.empty((B, episodes))
    queries = np.empty((B, episodes), np.int64)
    counts = getattr(agent, "counts", None)
    extra = {k: np.empty((B, episodes), np.int64) for k in (counts or {})}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=episodes, desc=f"{entry.name} on {mdp.name}", unit="ep", leave=False)
    t0 = time.perf_counter()
    duel = getattr(agent, "duel", False)
    for k in range(episodes):
        if duel:
            pi1, pi2 = agent.policy_pair()
            values = RISK_NEUTRAL.policy_values(mdp, pi1) + RISK_NEUTRAL.policy_values(mdp, pi2)
            regret[:, k] = v_star - 0.5 * values
            tau1 = RISK_NEUTRAL.rollout(mdp, pi1, env_rngs)
            agent.update_pair(tau1, RISK_NEUTRAL.rollout(mdp, pi2, env_rngs))
        else:
            pi = agent.policy()
            regret[:, k] = v_star - RISK_NEUTRAL.policy_values(mdp, pi)
            agent.update(RISK_NEUTRAL.rollout(mdp, pi, env_rngs))
        queries[:, k] = oracle.queries
        for name in extra:
            extra[name][:, k] = counts[name]
        if bar is not None:
            bar.update(1)
    wall = time.perf_counter() - t0
    if bar is not None:
        bar.close()
    config = {
        "mdp": mdp.name,
        "S": mdp.S,
        "A": mdp.A,
        "H": mdp.horizon,
        "episodes": episodes,
        "feedback": feedback,
        "duel": bool(duel),
    }
    return PreferenceResult(
        "regret", regret, queries, np.arange(1, episodes + 1), float(v_star), wall, config, extra
    )


def run_offline(
    entry,
    problem,
    *,
    seeds: list[int],
    seed: int,
    progress: bool,
    params: dict[str, Any],
    dataset_size,
    design: str = "uniform",
) -> PreferenceResult:
    """Fit ``entry`` on fresh comparison data of every size; exact sub-optimality per seed."""
    from theorylab.mdps.preference import ComparisonBandit, sample_pairwise, zjj_thm39_dataset

    bandit = resolve_mdp(problem)
    if not isinstance(bandit, ComparisonBandit):
        raise ValueError(
            f"{entry.name} needs a comparison bandit (e.g. zjj-thm39), got {type(bandit).__name__}"
        )
    sizes = [int(n) for n in np.atleast_1d(dataset_size)]
    if any(n < 2 for n in sizes) or sizes != sorted(set(sizes)):
        raise ValueError(f"dataset_size must be an increasing list of integers >= 2, got {sizes}")
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {DESIGNS}, got {design!r}")
    if design == "zjj-thm39" and bandit.name != "zjj-thm39":
        raise ValueError("design='zjj-thm39' draws the Theorem 3.9 data: use problem zjj-thm39")
    B, M = len(seeds), len(sizes)
    sub = np.empty((B, M))
    queries = np.empty((B, M), np.int64)
    bound = np.full((B, M), np.nan)
    t0 = time.perf_counter()
    for j, n in enumerate(sizes):
        data_seed = seed + j  # a fresh dataset per size (independent across sizes)
        if design == "zjj-thm39":
            data = zjj_thm39_dataset(n, seeds=seeds, seed=data_seed)
        else:
            data = sample_pairwise(bandit, n, seeds=seeds, seed=data_seed)
        res = entry.factory(bandit, data, **params)
        sub[:, j] = res.suboptimality
        queries[:, j] = res.queries
        if hasattr(res, "bound"):
            bound[:, j] = res.bound
    wall = time.perf_counter() - t0
    config = {"mdp": bandit.name, "design": design, "dataset_sizes": sizes}
    extra = {} if np.isnan(bound).all() else {"bound": bound}
    opt = bandit.value(bandit.optimal_policy())
    return PreferenceResult(
        "suboptimality", sub, queries, np.array(sizes), opt, wall, config, extra
    )
