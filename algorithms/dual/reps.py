r"""Relative Entropy Policy Search (REPS), exactly: the closed-form dual and its unbounded case.

Reference: Peters, Muelling, Altuen, "Relative Entropy Policy Search", AAAI 2010, section 2 (the
optimisation problem, its dual function g(eta, V) and the solution mu* proportional to
q exp(delta_V / eta)); theory-preference-dual-llm.md 6.5 (formula [M] there; the identity is
re-derived here and checked numerically by ``tests/test_dual_reps.py``).

Primal (average reward, stationary state-action distributions, q the sampling distribution):

    max_mu  sum_{s,a} mu(s, a) r(s, a)
    s.t.    KL(mu || q) <= epsilon,
            sum_a mu(s', a) = sum_{s,a} mu(s, a) P(s'|s, a)   for all s',        sum mu = 1.

Lagrangian stationarity in mu gives ``mu*(s, a) = q(s, a) exp(delta_V(s, a) / eta) / Z`` with
``delta_V = r + P V - V`` (no discount), and substituting back the dual function

    g(eta, V) = eta epsilon + eta log sum_{s,a} q(s, a) exp(delta_V(s, a) / eta),    eta > 0.

Its gradient is closed-form: ``d g / d V = (P - E)^T mu`` (minus the stationarity residual of mu)
and ``d g / d eta = epsilon - KL(mu || q)``; so at an interior minimiser mu is stationary and
``KL(mu* || q) = epsilon`` exactly (the constraint binds). Hessian (u = delta / eta, B = P - E):
``H_VV = B^T (diag mu - mu mu^T) B / eta``, ``H_V,eta = -B^T (mu (u - E_mu u)) / eta``,
``H_eta,eta = Var_mu(u) / eta``. We minimise g by damped Newton (Armijo, eta kept positive).

The unbounded case (the pitfall of theory-preference-dual-llm.md 6.5). The primal is feasible iff
some stationary mu has ``KL(mu || q) <= epsilon``; when none does the dual is unbounded below and a
solver that stops at a bound on eta returns a meaningless number. :func:`reps` first computes the
I-projection ``min { KL(mu || q) : mu stationary }`` (cvxpy, exponential cone) and raises
:class:`InfeasibleREPSError` with that minimum when it exceeds epsilon (or is infinite: no
stationary distribution lives on the support of q). When the constraint does not bind (epsilon
exceeds the KL of a reward-optimal stationary mu), the dual's infimum is approached as eta -> 0;
:func:`reps` then returns the primal solution from cvxpy with ``binding=False``.

Deviation from the paper: none in the problem; the paper samples q and fits V with features, here
q, P and r are exact tabular arrays. epsilon is the KL bound, eta its multiplier.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from theorylab.algorithms.dual.inputs import DualInputError, check_alpha, check_distribution
from theorylab.algorithms.planning.lp import action_repeat_matrix

ETA_MIN = 1e-9  # below this the KL constraint is declared not binding
GRAD_TOL = 1e-11


class InfeasibleREPSError(DualInputError):
    """No stationary distribution lies within KL epsilon of q: the REPS dual is unbounded below."""


@dataclass
class REPSSolution:
    """mu ``(S, A)`` the optimal stationary distribution; V ``(S,)`` (up to a constant), eta;
    ``primal_value = sum mu r``; ``dual_value = g(eta, V)`` (None when not binding); ``kl`` =
    KL(mu || q); ``stationarity`` = max |sum_a mu(s', a) - (P^T mu)(s')|; ``binding``: whether
    KL(mu || q) = epsilon at the optimum; ``min_kl``: the I-projection's KL (feasibility margin)."""

    mu: np.ndarray
    V: np.ndarray
    eta: float
    primal_value: float
    dual_value: float | None
    kl: float
    stationarity: float
    binding: bool
    epsilon: float
    min_kl: float
    seconds: float
    info: dict = field(default_factory=dict)

    @property
    def policy(self) -> np.ndarray:
        from theorylab.algorithms.planning.lp import policy_from_occupancy

        return policy_from_occupancy(self.mu)


def kl_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """``KL(p || q)`` over matching arrays (infinite if p puts mass where q has none)."""
    p, q = np.asarray(p, float).ravel(), np.asarray(q, float).ravel()
    on = p > 0
    if np.any(q[on] <= 0):
        return float("inf")
    return float(np.sum(p[on] * np.log(p[on] / q[on])))


def stationary_state_action(mdp, pi: np.ndarray) -> np.ndarray:
    """A stationary state-action distribution ``(S, A)`` of the policy pi ``(S, A)``: the
    least-squares solution of ``d_S (P_pi - I) = 0, sum d_S = 1`` (the unique one when P_pi is
    irreducible), times pi. The sampling distribution q that REPS' runner uses."""
    P_pi = np.einsum("sa,sat->st", pi, mdp.dense_P())
    S = mdp.S
    lhs = np.vstack([(P_pi - np.eye(S)).T, np.ones(S)])
    d = np.linalg.lstsq(lhs, np.r_[np.zeros(S), 1.0], rcond=None)[0]
    return np.clip(d, 0.0, None)[:, None] * pi / max(float(np.clip(d, 0.0, None).sum()), 1e-300)


def _stationarity_matrix(mdp) -> sp.csr_array:
    """``B = P - E`` ``(S*A, S)``: ``delta_V = r + B V`` and ``B^T mu`` is the residual
    ``(P^T mu)(s') - sum_a mu(s', a)`` of the stationarity constraint."""
    return sp.csr_array(sp.csr_array(mdp.P_flat(0)) - action_repeat_matrix(mdp.S, mdp.A))


def i_projection(mdp, q: np.ndarray) -> tuple[float, np.ndarray | None]:
    """``min { KL(mu || q) : mu stationary, sum mu = 1 }`` and its minimiser ``(S, A)`` (cvxpy,
    CLARABEL); ``(inf, None)`` when no stationary distribution lives on the support of q."""
    on = np.flatnonzero(q.ravel() > 0)
    B = _stationarity_matrix(mdp)[on].T.tocsr()  # (S, n)
    x = cp.Variable(on.size, nonneg=True)
    problem = cp.Problem(
        cp.Minimize(cp.sum(cp.rel_entr(x, q.ravel()[on]))), [B @ x == 0, cp.sum(x) == 1]
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        problem.solve(solver="CLARABEL")
    if problem.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        return float("inf"), None
    mu = np.zeros(q.size)
    mu[on] = np.clip(x.value, 0, None)
    return float(problem.value), mu.reshape(q.shape)


def _primal_cvxpy(mdp, q: np.ndarray, epsilon: float) -> tuple[np.ndarray, float]:
    """The REPS primal by cvxpy (reference answer and the non-binding case)."""
    on = np.flatnonzero(q.ravel() > 0)
    B = _stationarity_matrix(mdp)[on].T.tocsr()
    r = np.asarray(mdp.reward(0), float).ravel()[on]
    x = cp.Variable(on.size, nonneg=True)
    cons = [B @ x == 0, cp.sum(x) == 1, cp.sum(cp.rel_entr(x, q.ravel()[on])) <= epsilon]
    problem = cp.Problem(cp.Maximize(r @ x), cons)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        problem.solve(solver="CLARABEL")
    mu = np.zeros(q.size)
    mu[on] = np.clip(x.value, 0, None)
    return mu.reshape(q.shape), float(problem.value)


def _tilt(eta, V, r, B, logq):
    """``u = delta_V / eta``, ``mu = q e^u / Z``, ``log Z`` on the support of q (log-sum-exp)."""
    u = (r + B @ V) / eta
    z = logq + u
    m = float(z.max())
    e = np.exp(z - m)
    Z = float(e.sum())
    return u, e / Z, m + np.log(Z)


def reps_dual(eta: float, V: np.ndarray, mdp, q: np.ndarray, epsilon: float) -> float:
    """``g(eta, V) = eta epsilon + eta log sum q exp(delta_V / eta)``; V ``(S,)``, q ``(S, A)``."""
    on = np.flatnonzero(q.ravel() > 0)
    B = _stationarity_matrix(mdp)[on]
    r = np.asarray(mdp.reward(0), float).ravel()[on]
    _, _, logZ = _tilt(eta, V, r, B, np.log(q.ravel()[on]))
    return float(eta * epsilon + eta * logZ)


def _newton_reps(mdp, q, epsilon, max_iter):
    on = np.flatnonzero(q.ravel() > 0)
    B = _stationarity_matrix(mdp)[on].tocsr()  # (n, S)
    Bd = B.toarray() if mdp.S <= 3000 else None
    r = np.asarray(mdp.reward(0), float).ravel()[on]
    logq = np.log(q.ravel()[on])
    S = mdp.S

    def value_grad(eta, V):
        u, mu, logZ = _tilt(eta, V, r, B, logq)
        val = eta * epsilon + eta * logZ
        kl = float(mu @ u - logZ)
        grad = np.concatenate([B.T @ mu, [epsilon - kl]])
        return val, grad, u, mu

    eta, V = 1.0, np.zeros(S)
    val, grad, u, mu = value_grad(eta, V)
    it = 0
    for it in range(max_iter):
        gnorm = float(np.max(np.abs(grad)))
        if gnorm <= GRAD_TOL or eta < ETA_MIN:
            break
        ub = u - mu @ u
        Bmu = B.T @ mu
        BD = (Bd if Bd is not None else B.toarray()) * np.sqrt(mu)[:, None]
        H = np.empty((S + 1, S + 1))
        H[:S, :S] = (BD.T @ BD - np.outer(Bmu, Bmu)) / eta
        H[:S, S] = H[S, :S] = -(B.T @ (mu * ub)) / eta
        H[S, S] = float(mu @ (ub * ub)) / eta
        H += 1e-12 * max(float(np.abs(np.diag(H)).max()), 1.0) * np.eye(S + 1)
        try:
            step = -np.linalg.solve(H, grad)
        except np.linalg.LinAlgError:
            step = -np.linalg.lstsq(H, grad, rcond=None)[0]
        slope = float(grad @ step)
        if not slope < 0:
            step, slope = -grad, -float(grad @ grad)
        t = 1.0
        while True:
            eta_new = eta + t * step[S]
            if eta_new > 0:
                V_new = V + t * step[:S]
                val_new, grad_new, u_new, mu_new = value_grad(eta_new, V_new)
                small = abs(t * slope) <= 1e-12 * (1 + abs(val))
                if (val_new <= val + 1e-4 * t * slope and val_new < val) or (
                    small and np.max(np.abs(grad_new)) < gnorm
                ):
                    break
            t *= 0.5
            if t < 1e-30:
                return eta, V, mu, val, it
        eta, V, val, grad, u, mu = eta_new, V_new, val_new, grad_new, u_new, mu_new
    return eta, V, mu, val, it


def reps(mdp, q: np.ndarray, epsilon: float, *, max_iter: int = 500) -> REPSSolution:
    """Solve REPS exactly (module docstring).

    mdp: a TabularMDP (its P and r; any horizon/gamma is ignored: REPS is average-reward);
    q ``(S, A)`` the sampling distribution; epsilon > 0 the KL bound.
    Raises :class:`InfeasibleREPSError` when no stationary mu has KL(mu || q) <= epsilon.
    """
    t0 = time.perf_counter()
    epsilon = check_alpha(epsilon, "epsilon")
    q = check_distribution(q, (mdp.S, mdp.A), "q")
    min_kl, _ = i_projection(mdp, q)
    if not min_kl <= epsilon:
        what = (
            "no stationary distribution lives on the support of q"
            if not np.isfinite(min_kl)
            else f"the closest stationary distribution has KL(mu || q) = {min_kl:.6g}"
        )
        raise InfeasibleREPSError(
            f"REPS is infeasible for epsilon = {epsilon:g}: {what} > epsilon, so the dual "
            "g(eta, V) is unbounded below; q must be (close to) a stationary state-action "
            "distribution, e.g. the stationary distribution of a behaviour policy"
        )
    eta, V, mu_on, dual, it = _newton_reps(mdp, q, epsilon, max_iter)
    on = np.flatnonzero(q.ravel() > 0)
    if eta < ETA_MIN:  # the KL constraint does not bind: the optimum is at eta -> 0
        mu, value = _primal_cvxpy(mdp, q, epsilon)
        binding, dual_value = False, None
    else:
        mu = np.zeros(q.size)
        mu[on] = mu_on
        mu = mu.reshape(q.shape)
        value = float(np.sum(mu * mdp.reward(0)))
        binding, dual_value = True, float(dual)
    B = _stationarity_matrix(mdp)
    return REPSSolution(
        mu=mu,
        V=V - V[0],
        eta=float(eta),
        primal_value=value,
        dual_value=dual_value,
        kl=kl_divergence(mu, q),
        stationarity=float(np.max(np.abs(B.T @ mu.ravel()))),
        binding=binding,
        epsilon=epsilon,
        min_kl=min_kl,
        seconds=time.perf_counter() - t0,
        info={"iterations": it},
    )
