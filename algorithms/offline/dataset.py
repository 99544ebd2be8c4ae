r"""Offline datasets: transitions drawn from a behaviour policy, batched over seeds.

An offline algorithm sees only a dataset ``D = {(h_i, s_i, a_i, r_i, s'_i)}`` collected by a
behaviour policy pi_b on the true MDP, never the MDP itself. This module builds such datasets with
a *known* data distribution, so that coverage quantities (C*, theorylab.algorithms.offline.coverage)
and sub-optimality are exact.

Behaviour policies (:func:`behaviour_policy`): a per-state mixture

    pi_b(. | h, s) = w * pi*(. | h, s) + (1 - w) * pi_other(. | h, s),       w = ``coverage``

of an optimal policy pi* (deterministic, from exact planning; ties to the smallest action) and
``other``:

* ``"uniform"``: the uniform policy over the A actions;
* ``"adversarial"``: uniform over the *strictly sub-optimal* actions at (h, s) (those with
  ``Q*_h(s, a) < V*_h(s) - 1e-9 (1 + |V*_h(s)|)``); where every action is optimal it is uniform.
  It never plays an optimal action, so pi* is covered only through the weight w: C* = 1 / w on
  the states pi* visits (C* = infinity at w = 0).

w = 1 is expert data (C* = 1); w = 0 with ``"uniform"`` is the uniform-exploration dataset.

Dataset kinds (``kind``):

* finite horizon, ``"trajectories"``: K = floor(N / H) episodes of pi_b from mu0 (N = K H
  transitions recorded; every episode contributes one sample per stage h). Stored episode-major:
  sample ``k H + h`` is stage h of episode k.
* finite horizon, ``"samples"``: N independent draws ``(h, s, a) ~ d^{pi_b}_h(s, a) / H`` (a uniform
  stage, then the stage occupancy), ``r ~ R_h(s, a)``, ``s' ~ P_h(. | s, a)``.
* discounted, ``"samples"`` (the setting of Rashidinejad et al. 2021): N independent draws
  ``(s, a) ~ d^{pi_b}(s, a)``, the normalised discounted occupancy
  ``(1 - gamma) sum_t gamma^t Pr^{pi_b}(s_t = s, a_t = a | s_0 ~ mu0)``, then r and s'.
* discounted, ``"trajectories"``: K parallel runs of length L of the *restart chain* of pi_b:
  after each transition (s, a, r, s') the chain continues from s' with probability gamma and
  restarts from mu0 otherwise. Its stationary distribution is exactly d^{pi_b}, so long runs have
  the discounted occupancy as their marginal; runs start at mu0, so the first ~1/(1 - gamma)
  steps of each run are biased towards mu0 (documented, not corrected). Samples are correlated.

``data_distribution`` is the exact distribution each sample's (h, s, a) is drawn from: the stage
occupancies ``(H, S, A)`` of pi_b (each stage sums to 1) for finite horizon, ``d^{pi_b} (S, A)``
discounted. Single-policy concentrability is computed against it.

Randomness: seed index i draws from ``theorylab.seeding.generators(seed, [i], ENV_STREAM)`` in a
fixed pattern, so seed i's dataset is identical alone or in a batch (tests check it). Sampling is
vectorised over the N samples (inverse-CDF with one ``searchsorted`` over all rows, see
:class:`NextStateSampler`); Python loops run over seeds and stages only. From
``COMPILED_DRAW_MIN`` seed-samples (``engine="auto"``) the same draws are made by the numba
drawers of ``sweep_kernel`` (parallel over seeds, stepping the same PCG64 streams, searching with
numpy's rule): the same arrays, bit for bit (tests/test_offline_compiled_sweep.py), 6-8x faster
(drawing was 70-90% of an offline run's time, docs/long-runs.md).

Weighted datasets: a dataset may carry ``weights (B, N)``, the multiplicity of each row.
:func:`population_dataset` uses this to build the "infinite data" limit exactly: one row per
(h, s, a, s') with weight ``mass * mu(h, s, a) * P(s'|s, a)``; every algorithm reads weighted
counts, so its empirical model *is* the true model on the support of mu.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
import scipy.sparse as sp

from theorylab.errors import TheorylabError
from theorylab.seeding import ENV_STREAM, generators, seed_indices

OTHER_POLICIES = ("uniform", "adversarial")
ENGINES = ("auto", "numpy", "compiled")
DatasetKind = Literal["trajectories", "samples"]
OPTIMAL_TIE_TOL = 1e-9  # relative tolerance for "strictly sub-optimal" actions


class InvalidDatasetError(TheorylabError, ValueError):
    """An offline dataset, or a request for one, is not valid (shapes, ranges, parameters)."""


class InvalidDatasetSizeError(InvalidDatasetError):
    """The number of samples N is negative or not an integer."""


class InvalidCoverageError(InvalidDatasetError):
    """The coverage weight w of the behaviour mixture lies outside [0, 1]."""


class EmptyDatasetError(InvalidDatasetError):
    """An algorithm was given a dataset with no transitions (N = 0, or zero total weight)."""


@dataclass(frozen=True)
class OfflineDataset:
    """N transitions per seed, for B seeds. Every array has a leading seed axis B.

    states, actions, next_states: ``(B, N)`` int64; rewards: ``(B, N)`` float64;
    stages: ``(B, N)`` int64 stage index h (0-based) for finite-horizon data, None when discounted;
    weights: ``(B, N)`` float64 multiplicities, or None (every row counts once).
    S, A, horizon, gamma, mu0: the sizes and objective of the MDP the data came from (an algorithm
    may read these -- they are not the model).
    kind: "trajectories" or "samples" (module docstring). seed, seed_indices: the root seed and
    the seed index of each batch row. n_episodes: K for trajectory data.
    behaviour: the behaviour policy ``(H, S, A)`` / ``(S, A)`` (None if unknown).
    data_distribution: the exact sampling distribution of (h, s, a) (module docstring), or None.
    info: how the data was made (coverage weight, other policy, requested N, trajectory length).
    """

    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_states: np.ndarray
    stages: np.ndarray | None
    S: int
    A: int
    horizon: int | None
    gamma: float | None
    mu0: np.ndarray
    kind: str = "samples"
    seed: int = 0
    seed_indices: tuple[int, ...] = (0,)
    weights: np.ndarray | None = None
    n_episodes: int | None = None
    behaviour: np.ndarray | None = None
    data_distribution: np.ndarray | None = None
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        arrays = {
            "states": self.states,
            "actions": self.actions,
            "rewards": self.rewards,
            "next_states": self.next_states,
        }
        if self.stages is not None:
            arrays["stages"] = self.stages
        if self.weights is not None:
            arrays["weights"] = self.weights
        shape = np.shape(self.states)
        if len(shape) != 2:
            raise InvalidDatasetError(f"states must have shape (B, N), got {shape}")
        for name, arr in arrays.items():
            if np.shape(arr) != shape:
                raise InvalidDatasetError(f"{name} has shape {np.shape(arr)}, states has {shape}")
        if len(self.seed_indices) != shape[0]:
            raise InvalidDatasetError(
                f"{len(self.seed_indices)} seed indices for {shape[0]} batch rows"
            )
        if (self.horizon is None) != (self.stages is None):
            raise InvalidDatasetError(
                "finite-horizon data needs stages (B, N); discounted data has stages=None"
            )
        if self.horizon is None and self.gamma is None:
            raise InvalidDatasetError("a dataset needs a horizon or a discount gamma")
        if self.kind not in ("trajectories", "samples"):
            raise InvalidDatasetError(f"kind must be 'trajectories' or 'samples', got {self.kind}")
        if shape[1] == 0:
            return
        for name, hi in (("states", self.S), ("next_states", self.S), ("actions", self.A)):
            arr = arrays[name]
            if arr.min() < 0 or arr.max() >= hi:
                raise InvalidDatasetError(f"{name} must lie in 0..{hi - 1}")
        if self.stages is not None and (self.stages.min() < 0 or self.stages.max() >= self.horizon):
            raise InvalidDatasetError(f"stages must lie in 0..{self.horizon - 1}")
        if not np.all(np.isfinite(self.rewards)):
            raise InvalidDatasetError("rewards must be finite")
        if self.weights is not None and (
            not np.all(np.isfinite(self.weights)) or self.weights.min() < 0
        ):
            raise InvalidDatasetError("weights must be finite and non-negative")

    # ------------------------------------------------------------------ sizes
    @property
    def n_seeds(self) -> int:
        return int(self.states.shape[0])

    @property
    def N(self) -> int:
        """Rows per seed (transitions recorded; for weighted data see ``total_weight``)."""
        return int(self.states.shape[1])

    @property
    def total_weight(self) -> np.ndarray:
        """``(B,)`` effective number of samples: N, or the sum of the weights."""
        if self.weights is None:
            return np.full(self.n_seeds, float(self.N))
        return self.weights.sum(axis=1)

    @property
    def finite_horizon(self) -> bool:
        return self.horizon is not None

    @property
    def episodes_per_stage(self) -> float:
        """K in PEVI's log term: trajectories K, else N / H samples per stage (N discounted)."""
        if self.n_episodes is not None:
            return float(self.n_episodes)
        return float(self.total_weight.max()) / (self.horizon or 1)

    def only(self, i: int) -> OfflineDataset:
        """Batch row i alone (a dataset with B = 1)."""
        return self.select([i])

    def select(self, rows) -> OfflineDataset:
        """The dataset of the batch rows ``rows`` (a slice or an index list), as its own batch."""
        idx = np.arange(self.n_seeds)[rows]
        idx = np.atleast_1d(idx)

        def take(a):
            return None if a is None else np.ascontiguousarray(a[idx])

        return replace(
            self,
            states=take(self.states),
            actions=take(self.actions),
            rewards=take(self.rewards),
            next_states=take(self.next_states),
            stages=take(self.stages),
            weights=take(self.weights),
            seed_indices=tuple(self.seed_indices[i] for i in idx),
        )

    def head(self, n: int) -> OfflineDataset:
        """The first n rows of every seed (a smaller dataset of the same draw: nested N sweeps)."""
        if n < 0 or n > self.N:
            raise InvalidDatasetSizeError(f"head(n) needs 0 <= n <= N = {self.N}, got {n}")
        if self.kind == "trajectories" and self.horizon is not None and n % self.horizon:
            raise InvalidDatasetSizeError(
                f"trajectory data is cut at whole episodes: n must be a multiple of H = "
                f"{self.horizon}, got {n}"
            )

        def cut(a):
            return None if a is None else a[:, :n]

        n_ep = None
        if self.n_episodes is not None:
            n_ep = n // self.horizon if self.horizon is not None else None
        info = dict(self.info)
        info["requested_size"] = n
        return replace(
            self,
            states=cut(self.states),
            actions=cut(self.actions),
            rewards=cut(self.rewards),
            next_states=cut(self.next_states),
            stages=cut(self.stages),
            weights=cut(self.weights),
            n_episodes=n_ep,
            info=info,
        )

    def summary(self) -> dict:
        return {
            "kind": self.kind,
            "N": self.N,
            "seeds": list(self.seed_indices),
            "seed": self.seed,
            "S": self.S,
            "A": self.A,
            "H": self.horizon,
            "gamma": self.gamma,
            "weighted": self.weights is not None,
            **self.info,
        }


# ------------------------------------------------------------------------------ behaviour
def check_coverage(coverage) -> float:
    try:
        w = float(coverage)
    except (TypeError, ValueError):
        raise InvalidCoverageError(
            f"coverage must be a number in [0, 1], got {coverage!r}"
        ) from None
    if not 0.0 <= w <= 1.0:
        raise InvalidCoverageError(
            f"coverage is the weight of the optimal policy in the behaviour mixture and must lie "
            f"in [0, 1], got {coverage!r}"
        )
    return w


def behaviour_policy(mdp, coverage: float, other: str = "uniform", *, solution=None) -> np.ndarray:
    """The mixture ``w pi* + (1 - w) pi_other`` (module docstring), stochastic.

    Returns ``(H, S, A)`` for a finite-horizon MDP and ``(S, A)`` for a discounted one.
    ``solution``: the exact planner's Solution of ``mdp`` (computed when None).
    """
    from theorylab.algorithms.offline.coverage import optimal_solution

    w = check_coverage(coverage)
    if other not in OTHER_POLICIES:
        raise InvalidDatasetError(f"other must be one of {OTHER_POLICIES}, got {other!r}")
    sol = optimal_solution(mdp) if solution is None else solution
    A = mdp.A
    expert = np.eye(A)[np.asarray(sol.policy)]  # (H, S, A) or (S, A)
    if other == "uniform":
        alt = np.full(expert.shape, 1.0 / A)
    else:
        Q = np.asarray(sol.Q)  # (H, S, A) or (S, A)
        V = Q.max(axis=-1, keepdims=True)
        bad = Q < V - OPTIMAL_TIE_TOL * (1.0 + np.abs(V))
        nbad = bad.sum(axis=-1, keepdims=True)
        alt = np.where(nbad > 0, bad / np.maximum(nbad, 1), 1.0 / A)
    return w * expert + (1.0 - w) * alt


# ------------------------------------------------------------------------------ sampling
class NextStateSampler:
    """Inverse-CDF sampling of ``s' ~ P_h(.|s, a)`` for many pairs at once, dense or sparse P.

    All rows' cumulative probabilities are laid end to end as one increasing array ``row + cdf``
    (row r's entries lie in (r, r + 1]); a uniform u for row r is located with one
    ``searchsorted(r + u)`` over the whole array: O(n log(nnz)) for n samples and no (n, S)
    temporary. A cdf that rounds below 1 is clamped to the row's last positive entry, so a
    zero-probability state is never drawn. Relative error of the sampling distribution: the
    round-off of ``r + u``, below 1e-12 for S*A < 10^4.
    """

    def __init__(self, mdp) -> None:
        self.S, self.A = mdp.S, mdp.A
        self.stages = []
        for h in range(mdp.n_stages):
            M = mdp.P_flat(h)
            n_rows = self.S * self.A
            if sp.issparse(M):
                M = sp.csr_array(M)
                M.sum_duplicates()
                data, indices, indptr = M.data, M.indices.astype(np.int64), M.indptr
                row = np.repeat(np.arange(n_rows), np.diff(indptr))
                csum = np.cumsum(data)
                start = np.concatenate(([0.0], csum))[indptr[:-1]]  # (rows,) mass before row
                cdf = csum - start[row]
                keys = row + cdf
                pos = np.where(data > 0, np.arange(data.size), -1)
                last = np.maximum.accumulate(pos)[np.maximum(indptr[1:] - 1, 0)]
                self.stages.append((keys, indices, last))
            else:
                M = np.asarray(M)
                cdf = np.cumsum(M, axis=1)  # (S*A, S)
                keys = (np.arange(n_rows)[:, None] + cdf).ravel()
                indices = np.tile(np.arange(self.S, dtype=np.int64), n_rows)
                lastcol = self.S - 1 - np.argmax(M[:, ::-1] > 0, axis=1)
                last = np.arange(n_rows) * self.S + lastcol
                self.stages.append((keys, indices, last))

    def sample(self, s: np.ndarray, a: np.ndarray, u: np.ndarray, h: int = 0) -> np.ndarray:
        """Next states for pairs ``(s, a)`` (arrays) from uniforms ``u`` in [0, 1)."""
        keys, indices, last = self.stages[min(h, len(self.stages) - 1)]
        row = s * self.A + a
        j = np.searchsorted(keys, row + u, side="right")
        return indices[np.minimum(j, last[row])]


def _sample_categorical(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Index of the first cdf entry > u (clamped to the last positive entry)."""
    j = np.searchsorted(cdf, u, side="right")
    pmf_last = len(cdf) - 1 - int(np.argmax(np.diff(np.concatenate(([0.0], cdf)))[::-1] > 0))
    return np.minimum(j, pmf_last)


def _rewards(mdp, h: np.ndarray | int, s: np.ndarray, a: np.ndarray, u: np.ndarray) -> np.ndarray:
    mean = (mdp.R[h, s, a] if mdp.reward_stage_dependent else mdp.R[s, a]).astype(np.float64)
    if mdp.reward_model == "deterministic":
        return mean
    return (u < mean).astype(np.float64)


def _check_size(size) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        if isinstance(size, float) and size.is_integer():
            size = int(size)
        else:
            raise InvalidDatasetSizeError(f"the dataset size N must be an integer, got {size!r}")
    if size < 0:
        raise InvalidDatasetSizeError(f"the dataset size N must be >= 0, got {size}")
    return int(size)


def make_dataset(
    mdp,
    size: int,
    *,
    coverage: float | None = None,
    other: str = "uniform",
    behaviour: np.ndarray | None = None,
    kind: DatasetKind | None = None,
    seeds: int | list[int] = 1,
    seed: int = 0,
    trajectory_length: int | None = None,
    data_distribution: np.ndarray | None = None,
    engine: str = "auto",
) -> OfflineDataset:
    """Draw an offline dataset of N = ``size`` transitions per seed from a behaviour policy.

    mdp: the true model (TabularMDP, or any model with its interface, e.g. a LinearMDP).
    coverage, other: the behaviour mixture ``coverage * pi* + (1 - coverage) * other`` (module
        docstring); or pass ``behaviour`` explicitly (``(H, S, A)`` / ``(S, A)`` stochastic).
    kind: "trajectories" (default for finite horizon) or "samples" (default when discounted).
    seeds: B, or explicit seed indices; seed: the root seed (``theorylab.seeding``).
    trajectory_length: L of a discounted restart-chain run (default ``ceil(1 / (1 - gamma))``).
    data_distribution: instead of a behaviour policy, an arbitrary sampling distribution mu of
        (s, a) -- ``(S, A)`` discounted, ``(H, S, A)`` finite horizon (each stage sums to 1) --
        for ``kind="samples"`` (Rashidinejad et al.'s setting: mu need not be an occupancy, e.g.
        covariate shift). ``behaviour`` is then None.
    engine: "numpy" (the vectorised draws below), "compiled" (the same draws by numba drawers
        stepping the same PCG64 streams, parallel over seeds: the same arrays; i.i.d. samples and
        finite-horizon trajectories, deterministic or Bernoulli rewards) or "auto" (default:
        compiled from ``COMPILED_DRAW_MIN`` seed-samples when it applies).

    Raises InvalidDatasetSizeError (N < 0 or not an integer), InvalidCoverageError (coverage
    outside [0, 1]), InvalidDatasetError (anything else invalid).
    """
    from theorylab.algorithms.offline.coverage import occupancy, optimal_solution

    size = _check_size(size)
    finite = mdp.horizon is not None
    kind = kind or ("trajectories" if finite else "samples")
    if kind not in ("trajectories", "samples"):
        raise InvalidDatasetError(f"kind must be 'trajectories' or 'samples', got {kind!r}")
    given = sum(x is not None for x in (coverage, behaviour, data_distribution))
    if given != 1:
        raise InvalidDatasetError(
            "give exactly one of coverage= (with other=), behaviour= or data_distribution="
        )
    if engine not in ENGINES:
        raise InvalidDatasetError(f"engine must be one of {ENGINES}, got {engine!r}")
    info: dict = {"requested_size": size}
    H = mdp.horizon
    if data_distribution is not None:
        return _from_distribution(mdp, size, data_distribution, kind, seeds, seed, info, engine)
    if behaviour is None:
        w = check_coverage(coverage)
        pol = behaviour_policy(mdp, w, other, solution=optimal_solution(mdp))
        info.update(coverage=w, other=other)
    else:
        pol = np.asarray(behaviour, dtype=np.float64)
        info.update(coverage=None, other="given")
    shape = (H, mdp.S, mdp.A) if finite else (mdp.S, mdp.A)
    if pol.shape != shape:
        raise InvalidDatasetError(f"behaviour policy must have shape {shape}, got {pol.shape}")
    if np.any(pol < 0) or np.any(np.abs(pol.sum(-1) - 1) > 1e-9):
        raise InvalidDatasetError("behaviour policy rows must be probability distributions")
    mu = occupancy(mdp, pol)
    idx = seed_indices(seeds)
    rngs = generators(seed, idx, ENV_STREAM)
    sampler = NextStateSampler(mdp)
    n_episodes = None
    L = None
    if finite and kind == "trajectories":
        n_episodes = size // H
        size = n_episodes * H
    elif not finite and kind == "trajectories":
        L = trajectory_length or int(np.ceil(1.0 / (1.0 - mdp.gamma)))
        if L < 1:
            raise InvalidDatasetError(f"trajectory_length must be >= 1, got {L}")
        info["trajectory_length"] = L

    def draw(g: np.random.Generator) -> tuple:
        """One seed's (s, a, r, s', h) arrays of length N, from its own generator."""
        if finite and kind == "trajectories":
            return _finite_trajectories(mdp, pol, n_episodes, g, sampler)
        if finite:
            return _finite_samples(mdp, mu, size, g, sampler)
        if kind == "samples":
            return _discounted_samples(mdp, mu, size, g, sampler)
        n_runs = -(-size // L) if size else 0
        run = _restart_chain(mdp, pol, n_runs, L, g, sampler)
        return tuple(None if x is None else x[:size] for x in run)

    if _compiled(engine, mdp, kind, size, len(idx)):
        *stack, stages = _draw_compiled(mdp, kind, size, mu, pol, rngs)
        stages = stages if finite else None
    else:
        parts = [draw(g) for g in rngs]  # per seed: (s, a, r, s', h)
        stack = [np.stack([p[j] for p in parts]) for j in range(4)]
        stages = np.stack([p[4] for p in parts]) if finite else None
    return OfflineDataset(
        states=stack[0],
        actions=stack[1],
        rewards=stack[2],
        next_states=stack[3],
        stages=stages,
        S=mdp.S,
        A=mdp.A,
        horizon=H,
        gamma=mdp.gamma if not finite else None,
        mu0=np.asarray(mdp.mu0),
        kind=kind,
        seed=int(seed),
        seed_indices=tuple(idx),
        n_episodes=n_episodes,
        behaviour=pol,
        data_distribution=mu,
        info=info,
    )


def _compiled(engine: str, mdp, kind: str, size: int, B: int) -> bool:
    """Whether make_dataset draws with the compiled drawers (``engine``, module docstring)."""
    if engine == "numpy":
        return False
    why = compiled_draw_unavailable(mdp, kind, size)
    if engine == "compiled" and why is not None:
        raise InvalidDatasetError(f"engine='compiled': {why}; use engine='numpy' or 'auto'")
    return why is None and (engine == "compiled" or B * size >= COMPILED_DRAW_MIN)


def _from_distribution(mdp, size, mu, kind, seeds, seed, info, engine="auto") -> OfflineDataset:
    """i.i.d. samples from a given data distribution mu (see ``make_dataset``)."""
    finite = mdp.horizon is not None
    if kind != "samples":
        raise InvalidDatasetError("data_distribution= draws independent samples: kind='samples'")
    mu = np.asarray(mu, dtype=np.float64)
    shape = (mdp.horizon, mdp.S, mdp.A) if finite else (mdp.S, mdp.A)
    if mu.shape != shape:
        raise InvalidDatasetError(f"data_distribution must have shape {shape}, got {mu.shape}")
    sums = mu.reshape(mu.shape[0], -1).sum(axis=1) if finite else np.array([mu.sum()])
    if np.any(mu < 0) or np.any(np.abs(sums - 1.0) > 1e-9):
        raise InvalidDatasetError("data_distribution must be non-negative and sum to 1 per stage")
    idx = seed_indices(seeds)
    rngs = generators(seed, idx, ENV_STREAM)
    if _compiled(engine, mdp, kind, size, len(idx)):
        *stack, stages = _draw_compiled(mdp, kind, size, mu, None, rngs)
    else:
        sampler = NextStateSampler(mdp)
        draw = _finite_samples if finite else _discounted_samples
        parts = [draw(mdp, mu, size, g, sampler) for g in rngs]
        stack = [np.stack([p[j] for p in parts]) for j in range(4)]
        stages = np.stack([p[4] for p in parts]) if finite else None
    info.update(coverage=None, other="data_distribution")
    return OfflineDataset(
        states=stack[0],
        actions=stack[1],
        rewards=stack[2],
        next_states=stack[3],
        stages=stages if finite else None,
        S=mdp.S,
        A=mdp.A,
        horizon=mdp.horizon,
        gamma=None if finite else mdp.gamma,
        mu0=np.asarray(mdp.mu0),
        kind="samples",
        seed=int(seed),
        seed_indices=tuple(idx),
        behaviour=None,
        data_distribution=mu,
        info=info,
    )


def _policy_actions(pol_hs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Actions from stochastic rows ``pol_hs (n, A)`` with uniforms ``u (n,)``."""
    cdf = np.cumsum(pol_hs, axis=1)
    a = (cdf <= u[:, None]).sum(axis=1)
    # clamp to the last action with positive probability (a cdf that rounds below 1)
    last = pol_hs.shape[1] - 1 - np.argmax(pol_hs[:, ::-1] > 0, axis=1)
    return np.minimum(a, last)


def _finite_trajectories(mdp, pol, K, g, sampler):
    """K episodes of pi_b; uniforms drawn as one (K, 1 + 3H) block (initial, then per step:
    action, transition, reward), so seed i's data does not depend on the batch."""
    H, S = mdp.horizon, mdp.S
    U = g.random((K, 1 + 3 * H))
    s = _sample_categorical(np.cumsum(mdp.mu0), U[:, 0]) if K else np.zeros(0, np.int64)
    s = s.astype(np.int64)
    out = np.empty((5, K, H), dtype=np.float64)
    for h in range(H):
        a = _policy_actions(pol[h, s], U[:, 1 + 3 * h])
        s_next = sampler.sample(s, a, U[:, 2 + 3 * h], h)
        r = _rewards(mdp, h, s, a, U[:, 3 + 3 * h])
        out[0, :, h], out[1, :, h], out[2, :, h], out[3, :, h] = s, a, r, s_next
        out[4, :, h] = h
        s = s_next
    del S
    flat = out.reshape(5, K * H)
    return (
        flat[0].astype(np.int64),
        flat[1].astype(np.int64),
        flat[2],
        flat[3].astype(np.int64),
        flat[4].astype(np.int64),
    )


def _finite_samples(mdp, mu, n, g, sampler):
    """n independent (h, s, a) ~ mu_h(s, a) / H, then r and s'. Uniforms: (4, n)."""
    H, S, A = mu.shape
    U = g.random((4, n))
    cdf = np.cumsum(mu.ravel() / H)
    flat = _sample_categorical(cdf / cdf[-1], U[0])  # (n,) index h*S*A + s*A + a
    h, rest = np.divmod(flat, S * A)
    s, a = np.divmod(rest, A)
    s_next = np.empty(n, dtype=np.int64)
    for hh in range(H):  # one searchsorted per stage
        m = h == hh
        s_next[m] = sampler.sample(s[m], a[m], U[1][m], hh)
    r = _rewards(mdp, h, s, a, U[2])
    return s.astype(np.int64), a.astype(np.int64), r, s_next, h.astype(np.int64)


def _discounted_samples(mdp, mu, n, g, sampler):
    """n independent (s, a) ~ d^{pi_b}, then r and s'. Uniforms: (3, n)."""
    A = mdp.A
    U = g.random((3, n))
    cdf = np.cumsum(mu.ravel())
    flat = _sample_categorical(cdf / cdf[-1], U[0])
    s, a = np.divmod(flat, A)
    s_next = sampler.sample(s, a, U[1], 0)
    r = _rewards(mdp, 0, s, a, U[2])
    return s.astype(np.int64), a.astype(np.int64), r, s_next, None


def _restart_chain(mdp, pol, n_runs, L, g, sampler):
    """n_runs runs of length L of the restart chain; uniforms (n_runs, 1 + 5L)."""
    U = g.random((n_runs, 1 + 5 * L))
    cdf0 = np.cumsum(mdp.mu0)
    s = _sample_categorical(cdf0, U[:, 0]).astype(np.int64)
    out = np.empty((4, n_runs, L))
    for t in range(L):
        u = U[:, 1 + 5 * t : 6 + 5 * t]
        a = _policy_actions(pol[s], u[:, 0])
        s_next = sampler.sample(s, a, u[:, 1], 0)
        r = _rewards(mdp, 0, s, a, u[:, 2])
        out[0, :, t], out[1, :, t], out[2, :, t], out[3, :, t] = s, a, r, s_next
        restart = u[:, 3] >= mdp.gamma
        s = np.where(restart, _sample_categorical(cdf0, u[:, 4]), s_next).astype(np.int64)
    flat = out.reshape(4, n_runs * L)
    return (
        flat[0].astype(np.int64),
        flat[1].astype(np.int64),
        flat[2],
        flat[3].astype(np.int64),
        None,
    )


# ------------------------------------------------------------------------------ compiled draw
# make_dataset's draws, made by the numba drawers of ``sweep_kernel`` (which the offline runner's
# compiled N-sweep shares): the same uniforms and the same searches, so the same arrays.
COMPILED_DRAW_MIN = 1_000_000
"""Seed-samples (B N) from which ``make_dataset(engine="auto")`` draws with the compiled
drawers (below, numba's one-off compilation costs more than it saves)."""


def _pcg64_offsets(rngs, offsets) -> np.ndarray:
    """``(B, len(offsets), 4)`` uint64 PCG64 states of each generator advanced by each offset
    (``theorylab.kernels.pcg64.pcg64_random``'s layout: state hi, lo, increment hi,
    lo)."""
    mask = (1 << 64) - 1
    out = np.empty((len(rngs), len(offsets), 4), np.uint64)
    for b, g in enumerate(rngs):
        if g.bit_generator.state.get("bit_generator") != "PCG64":
            raise InvalidDatasetError("the compiled draw steps numpy's PCG64 (theorylab.seeding)")
        for j, off in enumerate(offsets):
            bg = np.random.PCG64()
            bg.state = g.bit_generator.state
            bg.advance(int(off))
            st = bg.state["state"]
            s, inc = st["state"], st["inc"]
            out[b, j] = (s >> 64, s & mask, inc >> 64, inc & mask)
    return out


def _sampler_arrays(mdp):
    """NextStateSampler's per-stage (keys, indices, last) laid end to end: keys, indices
    ``(total,)``, last ``(stages, S*A)`` (positions within the stage), offsets ``(stages + 1,)``."""
    smp = NextStateSampler(mdp)
    keys = np.concatenate([k for k, _, _ in smp.stages]).astype(np.float64)
    idx = np.concatenate([i for _, i, _ in smp.stages]).astype(np.int32)
    last = np.stack([np.asarray(la, dtype=np.int64) for _, _, la in smp.stages])
    off = np.concatenate(([0], np.cumsum([k.size for k, _, _ in smp.stages]))).astype(np.int64)
    return keys, idx, last, off


GUIDE_MAX_ENTRIES = 2**22  # per stage: rows x (G + 1) bucket bounds of the next-state search


def _pow2_at_least(x: float) -> int:
    return 1 << max(0, math.ceil(math.log2(max(x, 1.0))))


def _guide(arr: np.ndarray, starts: np.ndarray, G: int) -> np.ndarray:
    """Bucket bounds of ``sweep_kernel._guided``: for each start r and b = 0..G, the number of
    entries of the sorted ``arr`` that are <= r + b / G (the same float64 sum the search key
    r + u is), ``(len(starts) * (G + 1),)`` int64."""
    thresholds = starts[:, None] + np.arange(G + 1, dtype=np.float64)[None, :] / G
    return np.searchsorted(arr, thresholds.ravel(), side="right").astype(np.int64)


def _guides(cat_cdf, keys, koff, rows: int):
    """Whether every searched array is sorted (then the guided search returns the unique
    answer, numpy's), and the guide tables of the categorical and the next-state searches."""
    stages = [keys[koff[i] : koff[i + 1]] for i in range(len(koff) - 1)]
    fast = bool(np.all(np.diff(cat_cdf) >= 0)) and all(
        bool(np.all(np.diff(k) >= 0)) for k in stages
    )
    G_cat = _pow2_at_least(4 * cat_cdf.size)
    cat_tab = _guide(cat_cdf, np.zeros(1), G_cat)
    G_ns = _pow2_at_least(2 * max(k.size for k in stages) / rows)
    while G_ns > 1 and rows * (G_ns + 1) > GUIDE_MAX_ENTRIES:
        G_ns //= 2
    starts = np.arange(rows, dtype=np.float64)
    ns_tab = np.stack([_guide(k, starts, G_ns) for k in stages])
    return fast, cat_tab, G_cat, ns_tab, G_ns


def _categorical(cdf: np.ndarray) -> tuple[np.ndarray, int]:
    """``_sample_categorical``'s cdf and clamp (last entry with positive mass)."""
    pmf_last = len(cdf) - 1 - int(np.argmax(np.diff(np.concatenate(([0.0], cdf)))[::-1] > 0))
    return np.ascontiguousarray(cdf, dtype=np.float64), pmf_last


def compiled_draw_unavailable(mdp, kind: str, size: int) -> str | None:
    """Why the compiled drawers cannot draw this dataset (a sentence), or None."""
    finite = mdp.horizon is not None
    if not finite and kind == "trajectories":
        return "discounted trajectory data (the restart chain) is drawn by numpy only"
    if getattr(mdp, "reward_model", None) not in ("deterministic", "bernoulli"):
        return f"reward model {getattr(mdp, 'reward_model', None)!r} is drawn by numpy only"
    if size >= 2**31 or (mdp.horizon or 1) * mdp.S * mdp.A >= 2**31:
        return "N or H S A >= 2^31"
    return None


def compiled_draw_inputs(mdp, kind: str, n: int, mu, pol, rngs) -> tuple:
    """The 22 data arguments of ``sweep_kernel.sweep`` / ``draw_batch`` for n rows per seed
    drawn from the generators ``rngs``: from the data distribution ``mu`` (samples) or the
    behaviour policy ``pol`` (trajectories), with make_dataset's own preparations."""
    from theorylab.algorithms.offline.sweep_kernel import DATA_SAMPLES, DATA_TRAJECTORIES

    finite = mdp.horizon is not None
    H = mdp.horizon if finite else 1
    A = mdp.A
    if kind == "samples":  # _finite_samples / _discounted_samples: g.random((3 or 4, n))
        rng = _pcg64_offsets(rngs, (0, n, 2 * n))
        flat_mu = mu.ravel() / H if finite else mu.ravel()
        cdf = np.cumsum(flat_mu)
        cat_cdf, cat_last = _categorical(cdf / cdf[-1])
        pol_cdf = np.zeros((1, 1, 1))
        pol_last = np.zeros((1, 1), np.int64)
    else:  # _finite_trajectories: g.random((K, 1 + 3 H)), one stream in order
        rng = np.repeat(_pcg64_offsets(rngs, (0,)), 3, axis=1)
        cat_cdf, cat_last = _categorical(np.cumsum(mdp.mu0))
        pol_cdf = np.ascontiguousarray(np.cumsum(pol, axis=-1))
        pol_last = (A - 1 - np.argmax(pol[..., ::-1] > 0, axis=-1)).astype(np.int64)
    keys, kidx, klast, koff = _sampler_arrays(mdp)
    R = np.asarray(mdp.R, dtype=np.float64)
    R3 = np.ascontiguousarray(R if mdp.reward_stage_dependent else R[None])
    return (
        DATA_TRAJECTORIES if kind == "trajectories" else DATA_SAMPLES,
        finite, H, mdp.S, A, n, rng, cat_cdf, cat_last, pol_cdf, pol_last, keys, kidx, klast,
        koff, R3, mdp.reward_model == "bernoulli", *_guides(cat_cdf, keys, koff, mdp.S * A),
    )  # fmt: skip


def _draw_compiled(mdp, kind: str, n: int, mu, pol, rngs) -> tuple:
    """(states, actions, rewards, next_states, stages) ``(B, n)`` from the compiled drawers."""
    import numba

    from theorylab.algorithms.offline.sweep_kernel import draw_batch

    B = len(rngs)
    out = [np.empty((B, n), np.int64), np.empty((B, n), np.int64), np.empty((B, n))]
    out += [np.empty((B, n), np.int64), np.empty((B, n), np.int64)]
    args = compiled_draw_inputs(mdp, kind, n, mu, pol, rngs)
    draw_batch(*args, max(1, min(B, numba.get_num_threads())), *out)
    return tuple(out)


# ------------------------------------------------------------------------------ population data
def population_dataset(
    mdp,
    *,
    coverage: float | None = None,
    other: str = "uniform",
    behaviour: np.ndarray | None = None,
    mass: float = 1e12,
    seeds: int | list[int] = 1,
    seed: int = 0,
) -> OfflineDataset:
    """The infinite-data limit: one weighted row per (h, s, a, s') with weight
    ``mass * mu(h, s, a) * P_h(s'|s, a)`` and reward the mean ``R_h(s, a)``.

    Every empirical quantity (counts, r_hat, P_hat, variances) then equals its population value
    on the support of the data distribution mu, with n(s, a) = mass * mu(s, a). ``kind`` is
    "samples"; the same rows are repeated for each of the B seeds.
    """
    from theorylab.algorithms.offline.coverage import occupancy, optimal_solution

    if not mass > 0:
        raise InvalidDatasetError(f"mass must be positive, got {mass}")
    finite = mdp.horizon is not None
    if behaviour is None:
        w = check_coverage(coverage if coverage is not None else 1.0)
        pol = behaviour_policy(mdp, w, other, solution=optimal_solution(mdp))
    else:
        pol = np.asarray(behaviour, dtype=np.float64)
    mu = occupancy(mdp, pol)
    H = mdp.horizon if finite else 1
    S, A = mdp.S, mdp.A
    rows = []
    for h in range(H):
        M = sp.coo_array(sp.csr_array(mdp.P_flat(h)))
        pair = M.row.astype(np.int64)  # s*A + a
        mu_h = (mu[h] if finite else mu).ravel()
        keep = (mu_h[pair] > 0) & (M.data > 0)
        pair, nxt, p = pair[keep], M.col.astype(np.int64)[keep], M.data[keep]
        s, a = np.divmod(pair, A)
        r = (mdp.reward(h)[s, a]).astype(np.float64)
        rows.append((s, a, r, nxt, np.full(s.size, h), mass * mu_h[pair] * p))
    cols = [np.concatenate([r[j] for r in rows]) for j in range(6)]
    idx = seed_indices(seeds)
    B = len(idx)

    def rep(x, dtype):
        return np.ascontiguousarray(np.broadcast_to(x.astype(dtype), (B, x.size)))

    return OfflineDataset(
        states=rep(cols[0], np.int64),
        actions=rep(cols[1], np.int64),
        rewards=rep(cols[2], np.float64),
        next_states=rep(cols[3], np.int64),
        stages=rep(cols[4], np.int64) if finite else None,
        S=S,
        A=A,
        horizon=mdp.horizon if finite else None,
        gamma=None if finite else mdp.gamma,
        mu0=np.asarray(mdp.mu0),
        kind="samples",
        seed=int(seed),
        seed_indices=tuple(idx),
        weights=rep(cols[5], np.float64),
        behaviour=pol,
        data_distribution=mu,
        info={"population": True, "mass": mass, "coverage": coverage, "other": other},
    )
