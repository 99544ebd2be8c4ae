"""Exact sub-optimality of offline algorithms, and ``run_offline`` (what the CLI calls).

Sub-optimality is computed on the true model, never from returns:

    SubOpt(pi_hat) = V*(mu0) - V^{pi_hat}(mu0)

with V* from exact planning (backward induction / policy iteration) and V^{pi_hat} by exact policy
evaluation (batched backward recursion for finite horizon; one linear solve per seed when
discounted). The pessimism invariant of theory.md 10.2 is checked per seed as
``value_estimate <= V^{pi_hat}(mu0) + 1e-9 (1 + |V^{pi_hat}(mu0)|)``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.algorithms.offline.coverage import (
    dataset_concentrability,
    optimal_solution,
    pevi_coverage,
)
from theorylab.algorithms.offline.dataset import OfflineDataset, make_dataset
from theorylab.algorithms.offline.registry import USES_FEATURES, algorithm_name, fit
from theorylab.seeding import seed_indices

PESSIMISM_RTOL = 1e-9


def resolve_mdp(mdp):
    """A family spec string or a model -> the model (``theorylab.mdps.make``)."""
    if isinstance(mdp, str):
        from theorylab.mdps import make

        return make(mdp)
    return mdp


def policy_values(mdp, policy: np.ndarray) -> np.ndarray:
    """Exact ``V^pi(mu0)`` of a batch of policies: ``(B,)``.

    policy: finite horizon ``(B, H, S)`` int or ``(B, H, S, A)``; discounted ``(B, S)`` int or
    ``(B, S, A)``.
    """
    from theorylab.algorithms.planning import evaluate_discounted
    from theorylab.algorithms.planning import policy_values as finite_values

    pol = np.asarray(policy)
    if mdp.horizon is not None:
        return np.asarray(finite_values(mdp, pol, batched=True), dtype=np.float64)
    mu0 = np.asarray(mdp.mu0)
    return np.array([float(evaluate_discounted(mdp, p) @ mu0) for p in pol])


def suboptimality(mdp, policy: np.ndarray, optimal_value: float | None = None) -> np.ndarray:
    """``V*(mu0) - V^pi(mu0)`` per seed, ``(B,)`` (exact)."""
    v_star = optimal_solution(mdp).value if optimal_value is None else optimal_value
    return v_star - policy_values(mdp, policy)


def pessimism_holds(value_estimate: np.ndarray, policy_value: np.ndarray) -> np.ndarray:
    """Per seed, whether ``V_hat(mu0) <= V^{pi_hat}(mu0)`` (up to round-off)."""
    tol = PESSIMISM_RTOL * (1.0 + np.abs(policy_value))
    return np.asarray(value_estimate) <= np.asarray(policy_value) + tol


def fit_and_score(
    algorithm: str, mdp, dataset: OfflineDataset, *, optimal_value: float | None = None, **params
) -> dict[str, Any]:
    """Fit one algorithm to a dataset and score it exactly; arrays per seed ``(B,)``."""
    name = algorithm_name(algorithm)
    if name in USES_FEATURES and "phi" not in params and getattr(mdp, "phi", None) is not None:
        params["phi"] = np.asarray(mdp.phi)
    t0 = time.perf_counter()
    res = fit(algorithm, dataset, **params)
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    v_star = optimal_solution(mdp).value if optimal_value is None else optimal_value
    values = policy_values(mdp, res.policy)
    t_eval = time.perf_counter() - t0
    return {
        "result": res,
        "optimal_value": float(v_star),
        "policy_value": values,
        "suboptimality": v_star - values,
        "value_estimate": res.value_estimate,
        "pessimism_holds": pessimism_holds(res.value_estimate, values),
        "fit_s": t_fit,
        "evaluate_s": t_eval,
    }


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
    """Draw a dataset, fit ``algorithm`` on it for every seed, and score it exactly.

    algorithm: a registered offline name or spec (``"vi-lcb:c_L=0.5"``).
    mdp_spec: a family spec (``"tempting-arms:H=3"``) or a model (TabularMDP / LinearMDP; a model
        with a ``phi`` attribute gives its features to pevi / vw-pevi).
    dataset_size: N transitions per seed; coverage: the weight w of pi* in the behaviour mixture
        ``w pi* + (1 - w) other`` (``other`` = "uniform" or "adversarial"); kind: "trajectories" or
        "samples" (default: trajectories for finite horizon, samples when discounted).
    seeds: B or explicit seed indices; seed: the root seed. params: algorithm parameters.

    Returns a JSON-ready dict: algorithm, mdp, N, n_episodes, kind, coverage, other, seeds, seed,
    S, A, H, gamma, C_star, C_star_clipped, optimal_value, and per seed (lists of length B)
    suboptimality, policy_value, value_estimate, pessimism_holds; pevi_coverage (finite horizon);
    pessimistic, params (as fitted, constants included), info, timings {build_s, data_s,
    coverage_s, fit_s, evaluate_s}.
    """
    t0 = time.perf_counter()
    mdp = resolve_mdp(mdp_spec)
    t_build = time.perf_counter() - t0
    idx = seed_indices(seeds)
    t0 = time.perf_counter()
    ds = make_dataset(
        mdp, dataset_size, coverage=coverage, other=other, kind=kind, seeds=idx, seed=seed
    )
    t_data = time.perf_counter() - t0
    t0 = time.perf_counter()
    cover = dataset_concentrability(mdp, ds)
    extra: dict[str, Any] = {}
    if mdp.horizon is not None:
        extra["pevi_coverage"] = pevi_coverage(mdp, ds, getattr(mdp, "phi", None)).tolist()
    t_cov = time.perf_counter() - t0
    scored = fit_and_score(algorithm, mdp, ds, **params)
    res = scored["result"]
    info = {k: v for k, v in res.info.items() if not isinstance(v, np.ndarray)}
    return {
        "algorithm": algorithm,
        "mdp": getattr(mdp, "name", str(mdp_spec)),
        "N": ds.N,
        "n_episodes": ds.n_episodes,
        "kind": ds.kind,
        "coverage": coverage,
        "other": other,
        "seeds": list(idx),
        "seed": seed,
        "S": mdp.S,
        "A": mdp.A,
        "H": mdp.horizon,
        "gamma": mdp.gamma if mdp.horizon is None else None,
        **cover,
        "optimal_value": scored["optimal_value"],
        "suboptimality": scored["suboptimality"].tolist(),
        "policy_value": scored["policy_value"].tolist(),
        "value_estimate": np.asarray(scored["value_estimate"]).tolist(),
        "pessimism_holds": scored["pessimism_holds"].tolist(),
        "pessimistic": res.pessimistic,
        **extra,
        "params": {k: v for k, v in res.params.items() if not isinstance(v, np.ndarray)},
        "info": info,
        "timings": {
            "build_s": t_build,
            "data_s": t_data,
            "coverage_s": t_cov,
            "fit_s": scored["fit_s"],
            "evaluate_s": scored["evaluate_s"],
        },
    }
