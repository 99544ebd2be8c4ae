"""The runner of ``kind="offline"``: draw a dataset per seed, fit, score exactly.

For each seed a dataset of N transitions is drawn from the behaviour mixture
``coverage * pi* + (1 - coverage) * other`` (``theorylab.algorithms.offline.dataset``; the
default ``coverage=0, other="uniform"`` is the uniform behaviour policy), the algorithm is fitted
and its policy is scored on the true model:

    SubOpt(pi_hat) = V*(mu0) - V^{pi_hat}(mu0)

by exact policy evaluation (``theorylab.algorithms.offline.scoring``). With a list of dataset
sizes the largest dataset is drawn once and the smaller ones are its first N rows (nested data,
so a curve against N is one draw). Called through :func:`theorylab.run`.

Two loops give the same numbers (``loop=``): ``"python"`` draws the dataset with ``make_dataset``
and calls the algorithm's fit once per N; ``"compiled"`` draws, counts and plans every seed's
sweep in one numba call (``theorylab.algorithms.offline.compiled_sweep``: pessimistic VI,
tabular PEVI and VI-LCB on i.i.d. samples or finite-horizon trajectories), from the same random
streams and with the same arithmetic, so its sub-optimality, policy values and estimates equal
the Python loop's (tests/test_offline_compiled_sweep.py). ``"auto"`` (default) takes the
compiled sweep when the run has one and holds at least ``AUTO_MIN_SEED_SAMPLES`` seed-samples.
Exact evaluation, C* and PEVI's coverage term are the same code on both paths.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from theorylab.algorithms.offline.coverage import (
    optimal_solution,
)
from theorylab.algorithms.offline.data_coverage import (
    dataset_concentrability,
    distribution_concentrability,
    pevi_coverage,
    pevi_coverage_from_counts,
)
from theorylab.algorithms.offline.dataset import check_coverage, make_dataset
from theorylab.algorithms.offline.scoring import fit_and_score
from theorylab.results import SuboptimalityResult
from theorylab.runners.arguments import dataset_sizes
from theorylab.runners.problems import finite_horizon_problem, resolve_mdp

LOOPS = ("auto", "python", "compiled")


def run(
    entry,
    problem,
    *,
    seeds: list[int],
    seed: int,
    progress: bool,
    params: dict[str, Any],
    dataset_size: int | Sequence[int],
    coverage: float = 0.0,
    other: str = "uniform",
    sampling: str | None = None,
    data_distribution: np.ndarray | None = None,
    loop: str = "auto",
) -> SuboptimalityResult:
    """Fit the offline algorithm ``entry`` on datasets of ``dataset_size`` transitions per seed
    drawn on ``problem`` (a model or a family spec) and score it exactly.

    coverage: the weight w of pi* in the behaviour mixture ``w pi* + (1 - w) other`` (default 0:
    ``other`` alone); other: "uniform" or "adversarial"; sampling: "trajectories" (default for
    finite horizon) or "samples" (default when discounted); data_distribution: instead of the
    behaviour mixture, the distribution of (h,) s, a each i.i.d. sample is drawn from
    (``make_dataset``'s; ``sampling="samples"``); loop: "auto", "python" or "compiled" (module
    docstring).
    """
    from theorylab.algorithms.offline.compiled_sweep import (
        AUTO_MIN_SEED_SAMPLES,
        compiled_unavailable,
    )

    if loop not in LOOPS:
        raise ValueError(f"loop must be one of {', '.join(LOOPS)}, got {loop!r}")
    sizes = dataset_sizes(dataset_size)
    if data_distribution is None:
        check_coverage(coverage)  # before any dataset is drawn
    t_start = time.perf_counter()
    mdp = resolve_mdp(problem)
    horizon_setting = entry.extra.get("horizon")
    if horizon_setting == "discounted" and mdp.horizon is not None:
        # A model that states both H and gamma (``random:...,gamma=0.9``) is solved as the
        # discounted problem by a discounted-only algorithm; the config records it.
        if mdp.gamma is None or not 0 < mdp.gamma < 1:
            raise ValueError(
                f"{entry.name} is stated for discounted MDPs; {mdp.name} has horizon H = "
                f"{mdp.horizon} and no discount factor in (0, 1) (give gamma=..., e.g. 0.9)"
            )
        mdp = mdp.with_objective(gamma=mdp.gamma, horizon=None)
    if horizon_setting == "finite" and mdp.horizon is None:
        raise ValueError(
            f"{entry.name} is stated for finite-horizon MDPs; {mdp.name} is discounted"
        )
    if horizon_setting == "finite":
        mdp = finite_horizon_problem(mdp, entry.name)
    elif mdp.horizon is not None and getattr(mdp, "gamma", None) is not None:
        # stated for both objectives: a model with a discount is the discounted problem, as for
        # the discounted-only algorithms above (never H with gamma dropped)
        mdp = mdp.with_objective(gamma=mdp.gamma, horizon=None)
    data = (
        {"data_distribution": data_distribution}
        if data_distribution is not None
        else {"coverage": coverage, "other": other}
    )
    if loop != "python":
        why = compiled_unavailable(entry, mdp, params, sampling)
        if why is not None and loop == "compiled":
            raise ValueError(f"loop='compiled': {why}; use loop='python' or 'auto'")
        if why is None and (loop == "compiled" or len(seeds) * sizes[-1] >= AUTO_MIN_SEED_SAMPLES):
            return _run_compiled(entry, mdp, sizes, seeds, seed, params, data, sampling, t_start)
    ds_all = make_dataset(mdp, sizes[-1], kind=sampling, seeds=seeds, seed=seed, **data)
    cover = dataset_concentrability(mdp, ds_all)
    v_star = optimal_solution(mdp).value
    B, M = len(seeds), len(sizes)
    sub, val, est = np.empty((B, M)), np.empty((B, M)), np.empty((B, M))
    holds = np.empty((B, M), dtype=bool)
    pevi_cov = np.empty((B, M)) if mdp.horizon is not None else None
    from theorylab.progress import progress_bar

    bar = progress_bar(
        M, f"{entry.name} on {mdp.name}", "N", enabled=progress and M > 1, leave=False
    )
    fitted = None
    used = list(sizes)
    for j, n in enumerate(sizes):
        ds = ds_all if n == sizes[-1] else ds_all.head(n)  # (trajectories: whole episodes)
        scored = fit_and_score(entry.name, mdp, ds, optimal_value=v_star, **params)
        fitted = scored["result"]
        used[j] = ds.N  # trajectory data holds whole episodes: N can be a little below
        sub[:, j] = scored["suboptimality"]
        val[:, j] = scored["policy_value"]
        est[:, j] = np.asarray(scored["value_estimate"], dtype=float)
        holds[:, j] = scored["pessimism_holds"]
        if pevi_cov is not None:
            pevi_cov[:, j] = pevi_coverage(mdp, ds, getattr(mdp, "phi", None))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    info = {k: v for k, v in fitted.info.items() if isinstance(v, (int, float, str, bool))}
    return _result(
        mdp, used, ds_all.kind, fitted.params, info, fitted.pessimistic, sub, val, est, holds,
        pevi_cov, v_star, t_start, data, cover, loop="python",
    )  # fmt: skip


def _run_compiled(entry, mdp, sizes, seeds, seed, params, data, sampling, t_start):
    """The compiled sweep (``compiled_sweep``), scored with the Python loop's functions."""
    from theorylab.algorithms.offline.compiled_sweep import compiled_sweep
    from theorylab.algorithms.offline.scoring import pessimism_holds, policy_values

    out = compiled_sweep(
        entry,
        mdp,
        sizes,
        seeds,
        seed,
        dict(params),
        coverage=data.get("coverage"),
        other=data.get("other", "uniform"),
        kind=sampling,
        data_distribution=data.get("data_distribution"),
    )
    cover = distribution_concentrability(mdp, out["data_distribution"])
    v_star = optimal_solution(mdp).value
    B, M = len(seeds), len(sizes)
    sub, val = np.empty((B, M)), np.empty((B, M))
    est = out["value_estimate"]
    holds = np.empty((B, M), dtype=bool)
    pevi_cov = np.empty((B, M)) if mdp.horizon is not None else None
    for j in range(M):
        values = policy_values(mdp, out["policy"][j])
        val[:, j] = values
        sub[:, j] = v_star - values
        holds[:, j] = pessimism_holds(est[:, j], values)
        if pevi_cov is not None:
            pevi_cov[:, j] = pevi_coverage_from_counts(
                mdp, out["counts"][:, j], getattr(mdp, "phi", None)
            )
    return _result(
        mdp, out["sizes"], out["kind"], out["params"], out["info"], out["pessimistic"], sub,
        val, est, holds, pevi_cov, v_star, t_start, data, cover, loop="compiled",
    )  # fmt: skip


def _result(
    mdp, used, kind, fitted_params, info, pessimistic, sub, val, est, holds, pevi_cov, v_star,
    t_start, data, cover, *, loop,
) -> SuboptimalityResult:  # fmt: skip
    wall = time.perf_counter() - t_start
    M = len(used)
    config = {
        "mdp": getattr(mdp, "name", str(mdp)),
        "S": mdp.S,
        "A": mdp.A,
        "H": mdp.horizon,
        "gamma": mdp.gamma if mdp.horizon is None else None,
        "dataset_size": used if M > 1 else used[0],
        "sampling": kind,
        "loop": loop,
        "fitted_params": {
            k: v for k, v in fitted_params.items() if isinstance(v, (int, float, str, bool))
        },
    }
    coverage = (
        {"coverage": data["coverage"], "other": data["other"]}
        if "coverage" in data
        else {"coverage": None, "other": "data_distribution"}
    )
    return SuboptimalityResult(
        suboptimality=sub,
        policy_value=val,
        value_estimate=est,
        pessimism_holds=holds,
        dataset_sizes=np.asarray(used, dtype=np.int64),
        optimal_value=float(v_star),
        wall_seconds=wall,
        config=config,
        coverage={**coverage, **cover},
        pevi_coverage=pevi_cov,
        pessimistic=bool(pessimistic),
        info=info,
    )
