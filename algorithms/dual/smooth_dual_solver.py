r"""The one smooth convex problem behind the dual-V and dual-Q forms, solved by Newton or L-BFGS.

Both duals of Sikchi et al. (ICLR 2024, eqs. for dual-V and dual-Q; theory-preference-dual-llm.md
6.2) have the form

    min_x  g(x) = b^T x + alpha sum_i w_i c(y_i),      y = (r - M x) / alpha,             (*)

with ``M (n, m)`` sparse, ``w (n,) > 0`` the data weights d^O(s, a) on its support, ``r (n,)``
the rewards and ``c`` a conjugate (``f*_p`` for dual-V, ``f*`` for dual-Q). Its gradient and
(generalised) Hessian are closed-form:

    grad g = b - M^T (w * c'(y)),            hess g = M^T diag(w * c''(y)) M / alpha.

``w * c'(y)`` is the recovered occupancy d, so ``grad g = 0`` *is* the flow constraint: the norm
of the gradient at the returned point is the flow residual of the recovered d.

Methods:

* ``"newton"`` (default): damped Newton with an Armijo backtracking line search and a Levenberg
  shift ``1e-12 max(diag hess, 1)`` (chi^2's Hessian is singular where no pair is active: the
  piecewise quadratic conjugate makes this the semismooth Newton method). Small problems (m <= 200)
  solve the Newton system densely; larger ones by matrix-free conjugate gradients
  (``z -> M^T (D (M z))``, two sparse products per iteration, the Hessian never formed) with the
  Jacobi preconditioner ``diag hess = (M * M)^T D``, to a relative residual
  ``1e-3 min(0.1, sqrt(|grad|))`` (inexact Newton). A sparse Cholesky / LU of the Hessian fills in
  on random transition graphs (0.4 s per factorisation at S = 1000) and forming ``M^T D M`` costs
  more than the CG iterations it would speed up.
* ``"lbfgs"``: scipy's L-BFGS-B on (g, grad g) (first order only; the bench compares the two).

Continuation in alpha. For KL, c = exp: far from the optimum Newton moves about alpha per step
(the Newton step of exp(y / alpha) is alpha), so a cold start at small alpha takes O(1/alpha)
steps. Both methods therefore solve a geometric sequence alpha_0 = max(alpha, 1), alpha_0 / 4, ...,
alpha, each warm-started from the previous solution (the solution moves O(alpha) per stage).
Newton warm-starts each stage with the tangent predictor ``x + (alpha' - alpha) dx/dalpha``,
``hess dx/dalpha = -M^T (w c''(y) y) / alpha`` (one more CG solve): without it the previous
stage's x makes ``exp(y)`` overshoot by a factor ``exp((alpha / alpha' - 1) y)`` and Newton spends
its damped phase (about one e-fold of the total mass per step) undoing that. On the bench problem
(random-sparse, S = 10^4, KL, alpha = 0.1) the predictor and the matrix-free CG together take the
solve from 97 Newton steps / 7487 CG iterations / 28-32 s to 21 steps / 939 CG iterations /
1.2 s, with the same primal value to 12 digits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.optimize as so
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from theorylab.errors import TheorylabError

Method = Literal["newton", "lbfgs"]
DENSE_MAX = 200  # solve the Newton system densely below this many variables (sparse LU above)
GRAD_TOL = 1e-13


class DualSolverError(TheorylabError, RuntimeError):
    """The smooth dual did not converge (the message gives the gradient norm reached)."""


@dataclass(frozen=True)
class Conjugate:
    """A conjugate ``c`` with its first two derivatives (elementwise on arrays)."""

    value: Callable[[np.ndarray], np.ndarray]
    first: Callable[[np.ndarray], np.ndarray]
    second: Callable[[np.ndarray], np.ndarray]


@dataclass
class SmoothDualResult:
    x: np.ndarray  # (m,) the minimiser
    value: float  # g(x)
    grad_norm: float  # max |grad g(x)|
    iterations: int  # Newton steps / L-BFGS iterations over all continuation stages
    stages: int  # number of alpha stages


def _objective(x, M, b, r, w, alpha, conj: Conjugate):
    y = (r - M @ x) / alpha
    with np.errstate(over="ignore", invalid="ignore"):
        val = float(b @ x + alpha * np.sum(w * conj.value(y)))
    return val, y


def _gradient(y, M, b, w, conj: Conjugate) -> np.ndarray:
    return b - M.T @ (w * conj.first(y))


def _accept(val, val_new, decrease, gnorm, g_new) -> bool:
    """Armijo's sufficient decrease; once the predicted decrease ``decrease`` (< 0) is below the
    round-off of the objective, the values cannot be compared and a step is accepted when it
    reduces the gradient norm instead."""
    if g_new is None or not np.isfinite(val_new):
        return False
    if val_new <= val + 1e-4 * decrease and val_new < val:
        return True
    if abs(decrease) <= 1e-12 * (1.0 + abs(val)):
        return float(np.max(np.abs(g_new))) < gnorm
    return False


def _hessian_solve(M, M2, D, rhs, rtol, shift_rel=1e-12) -> np.ndarray:
    """``(M^T diag(D) M + shift I) z = rhs`` with a Levenberg shift ``shift_rel max(diag, 1)``:
    dense below DENSE_MAX variables, else matrix-free Jacobi-preconditioned CG (module
    docstring). M2 is ``M * M`` elementwise, so ``M2^T D`` is the Hessian's diagonal."""
    m = rhs.size
    diag = M2.T @ D  # (m,)
    shift = shift_rel * max(float(diag.max(initial=0.0)), 1.0)
    if m <= DENSE_MAX:
        Hd = sp.csr_array(M.T @ (M.multiply(D[:, None]))).toarray() + shift * np.eye(m)
        try:
            return np.linalg.solve(Hd, rhs)
        except np.linalg.LinAlgError:
            return np.linalg.lstsq(Hd, rhs, rcond=None)[0]
    H = spla.LinearOperator((m, m), matvec=lambda z: M.T @ (D * (M @ z)) + shift * z)
    pre = spla.aslinearoperator(sp.diags_array(1.0 / (diag + shift)))
    z, _ = spla.cg(H, rhs, rtol=rtol, M=pre, maxiter=10 * m)
    return z


def _newton(x, M, b, r, w, alpha, conj, tol, max_iter, M2) -> tuple[np.ndarray, int, float]:
    m = x.size
    val, y = _objective(x, M, b, r, w, alpha, conj)
    g = _gradient(y, M, b, w, conj)
    for it in range(max_iter):
        gnorm = float(np.max(np.abs(g))) if m else 0.0
        if gnorm <= tol:
            return x, it, gnorm
        D = w * conj.second(y) / alpha  # (n,)
        step = -_hessian_solve(M, M2, D, g, min(0.1, np.sqrt(gnorm)) * 1e-3)
        slope = float(g @ step)
        if not slope < 0:  # not a descent direction (numerically singular): gradient step
            step, slope = -g, -float(g @ g)
        t = 1.0
        while True:
            x_new = x + t * step
            val_new, y_new = _objective(x_new, M, b, r, w, alpha, conj)
            g_new = _gradient(y_new, M, b, w, conj) if np.isfinite(val_new) else None
            if _accept(val, val_new, t * slope, gnorm, g_new):
                break
            t *= 0.5
            if t < 1e-30:
                return x, it, gnorm  # no progress possible at float precision
        x, val, y, g = x_new, val_new, y_new, g_new
    gnorm = float(np.max(np.abs(g))) if m else 0.0
    return x, max_iter, gnorm


def _predict(x, M, r, w, alpha, alpha_next, conj, M2) -> np.ndarray:
    """Tangent predictor of the continuation: ``x + (alpha_next - alpha) dx/dalpha`` with
    ``H dx/dalpha = -M^T (w c''(y) y) / alpha`` (differentiate ``grad g(x(alpha), alpha) = 0``;
    ``y = (r - M x) / alpha``)."""
    y = (r - M @ x) / alpha
    D = w * conj.second(y) / alpha
    rhs = -(M.T @ (w * conj.second(y) * y)) / alpha
    dx = _hessian_solve(M, M2, D, rhs, 1e-6)
    x_next = x + (alpha_next - alpha) * dx
    return x_next if np.all(np.isfinite(x_next)) else x


def _lbfgs(x, M, b, r, w, alpha, conj, tol, max_iter, M2) -> tuple[np.ndarray, int, float]:
    """scipy's L-BFGS-B on (g, grad g), first order only (M2 unused). A Jacobi rescaling of the
    variables, ``z = sqrt(diag H(x0)) (x - x0)``, was tried on the bench problem and was worse:
    8907 iterations at S = 1000, and a diverging line search at S = 10^4."""

    def fun(z):
        val, y = _objective(z, M, b, r, w, alpha, conj)
        if not np.isfinite(val):
            return np.inf, np.zeros_like(z)
        return val, _gradient(y, M, b, w, conj)

    res = so.minimize(
        fun,
        x,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": tol, "ftol": 1e-16, "maxcor": 30},
    )
    _, y = _objective(res.x, M, b, r, w, alpha, conj)
    gnorm = float(np.max(np.abs(_gradient(y, M, b, w, conj)))) if x.size else 0.0
    return res.x, int(res.nit), gnorm


def minimize_smooth_dual(
    M: sp.csr_array,
    b: np.ndarray,
    r: np.ndarray,
    w: np.ndarray,
    alpha: float,
    conj: Conjugate,
    x0: np.ndarray,
    *,
    method: Method = "newton",
    tol: float = GRAD_TOL,
    max_iter: int = 500,
    continuation: bool = True,
) -> SmoothDualResult:
    """Minimise (*) of the module docstring.

    M ``(n, m)``, b ``(m,)``, r ``(n,)``, w ``(n,)`` positive, x0 ``(m,)``. ``tol`` is the target
    max-norm of the gradient at the final alpha (intermediate stages stop at ``sqrt(tol)``).
    Raises :class:`DualSolverError` if the final gradient norm exceeds ``1e3 tol``.
    """
    if method not in ("newton", "lbfgs"):
        raise ValueError(f"method must be 'newton' or 'lbfgs', got {method!r}")
    step = _newton if method == "newton" else _lbfgs
    alphas = [alpha]
    if continuation:
        a = max(alpha, 1.0)
        alphas = []
        while a > alpha * 1.0000001:
            alphas.append(a)
            a /= 4.0
        alphas.append(alpha)
    x = np.array(x0, dtype=np.float64)
    M2 = sp.csr_array(M.multiply(M))  # (n, m): M2^T D is the Hessian's diagonal
    total = 0
    gnorm = np.inf
    for k, a in enumerate(alphas):
        last = k == len(alphas) - 1
        if k > 0 and method == "newton":
            x = _predict(x, M, r, w, alphas[k - 1], a, conj, M2)
        x, it, gnorm = step(x, M, b, r, w, a, conj, tol if last else np.sqrt(tol), max_iter, M2)
        total += it
    if not gnorm <= 1e3 * tol:
        raise DualSolverError(
            f"{method} stopped with |grad|_inf = {gnorm:.3g} > {1e3 * tol:.1e} after {total} "
            f"iterations at alpha = {alpha:g} (try method='newton' or a larger max_iter)"
        )
    value, _ = _objective(x, M, b, r, w, alpha, conj)
    return SmoothDualResult(x, value, gnorm, total, len(alphas))
