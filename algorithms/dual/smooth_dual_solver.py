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
  solve the Newton system densely, larger ones by Jacobi-preconditioned conjugate gradients to a
  relative residual ``1e-3 min(0.1, sqrt(|grad|))`` (inexact Newton; a sparse LU of the Hessian
  fills in on random transition graphs: 0.4 s per solve at S = 1000).
* ``"lbfgs"``: scipy's L-BFGS-B on (g, grad g) (first order only; the bench compares the two).

Continuation in alpha. For KL, c = exp: far from the optimum Newton moves about alpha per step
(the Newton step of exp(y / alpha) is alpha), so a cold start at small alpha takes O(1/alpha)
steps. Both methods therefore solve a geometric sequence alpha_0 = max(alpha, 1), alpha_0 / 4, ...,
alpha, each warm-started from the previous solution (the solution moves O(alpha) per stage).
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


def _newton(x, M, b, r, w, alpha, conj, tol, max_iter) -> tuple[np.ndarray, int, float]:
    m = x.size
    val, y = _objective(x, M, b, r, w, alpha, conj)
    g = _gradient(y, M, b, w, conj)
    for it in range(max_iter):
        gnorm = float(np.max(np.abs(g))) if m else 0.0
        if gnorm <= tol:
            return x, it, gnorm
        D = w * conj.second(y) / alpha  # (n,)
        H = sp.csr_array(M.T @ (M.multiply(D[:, None])))  # (m, m)
        shift = 1e-12 * max(float(H.diagonal().max(initial=0.0)), 1.0)
        if m <= DENSE_MAX:
            Hd = H.toarray() + shift * np.eye(m)
            try:
                step = -np.linalg.solve(Hd, g)
            except np.linalg.LinAlgError:
                step = -np.linalg.lstsq(Hd, g, rcond=None)[0]
        else:  # inexact Newton: Jacobi-preconditioned CG (sparse LU fills in on random graphs)
            Hs = sp.csr_array(H + shift * sp.eye(m, format="csr"))
            pre = spla.aslinearoperator(sp.diags_array(1.0 / Hs.diagonal()))
            step, _ = spla.cg(Hs, -g, rtol=min(0.1, np.sqrt(gnorm)) * 1e-3, M=pre, maxiter=10 * m)
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


def _lbfgs(x, M, b, r, w, alpha, conj, tol, max_iter) -> tuple[np.ndarray, int, float]:
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
    total = 0
    gnorm = np.inf
    for k, a in enumerate(alphas):
        last = k == len(alphas) - 1
        x, it, gnorm = step(x, M, b, r, w, a, conj, tol if last else np.sqrt(tol), max_iter)
        total += it
    if not gnorm <= 1e3 * tol:
        raise DualSolverError(
            f"{method} stopped with |grad|_inf = {gnorm:.3g} > {1e3 * tol:.1e} after {total} "
            f"iterations at alpha = {alpha:g} (try method='newton' or a larger max_iter)"
        )
    value, _ = _objective(x, M, b, r, w, alpha, conj)
    return SmoothDualResult(x, value, gnorm, total, len(alphas))
