r"""Robust Bellman operators for (s, a)-rectangular uncertainty sets, through their duals.

The uncertainty set of a row p = P(.|s, a) (S,) with radius rho >= 0 is one of

    tv:    {q in simplex : (1/2) ||q - p||_1 <= rho}      (q may put mass outside supp p)
    kl:    {q in simplex : KL(q || p) = sum q log(q/p) <= rho}             (q << p)
    chi2:  {q in simplex : sum_s (q(s) - p(s))^2 / p(s) <= rho}            (q << p)

and the robust expectation is sigma(p, V) = min_{q in U(p)} q . V. Each is computed through a
closed form or a one-dimensional dual, never as a generic convex programme (tests/test_robust.py
checks every one against an independent inner minimum: an LP for tv, cvxpy for kl and chi2, to
1e-8):

* tv (water-filling, the sorted-value form of the dual [M]): move mass m = min(rho, 1 - p(s_min))
  to a lowest-value state s_min, taken from the highest-value states first. The dual
  ``max_{alpha} E_p min(V, alpha) - rho (alpha - min V)`` (Iyengar 2005 [M]; Panaganti & Kalathil
  2022, Lemma 4 [M]) has the same value; :func:`tv_dual_value` evaluates it at its breakpoints.
* kl (Hu & Hong 2013; Nilim & El Ghaoui 2005 [M]):
  ``sigma = sup_{lambda >= 0} -lambda log E_p exp(-V / lambda) - lambda rho``, concave in
  lambda, maximised where its derivative KL(q_lambda || p) - rho (decreasing) vanishes, by
  Brent's root finder on (0, (E_p V - min V) / rho]; the limit lambda -> 0 (the
  minimum of V on supp p) is exact when p puts mass >= e^{-rho} on its minimisers. Worst
  q proportional to p e^{-V/lambda*}.
* chi2 (Duchi & Namkoong 2019, the Cressie-Read dual for f(t) = (t - 1)^2 [M]):
  ``sigma = sup_alpha alpha - sqrt(1 + rho) sqrt(E_p (alpha - V)_+^2)``, concave and, between
  consecutive values of V, of closed-form maximiser: the best of those and the breakpoints is
  its exact maximum; worst q proportional to p (alpha* - V)_+.

rho = 0 returns p . V exactly (no optimisation); rho large reaches the worst case (tv: min V over
all states once rho >= 1 - p(s_min); kl and chi2: min V over supp p).

On top: robust value iteration (discounted: ``V <- max_a r + gamma sigma(P(.|s,a), V)``, a
gamma-contraction; finite horizon: the backward recursion), robust policy evaluation (the same
with a policy's average over actions), the d-rectangular (factored) robust expectation of a
linear kernel, and the worst kernel each returns, the argmin rows, so that
a policy's value under it is an exact linear solve. s-rectangular sets are not implemented.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

DIVERGENCES = ("tv", "kl", "chi2")


def check_uncertainty(divergence, rho) -> tuple[str, float]:
    """The divergence name and radius, checked (one-line errors naming the value)."""
    if divergence not in DIVERGENCES:
        raise ValueError(f"divergence must be one of {', '.join(DIVERGENCES)}, got {divergence!r}")
    if isinstance(rho, bool) or not isinstance(rho, (int, float, np.floating, np.integer)):
        raise ValueError(f"rho (the radius) must be a finite number >= 0, got {rho!r}")
    if not (np.isfinite(rho) and rho >= 0):
        raise ValueError(f"rho (the radius) must be a finite number >= 0, got {rho!r}")
    return str(divergence), float(rho)


def _lse(x: np.ndarray) -> float:
    """log sum exp x (1-D; scipy's logsumexp costs a millisecond a call here)."""
    m = float(x.max())
    return m + float(np.log(np.exp(x - m).sum()))


def _rows(p) -> np.ndarray:
    p = np.atleast_2d(np.asarray(p, dtype=np.float64))  # (N, S)
    if np.any(p < 0) or np.any(np.abs(p.sum(axis=1) - 1.0) > 1e-9):
        raise ValueError("each nominal row p must be a probability vector (>= 0, sums to 1)")
    return p


def inner_tv(p, V, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """min_{(1/2)||q - p||_1 <= rho} q . V per row: values (N,), worst rows q (N, S)."""
    p, V = _rows(p), np.asarray(V, dtype=np.float64)
    order = np.argsort(-V, kind="stable")  # descending value; the last is a minimiser
    ps = p[:, order]  # (N, S)
    m = np.minimum(rho, 1.0 - ps[:, -1])  # (N,) mass moved to the lowest state
    before = np.cumsum(ps, axis=1) - ps  # mass of the higher-value states before each one
    removed = np.clip(m[:, None] - before, 0.0, ps)  # (N, S) taken from the top down
    removed[:, -1] = 0.0
    qs = ps - removed
    qs[:, -1] += m
    q = np.empty_like(qs)
    q[:, order] = qs
    return q @ V, q


def tv_dual_value(p, V, rho: float) -> np.ndarray:
    """The tv dual max_alpha E_p min(V, alpha) - rho (alpha - min V), at its breakpoints
    alpha in {V(s)} (piecewise linear and concave): (N,). A second route to :func:`inner_tv`."""
    p, V = _rows(p), np.asarray(V, dtype=np.float64)
    alphas = np.unique(V)  # (K,)
    clipped = np.minimum(V[None, :], alphas[:, None])  # (K, S)
    return np.max(p @ clipped.T - rho * (alphas - V.min())[None, :], axis=1)


def kl_dual(lam: float, p: np.ndarray, V: np.ndarray, rho: float) -> float:
    """-lambda log E_p exp(-V / lambda) - lambda rho for one row on supp p (lambda > 0)."""
    v0 = V.min()
    return v0 - lam * _lse(np.log(p) - (V - v0) / lam) - lam * rho


def _kl_row(p: np.ndarray, V: np.ndarray, rho: float) -> tuple[float, np.ndarray]:
    supp = p > 0
    ps, Vs = p[supp], V[supp]
    vmin = Vs.min()
    at_min = Vs <= vmin + 1e-13 * max(1.0, float(np.abs(Vs).max()))  # ties up to round-off
    q = np.zeros_like(p)
    if np.log(ps[at_min].sum()) >= -rho or np.all(at_min):  # sup at lambda -> 0
        w = np.where(at_min, ps, 0.0)
        q[supp] = w / w.sum()
        return float(q[supp] @ Vs), q
    upper = (ps @ Vs - vmin) / rho

    def slope(lam: float) -> float:  # g'(lambda) = KL(q_lambda || p) - rho, decreasing
        logw = np.log(ps) - (Vs - vmin) / lam
        logq = logw - _lse(logw)
        return float(np.exp(logq) @ (logq - np.log(ps))) - rho

    lo = upper * 1e-9
    while slope(lo) <= 0 and lo > upper * 1e-300:  # the bracket's left end: KL > rho there
        lo *= 1e-9
    lam = brentq(slope, lo, upper, xtol=upper * 1e-16, rtol=4 * np.finfo(float).eps, maxiter=500)
    logw = np.log(ps) - (Vs - vmin) / lam
    q[supp] = np.exp(logw - _lse(logw))
    return float(kl_dual(lam, ps, Vs, rho)), q


def chi2_dual(alpha: float, p: np.ndarray, V: np.ndarray, rho: float) -> float:
    """alpha - sqrt(1 + rho) sqrt(E_p (alpha - V)_+^2) for one row on supp p."""
    return alpha - np.sqrt(1.0 + rho) * np.sqrt(p @ np.maximum(alpha - V, 0.0) ** 2)


def _chi2_row(p: np.ndarray, V: np.ndarray, rho: float) -> tuple[float, np.ndarray]:
    """The chi2 dual maximised exactly: on each interval between sorted values the active set
    {V < alpha} is fixed and the stationary point is a closed form; the dual is concave, so the
    best of the clipped stationary points and the breakpoints is its maximum."""
    supp = p > 0
    ps, Vs = p[supp], V[supp]
    order = np.argsort(Vs, kind="stable")
    pv, vv = ps[order], Vs[order]  # ascending values
    c2 = 1.0 + rho
    P, M, Q = np.cumsum(pv), np.cumsum(pv * vv), np.cumsum(pv * vv**2)  # active set: first k
    candidates = [vv]
    D = np.maximum(P * Q - M**2, 0.0)
    ok = c2 * P > 1.0
    u = np.sqrt(np.where(ok, D, 0.0) / np.where(ok, c2 * P - 1.0, 1.0))
    right = np.r_[vv[1:], np.inf]
    stat = np.clip((M + u) / P, vv, right)
    candidates.append(stat[ok])
    alphas = np.concatenate(candidates)
    values = np.array([chi2_dual(a, pv, vv, rho) for a in alphas])
    alpha = float(alphas[np.argmax(values)])
    q = np.zeros_like(p)
    w = ps * np.maximum(alpha - Vs, 0.0)
    if w.sum() <= 0:  # alpha at min V: the mass of the minimisers
        w = np.where(Vs <= vv[0], ps, 0.0)
    q[supp] = w / w.sum()
    return float(values.max()), q


def inner(p, V, divergence: str, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """sigma(p, V) = min_{q in U(p)} q . V per row: values (N,), worst rows q (N, S)."""
    divergence, rho = check_uncertainty(divergence, rho)
    p, V = _rows(p), np.asarray(V, dtype=np.float64)
    if V.shape != (p.shape[1],):
        raise ValueError(f"V must have shape ({p.shape[1]},), got {V.shape}")
    if rho == 0.0:
        return p @ V, p.copy()
    if divergence == "tv":
        return inner_tv(p, V, rho)
    row = _kl_row if divergence == "kl" else _chi2_row
    out = [row(pi, V, rho) for pi in p]
    return np.array([v for v, _ in out]), np.stack([q for _, q in out])


def robust_expectation(P: np.ndarray, V: np.ndarray, divergence: str, rho: float):
    """sigma(P(.|s,a), V) (S, A) and the worst kernel (S, A, S) of a kernel P (S, A, S)."""
    S, A, _ = P.shape
    vals, q = inner(P.reshape(S * A, -1), V, divergence, rho)
    return vals.reshape(S, A), q.reshape(S, A, -1)


def factored_robust_expectation(phi: np.ndarray, mu: np.ndarray, V, divergence: str, rho: float):
    """The d-rectangular robust expectation of a linear kernel P(.|s,a) = sum_i phi_i(s,a) mu_i
    (phi (S, A, d) >= 0 with rows summing to 1, factors mu (d, S)) whose factors range over
    balls U(mu_i): inf = sum_i phi_i(s, a) sigma(mu_i, V) (the infimum of a nonnegative
    combination over a product set splits by factor; Ma et al. 2022, d-rectangular [M]).
    Returns (S, A) values and the worst kernel (S, A, S) = sum_i phi_i q_i. One-hot phi
    (d = S A, mu the rows of P) is the (s, a)-rectangular set."""
    vals, q = inner(mu, V, divergence, rho)  # (d,), (d, S)
    return phi @ vals, np.einsum("sad,dt->sat", phi, q)


@dataclass(frozen=True)
class RobustSolution:
    """Robust optimal values and policy. Discounted: V (S,), Q (S, A), policy (S,), worst
    kernel (S, A, S); finite horizon: V (H+1, S), Q (H, S, A), policy (H, S), worst
    (H, S, A, S). iterations: the backups used."""

    V: np.ndarray
    Q: np.ndarray
    policy: np.ndarray
    worst: np.ndarray
    iterations: int
    divergence: str
    rho: float


def iterate_to_fixed_point(backup, V0, gamma: float, tol: float, max_iter: int = 1_000_000):
    """Iterate a gamma-contraction ``V <- backup(V)`` from V0 until the sup-norm step is below
    tol (1 - gamma) / gamma (then |V - V*| <= tol), or exactly ``max_iter`` times when tol < 0.
    Returns (V, iterations). The one loop every robust planner here runs."""
    stop = tol * (1 - gamma) / max(gamma, 1e-300)
    V, it = np.asarray(V0, dtype=np.float64), 0
    for it in range(1, int(max_iter) + 1):
        V_new = backup(V)
        step = float(np.max(np.abs(V_new - V)))
        V = V_new
        if step <= stop:
            break
    return V, it


def _policy_matrix(mdp, policy) -> np.ndarray:
    pol = np.asarray(policy)
    if np.issubdtype(pol.dtype, np.integer):
        pi = np.zeros(pol.shape + (mdp.A,))
        np.put_along_axis(pi, pol[..., None], 1.0, axis=-1)
        return pi
    return pol.astype(np.float64)


def robust_value_iteration(
    mdp,
    divergence: str,
    rho: float,
    *,
    policy=None,
    reward=None,
    tol: float = 1e-11,
    max_iter: int = 100_000,
) -> RobustSolution:
    """Robust VI (policy None) or robust policy evaluation of ``policy`` ((S,) int / (S, A), or
    (H, S) / (H, S, A) on a finite horizon) on ``mdp``'s nominal kernel.

    Discounted: iterate to a sup-norm step below tol (1 - gamma) / gamma (then |V - V*| <= tol).
    Finite horizon (``mdp.horizon`` set): H backward backups, exactly. ``reward`` (S, A), with a
    policy on a discounted model: replaces the mean rewards (a regularised reward such as
    r - beta log(pi / ref))."""
    divergence, rho = check_uncertainty(divergence, rho)
    pi = None if policy is None else _policy_matrix(mdp, policy)
    if mdp.horizon is not None:
        H = mdp.horizon
        P = mdp.dense_P()
        V = np.zeros((H + 1, mdp.S))
        Q = np.zeros((H, mdp.S, mdp.A))
        worst = np.zeros((H, mdp.S, mdp.A, mdp.S))
        for h in range(H - 1, -1, -1):
            Ph = P[h] if P.ndim == 4 else P
            sig, worst[h] = robust_expectation(Ph, V[h + 1], divergence, rho)
            Q[h] = mdp.reward(h) + sig
            V[h] = Q[h].max(axis=1) if pi is None else (pi[h] * Q[h]).sum(axis=1)
        return RobustSolution(V, Q, Q.argmax(axis=2), worst, H, divergence, rho)
    g = mdp.gamma
    P = mdp.dense_P()
    R = mdp.reward(0) if reward is None else np.asarray(reward, dtype=np.float64)

    def backup(V):
        Q = R + g * robust_expectation(P, V, divergence, rho)[0]
        return Q.max(axis=1) if pi is None else (pi * Q).sum(axis=1)

    V, it = iterate_to_fixed_point(backup, np.zeros(mdp.S), g, tol, max_iter)
    sig, worst = robust_expectation(P, V, divergence, rho)
    Q = R + g * sig
    return RobustSolution(V, Q, Q.argmax(axis=1), worst, it, divergence, rho)


def kernel_value(mdp, P: np.ndarray, policy, reward=None) -> np.ndarray:
    """Exact discounted value (S,) of a stationary policy under kernel P (S, A, S) with mdp's
    rewards (or ``reward`` (S, A)) and discount: (I - gamma P_pi)^-1 r_pi."""
    pi = _policy_matrix(mdp, policy)
    P_pi = np.einsum("sa,sat->st", pi, P)
    R = mdp.reward(0) if reward is None else np.asarray(reward, dtype=np.float64)
    r_pi = np.where(pi > 0, pi * R, 0.0).sum(axis=1)
    return np.linalg.solve(np.eye(mdp.S) - mdp.gamma * P_pi, r_pi)
