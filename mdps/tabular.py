"""The tabular MDP: the exact model every algorithm, regret and bound in theorylab is computed on.

Conventions (docs/architecture.md):

* axes are always (state, action, next state); stages are 0-based in code, ``h = 0 .. H-1``
  (papers write ``h = 1 .. H``);
* transitions are dense ``(S, A, S)``, stage-dependent dense ``(H, S, A, S)``, or sparse CSR
  ``(S*A, S)`` (row ``s*A + a``) / stage-dependent sparse CSR ``(H*S*A, S)``;
* mean rewards are ``(S, A)`` or ``(H, S, A)`` in [0, 1]; the reward *model* is either
  ``"deterministic"`` (the mean is paid) or ``"bernoulli"`` (a Bernoulli draw with that mean);
* the objective is a finite horizon ``H`` (episodic) and/or a discount ``gamma``;
* terminal states are explicit absorbing states with zero reward.

Construction validates everything and raises :class:`InvalidMDPError` naming the index and the
value. Nothing is silently renormalised.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import scipy.sparse as sp

from theorylab.errors import InvalidMDPError, InvalidPolicyError
from theorylab.kernels.csr import row_cumsum
from theorylab.kernels.sampling import inverse_cdf_csr, inverse_cdf_dense, sample_episodes
from theorylab.mdps.reward_map import IDENTITY, RewardMap

ROW_SUM_TOL = 1e-9
RewardModel = Literal["deterministic", "bernoulli"]


@dataclass(frozen=True)
class Trajectories:
    """One episode for every seed; every array has a leading seed axis ``B``.

    states, actions, next_states: ``(B, T)`` int64; rewards: ``(B, T)`` float64.
    ``T`` is the horizon H for episodic MDPs. ``stages`` is ``(T,)`` (0-based stage index).
    """

    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_states: np.ndarray

    @property
    def n_seeds(self) -> int:
        return self.states.shape[0]

    @property
    def length(self) -> int:
        return self.states.shape[1]

    def returns(self) -> np.ndarray:
        """Undiscounted return of every seed, ``(B,)``."""
        return self.rewards.sum(axis=1)

    def seed(self, i: int) -> Trajectories:
        """The trajectory of seed ``i`` alone, keeping a seed axis of length 1."""
        sl = slice(i, i + 1)
        return Trajectories(
            self.states[sl], self.actions[sl], self.rewards[sl], self.next_states[sl]
        )


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _first_bad(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def _index_names(ndim: int, stage_dependent: bool) -> tuple[str, ...]:
    names = ("s", "a", "s'")
    if stage_dependent:
        names = ("h", *names)
    return names[:ndim]


def _name_index(idx: tuple[int, ...], names: tuple[str, ...]) -> str:
    return "(" + ", ".join(f"{n}={i}" for n, i in zip(names, idx, strict=False)) + ")"


class TabularMDP:
    """A finite MDP with exactly known transitions, mean rewards and initial distribution.

    Parameters
    ----------
    P : array ``(S, A, S)`` or ``(H, S, A, S)``, or scipy sparse ``(S*A, S)`` / ``(H*S*A, S)``
        Transition probabilities ``P[s, a, s'] = Pr(s' | s, a)`` (rows ``s*A + a`` when sparse).
    R : array ``(S, A)`` or ``(H, S, A)``
        Mean rewards in [0, 1].
    mu0 : array ``(S,)``, optional
        Initial distribution; defaults to state 0 with probability 1.
    horizon : int, optional
        Episode length H (finite-horizon objective).
    gamma : float, optional
        Discount factor in [0, 1) (discounted objective). At least one of ``horizon``/``gamma``.
    reward_model : "deterministic" or "bernoulli"
        How a realised reward is drawn from the mean.
    name : str
        A label (the registry name string when built by :func:`theorylab.mdps.make`).
    reward_map : RewardMap, optional
        The exact affine map from the [0, 1] rewards held here back to the user's reward scale
        (:mod:`theorylab.mdps.reward_map`); the identity unless the model was built from rewards
        on another scale (:meth:`from_arrays` with ``reward_range``, the toy-text importer).
        Values the user sees are ``mdp.user_value(V)``, regrets ``mdp.reward_map.user_gap(x)``.
    """

    def __init__(
        self,
        P,
        R,
        mu0=None,
        *,
        horizon: int | None = None,
        gamma: float | None = None,
        reward_model: RewardModel = "deterministic",
        name: str = "tabular",
        state_names: list[str] | None = None,
        reward_map: RewardMap | None = None,
    ) -> None:
        self.name = name
        self.state_names = state_names
        if reward_map is not None and not isinstance(reward_map, RewardMap):
            raise InvalidMDPError(f"reward_map must be a RewardMap, got {type(reward_map)}")
        self.reward_map: RewardMap = reward_map if reward_map is not None else IDENTITY
        if horizon is None and gamma is None:
            raise InvalidMDPError("give a finite horizon H (horizon=...) or a discount gamma")
        if horizon is not None:
            if isinstance(horizon, bool) or int(horizon) != horizon or horizon < 1:
                raise InvalidMDPError(f"horizon must be a positive integer, got {horizon!r}")
            horizon = int(horizon)
        if gamma is not None:
            gamma = float(gamma)
            if not (0.0 <= gamma < 1.0):
                raise InvalidMDPError(f"gamma must lie in [0, 1), got {gamma!r}")
        if reward_model not in ("deterministic", "bernoulli"):
            raise InvalidMDPError(
                f"reward_model must be 'deterministic' or 'bernoulli', got {reward_model!r}"
            )
        self.horizon = horizon
        self.gamma = gamma
        self.reward_model: RewardModel = reward_model

        R = np.array(R, dtype=np.float64)  # a copy: the model owns (and freezes) its arrays
        if R.ndim not in (2, 3):
            raise InvalidMDPError(f"R must have shape (S, A) or (H, S, A), got shape {R.shape}")
        self.S, self.A = int(R.shape[-2]), int(R.shape[-1])
        if self.S < 1 or self.A < 1:
            raise InvalidMDPError(f"R must have at least one state and one action, got {R.shape}")
        self.reward_stage_dependent = R.ndim == 3
        if self.reward_stage_dependent and R.shape[0] != horizon:
            raise InvalidMDPError(
                f"stage-dependent R has {R.shape[0]} stages but horizon is {horizon}"
            )
        names = ("h", "s", "a") if R.ndim == 3 else ("s", "a")
        bad = ~np.isfinite(R)
        if bad.any():
            idx = _first_bad(bad)
            raise InvalidMDPError(f"R is not finite at {_name_index(idx, names)}: {R[idx]}")
        bad = (R < 0) | (R > 1)
        if bad.any():
            idx = _first_bad(bad)
            raise InvalidMDPError(
                f"R at {_name_index(idx, names)} is {_fmt(R[idx])}, mean rewards must lie in [0, 1]"
            )
        self.R = R
        self.R.setflags(write=False)

        self.sparse = sp.issparse(P)
        if self.sparse:
            self._init_sparse(P)
        else:
            self._init_dense(P)

        if mu0 is None:
            mu0 = np.zeros(self.S)
            mu0[0] = 1.0
        mu0 = np.array(mu0, dtype=np.float64)
        if mu0.shape != (self.S,):
            raise InvalidMDPError(f"mu0 must have shape ({self.S},), got {mu0.shape}")
        if not np.all(np.isfinite(mu0)):
            i = int(np.argwhere(~np.isfinite(mu0))[0, 0])
            raise InvalidMDPError(f"mu0 is not finite at s={i}: {mu0[i]}")
        if (mu0 < 0).any():
            i = int(np.argwhere(mu0 < 0)[0, 0])
            raise InvalidMDPError(f"mu0 has a negative probability at s={i}: {_fmt(mu0[i])}")
        if abs(mu0.sum() - 1.0) > ROW_SUM_TOL:
            raise InvalidMDPError(
                f"mu0 sums to {mu0.sum():.12g}, expected 1 (tolerance {ROW_SUM_TOL:g})"
            )
        self.mu0 = mu0
        self.mu0.setflags(write=False)

    # ------------------------------------------------------------------ validation
    def _init_dense(self, P) -> None:
        P = np.array(P, dtype=np.float64)
        S, A = self.S, self.A
        if P.ndim == 3:
            if P.shape != (S, A, S):
                raise InvalidMDPError(
                    f"P must have shape (S, A, S) = ({S}, {A}, {S}) to match R, got {P.shape}"
                )
            self.stage_dependent = False
        elif P.ndim == 4:
            if self.horizon is None:
                raise InvalidMDPError("stage-dependent P (H, S, A, S) needs a finite horizon")
            if P.shape != (self.horizon, S, A, S):
                raise InvalidMDPError(
                    f"stage-dependent P must have shape (H, S, A, S) = "
                    f"({self.horizon}, {S}, {A}, {S}), got {P.shape}"
                )
            self.stage_dependent = True
        else:
            raise InvalidMDPError(
                f"P must have shape (S, A, S) or (H, S, A, S), got shape {P.shape}"
            )
        names = _index_names(P.ndim, self.stage_dependent)
        bad = ~np.isfinite(P)
        if bad.any():
            idx = _first_bad(bad)
            raise InvalidMDPError(f"P is not finite at {_name_index(idx, names)}: {P[idx]}")
        bad = P < 0
        if bad.any():
            idx = _first_bad(bad)
            raise InvalidMDPError(
                f"P has a negative probability at {_name_index(idx, names)}: {_fmt(P[idx])}"
            )
        sums = P.sum(axis=-1)
        bad = np.abs(sums - 1.0) > ROW_SUM_TOL
        if bad.any():
            idx = _first_bad(bad)
            raise InvalidMDPError(
                f"P row {_name_index(idx, names)} sums to {sums[idx]:.12g}, "
                f"expected 1 (tolerance {ROW_SUM_TOL:g})"
            )
        self.P = P
        self.P.setflags(write=False)
        self._flat = (
            [P[h].reshape(S * A, S) for h in range(P.shape[0])]
            if P.ndim == 4
            else [P.reshape(S * A, S)]
        )

    def _init_sparse(self, P) -> None:
        """Validate CSR transitions in O(nnz) time and O(S*A) extra memory.

        The happy path makes no ``(nnz,)`` temporary: a float64 CSR array with matching index
        dtypes is used without a copy, value checks are ``min``/``max`` reductions and row sums
        are one ``np.add.reduceat``. The offending entry is located (``argmax`` over a mask,
        ``searchsorted`` for its row) only when a check has already failed. Non-canonical input
        (unsorted or duplicate entries) is canonicalised on a copy, never in the caller's arrays.
        """
        S, A = self.S, self.A
        P = sp.csr_array(P, dtype=np.float64)  # no copy for a float64 CSR array
        if P.shape[1] != S:
            raise InvalidMDPError(f"sparse P must have S = {S} columns to match R, got {P.shape}")
        if P.shape[0] == S * A:
            self.stage_dependent = False
            n_stages = 1
        elif self.horizon is not None and P.shape[0] == self.horizon * S * A:
            self.stage_dependent = True
            n_stages = self.horizon
        else:
            raise InvalidMDPError(
                f"sparse P must have shape (S*A, S) = ({S * A}, {S})"
                + (f" or (H*S*A, S) = ({self.horizon * S * A}, {S})" if self.horizon else "")
                + f", got {P.shape}"
            )

        def where(row: int) -> str:
            h, rest = divmod(row, S * A)
            s, a = divmod(rest, A)
            return f"(h={h}, s={s}, a={a})" if self.stage_dependent else f"(s={s}, a={a})"

        def row_of(j: int) -> int:  # the CSR row holding entry j (error path only)
            return int(np.searchsorted(P.indptr, j, side="right")) - 1

        # Structure: scipy's constructor checks neither of these (full_check=False).
        counts = np.diff(P.indptr)  # (n_rows,)
        if counts.min() < 0:
            r = int(np.argmax(counts < 0))
            raise InvalidMDPError(
                f"sparse P has a decreasing indptr at row {where(r)}: "
                f"indptr[{r}] = {P.indptr[r]} > indptr[{r + 1}] = {P.indptr[r + 1]}"
            )
        if P.nnz and (P.indices.min() < 0 or P.indices.max() >= S):
            j = int(np.argmax((P.indices < 0) | (P.indices >= S)))
            raise InvalidMDPError(
                f"P has next-state index s'={P.indices[j]} at row {where(row_of(j))}, "
                f"expected 0 <= s' < {S}"
            )
        if not P.has_canonical_format:  # O(nnz) check in C, cached by scipy
            P = P.copy()
            P.sum_duplicates()  # sorts indices and merges duplicates
            counts = np.diff(P.indptr)
        data = P.data
        if data.size:
            lo, hi = data.min(), data.max()  # NaN propagates; no (nnz,) mask on the happy path
            if not (np.isfinite(lo) and np.isfinite(hi)):
                j = int(np.argmax(~np.isfinite(data)))
                raise InvalidMDPError(
                    f"P is not finite at row {where(row_of(j))}, s'={P.indices[j]}: {data[j]}"
                )
            if lo < 0:
                j = int(np.argmax(data < 0))
                raise InvalidMDPError(
                    f"P has a negative probability at {where(row_of(j))}, s'={P.indices[j]}: "
                    f"{_fmt(data[j])}"
                )
        # Row sums (n_rows,): reduceat over the non-empty rows' starts; empty rows sum to 0.
        sums = np.zeros(P.shape[0])
        nonempty = counts > 0
        if nonempty.all():
            sums = np.add.reduceat(data, P.indptr[:-1])
        elif nonempty.any():
            sums[nonempty] = np.add.reduceat(data, P.indptr[:-1][nonempty])
        bad = np.abs(sums - 1.0) > ROW_SUM_TOL
        if bad.any():
            r = int(np.argmax(bad))
            raise InvalidMDPError(
                f"P row {where(r)} sums to {sums[r]:.12g}, expected 1 (tolerance {ROW_SUM_TOL:g})"
            )
        self.P = P
        n = S * A
        self._flat = [P[h * n : (h + 1) * n] for h in range(n_stages)] if n_stages > 1 else [P]
        # Within-row cumulative probabilities: sampling a next state is a binary search in a row.
        self._cum_cache = None  # the sampler's per-row CDF: built on the first rollout (O(nnz))

    # ------------------------------------------------------------------ properties
    @property
    def H(self) -> int | None:
        return self.horizon

    @property
    def nnz(self) -> int:
        """Number of stored transition entries (S*A*S per stage when dense)."""
        return int(self.P.nnz) if self.sparse else int(self.P.size)

    @property
    def n_stages(self) -> int:
        """Number of distinct transition matrices (H when stage-dependent, else 1)."""
        return len(self._flat)

    def __repr__(self) -> str:
        kind = "sparse" if self.sparse else "dense"
        if self.stage_dependent:
            kind += ", stage-dependent"
        obj = f"H={self.horizon}" if self.horizon is not None else ""
        if self.gamma is not None:
            obj += (", " if obj else "") + f"gamma={self.gamma}"
        return f"TabularMDP({self.name!r}, S={self.S}, A={self.A}, {obj}, {kind})"

    # ------------------------------------------------------------------ model access
    def P_flat(self, h: int = 0):
        """Transition matrix of stage ``h`` as ``(S*A, S)`` (dense ndarray or CSR array)."""
        return self._flat[h if self.stage_dependent else 0]

    def reward(self, h: int = 0) -> np.ndarray:
        """Mean rewards of stage ``h``, ``(S, A)``."""
        return self.R[h] if self.reward_stage_dependent else self.R

    def expected_next(self, V: np.ndarray, h: int = 0) -> np.ndarray:
        """``(P_h V)(s, a) = sum_{s'} P_h(s'|s,a) V(s')`` for one or many value vectors.

        V: ``(S,)`` or ``(B, S)``. Returns ``(S, A)`` or ``(B, S, A)``. O(nnz * B) for sparse P.
        """
        V = np.asarray(V, dtype=np.float64)
        M = self.P_flat(h)
        if V.ndim == 1:
            return (M @ V).reshape(self.S, self.A)
        out = M @ V.T  # (S*A, B)
        return np.ascontiguousarray(out.T).reshape(V.shape[0], self.S, self.A)

    def dense_P(self) -> np.ndarray:
        """Transitions as a dense ``(S, A, S)`` or ``(H, S, A, S)`` array (small MDPs only)."""
        if not self.sparse:
            return np.asarray(self.P)
        mats = [m.toarray().reshape(self.S, self.A, self.S) for m in self._flat]
        return np.stack(mats) if self.stage_dependent else mats[0]

    def to_sparse(self) -> TabularMDP:
        """The same MDP with CSR transitions."""
        if self.sparse:
            return self
        stacked = sp.csr_array(np.concatenate(self._flat, axis=0))
        return self._replace(P=stacked)

    def to_dense(self) -> TabularMDP:
        """The same MDP with dense transitions."""
        return self if not self.sparse else self._replace(P=self.dense_P())

    def with_objective(self, *, horizon: int | None = None, gamma: float | None = None):
        """The same model under another objective (e.g. a discount for value iteration)."""
        return self._replace(horizon=horizon, gamma=gamma)

    def to_tabular(self) -> TabularMDP:
        """The same model as a plain :class:`TabularMDP`, exactly: what a subclass adds
        (features, factors, candidates) is dropped."""
        return self._replace()

    def _replace(self, **changes) -> TabularMDP:
        kw = dict(
            P=self.P,
            R=self.R,
            mu0=self.mu0,
            horizon=self.horizon,
            gamma=self.gamma,
            reward_model=self.reward_model,
            name=self.name,
            state_names=self.state_names,
            reward_map=self.reward_map,
        )
        kw.update(changes)
        P, R, mu0 = kw.pop("P"), kw.pop("R"), kw.pop("mu0")
        return TabularMDP(P, R, mu0, **kw)

    # ------------------------------------------------------------------ the user's units
    def user_value(self, V, h: int = 0):
        """Value(s) ``V`` of this model at stage ``h`` in the user's reward units
        (:meth:`RewardMap.user_value`; ``V`` itself when the reward map is the identity)."""
        return self.reward_map.user_value(V, horizon=self.horizon, gamma=self.gamma, h=h)

    def on_unit_rewards(self) -> TabularMDP:
        """The same model with the identity reward map: what it reports (``tl.run``'s regret,
        values) stays in the [0, 1] units of its rewards, the units the bound cards are stated
        in. ``self`` when the map already is the identity."""
        return self if self.reward_map.identity else self._replace(reward_map=None)

    # ------------------------------------------------------------------ arrays and files
    @classmethod
    def from_arrays(
        cls,
        P,
        R,
        mu0=None,
        *,
        layout: str = "SAS",
        reward_range=None,
        horizon: int | None = None,
        gamma: float | None = None,
        reward_model: RewardModel = "deterministic",
        name: str = "tabular",
        state_names: list[str] | None = None,
    ) -> TabularMDP:
        """A model from arrays in theorylab's layout or other libraries' (pymdptoolbox's
        ``(A, S, S)``, a list of sparse ``(S, S)`` matrices, a CSR ``(S*A, S)``), with rewards
        on any finite scale.

        layout: "SAS" (``P[s, a, s']``, or CSR rows ``s*A + a``) or "ASS" (``P[a, s, s']``).
        R: ``(S, A)``, ``(S,)`` or per transition (``(A, S, S)`` with "ASS", ``(S, A, S)``
            with "SAS"; collapsed to the mean), or ``(H, S, A)``.
        reward_range: None (rewards must lie in [0, 1]), "auto" (the exact affine map of
            :func:`~theorylab.mdps.reward_map.reward_map_of`; [0, 1] rewards stay untouched) or
            a declared ``(lo, hi)``. The map is recorded as ``reward_map``.
        The other keywords are the constructor's. Accepted shapes and the rules:
        :mod:`theorylab.mdps.arrays_import`.
        """
        from theorylab.mdps.arrays_import import normalize_arrays

        P_sas, R_unit, rmap = normalize_arrays(
            P, R, layout=layout, reward_range=reward_range, horizon=horizon
        )
        return cls(
            P_sas, R_unit, mu0, horizon=horizon, gamma=gamma, reward_model=reward_model,
            name=name, state_names=state_names, reward_map=rmap,
        )  # fmt: skip

    def save(self, path) -> Path:
        """Write the model to ``path`` (``.npz``: sparse kept sparse, the reward map and a
        sha256 checksum inside; :mod:`theorylab.mdps.mdp_file`). Returns the path."""
        from theorylab.mdps.mdp_file import write_mdp_file

        return write_mdp_file(self, path)

    @classmethod
    def load(cls, path) -> TabularMDP:
        """The model stored by :meth:`save` at ``path``; a file that is not one (or a corrupted
        one) raises :class:`InvalidMDPError` in one line naming the file."""
        from theorylab.mdps.mdp_file import read_mdp_file

        P, R, mu0, meta = read_mdp_file(path)
        return TabularMDP(
            P,
            R,
            mu0,
            horizon=meta["horizon"],
            gamma=meta["gamma"],
            reward_model=meta["reward_model"],
            name=meta["name"],
            state_names=meta["state_names"],
            reward_map=RewardMap(offset=meta["reward_offset"], scale=meta["reward_scale"]),
        )

    # ------------------------------------------------------------------ policies
    def check_policy(self, policy: np.ndarray, *, batched: bool = False) -> np.ndarray:
        """Validate a policy and return it as deterministic ``([B,] H, S)`` int or stochastic
        ``([B,] H, S, A)`` float. Stationary policies ``([B,] S)`` / ``([B,] S, A)`` are broadcast
        over the horizon. Raises :class:`InvalidPolicyError` naming the offending entry."""
        pol = np.asarray(policy)
        S, A = self.S, self.A
        H = self.horizon if self.horizon is not None else 1
        lead = 1 if batched else 0
        deterministic = np.issubdtype(pol.dtype, np.integer)
        core = pol.shape[lead:]
        if deterministic:
            if core == (S,):
                pol = np.broadcast_to(np.expand_dims(pol, lead), (*pol.shape[:lead], H, S))
            elif core != (H, S):
                raise InvalidPolicyError(
                    f"deterministic policy must have shape {'(B, ' if batched else '('}H, S) = "
                    f"({H}, {S}) or (S,), got {pol.shape}"
                )
            bad = (pol < 0) | (pol >= A)
            if bad.any():
                idx = _first_bad(bad)
                raise InvalidPolicyError(
                    f"policy picks action {pol[idx]} at index {idx}, actions are 0..{A - 1}"
                )
            return pol.astype(np.int64, copy=False)
        pol = pol.astype(np.float64, copy=False)
        if core == (S, A):
            pol = np.broadcast_to(np.expand_dims(pol, lead), (*pol.shape[:lead], H, S, A))
        elif core != (H, S, A):
            raise InvalidPolicyError(
                f"stochastic policy must have shape {'(B, ' if batched else '('}H, S, A) = "
                f"({H}, {S}, {A}) or (S, A), got {pol.shape}"
            )
        bad = ~np.isfinite(pol) | (pol < 0)
        if bad.any():
            idx = _first_bad(bad)
            raise InvalidPolicyError(f"policy has an invalid probability {pol[idx]} at {idx}")
        sums = pol.sum(-1)
        bad = np.abs(sums - 1) > 1e-8
        if bad.any():
            idx = _first_bad(bad)
            raise InvalidPolicyError(f"policy row {idx} sums to {sums[idx]:.12g}, expected 1")
        return pol

    # ------------------------------------------------------------------ sampling
    def _sample_next(self, rows: np.ndarray, u: np.ndarray, h: int) -> np.ndarray:
        """Next states for flat rows ``s*A + a`` (B,) from uniforms ``u`` (B,), by inverse CDF.

        Sparse rows are searched within their CSR slice (a vectorised binary search), so nothing
        is densified."""
        if not self.sparse:  # the clamp: a cdf that rounds below 1 never picks a zero entry
            return inverse_cdf_dense(self.P_flat(h)[rows], u, self._last_positive(h)[rows])
        r = rows + (h * self.S * self.A if self.stage_dependent else 0)
        last = self._last_positive(0)[r]  # stored zeros at a row's end are skipped
        return inverse_cdf_csr(self.P.indptr, self.P.indices, self._cum, r, u, last)

    @property
    def _cum(self) -> np.ndarray:
        """Within-row cumulative probabilities of the CSR data ``(nnz,)`` (sparse rollouts only),
        built once on first use so that planning-only use never pays for it."""
        if self._cum_cache is None:
            self._cum_cache = row_cumsum(self.P.indptr, self.P.data)
        return self._cum_cache

    def _last_positive(self, h: int) -> np.ndarray:
        """Per flat row, the index of its last positive probability: a column (dense, stage h)
        or a position in the CSR data (sparse, all stages). Computed once, on first use."""
        cache = self.__dict__.setdefault("_last_positive_cache", {})
        key = h if (self.stage_dependent and not self.sparse) else 0
        if key not in cache:
            if self.sparse:
                pos = np.where(self.P.data > 0, np.arange(self.P.data.size), -1)
                cache[key] = np.maximum.reduceat(pos, self.P.indptr[:-1])
            else:
                M = self.P_flat(h)
                cache[key] = M.shape[1] - 1 - np.argmax(M[:, ::-1] > 0, axis=1)
        return cache[key]

    def rollout(self, policy, n_seeds: int | None = None, rng=None, *, length: int | None = None):
        """Sample one episode for every seed at once.

        policy: deterministic ``(H, S)`` / ``(B, H, S)`` int or stochastic ``(H, S, A)`` /
            ``(B, H, S, A)`` (stationary ``(S,)``/``(S, A)`` forms are accepted too).
        n_seeds: B (inferred from a batched policy or a list of generators).
        rng: a ``numpy.random.Generator`` (its ``spawn`` gives one stream per seed), a sequence of
            B generators (seed i then draws the same numbers alone or in a batch), or an int seed.
        length: episode length; defaults to H (required for purely discounted MDPs).

        Returns :class:`Trajectories` with arrays ``(B, T)``.
        """
        rngs = per_seed_generators(rng, n_seeds, policy)
        pol, U, T = self.rollout_inputs(policy, rngs, length)
        bernoulli = self.reward_model == "bernoulli"
        episodes = sample_episodes(
            self.mu0, self.A, pol, U, T, self.horizon, self.reward, bernoulli, self._sample_next
        )
        return Trajectories(*episodes)

    def rollout_inputs(
        self, policy, rngs: list[np.random.Generator], length: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """What a rollout samples from: the checked policy batched over the B = ``len(rngs)``
        seeds (``(B, Hp, S)`` int or ``(B, Hp, S, A)``), the per-seed uniforms ``U (B, 1 + 3T)``
        (``rng.random(1 + 3T)`` per seed: initial state, then per step action, transition,
        reward) and T (``length``, default H). Used by :meth:`rollout` and by the backends'
        ``rollout_mdp``, so both draw the same numbers."""
        B = len(rngs)
        T = length if length is not None else self.horizon
        if T is None:
            raise ValueError("a discounted MDP has no horizon: pass length=T to rollout")
        pol = np.asarray(policy)
        batched = pol.ndim >= 1 and (
            (np.issubdtype(pol.dtype, np.integer) and pol.ndim == 3)
            or (not np.issubdtype(pol.dtype, np.integer) and pol.ndim == 4)
        )
        pol = self.check_policy(pol, batched=batched)
        if not batched:
            pol = np.broadcast_to(pol, (B, *pol.shape))
        elif pol.shape[0] != B:
            raise InvalidPolicyError(f"policy has {pol.shape[0]} seeds, rollout has {B}")
        U = np.stack([g.random(1 + 3 * T) for g in rngs])  # (B, 1 + 3T)
        return pol, U, T


def per_seed_generators(rng, n_seeds, policy=None) -> list[np.random.Generator]:
    """One generator per seed from a Generator (spawned), a list of Generators, or an int seed;
    ``n_seeds`` may be inferred from a batched ``policy``."""
    if isinstance(rng, (list, tuple)):
        gens = list(rng)
        if n_seeds is not None and len(gens) != n_seeds:
            raise ValueError(f"got {len(gens)} generators for n_seeds={n_seeds}")
        return gens
    if n_seeds is None:
        pol = np.asarray(policy)
        is_int = np.issubdtype(pol.dtype, np.integer)
        n_seeds = pol.shape[0] if (pol.ndim == 3 and is_int) or (pol.ndim == 4) else 1
    if n_seeds < 1:
        raise ValueError(f"n_seeds must be >= 1, got {n_seeds}")
    if rng is None or isinstance(rng, (int, np.integer)):
        return [np.random.default_rng(s) for s in np.random.SeedSequence(rng).spawn(n_seeds)]
    if isinstance(rng, np.random.Generator):
        return rng.spawn(n_seeds)
    raise TypeError(f"rng must be a Generator, a list of Generators or an int, got {type(rng)}")
