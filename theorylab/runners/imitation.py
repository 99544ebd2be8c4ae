"""The runner of ``kind="imitation"``: expert data plus other data per seed, fit, score exactly.

For each seed two datasets are drawn on the problem's (discounted) model:

* the *expert* data: ``expert_size`` transitions of pi* (the behaviour mixture at coverage 1;
  :mod:`theorylab.algorithms.offline.dataset`), drawn from the root seed ``seed +
  EXPERT_SEED_OFFSET`` so that it is independent of the other data;
* the *other* ("supplementary", "arbitrary") data: ``dataset_size`` transitions of
  ``coverage * pi* + (1 - coverage) * other``, exactly as the offline runner draws its data
  (``other="adversarial"`` never plays an optimal action: the data does not cover the expert).

The algorithm ``fit(expert, dataset, **params)`` returns a policy, scored on the true model:
``SubOpt = V*(mu0) - V^{pi_hat}(mu0)`` (exact policy evaluation). The expert is pi*, so this is
how far the imitation falls short of the expert. With a list of dataset sizes the largest
datasets are drawn once and the smaller ones are their first rows (nested data); ``expert_size``
is an int (the same expert data for every N), a list (one per N) or None (equal to each N).
Called through :func:`theorylab.run`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from theorylab.algorithms.offline.coverage import optimal_solution
from theorylab.algorithms.offline.dataset import make_dataset
from theorylab.algorithms.offline.scoring import policy_values
from theorylab.algorithms.registry import ALGORITHMS
from theorylab.results import SuboptimalityResult
from theorylab.runners.arguments import dataset_sizes
from theorylab.runners.problems import discounted_problem, resolve_mdp

EXPERT_SEED_OFFSET = 7_919  # the expert data's root seed is seed + this (independent streams)


def _expert_sizes(expert_size, sizes: list[int]) -> list[int]:
    if expert_size is None:
        return list(sizes)
    if isinstance(expert_size, Sequence) and not isinstance(expert_size, str):
        out = [int(n) for n in expert_size]
        if len(out) != len(sizes):
            raise ValueError(
                f"expert_size has {len(out)} entries for {len(sizes)} dataset sizes; give one "
                "per dataset size, or one int for all"
            )
    else:
        out = [int(expert_size)] * len(sizes)
    if any(n < 1 for n in out) or sorted(out) != out:
        raise ValueError(f"expert_size must be positive and non-decreasing, got {expert_size!r}")
    return out


def run(
    entry,
    problem,
    *,
    seeds: list[int],
    seed: int,
    progress: bool,
    params: dict[str, Any],
    dataset_size: int | Sequence[int],
    expert_size: int | Sequence[int] | None = None,
    coverage: float = 0.0,
    other: str = "uniform",
    sampling: str | None = None,
) -> SuboptimalityResult:
    """Fit the imitation algorithm ``entry`` on expert plus other data (module docstring) and
    score its policy exactly against the expert pi*."""
    sizes = dataset_sizes(dataset_size)
    n_expert = _expert_sizes(expert_size, sizes)
    t_start = time.perf_counter()
    mdp = discounted_problem(resolve_mdp(problem), entry.name)
    other_all = make_dataset(
        mdp, sizes[-1], coverage=coverage, other=other, kind=sampling, seeds=seeds, seed=seed
    )
    expert_all = make_dataset(
        mdp, n_expert[-1], coverage=1.0, kind=sampling, seeds=seeds, seed=seed + EXPERT_SEED_OFFSET
    )
    v_star = optimal_solution(mdp).value
    B, M = len(seeds), len(sizes)
    sub, val = np.empty((B, M)), np.empty((B, M))
    fitted = None
    for j, (n, n_e) in enumerate(zip(sizes, n_expert, strict=True)):
        data = other_all if n == sizes[-1] else other_all.head(n)
        expert = expert_all if n_e == n_expert[-1] else expert_all.head(n_e)
        fitted = ALGORITHMS.make(entry.name, expert=expert, dataset=data, **params)
        val[:, j] = policy_values(mdp, fitted.policy)
        sub[:, j] = v_star - val[:, j]
    config = {
        "mdp": getattr(mdp, "name", str(problem)),
        "S": mdp.S,
        "A": mdp.A,
        "H": None,
        "gamma": mdp.gamma,
        "dataset_size": sizes if M > 1 else sizes[0],
        "expert_size": n_expert if M > 1 else n_expert[0],
        "sampling": other_all.kind,
        "fitted_params": {
            k: v for k, v in fitted.params.items() if isinstance(v, (int, float, str, bool))
        },
    }
    info = {k: v for k, v in fitted.info.items() if isinstance(v, (int, float, str, bool))}
    return SuboptimalityResult(
        suboptimality=sub,
        policy_value=val,
        value_estimate=np.full((B, M), np.nan),
        pessimism_holds=np.zeros((B, M), dtype=bool),
        dataset_sizes=np.asarray(sizes, dtype=np.int64),
        optimal_value=float(v_star),
        wall_seconds=time.perf_counter() - t_start,
        config=config,
        coverage={"coverage": coverage, "other": other},
        pessimistic=False,
        info=info,
    )
