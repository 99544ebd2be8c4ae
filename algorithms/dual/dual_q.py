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
optimum J(alpha) of :mod:`~theorylab.algorithms.dual.dual_v`: :func:`maximize_dual_q` does it
(L-BFGS over the policy, the exact gradient ``dJ/dpi(a|s) = d^pi_S(s) Q(s, a)`` by Danskin's
theorem, each pi's inner minimum solved exactly), and the tests check that it reaches J(alpha) to
1e-8 and the dual-V policy to 1e-6.

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


# ------------------------------------------------------------------ the outer max over policies
X_MIN = 1e-12  # lower bound of the outer max's unnormalised policy weights


@dataclass
class DualQMaxSolution:
    """``max_pi min_Q L(Q; pi)``: the maximising policy ``(S, A)``, its dual-Q solution ``inner``
    (whose ``dual_value`` is the optimum), the outer iterations and the final max-norm of the
    policy gradient in logits."""

    policy: np.ndarray
    inner: DualQSolution
    iterations: int
    grad_norm: float
    seconds: float

    @property
    def value(self) -> float:
        return self.inner.dual_value


def dual_q_policy_gradient(inner: DualQSolution, pi: np.ndarray) -> np.ndarray:
    """``dJ/dpi(a|s) = d_S(s) Q(s, a)`` ``(S, A)`` at the dual-Q minimiser (Danskin's theorem).

    J(pi) = min_Q L(Q; pi) and L depends on pi through ``(1 - gamma) mu(s) pi(a|s) Q(s, a)`` and
    the next-state term ``gamma sum P(s|s', a') pi(a|s) Q(s, a)`` weighted by the recovered
    ``d = d^O (f*)'(y)``: the derivative at Q* is ``Q(s, a) [(1 - gamma) mu(s) + gamma (P^T d)(s)]
    = Q(s, a) d_S(s)`` by the flow. It is the policy gradient of pi for the shaped reward
    ``r - alpha f'(d^pi / d^O)`` (whose Q-function the minimiser is, module docstring).
    """
    d_state = inner.occupancy.sum(axis=1)  # (S,) = d^pi_S at the minimiser
    return d_state[:, None] * inner.Q


def maximize_dual_q(
    mdp,
    d_ref: np.ndarray,
    alpha: float,
    f: str | FDivergence = "kl",
    *,
    gamma: float | None = None,
    mu: np.ndarray | None = None,
    tol: float = 1e-10,
    max_iter: int = 2000,
) -> DualQMaxSolution:
    """The dual-Q form maximised over policies: ``max_pi min_Q L(Q; pi)`` (Sikchi et al. 2024,
    section 4: the dual-Q problem is a max over pi of a min over Q).

    The inner min is :func:`solve_dual_q`; the outer max runs scipy's L-BFGS(-B) with the exact
    gradient of :func:`dual_q_policy_gradient`, over the actions with ``d^O(s, a) > 0`` (the
    others keep pi = 0, as ``d^pi << d^O`` requires), in one of two coordinates:

    * KL: softmax logits ``pi(.|s) = softmax(theta(s, .))``, unconstrained. KL's optimum is
      interior (``d* = d^O exp(delta / alpha - 1) > 0``), and pi must stay > 0 for the inner
      minimum to exist (``f'(0) = -inf``).
    * chi^2, half chi^2: ``pi(a|s) = x(s, a) / sum_a' x(s, a')`` with bounds ``x >= X_MIN``.
      Their optimum can put pi = 0 on a supported action (``w = max(0, .)`` clips), where a
      softmax's gradient (a factor pi(a|s)) vanishes: with logits one half-chi^2 instance stalled
      at |grad| 3e-10 with the value 1.4e-3 short of J(alpha). Normalised weights have no such
      factor; the bound costs at most ~X_MIN in value. J(pi) is the regularised value of
    d^pi, concave in d^pi, so every stationary point is the maximum and the optimum equals the
    dual-V / primal optimum J(alpha) (the tests check this against
    :func:`~theorylab.algorithms.dual.dual_v.solve_dual_v`). Deviation: the paper's practical
    algorithm alternates gradient steps on Q and pi; here each pi gets its exact inner minimum.
    Needs every state reachable from mu (else, for KL, the inner minimum is not attained at
    states pi never visits) and d^O covering every action it supports.
    tol: target max-norm of the logit gradient; mu ``(S,)``; d_ref ``(S, A)``.
    """
    import scipy.optimize as so

    t0 = time.perf_counter()
    f = divergence(f)
    S, A = mdp.S, mdp.A
    d_ref = check_distribution(d_ref, (S, A), "d^O")
    support = d_ref > 0  # (S, A)
    if not support.any(axis=1).all():
        s = int(np.flatnonzero(~support.any(axis=1))[0])
        raise UncoveredFlowError(
            f"d^O has no mass at state s={s}: the outer max over policies needs an action with "
            "d^O(s, a) > 0 in every state"
        )
    last: dict = {}
    logits = f.name == "kl"  # module docstring of maximize_dual_q: KL's optimum is interior

    def policy_of(x: np.ndarray) -> np.ndarray:
        if logits:
            z = np.where(support, x.reshape(S, A), -np.inf)
            w = np.exp(z - z.max(axis=1, keepdims=True))
        else:
            w = np.where(support, x.reshape(S, A), 0.0)
        return w / w.sum(axis=1, keepdims=True)

    def negative_value(x: np.ndarray):
        pi = policy_of(x)
        inner = solve_dual_q(mdp, pi, d_ref, alpha, f, gamma=gamma, mu=mu)
        g = dual_q_policy_gradient(inner, pi)  # dJ/dpi (S, A)
        centred = g - np.sum(pi * g, axis=1, keepdims=True)
        if logits:  # d pi / d theta = pi (1[a = b] - pi_b)
            g_x = pi * centred
        else:  # d pi / d x = (1[a = b] - pi_b) / sum_a x
            row = np.where(support, x.reshape(S, A), 0.0).sum(axis=1, keepdims=True)
            g_x = np.where(support, centred / row, 0.0)
            # projected gradient: a weight at its lower bound that ascent would lower is stationary
            g_x = np.where((x.reshape(S, A) <= X_MIN) & (g_x < 0), 0.0, g_x)
        last.update(inner=inner, pi=pi, grad=g_x)
        return -inner.dual_value, -g_x.ravel()

    if logits:
        x0, bounds = np.zeros(S * A), None
    else:
        x0 = np.where(support, 1.0, 0.0).ravel()
        bounds = [(X_MIN, None) if on else (0.0, 0.0) for on in support.ravel()]
    res = so.minimize(
        negative_value,
        x0,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": max_iter, "gtol": tol, "ftol": 1e-15, "maxcor": 30},
    )
    negative_value(res.x)  # the returned point's inner solution
    return DualQMaxSolution(
        policy=last["pi"],
        inner=last["inner"],
        iterations=int(res.nit),
        grad_norm=float(np.max(np.abs(last["grad"]))),
        seconds=time.perf_counter() - t0,
    )
