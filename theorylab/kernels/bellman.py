"""Bellman-optimality sweeps over CSR and dense models: a numpy reference and fused numba kernels.

What
----
One sweep of the Bellman optimality operator on a model with transitions ``P`` as CSR
``(S*A, S)`` (row ``s*A + a``) or dense ``(S, A, S)`` and mean rewards ``R (S, A)``::

    Q(s, a) = R(s, a) + gamma * sum_{s'} P(s' | s, a) V(s'),    V'(s) = max_a Q(s, a),
    pi(s)   = argmax_a Q(s, a)   (ties: the smallest action index, as ``np.argmax``).

The fixed point is V* (discounted, gamma < 1); with gamma = 1 and V = V_{h+1} the same sweep is
one step of finite-horizon backward induction.

How
---
* ``*_reference``: scipy/numpy, ``Q = R + gamma * (P @ V).reshape(S, A)``, then ``max``/``argmax``.
  It writes the ``(S*A,)`` product and several ``(S, A)`` temporaries.
* :func:`csr_max_sweep`: a numba kernel, ``@njit(parallel=True, cache=True, fastmath=False)``,
  that loops over states in ``prange``, over actions, and over the row's nonzeros, keeping
  ``Q(s, .)`` in registers; it writes only ``V' (S,)`` and ``pi (S,)`` (and returns the max and
  min of ``V' - V`` as parallel reductions, for the stopping rules). Three things make it about
  twice as fast as the same loop written plainly (``kernel="simple"``) without changing a bit:
  the four rows of a state are summed in lockstep (four independent add chains, four gathers in
  flight), the successors' values of the next state are prefetched (``llvm.prefetch``), and
  indices are unsigned (no negative-index wraparound code). Each row is still summed left to
  right like scipy's ``csr_matvec`` and ``fastmath=False`` forbids reassociation, so the result
  equals the reference bit for bit, whatever the thread count. The sweep is bound by the random
  reads of V (an 8 MB gather at S = 10^6), not by streaming P: see docs/benchmarks.md.
* :func:`dense_max_sweep`: the same fusion over a dense ``(S, A, S)`` array, each row a BLAS
  ``ddot`` (``np.dot`` in numba); it agrees with the BLAS ``gemv`` reference to round-off.
* Drivers: :func:`value_iteration_csr` (the planners' certified sup-norm stopping rule, or
  MacQueen's span bounds, same guarantee, far fewer sweeps on mixing chains) and
  :func:`backward_induction_csr` (H fused sweeps, optionally writing ``Q``).

Wiring (the planners call these when ``mdp.sparse``)::

    from theorylab.kernels.bellman import backward_induction_csr, value_iteration_csr
    res = value_iteration_csr(mdp.P_flat(0), mdp.reward(0), gamma, tol=tol, max_iter=max_iter,
                              V0=V0)       # res.V, res.iterations, res.delta, res.converged
    res = backward_induction_csr([mdp.P_flat(h) for h in range(H)] if mdp.stage_dependent
                                 else mdp.P_flat(0), mdp.R, H, with_q=True)  # res.V, res.Q

Bandwidth variants
------------------
A sweep reads every stored entry once: 8 bytes of float64 data plus 4 (int32) or 8 (int64)
bytes of column index. :func:`csr_arrays` can cast data to float32 (``dtype=np.float32``, 12 ->
8 bytes per entry with int32 indices); the kernel still accumulates in float64. Because the
sweep is gather-bound, float32 gained nothing reliable on the benchmark machine (between 1.2x
faster and 1.6x slower than float64 from one process to the next). The float32
model is a *different* MDP: each probability moves by at most ``2**-24`` relatively, so one
sweep moves by at most ``gamma * 2**-24 * ||V||_inf`` and the fixed point by at most
``gamma / (1 - gamma) * 2**-24 * ||V*||_inf <= gamma * 2**-24 / (1 - gamma)**2`` (rewards in
[0, 1]): 5.9e-4 absolute at gamma = 0.99 (6e-6 relative to ``V* <= 100``). The default is float64.
int32 indices (scipy's choice whenever nnz < 2**31) cost nothing in accuracy.

Complexity
----------
CSR sweep: O(nnz + S*A) time, O(S) output, no ``(S*A,)`` temporary. Dense: O(S^2 A).
Memory traffic of a CSR sweep (the byte model of docs/benchmarks.md):
``nnz * (data + index bytes) + (S*A + 1) * indptr bytes + S*A * 8 (R) + S * 8 (V)``.

Importing this module imports numba (about 0.25 s); planners import it lazily, inside the sparse
branch, so ``import theorylab`` stays fast. The first call of each kernel loads it from numba's
on-disk cache (or compiles it once, a few seconds).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from theorylab.kernels.numba_runtime import one_thread_below, prefetch

PARALLEL_MIN_NNZ = 2**20
"""Below this many stored entries (about a millisecond of one-thread work) a sweep runs on one
thread. Waking the other threads saves little there, and on a loaded machine a descheduled
worker stalls every parallel region: on a shared 2-core VM, S = 10^4 (nnz 4e5) took 20 ms per
sweep instead of 0.7 ms, and S = 4000 (nnz 1.6e5) 3.5 ms instead of 0.1 ms. On a quiet machine
two threads would halve those small sweeps (0.16 ms against 0.31 ms at S = 10^4); lower this
constant there. ``OMP_WAIT_POLICY=PASSIVE`` also removes most of the stall (docs/benchmarks.md).
In a process pool that already uses every core, set ``NUMBA_NUM_THREADS=1`` in the workers."""


# ------------------------------------------------------------------------------------------ types


class CSRArrays(NamedTuple):
    """The raw arrays of a CSR matrix ``(n_rows, n_cols)``, contiguous, ready for the kernels.

    indptr: ``(n_rows + 1,)``; indices: ``(nnz,)``, same integer dtype as indptr;
    data: ``(nnz,)`` float64 (or float32, see the module docstring). ``checked`` is True when
    :func:`csr_arrays` built it (structure verified); a hand-made one is verified on first use.
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple[int, int]
    checked: bool = False

    @property
    def nnz(self) -> int:
        return int(self.data.shape[0])

    @property
    def nbytes(self) -> int:
        return self.indptr.nbytes + self.indices.nbytes + self.data.nbytes


class SweepResult(NamedTuple):
    """One Bellman-optimality sweep: ``V (S,)``, greedy ``policy (S,)`` int64, and
    ``delta = max_s |V(s) - V_in(s)|``."""

    V: np.ndarray
    policy: np.ndarray
    delta: float


class ValueIterationResult(NamedTuple):
    """Discounted value iteration: the value ``V (S,)`` returned (the last iterate V_k, or its
    MacQueen midpoint with ``stopping="span"``), the greedy ``policy (S,)`` of the last sweep
    (greedy w.r.t. V_{k-1}), the number of sweeps k, the last ``||V_k - V_{k-1}||_inf``, whether
    the stopping rule was met, and ``error_bound``, a certified bound on ``||V - V*||_inf``."""

    V: np.ndarray
    policy: np.ndarray
    iterations: int
    delta: float
    converged: bool
    error_bound: float


class BackwardInductionResult(NamedTuple):
    """Finite horizon: ``V (H+1, S)`` with ``V[H] = 0``, ``policy (H, S)`` int64, and
    ``Q (H, S, A)`` when asked for (else None)."""

    V: np.ndarray
    policy: np.ndarray
    Q: np.ndarray | None


def csr_arrays(P, *, dtype=np.float64, index_dtype=None) -> CSRArrays:
    """The kernel view of a scipy CSR matrix/array (or a :class:`CSRArrays`).

    dtype: data dtype, float64 (default, exact) or float32 (less traffic, see module docstring).
    index_dtype: int32 or int64 for indices and indptr; default keeps scipy's (int32 whenever it
        fits). No array is copied when it already has the requested dtype and is contiguous.
    """
    if isinstance(P, CSRArrays):
        indptr, indices, data, shape, checked = P
        idx_ok = index_dtype is None or np.dtype(index_dtype) == indices.dtype
        if checked and idx_ok and data.dtype == dtype:
            return P  # built here before: no O(nnz) check again (this runs on every sweep)
    else:
        if not (sp.issparse(P) and P.format == "csr"):
            raise TypeError(f"expected a scipy CSR matrix/array or CSRArrays, got {type(P)}")
        indptr, indices, data, shape = P.indptr, P.indices, P.data, P.shape
    if dtype not in (np.float64, np.float32):
        raise ValueError(f"dtype must be np.float64 or np.float32, got {dtype}")
    idx_t = np.dtype(index_dtype) if index_dtype is not None else np.result_type(indptr, indices)
    if idx_t == np.int32 and max(int(indptr[-1]), int(shape[1])) >= 2**31:
        raise ValueError("int32 indices cannot address this matrix (nnz or columns >= 2**31)")
    # The kernels index without bounds checks: check the structure once, here (O(nnz) reads).
    if len(indptr) != shape[0] + 1 or indptr[0] != 0 or indptr[-1] != len(indices):
        raise ValueError(f"indptr does not describe a CSR matrix of shape {shape}")
    if len(data) != len(indices):
        raise ValueError(f"data has {len(data)} entries, indices {len(indices)}")
    if shape[0] and np.diff(indptr).min() < 0:
        raise ValueError("indptr must be non-decreasing")
    if len(indices) and (indices.min() < 0 or indices.max() >= shape[1]):
        raise ValueError(f"column indices must lie in [0, {shape[1]})")
    return CSRArrays(
        np.ascontiguousarray(indptr, dtype=idx_t),
        np.ascontiguousarray(indices, dtype=idx_t),
        np.ascontiguousarray(data, dtype=dtype),
        (int(shape[0]), int(shape[1])),
        True,
    )


# ------------------------------------------------------------------------------ numpy reference


def csr_max_sweep_reference(P, R: np.ndarray, V: np.ndarray, gamma: float) -> SweepResult:
    """The readable reference: ``Q = R + gamma * (P @ V).reshape(S, A)``, then max and argmax.

    P: scipy CSR ``(S*A, S)``; R: ``(S, A)``; V: ``(S,)``. Allocates ``(S*A,)`` temporaries.
    """
    S, A = R.shape
    Q = R + gamma * (P @ V).reshape(S, A)  # (S, A)
    V_new = Q.max(axis=1)  # (S,)
    return SweepResult(V_new, Q.argmax(axis=1), float(np.max(np.abs(V_new - V))))


def dense_max_sweep_reference(P: np.ndarray, R: np.ndarray, V: np.ndarray, gamma: float):
    """Reference for dense ``P (S, A, S)``: one BLAS ``gemv`` on the ``(S*A, S)`` view."""
    S, A = R.shape
    Q = R + gamma * (P.reshape(S * A, S) @ V).reshape(S, A)  # (S, A)
    V_new = Q.max(axis=1)
    return SweepResult(V_new, Q.argmax(axis=1), float(np.max(np.abs(V_new - V))))


# ------------------------------------------------------------------------------ numba kernels


# Indexing with an unsigned integer lets numba drop its negative-index wraparound (a shift, an
# and and an add per access); in the four-row loop below that code also made LLVM spill
# registers, and removing it made the sweep about 1.4x faster. Every index used here is
# non-negative: csr_arrays checks 0 <= indices < S and a non-decreasing indptr.
_u = np.uintp


@njit(inline="always")
def _prefetch_state(indptr, indices, V, s, A):
    # Prefetch V[s'] for every successor s' of state s (all its A rows): the gathers of the
    # next state overlap with the arithmetic of this one.
    for j in range(indptr[_u(s * A)], indptr[_u((s + 1) * A)]):
        prefetch(V, _u(indices[_u(j)]))


@njit(inline="always")
def _row_dot(indices, data, V, lo, hi, x):
    # x + sum_{j = lo}^{hi - 1} data[j] * V[indices[j]], left to right
    for j in range(lo, hi):
        x += data[_u(j)] * V[_u(indices[_u(j)])]
    return x


@njit(inline="always")
def _take_row(R, gamma, r, x, a, Q_out, write_q, best, best_a):
    # Q(s, a) = R[r] + gamma * x for row r = s*A + a (x its dot with V), written to Q_out when
    # write_q; returns the running (max, first argmax) over the actions so far (ties: as np.argmax).
    q = R[_u(r)] + gamma * x
    if write_q:
        Q_out[_u(r)] = q
    if a == 0 or q > best:
        return q, a
    return best, best_a


@njit(inline="always")
def _greedy_state(indptr, indices, data, R, V, gamma, A, s, Q_out, write_q):
    # max_a and argmax_a of Q(s, a) = R[s*A + a] + gamma * sum_j data[j] V[indices[j]].
    # Four rows run in lockstep over their common length, then each finishes its tail: four
    # independent add chains and four gathers in flight, while every row is still summed left
    # to right (so the result equals scipy's csr_matvec bit for bit). Ties: first action.
    best = 0.0
    best_a = 0
    a = 0
    r = s * A
    while a + 4 <= A:
        j0, j1, j2 = indptr[_u(r)], indptr[_u(r + 1)], indptr[_u(r + 2)]
        j3, end = indptr[_u(r + 3)], indptr[_u(r + 4)]
        n = min(j1 - j0, j2 - j1, j3 - j2, end - j3)
        x0 = 0.0
        x1 = 0.0
        x2 = 0.0
        x3 = 0.0
        for k in range(n):
            x0 += data[_u(j0 + k)] * V[_u(indices[_u(j0 + k)])]
            x1 += data[_u(j1 + k)] * V[_u(indices[_u(j1 + k)])]
            x2 += data[_u(j2 + k)] * V[_u(indices[_u(j2 + k)])]
            x3 += data[_u(j3 + k)] * V[_u(indices[_u(j3 + k)])]
        x0 = _row_dot(indices, data, V, j0 + n, j1, x0)
        x1 = _row_dot(indices, data, V, j1 + n, j2, x1)
        x2 = _row_dot(indices, data, V, j2 + n, j3, x2)
        x3 = _row_dot(indices, data, V, j3 + n, end, x3)
        for x in (x0, x1, x2, x3):
            best, best_a = _take_row(R, gamma, r, x, a, Q_out, write_q, best, best_a)
            a += 1
            r += 1
    while a < A:  # the remaining A % 4 rows, one at a time
        x = _row_dot(indices, data, V, indptr[_u(r)], indptr[_u(r + 1)], 0.0)
        best, best_a = _take_row(R, gamma, r, x, a, Q_out, write_q, best, best_a)
        a += 1
        r += 1
    return best, best_a


@njit(parallel=True, cache=True, fastmath=False)
def _csr_max_sweep_kernel(indptr, indices, data, R, V, gamma, A, V_out, pi_out):
    # indptr (S*A+1,), indices/data (nnz,), R (S*A,), V (S,)  ->  V_out (S,), pi_out (S,);
    # returns (max_s, min_s) of V_out[s] - V[s] (parallel reductions). No (S*A,) array is written.
    S = V_out.shape[0]
    no_q = np.empty(0)
    d_max = -np.inf
    d_min = np.inf
    for s in prange(S):
        if s + 1 < S:
            _prefetch_state(indptr, indices, V, s + 1, A)
        best, best_a = _greedy_state(indptr, indices, data, R, V, gamma, A, s, no_q, False)
        V_out[s] = best
        pi_out[s] = best_a
        d_max = max(d_max, best - V[s])
        d_min = min(d_min, best - V[s])
    return d_max, d_min


@njit(parallel=True, cache=True, fastmath=False)
def _csr_q_sweep_kernel(indptr, indices, data, R, V, gamma, A, Q_out, V_out, pi_out):
    # As _csr_max_sweep_kernel, and also writes Q_out (S*A,) (backward induction keeps Q_h).
    S = V_out.shape[0]
    for s in prange(S):
        if s + 1 < S:
            _prefetch_state(indptr, indices, V, s + 1, A)
        best, best_a = _greedy_state(indptr, indices, data, R, V, gamma, A, s, Q_out, True)
        V_out[s] = best
        pi_out[s] = best_a


@njit(parallel=True, cache=True, fastmath=False)
def _csr_max_sweep_simple(indptr, indices, data, R, V, gamma, A, V_out, pi_out):
    # The plain fused loop (states in prange, actions, the row's nonzeros), without lockstep or
    # prefetch: the readable form of _csr_max_sweep_kernel, kept for tests and the benchmark.
    S = V_out.shape[0]
    d_max = -np.inf
    d_min = np.inf
    for s in prange(S):
        best = 0.0
        best_a = 0
        for a in range(A):
            r = s * A + a
            acc = 0.0
            for j in range(indptr[r], indptr[r + 1]):  # left to right, as scipy's csr_matvec
                acc += data[j] * V[indices[j]]
            q = R[r] + gamma * acc
            if a == 0 or q > best:  # first maximiser, as np.argmax
                best = q
                best_a = a
        V_out[s] = best
        pi_out[s] = best_a
        d_max = max(d_max, best - V[s])
        d_min = min(d_min, best - V[s])
    return d_max, d_min


@njit(parallel=True, cache=True, fastmath=False)
def _dense_max_sweep_kernel(P, R, V, gamma, V_out, pi_out):
    # P (S, A, S), R (S, A), V (S,)  ->  V_out (S,), pi_out (S,); each row is one BLAS ddot.
    S, A = R.shape
    d_max = -np.inf
    d_min = np.inf
    for s in prange(S):
        best = 0.0
        best_a = 0
        for a in range(A):
            q = R[s, a] + gamma * np.dot(P[s, a], V)
            if a == 0 or q > best:
                best = q
                best_a = a
        V_out[s] = best
        pi_out[s] = best_a
        d_max = max(d_max, best - V[s])
        d_min = min(d_min, best - V[s])
    return d_max, d_min


# ------------------------------------------------------------------------------ public sweeps


def _check_sweep(shape: tuple[int, int], R: np.ndarray, V: np.ndarray) -> tuple[int, int]:
    if R.ndim != 2:
        raise ValueError(f"R must have shape (S, A), got {R.shape}")
    S, A = R.shape
    if shape != (S * A, S):
        raise ValueError(f"P must have shape (S*A, S) = ({S * A}, {S}) to match R, got {shape}")
    if V.shape != (S,):
        raise ValueError(f"V must have shape ({S},), got {V.shape}")
    return S, A


def _csr_inputs(P, R: np.ndarray, V: np.ndarray):
    """The sweep's checked inputs: P as :class:`CSRArrays`, R ``(S, A)`` and V ``(S,)`` as
    contiguous float64; returns ``(M, R, V, S, A)``."""
    M = csr_arrays(P, dtype=_data_dtype(P))
    R = np.ascontiguousarray(R, dtype=np.float64)
    V = np.ascontiguousarray(V, dtype=np.float64)
    S, A = _check_sweep(M.shape, R, V)
    return M, R, V, S, A


def _outputs(S: int, V: np.ndarray, V_out, policy_out) -> tuple[np.ndarray, np.ndarray]:
    V_out = np.empty(S) if V_out is None else V_out
    policy_out = np.empty(S, np.int64) if policy_out is None else policy_out
    if V_out.shape != (S,) or V_out.dtype != np.float64 or not V_out.flags.c_contiguous:
        raise ValueError(f"V_out must be a contiguous float64 array of shape ({S},)")
    if policy_out.shape != (S,) or policy_out.dtype != np.int64:
        raise ValueError(f"policy_out must be an int64 array of shape ({S},)")
    if np.shares_memory(V_out, V):
        raise ValueError("V_out must not overlap V (the sweep is Jacobi, not Gauss-Seidel)")
    return V_out, policy_out


def csr_max_sweep(
    P,
    R: np.ndarray,
    V: np.ndarray,
    gamma: float,
    *,
    V_out: np.ndarray | None = None,
    policy_out: np.ndarray | None = None,
    kernel: Literal["fused", "simple"] = "fused",
) -> SweepResult:
    """One fused Bellman-optimality sweep over CSR transitions (numba, parallel over states).

    P: scipy CSR ``(S*A, S)`` or :class:`CSRArrays` (float64 or float32 data); R: ``(S, A)``;
    V: ``(S,)``; V_out / policy_out: optional preallocated ``(S,)`` float64 / int64 outputs
    (must not overlap V). Returns :class:`SweepResult`; O(nnz + S*A) time, no ``(S*A,)``
    temporary. Equal to :func:`csr_max_sweep_reference` (bit for bit with float64 data).
    kernel: ``"fused"`` (four rows in lockstep, next state prefetched) or ``"simple"`` (the
    plain loop; same numbers, slower; kept for comparison).
    Uses numba's current thread count (``numba.set_num_threads``), or one thread below
    :data:`PARALLEL_MIN_NNZ` stored entries. A scipy ``P`` is checked (O(nnz), about 10 ms at
    nnz = 4e7) on every call; for repeated sweeps pass ``csr_arrays(P)``, checked once.
    """
    M, R, V, S, A = _csr_inputs(P, R, V)
    V_out, policy_out = _outputs(S, V, V_out, policy_out)
    if kernel not in ("fused", "simple"):
        raise ValueError(f"kernel must be 'fused' or 'simple', got {kernel!r}")
    sweep = _csr_max_sweep_kernel if kernel == "fused" else _csr_max_sweep_simple
    with one_thread_below(M.nnz, PARALLEL_MIN_NNZ):
        d_max, d_min = sweep(
            M.indptr, M.indices, M.data, R.reshape(S * A), V, float(gamma), A, V_out, policy_out
        )
    return SweepResult(V_out, policy_out, float(max(d_max, -d_min)))


def csr_q_sweep(P, R: np.ndarray, V: np.ndarray, gamma: float) -> tuple[np.ndarray, SweepResult]:
    """Like :func:`csr_max_sweep`, and also returns ``Q (S, A)`` (one more ``(S*A,)`` write)."""
    M, R, V, S, A = _csr_inputs(P, R, V)
    Q = np.empty((S, A))
    V_out, pi = np.empty(S), np.empty(S, np.int64)
    with one_thread_below(M.nnz, PARALLEL_MIN_NNZ):
        _csr_q_sweep_kernel(
            M.indptr, M.indices, M.data, R.reshape(S * A), V, float(gamma), A,
            Q.reshape(S * A), V_out, pi,
        )  # fmt: skip
    return Q, SweepResult(V_out, pi, float(np.max(np.abs(V_out - V))))


def dense_max_sweep(P: np.ndarray, R: np.ndarray, V: np.ndarray, gamma: float) -> SweepResult:
    """One fused sweep over dense ``P (S, A, S)`` (numba, parallel over states, BLAS ddot rows).

    Equal to :func:`dense_max_sweep_reference` up to round-off (a different summation order than
    BLAS gemv). O(S^2 A) time, no ``(S*A,)`` temporary.
    """
    P = np.ascontiguousarray(P, dtype=np.float64)
    R = np.ascontiguousarray(R, dtype=np.float64)
    V = np.ascontiguousarray(V, dtype=np.float64)
    S, A = R.shape
    if P.shape != (S, A, S):
        raise ValueError(f"P must have shape (S, A, S) = ({S}, {A}, {S}), got {P.shape}")
    if V.shape != (S,):
        raise ValueError(f"V must have shape ({S},), got {V.shape}")
    V_out, pi = np.empty(S), np.empty(S, np.int64)
    with one_thread_below(P.size, PARALLEL_MIN_NNZ):
        d_max, d_min = _dense_max_sweep_kernel(P, R, V, float(gamma), V_out, pi)
    return SweepResult(V_out, pi, float(max(d_max, -d_min)))


def _data_dtype(P):
    d = P.data.dtype if isinstance(P, CSRArrays) else P.dtype
    return np.float32 if d == np.float32 else np.float64


# ------------------------------------------------------------------------------ planners


def value_iteration_csr(
    P,
    R: np.ndarray,
    gamma: float,
    *,
    tol: float = 1e-10,
    max_iter: int = 1_000_000,
    V0: np.ndarray | None = None,
    stopping: Literal["sup", "span"] = "span",
) -> ValueIterationResult:
    """Discounted value iteration over CSR transitions with the fused kernel.

    stopping="sup", the contraction rule: stop at the
    first k with ``||V_k - V_{k-1}||_inf <= tol * (1 - gamma) / gamma``, which certifies
    ``||V_k - V*||_inf <= gamma / (1 - gamma) ||V_k - V_{k-1}||_inf <= tol``; V = V_k.

    stopping="span" (the default, as in the planners, algorithms/planning/value_iteration.py)
    uses MacQueen's bounds (Puterman 1994, Theorem 6.6.3): with
    ``D = V_k - V_{k-1}``, ``V_k + c min(D) <= V* <= V_k + c max(D)``, ``c = gamma / (1 - gamma)``.
    It returns the midpoint ``V = V_k + c (max D + min D) / 2`` and stops at the first k with
    ``c (max D - min D) / 2 <= tol``, again certifying ``||V - V*||_inf <= tol``. The span of D
    contracts as fast as the chain mixes, not merely by gamma per sweep, so on well-mixing MDPs
    this takes far fewer sweeps (random-sparse, gamma = 0.99, tol = 1e-6: 1812 -> about 20).

    Two ``(S,)`` buffers are swapped between sweeps; nothing of size ``S*A`` is allocated.
    P: CSR ``(S*A, S)`` or :class:`CSRArrays`; R: ``(S, A)``. Returns
    :class:`ValueIterationResult` with the certified ``error_bound``.
    """
    if not 0.0 <= gamma < 1.0:
        raise ValueError(f"gamma must lie in [0, 1), got {gamma}")
    if stopping not in ("sup", "span"):
        raise ValueError(f"stopping must be 'sup' or 'span', got {stopping!r}")
    M = csr_arrays(P, dtype=_data_dtype(P))
    R = np.ascontiguousarray(R, dtype=np.float64)
    S, A = R.shape
    V = np.zeros(S) if V0 is None else np.array(V0, dtype=np.float64)
    _check_sweep(M.shape, R, V)
    R_flat = R.reshape(S * A)
    c = gamma / (1 - gamma)
    threshold = tol * (1 - gamma) / gamma if gamma > 0 else np.inf  # the planners' expression
    V_next, pi = np.empty(S), np.empty(S, np.int64)
    d_max = d_min = np.inf
    done, iterations = False, 0
    with one_thread_below(M.nnz, PARALLEL_MIN_NNZ):
        while iterations < max_iter and not done:
            d_max, d_min = _csr_max_sweep_kernel(
                M.indptr, M.indices, M.data, R_flat, V, float(gamma), A, V_next, pi
            )
            V, V_next = V_next, V
            iterations += 1
            if stopping == "sup":
                done = max(d_max, -d_min) <= threshold
            else:
                done = c * (d_max - d_min) / 2 <= tol
    delta = float(max(d_max, -d_min))
    if stopping == "span":
        bound = c * (d_max - d_min) / 2
        if iterations:
            V = V + c * (d_max + d_min) / 2  # the MacQueen midpoint
    else:
        bound = c * delta
    return ValueIterationResult(V, pi, iterations, delta, bool(done), float(bound))


def backward_induction_csr(
    P,
    R: np.ndarray,
    H: int,
    *,
    with_q: bool = False,
) -> BackwardInductionResult:
    """Finite-horizon backward induction, ``V_H = 0``, one fused sweep (gamma = 1) per stage.

    P: one CSR ``(S*A, S)`` (stationary) or a sequence of H of them (stage h uses ``P[h]``);
    R: ``(S, A)`` or ``(H, S, A)``. with_q: also return ``Q (H, S, A)`` (the planners'
    :class:`Solution` carries it; costs one ``(S*A,)`` write per stage).
    Returns :class:`BackwardInductionResult`; O(H * (nnz + S*A)) time.
    """
    stages = list(P) if isinstance(P, Sequence) and not isinstance(P, CSRArrays) else [P]
    mats = [csr_arrays(m, dtype=_data_dtype(m)) for m in stages]
    if len(mats) not in (1, H):
        raise ValueError(f"got {len(mats)} transition matrices for horizon H={H}")
    R = np.asarray(R, dtype=np.float64)
    S, A = R.shape[-2:]
    if R.ndim == 3 and R.shape[0] != H:
        raise ValueError(f"stage-dependent R has {R.shape[0]} stages, horizon is {H}")
    V = np.zeros((H + 1, S))
    policy = np.empty((H, S), np.int64)
    Q = np.empty((H, S, A)) if with_q else None
    with one_thread_below(mats[0].nnz, PARALLEL_MIN_NNZ):
        for h in range(H - 1, -1, -1):
            M = mats[h if len(mats) > 1 else 0]
            R_h = np.ascontiguousarray(R[h] if R.ndim == 3 else R)  # (S, A)
            _check_sweep(M.shape, R_h, V[h + 1])
            args = (M.indptr, M.indices, M.data, R_h.reshape(S * A), V[h + 1], 1.0, A)
            if with_q:
                _csr_q_sweep_kernel(*args, Q[h].reshape(S * A), V[h], policy[h])
            else:
                _csr_max_sweep_kernel(*args, V[h], policy[h])
    return BackwardInductionResult(V, policy, Q)
