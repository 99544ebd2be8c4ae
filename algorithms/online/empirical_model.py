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
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

MAX_MODEL_BYTES = 2 * 2**30
SPARSE_MIN_STATES = 64


class ModelTooLargeError(MemoryError):
    """The dense empirical model for this many seeds, states and steps would exceed the cap."""


class EmpiricalModel:
    """Counts and empirical transition model of B seeds (see the module docstring).

    Parameters
    ----------
    n_seeds, S, A, H : sizes (H is the episode length; trajectories must have length H).
    per_step : keep one model per step h (AJKS) instead of pooling all steps (Azar et al.).
    max_bytes : refuse to allocate more than this (default: the module's ``MAX_MODEL_BYTES``).
    sparse : multiply through a CSR copy of the observed entries (default: S >= SPARSE_MIN_STATES).
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
    ) -> None:
        self.n_seeds, self.S, self.A, self.H = int(n_seeds), int(S), int(A), int(H)
        self.per_step = bool(per_step)
        B = self.n_seeds
        lead = (B, H) if self.per_step else (B,)
        n_entries = int(np.prod(lead)) * S * A * S
        cap = MAX_MODEL_BYTES if max_bytes is None else int(max_bytes)
        needed = 2 * 8 * n_entries  # N_sas and P_hat, float64
        if needed > cap:
            layout = "(B, H, S, A, S)" if self.per_step else "(B, S, A, S)"
            raise ModelTooLargeError(
                f"the dense empirical model {layout} = {(*lead, S, A, S)} needs "
                f"{needed / 2**30:.2f} GiB (counts + P_hat), above the cap of "
                f"{cap / 2**30:.2f} GiB; "
                "run fewer seeds per batch, or raise "
                "theorylab.algorithms.online.empirical_model.MAX_MODEL_BYTES"
            )
        self.N_sas = np.zeros((*lead, S, A, S))  # N_sas: (B, [H,] S, A, S)
        self.N_sa = np.zeros((*lead, S, A))  # N_sa: (B, [H,] S, A)
        self.R_sum = np.zeros((*lead, S, A))  # R_sum: (B, [H,] S, A)
        self.P_hat = np.zeros((*lead, S, A, S))  # P_hat: (B, [H,] S, A, S), zero rows unvisited
        self.N_hs = np.zeros((B, H + 1, S))  # N_hs: (B, H+1, S) state visits per step
        self.sparse = S >= SPARSE_MIN_STATES if sparse is None else bool(sparse)
        self._observed = np.empty(0, np.int64)  # sorted flat indices of N_sas > 0
        self._csr: list = []  # one (B*S*A, B*S) block-diagonal P_hat per model stage
        if self.sparse:
            self._rebuild_csr()

    # ------------------------------------------------------------------ statistics
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
        if self.per_step and h is None:
            raise ValueError("a per-step model needs the step h in expected(F, h)")
        F = np.asarray(F, dtype=np.float64)
        vector = F.ndim == 2
        F3 = F[:, :, None] if vector else F  # (B, S, k)
        k = F3.shape[-1]
        if self.sparse:  # block-diagonal CSR (B*S*A, B*S) @ (B*S, k), rows summed in order
            M = self._csr[h if self.per_step else 0]
            out = M @ F3.reshape(B * S, k)  # (B*S*A, k)
        else:  # one (S*A, S) @ (S, k) BLAS product per seed
            P = self.P_hat[:, h] if self.per_step else self.P_hat  # (B, S, A, S)
            out = np.matmul(P.reshape(B, S * A, S), F3)  # (B, S*A, k)
        out = out.reshape(B, S, A, k)
        return out[..., 0] if vector else out

    # ------------------------------------------------------------------ updates
    def update(self, traj) -> None:
        """Add one episode of every seed (``traj``: :class:`theorylab.mdps.Trajectories`, (B, T)).

        Scatter-adds over flat indices (seed, [h,] s, a[, s']); seeds never share a cell, so the
        result does not depend on the batch. Then refreshes the P_hat rows that changed.
        """
        s, a, y, r = traj.states, traj.actions, traj.next_states, traj.rewards  # (B, T) each
        B, T = s.shape
        S, A, H = self.S, self.A, self.H
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
        np.add.at(self.N_sa.reshape(-1), row, 1.0)
        np.add.at(self.R_sum.reshape(-1), row, r.ravel())
        np.add.at(self.N_sas.reshape(-1), row * S + y.ravel(), 1.0)
        # Time-specific state visits: x_{k,h} for h = 0..T-1, and x_{k,T} = the last next state.
        steps = np.concatenate([s, y[:, -1:]], axis=1)  # (B, T+1)
        cell = ((seed * (H + 1) + np.arange(T + 1)[None, :]) * S + steps).ravel()
        np.add.at(self.N_hs.reshape(-1), cell, 1.0)
        self._refresh_rows(np.unique(row))
        if self.sparse:
            self._observed = np.union1d(self._observed, row * S + y.ravel())
            self._rebuild_csr()

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
        """
        N_sas = np.broadcast_to(np.asarray(N_sas, dtype=np.float64), self.N_sas.shape)
        if (N_sas < 0).any() or not np.isfinite(N_sas).all():
            raise ValueError("counts must be finite and non-negative")
        self.N_sas[...] = N_sas
        self.N_sa[...] = self.N_sas.sum(axis=-1)
        self.R_sum[...] = 0.0 if R_sum is None else np.asarray(R_sum, dtype=np.float64)
        if N_hs is not None:
            self.N_hs[...] = np.asarray(N_hs, dtype=np.float64)
        self._refresh_rows(np.arange(self.N_sa.size))
        if self.sparse:
            self._observed = np.flatnonzero(self.N_sas)
            self._rebuild_csr()

    def _refresh_rows(self, rows: np.ndarray) -> None:
        """P_hat(.|row) = N(row, .) / N(row) on the given flat (seed, [h,] s, a) rows."""
        S = self.S
        N_rows = self.N_sas.reshape(-1, S)  # (B*[H*]S*A, S)
        n = self.N_sa.reshape(-1)[rows]  # (R,)
        P_rows = self.P_hat.reshape(-1, S)  # view
        P_rows[rows] = np.where(n[:, None] > 0, N_rows[rows] / np.maximum(n, 1e-300)[:, None], 0.0)

    def _rebuild_csr(self) -> None:
        """Block-diagonal CSR copies of P_hat on the observed cells, one per model stage."""
        B, S, A, H = self.n_seeds, self.S, self.A, self.H
        cell = self._observed  # sorted flat (seed, [h,] s, a, s')
        row, col = np.divmod(cell, S)  # flat (seed, [h,] s, a) and s'
        data = self.N_sas.reshape(-1)[cell] / self.N_sa.reshape(-1)[row]
        stages = H if self.per_step else 1
        seed, rest = np.divmod(row, stages * S * A)
        stage, sa = np.divmod(rest, S * A)
        shape = (B * S * A, B * S)
        self._csr = []
        for h in range(stages):
            keep = stage == h  # still sorted by (seed, s, a, s')
            rows = seed[keep] * (S * A) + sa[keep]
            indptr = np.zeros(B * S * A + 1, np.int64)
            np.cumsum(np.bincount(rows, minlength=B * S * A), out=indptr[1:])
            cols = seed[keep] * S + col[keep]
            self._csr.append(sp.csr_array((data[keep], cols, indptr), shape=shape))

    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return sum(x.nbytes for x in (self.N_sas, self.N_sa, self.R_sum, self.P_hat, self.N_hs))
