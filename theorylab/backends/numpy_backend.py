"""The numpy backend: the readable reference every other backend is tested against.

Each kernel is the plain numpy/scipy expression an algorithm would write, and the results are
those the library produced before backends existed, bit for bit: Bellman backups are
``R + (P_h @ V.T).T`` exactly as ``TabularMDP.expected_next`` computes them (BLAS for dense
models, scipy's CSR product for sparse ones), sampling is ``TabularMDP.rollout``'s inverse CDF
(a count of ``cdf <= u`` on dense rows, a vectorised binary search in CSR rows), count updates
are ``np.add.at``, and the linear-algebra kernels are the module functions
:func:`sherman_morrison_update` and :func:`quadratic_form` (``theorylab.algorithms.linear.gram``
re-exports them for any leading axes). float64 only.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from theorylab.backends.base import Backend, BackendUnavailableError
from theorylab.backends.model import TransitionModel
from theorylab.kernels.sampling import inverse_cdf_csr, inverse_cdf_dense, sample_episodes


def sherman_morrison_update(inv: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """In place ``inv <- (inv^{-1} + x x^T)^{-1}`` (Sherman-Morrison); returns ``(u, denom)``.

    inv: ``(..., d, d)`` symmetric positive definite; x: ``(..., d)``. ``u = inv_old x``
    ``(..., d)``, ``denom = 1 + x^T inv_old x`` ``(...,)``::

        (Lambda + x x^T)^{-1} = Lambda^{-1} - u u^T / (1 + x^T u),    u = Lambda^{-1} x
    """
    u = np.matmul(inv, x[..., None])[..., 0]  # Lambda^{-1} x: (..., d)
    denom = 1.0 + (x * u).sum(axis=-1)  # 1 + x^T Lambda^{-1} x: (...,)
    inv -= (u[..., :, None] * u[..., None, :]) / denom[..., None, None]  # (..., d, d)
    return u, denom


def quadratic_form(inv: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``x^T inv x`` for every row x of ``X``, clipped at 0 against round-off.

    inv: ``(..., d, d)``; X: ``(n, d)`` shared rows or ``(..., n, d)`` broadcastable against inv.
    Returns ``(..., n)``. One BLAS product per stacked matrix, then a row sum.
    """
    XM = np.matmul(X, inv)  # (..., n, d): rows x^T Lambda^{-1}
    return np.maximum((XM * X).sum(axis=-1), 0.0)  # (..., n)


def max_over_last(Q: np.ndarray) -> np.ndarray:
    """``max`` over the last axis of ``Q (..., A)``. With few actions, a chain of ``np.maximum``
    (numpy's reduction over a short last axis of a strided view is ~10x slower); max is exact,
    so the result is identical."""
    A = Q.shape[-1]
    if A > 8:
        return Q.max(axis=-1)
    V = Q[..., 0].copy()
    for a in range(1, A):
        np.maximum(V, Q[..., a], out=V)
    return V


class NumpyBackend(Backend):
    """numpy + scipy, float64, CPU (see the module docstring)."""

    name = "numpy"

    def __init__(self, device: str = "cpu", dtype="float64") -> None:
        if str(device) != "cpu":
            raise BackendUnavailableError(f"the numpy backend runs on the CPU, not {device!r}")
        if np.dtype(dtype) != np.float64:
            raise BackendUnavailableError(
                "the numpy backend is the float64 reference; use numba or torch for float32"
            )
        super().__init__(device, dtype)

    def csr(self, indptr, indices, data, shape):
        return sp.csr_array((data, indices, indptr), shape=shape)

    def csr_matmul(self, M, X):
        return M @ X

    def batched_matmul(self, P, X):
        return np.matmul(P, X)

    def bellman(self, model: TransitionModel, V, h: int = 0, R=None):
        V = np.asarray(V, dtype=np.float64)  # (B, S)
        M = model.flat[model.stage(h)]  # (S*A, S)
        out = M @ V.T  # (S*A, B): TabularMDP.expected_next, operation for operation
        PV = np.ascontiguousarray(out.T).reshape(V.shape[0], model.S, model.A)
        if R is None:
            R = model.R[model.reward_stage(h)][None]  # (1, S, A)
        return R + PV

    # ------------------------------------------------------------------ sampling
    def _last_column(self, model: TransitionModel, stage: int) -> np.ndarray:
        """Dense models: per flat row of a stage, the column of its last positive entry."""
        cache = model.native.setdefault(self.key, {})
        if stage not in cache:
            M = np.asarray(model.flat[stage])
            cache[stage] = M.shape[1] - 1 - np.argmax(M[:, ::-1] > 0, axis=1)
        return cache[stage]

    def sample_next(self, model: TransitionModel, rows, u, h: int = 0):
        rows = np.asarray(rows, dtype=np.int64)
        u = np.asarray(u, dtype=np.float64)
        stage = model.stage(h)
        if not model.sparse:
            P_rows = np.asarray(model.flat[stage])[rows]  # (n, S)
            return inverse_cdf_dense(P_rows, u, self._last_column(model, stage)[rows])
        indptr, indices, _ = model.csr()
        cum, last, _, _ = model.sampler()
        r = rows + stage * model.S * model.A
        return inverse_cdf_csr(indptr, indices, cum, r, u, last[r])

    def rollout(self, model: TransitionModel, policies, U, T: int):
        return sample_episodes(
            np.asarray(model.mu0),
            model.A,
            np.asarray(policies),
            np.asarray(U, dtype=np.float64),
            T,
            model.horizon,
            lambda h: model.R[model.reward_stage(h)],
            model.bernoulli,
            lambda rows, u, h: self.sample_next(model, rows, u, h),
        )

    # ------------------------------------------------------------------ counts
    def scatter_add(self, target, index, values) -> None:
        flat = target.reshape(-1)
        if not np.shares_memory(flat, target):
            raise ValueError("scatter_add needs a contiguous target (reshape(-1) must be a view)")
        np.add.at(flat, index, values)

    # ------------------------------------------------------------------ linear algebra
    def sherman_morrison(self, inv, x, *, direction: bool = False):
        u, denom = sherman_morrison_update(inv, x)
        return (u, denom) if direction else denom

    def quadratic_form(self, inv, X):
        return quadratic_form(inv, X)

    # ------------------------------------------------------------------ optimistic planning
    def optimistic_stage(self, Q_h, R, X, Y, visited, cap, keep_min):
        target = R + X + Y  # (B, S, A)
        q = np.minimum(np.minimum(Q_h, cap), target) if keep_min else np.minimum(target, cap)
        Q_h[...] = np.where(visited, q, cap)
        return max_over_last(Q_h)  # (B, S)

    def argmax_last(self, Q):
        return Q.argmax(axis=-1)
