"""The one algorithm registry: every algorithm, of every kind, registered once by name.

    @register("ucbvi-bernstein", kind="online", problem="tabular", bounds=("azar2017-thm2",))
    class UCBVIBernstein: ...               # online: (env, n_seeds, rngs, **params)

    @register("vi-lcb", kind="offline", problem="dataset", bounds=("vi-lcb-upper",))
    def fit_vi_lcb(dataset, delta: float = 0.1, ...): ...   # offline: fit(dataset, **params)

An entry records the algorithm's *kind* (which runner runs it: :data:`KINDS`), the *problem* it
needs (tabular model, linear features, low-rank model, an offline dataset, a comparison oracle,
...), the bound cards it carries (names in :mod:`theorylab.bounds`), its factory and one-line
summary. ``theorylab list algorithms`` prints this table; ``theorylab.run`` dispatches on the kind.

A kind is declared once (:func:`register_kind`) with the factory arguments its runner supplies
(not user parameters), the budget keywords ``tl.run`` accepts for it, and the import path of its
runner (a string, so this floor imports nothing above it). How to add an algorithm or a kind:
``docs/architecture.md``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from theorylab.errors import UnknownNameError
from theorylab.registry import Registry, parse_spec


@dataclass(frozen=True)
class Kind:
    """A kind of algorithm: how ``tl.run`` runs it.

    constructor_args: the factory's arguments the runner supplies (never user parameters).
    budget: the budget keywords of ``tl.run`` for this kind -> a one-line description.
    runner: ``"module:function"`` with signature
        ``run(entry, problem, *, seeds, seed, progress, params, **budget) -> Result``.
    """

    name: str
    constructor_args: tuple[str, ...]
    budget: dict[str, str]
    runner: str
    summary: str = ""


KINDS: dict[str, Kind] = {}

# A seed-catalogue row: the catalogue file's number and the row, as ../shared/reference/
# seed-coverage.md writes them ("000#30", "001#24", "002-004#F4").
PAPER_REF = re.compile(r"^(000|001|002-004)#[A-Z]?[0-9]+$")


def check_paper_refs(papers, owner: str) -> tuple[str, ...]:
    """The seed-catalogue rows an algorithm or a claim implements, checked for their form."""
    if isinstance(papers, str):
        papers = (papers,)
    refs = tuple(papers)
    for ref in refs:
        if not isinstance(ref, str) or not PAPER_REF.match(ref):
            raise ValueError(
                f"{owner}: paper reference {ref!r} is not a seed-catalogue row "
                "such as '000#30', '001#24' or '002-004#F4'"
            )
    return refs


def register_kind(kind: Kind) -> Kind:
    """Declare a kind of algorithm (once)."""
    if kind.name in KINDS and KINDS[kind.name] != kind:
        raise ValueError(f"kind {kind.name!r} is declared twice")
    KINDS[kind.name] = kind
    return kind


register_kind(
    Kind(
        "online",
        constructor_args=("env", "n_seeds", "rngs"),
        budget={
            "episodes": "K episodes per seed (required; CLI --episodes/-K)",
            "known_rewards": "give the learner the mean rewards (default True)",
            "backend": "kernel backend: numpy (default), numba, torch, auto",
            "device": "cpu (default) or cuda (torch backend)",
            "loop": "python (the episode loop), compiled (the whole-run kernel of ucbvi-*, greedy, "
            "optimistic-q-*) or auto (default: compiled for runs of 20,000 "
            "seed-episodes and more when there is a kernel)",
            "segment": "compiled loop: episodes per kernel call (default 100,000); python "
            "loop: episodes between checkpoints (default 10,000, at most K; needs checkpoint)",
            "checkpoint": "any loop: a directory that keeps finished segments and the state "
            "(python loop: the agent pickled); an interrupted run given the same directory "
            "resumes there, bit for bit",
        },
        runner="theorylab.runners.online:run",
        summary="episodic learner; exact regret per episode",
    )
)
register_kind(
    Kind(
        "offline",
        constructor_args=("dataset",),
        budget={
            "dataset_size": "N transitions per seed, or an increasing list of N (required; CLI "
            "--dataset-size/-N)",
            "coverage": "weight w of pi* in the behaviour mixture w pi* + (1 - w) other "
            "(default 0: the `other` policy alone)",
            "other": "the rest of the behaviour mixture: uniform (default) or adversarial",
            "sampling": "trajectories (finite-horizon default) or samples (discounted default)",
            "data_distribution": "instead of the behaviour mixture: the distribution (H, S, A) "
            "or (S, A) each i.i.d. sample's (h,) s, a is drawn from (sampling=samples)",
            "loop": "auto (default: compiled when the algorithm has a compiled sweep and the run "
            "holds >= 10^6 seed-samples), python (make_dataset + fit per N) or compiled (one "
            "numba call draws, counts and plans every seed's sweep; the same numbers)",
        },
        runner="theorylab.runners.offline:run",
        summary="fit(dataset) -> policy; exact sub-optimality",
    )
)

register_kind(
    Kind(
        "dual",
        constructor_args=("mdp", "d_ref", "alpha"),
        budget={
            "alpha": "regulariser weight alpha > 0, or an increasing list of them (required; "
            "CLI --alpha)",
            "coverage": "d^O is the occupancy of w pi* + (1 - w) other (default w = 0)",
            "other": "the rest of the behaviour mixture: uniform (default) or adversarial",
        },
        runner="theorylab.runners.dual:run",
        summary="solve the f-regularised occupancy problem; exact duality gap and flow residual",
    )
)
register_kind(
    Kind(
        "ope",
        constructor_args=("dataset", "policy"),
        budget={
            "dataset_size": "N transitions per seed, or an increasing list of N (required; CLI "
            "--dataset-size/-N)",
            "target": "the policy evaluated: optimal (default, pi*) or uniform",
            "coverage": "weight w of pi* in the behaviour mixture w pi* + (1 - w) other "
            "(default 0: the `other` policy alone)",
            "other": "the rest of the behaviour mixture: uniform (default) or adversarial",
        },
        runner="theorylab.runners.ope:run",
        summary="estimate(dataset, policy) -> V_hat(mu0); exact error against V^pi(mu0)",
    )
)
register_kind(
    Kind(
        "constrained",
        # KL-constrained factories take (mdp, q, epsilon), cost-constrained ones
        # (mdp, cost, threshold, iterations): the registration's constraint= says which
        constructor_args=("mdp", "q", "epsilon", "cost", "threshold", "iterations"),
        budget={
            "epsilon": "KL-constrained (reps): constraint level epsilon > 0, or an increasing "
            "list of them (required there; CLI -p epsilon=...)",
            "iterations": "cost-constrained (reload): T primal-dual iterations (required there; "
            "CLI --iterations)",
            "cost": "cost-constrained: the cost, an (S, A) array, or random (default: uniform "
            "on [0, 1] from the run's seed)",
            "threshold": "cost-constrained: the bound b on V_c(mu0), or binding (default: 80% "
            "of the way from the least achievable cost to the unconstrained optimum's)",
        },
        runner="theorylab.runners.constrained:run",
        summary="a constrained occupancy problem: KL-constrained solves at each epsilon (exact "
        "primal, dual, KL, stationarity residual) or a CMDP primal-dual run (each iterate's "
        "value and excess cost against the LP optimum)",
    )
)
register_kind(
    Kind(
        "policy-optimization",
        constructor_args=("problem",),
        budget={
            "iterations": "K, the number of exact policy-optimisation iterations (required; CLI "
            "--iterations)",
        },
        runner="theorylab.runners.policy_optimization:run",
        summary="a deterministic policy iteration on a model solved exactly; exact objective, "
        "regularised objective, entropy and distance to the stated limit per iterate",
    )
)
register_kind(
    Kind(
        "adversarial",
        constructor_args=("problem", "n_seeds", "rngs", "episodes"),
        budget={
            "episodes": "K episodes per seed against the problem's oblivious loss sequence "
            "(required; CLI --episodes/-K)",
        },
        runner="theorylab.runners.adversarial:run",
        summary="episodic learner against an oblivious adversarial loss sequence, with a "
        "simulator; exact regret against the best fixed policy in hindsight",
    )
)
register_kind(
    Kind(
        "average-reward",
        constructor_args=("mdp", "steps", "rngs"),
        budget={
            "steps": "T, the number of steps of one non-episodic trajectory per seed (required; "
            "CLI --steps)",
        },
        runner="theorylab.runners.average_reward:run",
        summary="one trajectory of T steps per seed, no resets; exact regret T g* - sum of the "
        "mean rewards played, against the optimal gain g*",
    )
)
register_kind(
    Kind(
        "average-reward-generative",
        constructor_args=("mdp", "samples", "rngs"),
        budget={
            "samples": "n generative-model draws per state-action pair, or an increasing list "
            "of n (required; CLI -p samples=...)",
        },
        runner="theorylab.runners.average_reward:run_generative",
        summary="estimate a gain-optimal policy from n draws per pair; exact gain gap "
        "g* - g(pi_hat) per n",
    )
)
register_kind(
    Kind(
        "irl",
        constructor_args=("mdp", "expert", "rounds", "rngs"),
        budget={
            "rounds": "T outer rounds (reward player against policy player) per seed (required; "
            "CLI -p rounds=...)",
            "demos": "expert (pi*) demonstrations per seed, whole episodes (default 16; CLI -p "
            "demos=...)",
        },
        runner="theorylab.runners.irl:run",
        summary="moment-matching inverse RL from demonstrations and a simulator; exact moment "
        "gap and value gap of the mixture of the policies against the expert pi*, per round",
    )
)
register_kind(
    Kind(
        "imitation",
        constructor_args=("expert", "dataset"),
        budget={
            "dataset_size": "N transitions of other data per seed, or an increasing list of N "
            "(required; CLI --dataset-size/-N)",
            "expert_size": "expert (pi*) transitions per seed: an int, one per N, or None "
            "(default: equal to N; CLI --expert-size)",
            "coverage": "weight w of pi* in the other data's behaviour w pi* + (1 - w) other "
            "(default 0)",
            "other": "the rest of that mixture: uniform (default) or adversarial (never plays "
            "an optimal action: the other data does not cover the expert)",
            "sampling": "trajectories or samples (discounted default)",
        },
        runner="theorylab.runners.imitation:run",
        summary="fit(expert, dataset) -> policy; exact sub-optimality against the expert pi*",
    )
)
register_kind(
    Kind(
        "preference",
        constructor_args=("env", "n_seeds", "rngs", "oracle"),
        budget={
            "episodes": "K episodes per seed (required; CLI --episodes/-K)",
            "feedback": "the comparison model answering the learner: btl (default; "
            "Bradley-Terry-Luce on the true mean rewards, of state-action pairs or of whole "
            "trajectories as the algorithm asks; plackett-luce and matrix feedback are taken by "
            "preference-offline and preference-game algorithms)",
        },
        runner="theorylab.runners.preference:run",
        summary="episodic learner from preference queries; exact regret and query counts",
    )
)
register_kind(
    Kind(
        "preference-offline",
        constructor_args=("bandit", "data", "oracle"),
        budget={
            "dataset_size": "n comparisons per seed, or an increasing list of n (required; CLI "
            "--dataset-size/-N)",
            "design": "which pairs are compared: uniform (default: s ~ rho, two distinct "
            "actions), zjj-thm39 (the Theorem 3.9 data, on zjj-thm39 only), reference (both "
            "actions from a KL bandit's reference policy) or groups (users of a group bandit)",
            "feedback": "btl (pairwise comparisons; default) or plackett-luce (K-wise rankings "
            "of K distinct actions, ranking_size K)",
            "ranking_size": "plackett-luce feedback: K actions ranked per query (default 3)",
        },
        runner="theorylab.runners.preference:run_offline",
        summary="fit(bandit, comparisons) -> policy; exact sub-optimality and query counts",
    )
)
register_kind(
    Kind(
        "preference-game",
        constructor_args=("game", "oracle"),
        budget={
            "iterations": "T self-play iterations (required; CLI --iterations)",
            "feedback": "matrix (default: comparisons drawn from the game's preference "
            "matrix; the algorithm's m sets how many, m=0 uses exact win rates)",
        },
        runner="theorylab.runners.preference:run_game",
        summary="self-play on a preference game; exact duality gap per iteration and queries",
    )
)


register_kind(
    Kind(
        "gp-bandit",
        constructor_args=("problem", "rounds", "rngs"),
        budget={
            "iterations": "T rounds per seed: grid points evaluated (CONFIG) or training tasks "
            "chosen (required; CLI --iterations)",
        },
        runner="theorylab.runners.gp_bandit:run",
        summary="a GP bandit on a finite grid: one grid point per round per seed, scored on "
        "the true functions (regret, constraint violation, infeasibility declared)",
    )
)


register_kind(
    Kind(
        "cascading",
        constructor_args=("problem", "n_seeds", "rngs", "episodes"),
        budget={
            "episodes": "K episodes per seed on the cascading MDP (required; CLI --episodes/-K)",
        },
        runner="theorylab.runners.cascading:run",
        summary="episodic learner showing ordered item lists to a cascading user (item-level "
        "click feedback); exact regret against the optimum found by brute-force planning",
    )
)


register_kind(
    Kind(
        "multi-batch",
        constructor_args=("problem", "queries", "batches", "rngs"),
        budget={
            "queries": "n, the total number of queries per seed (required; CLI -p queries=...)",
            "batches": "K, the number of batches, or an increasing list of K (required)",
        },
        runner="theorylab.runners.multi_batch:run",
        summary="policy evaluation from n queries sent in K batches (each batch chosen from "
        "the previous batches' answers); exact error of the value estimate per K",
    )
)


register_kind(
    Kind(
        "ssp",
        constructor_args=("problem", "iterations", "rngs"),
        budget={
            "iterations": "n, the synchronous stochastic-approximation sweeps per seed "
            "(required; CLI --iterations)",
        },
        runner="theorylab.runners.ssp:run",
        summary="model-free learning on a stochastic shortest path problem with improper "
        "policies; exact error of the critic and of the current policy's cost against J*",
    )
)


register_kind(
    Kind(
        "local-agents",
        constructor_args=("problem", "k", "samples", "rng"),
        budget={
            "k": "k, the number of local agents sub-sampled, or an increasing list of k (required)",
            "samples": "m, generative-model draws per Q-update (default None: the exact Bellman "
            "operator)",
        },
        runner="theorylab.runners.local_agents:run",
        summary="a global agent learns on k of n local agents and is deployed on all n; exact "
        "optimality gap of the deployed policy on the n-agent system per k",
    )
)


register_kind(
    Kind(
        "irl-generative",
        constructor_args=("problem", "samples", "rngs"),
        budget={
            "samples": "n generative-model draws per (h, s, a), or an increasing list of n "
            "(required)",
        },
        runner="theorylab.runners.irl_generative:run",
        summary="inverse RL with a generative model: the feasible reward set estimated from n "
        "draws per (h, s, a); scored by the exact (LP) distance of the true reward to it",
    )
)


register_kind(
    Kind(
        "markov-game-offline",
        constructor_args=("data",),
        budget={
            "dataset_size": "n samples per stage, or an increasing list of n (required)",
            "coverage": "full, unilateral (default: the NE and its unilateral deviations) or "
            "nash (the NE's support only)",
        },
        runner="theorylab.runners.markov_game:run",
        summary="offline two-player zero-sum Markov game from a generative dataset; exact "
        "duality gap of the output policy pair per n (stored as the sub-optimality)",
    )
)


register_kind(
    Kind(
        "goal-reaching",
        constructor_args=("data",),
        budget={
            "transitions": "all (default: every transition of the model's support) or n: n "
            "sampled transitions per seed, (s, a) uniform and s' ~ P",
        },
        runner="theorylab.runners.goal_reaching:run",
        summary="goal distances d(s, g) learned from observed transitions; exact error against "
        "the optimal goal-conditioned cost-to-go, and the greedy policy's cost on the true model",
    )
)


register_kind(
    Kind(
        "multitask-bandit",
        constructor_args=("problem", "rounds", "rngs"),
        budget={
            "rounds": "identification: the most pulls per task; regret: T rounds, one pull per "
            "task per round (required)",
        },
        runner="theorylab.runners.multitask_bandit:run",
        summary="M linear bandits sharing a k-dimensional representation (multitask-linear): "
        "best-arm identification scored against the brute-force best arms, or exact per-task "
        "pseudo-regret; samples per task and the representation selected",
    )
)


register_kind(
    Kind(
        "deep",
        constructor_args=("task",),
        budget={
            "steps": "gradient steps (required; CLI --steps)",
            "mode": "exact (default: the loss's exact expected update) or sampled (batches)",
            "batch": "sampled mode: pairs or responses per prompt per step (default 64)",
            "record_every": "exact metrics every this many steps (default: about 100 records)",
        },
        runner="theorylab.runners.deep:run",
        summary="tabular twin of a deep loss on a token tree; exact metrics per step",
    )
)
register_kind(
    Kind(
        "transformer",
        constructor_args=("task",),
        budget={
            "steps": "optimiser steps per seed (required; CLI --steps)",
            "eval_every": "exact evaluation every this many steps (default 10)",
            "device": "cpu (default) or cuda",
        },
        runner="theorylab.runners.transformer:run",
        summary="a causal LM trained with a deep loss on a token tree; exact metrics per step",
    )
)


@dataclass(frozen=True)
class AlgorithmEntry:
    """One registered algorithm."""

    name: str
    kind: str
    problem: str
    factory: Callable
    bounds: tuple[str, ...] = ()
    summary: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    papers: tuple[str, ...] = ()  # seed-catalogue rows it implements: ("000#30", "002-004#F4")

    @property
    def kind_info(self) -> Kind:
        return KINDS[self.kind]

    def parameters(self) -> dict[str, Any]:
        """User-settable parameters and their defaults (the factory's arguments less those the
        kind's runner supplies)."""
        sig = inspect.signature(self.factory)
        supplied = set(self.kind_info.constructor_args)
        return {
            k: (None if p.default is inspect.Parameter.empty else p.default)
            for k, p in sig.parameters.items()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and k not in supplied
        }

    def takes_any_keyword(self) -> bool:
        """Whether the factory has a ``**kwargs`` (e.g. a subclass forwarding to its base):
        then keywords are not checked against :meth:`parameters`."""
        sig = inspect.signature(self.factory)
        return any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())


class AlgorithmRegistry(Registry):
    """The registry of :class:`AlgorithmEntry` (a :class:`~theorylab.registry.Registry` whose
    entries also carry kind, problem and bound cards)."""

    def __init__(self) -> None:
        super().__init__("algorithm")
        self._meta: dict[str, AlgorithmEntry] = {}

    def register(  # type: ignore[override]
        self,
        name: str,
        *,
        kind: str,
        problem: str,
        bounds: tuple[str, ...] = (),
        summary: str | None = None,
        papers: tuple[str, ...] = (),
        **extra: Any,
    ):
        if kind not in KINDS:
            raise ValueError(
                f"algorithm {name!r}: unknown kind {kind!r}; declared kinds: {', '.join(KINDS)}"
            )
        papers = check_paper_refs(papers, f"algorithm {name!r}")
        base = super().register(name, summary)

        def deco(fn: Callable) -> Callable:
            base(fn)
            key = name.lower()
            self._meta[key] = AlgorithmEntry(
                name=key,
                kind=kind,
                problem=problem,
                factory=fn,
                bounds=tuple(bounds),
                summary=self._summaries[key],
                extra=dict(extra),
                papers=papers,
            )
            return fn

        return deco

    def entry(self, name: str) -> AlgorithmEntry:
        """The entry of a name or a spec (``"vi-lcb:c_L=0.5"`` -> ``vi-lcb``)."""
        key = parse_spec(name)[0] if ":" in name else name.lower()
        self.get(key)  # unknown names raise UnknownNameError with the list
        return self._meta[key]

    def parameters(self, name: str) -> dict[str, Any]:
        return self.entry(name).parameters()

    def names(self, kind: str | None = None) -> list[str]:  # type: ignore[override]
        if kind is not None and kind not in KINDS:
            raise UnknownNameError(f"unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
        return sorted(n for n, e in self._meta.items() if kind is None or e.kind == kind)

    def make(self, spec: str, **supplied):
        """Build an algorithm from a spec: the kind's runner passes the supplied arguments
        (``env, n_seeds, rngs`` or ``dataset``) and user parameters as keywords."""
        return super().make(spec, **supplied)


ALGORITHMS = AlgorithmRegistry()
register = ALGORITHMS.register

# The modules whose import registers algorithms (one per family); new families add a line.
ALGORITHM_PACKAGES = (
    "theorylab.algorithms.online",
    "theorylab.algorithms.offline.registrations",
    "theorylab.algorithms.deep.registrations",
    "theorylab.algorithms.deep.transformer_registrations",
    "theorylab.algorithms.dual.registrations",
    "theorylab.algorithms.preference.registrations",
    "theorylab.algorithms.policy_optimization",
    "theorylab.algorithms.average_reward",
    "theorylab.algorithms.robust",
    "theorylab.algorithms.gp_bandit",
    "theorylab.algorithms.adversarial",
    "theorylab.algorithms.cascading",
    "theorylab.algorithms.linear.multi_batch",
    "theorylab.algorithms.multitask_bandit.douexpdes",
    "theorylab.algorithms.multitask_bandit.gfucb",
    "theorylab.algorithms.offline.markov_game_pessimism",
    "theorylab.algorithms.goal_reaching",
    "theorylab.algorithms.inverse_rl",
    "theorylab.algorithms.ssp",
    "theorylab.algorithms.multiagent",
    "theorylab.algorithms.feasible_rewards",
)


def load_algorithms() -> None:
    """Import every family package so that its registrations run (idempotent)."""
    import importlib

    for module in ALGORITHM_PACKAGES:
        importlib.import_module(module)


def get_algorithm(name: str) -> AlgorithmEntry:
    """The registry entry of a name or spec; unknown names raise with the list of names."""
    load_algorithms()
    return ALGORITHMS.entry(name)


def list_algorithms(kind: str | None = None) -> list[str]:
    """Registered names, all or of one kind."""
    load_algorithms()
    return ALGORITHMS.names(kind)


def algorithm_parameters(name: str) -> dict[str, Any]:
    """User-settable parameters of an algorithm (without what its runner supplies)."""
    return get_algorithm(name).parameters()


def make_agent(spec: str, env, n_seeds: int, rngs, **params):
    """Build an online agent from a spec (``"ucbvi-hoeffding:delta=0.05"``)."""
    entry = get_algorithm(spec)
    if entry.kind != "online":
        raise ValueError(f"{entry.name!r} is an {entry.kind} algorithm, not an online agent")
    return ALGORITHMS.make(spec, env=env, n_seeds=n_seeds, rngs=rngs, **params)


def fit(spec: str, dataset, **params):
    """Fit the offline algorithm ``spec`` (a name or ``"name:k=v,..."``) to ``dataset`` and
    return its :class:`~theorylab.algorithms.offline.result.OfflineResult`."""
    entry = get_algorithm(spec)
    if entry.kind != "offline":
        raise ValueError(
            f"{entry.name!r} is an {entry.kind} algorithm; fit() takes offline algorithms "
            f"({', '.join(list_algorithms('offline'))})"
        )
    return ALGORITHMS.make(spec, dataset=dataset, **params)
