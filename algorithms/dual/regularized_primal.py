r"""The f-regularised occupancy problem solved on the primal side by cvxpy (the reference answer).

Reference: Sikchi, Zheng, Zhang, Niekum, "Dual RL", ICLR 2024 (arXiv 2302.08560), section 4, the
regularised primal; theory-preference-dual-llm.md 6.2. The problem is stated in
:mod:`theorylab.algorithms.dual.regularized_objectives`:

    max_{d >= 0, d << d^O}  E_d[r] - alpha D_f(d || d^O)   s.t. the discounted flow constraint,

over the occupancy polytope of :mod:`theorylab.algorithms.planning.lp` (the same matrix
``M = E - gamma P``, :func:`~theorylab.algorithms.planning.lp.discounted_lp_matrix`, restricted to
the columns of the pairs with ``d^O > 0``). cvxpy cones: exponential (KL, relative entropy),
second-order (chi^2), linear (TV). The flow constraints' multipliers are the dual-V solution V.

Solver and accuracy: CLARABEL (interior point) by default, HiGHS for TV (an LP, a basic solution).
HiGHS runs with the planning LP's tolerances (``lp.HIGHS_TOLERANCE``).
Interior-point answers are accurate to the solver's tolerance (about 1e-8 relative), which is why
the strong-duality tests certify the *dual-V* solver's gap exactly and compare with this one only to
the solver's tolerance. Deviation from the paper: none in the formulation; ``d << d^O`` is explicit
(the paper's expectations over d^O presuppose it).
"""

from __future__ import annotations

import time

import cvxpy as cp
import numpy as np

from theorylab.algorithms.dual.f_divergences import FDivergence, divergence
from theorylab.algorithms.dual.inputs import check_alpha, check_distribution, check_flow_support
from theorylab.algorithms.dual.regularized_objectives import (
    RegularizedSolution,
    dual_v_objective,
    primal_objective,
)
from theorylab.algorithms.planning.lp import (
    HIGHS_TOLERANCE,
    _discount,
    _solve,
    _weights,
    discounted_lp_matrix,
    flow_residual,
)

#: slack on TV's conjugate domain for multipliers read off HiGHS (its feasibility tolerance, x10)
LP_DOMAIN_TOL = 10 * HIGHS_TOLERANCE


def prepare(
    mdp, d_ref, alpha, f, gamma, mu
) -> tuple[float, FDivergence, np.ndarray, float, np.ndarray]:
    """Validated (alpha, f, d^O (S, A), gamma, mu (S,)) shared by the primal and dual-V solvers."""
    alpha = check_alpha(alpha)
    f = divergence(f)
    g = _discount(mdp, gamma)
    mu = _weights(mdp, mu)
    d_ref = check_distribution(d_ref, (mdp.S, mdp.A), "d^O")
    check_flow_support(mdp, d_ref, g, mu)
    return alpha, f, d_ref, g, mu


def solve_regularized_primal(
    mdp,
    d_ref: np.ndarray,
    alpha: float,
    f: str | FDivergence = "kl",
    *,
    gamma: float | None = None,
    mu: np.ndarray | None = None,
    solver: str | None = None,
    solver_options: dict | None = None,
) -> RegularizedSolution:
    """Solve ``max_d E_d[r] - alpha D_f(d || d^O)`` over the flow polytope with cvxpy.

    mdp: a stationary TabularMDP; d_ref ``(S, A)`` the reference (data) distribution d^O; f: a
    divergence name ("kl", "chi2", "half-chi2", "tv"); gamma defaults to ``mdp.gamma``; mu
    ``(S,)`` defaults to ``mdp.mu0``. solver: a cvxpy solver (CLARABEL, or HIGHS for TV).
    Returns a :class:`RegularizedSolution` whose V is the flow constraints' multipliers.
    """
    t0 = time.perf_counter()
    alpha, f, d_ref, g, mu = prepare(mdp, d_ref, alpha, f, gamma, mu)
    solver = solver or ("HIGHS" if f.name == "tv" else "CLARABEL")
    S, A = mdp.S, mdp.A
    on = np.flatnonzero(d_ref.ravel() > 0)  # the support of d^O, flat pair indices
    M = discounted_lp_matrix(mdp, g)  # (S*A, S): M^T d = (1 - gamma) mu is the flow
    Mt = M[on].T.tocsr()  # (S, n)
    r = np.asarray(mdp.reward(0), dtype=np.float64).ravel()[on]
    x = cp.Variable(on.size, nonneg=True)
    flow = Mt @ x == (1.0 - g) * mu
    objective = r @ x - alpha * f.cvxpy_divergence(x, d_ref.ravel()[on])
    problem = cp.Problem(cp.Maximize(objective), [flow])
    _solve(problem, solver, solver_options, f"{f.name}-regularised primal of {mdp!r}")
    d = np.zeros(S * A)
    d[on] = np.clip(np.asarray(x.value, dtype=np.float64), 0.0, None)
    d = d.reshape(S, A)
    V = np.asarray(flow.dual_value, dtype=np.float64)
    primal = primal_objective(mdp, d, d_ref, alpha, f)
    # an LP's multipliers meet the conjugate's domain (TV: delta <= alpha / 2) to its tolerance
    dual = dual_v_objective(mdp, V, d_ref, alpha, f, g, mu, LP_DOMAIN_TOL / alpha)
    return RegularizedSolution(
        occupancy=d,
        V=V,
        primal_value=primal,
        dual_value=dual,
        gap=dual - primal,
        flow_residual=float(np.max(np.abs(flow_residual(mdp, d, gamma=g, mu=mu)))),
        divergence=f.name,
        alpha=alpha,
        gamma=g,
        method="lp" if f.name == "tv" else "cvxpy-primal",
        seconds=time.perf_counter() - t0,
        info={"solver": solver, "status": problem.status, "solver_value": float(problem.value)},
    )
