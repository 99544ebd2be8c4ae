"""The runners of ``kind="preference"`` and ``kind="preference-offline"``.

``run`` -- K episodes x B seeds of a learner that sees no rewards, only a comparison oracle built on
the MDP's true mean rewards (``feedback="btl"``: items are the S*A state-action pairs, P((s, a) >
(s', a')) = sigma(r(s, a) - r(s', a')); for an algorithm registered with
``compares="trajectories"``, whole trajectories, P(tau1 > tau0) = sigma(R(tau1) - R(tau0)) with
R(tau) = sum_h r(s_h, a_h), :class:`theorylab.mdps.preference.TrajectoryBTLOracle`). A *duelling*
learner (``duel = True``) plays two policies per episode (a round): ``policy_pair()`` gives them,
both are rolled out and ``update_pair(tau1, tau2)`` learns from the two trajectories; its regret per
round is V* - (V^{pi1} + V^{pi2}) / 2 (both policies counted, halved). A learner with a
``known_model`` parameter is handed the true MDP (the known-transition setting). Per episode and
seed the regret is exact (V*_1(mu0) - V^{pi_k}_1(mu0) by batched policy evaluation on the true
model) and the number of comparisons asked so far is recorded. The oracle draws from the agent
stream's generators of ``theorylab.seeding`` spawned one level further (spawn key (i, AGENT_STREAM,
1)), so seed i asks and is answered the same alone or in a batch.

``run_offline`` -- fit(bandit, comparisons) for every seed and every dataset size (fresh data per
size, drawn from the environment stream), exact sub-optimality and the comparisons used.
``feedback="btl"`` gives pairwise comparisons (:class:`PairwiseDataset`; ``design="uniform"``:
distinct action pairs drawn uniformly, ``"reference"``: both actions drawn from a KL bandit's
reference policy; ``"groups"``: users of a group bandit, ``per_user`` comparisons each),
``"plackett-luce"``
K-wise rankings of K distinct actions (``ranking_size=K``, :class:`RankingDataset`; one query per
ranking).

``run_game`` -- T iterations of a self-play algorithm on a preference game (``feedback="matrix"``:
comparisons drawn from the game's preference matrix, the oracle's generators as in ``run``); the
exact duality gap of the algorithm's output iterate per iteration, and the queries.

Feedback models: each registered algorithm names those it takes (``feedback=(...)`` in its
registration, the first is its default; none named means the kind's first); a model the algorithm
cannot take is an error that says why (``feedback_note``) and which algorithms take it.
"""

from __future__ import annotations

import inspect
import time
from typing import Any

import numpy as np

from theorylab.agent import env_spec
from theorylab.algorithms.objectives import RISK_NEUTRAL
from theorylab.results.preference import PreferenceResult
from theorylab.runners.arguments import positive_integer
from theorylab.runners.problems import finite_horizon_problem, resolve_mdp
from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators

FEEDBACK = ("btl", "plackett-luce", "matrix")
KIND_FEEDBACK = {
    "preference": ("btl",),
    "preference-offline": ("btl", "plackett-luce"),
    "preference-game": ("matrix",),
}
DESIGNS = ("uniform", "zjj-thm39", "reference", "groups")


def feedback_taken(entry) -> tuple[str, ...]:
    """The feedback models an algorithm takes (its registration's ``feedback``, else the kind's
    first); the first is its default."""
    return tuple(entry.extra.get("feedback", KIND_FEEDBACK[entry.kind][:1]))


def resolve_feedback(entry, feedback: str | None) -> str:
    """``feedback`` checked against the algorithm (None: its default); a clear error otherwise."""
    taken = feedback_taken(entry)
    if feedback is None:
        return taken[0]
    if feedback not in FEEDBACK:
        raise ValueError(f"feedback must be one of {', '.join(FEEDBACK)}, got {feedback!r}")
    if feedback in taken:
        return feedback
    from theorylab.algorithms.registry import get_algorithm, list_algorithms

    takers = [
        f"{n} ({get_algorithm(n).kind})"
        for n in list_algorithms()
        if get_algorithm(n).kind in KIND_FEEDBACK and feedback in feedback_taken(get_algorithm(n))
    ]
    note = entry.extra.get("feedback_note")
    return_msg = (
        f"{entry.name} ({entry.kind}) takes feedback {' or '.join(taken)}, not {feedback!r}"
        + (f": {note}" if note else "")
        + f"; algorithms taking {feedback} feedback: {', '.join(takers) or '(none)'}"
    )
    raise ValueError(return_msg)


def check_ranking_size(feedback: str, ranking_size) -> int | None:
    """K for plackett-luce feedback (default 3), None otherwise; an integer >= 2."""
    if feedback != "plackett-luce":
        if ranking_size is not None:
            raise ValueError(
                f"ranking_size applies to plackett-luce feedback only, got feedback={feedback!r}"
            )
        return None
    K = 3 if ranking_size is None else ranking_size
    if isinstance(K, bool) or int(K) != K or K < 2:
        raise ValueError(f"ranking_size must be an integer >= 2, got {ranking_size!r}")
    return int(K)


def comparison_sizes(dataset_size) -> list[int]:
    """The comparison-dataset sizes: an integer or an increasing list of integers >= 2."""
    sizes = [int(n) for n in np.atleast_1d(dataset_size)]
    if any(n < 2 for n in sizes) or sizes != sorted(set(sizes)):
        raise ValueError(f"dataset_size must be an increasing list of integers >= 2, got {sizes}")
    return sizes


def oracle_generators(seed: int, seeds: list[int]) -> list[np.random.Generator]:
    """The comparison oracle's generators: SeedSequence(seed, spawn_key=(i, AGENT_STREAM, 1))."""
    return [
        np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i, AGENT_STREAM, 1)))
        for i in seeds
    ]


def make_oracle(mdp, feedback: str, rngs):
    """The comparison oracle over the S*A pairs of a stationary-reward tabular MDP."""
    from theorylab.mdps.preference import PreferenceMatrixOracle, btl_matrix

    if feedback != "btl":
        raise ValueError(f"state-action comparisons take feedback 'btl', got {feedback!r}")
    R = np.asarray(mdp.R)
    if R.ndim != 2:
        raise ValueError(
            f"{mdp.name}: comparisons of state-action pairs need stationary rewards (S, A); "
            f"this MDP's rewards have shape {R.shape}"
        )
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
    episodes = positive_integer(episodes, "episodes")
    feedback = resolve_feedback(entry, feedback)
    mdp = finite_horizon_problem(resolve_mdp(problem), entry.name)  # refuses an unusable gamma
    B = len(seeds)
    env = env_spec(mdp, known_rewards=False)
    if entry.extra.get("compares") == "trajectories":
        from theorylab.mdps.preference import TrajectoryBTLOracle

        oracle = TrajectoryBTLOracle(mdp.R, mdp.horizon, oracle_generators(seed, seeds))
    else:
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
    feedback: str | None = None,
    ranking_size: int | None = None,
) -> PreferenceResult:
    """Fit ``entry`` on fresh comparison data of every size; exact sub-optimality per seed."""
    from theorylab.mdps.kl_bandit import sample_group_pairs, sample_reference_pairs
    from theorylab.mdps.preference import (
        ComparisonBandit,
        LinearBTLOracle,
        sample_pairwise,
        sample_rankings,
        zjj_thm39_dataset,
    )

    feedback = resolve_feedback(entry, feedback)
    K = check_ranking_size(feedback, ranking_size)

    bandit = resolve_mdp(problem)
    if entry.problem == "mdp":
        return _run_offline_mdp(entry, bandit, seeds, seed, params, dataset_size, design, feedback)
    if not isinstance(bandit, ComparisonBandit):
        raise ValueError(
            f"{entry.name} needs a comparison bandit (e.g. zjj-thm39), got {type(bandit).__name__}"
        )
    sizes = comparison_sizes(dataset_size)
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {DESIGNS}, got {design!r}")
    if design == "zjj-thm39" and bandit.name != "zjj-thm39":
        raise ValueError("design='zjj-thm39' draws the Theorem 3.9 data: use problem zjj-thm39")
    if design == "zjj-thm39" and feedback != "btl":
        raise ValueError("design='zjj-thm39' is pairwise data: it takes feedback='btl' only")
    if design == "groups" and (getattr(bandit, "group_thetas", None) is None or feedback != "btl"):
        raise ValueError(
            "design='groups' draws users' comparisons: it needs a group bandit (maxmin-groups) "
            f"and feedback='btl', got {bandit.name} with {feedback!r}"
        )
    if design == "reference" and (getattr(bandit, "ref", None) is None or feedback != "btl"):
        raise ValueError(
            "design='reference' draws pairs from the reference policy: it needs a KL bandit "
            f"(kl-bandit, gshf-coverage) and feedback='btl', got {bandit.name} with {feedback!r}"
        )
    if K is not None and K > bandit.A:
        raise ValueError(f"ranking_size K = {K} exceeds the {bandit.A} actions of {bandit.name}")
    B, M = len(seeds), len(sizes)
    sub = np.empty((B, M))
    queries = np.empty((B, M), np.int64)
    bound = np.full((B, M), np.nan)
    more: dict[str, np.ndarray] = {}
    t0 = time.perf_counter()
    for j, n in enumerate(sizes):
        data_seed = seed + j  # a fresh dataset per size (independent across sizes)
        if design == "zjj-thm39":
            data = zjj_thm39_dataset(n, seeds=seeds, seed=data_seed)
        elif design == "reference":
            data = sample_reference_pairs(bandit, n, seeds=seeds, seed=data_seed)
        elif design == "groups":
            data = sample_group_pairs(bandit, n, seeds=seeds, seed=data_seed)
        elif feedback == "plackett-luce":
            data = sample_rankings(bandit, n, K, seeds=seeds, seed=data_seed)
        else:
            data = sample_pairwise(bandit, n, seeds=seeds, seed=data_seed)
        call = dict(params)
        if "oracle" in inspect.signature(entry.factory).parameters:  # asks comparisons online
            call.setdefault(
                "oracle", LinearBTLOracle(bandit.theta, oracle_generators(data_seed, seeds))
            )
        res = entry.factory(bandit, data, **call)
        sub[:, j] = res.suboptimality
        queries[:, j] = res.queries
        if hasattr(res, "bound"):
            bound[:, j] = res.bound
        for key, v in getattr(res, "extra_values", {}).items():  # named (B,) values per size
            more.setdefault(key, np.full((B, M), np.nan))[:, j] = v
    wall = time.perf_counter() - t0
    config = {"mdp": bandit.name, "design": design, "dataset_sizes": sizes, "feedback": feedback}
    if K is not None:
        config["ranking_size"] = K
    extra = {} if np.isnan(bound).all() else {"bound": bound}
    extra.update(more)
    opt = bandit.value(bandit.optimal_policy())
    return PreferenceResult(
        "suboptimality", sub, queries, np.array(sizes), opt, wall, config, extra
    )


def _run_offline_mdp(entry, mdp, seeds, seed, params, dataset_size, design, feedback):
    """Trajectory-comparison data on a finite-horizon MDP (uniform behaviour policy), fit, exact
    sub-optimality per seed and size (Zhu-Jordan-Jiao Section 5)."""
    from theorylab.algorithms.preference.pessimistic_mdp import planned_policy, policy_value
    from theorylab.mdps.preference import sample_trajectory_pairs

    if getattr(mdp, "horizon", None) is None:
        raise ValueError(f"{entry.name} needs a finite-horizon MDP, got {mdp!r}")
    mdp = finite_horizon_problem(mdp, entry.name)
    if design != "uniform":
        raise ValueError(f"{entry.name}: trajectory pairs come from the uniform policy only")
    sizes = comparison_sizes(dataset_size)
    B, M = len(seeds), len(sizes)
    behaviour = np.full((mdp.horizon, mdp.S, mdp.A), 1.0 / mdp.A)
    sub, bound = np.empty((B, M)), np.empty((B, M))
    greedy = np.empty((B, M))
    queries = np.empty((B, M), np.int64)
    t0 = time.perf_counter()
    for j, n in enumerate(sizes):
        data = sample_trajectory_pairs(mdp, n, behaviour, seeds=seeds, seed=seed + j)
        res = entry.factory(mdp, data, **params)
        sub[:, j], bound[:, j], queries[:, j] = res.suboptimality, res.bound, res.queries
        greedy[:, j] = res.greedy_suboptimality
    wall = time.perf_counter() - t0
    config = {"mdp": mdp.name, "design": design, "dataset_sizes": sizes, "feedback": feedback}
    opt = policy_value(mdp, planned_policy(mdp, np.asarray(mdp.R, dtype=np.float64)))
    extra = {"bound": bound, "greedy_suboptimality": greedy}
    return PreferenceResult(
        "suboptimality", sub, queries, np.array(sizes), opt, wall, config, extra
    )


def run_game(
    entry,
    problem,
    *,
    seeds: list[int],
    seed: int,
    progress: bool,
    params: dict[str, Any],
    iterations: int,
    feedback: str | None = None,
) -> PreferenceResult:
    """T self-play iterations of ``entry`` on the preference game ``problem``; the exact duality
    gap of the output iterate per iteration and seed, and the queries asked by then."""
    from theorylab.mdps.preference import PreferenceGame, PreferenceMatrixOracle

    iterations = positive_integer(iterations, "iterations")
    feedback = resolve_feedback(entry, feedback)
    game = resolve_mdp(problem)
    if not isinstance(game, PreferenceGame):
        raise ValueError(
            f"{entry.name} needs a preference game (e.g. cyclic-preferences, btl-preferences), "
            f"got {type(game).__name__}"
        )
    oracle = PreferenceMatrixOracle(game.P, oracle_generators(seed, seeds))
    t0 = time.perf_counter()
    res = entry.factory(game, oracle, iterations=iterations, **params)
    wall = time.perf_counter() - t0
    config = {"mdp": game.name, "N": game.N, "iterations": iterations, "feedback": feedback}
    config.update(res.config)
    return PreferenceResult(
        "duality-gap",
        res.gap,
        res.queries,
        np.arange(iterations + 1),
        0.0,
        wall,
        config,
        res.extra,
    )
