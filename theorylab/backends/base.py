r"""The backend interface: the hot kernels every batched algorithm calls, in one place.

Hot kernels live behind one backend interface with three implementations (docs/architecture.md):
numpy (the readable reference), numba (CPU, compiled, parallel) and torch (CPU or CUDA).
Algorithms call the kernels; they do not branch on the backend.

Kernels (shapes: B seeds, S states, A actions, H steps, k columns, d features)
------------------------------------------------------------------------------
=====================  =====================================================================
``csr_matmul``         ``M @ X``: CSR ``(n_rows, n_cols)`` times ``X (n_cols[, k])``.
``batched_matmul``     ``P[b] @ X[b]`` for ``P (B, m, n)``, ``X (B, n, k)`` (per-seed models).
``bellman``            ``Q[b] = R_h + P_h V[b]``: ``V (B, S)`` -> ``Q (B, S, A)`` on a shared
                       model (dense ``(S, A, S)``, stage-dependent ``(H, S, A, S)`` or CSR).
``evaluate_policies``  exact finite-horizon values ``V (B, H+1, S)`` of ``(B, H, S)`` int
                       (deterministic) or ``(B, H, S, A)`` (stochastic) policies.
``sample_next``        next states of flat rows ``s*A + a`` by inverse CDF from uniforms.
``rollout``            one episode of every seed from given uniforms ``U (B, 1 + 3T)``.
``scatter_add``        ``target.flat[index[i]] += values[i]`` in order (count updates).
``sherman_morrison``   in place ``inv <- (inv^{-1} + x x^T)^{-1}`` for ``(B, d, d)`` (and u).
``quadratic_form``     ``x^T inv x`` for every row of ``X (n, d)`` / ``(B, n, d)`` -> ``(B, n)``.
``optimistic_stage``   one stage of an optimistic backward induction, in place on ``Q_h``:
                       ``where(visited, min(min(Q_h, cap), R + X + Y), cap)`` (or without the
                       ``Q_h`` term) and ``V_h = max_a Q_h`` (UCBVI's plan, fused).
``argmax_last``        first maximiser over the last axis (greedy policies).
=====================  =====================================================================

Models are passed as :class:`~theorylab.backends.model.TransitionModel` (``transition_model(mdp)``)
and per-call CSR matrices as the backend's own handle (``backend.csr(...)``), so each backend
converts an array once (a device copy, a float32 cast) and reuses it.

Agreement (what tests/test_backends.py checks)
----------------------------------------------
* Integers are identical on every backend: sampled states and actions (the same uniforms give
  the same integers: every backend compares the same float64 cumulative sums with the same
  uniforms; sampling is float64 even when a backend computes in float32), and counts.
* float64: numpy is the reference. numba sums every CSR row left to right, as scipy does, so
  its CSR products, Bellman backups and deterministic policy evaluation on sparse models are
  bit-identical to numpy in practice; dense products are BLAS in numpy and sequential dot
  products in numba, and torch uses its own kernels, so those agree to round-off. The stated
  tolerance is ``|x - x_ref| <= 1e-12 * (1 + |x_ref|)`` per entry for one product (values are
  sums of at most S terms in [0, H]); tests use it for every float kernel and 1e-10 for whole
  evaluations over H stages.
* float32 (``get_backend(..., dtype="float32")``, numba and torch only): operands are cast to
  float32 and accumulated in float32. One row sum of n terms ``p_j v_j`` with ``sum p_j = 1`` and
  ``|v| <= H`` is off by at most about ``(n + 2) * 2^-24 * H`` (a few 1e-7 relative), so an
  H-step evaluation or backward induction is off by at most about
  ``H^2 (n_max + 2) 2^-24`` in absolute terms (H = 20, n_max = 10: 3e-4; measured errors are
  1-2 orders of magnitude smaller, see docs/benchmarks.md). Exact regret and bit-for-bit
  reproducibility need float64, which is the default everywhere.

Batch invariance: every kernel treats seeds independently and sums in an order that does not
depend on B (numpy: one BLAS call per seed or a CSR row sum; numba: loops per seed; torch: its
batched kernels, invariant on CPU in practice; on CUDA not guaranteed), so seed i alone equals
seed i in a batch on numpy and numba.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from theorylab.backends.model import TransitionModel, transition_model
from theorylab.errors import TheorylabError


class BackendUnavailableError(TheorylabError, RuntimeError):
    """A backend (or device) was asked for that cannot run here: numba or torch missing, no
    CUDA device, or a combination a backend does not support (float32 on numpy)."""


class Backend(ABC):
    """One implementation of the hot kernels (see the module docstring for the list).

    Arrays in: numpy arrays, or this backend's native arrays (torch tensors on its device).
    Arrays out: native arrays; :meth:`to_numpy` turns them into numpy (a no-op on the numpy and
    numba backends, zero-copy for torch on CPU).
    """

    name: str = "?"

    def __init__(self, device: str = "cpu", dtype: str | np.dtype = "float64") -> None:
        self.device = str(device)
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.float64, np.float32):
            raise ValueError(f"dtype must be float64 or float32, got {dtype!r}")

    @property
    def key(self) -> tuple[str, str, str]:
        """``(name, device, dtype)``: where a :class:`TransitionModel` keeps this backend's
        converted arrays."""
        return (self.name, self.device, self.dtype.name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(device={self.device!r}, dtype={self.dtype.name!r})"

    def __reduce__(self):
        """Pickled as its class, device and dtype (an agent in a Python-loop checkpoint holds
        its backend; numba's and torch's hold modules, which do not pickle): unpickled, it is
        that backend built afresh."""
        return (type(self), (self.device, self.dtype.name))

    # ------------------------------------------------------------------ arrays
    def asarray(self, x, dtype=None):
        """``x`` as a native array (float arrays in this backend's dtype unless ``dtype``)."""
        return np.asarray(x, dtype=dtype)

    def to_numpy(self, x) -> np.ndarray:
        """A native array as numpy (no copy where possible)."""
        return np.asarray(x)

    def model(self, mdp) -> TransitionModel:
        """The cached :class:`TransitionModel` of ``mdp``."""
        return transition_model(mdp)

    def refresh_rows(self, native, host: np.ndarray, rows: np.ndarray):
        """Bring the native copy of ``host`` up to date after an in-place change of some rows.

        host: a C-contiguous numpy array ``(..., n)``; rows: flat indices into
        ``host.reshape(-1, n)`` of the rows that changed. native: this backend's array made by
        ``asarray(host)`` earlier (or None). Copies only those rows (a device copy, a float32
        cast), and nothing when native shares host's memory. Returns the native array.
        """
        if native is None:
            return self.asarray(host)
        if isinstance(native, np.ndarray) and np.shares_memory(native, host):
            return native
        n = host.shape[-1]
        native.reshape(-1, n)[rows] = self.asarray(host.reshape(-1, n)[rows])
        return native

    @abstractmethod
    def csr(self, indptr, indices, data, shape: tuple[int, int]) -> Any:
        """A native CSR matrix from its arrays (rows summed left to right by ``csr_matmul``)."""

    # ------------------------------------------------------------------ products
    @abstractmethod
    def csr_matmul(self, M, X):
        """``M @ X``: ``M`` from :meth:`csr` ``(n_rows, n_cols)``, ``X (n_cols,)`` or
        ``(n_cols, k)``. Returns ``(n_rows,)`` / ``(n_rows, k)``."""

    @abstractmethod
    def batched_matmul(self, P, X):
        """``out[b] = P[b] @ X[b]``: ``P (B, m, n)``, ``X (B, n, k)`` -> ``(B, m, k)``."""

    @abstractmethod
    def bellman(self, model: TransitionModel, V, h: int = 0, R=None):
        """``Q[b, s, a] = R(s, a) + sum_{s'} P_h(s'|s, a) V[b, s']``.

        V: ``(B, S)``. R: None (the model's mean rewards at step h), a scalar, ``(S, A)`` or
        ``(B, S, A)``. Returns ``(B, S, A)``; O(B * nnz(P_h)).
        """

    # ------------------------------------------------------------------ evaluation
    def evaluate_policies(self, model: TransitionModel, policies):
        """Exact values ``V (B, H+1, S)``, ``V[:, H] = 0``, of checked policies.

        policies: deterministic ``(B, H, S)`` int64 or stochastic ``(B, H, S, A)`` float64, as
        returned by ``TabularMDP.check_policy(..., batched=True)``. The generic form: H calls of
        :meth:`bellman`, then the policy's action (or its average over actions).
        """
        pol = policies
        B, H, S = pol.shape[0], pol.shape[1], model.S
        V = np.zeros((B, H + 1, S))
        rows = np.arange(B)[:, None]
        cols = np.arange(S)[None, :]
        pol_np = self.to_numpy(pol)
        for h in range(H - 1, -1, -1):
            Q = self.to_numpy(self.bellman(model, V[:, h + 1], h))  # (B, S, A)
            if pol_np.ndim == 3:
                V[:, h] = Q[rows, cols, pol_np[:, h]]
            else:  # a row sum (numpy's pairwise order), not einsum, whose order over the
                # actions depends on the CPU's vector width; the whole-run kernel
                # (algorithms/online/whole_run_kernel.py) reproduces this sum bit for bit
                V[:, h] = (pol_np[:, h] * Q).sum(axis=-1)
        return V

    # ------------------------------------------------------------------ sampling
    @abstractmethod
    def sample_next(self, model: TransitionModel, rows, u, h: int = 0):
        """Next states ``(n,)`` int64 of flat rows ``s*A + a`` ``(n,)`` at step h, from
        uniforms ``u (n,)``: the first entry of the row whose cumulative probability exceeds
        u (clamped to the row's last positive entry): ``TabularMDP``'s rule, bit for bit."""

    @abstractmethod
    def rollout(self, model: TransitionModel, policies, U, T: int):
        """One episode of every seed from the uniforms ``U (B, 1 + 3T)``.

        ``U[:, 0]`` draws the initial state; step t uses ``U[:, 1+3t]`` (action of a stochastic
        policy), ``U[:, 2+3t]`` (transition) and ``U[:, 3+3t]`` (Bernoulli reward): the layout
        of ``TabularMDP.rollout``, whose results this reproduces exactly. policies: checked
        ``(B, Hp, S)`` int64 or ``(B, Hp, S, A)`` float64. Returns ``(states, actions, rewards,
        next_states)``, each ``(B, T)`` (int64, int64, float64, int64) as numpy arrays.
        """

    def rollout_mdp(self, mdp, policy, rngs: Sequence[np.random.Generator], length=None):
        """``mdp.rollout(policy, rng=rngs)`` through this backend: the same uniforms, drawn the
        same way (``rng.random(1 + 3T)`` per seed), so the same trajectories.

        rngs: one ``numpy.random.Generator`` per seed. Returns the 4 ``(B, T)`` arrays of
        :meth:`rollout` (wrap them in ``theorylab.mdps.Trajectories``).
        """
        if not isinstance(rngs, (list, tuple)):
            raise TypeError("rollout_mdp needs one numpy Generator per seed (a list)")
        pol, U, T = mdp.rollout_inputs(policy, list(rngs), length)
        return self.rollout(self.model(mdp), pol, U, T)

    # ------------------------------------------------------------------ counts
    @abstractmethod
    def scatter_add(self, target, index, values) -> None:
        """In place ``target.reshape(-1)[index[i]] += values[i]`` for i in order (repeated
        indices accumulate). target: a contiguous array (numpy for the CPU backends); index:
        ``(n,)`` int; values: ``(n,)`` or a scalar."""

    # ------------------------------------------------------------------ linear algebra
    @abstractmethod
    def sherman_morrison(self, inv, x, *, direction: bool = False):
        """In place ``inv <- (inv^{-1} + x x^T)^{-1}``; returns ``1 + x^T inv_old x``.

        inv: ``(B, d, d)`` symmetric positive definite, updated in place (a strided view such as
        ``Lambda_inv[:, h]`` of a ``(B, H, d, d)`` array is allowed on the CPU backends); x:
        ``(B, d)``. Returns ``denom (B,)``, or ``(u, denom)`` with ``u = inv_old x (B, d)`` when
        ``direction``: with them every other quadratic form follows the update in O(d),
        ``y^T inv_new y = y^T inv_old y - (y^T u)^2 / denom``.
        """

    # ------------------------------------------------------------------ optimistic planning
    @abstractmethod
    def optimistic_stage(self, Q_h, R, X, Y, visited, cap: float, keep_min: bool):
        """One stage of UCBVI's backward induction, fused; returns ``V_h (B, S)``.

        In place on ``Q_h (B, S, A)`` (numpy, possibly a strided view such as ``Q[:, h]``)::

            target = (R + X) + Y                       # summed in this order
            q      = min(min(Q_h, cap), target)        if keep_min (Azar et al.: min with
                                                       #   the previous episode's Q)
                   = min(target, cap)                  otherwise (AJKS)
            Q_h    = where(visited, q, cap);   V_h = max_a Q_h

        R: ``(S, A)`` or ``(B, S, A)``; X, Y, visited: ``(B, S, A)``. The operations are those of
        the numpy expression, in the same order, so every backend gives the same bits (min and
        max are exact; the two additions are done in the stated order).
        """

    @abstractmethod
    def argmax_last(self, Q):
        """``argmax`` over the last axis (the first maximiser on ties), as a numpy int64 array."""

    @abstractmethod
    def quadratic_form(self, inv, X):
        """``x^T inv[b] x`` for every row x: inv ``(B, d, d)``, X ``(n, d)`` (shared rows) or
        ``(B, n, d)``. Returns ``(B, n)``, clipped at 0 against round-off."""
