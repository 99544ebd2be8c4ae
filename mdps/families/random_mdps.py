"""Random Dirichlet MDPs, dense and sparse: the scale benchmark of the planning kernels.

What
----
``random`` (dense)
    ``P(. | s, a) ~ Dirichlet(alpha * 1_S)`` independently for every pair, mean rewards
    ``r(s, a) ~ Uniform[0, 1]``. Transitions are a dense ``(S, A, S)`` array, so this family is
    for small S (it refuses models above :data:`MAX_DENSE_BYTES`).
``random-sparse``
    every row ``(s, a)`` has exactly ``b`` distinct successors, drawn uniformly without
    replacement from the S states, with weights ``Dirichlet(alpha * 1_b)``; rewards as above.
    Transitions are CSR ``(S*A, S)`` (row ``s*A + a``) in canonical form (sorted indices, no
    duplicates), float64 data, int32 indices and indptr whenever ``nnz < 2**31``.

Both start in state 0 (``mu0 = e_0``; by symmetry every state is alike) and carry the horizon H
and, when ``gamma > 0``, the discount gamma (``gamma = 0`` means "no discount", as in RiverSwim).

How
---
Everything is vectorised over rows; no Python loop runs over states.

* Dirichlet rows are normalised Gamma draws, written in place into the final ``data`` array. For
  ``alpha < 1`` a whole row of Gamma(alpha) draws can underflow to 0, so the draws are made in
  log space instead, ``log G_alpha = log G_(alpha+1) + log(U) / alpha`` (Marsaglia and Tsang's
  boost, exact in distribution), and normalised with the row maximum subtracted.
* Successors, when ``b * b <= 2 * S`` (the usual sparse regime): draw b states with replacement
  for every row into the final int32 ``indices`` array, sort each row, and redraw the rows that
  contain a repeat until none does. Conditioning i.i.d. uniform draws on being distinct gives
  exactly the uniform distribution over b-subsets; a row repeats with probability about
  ``b^2 / (2 S)`` (5e-5 for S = 10^6, b = 10), so one extra round on a handful of rows is
  typical. When ``b * b > 2 * S`` rejection would loop, and each row instead keeps the b
  smallest of S i.i.d. uniform keys (``argpartition``), in blocks of rows so that the keys take
  at most about 64 MB at a time.
* Random stream (part of the family's definition): ``numpy.random.default_rng(seed)`` draws the
  successors (all rounds), then the Dirichlet weights, then the rewards ``(S, A)``.

Complexity
----------
``random-sparse``: O(nnz log b) time and O(nnz) memory (nnz = S*A*b): the arrays handed to
TabularMDP (data 8 B, indices 4 B per entry, indptr 4 B per row) plus O(S*A) temporaries
(about a tenth of the model). S = 10^6, A = 4, b = 10 (nnz = 4*10^7, a 528 MB model with R)
builds in 0.8 s on a 2-core VM, validation included, and in 1.5 to 3 s when the process first
has to fault in its memory; tracemalloc peak 956 MB, TabularMDP's rollout CDF included (see
docs/benchmarks.md).
``random``: O(S^2 A) time and memory.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from theorylab.errors import InvalidMDPError
from theorylab.mdps.registry import register
from theorylab.mdps.sizes import MAX_DENSE_BYTES
from theorylab.mdps.tabular import TabularMDP

_KEY_BLOCK_BYTES = 64 * 2**20  # keys held at once by the argpartition successor scheme


def _check_common(family: str, S: int, A: int, H: int, gamma: float, alpha: float) -> None:
    if S < 1 or A < 1:
        raise InvalidMDPError(f"{family} needs S >= 1 and A >= 1, got S={S}, A={A}")
    if H < 1:
        raise InvalidMDPError(f"{family} needs H >= 1, got H={H}")
    if not 0.0 <= gamma < 1.0:
        raise InvalidMDPError(f"{family} needs gamma in [0, 1) (0 = no discount), got {gamma}")
    if not (alpha > 0 and np.isfinite(alpha)):
        raise InvalidMDPError(f"{family} needs a Dirichlet concentration alpha > 0, got {alpha}")


def _gamma_part(gamma: float) -> str:
    """``",gamma=0.9"`` in a name when there is a discount; nothing for gamma = 0 (none)."""
    return f",gamma={float(gamma)!r}" if gamma > 0 else ""


def dirichlet_rows(rng: np.random.Generator, out: np.ndarray, alpha: float) -> np.ndarray:
    """Fill ``out (n, k)`` in place with n independent ``Dirichlet(alpha * 1_k)`` rows.

    O(n k) time, O(n) extra memory. Rows sum to 1 within a few ulps.
    """
    if alpha >= 1.0:
        rng.standard_gamma(alpha, out=out)  # alpha == 1 is the exponential (ziggurat)
    else:
        # log G_alpha = log G_(alpha+1) + log(U) / alpha; then exp(x - rowmax): no underflow.
        rng.standard_gamma(alpha + 1.0, out=out)
        np.log(out, out=out)
        flat = out.reshape(-1)  # the uniforms come in blocks (same stream as one call)
        u = np.empty(min(flat.size, 2**20))
        for lo in range(0, flat.size, u.size):
            uu = u[: min(u.size, flat.size - lo)]
            rng.random(out=uu)
            np.log(uu, out=uu)
            uu /= alpha
            flat[lo : lo + uu.size] += uu
        out -= out.max(axis=1, keepdims=True)
        np.exp(out, out=out)
    out /= out.sum(axis=1, keepdims=True)  # (n, 1) row sums
    return out


def _successors_rejection(rng: np.random.Generator, n: int, b: int, S: int, dtype) -> np.ndarray:
    """``(n, b)`` sorted uniform b-subsets of ``range(S)``, by whole-row rejection."""
    idx = rng.integers(0, S, size=(n, b), dtype=dtype)
    idx.sort(axis=1)
    redo = np.flatnonzero((idx[:, 1:] == idx[:, :-1]).any(axis=1))  # rows with a repeat
    while redo.size:
        fresh = rng.integers(0, S, size=(redo.size, b), dtype=idx.dtype)
        fresh.sort(axis=1)
        idx[redo] = fresh
        redo = redo[(fresh[:, 1:] == fresh[:, :-1]).any(axis=1)]
    return idx


def _successors_keys(rng: np.random.Generator, n: int, b: int, S: int, dtype) -> np.ndarray:
    """``(n, b)`` sorted uniform b-subsets: each row keeps the b smallest of S uniform keys."""
    idx = np.empty((n, b), dtype=dtype)
    block = max(1, _KEY_BLOCK_BYTES // (8 * S))
    for lo in range(0, n, block):  # blocks of rows, not states one by one
        keys = rng.random((min(block, n - lo), S))
        part = np.argpartition(keys, b - 1, axis=1)[:, :b] if b < S else np.argsort(keys, 1)
        part.sort(axis=1)
        idx[lo : lo + part.shape[0]] = part
    return idx


def random_sparse_transitions(
    S: int, A: int, b: int, alpha: float, rng: np.random.Generator
) -> sp.csr_array:
    """CSR ``(S*A, S)`` with b distinct uniform successors per row and Dirichlet weights.

    Canonical form (sorted indices, no duplicates); float64 data; int32 indices/indptr when
    ``S*A*b < 2**31`` (scipy then keeps the arrays without a copy). O(nnz) memory.
    """
    n, nnz = S * A, S * A * b
    index_dtype = np.int32 if max(nnz, S) < 2**31 else np.int64
    successors = _successors_rejection if b * b <= 2 * S else _successors_keys
    indices = successors(rng, n, b, S, index_dtype)  # (S*A, b), becomes P.indices
    data = np.empty((n, b))  # (S*A, b), becomes P.data
    dirichlet_rows(rng, data, alpha)
    indptr = np.arange(0, nnz + 1, b, dtype=index_dtype)  # (S*A + 1,)
    return sp.csr_array((data.reshape(nnz), indices.reshape(nnz), indptr), shape=(n, S))


@register("random")
def random_mdp(
    S: int = 10,
    A: int = 2,
    H: int = 10,
    gamma: float = 0.0,
    alpha: float = 1.0,
    seed: int = 0,
) -> TabularMDP:
    """Random dense MDP: P(.|s,a) ~ Dirichlet(alpha 1_S), rewards ~ U[0,1] (small S only)."""
    _check_common("random", S, A, H, gamma, alpha)
    need = 8 * S * A * S
    if need > MAX_DENSE_BYTES:
        raise InvalidMDPError(
            f"random: a dense (S, A, S) = ({S}, {A}, {S}) model needs {need / 2**30:.1f} GiB "
            f"(limit {MAX_DENSE_BYTES / 2**30:.0f} GiB); use 'random-sparse' with b successors"
        )
    rng = np.random.default_rng(seed)
    P = np.empty((S, A, S))
    dirichlet_rows(rng, P.reshape(S * A, S), alpha)
    R = rng.random((S, A))
    return TabularMDP(
        P,
        R,
        horizon=H,
        gamma=gamma if gamma > 0 else None,
        name=f"random:S={S},A={A},H={H}{_gamma_part(gamma)},alpha={alpha},seed={seed}",
    )


@register("random-sparse")
def random_sparse_mdp(
    S: int = 1000,
    A: int = 4,
    b: int = 10,
    H: int = 10,
    gamma: float = 0.0,
    alpha: float = 1.0,
    seed: int = 0,
) -> TabularMDP:
    """Random sparse MDP: b distinct successors per (s, a), Dirichlet(alpha 1_b) weights."""
    _check_common("random-sparse", S, A, H, gamma, alpha)
    if not 1 <= b <= S:
        raise InvalidMDPError(f"random-sparse needs 1 <= b <= S successors, got b={b}, S={S}")
    rng = np.random.default_rng(seed)
    P = random_sparse_transitions(S, A, b, alpha, rng)
    R = rng.random((S, A))
    return TabularMDP(
        P,
        R,
        horizon=H,
        gamma=gamma if gamma > 0 else None,
        name=(
            f"random-sparse:S={S},A={A},b={b},H={H}{_gamma_part(gamma)},alpha={alpha},seed={seed}"
        ),
    )
