"""Batched empirical model of an episodic tabular MDP: visit counts and P-hat, one per seed.

Model-based online algorithms (UCBVI, greedy certainty equivalence, PSRL's posterior counts, ...)
all keep the same statistics of the transitions they have seen. This module keeps them for B
independent seeds at once, with a leading seed axis, and updates them from a whole episode of every
seed in a few vectorised calls (no Python loop over seeds or steps).

Two layouts (``per_step`` chooses):

* stationary (``per_step=False``; Azar et al. 2017 pool all steps h):
  ``N_sas: (B, S, A, S)``, ``N_sa: (B, S, A)``, ``R_sum: (B, S, A)``, ``P_hat: (B, S, A, S)``;
* per step (``per_step=True``; AJKS Ch. 7 estimate one model per step h):
  ``N_sas: (B, H, S, A, S)``, ``N_sa: (B, H, S, A)``, ``R_sum: (B, H, S, A)``,
  ``P_hat: (B, H, S, A, S)``.

In both layouts ``N_hs: (B, H+1, S)`` counts the visits of state s at step h (0-based; h = H is
the state reached after the last action, Azar et al.'s x_{k,H+1}); UCBVI-BF needs it.

Definitions (every count is a float so that pseudo-counts can be injected, see ``set_counts``):

    N(s,a,s') = #{observed transitions (s, a, s')}          N(s,a) = sum_{s'} N(s,a,s')
    P_hat(s'|s,a) = N(s,a,s') / N(s,a)     if N(s,a) > 0
    P_hat(.|s,a)  = 0 (a row of zeros)     if N(s,a) = 0    <- unvisited rows are NOT a distribution
    r_hat(s,a)    = R_sum(s,a) / N(s,a)    if N(s,a) > 0, else 0

An algorithm must treat unvisited pairs explicitly (``visited`` is the mask): UCBVI sets their Q to
H, a greedy planner may use a default, PSRL adds its prior. ``expected(F)`` is therefore 0 on an
unvisited row.

Exact batch invariance: every operation is elementwise per seed, a scatter-add whose per-cell
order depends only on that seed's own trajectory, or ``np.matmul`` over the seed axis (one BLAS call
per seed on a (S*A, S) block), so seed i gets bit-identical statistics alone or inside a batch.

Sparse products (an acceleration, same mathematics): a run observes at most B*K*H distinct
transitions, and chains/RiverSwim have 1-3 successors per pair, so for S >= ``SPARSE_MIN_STATES``
(or ``sparse=True``) ``expected`` multiplies by a block-diagonal CSR copy of P_hat that holds only
the observed entries (shape (B*S*A, B*S) per model stage, rebuilt from the sorted list of observed
cells after each update), in O(nnz) instead of O(B*S*A*S). scipy's CSR product sums each row
sequentially in column order, so it too is bit-identical alone or batched; it can differ from the
dense BLAS product in the last bits, which is why the choice depends only on S, never on the data.
Change the statistics only through ``update`` and ``set_counts`` (they keep the CSR copy in step);
read the arrays freely.

Memory: the dense layouts hold two float64 arrays of B*[H*]*S*A*S entries (N_sas and P_hat).
Construction refuses more than ``MAX_MODEL_BYTES`` (2 GiB by default; raise it by assigning the
module attribute or passing ``max_bytes``) with :class:`ModelTooLargeError` rather than swapping.

Sparse storage (``storage="sparse"``; ``"auto"`` picks it exactly when the dense layout would
exceed the cap): no array of size S*A*S is ever allocated. The observed transitions are kept as a
sorted list of flat cells (seed, [h,] s, a, s') with their counts (a sorted COO, ``observed()``),
beside the dense ``N_sa``, ``R_sum`` (B, [H,] S, A) and ``N_hs`` (B, H+1, S). Products always go
through the block-diagonal CSR of the observed entries, so a backup costs O(nnz_observed + B*S*A)
and memory is O(B*[H*]S*A + observed cells) (a run observes at most B*K*H cells). The numbers are
those of the dense layout's sparse path, bit for bit (same cells, same counts, same CSR). ``N_sas``
and ``P_hat`` still read as dense arrays, materialised on access when they fit under the cap (a
test and small-model convenience), else :class:`ModelTooLargeError` points to ``observed()``.

Backends (``backend=``, default "numpy"): the products (``expected``) and the count scatter-adds
run through :mod:`theorylab.backends`; everything else (row refreshes, CSR bookkeeping) is numpy.
The numpy backend gives the numbers above bit for bit; numba gives them bit for bit on the CSR
path and to round-off on the dense BLAS path; torch to round-off (see theorylab/backends/base.py).
The statistics stay numpy arrays on the host whatever the backend, since other agents read them.
"""

from __future__ import annotations

import numpy as np

from theorylab.backends import Backend, get_backend

MAX_MODEL_BYTES = 2 * 2**30
SPARSE_MIN_STATES = 64


def resolve_stage_dependence(env, stage_dependent: bool | None, algorithm: str) -> bool:
    """Whether an agent keeps one model per stage h: by default (None) the environment's setting.

    Pooling the counts over h estimates a stationary P; on a stage-dependent MDP that is a model
    class without the true MDP in it, so ``False`` there is refused with a clear error (UCBVI and
    ICVaR-RM refuse stage-dependent MDPs altogether). ``True`` on a stationary MDP is allowed (a
    per-stage model is still consistent, only less efficient).
    """
    if stage_dependent is None:
        return bool(env.stage_dependent)
    if not stage_dependent and env.stage_dependent:
        raise ValueError(
            f"{algorithm}: the MDP is stage-dependent (P_h changes with h) but "
            "stage_dependent=False would pool the counts over h; leave stage_dependent unset "
            "(it follows the MDP) or pass stage_dependent=True"
        )
    return bool(stage_dependent)


class ModelTooLargeError(MemoryError):
    """The dense empirical model for this many seeds, states and steps would exceed the cap."""


class EmpiricalModel:
    """Counts and empirical transition model of B seeds (see the module docstring).

    Parameters
    ----------
    n_seeds, S, A, H : sizes (H is the episode length; trajectories must have length H).
    per_step : keep one model per step h (AJKS) instead of pooling all steps (Azar et al.).
    max_bytes : refuse to allocate more than this (default: the module's ``MAX_MODEL_BYTES``).
    sparse : multiply through a CSR copy of the observed entries (default: S >= SPARSE_MIN_STATES;
        always with sparse storage).
    storage : "dense" (default: N_sas and P_hat as arrays), "sparse" (observed cells only), or
        "auto" (dense when it fits under ``max_bytes``, else sparse).
    backend : a name for :func:`theorylab.backends.get_backend` or a Backend (default "numpy").
    """

    def __init__(
        self,
        n_seeds: int,
        S: int,
        A: int,
        H: int,
        *,
        per_step: bool = False,
        max_bytes: int | None = None,
        sparse: bool | None = None,
        storage: str = "dense",
        backend: str | Backend = "numpy",
    ) -> None:
        self.n_seeds, self.S, self.A, self.H = int(n_seeds), int(S), int(A), int(H)
        self.per_step = bool(per_step)
        self.backend = get_backend(backend)
        B = self.n_seeds
        lead = (B, H) if self.per_step else (B,)
        n_entries = int(np.prod(lead)) * S * A * S
        cap = MAX_MODEL_BYTES if max_bytes is None else int(max_bytes)
        self._cap = cap
        needed = 2 * 8 * n_entries  # N_sas and P_hat, float64
        if storage not in ("dense", "sparse", "auto"):
            raise ValueError(f"storage must be 'dense', 'sparse' or 'auto', got {storage!r}")
        if storage == "auto":
            storage = "dense" if needed <= cap else "sparse"
        self.storage = storage
        if storage == "dense" and needed > cap:
            layout = "(B, H, S, A, S)" if self.per_step else "(B, S, A, S)"
            raise ModelTooLargeError(
                f"the dense empirical model {layout} = {(*lead, S, A, S)} needs "
                f"{needed / 2**30:.2f} GiB (counts + P_hat), above the cap of "
                f"{cap / 2**30:.2f} GiB; "
                "run fewer seeds per batch, use storage='sparse' (observed transitions only), "
                "or raise theorylab.algorithms.online.empirical_model.MAX_MODEL_BYTES"
            )
        if storage == "sparse":
            if sparse is False:
                raise ValueError(
                    "sparse storage multiplies through the CSR: sparse=False conflicts"
                )
            if n_entries >= 2**63:
                raise ModelTooLargeError(f"{n_entries} cells do not fit an int64 flat index")
            self._N_sas = None
            self._P_hat = None
            self._counts = np.empty(0)  # counts of the observed cells, aligned with _observed
        else:
            self._N_sas = np.zeros((*lead, S, A, S))  # N_sas: (B, [H,] S, A, S)
            self._P_hat = np.zeros((*lead, S, A, S))  # P_hat: (B, [H,] S, A, S), 0 if unvisited
        self.N_sa = np.zeros((*lead, S, A))  # N_sa: (B, [H,] S, A)
        self.R_sum = np.zeros((*lead, S, A))  # R_sum: (B, [H,] S, A)
        self.N_hs = np.zeros((B, H + 1, S))  # N_hs: (B, H+1, S) state visits per step
        self.sparse = storage == "sparse" or (S >= SPARSE_MIN_STATES if sparse is None else sparse)
        self._observed = np.empty(0, np.int64)  # sorted flat indices of N_sas > 0
        self._csr: list = []  # one (B*S*A, B*S) block-diagonal P_hat per model stage
        self._compact: list = []  # sparse storage: (visited rows, (n_rows, B*S) CSR) per stage
        self._P_native = None  # the backend's view of P_hat (dense products)
        if self.sparse:
            self._rebuild_csr()
        else:
            self._P_native = self.backend.asarray(self._P_hat)

    # ------------------------------------------------------------------ statistics
    @property
    def N_sas(self) -> np.ndarray:
        """``(B, [H,] S, A, S)`` transition counts (materialised on access with sparse storage,
        when it fits under the cap)."""
        if self._N_sas is not None:
            return self._N_sas
        out = self._dense_zeros("N_sas")
        out.reshape(-1)[self._observed] = self._counts
        return out

    @property
    def P_hat(self) -> np.ndarray:
        """``(B, [H,] S, A, S)`` empirical transitions, zero rows where unvisited (materialised
        on access with sparse storage, when it fits under the cap)."""
        if self._P_hat is not None:
            return self._P_hat
        out = self._dense_zeros("P_hat")
        out.reshape(-1)[self._observed] = self._cell_probabilities()
        return out

    def _dense_zeros(self, what: str) -> np.ndarray:
        shape = (*self.N_sa.shape, self.S)
        need = 8 * int(np.prod(shape))
        if need > self._cap:
            raise ModelTooLargeError(
                f"{what} {shape} would need {need / 2**30:.2f} GiB (cap {self._cap / 2**30:.2f} "
                "GiB); with sparse storage read observed() (the observed cells and counts)"
            )
        return np.zeros(shape)

    def _cell_probabilities(self) -> np.ndarray:
        """P_hat on the observed cells: N(s,a,s') / N(s,a), aligned with ``_observed``."""
        row = self._observed // self.S  # flat (seed, [h,] s, a)
        counts = self._counts if self._N_sas is None else self._N_sas.reshape(-1)[self._observed]
        return counts / self.N_sa.reshape(-1)[row]

    def observed(self) -> dict[str, np.ndarray]:
        """The observed transitions as sorted COO: ``seed, [h,] s, a, s_next, count`` arrays,
        one entry per distinct observed (seed, [h,] s, a, s') cell, in flat-index order."""
        cell = self._observed if self.sparse else np.flatnonzero(self._N_sas)
        counts = self._counts if self._N_sas is None else self._N_sas.reshape(-1)[cell]
        lead = (self.n_seeds, self.H) if self.per_step else (self.n_seeds,)
        idx = np.unravel_index(cell, (*lead, self.S, self.A, self.S))
        names = ("seed", "h", "s", "a", "s_next") if self.per_step else ("seed", "s", "a", "s_next")
        out = dict(zip(names, idx, strict=True))
        out["count"] = counts.copy()
        return out

    @property
    def visited(self) -> np.ndarray:
        """``(B, [H,] S, A)`` bool: N(s,a) > 0."""
        return self.N_sa > 0

    def mean_reward(self) -> np.ndarray:
        """Empirical mean rewards ``r_hat: (B, [H,] S, A)``, 0 where N(s,a) = 0."""
        return self.R_sum / np.maximum(self.N_sa, 1.0)

    def expected(self, F: np.ndarray, h: int | None = None) -> np.ndarray:
        """``[P_hat F](s, a) = sum_{s'} P_hat(s'|s,a) F(s')`` for every seed.

        F: ``(B, S)`` or ``(B, S, k)`` (k functions of the next state at once).
        h: the step whose model to use (per-step layout only; required there).
        Returns ``(B, S, A)`` or ``(B, S, A, k)``; 0 on unvisited rows.
        """
        B, S, A = self.n_seeds, self.S, self.A
        bk = self.backend
        if self.per_step and h is None:
            raise ValueError("a per-step model needs the step h in expected(F, h)")
        F = np.asarray(F, dtype=np.float64)
        vector = F.ndim == 2
        F3 = F[:, :, None] if vector else F  # (B, S, k)
        k = F3.shape[-1]
        if self.storage == "sparse":  # only the visited rows are stored: scatter them
            rows, vals = self.expected_observed(F3, h)
            out = np.zeros((B * S * A, k))
            out[rows] = vals
        elif self.sparse:  # block-diagonal CSR (B*S*A, B*S) @ (B*S, k), rows summed in order
            M = self._csr[h if self.per_step else 0]
            out = bk.to_numpy(bk.csr_matmul(M, F3.reshape(B * S, k)))  # (B*S*A, k)
        else:  # one (S*A, S) @ (S, k) BLAS product per seed
            P = self._P_native[:, h] if self.per_step else self._P_native  # (B, S, A, S)
            out = bk.to_numpy(bk.batched_matmul(P.reshape(B, S * A, S), F3))  # (B, S*A, k)
        out = out.reshape(B, S, A, k)
        return out[..., 0] if vector else out

    def expected_observed(self, F: np.ndarray, h: int | None = None):
        """``[P_hat F]`` on the visited rows only: ``(rows, values)``.

        rows: sorted flat indices into ``(B, S, A)`` (``(seed * S + s) * A + a``) of the pairs
        with N(s, a) > 0 (at step h for a per-step model); values: ``(n,)`` for F ``(B, S)``,
        ``(n, k)`` for F ``(B, S, k)``, equal to ``expected(F, h)`` at those rows, bit for bit.
        With sparse storage this costs O(nnz_observed), nothing of size B*S*A: the planning
        loop of UCBVI on large sparse MDPs runs on it.
        """
        B, S, A = self.n_seeds, self.S, self.A
        if self.per_step and h is None:
            raise ValueError("a per-step model needs the step h in expected_observed(F, h)")
        F = np.asarray(F, dtype=np.float64)
        vector = F.ndim == 2
        F3 = F[:, :, None] if vector else F  # (B, S, k)
        k = F3.shape[-1]
        if self.storage == "sparse":  # compact CSR (n_rows, B*S) over the visited rows
            rows, M = self._compact[h if self.per_step else 0]
            bk = self.backend
            vals = bk.to_numpy(bk.csr_matmul(M, F3.reshape(B * S, k)))  # (n, k)
        else:
            visited = self.visited[:, h] if self.per_step else self.visited  # (B, S, A)
            rows = np.flatnonzero(visited)
            vals = self.expected(F3, h).reshape(B * S * A, k)[rows]
        return rows, (vals[:, 0] if vector else vals)

    # ------------------------------------------------------------------ updates
    def update(self, traj) -> None:
        """Add one episode of every seed (``traj``: :class:`theorylab.mdps.Trajectories`, (B, T)).

        Scatter-adds over flat indices (seed, [h,] s, a[, s']); seeds never share a cell, so the
        result does not depend on the batch. Then refreshes the P_hat rows that changed.
        """
        s, a, y, r = traj.states, traj.actions, traj.next_states, traj.rewards  # (B, T) each
        B, T = s.shape
        S, A, H = self.S, self.A, self.H
        bk = self.backend
        if B != self.n_seeds:
            raise ValueError(f"trajectories have {B} seeds, the model has {self.n_seeds}")
        if self.per_step and T != H:
            raise ValueError(f"a per-step model needs episodes of length H={H}, got {T}")
        seed = np.arange(B)[:, None]  # (B, 1)
        if self.per_step:
            lead = seed * H + np.arange(T)[None, :]  # (B, T): flat (seed, h)
        else:
            lead = np.broadcast_to(seed, (B, T))  # (B, T): flat (seed,)
        row = ((lead * S + s) * A + a).ravel()  # (B*T,) flat (seed, [h,] s, a)
        cells = row * S + y.ravel()  # (B*T,) flat (seed, [h,] s, a, s')
        bk.scatter_add(self.N_sa, row, 1.0)
        bk.scatter_add(self.R_sum, row, r.ravel())
        if self._N_sas is not None:
            bk.scatter_add(self._N_sas, cells, 1.0)
        # Time-specific state visits: x_{k,h} for h = 0..T-1, and x_{k,T} = the last next state.
        steps = np.concatenate([s, y[:, -1:]], axis=1)  # (B, T+1)
        cell = ((seed * (H + 1) + np.arange(T + 1)[None, :]) * S + steps).ravel()
        bk.scatter_add(self.N_hs, cell, 1.0)
        if self._P_hat is not None:
            changed = np.unique(row)
            self._refresh_rows(changed)
            if not self.sparse:  # the backend's copy (a device, a float32 cast): changed rows only
                self._P_native = bk.refresh_rows(self._P_native, self._P_hat, changed)
        if self.sparse:
            self._observe(cells)
            self._rebuild_csr()

    def _observe(self, cells: np.ndarray) -> None:
        """Merge new cells into the sorted ``_observed`` (and count them with sparse storage):
        O(observed + n log observed) per episode."""
        new = np.unique(cells)
        pos = np.searchsorted(self._observed, new)
        seen = pos < self._observed.size
        seen[seen] = self._observed[pos[seen]] == new[seen]
        fresh = ~seen
        if fresh.any():
            self._observed = np.insert(self._observed, pos[fresh], new[fresh])
            if self._N_sas is None:
                self._counts = np.insert(self._counts, pos[fresh], 0.0)
        if self._N_sas is None:  # sparse storage: the count scatter-add into the COO
            self.backend.scatter_add(self._counts, np.searchsorted(self._observed, cells), 1.0)

    def set_counts(
        self,
        N_sas: np.ndarray,
        R_sum: np.ndarray | None = None,
        N_hs: np.ndarray | None = None,
    ) -> None:
        """Replace the statistics (test hook and pseudo-count priors).

        N_sas: broadcastable to ``(B, [H,] S, A, S)``, non-negative (need not be integers: e.g.
        the true ``P`` itself, which makes ``P_hat == P`` exactly). R_sum: broadcastable to
        ``(B, [H,] S, A)`` (default 0). N_hs: broadcastable to ``(B, H+1, S)`` (default kept).
        With sparse storage the dense ``N_sas`` must fit under the cap.
        """
        shape = (*self.N_sa.shape, self.S)
        N_sas = np.broadcast_to(np.asarray(N_sas, dtype=np.float64), shape)
        if (N_sas < 0).any() or not np.isfinite(N_sas).all():
            raise ValueError("counts must be finite and non-negative")
        if self._N_sas is not None:
            self._N_sas[...] = N_sas
            self.N_sa[...] = self._N_sas.sum(axis=-1)
        else:
            self._observed = np.flatnonzero(N_sas)
            self._counts = N_sas.reshape(-1)[self._observed].copy()
            self.N_sa[...] = N_sas.sum(axis=-1)
        self.R_sum[...] = 0.0 if R_sum is None else np.asarray(R_sum, dtype=np.float64)
        if N_hs is not None:
            self.N_hs[...] = np.asarray(N_hs, dtype=np.float64)
        if self._P_hat is not None:
            self._refresh_rows(np.arange(self.N_sa.size))
            self._P_native = None if self.sparse else self.backend.asarray(self._P_hat)
        if self.sparse:
            if self._N_sas is not None:
                self._observed = np.flatnonzero(self._N_sas)
            self._rebuild_csr()

    def _refresh_rows(self, rows: np.ndarray) -> None:
        """P_hat(.|row) = N(row, .) / N(row) on the given flat (seed, [h,] s, a) rows."""
        S = self.S
        N_rows = self._N_sas.reshape(-1, S)  # (B*[H*]S*A, S)
        n = self.N_sa.reshape(-1)[rows]  # (R,)
        P_rows = self._P_hat.reshape(-1, S)  # view
        P_rows[rows] = np.where(n[:, None] > 0, N_rows[rows] / np.maximum(n, 1e-300)[:, None], 0.0)

    def _rebuild_csr(self) -> None:
        """Block-diagonal CSR copies of P_hat on the observed cells, one per model stage."""
        B, S, A, H = self.n_seeds, self.S, self.A, self.H
        cell = self._observed  # sorted flat (seed, [h,] s, a, s')
        row, col = np.divmod(cell, S)  # flat (seed, [h,] s, a) and s'
        data = self._cell_probabilities()
        stages = H if self.per_step else 1
        seed, rest = np.divmod(row, stages * S * A)
        stage, sa = np.divmod(rest, S * A)
        if self.storage == "sparse":
            # compact CSR per stage: one row per visited (seed, s, a), O(nnz_observed) to build
            self._compact = []
            for h in range(stages):
                keep = stage == h if stages > 1 else slice(None)  # sorted by (seed, s, a, s')
                flat = seed[keep] * (S * A) + sa[keep]  # (n_cells,) flat (seed, s, a)
                rows, starts = np.unique(flat, return_index=True)
                indptr = np.append(starts, flat.size).astype(np.int64)
                cols = seed[keep] * S + col[keep]
                M = self.backend.csr(indptr, cols, data[keep], (rows.size, B * S))
                self._compact.append((rows, M))
            return
        shape = (B * S * A, B * S)
        self._csr = []
        for h in range(stages):
            keep = stage == h if stages > 1 else slice(None)  # still sorted by (seed, s, a, s')
            rows = seed[keep] * (S * A) + sa[keep]
            indptr = np.zeros(B * S * A + 1, np.int64)
            np.cumsum(np.bincount(rows, minlength=B * S * A), out=indptr[1:])
            cols = seed[keep] * S + col[keep]
            self._csr.append(self.backend.csr(indptr, cols, data[keep], shape))

    def nbytes(self) -> int:
        """Bytes held by the statistics arrays (dense storage: N_sas, N_sa, R_sum, P_hat, N_hs;
        sparse storage: the observed cells and counts, N_sa, R_sum, N_hs; CSR copies excluded)."""
        if self._N_sas is not None:
            arrays = (self._N_sas, self.N_sa, self.R_sum, self._P_hat, self.N_hs)
        else:
            arrays = (self._observed, self._counts, self.N_sa, self.R_sum, self.N_hs)
        return sum(x.nbytes for x in arrays)
