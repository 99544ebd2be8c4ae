"""Top floor: ``tl.run``, the one entry point that runs any registered algorithm.

    tl.run("ucbvi-bernstein", "riverswim:S=6,H=20", episodes=500, seeds=8)        # online
    tl.run("vi-lcb", "random:S=8,A=3,gamma=0.9,seed=31", dataset_size=4000, seeds=16)  # offline

``run`` looks the algorithm up in the one registry (``theorylab.algorithms.registry``), splits the
keywords into the *budget* of its kind (episodes for online learners, dataset size and coverage
for offline ones, ...; ``Kind.budget``) and the algorithm's own parameters, checks both (an
unknown keyword is an error that lists what the algorithm and its kind take), calls the kind's
runner (``theorylab.runners.<kind>``) and stamps the common configuration (algorithm, parameters,
seeds, root seed, package versions) on the result. Every result belongs to one family
(``theorylab.results``): ``summary()``, ``plot()``, ``to_frame()``, ``save()``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import numbers
import os
import platform
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from theorylab.agent import env_spec  # noqa: F401  (re-exported: the learner's view of an MDP)
from theorylab.algorithms.objectives import BackendRiskNeutral  # noqa: F401  (re-exported)
from theorylab.algorithms.registry import KINDS, AlgorithmEntry, get_algorithm, list_algorithms
from theorylab.errors import RunInterrupted
from theorylab.registry import convert_parameters, parse_spec
from theorylab.results import RegretResult, Result, RunResult, SuboptimalityResult  # noqa: F401
from theorylab.seeding import check_root_seed, seed_indices

VERSIONED_PACKAGES = ("theorylab", "numpy", "scipy", "numba", "sympy", "cvxpy")
_RUNNER_KEYWORDS = ("seeds", "seed", "progress", "params")


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in VERSIONED_PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _entry_of(algorithm) -> tuple[AlgorithmEntry, dict[str, str], str]:
    """The registry entry, the raw spec parameters and the label of ``algorithm`` (a name, a
    spec, or an agent class following ``theorylab.agent``'s protocol)."""
    if isinstance(algorithm, str):
        name, raw = parse_spec(algorithm)
        return get_algorithm(name), raw, algorithm
    if inspect.isclass(algorithm):
        for name in list_algorithms():  # a registered class keeps its registration (objective)
            if get_algorithm(name).factory is algorithm:
                return get_algorithm(name), {}, name
        label = getattr(algorithm, "name", algorithm.__name__)
        entry = AlgorithmEntry(
            name=str(label), kind="online", problem="tabular", factory=algorithm, summary=""
        )
        return entry, {}, str(label)
    raise TypeError(
        f"algorithm must be a registered name (theorylab list algorithms) or an agent class, "
        f"got {algorithm!r}"
    )


def runner_of(kind: str):
    """The run function of a kind (imported from its ``Kind.runner`` path)."""
    module, _, function = KINDS[kind].runner.partition(":")
    return getattr(importlib.import_module(module), function)


def _split(entry: AlgorithmEntry, raw: dict[str, str], keywords: dict[str, Any]):
    """Budget keywords of the entry's kind, and the algorithm's typed parameters."""
    kind = entry.kind_info
    defaults = entry.parameters()
    budget = {k: v for k, v in keywords.items() if k in kind.budget}
    params = convert_parameters(entry.name, "algorithm", raw, defaults)
    for key, value in keywords.items():
        if key in kind.budget:
            continue
        if key not in defaults and not entry.takes_any_keyword():
            raise ValueError(_unknown_keyword(entry, key))
        _check_keyword_type(entry.name, key, value, defaults.get(key))
        params[key] = value
    runner = runner_of(entry.kind)
    required = [
        n
        for n, p in inspect.signature(runner).parameters.items()
        if p.kind == p.KEYWORD_ONLY and p.default is p.empty and n not in _RUNNER_KEYWORDS
    ]
    missing = [n for n in required if n not in budget]
    if missing:
        raise ValueError(
            f"{entry.name} is an {entry.kind} algorithm and needs a budget: "
            + ", ".join(f"{n} ({kind.budget[n]})" for n in missing)
            + f"; its kind's budget: {_budget_text(entry)}"
        )
    return budget, params


def _check_keyword_type(name: str, key: str, value: Any, default: Any) -> None:
    """Refuse a keyword parameter whose type cannot be the default's (``delta="0.1"`` where the
    default is 0.1): a number where a number is expected (an int for a float is fine), true or
    false (or 0/1) for a flag. Defaults of other types are not checked."""
    if default is None or isinstance(default, (tuple, list, dict)):
        return
    if isinstance(default, bool):
        ok = isinstance(value, (bool, np.bool_)) or (
            isinstance(value, numbers.Integral) and value in (0, 1)
        )
        expected = "true or false"
    elif isinstance(default, numbers.Real):
        ok = isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
        expected = "a number"
    else:  # strings often name a choice that an object may also make (backend="numpy")
        return
    if not ok:
        raise ValueError(
            f"{name}: parameter {key}={value!r} is a {type(value).__name__}, expected "
            f"{expected} (default {key}={default!r})"
        )


def check_problem(problem) -> None:
    """Refuse, before any work, a ``problem`` that is no model and no valid family spec: an
    unknown family or parameter, a parameter value of the wrong type, or a value such as 123.
    (Sizes and ranges are the family's to check when it builds the model.)"""
    if isinstance(problem, str):
        if problem.lower().endswith(".npz") or os.sep in problem:
            return  # a file holding a model: resolve_mdp reads it
        from theorylab.algorithms.deep.prompt_data import is_prompt_spec

        if is_prompt_spec(problem):
            return  # a prompt dataset (kind transformer): the prompt trainer reads it
        from theorylab.mdps import MDP_FAMILIES, list_families

        name, raw = parse_spec(problem)
        list_families()  # registers the families
        convert_parameters(name, "MDP family", raw, MDP_FAMILIES.parameters(name))
        return
    if problem is None or isinstance(problem, (numbers.Number, bytes, list, tuple, dict, set)):
        raise ValueError(
            f"problem must be a family spec such as 'riverswim:S=6,H=20' (theorylab list mdps) "
            f"or a model (TabularMDP, LinearMDP, ...), got {type(problem).__name__} {problem!r}"
        )


def check(algorithm, problem, **keywords) -> None:
    """What :func:`run` checks before any work, without running: the algorithm's name and
    parameters (names and types), its kind's budget, and the problem's family spec. Sweeps check
    every cell with it before the first one runs."""
    keywords = dict(keywords)
    entry, raw, _ = _entry_of(algorithm)
    _split(entry, raw, keywords)
    check_problem(problem)


def _budget_text(entry: AlgorithmEntry) -> str:
    return ", ".join(entry.kind_info.budget)


def _unknown_keyword(entry: AlgorithmEntry, key: str) -> str:
    params = {k: v for k, v in entry.parameters().items() if k not in entry.kind_info.budget}
    other_kinds = sorted(k for k, info in KINDS.items() if k != entry.kind and key in info.budget)
    hint = f" ({key}= is the budget of {', '.join(other_kinds)} algorithms)" if other_kinds else ""
    listed = ", ".join(f"{k}={v!r}" for k, v in params.items()) or "(none)"
    return (
        f"{entry.name} ({entry.kind}) has no parameter {key!r}{hint}; its parameters: {listed}; "
        f"its budget: {_budget_text(entry)}"
    )


def run(
    algorithm,
    problem,
    episodes: int | None = None,
    seeds: int | Sequence[int] = 1,
    *,
    seed: int = 0,
    progress: bool = False,
    **keywords,
) -> Result:
    """Run any registered algorithm on ``problem`` and return its result.

    algorithm: a registered name or spec (``"ucbvi-bernstein:delta=0.05"``; see
        ``theorylab list algorithms``) or an online agent class following ``theorylab.agent``.
    problem: a model (TabularMDP, LinearMDP, ...), a family spec (``"riverswim:S=6,H=20"``) or
        a file written by ``TabularMDP.save`` (``"my_mdp.npz"``). A model whose rewards were
        mapped to [0, 1] (``mdp.reward_map``) is run on the mapped model and the result is
        reported in the user's units (:mod:`theorylab.runners.user_units`).
    episodes: the budget of online algorithms (K episodes per seed).
    seeds: B (indices 0..B-1) or explicit seed indices; seed i is reproducible alone or batched.
    seed: the root seed of the SeedSequence.
    keywords: the budget of the algorithm's kind (online: ``known_rewards``, ``backend``,
        ``device``; offline: ``dataset_size`` (an int or an increasing list), ``coverage``
        (default 0), ``other`` (default "uniform"), ``sampling``; see ``KINDS[kind].budget``),
        and the algorithm's parameters (``delta=0.1``, ...).

    Returns a :class:`~theorylab.results.Result` of the kind's family: :class:`RegretResult`
    (online), :class:`SuboptimalityResult` (offline), ...
    """
    entry, raw, label = _entry_of(algorithm)
    if episodes is not None:
        keywords["episodes"] = episodes
    budget, params = _split(entry, raw, keywords)
    check_problem(problem)
    idx = seed_indices(seeds)
    seed = check_root_seed(seed)
    if "seed" in inspect.signature(entry.factory).parameters:
        # an algorithm that draws its own randomness from one integer (md-vi's noise, TRPO's random
        # features, a demonstration sample) takes the root seed: tl.run(..., seed=s) reaches it
        params = {**params, "seed": seed}
    if isinstance(problem, str) and problem.lower().endswith(".npz"):  # a TabularMDP.save file
        from theorylab.runners.problems import resolve_mdp

        problem = resolve_mdp(problem)  # read once, here, for its reward map
    rmap = getattr(problem, "reward_map", None)

    def finish(result: Result) -> Result:
        if rmap is not None and not rmap.identity:  # back to the user's reward units
            from theorylab.runners.user_units import to_user_units

            to_user_units(result, rmap)
        result.config = {
            "algorithm": label,
            "kind": entry.kind,
            **result.config,
            "seeds": idx,
            "seed": seed,
            "params": {k: v for k, v in keywords.items() if k not in budget},
            "versions": package_versions(),
        }
        return result

    try:
        result = runner_of(entry.kind)(
            entry, problem, seeds=idx, seed=seed, progress=progress, params=params, **budget
        )
    except RunInterrupted as stop:  # Ctrl-C: the finished episodes travel with the exception
        finish(stop.result)
        raise
    return finish(result)


def run_offline(
    algorithm: str,
    mdp_spec,
    dataset_size: int,
    coverage: float,
    seeds: int | list[int] = 8,
    seed: int = 0,
    *,
    other: str = "uniform",
    kind: str | None = None,
    **params,
) -> dict[str, Any]:
    """Deprecated: use ``tl.run(algorithm, problem, dataset_size=N, coverage=w, ...)``, which
    returns a :class:`SuboptimalityResult`. This alias returns the old JSON-ready dict."""
    warnings.warn(
        "run_offline is deprecated; use theorylab.run(name, problem, dataset_size=N, "
        "coverage=w, seeds=B), which returns a SuboptimalityResult",
        DeprecationWarning,
        stacklevel=2,
    )
    res = run(
        algorithm,
        mdp_spec,
        seeds=seeds,
        seed=seed,
        dataset_size=dataset_size,
        coverage=coverage,
        other=other,
        sampling=kind,
        **params,
    )
    out = res.json_summary()
    out["algorithm"] = algorithm
    return out
