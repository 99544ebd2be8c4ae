"""Exact sub-optimality of offline algorithms (what the offline runner and the claims score with).

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

from theorylab.algorithms.offline.coverage import optimal_solution
from theorylab.algorithms.offline.dataset import OfflineDataset
from theorylab.algorithms.registry import fit, get_algorithm

PESSIMISM_RTOL = 1e-9


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
    entry = get_algorithm(algorithm)
    has_phi = getattr(mdp, "phi", None) is not None
    if entry.extra.get("features") and "phi" not in params and has_phi:
        params["phi"] = np.asarray(mdp.phi)
    if entry.extra.get("density_features") and "mu" not in params:
        if getattr(mdp, "density_features", None) is None:
            raise ValueError(
                f"{algorithm} needs density features mu (a low-rank MDP with a known right "
                f"factor, e.g. lowrank-simplex:...); {getattr(mdp, 'name', mdp)} has none"
            )
        params["mu"] = mdp.density_features
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
