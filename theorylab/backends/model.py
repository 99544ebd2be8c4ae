"""The backend-neutral view of a finite MDP that every kernel reads: :class:`TransitionModel`.

What
----
A :class:`TransitionModel` holds, for one tabular MDP, the arrays the hot kernels need, in one
layout whatever the MDP's storage:

* ``flat``: the per-stage transition matrices ``(S*A, S)`` exactly as the MDP stores them
  (scipy CSR or dense ndarray; the numpy backend multiplies with these, so its results are the
  ones ``TabularMDP.expected_next`` gives, bit for bit);
* ``R``: mean rewards ``(n_R, S, A)`` float64 (``n_R`` = H when stage-dependent, else 1);
* a CSR view of all stages stacked, ``(n_stages*S*A, S)`` (row ``h*S*A + s*A + a``): ``indptr``,
  ``indices`` (int64), ``data`` (float64), built lazily. Dense models get an implicit-dense CSR
  (every row stores all S entries), so the compiled kernels have one code path;
* for sampling (lazy): ``cum`` (within-row cumulative sums, the same values
  ``TabularMDP.rollout`` searches) and ``last`` (per row, the position of its last positive
  probability), plus ``mu0_cdf`` / ``last_mu0`` for the initial state.

Backends keep their converted copies (device tensors, float32 data) in ``native``, keyed by the
backend, so a model is converted once, not on every call.

How
---
:func:`transition_model(mdp)` builds it from anything with the :class:`TabularMDP` attributes
(``S, A, horizon, sparse, stage_dependent, P, P_flat(h), R, reward_stage_dependent, mu0,
reward_model``): duck typing, so this ground-floor module imports nothing from ``mdps/``. The
result is cached per MDP object (a weak reference: it goes when the MDP goes); MDPs are
immutable, so the cache never goes stale.

Memory: ``flat`` shares the MDP's arrays, and so does the CSR view of a sparse MDP (its int32 or
int64 ``indptr``/``indices`` and float64 ``data``, no copy). ``cum`` is taken from the MDP's own
sampler table when it has one (``TabularMDP`` keeps it), else computed (8 bytes per entry). A
dense model's implicit CSR costs about 3x the dense array (data view, int64 indices, cum): dense
models are small by design.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.kernels.csr import row_cumsum

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(eq=False)
class TransitionModel:
    """Arrays of one finite MDP in the layout the backends read (see the module docstring)."""

    S: int
    A: int
    horizon: int | None
    n_stages: int  # distinct transition matrices (H when stage-dependent, else 1)
    sparse: bool
    flat: list  # per stage (S*A, S): scipy CSR or dense ndarray, shared with the MDP
    R: np.ndarray  # (n_R, S, A) float64
    mu0: np.ndarray  # (S,) float64
    bernoulli: bool  # reward model: Bernoulli draws (True) or the mean is paid (False)
    _P: Any = None  # the MDP's own P (CSR (n_stages*S*A, S) when sparse)
    _mdp_cum: Any = None  # the MDP's sampler table, when it has one (sparse only)
    _csr: tuple | None = None
    _sampler: tuple | None = None
    native: dict = field(default_factory=dict)  # backend key -> converted arrays

    # ------------------------------------------------------------------ sizes
    @property
    def n_rows(self) -> int:
        """Rows of the stacked CSR view, ``n_stages * S * A``."""
        return self.n_stages * self.S * self.A

    @property
    def nnz(self) -> int:
        """Stored entries of all stages (S*A*S per stage when dense)."""
        return int(self._P.nnz) if self.sparse else self.n_rows * self.S

    def stage(self, h: int) -> int:
        """The transition stage used at step h (0 when stationary)."""
        return min(h, self.n_stages - 1) if self.n_stages > 1 else 0

    def reward_stage(self, h: int) -> int:
        """The reward stage used at step h (0 when stationary)."""
        return min(h, self.R.shape[0] - 1) if self.R.shape[0] > 1 else 0

    # ------------------------------------------------------------------ CSR view
    def csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(indptr (n_rows+1,), indices (nnz,), data (nnz,))``: the MDP's own arrays when
        sparse (int32 or int64 indices, as scipy stored them; float64 data), int64 for the
        implicit-dense view of a dense model."""
        if self._csr is None:
            S = self.S
            if self.sparse:
                P = self._P
                idx_t = np.result_type(P.indptr, P.indices)
                self._csr = (
                    np.ascontiguousarray(P.indptr, dtype=idx_t),
                    np.ascontiguousarray(P.indices, dtype=idx_t),
                    np.ascontiguousarray(P.data, dtype=np.float64),
                )
            else:
                n = self.n_rows
                dense = np.concatenate([np.asarray(m).reshape(-1, S) for m in self.flat])
                self._csr = (
                    np.arange(0, n * S + 1, S, dtype=np.int64),
                    np.tile(np.arange(S, dtype=np.int64), n),
                    np.ascontiguousarray(dense, dtype=np.float64).reshape(-1),
                )
        return self._csr

    def sampler(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """``(cum (nnz,), last (n_rows,), mu0_cdf (S,), last_mu0)`` for inverse-CDF sampling.

        ``cum``: cumulative sums restarted at every row (``TabularMDP``'s values: a sequential
        sum, so ``np.cumsum`` of a dense row gives the same numbers); ``last``: position (in the
        CSR data) of each row's last positive entry; ``mu0_cdf = np.cumsum(mu0)`` and the index
        of mu0's last positive entry.
        """
        if self._sampler is None:
            indptr, _, data = self.csr()
            if self.sparse and self._mdp_cum is not None:
                cum = np.asarray(self._mdp_cum, dtype=np.float64)
            elif self.sparse:
                cum = row_cumsum(indptr, data)
            else:
                cum = np.cumsum(data.reshape(self.n_rows, self.S), axis=1).reshape(-1)
            pos = np.where(data > 0, np.arange(data.size, dtype=np.int64), -1)
            last = np.maximum.reduceat(pos, indptr[:-1]) if data.size else pos[:0]
            last_mu0 = self.S - 1 - int(np.argmax(self.mu0[::-1] > 0))
            self._sampler = (cum, last.astype(np.int64), np.cumsum(self.mu0), last_mu0)
        return self._sampler


def transition_model(mdp) -> TransitionModel:
    """The :class:`TransitionModel` of ``mdp`` (a ``TabularMDP`` or a model already), cached."""
    if isinstance(mdp, TransitionModel):
        return mdp
    try:
        return _CACHE[mdp]
    except (KeyError, TypeError):
        pass
    R = np.asarray(mdp.R, dtype=np.float64)
    R = R if R.ndim == 3 else R[None]
    flat = [mdp.P_flat(h) for h in range(mdp.n_stages)]
    model = TransitionModel(
        S=int(mdp.S),
        A=int(mdp.A),
        horizon=mdp.horizon,
        n_stages=len(flat),
        sparse=bool(mdp.sparse),
        flat=flat,
        R=R,
        mu0=np.asarray(mdp.mu0, dtype=np.float64),
        bernoulli=mdp.reward_model == "bernoulli",
        _P=mdp.P if mdp.sparse else None,
        # TabularMDP keeps the within-row cumulative sums it samples with; sharing them saves
        # 8 bytes per entry (320 MB at S = 10^6, A = 4, b = 10) and gives the same numbers.
        _mdp_cum=getattr(mdp, "_cum", None) if mdp.sparse else None,
    )
    try:
        _CACHE[mdp] = model
    except TypeError:  # not weak-referenceable: no cache
        pass
    return model
