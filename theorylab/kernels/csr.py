"""Kernels on CSR transition matrices ``(S*A, S)``: exact per-row cumulative sums.

The numpy path is the readable reference and handles equal row lengths (one row-wise
accumulate); the numba path is compiled (``cache=True``) and used where it pays, rows of unequal
length. O(nnz) time and one ``(nnz,)`` output. The Bellman sweeps over CSR models, which fuse
``R + gamma * P @ V`` with the ``max`` so that no ``(S*A,)`` intermediate is written, live in
:mod:`theorylab.kernels.bellman`.
"""

from __future__ import annotations

import numpy as np


def row_cumsum(indptr: np.ndarray, data: np.ndarray) -> np.ndarray:
    """Cumulative sum of ``data`` restarted at every CSR row (exact: no global running sum).

    indptr: ``(n_rows + 1,)``; data: ``(nnz,)``. Returns ``(nnz,)`` float64.
    """
    counts = np.diff(indptr)
    if counts.size and np.all(counts == counts[0]) and counts[0] > 0:
        # Equal row lengths: a row-wise accumulate. The explicit ``out`` matters: letting
        # ``np.cumsum`` allocate its own result was 2-4x slower at nnz = 4e7 (numpy 2.4).
        out = np.empty((counts.size, int(counts[0])))  # (n_rows, k)
        np.cumsum(np.asarray(data, np.float64).reshape(out.shape), axis=1, out=out)
        return out.reshape(-1)
    return _row_cumsum_numba(np.asarray(indptr, np.int64), np.asarray(data, np.float64))


def _row_cumsum_numba(indptr, data):
    from numba import njit

    global _row_cumsum_numba_impl
    if _row_cumsum_numba_impl is None:

        @njit(cache=True)
        def impl(indptr, data):
            out = np.empty_like(data)
            for r in range(indptr.shape[0] - 1):
                acc = 0.0
                for j in range(indptr[r], indptr[r + 1]):
                    acc += data[j]
                    out[j] = acc
            return out

        _row_cumsum_numba_impl = impl
    return _row_cumsum_numba_impl(indptr, data)


_row_cumsum_numba_impl = None
