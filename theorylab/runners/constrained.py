"""The runner of ``kind="constrained"``: constrained occupancy problems, one result family.

A registration says which constraint its algorithm takes (``constraint=`` on ``register``):

* ``"kl"`` (``reps``, Peters et al. 2010): ``solve(mdp, q, epsilon, **params)`` maximises the
  average reward over stationary state-action distributions mu with ``KL(mu || q) <= epsilon``;
  the runner supplies q, the stationary state-action distribution of the uniform policy
  (:func:`theorylab.algorithms.dual.reps.stationary_state_action`), and records per epsilon the
  primal ``sum mu r``, the dual ``g(eta, V)`` (NaN where the constraint does not bind),
  KL(mu || q), the stationarity residual and eta. A model's horizon or discount is ignored (REPS
  is stated for the average reward). Budget: ``epsilon``.
* ``"cost"`` (``reload``, Moskovitz et al. 2023): ``solve(mdp, cost, threshold, iterations,
  **params)`` runs a primal-dual method on the discounted CMDP ``max V_r(mu0) s.t. V_c(mu0) <= b``
  and returns its trace (:class:`~theorylab.algorithms.dual.cmdp.GDATrace`); the runner records
  per iterate t the value ``V_r(d_t)``, the excess cost ``V_c(d_t) - b``, lambda_t, the flow
  residual, the running average's value and excess, and the CMDP LP's optimum V*. Budget:
  ``iterations`` (T), ``cost`` (an ``(S, A)`` array, or ``"random"``: uniform draws from the
  run's ``seed``) and ``threshold`` (b; default ``"binding"``: 80% of the way from the least
  achievable cost to the cost of the unconstrained optimum, so that the bound binds).

The solvers are deterministic: ``seeds`` is recorded, not used. Called through
:func:`theorylab.run`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from theorylab.results.constrained import ConstrainedResult
from theorylab.runners.arguments import increasing_levels, positive_integer
from theorylab.runners.problems import discounted_problem, resolve_mdp

BINDING_FRACTION = 0.8  # threshold="binding": b = c_min + 0.8 (c_unconstrained - c_min)


def run(
    entry,
    problem,
    *,
    seeds: list[int],
    seed: int,
    progress: bool,
    params: dict[str, Any],
    epsilon: float | Sequence[float] | None = None,
    iterations: int | None = None,
    cost: Any = None,
    threshold: float | str | None = None,
) -> ConstrainedResult:
    """Run ``entry`` on its constraint (module docstring) and record the exact numbers."""
    constraint = entry.extra.get("constraint", "kl")
    if constraint == "kl":
        _refuse(entry, "kl", iterations=iterations, cost=cost, threshold=threshold)
        if epsilon is None:
            raise ValueError(
                f"{entry.name} is a KL-constrained algorithm and needs a budget: epsilon "
                "(constraint level epsilon > 0, or an increasing list of them)"
            )
        return _run_kl(entry, problem, params, epsilon)
    _refuse(entry, "cost", epsilon=epsilon)
    if iterations is None:
        raise ValueError(
            f"{entry.name} is a cost-constrained primal-dual algorithm and needs a budget: "
            "iterations (T, the number of primal-dual iterations)"
        )
    return _run_cost(entry, problem, params, iterations, cost, threshold, seed)


def _refuse(entry, constraint: str, **given) -> None:
    """A budget keyword of the other constraint type is an error naming it."""
    mine, other = (
        ("a cost", "KL-constrained") if constraint == "cost" else ("a KL", "cost-constrained")
    )
    for key, value in given.items():
        if value is not None:
            raise ValueError(
                f"{entry.name} takes {mine} constraint; {key}= is the budget of {other} algorithms"
            )


def _run_kl(entry, problem, params, epsilon) -> ConstrainedResult:
    from theorylab.algorithms.dual.reps import stationary_state_action

    t_start = time.perf_counter()
    levels = increasing_levels(epsilon, "epsilon")
    mdp = resolve_mdp(problem)
    q = stationary_state_action(mdp, np.full((mdp.S, mdp.A), 1.0 / mdp.A))
    sols, secs = [], []
    for eps in levels:
        t0 = time.perf_counter()
        sols.append(entry.factory(mdp, q, eps, **params))
        secs.append(time.perf_counter() - t0)
    nan = np.full(len(levels), np.nan)
    return ConstrainedResult(
        levels=np.array(levels),
        primal=np.array([s.primal_value for s in sols]),
        dual=np.array([np.nan if s.dual_value is None else s.dual_value for s in sols]),
        constraint=np.array([s.kl for s in sols]),
        stationarity=np.array([s.stationarity for s in sols]),
        multiplier=np.array([s.eta for s in sols]),
        optimum=nan,
        average_primal=nan.copy(),
        average_constraint=nan.copy(),
        seconds=np.array(secs),
        occupancy=np.stack([s.mu for s in sols]),
        wall_seconds=time.perf_counter() - t_start,
        config={
            "axis": "epsilon",
            "mdp": mdp.name,
            "S": mdp.S,
            "A": mdp.A,
            "q": "stationary, uniform policy",
        },
    )


def cost_array(cost, mdp, seed: int) -> np.ndarray:
    """The budget ``cost``: ``"random"`` (uniform on [0, 1] per pair, from ``seed``) or an
    ``(S, A)`` array of finite numbers -> ``(S, A)``."""
    if isinstance(cost, str):
        if cost != "random":
            raise ValueError(f"cost must be 'random' or an (S, A) array, got {cost!r}")
        return np.random.default_rng(seed).uniform(size=(mdp.S, mdp.A))
    c = np.asarray(cost, dtype=np.float64)
    if c.shape != (mdp.S, mdp.A) or not np.all(np.isfinite(c)):
        raise ValueError(
            f"cost must be an ({mdp.S}, {mdp.A}) array of finite numbers for {mdp.name}, "
            f"got shape {c.shape}"
        )
    return c


def binding_threshold(mdp, cost: np.ndarray, fraction: float = BINDING_FRACTION) -> float:
    """``c_min + fraction (c_opt - c_min)``: c_min the least achievable ``V_c(mu0)``, c_opt the
    cost of the unconstrained optimum's occupancy (the LP's); below c_opt the bound binds."""
    from theorylab.algorithms.dual.cmdp import least_cost
    from theorylab.algorithms.planning.lp import discounted_lp, discounted_lp_matrix

    g = mdp.gamma
    c_opt = float(np.sum(cost * discounted_lp(mdp).occupancy)) / (1.0 - g)
    c_min = least_cost(mdp, discounted_lp_matrix(mdp, g), cost.ravel(), g, mdp.mu0)
    return c_min + fraction * (c_opt - c_min)


def _run_cost(entry, problem, params, iterations, cost, threshold, seed) -> ConstrainedResult:
    t_start = time.perf_counter()
    T = positive_integer(iterations, "iterations")
    mdp = discounted_problem(resolve_mdp(problem), entry.name)
    c = cost_array("random" if cost is None else cost, mdp, seed)
    threshold = "binding" if threshold is None else threshold
    if isinstance(threshold, str):
        if threshold != "binding":
            raise ValueError(f"threshold must be a number or 'binding', got {threshold!r}")
        b = binding_threshold(mdp, c)
    else:
        b = float(threshold)
        if not np.isfinite(b):
            raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    tr = entry.factory(mdp, c, b, T, **params)
    per = tr.seconds / T
    return ConstrainedResult(
        levels=np.arange(1, T + 1, dtype=np.float64),
        primal=tr.reward,
        dual=np.full(T, np.nan),
        constraint=(tr.cost - b).max(axis=1),
        stationarity=tr.flow_residual,
        multiplier=tr.lam[:, 0],
        optimum=np.full(T, tr.optimum.value),
        average_primal=tr.avg_reward,
        average_constraint=(tr.avg_cost - b).max(axis=1),
        seconds=np.full(T, per),
        occupancy=tr.occupancies,
        wall_seconds=time.perf_counter() - t_start,
        config={
            "axis": "iteration",
            "mdp": mdp.name,
            "S": mdp.S,
            "A": mdp.A,
            "gamma": mdp.gamma,
            "threshold": b,
            "threshold_rule": threshold if isinstance(threshold, str) else "given",
            "cost": c.tolist(),
            "optimal_multiplier": float(tr.optimum.multipliers[0]),
            "method": tr.method,
        },
    )
