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

Finite horizon (stages h = 0..H-1, ``V_H = 0``; :mod:`~theorylab.algorithms.dual.occupancy_flow`):
the same problem with the stage-wise flow and one d^O_h per stage,

    min_V  mu^T V_0 + alpha sum_h E_{d^O_h}[f*_p(delta_V(h, s, a) / alpha)],
    delta_V(h, s, a) = r_h(s, a) + sum_{s'} P_h(s'|s, a) V_{h+1}(s') - V_h(s),

with recovery ``d_h = d^O_h w(delta_V(h, .) / alpha)``: problem (*) with the block-bidiagonal LP
matrix. The paper states the discounted case; this is its stage-wise analogue (the Lagrangian of
the finite-horizon occupancy LP of planning/lp.py regularised stage by stage), with the same
certificate (gap and flow residual) and the finite-horizon LP / backward induction as alpha -> 0.

Starting point: ``V = max(r) / (1 - gamma)`` everywhere, ``V_h = (H - h) max(r)`` finite horizon
(an upper bound of V*: every delta_V <= 0, so exp(delta / alpha) cannot overflow), then the
alpha-continuation of the smooth solver.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from theorylab.algorithms.dual.f_divergences import FDivergence
from theorylab.algorithms.dual.regularized_objectives import (
    RegularizedSolution,
    flow_recover_occupancy,
)
from theorylab.algorithms.dual.regularized_primal import prepare, solve_regularized_primal
from theorylab.algorithms.dual.smooth_dual_solver import (
    GRAD_TOL,
    Conjugate,
    Method,
    minimize_smooth_dual,
)


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

    mdp: a TabularMDP (dense or sparse), discounted unless it has a horizon and no gamma is
    passed, then finite horizon (stage-wise flow, stage-dependent P and r allowed); d_ref the data
    distribution d^O, ``(S, A)`` discounted or ``(H, S, A)`` finite horizon (one distribution per
    stage); alpha > 0; f: "kl", "chi2", "half-chi2" (smooth: Newton / L-BFGS) or "tv" (an LP,
    module docstring); gamma defaults to ``mdp.gamma``; mu ``(S,)`` to ``mdp.mu0``; method
    "newton" or "lbfgs"; tol: target ``|grad L|_inf`` (= the flow residual); V0 ``(S,)`` or
    ``(H+1, S)``: a warm start. Returns V ``(S,)`` / ``(H+1, S)`` with ``V_H = 0``.
    Raises DualInputError (alpha <= 0, d^O invalid), UncoveredFlowError (no d << d^O is
    flow-feasible; names the (s, a) pairs), DualSolverError (no convergence).
    """
    t0 = time.perf_counter()
    alpha, f, d_ref, flow = prepare(mdp, d_ref, alpha, f, gamma, mu)
    if not f.smooth:
        sol = solve_regularized_primal(mdp, d_ref, alpha, f, gamma=flow.gamma, mu=flow.mu)
        return dataclasses.replace(sol, seconds=time.perf_counter() - t0)
    w = d_ref.ravel()
    on = np.flatnonzero(w > 0)
    x0 = flow.start() if V0 is None else flow.multipliers(V0)
    res = minimize_smooth_dual(
        flow.M[on].tocsr(),  # (n, m) the flow rows on the support of d^O
        flow.b,
        flow.r[on],
        w[on],
        alpha,
        nonneg_conjugate(f),
        np.array(x0, dtype=np.float64),
        method=method,
        tol=tol,
        max_iter=max_iter,
    )
    d = flow_recover_occupancy(flow, res.x, d_ref, alpha, f)
    info = {"iterations": res.iterations, "stages": res.stages, "grad_norm": res.grad_norm}
    return RegularizedSolution.certify(
        flow, d, res.x, d_ref, alpha, f, method=method, started=t0, info=info
    )
