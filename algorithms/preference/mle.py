r"""Constrained maximum likelihood for BTL and Plackett-Luce rewards (Zhu, Jordan, Jiao 2023).

Paper: Zhu, Jordan, Jiao, "Principled Reinforcement Learning with Human Feedback from Pairwise or
K-wise Comparisons", ICML 2023, arXiv:2301.11270 (v5). Section 3.1 (pairwise MLE), section 4
(Plackett-Luce: the true K-wise MLE_K and the pairwise-split MLE_2). Card:
docs/algorithms/preference-mle.md. Every formula below is tagged [M] in the reference (the theorem
text could not be read beyond the abstract); the estimators are standard and stated in full here.

Identifiable set (the shift of r is not identified from comparisons):
``Theta_B = {theta in R^d : 1^T theta = 0, ||theta||_2 <= B}``.

BTL (pairwise): with x_i = phi(s_i, a1_i) - phi(s_i, a0_i) and y_i = 1 when a1 won,

    l_D(theta) = -(1/n) sum_i [ y_i log sigma(<theta, x_i>) + (1 - y_i) log sigma(-<theta, x_i>) ]

Plackett-Luce (K-wise), ranking of K items with features f_{i,0..K-1} best first:

    l_K(theta) = -(1/n) sum_i sum_{j=0}^{K-2} [ <theta, f_ij> - log sum_{k>=j} exp<theta, f_ik> ]

(the j = K - 1 term is identically 0). MLE_2 splits each ranking into its K(K-1)/2 pairs and fits
BTL on them (``RankingDataset.pairwise_split``). At K = 2 the three estimators coincide.

Two solvers of the same convex program, which agree to 1e-6 (tests/test_preference_mle.py):

* ``"newton"`` (default): parametrise theta = Q u with Q (d, d-1) an orthonormal basis of 1^perp,
  so 1^T theta = 0 holds exactly and ||theta|| = ||u||. Damped Newton on l(Q u); if the
  unconstrained minimiser lies outside the ball (or does not exist: separable data), solve the
  KKT system grad l(Q u) + mu u = 0, ||u|| = B, mu > 0 by Newton's method on the multiplier with
  the secular function 1/||u(mu)|| - 1/B (the More-Sorensen trust-region iteration), safeguarded
  by bisection. Exact to round-off (gradient norm 1e-12).
* ``"cvxpy"``: the same objective (times n, which Clarabel solves most accurately) with
  ``cp.logistic`` / ``cp.log_sum_exp`` and the constraints written as printed, solved by Clarabel
  at tolerances 1e-11. Measured against Newton over the test instances (K = 2, 3, 5; B = 0.5,
  1, 5; the Theorem 3.9 data): theta agrees to 7e-7 at worst, objective values to 1e-12; at
  tolerance 1e-10 or with the 1/n-normalised objective the worst case is 4e-6 to 1e-5 (the
  exponential-cone interior point stops there; ``theorylab bench preference`` saw 2.9e-6 for BTL
  at n = 10^4, d = 16). Newton is the reference: its KKT residual is below 1e-12.

Shapes: everything is batched over seeds, a leading axis B; one convex program per seed.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from scipy.special import expit, logsumexp

from theorylab.errors import TheorylabError
from theorylab.mdps.preference import ComparisonBandit, PairwiseDataset, RankingDataset

GRAD_TOL = 1e-12
MAX_NEWTON = 200
SOLVERS = ("newton", "cvxpy")
CVXPY_TOL = 1e-11  # Clarabel's gap/feasibility tolerances (it may then report 'inaccurate')


class MLEError(TheorylabError, ValueError):
    """Bad input to an MLE (shapes, norm bound, solver) or a solve that did not converge."""


def sum_zero_basis(d: int) -> np.ndarray:
    """An orthonormal basis ``Q (d, d-1)`` of {theta : 1^T theta = 0} (Q^T Q = I, 1^T Q = 0)."""
    if d < 2:
        raise MLEError(f"1^T theta = 0 leaves nothing to estimate at d = {d}; need d >= 2")
    M = np.eye(d)[:, : d - 1] - 1.0 / d  # columns e_i - 1/d span 1^perp
    Q, _ = np.linalg.qr(M)
    return Q


# ------------------------------------------------------------------------------ losses
Loss = Callable[[np.ndarray], tuple[float, np.ndarray, np.ndarray]]


def _distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of ``rows (n, m)`` and their counts (a lexsort: numeric, fast)."""
    r = rows[np.lexsort(rows.T[::-1])]
    starts = np.flatnonzero(np.r_[True, np.any(r[1:] != r[:-1], axis=1)])
    return r[starts], np.diff(np.r_[starts, len(r)]).astype(np.float64)


def btl_loss(X: np.ndarray, y: np.ndarray, counts: np.ndarray | None = None) -> Loss:
    """l_D, its gradient and Hessian at theta: ``X (n, d)`` differences, ``y (n,)`` in {0, 1}.

    Identical rows (x_i, y_i) are merged first (the loss is a sum over rows, so this is the same
    function, evaluated in O(distinct rows): the Theorem 3.9 data has two distinct x). Rows with
    multiplicities can be given directly as ``counts (n,)``."""
    if counts is None:
        rows, w = _distinct_rows(np.column_stack([X, y]))
        X, y = rows[:, :-1], rows[:, -1]
    else:
        w = np.asarray(counts, dtype=np.float64)
    n = w.sum()
    sign = 1.0 - 2.0 * y  # (m,): y log(1 + e^-z) + (1 - y) log(1 + e^z) = log(1 + e^(sign z))

    def value(theta) -> float:
        return float((w * np.logaddexp(0.0, sign * (X @ theta))).sum() / n)

    def fgh(theta):
        z = X @ theta
        f = float((w * np.logaddexp(0.0, sign * z)).sum() / n)
        s = expit(z)
        g = X.T @ (w * (s - y)) / n
        H = (X * (w * s * (1 - s))[:, None]).T @ X / n
        return f, g, H

    fgh.value = value  # the line search's evaluations need l alone (see _newton)
    return fgh


def plackett_luce_loss(F: np.ndarray, stages: int | None = None) -> Loss:
    """l_K, its gradient and Hessian: ``F (n, K, d)`` features of each ranking, best first.

    stages: keep only the first ``stages`` factors j = 0..stages-1 of each ranking's likelihood
    (default K - 1: the full PL likelihood; 1: the top-choice multinomial logit, which discards
    the rest of the ranking -- used as a less efficient contrast)."""
    n, K, _ = F.shape
    stages = K - 1 if stages is None else int(stages)
    if not 1 <= stages <= K - 1:
        raise MLEError(f"stages must lie in 1..K-1 = 1..{K - 1}, got {stages}")
    suffix = np.triu(np.ones((K - 1, K), dtype=bool))[:stages]  # row j: items k >= j

    def fgh(theta):
        z = F @ theta  # (n, K)
        zz = np.where(suffix[None], z[:, None, :], -np.inf)  # (n, K-1, K)
        lse = logsumexp(zz, axis=-1)  # (n, K-1)
        f = float((lse - z[:, :stages]).sum() / n)
        p = np.exp(zz - lse[..., None])  # softmax over each suffix: (n, stages, K)
        mean = p @ F  # E_{p_j}[f]: (n, stages, d)
        g = (mean - F[:, :stages]).sum(axis=(0, 1)) / n
        second = np.einsum("njk,nkd,nke->de", p, F, F)
        H = (second - np.einsum("njd,nje->de", mean, mean)) / n
        return f, g, H

    return fgh


# ------------------------------------------------------------------------------ newton
def _newton(fgh: Loss, Q: np.ndarray, u: np.ndarray, mu: float, limit: float | None):
    """Damped Newton on l(Q u) + mu/2 ||u||^2; stops early when ||u|| exceeds ``limit``."""
    m = u.size
    value = getattr(fgh, "value", None) or (lambda theta: fgh(theta)[0])  # l alone, if cheaper
    mu_eye = mu * np.eye(m)
    for _ in range(MAX_NEWTON):
        f, g, H = fgh(Q @ u)
        f += 0.5 * mu * u @ u
        g = Q.T @ g + mu * u
        if np.linalg.norm(g) <= GRAD_TOL:
            return u, True
        Hu = Q.T @ H @ Q + mu_eye
        try:
            step = np.linalg.solve(Hu, g)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(Hu, g, rcond=None)[0]
        t, dec = 1.0, g @ step
        while t > 1e-12:
            un = u - t * step
            fn = value(Q @ un) + 0.5 * mu * un @ un
            if fn <= f - 1e-4 * t * dec or abs(fn - f) <= 1e-15 * max(1.0, abs(f)):
                break
            t *= 0.5
        if t <= 1e-12:  # no decrease possible: at the optimum up to round-off
            return u, np.linalg.norm(g) <= 1e-8
        u = un
        if limit is not None and np.linalg.norm(u) > limit:
            return u, False
    return u, np.linalg.norm(Q.T @ fgh(Q @ u)[1] + mu * u) <= 1e-9


def ball_constrained_minimiser(fgh: Loss, d: int, B: float) -> np.ndarray:
    """argmin l(theta) over Theta_B, by Newton with the multiplier search (module docstring)."""
    Q = sum_zero_basis(d)
    u, ok = _newton(fgh, Q, np.zeros(d - 1), 0.0, limit=2.0 * B)
    if ok and np.linalg.norm(u) <= B:
        return Q @ u
    # ||u(mu)|| decreases in mu > 0: bracket the root of 1/||u(mu)|| - 1/B, then safeguarded
    # Newton on the multiplier (d/dmu u = -(H + mu I)^-1 u).
    lo, hi = 0.0, 1.0
    u = np.zeros(d - 1)
    while True:
        u_hi, _ = _newton(fgh, Q, u, hi, None)
        if np.linalg.norm(u_hi) < B:
            break
        lo, hi, u = hi, 2.0 * hi, u_hi
    mu, u = hi, u_hi
    for _ in range(200):
        u, ok = _newton(fgh, Q, u, mu, None)
        if not ok:
            raise MLEError(f"Newton did not converge at multiplier mu = {mu:g}")
        norm = np.linalg.norm(u)
        if abs(norm - B) <= 1e-13 * B:
            break
        if norm > B:
            lo = mu
        else:
            hi = mu
        H = Q.T @ fgh(Q @ u)[2] @ Q + mu * np.eye(d - 1)
        du = -np.linalg.solve(H, u)
        dphi = -(u @ du) / norm**3  # d/dmu of 1/||u||
        phi = 1.0 / norm - 1.0 / B
        nxt = mu - phi / dphi if dphi != 0 else np.inf
        mu = nxt if lo < nxt < hi else 0.5 * (lo + hi)
        if hi - lo <= 1e-15 * max(1.0, hi):
            break
    return Q @ u


def _cvxpy_btl(X: np.ndarray, y: np.ndarray, B: float) -> np.ndarray:
    import cvxpy as cp

    n, d = X.shape
    theta = cp.Variable(d)
    z = X @ theta
    obj = y @ cp.logistic(-z) + (1 - y) @ cp.logistic(z)  # n l_D: the sum scales best
    return _cvxpy_solve(cp, theta, obj, B)


def _cvxpy_pl(F: np.ndarray, B: float) -> np.ndarray:
    import cvxpy as cp

    n, K, d = F.shape
    theta = cp.Variable(d)
    terms = []
    for j in range(K - 1):
        Zj = cp.reshape(F[:, j:, :].reshape(-1, d) @ theta, (n, K - j), order="C")
        terms.append(cp.sum(cp.log_sum_exp(Zj, axis=1)) - cp.sum(F[:, j, :] @ theta))
    return _cvxpy_solve(cp, theta, sum(terms), B)  # n l_K


def _cvxpy_solve(cp, theta, obj, B: float) -> np.ndarray:
    prob = cp.Problem(cp.Minimize(obj), [cp.sum(theta) == 0, cp.norm(theta, 2) <= B])
    with warnings.catch_warnings():  # 'optimal_inaccurate' at these tolerances is still ~1e-7
        warnings.simplefilter("ignore", UserWarning)
        prob.solve(
            solver=cp.CLARABEL,
            tol_gap_abs=CVXPY_TOL,
            tol_gap_rel=CVXPY_TOL,
            tol_feas=CVXPY_TOL,
            tol_ktratio=CVXPY_TOL,
            max_iter=1000,
        )
    if prob.status not in ("optimal", "optimal_inaccurate") or theta.value is None:
        raise MLEError(f"cvxpy (Clarabel) returned status {prob.status!r}")
    return np.asarray(theta.value, dtype=np.float64)


def solve_clarabel(prob, what: str, error=MLEError) -> None:
    """Solve a cvxpy problem with Clarabel at gap and feasibility tolerances 1e-10 (its
    warnings silenced); ``error(what: status)`` unless the status is (inaccurately) optimal. The
    one solve of the pessimistic, KL-pessimistic and max-min programs."""
    import cvxpy as cp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    if prob.status not in ("optimal", "optimal_inaccurate"):
        raise error(f"{what}: cvxpy (Clarabel) returned {prob.status!r}")


# ------------------------------------------------------------------------------ public API
def _check(B: float, solver: str) -> None:
    if not (np.isfinite(B) and B > 0):
        raise MLEError(f"the norm bound B must be positive and finite, got {B!r}")
    if solver not in SOLVERS:
        raise MLEError(f"solver must be one of {SOLVERS}, got {solver!r}")


def btl_mle(X, y, B: float, *, solver: str = "newton") -> np.ndarray:
    """Constrained BTL MLE per seed: ``X (B, n, d)`` differences, ``y (B, n)`` -> ``(B, d)``."""
    _check(B, solver)
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 3 or y.shape != X.shape[:2]:
        raise MLEError(f"X must be (B, n, d) and y (B, n), got {X.shape} and {y.shape}")
    if ((y != 0) & (y != 1)).any():
        raise MLEError("labels y must be 0 or 1")
    out = np.empty((X.shape[0], X.shape[2]))
    for b in range(X.shape[0]):
        if solver == "cvxpy":
            out[b] = _cvxpy_btl(X[b], y[b], B)
        else:
            out[b] = ball_constrained_minimiser(btl_loss(X[b], y[b]), X.shape[2], B)
    return out


def plackett_luce_mle(
    F, B: float, *, solver: str = "newton", stages: int | None = None
) -> np.ndarray:
    """True K-wise MLE per seed: ``F (B, n, K, d)`` features, best first -> ``(B, d)``.

    stages: see :func:`plackett_luce_loss` (Newton only; default: the full likelihood)."""
    _check(B, solver)
    F = np.asarray(F, dtype=np.float64)
    if F.ndim != 4 or F.shape[2] < 2:
        raise MLEError(f"F must be (B, n, K, d) with K >= 2, got {F.shape}")
    out = np.empty((F.shape[0], F.shape[3]))
    for b in range(F.shape[0]):
        if solver == "cvxpy":
            if stages is not None:
                raise MLEError("stages is supported by the Newton solver only")
            out[b] = _cvxpy_pl(F[b], B)
        else:
            loss = plackett_luce_loss(F[b], stages)
            out[b] = ball_constrained_minimiser(loss, F.shape[3], B)
    return out


def fit_btl(
    bandit: ComparisonBandit, data: PairwiseDataset, *, B: float | None = None, solver="newton"
) -> np.ndarray:
    """theta_hat ``(B, d)`` from pairwise data (B defaults to the instance's norm bound)."""
    return btl_mle(data.differences(bandit), data.y, bandit.B if B is None else B, solver=solver)


def fit_plackett_luce(
    bandit: ComparisonBandit, data: RankingDataset, *, B: float | None = None, solver="newton"
) -> np.ndarray:
    """MLE_K ``(B, d)``: the true Plackett-Luce likelihood of the rankings."""
    return plackett_luce_mle(data.features(bandit), bandit.B if B is None else B, solver=solver)


def fit_pairwise_split(
    bandit: ComparisonBandit, data: RankingDataset, *, B: float | None = None, solver="newton"
) -> np.ndarray:
    """MLE_2 ``(B, d)``: BTL on the K(K-1)/2 pairs of every ranking (InstructGPT's split)."""
    return fit_btl(bandit, data.pairwise_split(), B=B, solver=solver)
