r"""The empirical model of an offline dataset, batched over seeds, without densifying P-hat.

Every algorithm in this package reads the data through sufficient statistics of one *block* of
samples (one stage h of finite-horizon data, one fold of VI-LCB, or all samples):

    n(s, a)          = sum_i w_i 1{(s_i, a_i) = (s, a)}                          counts
    r_hat(s, a)      = sum_i w_i r_i 1{...} / n(s, a)                              mean reward
    (P_hat V)(s, a)  = sum_i w_i V(s'_i) 1{...} / n(s, a)                          next-state mean

(w_i = 1 unless the dataset is weighted; pairs with n = 0 have r_hat = 0 and P_hat V = 0: the
empty row, the convention of the VI-LCB code [V], theory.md 3.2). A block keeps the samples as
flat index arrays over the seed axis -- ``sa = b*S*A + s*A + a`` and ``nxt = b*S + s'`` -- and every
statistic is one ``np.bincount`` over them, so a backup costs O(samples in the block), a whole
backward induction O(B N), and P_hat (which can have up to S*A*S entries per stage and seed) is
never formed. Seed b's samples enter ``bincount`` in their original order whether b runs alone or
inside a batch, so batched results are bit-identical to single-seed ones.

Discounted algorithms that iterate to convergence on all samples (naive VI, behaviour cloning's
evaluation) instead compress the data once into a CSR matrix ``P_hat (B*S*A, B*S)`` (duplicates
summed: at most min(N, S*A*S) entries per seed) and iterate with sparse products.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from theorylab.algorithms.offline.dataset import EmptyDatasetError, OfflineDataset


@dataclass
class SampleBlock:
    """A block of transitions of all B seeds, as flat arrays of length n (module docstring).

    sa: ``(n,)`` flat pair index ``b*S*A + s*A + a``; nxt: ``(n,)`` flat next-state index
    ``b*S + s'``; reward: ``(n,)``; weight: ``(n,)`` or None; seed: ``(n,)`` the batch row of
    each sample.
    """

    B: int
    S: int
    A: int
    sa: np.ndarray
    nxt: np.ndarray
    reward: np.ndarray
    weight: np.ndarray | None
    seed: np.ndarray

    @property
    def size(self) -> int:
        return int(self.sa.size)

    def sums(self, values: np.ndarray | None = None) -> np.ndarray:
        """``sum_i w_i values_i`` per (b, s, a) -> ``(B, S, A)`` (values None: the counts)."""
        if values is None:
            wv = self.weight
        else:
            wv = values if self.weight is None else self.weight * values
        out = np.bincount(self.sa, weights=wv, minlength=self.B * self.S * self.A)
        return out.astype(np.float64, copy=False).reshape(self.B, self.S, self.A)

    def counts(self) -> np.ndarray:
        """``n(s, a)`` per seed, ``(B, S, A)`` float64 (weighted when the data is weighted)."""
        return self.sums(None)

    def next_values(self, V: np.ndarray) -> np.ndarray:
        """``V_b(s'_i)`` for every sample: V ``(B, S)`` -> ``(n,)``."""
        return V.reshape(-1)[self.nxt]

    def means(self, values: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Per-pair empirical mean of ``values (n,)``: ``sums / n`` with 0 where n = 0."""
        return self.sums(values) / np.maximum(counts, _TINY)

    def subset(self, mask: np.ndarray) -> SampleBlock:
        return SampleBlock(
            self.B,
            self.S,
            self.A,
            self.sa[mask],
            self.nxt[mask],
            self.reward[mask],
            None if self.weight is None else self.weight[mask],
            self.seed[mask],
        )


_TINY = 1e-300  # n = 0 gives sums = 0, and 0 / tiny = 0


def _flat_block(ds: OfflineDataset, cols) -> SampleBlock:
    """Block of the columns ``cols`` (a slice or an index array) of every seed."""
    B, S, A = ds.n_seeds, ds.S, ds.A
    s = ds.states[:, cols]
    a = ds.actions[:, cols]
    b = np.broadcast_to(np.arange(B, dtype=np.int64)[:, None], s.shape)
    return SampleBlock(
        B,
        S,
        A,
        sa=((b * S + s) * A + a).ravel(),
        nxt=(b * S + ds.next_states[:, cols]).ravel(),
        reward=np.ascontiguousarray(ds.rewards[:, cols]).ravel(),
        weight=None if ds.weights is None else np.ascontiguousarray(ds.weights[:, cols]).ravel(),
        seed=b.ravel(),
    )


def require_data(ds: OfflineDataset, who: str) -> None:
    """Raise :class:`EmptyDatasetError` when a dataset has no (positively weighted) transitions."""
    if ds.N == 0 or (ds.weights is not None and not np.all(ds.weights.sum(axis=1) > 0)):
        raise EmptyDatasetError(
            f"{who}: the dataset has no transitions (N = {ds.N}); an offline algorithm needs data"
        )


def all_samples(ds: OfflineDataset) -> SampleBlock:
    """Every sample of every seed in one block (stages ignored)."""
    return _flat_block(ds, slice(None))


def stage_blocks(ds: OfflineDataset) -> list[SampleBlock]:
    """One block per stage h = 0..H-1 of finite-horizon data.

    Trajectory data is episode-major (sample k*H + h is stage h), so stage h is the strided slice
    ``h::H``; sampled data is grouped with one stable (radix) sort of the stage index, which keeps
    every seed's samples in their original order.
    """
    H = ds.horizon
    if H is None:
        raise ValueError("stage_blocks needs finite-horizon data")
    if ds.kind == "trajectories" and ds.n_episodes is not None and ds.N == ds.n_episodes * H:
        return [_flat_block(ds, slice(h, None, H)) for h in range(H)]
    full = _flat_block(ds, slice(None))
    stage = ds.stages.ravel()
    order = np.argsort(stage.astype(np.int16 if H < 2**15 else np.int64), kind="stable")
    bounds = np.searchsorted(stage[order], np.arange(H + 1))
    return [full.subset(order[bounds[h] : bounds[h + 1]]) for h in range(H)]


def fold_bounds(n: int, folds: int) -> np.ndarray:
    """Boundaries of ``folds`` contiguous folds of n rows, sizes differing by at most one."""
    return np.array([(n * t) // folds for t in range(folds + 1)], dtype=np.int64)


def fold_blocks(ds: OfflineDataset, folds: int) -> list[SampleBlock]:
    """``folds`` contiguous blocks of every seed's rows (same boundaries for every seed).

    Unweighted i.i.d. samples split contiguously are a uniformly random split. Weighted rows
    (population data) stand for many samples each: every fold gets every row with weight
    ``w / folds`` (the expected split)."""
    if ds.weights is not None:
        block = all_samples(ds)
        block.weight = block.weight / folds
        return [block] * folds
    edges = fold_bounds(ds.N, folds)
    return [_flat_block(ds, slice(edges[t], edges[t + 1])) for t in range(folds)]


# ------------------------------------------------------------------------------ CSR model
@dataclass
class CompressedModel:
    """The empirical model of a block as sparse matrices, for iterative (discounted) planning.

    P_hat: CSR ``(B*S*A, B*S)`` with rows ``b*S*A + s*A + a`` summing to 1 (empty when n = 0);
    r_hat, counts: ``(B, S, A)``.
    """

    B: int
    S: int
    A: int
    P_hat: sp.csr_array
    r_hat: np.ndarray
    counts: np.ndarray

    def expected_next(self, V: np.ndarray) -> np.ndarray:
        """``(P_hat V)(b, s, a)`` for ``V (B, S)`` -> ``(B, S, A)``."""
        return (self.P_hat @ V.reshape(-1)).reshape(self.B, self.S, self.A)


def compress(block: SampleBlock) -> CompressedModel:
    """Sum duplicate (b, s, a, s') rows into a CSR P_hat (per-seed row order is preserved)."""
    B, S, A = block.B, block.S, block.A
    counts = block.counts()
    w = np.ones(block.size) if block.weight is None else block.weight
    P = sp.coo_array((w, (block.sa, block.nxt)), shape=(B * S * A, B * S)).tocsr()
    P.sum_duplicates()
    inv = 1.0 / np.maximum(counts.reshape(-1), _TINY)
    P = sp.csr_array(sp.diags_array(inv) @ P)
    return CompressedModel(B, S, A, P, block.means(block.reward, counts), counts)
