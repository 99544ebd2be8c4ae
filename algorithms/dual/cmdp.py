r"""Constrained MDPs: the occupancy LP with cost constraints, and Lagrangian (optimistic) GDA.

Seed reference: ``seed-catalogue-000.md#1`` (ReLOAD, tier A); registered as ``reload``
(kind ``constrained``, :mod:`theorylab.algorithms.dual.registrations`). What was read: ReLOAD's
abstract and introduction [V] (GDA converges on average, not in the last iterate; the policy
alternates between satisfying the constraint and maximising reward; optimistic ascent-descent
fixes the last iterate; no rate is stated there). The update itself is reconstructed [A] from Wei
et al.'s OGDA below, run exactly on the occupancy polytope (ReLOAD's own parametrisation, policy
gradients with optimistic mirror steps, was not available to read); constants: step eta = 1 and
lambda in [0, 10] in the claim, chosen [A], not the paper's.

References:
* Altman, *Constrained Markov Decision Processes* (1999), Theorem 3.3 / chapter 3: the CMDP is the
  occupancy LP (:mod:`theorylab.algorithms.planning.lp`) with one extra linear row per cost, and
  its Lagrangian has no duality gap (the LP's multipliers are the optimal Lagrange multipliers).
* Moskovitz, O'Donoghue, Veeriah, Flennerhag, Singh, Zahavy, "ReLOAD: Reinforcement Learning with
  Optimistic Ascent-Descent for Last-Iterate Convergence in Constrained MDPs", ICML 2023: the
  Lagrangian's gradient descent-ascent oscillates in its last iterate (only the average converges),
  and optimistic gradient fixes the last iterate. Here both are run *exactly* in occupancy space,
  where the Lagrangian is bilinear.
* Wei, Lee, Zhang, Luo, "Linear Last-iterate Convergence in Constrained Saddle-point
  Optimization", ICLR 2021, Theorem 5 / section 4: optimistic gradient descent-ascent (OGDA) with a
  constant step converges in its last iterate (linearly) on bilinear games over polytopes.

Problem (values in the units of V, ``b_i`` a bound on the expected discounted cost ``V_{c_i}(mu)``):

    max_{d in K}  <d, r> / (1 - gamma)   s.t.   <d, c_i> / (1 - gamma) <= b_i,   i = 1..m

with K the normalised occupancy polytope. Lagrangian (normalised units, lambda >= 0):

    L(d, lambda) = <d, r - sum_i lambda_i c_i> + sum_i lambda_i (1 - gamma) b_i,
    grad_d L = r - sum_i lambda_i c_i,     grad_lambda L = (1 - gamma) b - <d, c>.

GDA (simultaneous, step eta):  d <- Pi_K(d + eta grad_d),  lambda <- Pi_Lambda(lambda - eta grad_l).
OGDA (Wei et al.'s form, two projections per step; F the ascent-descent field, x = (d, lambda)):

    xhat_{t+1} = Pi(xhat_t + eta F(x_t)),      x_{t+1} = Pi(xhat_{t+1} + eta F(x_t))

(their x_t = Pi(xhat_t - eta grad(x_{t-1})) shifted by one index: the gradient at x_t serves the
xhat update and, optimistically, as the prediction of the next gradient).
Lambda = [0, lambda_max]^m: a box (a polytope, as Wei et al. need); lambda_max must exceed the
optimal multipliers (checked against the LP's). Projection onto K is exact:
:func:`project_onto_occupancies` solves the dual of
``min ||d - z||^2 / 2 s.t. M^T d = (1 - gamma) mu, d >= 0`` by the semismooth Newton method of
:mod:`~theorylab.algorithms.dual.smooth_dual_solver` (the problem has the dual-V form with
``c(y) = max(0, y)^2 / 2``) to a gradient (= flow residual) of 1e-13.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np

from theorylab.algorithms.dual.inputs import DualInputError
from theorylab.algorithms.dual.smooth_dual_solver import Conjugate, minimize_smooth_dual
from theorylab.algorithms.planning.lp import (
    _discount,
    _solve,
    _stdout_silenced,
    _weights,
    discounted_lp_matrix,
    policy_from_occupancy,
)


class InfeasibleCMDPError(DualInputError):
    """No policy meets the cost constraints (the message gives the least achievable cost)."""


@dataclass
class CMDPSolution:
    """occupancy ``(S, A)``; policy ``(S, A)``; value ``V_r(mu)`` of the CMDP optimum;
    cost_values ``(m,)`` ``V_{c_i}(mu)``; multipliers ``(m,)`` the optimal Lagrange multipliers
    (LP duals of the cost rows); V ``(S,)`` the flow multipliers, the value of the optimal
    Lagrangian reward ``r - sum lambda_i c_i`` (in V units)."""

    occupancy: np.ndarray
    policy: np.ndarray
    value: float
    cost_values: np.ndarray
    multipliers: np.ndarray
    V: np.ndarray
    seconds: float
    info: dict = field(default_factory=dict)


def check_costs(mdp, costs, thresholds) -> tuple[np.ndarray, np.ndarray]:
    """costs ``(m, S, A)`` (or ``(S, A)``: one cost), thresholds ``(m,)``; finite."""
    c = np.array(costs, dtype=np.float64)
    if c.ndim == 2:
        c = c[None]
    if c.ndim != 3 or c.shape[1:] != (mdp.S, mdp.A):
        raise DualInputError(f"costs must have shape (m, {mdp.S}, {mdp.A}), got {c.shape}")
    if not np.all(np.isfinite(c)):
        idx = tuple(int(i) for i in np.argwhere(~np.isfinite(c))[0])
        raise DualInputError(f"cost at (i, s, a) = {idx} is not finite: {c[idx]}")
    b = np.atleast_1d(np.array(thresholds, dtype=np.float64))
    if b.shape != (c.shape[0],) or not np.all(np.isfinite(b)):
        raise DualInputError(f"thresholds must be {c.shape[0]} finite numbers, got {thresholds!r}")
    return c, b


def least_cost(
    mdp, M, cost_flat: np.ndarray, gamma: float, mu: np.ndarray, off: np.ndarray | None = None
) -> float:
    """``min_pi V_c(mu)`` for one flat cost ``(S*A,)`` (the occupancy LP with reward -c); with
    ``off (k,)`` flat pair indices, over the policies that never play them."""
    d = cp.Variable(cost_flat.size, nonneg=True)
    rows = [M.T @ d == (1.0 - gamma) * mu]
    if off is not None and off.size:
        rows.append(d[off] == 0)
    problem = cp.Problem(cp.Minimize(cost_flat @ d / (1.0 - gamma)), rows)
    _solve(problem, "HIGHS", None, f"least-cost LP of {mdp!r}")
    return float(problem.value)


def _support_feasible(mdp, M, g, mu, off: np.ndarray) -> None:
    """Raise InfeasibleCMDPError when no policy avoids the pairs ``off`` (some state that mu0 or
    the supported pairs reach has no supported action)."""
    d = cp.Variable(M.shape[0], nonneg=True)
    problem = cp.Problem(cp.Minimize(0), [M.T @ d == (1.0 - g) * mu, d[off] == 0])
    with _stdout_silenced():
        problem.solve(solver="HIGHS")
    if problem.status not in ("optimal", "optimal_inaccurate"):
        no_action = np.flatnonzero(
            np.isin(np.arange(M.shape[0]), off).reshape(mdp.S, mdp.A).all(axis=1)
        )
        raise InfeasibleCMDPError(
            "no policy stays on the support: the start distribution or the supported pairs "
            f"reach a state with no supported action (states without one: {no_action.tolist()})"
        )


def _solve_or_explain(problem, solver, mdp, M, C, b, g, mu, off=None) -> None:
    """Solve the CMDP LP; when it is infeasible say which cost cannot be met and by how much."""
    if off is not None and off.size:
        _support_feasible(mdp, M, g, mu, off)
    least = np.array([least_cost(mdp, M, C[i], g, mu, off) for i in range(C.shape[0])])
    over = np.flatnonzero(least > b + 1e-9)
    if over.size:
        i = int(over[0])
        raise InfeasibleCMDPError(
            f"no policy meets cost constraint i={i}: the least achievable V_c(mu) is "
            f"{least[i]:.6g} > threshold {b[i]:.6g}"
        )
    _solve(problem, solver, None, f"CMDP LP of {mdp!r}")


def solve_cmdp_lp(
    mdp,
    costs: np.ndarray,
    thresholds,
    *,
    gamma: float | None = None,
    mu: np.ndarray | None = None,
    solver: str = "HIGHS",
    support: np.ndarray | None = None,
) -> CMDPSolution:
    """The CMDP's occupancy LP (module docstring), exact optimum and multipliers (HiGHS).

    costs ``(m, S, A)``; thresholds ``(m,)`` bounds on ``V_{c_i}(mu)``; support ``(S, A)`` bool
    (None: every pair): the pairs the occupancy may use, ``d(s, a) = 0`` elsewhere (the
    support-constrained LP of offline CMDPs, :mod:`theorylab.algorithms.offline.ogsrl`). Raises
    :class:`InfeasibleCMDPError` (naming the least achievable cost, or the states without a
    supported action) when no policy is feasible.
    """
    t0 = time.perf_counter()
    g = _discount(mdp, gamma)
    mu = _weights(mdp, mu)
    c, b = check_costs(mdp, costs, thresholds)
    S, A = mdp.S, mdp.A
    M = discounted_lp_matrix(mdp, g)
    r = np.asarray(mdp.reward(0), dtype=np.float64).ravel()
    C = c.reshape(c.shape[0], S * A)
    d = cp.Variable(S * A, nonneg=True)
    flow = M.T @ d == (1.0 - g) * mu
    budget = C @ d <= (1.0 - g) * b
    rows = [flow, budget]
    off = None
    if support is not None:
        keep = np.asarray(support, dtype=bool)
        if keep.shape != (S, A):
            raise DualInputError(f"support must have shape ({S}, {A}), got {keep.shape}")
        off = np.flatnonzero(~keep.ravel())
        if off.size:
            rows.append(d[off] == 0)
    problem = cp.Problem(cp.Maximize(r @ d / (1.0 - g)), rows)
    _solve_or_explain(problem, solver, mdp, M, C, b, g, mu, off)
    occ = np.clip(np.asarray(d.value, dtype=np.float64), 0.0, None).reshape(S, A)
    # L = V_r - lam' (C d - (1 - gamma) b) = V_r - lam' (1 - gamma) (V_c - b): lam = (1-g) lam'
    lam = (1.0 - g) * np.atleast_1d(np.asarray(budget.dual_value, dtype=np.float64))
    return CMDPSolution(
        occupancy=occ,
        policy=policy_from_occupancy(occ),
        value=float(problem.value),
        cost_values=np.einsum("isa,sa->i", c, occ) / (1.0 - g),
        multipliers=lam,
        V=(1.0 - g) * np.asarray(flow.dual_value, dtype=np.float64),
        seconds=time.perf_counter() - t0,
        info={"solver": solver, "status": problem.status},
    )


# ------------------------------------------------------------------------------ projection onto K
def _half_square_plus() -> Conjugate:
    return Conjugate(
        lambda y: 0.5 * np.maximum(y, 0.0) ** 2,
        lambda y: np.maximum(y, 0.0),
        lambda y: (y > 0).astype(np.float64),
    )


def project_onto_occupancies(
    M, z: np.ndarray, flow_rhs: np.ndarray, x0: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Euclidean projection of ``z (S*A,)`` onto ``{d >= 0 : M^T d = flow_rhs}``.

    M ``(S*A, S)`` the LP matrix ``E - gamma P``; flow_rhs ``(S,)`` = ``(1 - gamma) mu``. The dual
    of ``min ||d - z||^2 / 2`` is ``min_x flow_rhs^T x + sum_i max(0, z_i - (M x)_i)^2 / 2`` with
    ``d = max(0, z - M x)`` (module docstring). Returns ``(d (S*A,), x (S,))``; pass the previous
    x as ``x0`` to warm-start.
    """
    x0 = np.zeros(M.shape[1]) if x0 is None else x0
    res = minimize_smooth_dual(
        M, flow_rhs, z, np.ones(z.size), 1.0, _half_square_plus(), x0, continuation=False
    )
    return np.maximum(0.0, z - M @ res.x), res.x


# ------------------------------------------------------------------------------ (O)GDA
@dataclass
class GDATrace:
    """A run of Lagrangian GDA or OGDA in occupancy space, iterates t = 1..T.

    reward ``(T,)`` ``V_r`` of the last iterate d_t; cost ``(T, m)`` its ``V_c``; lam ``(T, m)``;
    avg_reward ``(T,)``, avg_cost ``(T, m)``: the same of the running average of d_1..d_t;
    reward_gap ``(T,)`` ``|V_r(d_t) - V*|``, violation ``(T,)`` ``max_i (V_ci(d_t) - b_i)^+``, and
    their averaged-iterate versions; flow_residual ``(T,)`` ``max |M^T d_t - (1 - gamma) mu|``
    (the projection's accuracy); occupancies ``(T, S, A)`` the iterates d_t; optimum: the LP
    solution it is measured against.
    """

    method: str
    eta: float
    reward: np.ndarray
    cost: np.ndarray
    lam: np.ndarray
    avg_reward: np.ndarray
    avg_cost: np.ndarray
    reward_gap: np.ndarray
    violation: np.ndarray
    avg_reward_gap: np.ndarray
    avg_violation: np.ndarray
    optimum: CMDPSolution
    final_occupancy: np.ndarray
    seconds: float
    flow_residual: np.ndarray
    occupancies: np.ndarray

    def tail(self, fraction: float = 0.1) -> dict:
        """Max over the last ``fraction`` of the run of the last- and average-iterate errors."""
        k = max(1, int(len(self.reward) * fraction))
        err = np.maximum(self.reward_gap, self.violation)[-k:]
        avg = np.maximum(self.avg_reward_gap, self.avg_violation)[-k:]
        return {"last_iterate": float(err.max()), "average_iterate": float(avg.max())}


@dataclass(frozen=True)
class LagrangianProblem:
    """A CMDP set up for a primal-dual run in occupancy space (normalised units): discount g,
    weights mu ``(S,)``, costs c ``(m, S, A)`` and bounds b ``(m,)``, the LP optimum opt, the flow
    matrix M ``(S*A, S)`` with right-hand side rhs ``(S,)``, r ``(S*A,)``, C ``(m, S*A)`` and
    budget ``(1 - g) b``."""

    g: float
    mu: np.ndarray
    c: np.ndarray
    b: np.ndarray
    opt: CMDPSolution
    M: object
    rhs: np.ndarray
    r: np.ndarray
    C: np.ndarray
    budget: np.ndarray


def lagrangian_problem(mdp, costs, thresholds, gamma, mu, lambda_max: float) -> LagrangianProblem:
    """Check the costs, solve the CMDP LP and build the flow (shared by the primal-dual runs);
    DualInputError when ``lambda_max`` does not exceed the LP's optimal multipliers."""
    g = _discount(mdp, gamma)
    mu = _weights(mdp, mu)
    c, b = check_costs(mdp, costs, thresholds)
    opt = solve_cmdp_lp(mdp, c, b, gamma=g, mu=mu)
    if np.any(opt.multipliers >= lambda_max):
        raise DualInputError(
            f"lambda_max = {lambda_max:g} must exceed the optimal multipliers "
            f"{np.round(opt.multipliers, 6).tolist()}"
        )
    m = c.shape[0]
    M = discounted_lp_matrix(mdp, g)
    r = np.asarray(mdp.reward(0), dtype=np.float64).ravel()
    C = c.reshape(m, mdp.S * mdp.A)
    return LagrangianProblem(g, mu, c, b, opt, M, (1.0 - g) * mu, r, C, (1.0 - g) * b)


def lagrangian_gda(
    mdp,
    costs: np.ndarray,
    thresholds,
    *,
    steps: int = 2000,
    eta: float = 0.1,
    optimistic: bool = False,
    lambda_max: float = 10.0,
    gamma: float | None = None,
    mu: np.ndarray | None = None,
) -> GDATrace:
    """Run GDA (``optimistic=False``) or OGDA on the CMDP Lagrangian (module docstring).

    Starts from the uniform policy's occupancy and lambda = 0. Raises DualInputError when
    ``lambda_max`` does not exceed the LP's optimal multipliers (the box must contain them).
    """
    from theorylab.algorithms.planning.lp import occupancy_measure

    t0 = time.perf_counter()
    if not steps >= 1 or not eta > 0:
        raise DualInputError(f"steps must be >= 1 and eta > 0, got steps={steps}, eta={eta}")
    P = lagrangian_problem(mdp, costs, thresholds, gamma, mu, lambda_max)
    g, mu, b, opt, M, rhs, r, C, budget = P.g, P.mu, P.b, P.opt, P.M, P.rhs, P.r, P.C, P.budget
    S, A, m = mdp.S, mdp.A, C.shape[0]

    def field(d, lam):  # ascent direction for d, descent direction for lambda
        return r - lam @ C, C @ d - budget

    d = occupancy_measure(mdp, np.full((S, A), 1.0 / A), gamma=g, mu=mu).ravel()
    lam = np.zeros(m)
    xk = None
    d_hat, lam_hat = d.copy(), lam.copy()
    occ, lams = np.empty((steps, S * A)), np.empty((steps, m))  # iterates d_t, lambda_t
    for t in range(steps):
        gd, gl = field(d, lam)
        if optimistic:
            d_hat, xk = project_onto_occupancies(M, d_hat + eta * gd, rhs, xk)
            lam_hat = np.clip(lam_hat + eta * gl, 0.0, lambda_max)
            d, xk = project_onto_occupancies(M, d_hat + eta * gd, rhs, xk)
            lam = np.clip(lam_hat + eta * gl, 0.0, lambda_max)
        else:
            d, xk = project_onto_occupancies(M, d + eta * gd, rhs, xk)
            lam = np.clip(lam + eta * gl, 0.0, lambda_max)
        occ[t], lams[t] = d, lam
    method = "ogda" if optimistic else "gda"
    return scored_trace(method, eta, occ, lams, r, C, b, g, M, rhs, opt, (S, A), t0)


def scored_trace(
    method: str, eta: float, occ, lams, r, C, b, g: float, M, rhs, opt, shape, t0: float
) -> GDATrace:
    """The :class:`GDATrace` of iterates occ ``(T, S*A)`` and lams ``(T, m)``, scored against the
    reward r ``(S*A,)``, the costs C ``(m, S*A)`` and bounds b ``(m,)`` (values in units of V),
    the flow ``M^T d = rhs`` and the LP optimum ``opt``; shape ``(S, A)``."""
    T = occ.shape[0]
    out_r, out_c = occ @ r / (1.0 - g), occ @ C.T / (1.0 - g)  # (T,), (T, m)
    run = np.cumsum(occ, axis=0) / np.arange(1, T + 1)[:, None]  # running averages (T, S*A)
    avg_r, avg_c = run @ r / (1.0 - g), run @ C.T / (1.0 - g)
    return GDATrace(
        method=method,
        eta=eta,
        reward=out_r,
        cost=out_c,
        lam=lams,
        avg_reward=avg_r,
        avg_cost=avg_c,
        reward_gap=np.abs(out_r - opt.value),
        violation=np.maximum(out_c - b, 0.0).max(axis=1),
        avg_reward_gap=np.abs(avg_r - opt.value),
        avg_violation=np.maximum(avg_c - b, 0.0).max(axis=1),
        optimum=opt,
        final_occupancy=occ[-1].reshape(shape),
        seconds=time.perf_counter() - t0,
        flow_residual=np.abs(occ @ M - rhs[None]).max(axis=1),
        occupancies=occ.reshape(T, *shape),
    )
