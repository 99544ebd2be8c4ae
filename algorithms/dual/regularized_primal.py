r"""The f-regularised occupancy problem solved on the primal side by cvxpy (the reference answer).

Reference: Sikchi, Zheng, Zhang, Niekum, "Dual RL", ICLR 2024 (arXiv 2302.08560), section 4, the
regularised primal; theory-preference-dual-llm.md 6.2. The problem is stated in
:mod:`theorylab.algorithms.dual.regularized_objectives`:

    max_{d >= 0, d << d^O}  E_d[r] - alpha D_f(d || d^O)   s.t. the discounted flow constraint,

over the occupancy polytope of :mod:`theorylab.algorithms.planning.lp` (the same matrix
``M = E - gamma P``, :func:`~theorylab.algorithms.planning.lp.discounted_lp_matrix`, restricted to
the columns of the pairs with ``d^O > 0``), or its finite-horizon stage-wise version
(:mod:`~theorylab.algorithms.dual.occupancy_flow`: the block-bidiagonal matrix of
:func:`~theorylab.algorithms.planning.lp.finite_horizon_lp_matrix`, one d^O_h per stage).
cvxpy cones: exponential (KL, relative entropy),
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
from theorylab.algorithms.dual.inputs import (
    check_alpha,
    check_distribution,
    check_flow_support,
    check_stage_flow_support,
)
from theorylab.algorithms.dual.occupancy_flow import Flow, occupancy_flow
from theorylab.algorithms.dual.regularized_objectives import RegularizedSolution
from theorylab.algorithms.planning.lp import HIGHS_TOLERANCE, _solve

#: slack on TV's conjugate domain for multipliers read off HiGHS (its feasibility tolerance, x10)
LP_DOMAIN_TOL = 10 * HIGHS_TOLERANCE


def prepare(mdp, d_ref, alpha, f, gamma, mu) -> tuple[float, FDivergence, np.ndarray, Flow]:
    """Validated (alpha, f, d^O, flow) shared by the primal and dual-V solvers: the flow is
    finite horizon when ``mdp`` has a horizon and gamma is None (d^O ``(H, S, A)``, one
    distribution per stage), discounted otherwise (d^O ``(S, A)``)."""
    alpha = check_alpha(alpha)
    f = divergence(f)
    flow = occupancy_flow(mdp, gamma, mu)
    d_ref = check_distribution(d_ref, flow.d_shape, "d^O", stages=flow.finite)
    if flow.finite:
        check_stage_flow_support(mdp, d_ref, flow.mu)
    else:
        check_flow_support(mdp, d_ref, flow.gamma, flow.mu)
    return alpha, f, d_ref, flow


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

    mdp: a TabularMDP; discounted (d_ref ``(S, A)``, gamma defaults to ``mdp.gamma``) unless it
    has a horizon and no gamma is passed, then finite horizon (d_ref ``(H, S, A)``, one
    distribution per stage; P and r may depend on the stage). f: a divergence name ("kl",
    "chi2", "half-chi2", "tv"); mu ``(S,)`` defaults to ``mdp.mu0``. solver: a cvxpy solver
    (CLARABEL, or HIGHS for TV). Returns a :class:`RegularizedSolution` whose V is the flow
    constraints' multipliers.
    """
    t0 = time.perf_counter()
    alpha, f, d_ref, flow = prepare(mdp, d_ref, alpha, f, gamma, mu)
    solver = solver or ("HIGHS" if f.name == "tv" else "CLARABEL")
    w = d_ref.ravel()
    on = np.flatnonzero(w > 0)  # the support of d^O, flat pair indices
    Mt = flow.M[on].T.tocsr()  # (m, n): M^T d = b is the flow
    x = cp.Variable(on.size, nonneg=True)
    flow_rows = Mt @ x == flow.b
    objective = flow.r[on] @ x - alpha * f.cvxpy_divergence(x, w[on])
    problem = cp.Problem(cp.Maximize(objective), [flow_rows])
    _solve(problem, solver, solver_options, f"{f.name}-regularised primal of {mdp!r}")
    d = np.zeros(w.size)
    d[on] = np.clip(np.asarray(x.value, dtype=np.float64), 0.0, None)
    # an LP's multipliers meet the conjugate's domain (TV: delta <= alpha / 2) to its tolerance
    return RegularizedSolution.certify(
        flow,
        d,
        np.asarray(flow_rows.dual_value, dtype=np.float64),
        d_ref,
        alpha,
        f,
        method="lp" if f.name == "tv" else "cvxpy-primal",
        started=t0,
        info={"solver": solver, "status": problem.status, "solver_value": float(problem.value)},
        domain_tol=LP_DOMAIN_TOL / alpha,
    )
