r"""The dual-V form of f-regularised RL, solved directly (closed-form gradient, Newton or L-BFGS).

Reference: Sikchi, Zheng, Zhang, Niekum, "Dual RL: Unification and New Methods for Reinforcement
and Imitation Learning", ICLR 2024 (arXiv 2302.08560), section 4, the dual-V problem and the primal
recovery of its Proposition 3; theory-preference-dual-llm.md 6.2 (objective and recovery there are
[M] for the typesetting, the identities (checked numerically) are what the tests assert):

    min_V  L(V) = (1 - gamma) E_{s ~ mu}[V(s)] + alpha E_{(s,a) ~ d^O}[f*_p(delta_V(s, a) / alpha)]
    delta_V(s, a) = r(s, a) + gamma sum_{s'} P(s'|s, a) V(s') - V(s)
    d*(s, a) = d^O(s, a) max(0, (f')^{-1}(delta_{V*}(s, a) / alpha))

In matrix form ``delta_V = r - M V`` with the LP matrix ``M = E - gamma P`` of
:mod:`theorylab.algorithms.planning.lp`, so L is problem (*) of
:mod:`theorylab.algorithms.dual.smooth_dual_solver` with ``x = V``, ``b = (1 - gamma) mu``,
``c = f*_p`` and the rows of M on the support of d^O. Its gradient ``(1 - gamma) mu - M^T d(V)`` is
minus the flow residual of the recovered d, so stopping at ``|grad|_inf <= 1e-13`` certifies the
flow constraint to that tolerance, and ``L(V) - [E_d r - alpha D_f(d || d^O)]`` (the duality gap,
computed exactly from V and d) certifies optimality.

Which f gives which method (section 5 of the paper; theory-preference-dual-llm.md 6.2): f = x log x
gives the relative-entropy LP (REPS without its epsilon, :mod:`~theorylab.algorithms.dual.reps`,
d* = d^O exp(delta / alpha - 1)); f = (x - 1)^2 / 2 is OptiDICE's nu-objective
(:mod:`~theorylab.algorithms.dual.optidice`).

TV has a piecewise-linear f*_p with a hard domain (delta_V <= alpha / 2) and a set-valued recovery
(the paper's Prop. 3 assumes (f')^{-1} strictly increasing, which fails for TV: a reviewer erratum);
``f="tv"`` is solved as the linear program of
:func:`~theorylab.algorithms.dual.regularized_primal.solve_regularized_primal` (HiGHS), whose flow
multipliers are the dual-V minimiser, and its gap is L(V) minus the primal objective as above.

Starting point: ``V = max(r) / (1 - gamma)`` everywhere (an upper bound of V*: every delta_V <= 0,
so exp(delta / alpha) cannot overflow), then the alpha-continuation of the smooth solver.
"""

from __future__ import annotations

import time

import numpy as np

from theorylab.algorithms.dual.f_divergences import FDivergence
from theorylab.algorithms.dual.regularized_objectives import (
    RegularizedSolution,
    dual_v_objective,
    primal_objective,
    recover_occupancy,
)
from theorylab.algorithms.dual.regularized_primal import prepare, solve_regularized_primal
from theorylab.algorithms.dual.smooth_dual_solver import (
    GRAD_TOL,
    Conjugate,
    Method,
    minimize_smooth_dual,
)
from theorylab.algorithms.planning.lp import discounted_lp_matrix, flow_residual


def nonneg_conjugate(f: FDivergence) -> Conjugate:
    """``f*_p`` with ``(f*_p)' = w`` and ``(f*_p)'' = w'`` for the smooth solver."""
    return Conjugate(f.conjugate_nonneg, f.ratio, f.ratio_derivative)


def solve_dual_v(
    mdp,
    d_ref: np.ndarray,
    alpha: float,
    f: str | FDivergence = "kl",
    *,
    gamma: float | None = None,
    mu: np.ndarray | None = None,
    method: Method = "newton",
    tol: float = GRAD_TOL,
    max_iter: int = 500,
    V0: np.ndarray | None = None,
) -> RegularizedSolution:
    """Minimise the dual-V objective directly and recover the optimal occupancy.

    mdp: a stationary TabularMDP (dense or sparse); d_ref ``(S, A)`` the data distribution d^O;
    alpha > 0; f: "kl", "chi2", "half-chi2" (smooth: Newton / L-BFGS) or "tv" (an LP, module
    docstring); gamma defaults to ``mdp.gamma``; mu ``(S,)`` to ``mdp.mu0``; method "newton" or
    "lbfgs"; tol: target ``|grad L|_inf`` (= the flow residual); V0 ``(S,)``: a warm start.
    Raises DualInputError (alpha <= 0, d^O invalid), UncoveredFlowError (no d << d^O is
    flow-feasible; names the (s, a) pairs), DualSolverError (no convergence).
    """
    t0 = time.perf_counter()
    alpha, f, d_ref, g, mu = prepare(mdp, d_ref, alpha, f, gamma, mu)
    if not f.smooth:
        sol = solve_regularized_primal(mdp, d_ref, alpha, f, gamma=g, mu=mu)
        sol.seconds = time.perf_counter() - t0
        return sol
    on = np.flatnonzero(d_ref.ravel() > 0)
    M = discounted_lp_matrix(mdp, g)[on].tocsr()  # (n, S) rows of E - gamma P on the support
    r = np.asarray(mdp.reward(0), dtype=np.float64).ravel()[on]
    w = d_ref.ravel()[on]
    if V0 is None:
        r_max = float(r.max()) if r.size else 0.0
        V0 = np.full(mdp.S, r_max / (1.0 - g) if g < 1 else r_max)
    res = minimize_smooth_dual(
        M,
        (1.0 - g) * mu,
        r,
        w,
        alpha,
        nonneg_conjugate(f),
        np.asarray(V0, dtype=np.float64),
        method=method,
        tol=tol,
        max_iter=max_iter,
    )
    V = res.x
    d = recover_occupancy(mdp, V, d_ref, alpha, f, g)
    primal = primal_objective(mdp, d, d_ref, alpha, f)
    dual = dual_v_objective(mdp, V, d_ref, alpha, f, g, mu)
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
        method=method,
        seconds=time.perf_counter() - t0,
        info={"iterations": res.iterations, "stages": res.stages, "grad_norm": res.grad_norm},
    )
