r"""Least-squares value iteration, batched over seeds: the engine under LSVI, LSVI-UCB, LMC-LSVI.

Jin, Yang, Wang, Jordan, "Provably Efficient Reinforcement Learning with Linear Function
Approximation", COLT 2020, arXiv:1907.05388v2, Algorithm 1 (p. 6; theory.md 2.2). In episode k,
for h = H, ..., 1 (0-based here: h = H-1, ..., 0), with Q^k_{H+1} = 0::

    Lambda^k_h  = sum_{tau < k} phi^tau_h (phi^tau_h)^T + lambda I                 (line 4)
    w^k_h       = (Lambda^k_h)^{-1} sum_{tau < k} phi^tau_h [ r_h(x^tau_h, a^tau_h)
                                       + max_a Q^k_{h+1}(x^tau_{h+1}, a) ]       (line 5)
    Q^k_h(., .) = min{ (w^k_h)^T phi(., .) + bonus^k_h(., .), H }                (line 6)

and act greedily in Q^k_h. This class implements lines 4-6 with a pluggable ``bonus`` (0 here:
plain LSVI) and pluggable ``q_values`` (LMC-LSVI replaces the ridge solution by Langevin
samples). ``phi^tau_h = phi(x^tau_h, a^tau_h)``.

How the work is organised (same mathematics as Algorithm 1, every number recomputed every
episode from ALL past data, as theory.md 10 requires):

* **History.** For every seed, step h and past episode tau the engine stores the flat pair index
  ``x^tau_h * A + a^tau_h``, the next-state index ``x^tau_{h+1}`` and the observed reward: three
  ``(B, H, K)`` arrays, 16 bytes per sample, so memory is O(K H) per seed plus the Gram inverses
  ``(B, H, d, d)`` -- never the (K, H, A, d) next-state feature tensor.
* **Targets.** The protocol asks for the policy at *every* state, so each episode the backward pass
  computes ``Q^k_{h+1}(s, a)`` for all (s, a) from the S-indexed feature table, and
  ``V^k_{h+1}(s) = max_a Q^k_{h+1}(s, a)``. The target of past sample tau is then a lookup
  ``r^tau_h + V^k_{h+1}[x^tau_{h+1}]`` -- identical to evaluating ``max_a Q^k_{h+1}`` at
  ``phi(x^tau_{h+1}, a)`` for all a, but without repeating the O(A d^2) bonus per sample.
* **Regression** (two exact ways to form ``sum_{tau<k} phi^tau_h y^tau``, ``targets=``):

  - ``"history"``: ``Phi^T z`` with ``z(s, a) = sum_{tau: (x,a)=(s,a)} y^tau`` (one
    ``np.bincount`` over the k past samples): O(k) per step h, memory O(K H);
  - ``"statistics"``: by linearity, ``sum_tau phi^tau_h [r^tau_h + V(x^tau_{h+1})] = b_h + M_h V``
    with ``b_h = sum_tau phi^tau_h r^tau_h`` ``(d,)`` and ``M_h = sum_tau phi^tau_h
    e_{x^tau_{h+1}}^T`` ``(d, S)`` accumulated as data arrive: O(d S) per step h whatever k,
    memory O(H d S). The sum over all past data is still recomputed every episode (V changes);
    only its evaluation is reorganised.
  - ``"auto"`` (default): ``"statistics"`` when S <= K and the ``(B, H, d, S)`` statistics fit
    in ``STATISTICS_MAX_BYTES``, else ``"history"``. The two differ only by floating-point
    rounding (tests check they agree to 1e-10); the choice depends on sizes, never on data.

  Then ``w = Lambda^{-1} (sum phi y)``.
* **Gram inverse.** ``(Lambda^k_h)^{-1}`` is updated by Sherman-Morrison, O(d^2) per new sample
  (the backend's ``sherman_morrison`` kernel), one step h at a time so that the ``(B, d, d)``
  temporaries stay in cache. ``Lambda^k_h`` itself is kept only by subclasses that need it
  (``keep_gram = True``: LMC-LSVI); :meth:`gram` rebuilds it from the counts otherwise.
* **Widths.** The squared widths ``phi(s, a)^T (Lambda^k_h)^{-1} phi(s, a)`` of all pairs are kept
  ``(B, H, S A)`` and follow each Sherman-Morrison step in O(S A d): with ``u = Lambda^{-1} x``,
  ``q(s, a) -= (phi(s, a)^T u)^2 / (1 + x^T u)`` -- the same numbers as recomputing
  ``phi^T Lambda^{-1} phi`` (O(S A d^2)) up to rounding (tests: 1e-12 against the paper's
  pseudocode). They are recomputed exactly every ``WIDTH_REFRESH`` episodes (a schedule that
  depends on k only) so that rounding cannot accumulate, and whenever the features change.

Cost per episode and seed: O(H (d^2 + S A d + k)) ("history") or O(H (d^2 + S A d + d S))
("statistics") -- the paper's count is O(d^2 A H k) (theory.md 2.5, 8.2): the k A d^2 target
evaluations become one S A d pass over the policy table (needed anyway) plus O(k) lookups or an
O(d S) product. No Python loop runs over seeds or samples; the loop is over h.

Batch invariance: bincount sums each bin in sample order, products are ``np.matmul`` over stacks
of equal-shaped matrices and reductions run along the last axis, so seed i gets bit-identical
numbers alone or inside a batch. Ties in argmax_a Q go to the smallest action index.

Backends (``backend=``, default "numpy"; :mod:`theorylab.backends`): the Sherman-Morrison steps
and the exact width recomputations run through the backend's ``sherman_morrison`` and
``quadratic_form`` kernels; the statistics stay numpy arrays on the host (other code reads them),
so the torch backend copies a step's ``(B, d, d)`` inverses to its device and back. numba's
kernels are compiled loops (one thread per seed) and agree with numpy to round-off; numpy is the
reference the tests compare against.

Deviations (each deliberate):

* The reward in the regression target is the *observed* reward ``r^tau_h`` (Jin et al. assume
  deterministic rewards, for which it equals r_h(x, a)); with Bernoulli rewards the regression
  averages the noise like any other target noise. ``env.reward`` is not used.
* Truncation is on Q at H, as Jin et al. (AJKS truncates V instead; theory.md 2.2).
"""

from __future__ import annotations

import numpy as np

from theorylab.agent import EnvSpec, read_only_copy
from theorylab.algorithms.linear.features import resolve_features
from theorylab.backends import Backend, get_backend

STATISTICS_MAX_BYTES = 512 * 2**20
"""Largest ``(B, H, d, S)`` target statistics ``targets="auto"`` keeps (512 MiB)."""
TARGET_MODES = ("auto", "history", "statistics")
WIDTH_REFRESH = 256
"""Every this many episodes the incrementally updated widths are recomputed exactly."""


class LeastSquaresValueIteration:
    """Batched LSVI (Jin et al. Algorithm 1 without the bonus); subclasses add a bonus.

    Parameters
    ----------
    env, n_seeds, rngs : the agent protocol (theorylab.agent).
    episodes : K (capacity of the history; it grows if more episodes arrive).
    features : ``(S, A, d)`` array, ``"onehot"``/None, or an MDP family spec (see
        :func:`~theorylab.algorithms.linear.features.resolve_features`).
    lam : ridge parameter lambda (Jin et al.: 1).
    targets : "auto", "history" or "statistics": how the regression sums are formed (module
        docstring); the same numbers up to rounding.
    backend : a :mod:`theorylab.backends` name or Backend for the Sherman-Morrison and width
        kernels (default "numpy", the reference; module docstring).
    """

    name = "lsvi"
    keep_gram = False  # maintain Lambda^k_h itself, not only its inverse (LMC-LSVI: True)

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs,
        *,
        episodes: int,
        features=None,
        lam: float = 1.0,
        targets: str = "auto",
        backend: str | Backend = "numpy",
    ) -> None:
        if targets not in TARGET_MODES:
            raise ValueError(f"{self.name}: targets must be one of {TARGET_MODES}, got {targets!r}")
        if isinstance(episodes, bool) or int(episodes) != episodes or episodes < 1:
            raise ValueError(f"{self.name}: episodes must be a positive integer, got {episodes!r}")
        if not (lam > 0 and np.isfinite(lam)):
            raise ValueError(f"{self.name}: lam (ridge lambda) must be > 0, got {lam!r}")
        if len(rngs) != n_seeds:
            raise ValueError(f"{self.name}: got {len(rngs)} generators for n_seeds={n_seeds}")
        self.backend = get_backend(backend)
        if self.backend.dtype != np.float64:
            raise ValueError(
                f"{self.name}: the Gram inverses are kept in float64 and updated in place; "
                f"use a float64 backend, not {self.backend!r}"
            )
        self.env = env
        self.n_seeds = B = int(n_seeds)
        self.rngs = rngs
        self.S, self.A, self.H = S, A, H = env.S, env.A, env.H
        self.episodes = int(episodes)
        self.lam = float(lam)
        self.mu0 = np.asarray(env.mu0, dtype=np.float64)  # (S,)
        phi = resolve_features(env, features, agent=self.name)
        if targets == "auto":
            stats_bytes = 8 * B * H * phi.shape[-1] * S
            targets = (
                "statistics"
                if S <= self.episodes and stats_bytes <= STATISTICS_MAX_BYTES
                else "history"
            )
        self.targets = targets
        self.set_features(phi, reset=True)
        cap = self.episodes
        self._sa = np.zeros((B, H, cap), np.int32)  # flat pair index x^tau_h * A + a^tau_h
        self._next = np.zeros((B, H, cap), np.int32)  # x^tau_{h+1}
        self._rew = np.zeros((B, H, cap))  # observed r^tau_h
        self.N = np.zeros((B, H, S * A))  # visit counts N_h(s, a): (B, H, S*A)
        self.k = 0  # episodes seen
        self._offsets = (np.arange(B) * S * A)[:, None]  # (B, 1): per-seed bins for bincount
        self.w = np.zeros((B, H, self.d))  # w^k_h: (B, H, d)
        self._Q = np.zeros((B, H, S, A))  # Q^k_h: (B, H, S, A)
        self._V = np.zeros((B, H + 1, S))  # V^k_h, V[:, H] = 0: (B, H+1, S)
        self.plan()

    # ------------------------------------------------------------------ features
    def set_features(self, phi: np.ndarray, *, reset: bool = False) -> None:
        """Use the feature table ``phi (S, A, d)``; Gram matrices are rebuilt from the counts
        (Rep-UCB switches features when its MLE changes its mind)."""
        self.phi = phi  # (S, A, d)
        self.d = d = int(phi.shape[-1])
        self.phi_flat = np.ascontiguousarray(phi.reshape(self.S * self.A, d))  # (SA, d)
        B, H = self.n_seeds, self.H
        eye = np.eye(d)
        if self.targets == "statistics":
            self.M = np.zeros((B, H, d, self.S))  # M_h = sum phi^tau_h e_{x'}^T: (B, H, d, S)
            self.b_r = np.zeros((B, H, d))  # b_h = sum phi^tau_h r^tau_h: (B, H, d)
        if reset:
            if self.keep_gram:
                self.Lambda = np.broadcast_to(self.lam * eye, (B, H, d, d)).copy()  # (B, H, d, d)
            self.Lambda_inv = np.broadcast_to(eye / self.lam, (B, H, d, d)).copy()
            # phi^T Lambda^{-1} phi = ||phi||^2 / lambda before any data: (B, H, SA)
            width_sq = (self.phi_flat * self.phi_flat).sum(axis=-1) / self.lam
            self.width_sq = np.broadcast_to(width_sq, (B, H, self.S * self.A)).copy()
            return
        gram = self.gram_from_counts()  # Lambda_h = Phi^T diag(N_h) Phi + lambda I
        if self.keep_gram:
            self.Lambda = gram
        self.Lambda_inv = np.linalg.inv(gram)  # (B, H, d, d)
        self.width_sq = self._widths()  # (B, H, SA)
        self.w = np.zeros((B, H, d))
        if self.targets == "statistics" and self.k:  # rebuild b_h and M_h from the history
            k = self.k
            x = self.phi_flat[self._sa[:, :, :k]]  # (B, H, k, d)
            self.b_r = np.matmul(self._rew[:, :, None, :k], x)[:, :, 0]  # (B, H, d)
            bi = np.arange(B)[:, None, None]
            hi = np.arange(H)[None, :, None]
            M = np.zeros((B, H, self.S, d))
            np.add.at(M, (bi, hi, self._next[:, :, :k]), x)
            self.M = np.swapaxes(M, -1, -2).copy()  # (B, H, d, S)

    # ------------------------------------------------------------------ protocol
    def policy(self) -> np.ndarray:
        """``(B, H, S)`` int: greedy in Q^k (ties -> smallest action index)."""
        return read_only_copy(self._policy)

    def value_estimate(self) -> np.ndarray:
        """``(B,)``: V^k_1(mu0) = sum_s mu0(s) max_a Q^k_1(s, a)."""
        return (self._V[:, 0] * self.mu0).sum(axis=-1)

    @property
    def Q(self) -> np.ndarray:
        """``(B, H, S, A)``: Q^k of the next episode."""
        return self._Q

    @property
    def V(self) -> np.ndarray:
        """``(B, H+1, S)``: V^k of the next episode, ``V[:, H] = 0``."""
        return self._V

    def update(self, traj) -> None:
        """Add one episode of every seed (Sherman-Morrison), then replan (Algorithm 1, 4-6)."""
        self.add(traj.states, traj.actions, traj.rewards, traj.next_states)
        self.plan()

    # ------------------------------------------------------------------ data
    def _grow(self, needed: int) -> None:
        cap = self._sa.shape[2]
        if needed <= cap:
            return
        new = max(needed, 2 * cap)
        for attr in ("_sa", "_next", "_rew"):
            old = getattr(self, attr)
            arr = np.zeros((*old.shape[:2], new), old.dtype)
            arr[..., :cap] = old
            setattr(self, attr, arr)

    def add(self, states, actions, rewards, next_states) -> None:
        """Append one episode per seed: arrays ``(B, H)``; one Sherman-Morrison step per (b, h)."""
        states = np.asarray(states)
        B, H = self.n_seeds, self.H
        if states.shape != (B, H):
            raise ValueError(
                f"{self.name}: expected an episode of shape (B, H) = ({B}, {H}), got {states.shape}"
            )
        sa = states * self.A + np.asarray(actions)  # (B, H)
        self._grow(self.k + 1)
        self._sa[:, :, self.k] = sa
        self._next[:, :, self.k] = next_states
        self._rew[:, :, self.k] = rewards
        x = self.phi_flat[sa]  # phi^k_h: (B, H, d)
        for h in range(H):  # one step at a time: the (B, d, d) temporaries stay in cache
            inv_h = self.Lambda_inv[:, h]  # a view, updated in place: (B, d, d)
            u, denom = self.backend.sherman_morrison(inv_h, x[:, h], direction=True)
            u, denom = self.backend.to_numpy(u), self.backend.to_numpy(denom)  # u = inv_old x
            proj = np.matmul(self.phi_flat, u[..., None])[..., 0]  # phi(s, a)^T u: (B, SA)
            width = self.width_sq[:, h]  # a view: (B, SA)
            width -= proj * proj / denom[:, None]
            np.maximum(width, 0.0, out=width)
            if self.keep_gram:
                self.Lambda[:, h] += x[:, h, :, None] * x[:, h, None, :]
        if (self.k + 1) % WIDTH_REFRESH == 0:  # exact recomputation, O(H S A d^2)
            self.width_sq = self._widths()
        bi, hi = np.arange(B)[:, None], np.arange(H)[None, :]
        self.N[bi, hi, sa] += 1.0
        if self.targets == "statistics":
            self.M[bi, hi, :, np.asarray(next_states)] += x  # column x' of M_h gains phi: (B, H, d)
            self.b_r += x * np.asarray(rewards, dtype=np.float64)[..., None]
        self.k += 1

    def add_many(self, states, actions, rewards, next_states) -> None:
        """Append n episodes per seed at once: arrays ``(B, n, H)``; Gram matrices are rebuilt
        from the counts and inverted directly (for offline data sets; no replanning)."""
        states = np.asarray(states)
        B, n, H = states.shape
        if (B, H) != (self.n_seeds, self.H):
            raise ValueError(f"{self.name}: expected (B, n, H) = ({self.n_seeds}, n, {self.H})")
        sa = np.swapaxes(states * self.A + np.asarray(actions), 1, 2)  # (B, H, n)
        self._grow(self.k + n)
        sl = slice(self.k, self.k + n)
        self._sa[:, :, sl] = sa
        self._next[:, :, sl] = np.swapaxes(np.asarray(next_states), 1, 2)
        self._rew[:, :, sl] = np.swapaxes(np.asarray(rewards), 1, 2)
        SA = self.S * self.A
        bins = (np.arange(B * H) * SA).reshape(B, H, 1) + sa  # (B, H, n)
        self.N += np.bincount(bins.ravel(), minlength=B * H * SA).reshape(B, H, SA)
        self.k += n
        self.set_features(self.phi)

    def _widths(self) -> np.ndarray:
        """``phi(s, a)^T (Lambda^k_h)^{-1} phi(s, a)`` recomputed exactly: ``(B, H, S*A)``."""
        B, H, d = self.n_seeds, self.H, self.d
        inv = self.Lambda_inv.reshape(B * H, d, d)  # (B*H, d, d)
        q = self.backend.quadratic_form(inv, self.phi_flat)  # (B*H, SA)
        return np.ascontiguousarray(self.backend.to_numpy(q), dtype=np.float64).reshape(B, H, -1)

    def gram(self) -> np.ndarray:
        """``Lambda^k_h`` for every seed and step, ``(B, H, d, d)``: the kept matrix when
        ``keep_gram``, else rebuilt from the counts (:meth:`gram_from_counts`)."""
        return self.Lambda if self.keep_gram else self.gram_from_counts()

    def gram_from_counts(self) -> np.ndarray:
        """``Lambda^k_h = Phi^T diag(N^k_h) Phi + lambda I``: ``(B, H, d, d)``, O(S A d^2)."""
        weighted = self.N[..., None] * self.phi_flat  # (B, H, SA, d)
        return np.matmul(np.swapaxes(weighted, -1, -2), self.phi_flat) + self.lam * np.eye(self.d)

    # ------------------------------------------------------------------ regression
    def regression_sum(self, h: int, V_next: np.ndarray) -> np.ndarray:
        """``sum_{tau<k} phi^tau_h [r^tau_h + V_next(x^tau_{h+1})]``: ``(B, d)``.

        V_next: ``(B, S)`` = max_a Q^k_{h+1}(., a) (zeros at the last step).
        """
        B, k, SA = self.n_seeds, self.k, self.S * self.A
        if k == 0:
            return np.zeros((B, self.d))
        if self.targets == "statistics":
            MV = np.matmul(self.M[:, h], V_next[..., None])[..., 0]  # M_h V: (B, d)
            return self.b_r[:, h] + MV
        sa = self._sa[:, h, :k]  # (B, k)
        y = self._rew[:, h, :k] + np.take_along_axis(V_next, self._next[:, h, :k], axis=1)  # (B, k)
        z = np.bincount((sa + self._offsets).ravel(), weights=y.ravel(), minlength=B * SA)
        z = z.reshape(B, 1, SA)  # z(s, a) = sum of targets at (s, a): (B, 1, SA)
        return np.matmul(z, self.phi_flat)[:, 0]  # Phi^T z: (B, d)

    def ridge_weights(self, h: int, V_next: np.ndarray) -> np.ndarray:
        """``w^k_h = (Lambda^k_h)^{-1} sum phi (r + V_next)``: ``(B, d)`` (Algorithm 1, line 5)."""
        b = self.regression_sum(h, V_next)  # (B, d)
        return np.matmul(self.Lambda_inv[:, h], b[..., None])[..., 0]  # (B, d)

    def bonus(self, h: int) -> np.ndarray | float:
        """The exploration bonus at every pair, ``(B, S*A)`` (0 for plain LSVI)."""
        return 0.0

    def q_cap(self, h: int) -> float:
        """Upper truncation of Q^k_h: H at every step (Jin et al., Algorithm 1 line 6)."""
        return float(self.H)

    def q_values(self, h: int, V_next: np.ndarray) -> np.ndarray:
        """Untruncated ``(w^k_h)^T phi(s, a) + bonus^k_h(s, a)`` at every pair: ``(B, S*A)``."""
        w = self.ridge_weights(h, V_next)  # (B, d)
        self.w[:, h] = w
        mean = np.matmul(self.phi_flat, w[..., None])[..., 0]  # w^T phi(s, a): (B, SA)
        return mean + self.bonus(h)

    def plan(self) -> None:
        """Backward pass of Algorithm 1 (lines 4-6) for every seed; the loop runs over h only."""
        B, S, A = self.n_seeds, self.S, self.A
        V = self._V
        V[:, self.H] = 0.0
        for h in range(self.H - 1, -1, -1):
            Q_h = np.minimum(self.q_values(h, V[:, h + 1]), self.q_cap(h))  # (B, SA)
            self._Q[:, h] = Q_h.reshape(B, S, A)
            V[:, h] = self._Q[:, h].max(axis=-1)
        self._policy = self._Q.argmax(axis=-1)  # (B, H, S)

    def bonus_width(self, h: int) -> np.ndarray:
        """``||phi(s, a)||_{(Lambda^k_h)^{-1}}`` at every pair: ``(B, S*A)``."""
        return np.sqrt(self.width_sq[:, h])

    @property
    def memory_bytes(self) -> int:
        """Bytes held by the history, the Gram matrices and the value tables."""
        arrays = [self._sa, self._next, self._rew, self.N, self.Lambda_inv, self.w, self.width_sq]
        if self.keep_gram:
            arrays.append(self.Lambda)
        if self.targets == "statistics":
            arrays += [self.M, self.b_r]
        return int(sum(a.nbytes for a in arrays) + self._Q.nbytes + self._V.nbytes)
