"""Negative controls: agents and bugs that a claim must FAIL, or the claim has no power.

A claim "UCBVI's regret stays below Theorem 1" that an agent which never learns also passes says
nothing about UCBVI. Every registered claim therefore names its controls
(``register_validation(claim, controls=(...))``), and :func:`theorylab.validations.validate` runs
each of them at the claim's scale: a claim whose controls do not all fail is UNPOWERED, not PASS
(docs/validations.md, "Power").

A control is a context manager that changes what the claim runs, without touching the claim:

* **null agents** take the place of the claim's algorithm in the algorithm registry
  (``theorylab.algorithms.registry.ALGORITHMS``) while the claim runs:

  - ``frozen``: always action 0, and reports the cap of the value range as its estimate
    (H r_max online; offline the pessimistic-side trivial estimate 0), so optimism and pessimism
    checks hold for it trivially;
  - ``random``: a uniformly random action at every step (online: a fresh uniformly random
    deterministic policy each episode, whose law over an episode is the uniform policy's, since
    a finite-horizon episode visits each (h, s) at most once; offline: the uniform stochastic
    policy), with the same estimates as ``frozen``.

  The null agent builds the real agent once (so that bad parameters still raise and a risk
  objective such as CVaR at tau is read from it) and then ignores it.
* **mutations** (``theorylab.validations.mutations``) patch one known bug into the library.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np


@contextlib.contextmanager
def patched(owner, attribute: str, value) -> Iterator[None]:
    """Set ``owner.attribute`` to ``value`` for the duration (a mutation's patch), then
    restore it (or remove it when ``owner`` did not hold it itself)."""
    had = attribute in vars(owner)
    old = vars(owner).get(attribute)
    setattr(owner, attribute, value)
    try:
        yield
    finally:
        if had:
            setattr(owner, attribute, old)
        else:
            delattr(owner, attribute)


@dataclass(frozen=True)
class Control:
    """A negative control: ``applied(claim)`` is a context manager under which the claim runs
    the control instead of the algorithm (or with the bug)."""

    name: str
    kind: str  # "null agent" or "mutation"
    description: str
    applied: Callable[[object], contextlib.AbstractContextManager]
    # the claims modules whose claims a mutation is run against in the mutation table
    # (``theorylab validate --mutations``); empty: the modules of the claims that list it
    family: tuple[str, ...] = ()
    # pinned-constant tests that must FAIL under the mutation: (test module, function, kwargs)
    # in tests/ (``theorylab.validations.mutants.run_pinned_test``)
    tests: tuple[tuple[str, str, dict], ...] = ()


CONTROLS: dict[str, Control] = {}


def register_control(control: Control) -> Control:
    if control.name in CONTROLS:
        raise ValueError(f"control {control.name!r} is registered twice")
    CONTROLS[control.name] = control
    return control


def get_control(name: str) -> Control:
    """A registered control (the mutations register when ``theorylab.validations.mutations`` is
    imported, which ``theorylab.validations.validate`` does)."""
    if name not in CONTROLS:
        raise KeyError(f"unknown control {name!r}; available: {', '.join(sorted(CONTROLS))}")
    return CONTROLS[name]


# ----------------------------------------------------------------------------- substitution
@contextlib.contextmanager
def substituted(names, make_replacement) -> Iterator[None]:
    """Within the block, the algorithms ``names`` of the one registry
    (``theorylab.algorithms.registry.ALGORITHMS``) are built by ``make_replacement(factory)``:
    both the factory ``ALGORITHMS.make`` calls and the entry the runners read are replaced."""
    from dataclasses import replace

    from theorylab.algorithms.registry import ALGORITHMS, load_algorithms

    load_algorithms()
    saved = {}
    try:
        for name in names:
            key = name.lower()
            entry = ALGORITHMS.entry(key)
            saved[key] = (ALGORITHMS._entries[key], entry)
            new = make_replacement(entry.factory)
            ALGORITHMS._entries[key] = new
            ALGORITHMS._meta[key] = replace(entry, factory=new)
        yield
    finally:
        for key, (factory, entry) in saved.items():
            ALGORITHMS._entries[key], ALGORITHMS._meta[key] = factory, entry


def claim_algorithms(claim) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The (online, offline) algorithm names a null control replaces in ``claim``: its
    ``control_targets`` attribute ``{"online": (...), "offline": (...)}`` when set, else its
    ``algorithm`` (online)."""
    targets = getattr(claim, "control_targets", None) or {}
    online = tuple(targets.get("online", ()))
    offline = tuple(targets.get("offline", ()))
    if not online and not offline and getattr(claim, "algorithm", None):
        online = (claim.algorithm,)
    return online, offline


def null_agent_class(kind: str, original: type) -> type:
    """An online null agent (``kind`` "frozen" or "random") in place of ``original``."""

    class NullAgent:
        name = f"{kind} (in place of {getattr(original, 'name', original.__name__)})"
        __signature__ = None

        def __init__(self, env, n_seeds, rngs, **params) -> None:
            inner = original(env, n_seeds, rngs, **params)
            if getattr(inner, "objective", None) is not None:
                self.objective = inner.objective
            self.n_seeds, self.H, self.S, self.A = n_seeds, env.H, env.S, env.A
            r = env.reward if env.reward is not None else np.ones(1)
            self._cap = float(env.H * max(float(np.max(r)), 1.0))
            self._rng = np.random.default_rng([20261124, n_seeds])
            if hasattr(inner, "selected"):  # Rep-UCB's feature choice: kept as it starts
                self.selected = np.array(inner.selected, copy=True)
                self.selection_history: list = []

        def policy(self) -> np.ndarray:
            shape = (self.n_seeds, self.H, self.S)
            if kind == "frozen":
                return np.zeros(shape, dtype=np.int64)
            return self._rng.integers(0, self.A, size=shape)

        def value_estimate(self) -> np.ndarray:
            return np.full(self.n_seeds, self._cap)

        def update(self, traj) -> None:
            if hasattr(self, "selection_history"):
                self.selection_history.append(self.selected.copy())

        def closed_form_run(self, mdp, objective, v_star: float, episodes: int):
            """The run without its episodes (the runner's ``loop="auto"`` at
            ``CLOSED_FORM_MIN`` seed-episodes and more, e.g. ``--scale paper``): see
            :func:`null_closed_form`."""
            if hasattr(self, "selection_history"):
                return None  # Rep-UCB's selection history is read by its claim: run the loop
            return null_closed_form(kind, mdp, objective, v_star, self.n_seeds, episodes, self._cap)

    # the runner inspects the constructor for "episodes" / "backend": expose the original's
    import inspect

    NullAgent.__signature__ = inspect.signature(original)
    return NullAgent


RANDOM_POLICY_DRAWS = 2**14  # the random agent's mean value under a risk objective
RANDOM_POLICY_SEED = 20261124


def null_closed_form(
    kind: str, mdp, objective, v_star: float, n_seeds: int, episodes: int, cap: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """A null agent's run in closed form: ``(regret, returns, estimates)``, each ``(B, K)``.

    A null agent does not learn, so its exact per-episode regret is known before it plays:

    * ``frozen`` plays action 0 at every (h, s): regret ``V* - V^0`` on every episode, with
      ``V^0`` the objective's exact value of that policy (the loop's number to round-off);
    * ``random`` plays a fresh uniformly random deterministic policy each episode, whose regret
      is a random variable with mean ``V* - V^unif`` (the uniform policy's value is the mean of
      the deterministic policies' values for the expected return, which is linear in the
      policy's per-state choices). The closed form is that mean on every episode: over the K of
      a paper-scale run (1e7 and more) the mean of the sampled regrets differs from it by about
      sd / sqrt(K). For a risk objective (not linear in the policy) the mean has no closed form
      (it averages A^(HS) policies' values): it is estimated from ``RANDOM_POLICY_DRAWS``
      uniformly random deterministic policies drawn from a fixed seed, with standard error
      sd / sqrt(RANDOM_POLICY_DRAWS) (on ICVaR-RM's instance sd = 0.1, so 0.0008).

    ``returns`` holds the played policy's expected return (for ``random``, the uniform
    policy's), not sampled returns; ``estimates`` the cap, as the loop's agent reports. The
    arrays are read-only broadcasts of one value per seed: no (B, K) memory until a caller
    derives a new array (``cumulative_regret``)."""
    from theorylab.algorithms.objectives import BackendRiskNeutral, RiskNeutral

    risk_neutral = isinstance(objective, (RiskNeutral, BackendRiskNeutral))
    H, S, A = mdp.horizon, mdp.S, mdp.A
    if kind == "frozen":
        policy = np.zeros((1, H, S), dtype=np.int64)
        value = float(np.asarray(objective.policy_values(mdp, policy))[0])
        expected = (
            value
            if risk_neutral
            else float(np.asarray(RiskNeutral().policy_values(mdp, policy))[0])
        )
    elif kind == "random" and risk_neutral:
        from theorylab.algorithms.planning import evaluate_policies

        uniform = np.full((1, H, S, A), 1.0 / A)
        value = expected = float(
            (evaluate_policies(mdp, uniform, batched=True)[:, 0] * mdp.mu0).sum(axis=-1)[0]
        )
    elif kind == "random":
        rng = np.random.default_rng(RANDOM_POLICY_SEED)
        draws = rng.integers(0, A, size=(RANDOM_POLICY_DRAWS, H, S))
        value = float(np.mean(np.asarray(objective.policy_values(mdp, draws))))
        expected = float(np.mean(np.asarray(RiskNeutral().policy_values(mdp, draws))))
    else:
        return None

    def constant(x: float) -> np.ndarray:
        return np.broadcast_to(np.float64(x), (n_seeds, episodes))

    return constant(v_star - value), constant(expected), constant(cap)


def null_fit(kind: str, original: Callable) -> Callable:
    """An offline null algorithm in place of the fit function ``original``: the same result
    with the policy replaced (frozen: action 0; random: uniform) and the estimate set to 0, the
    trivial pessimistic value.

    The replacement is a transform of the fit's result alone (``result_transform(result, A)``,
    with ``wrapped_fit = original``), so the offline runner's compiled sweep applies it to the
    results it computes (``theorylab.algorithms.offline.compiled_sweep``) and the control runs
    the same numbers on either loop."""
    from dataclasses import replace

    def transform(res, A: int):
        pol = np.asarray(res.policy)
        if kind == "frozen":
            policy = np.zeros(pol.shape[: (pol.ndim - 1 if pol.dtype.kind == "f" else pol.ndim)])
            policy = policy.astype(np.int64)
        else:
            base = pol.shape[:-1] if pol.dtype.kind == "f" else pol.shape
            policy = np.full((*base, A), 1.0 / A)
        return replace(
            res,
            algorithm=f"{kind} (in place of {res.algorithm})",
            policy=policy,
            value_estimate=np.zeros_like(np.asarray(res.value_estimate, dtype=float)),
        )

    def fit(dataset, **params):
        return transform(original(dataset, **params), dataset.A)

    import inspect

    fit.__signature__ = inspect.signature(original)
    fit.result_transform = transform
    fit.wrapped_fit = original
    return fit


@contextlib.contextmanager
def null_control(kind: str, claim) -> Iterator[None]:
    from theorylab.registry import parse_spec

    online, offline = claim_algorithms(claim)
    if not online and not offline:
        raise ValueError(f"claim {claim.name!r} names no algorithm a null control can replace")
    online = tuple(parse_spec(n)[0] for n in online)
    offline = tuple(parse_spec(n)[0] for n in offline)
    with (
        substituted(online, lambda cls: null_agent_class(kind, cls)),
        substituted(offline, lambda fn: null_fit(kind, fn)),
    ):
        yield


def optimal_markov_policy(mdp, objective) -> np.ndarray:
    """``(H, S)`` a deterministic optimal policy of ``mdp`` under the run's ``objective`` (None:
    the expected return; iterated CVaR: Du et al.'s recursion). Raises ValueError for an
    objective whose optimum is not a Markov policy (static CVaR needs a budget state)."""
    from theorylab.algorithms.planning import backward_induction
    from theorylab.algorithms.risk.objectives import IteratedCVaR

    if objective is None:
        return backward_induction(mdp).policy
    if isinstance(objective, IteratedCVaR):
        from theorylab.algorithms.risk.iterated_cvar import iterated_cvar_planning

        return iterated_cvar_planning(mdp, objective.alpha).policy
    raise ValueError(
        f"the oracle control needs a Markov optimal policy; {objective.name} has none here"
    )


@contextlib.contextmanager
def oracle_control(claim) -> Iterator[None]:
    """The claim's online algorithm replaced by an agent that plays an optimal policy of the true
    MDP from the first episode (zero regret): the control for claims that regret is *large*
    (linear, above a floor, or growing as a lower bound says it must), which a null agent
    passes. The optimal policy is that of the objective the run is scored by (the
    registration's, e.g. iterated CVaR at the run's alpha), and the oracle takes the algorithm's
    place in the registry, so the run is scored exactly as the algorithm's would be."""
    import functools

    import theorylab.experiment as experiment
    from theorylab.registry import parse_spec
    from theorylab.runners.problems import resolve_mdp
    from theorylab.validations.claim import run_objective

    online, _ = claim_algorithms(claim)
    targets = {parse_spec(n)[0] for n in online}
    original = experiment.run

    def run(algorithm, mdp, *args, **kwargs):
        algo = parse_spec(algorithm)[0] if isinstance(algorithm, str) else None
        if algo not in targets:
            return original(algorithm, mdp, *args, **kwargs)
        mdp = resolve_mdp(mdp)
        best = optimal_markov_policy(mdp, run_objective(algorithm, kwargs))  # (H, S)

        def make_oracle(original_factory):
            class Oracle:
                name = f"oracle (in place of {algo})"

                def __init__(self, env, n_seeds, rngs, **params) -> None:
                    self.n_seeds = n_seeds

                def policy(self) -> np.ndarray:
                    return np.broadcast_to(best, (self.n_seeds, *best.shape)).copy()

                def update(self, traj) -> None:
                    pass

            import inspect

            Oracle.__signature__ = inspect.signature(original_factory)
            return Oracle

        with substituted((algo,), make_oracle):
            return original(algorithm, mdp, *args, **kwargs)

    experiment.run = functools.wraps(original)(run)
    try:
        yield
    finally:
        experiment.run = original


register_control(
    Control(
        "oracle",
        "null agent",
        "plays an optimal policy of the true MDP from the first episode (zero regret)",
        oracle_control,
    )
)
register_control(
    Control(
        "frozen",
        "null agent",
        "always action 0; reports the cap of the value range (online) or 0 (offline)",
        lambda claim: null_control("frozen", claim),
    )
)
register_control(
    Control(
        "random",
        "null agent",
        "a uniformly random action at every step; estimates as the frozen agent's",
        lambda claim: null_control("random", claim),
    )
)
