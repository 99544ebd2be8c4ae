r"""The dual-Q form of f-regularised RL for a fixed policy, solved directly.

Reference: Sikchi, Zheng, Zhang, Niekum, "Dual RL", ICLR 2024 (arXiv 2302.08560), section 4, the
dual-Q problem (their eq. (9), with the reviewers' errata: it uses the plain conjugate f*, not
f*_p, and the next-state term of eq. (35) sums over (s', a') with pi(a'|s'));
theory-preference-dual-llm.md 6.2.

For a fixed stationary policy pi the *policy-constrained* flow

    d(s, a) = (1 - gamma) mu(s) pi(a|s) + gamma pi(a|s) sum_{s', a'} P(s|s', a') d(s', a')

has the single solution d^pi (the policy's occupancy), so the primal is
``E_{d^pi}[r] - alpha D_f(d^pi || d^O)`` and its Lagrangian dual (multiplier Q(s, a) per pair) is

    min_Q  (1 - gamma) E_{s ~ mu, a ~ pi}[Q(s, a)]
           + alpha E_{(s,a) ~ d^O}[ f*( (r(s, a) + gamma sum_{s',a'} P(s'|s, a) pi(a'|s') Q(s', a')
                                          - Q(s, a)) / alpha ) ].

With ``M_pi = I - gamma P Pi`` ``(S*A, S*A)`` (``(P Pi)[(s,a), (s',a')] = P(s'|s,a) pi(a'|s')``)
this is problem (*) of :mod:`~theorylab.algorithms.dual.smooth_dual_solver` with ``x = Q``,
``b = (1 - gamma) mu (x) pi``, ``c = f*``. Optimality: ``d^O (f*)'(delta_Q / alpha) = d^pi``, i.e.
``delta_Q = alpha f'(d^pi / d^O)`` on the support of d^O, so the dual-Q minimiser is the Q-function
of pi for the shaped reward ``r - alpha f'(d^pi / d^O)``, and the minimum equals the primal value
(strong duality; the tests check both). Maximising the minimum over pi gives the regularised
optimum J(alpha) of :mod:`~theorylab.algorithms.dual.dual_v` (tested at the dual-V policy).

Only smooth f (KL, chi^2, half-chi^2): TV's plain conjugate has the hard domain |y| <= 1/2.
Needs ``d^pi << d^O``, else the dual is unbounded below (:class:`UncoveredFlowError` names the
pairs). Pairs with ``d^O = 0`` and ``pi(a|s) = 0`` leave Q(s, a) undetermined (it appears nowhere);
the solver returns its starting value there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from theorylab.algorithms.dual.f_divergences import FDivergence, divergence
from theorylab.algorithms.dual.inputs import (
    DualInputError,
    UncoveredFlowError,
    check_alpha,
    check_distribution,
)
from theorylab.algorithms.dual.smooth_dual_solver import (
    GRAD_TOL,
    Conjugate,
    Method,
    minimize_smooth_dual,
)
from theorylab.algorithms.planning.lp import (
    _discount,
    _stationary_policy_matrix,
    _weights,
    occupancy_measure,
)


@dataclass
class DualQSolution:
    """The dual-Q minimiser for one policy.

    Q ``(S, A)``; occupancy ``(S, A)`` the recovered ``d = d^O (f*)'(delta_Q / alpha)`` (= d^pi at
    the optimum); dual_value the dual-Q objective at Q; primal_value
    ``E_{d^pi}[r] - alpha D_f(d^pi || d^O)`` computed from the exact occupancy d^pi; gap their
    difference; flow_residual ``max |d - d^pi|`` (the policy-constrained flow's residual).
    """

    Q: np.ndarray
    occupancy: np.ndarray
    dual_value: float
    primal_value: float
    gap: float
    flow_residual: float
    divergence: str
    alpha: float
    gamma: float
    seconds: float
    info: dict = field(default_factory=dict)


def policy_transition_matrix(mdp, pi: np.ndarray) -> sp.csr_array:
    """``P Pi`` ``(S*A, S*A)``: ``[(s,a), (s',a')] = P(s'|s, a) pi(a'|s')``; pi ``(S, A)``."""
    S, A = mdp.S, mdp.A
    Pi = sp.csr_array(
        (pi.ravel(), np.arange(S * A), np.arange(0, S * A + 1, A)), shape=(S, S * A)
    )  # (S, S*A): Pi[s', s'*A + a'] = pi(a'|s')
    return sp.csr_array(sp.csr_array(mdp.P_flat(0)) @ Pi)


def plain_conjugate(f: FDivergence) -> Conjugate:
    return Conjugate(f.conjugate, f.conjugate_derivative, f.conjugate_second_derivative)


def solve_dual_q(
    mdp,
    policy: np.ndarray,
    d_ref: np.ndarray,
    alpha: float,
    f: str | FDivergence = "kl",
    *,
    gamma: float | None = None,
    mu: np.ndarray | None = None,
    method: Method = "newton",
    tol: float = GRAD_TOL,
    max_iter: int = 500,
) -> DualQSolution:
    """Minimise the dual-Q objective of a fixed policy (module docstring).

    policy: ``(S,)`` int or ``(S, A)`` stochastic; d_ref ``(S, A)`` the data distribution d^O;
    f: "kl", "chi2" or "half-chi2"; gamma, mu default to the MDP's.
    """
    t0 = time.perf_counter()
    alpha = check_alpha(alpha)
    f = divergence(f)
    if not f.smooth:
        raise DualInputError(
            f"dual-Q needs a smooth f (kl, chi2, half-chi2); {f.name!r} has a conjugate with a "
            "hard domain: solve its dual-V form (solve_dual_v(..., f='tv')) instead"
        )
    g = _discount(mdp, gamma)
    mu = _weights(mdp, mu)
    S, A = mdp.S, mdp.A
    d_ref = check_distribution(d_ref, (S, A), "d^O")
    pi = _stationary_policy_matrix(mdp, policy)
    d_pi = occupancy_measure(mdp, pi, gamma=g, mu=mu)  # (S, A)
    uncovered = np.argwhere((d_pi > 1e-15) & (d_ref <= 0))
    if uncovered.size:
        pairs = ", ".join(f"(s={s}, a={a})" for s, a in uncovered[:4])
        raise UncoveredFlowError(
            f"the policy's occupancy d^pi is positive where d^O is 0, at {pairs}"
            f"{' and more' if len(uncovered) > 4 else ''}: the dual-Q objective is unbounded "
            "below (it needs d^pi << d^O)"
        )
    on = np.flatnonzero(d_ref.ravel() > 0)
    M = (sp.eye(S * A, format="csr") - g * policy_transition_matrix(mdp, pi)).tocsr()[on]
    r = np.asarray(mdp.reward(0), dtype=np.float64).ravel()
    b = (1.0 - g) * (mu[:, None] * pi).ravel()  # (S*A,)
    Q0 = np.full(S * A, float(r.max()) / (1.0 - g))
    res = minimize_smooth_dual(
        M,
        b,
        r[on],
        d_ref.ravel()[on],
        alpha,
        plain_conjugate(f),
        Q0,
        method=method,
        tol=tol,
        max_iter=max_iter,
    )
    Q = res.x
    y = (r[on] - M @ Q) / alpha
    d = np.zeros(S * A)
    d[on] = d_ref.ravel()[on] * f.conjugate_derivative(y)
    d = d.reshape(S, A)
    primal = float(np.sum(d_pi * mdp.reward(0)) - alpha * f.divergence(d_pi, d_ref))
    return DualQSolution(
        Q=Q.reshape(S, A),
        occupancy=d,
        dual_value=res.value,
        primal_value=primal,
        gap=res.value - primal,
        flow_residual=float(np.max(np.abs(d - d_pi))),
        divergence=f.name,
        alpha=alpha,
        gamma=g,
        seconds=time.perf_counter() - t0,
        info={"iterations": res.iterations, "grad_norm": res.grad_norm},
    )
