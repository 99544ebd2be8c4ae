"""Optimal experimental designs over a finite arm set, by Frank-Wolfe (seed row 001#19).

:func:`g_optimal_design` -- the G-optimal design ``lambda`` on arms ``X`` ``(n, p)``, i.e. the
minimiser of ``max_x ||x||^2_{A(lambda)^{-1}}``, ``A(lambda) = sum_x lambda_x x x^T``. By the
Kiefer-Wolfowitz theorem it is the D-optimal design (maximiser of ``log det A(lambda)``) and its
value is p = rank; Frank-Wolfe on ``log det`` with the exact line search of Fedorov-Wynn steps
(step ``(g_max / p - 1) / (g_max - 1)`` towards the arm of largest ``g_x = ||x||^2_{A^{-1}}``)
stops when ``g_max <= (1 + tol) p`` (Lattimore & Szepesvari, Bandit Algorithms, sec. 21.2).

:func:`allocation` rounds a design to integer pull counts ``ceil(lambda_x N)`` (at most n extra
pulls; the rounded design's exact ``A`` is what the learners' confidence widths use).
"""

from __future__ import annotations

import numpy as np


def g_optimal_design(X: np.ndarray, tol: float = 1e-3, max_iter: int = 10000) -> np.ndarray:
    """``(n,)`` the G-optimal design on the rows of ``X`` ``(n, p)`` (rows spanning R^p)."""
    X = np.asarray(X, dtype=float)  # (n, p)
    n, p = X.shape
    if np.linalg.matrix_rank(X) < p:
        raise ValueError(
            f"g_optimal_design: the {n} arms span rank {np.linalg.matrix_rank(X)} < {p}"
        )
    lam = np.full(n, 1.0 / n)  # (n,)
    for _ in range(max_iter):
        A = X.T @ (lam[:, None] * X)  # (p, p)
        g = np.einsum("ij,ij->i", X @ np.linalg.inv(A), X)  # (n,) ||x||^2_{A^{-1}}
        i = int(np.argmax(g))
        if g[i] <= (1 + tol) * p:
            return lam
        step = (g[i] / p - 1.0) / (g[i] - 1.0)
        lam *= 1.0 - step
        lam[i] += step
    raise RuntimeError(
        f"g_optimal_design: G-value {g[i]:.6g} > (1 + {tol}) {p} after {max_iter} Frank-Wolfe steps"
    )


def g_value(X: np.ndarray, lam: np.ndarray) -> float:
    """``max_x ||x||^2_{A(lambda)^{-1}}`` of a design (p at the optimum)."""
    A = X.T @ (np.asarray(lam)[:, None] * X)
    return float(np.max(np.einsum("ij,ij->i", X @ np.linalg.pinv(A), X)))


def allocation(lam: np.ndarray, N: float) -> np.ndarray:
    """``(n,)`` integer pulls ``ceil(lambda_x N)`` on the design's support."""
    lam = np.asarray(lam)
    return np.where(lam > 1e-9, np.ceil(lam * N), 0).astype(np.int64)
