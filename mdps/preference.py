r"""Preference feedback on exactly known problems: comparison oracles and preference datasets.

Facts and provenance tags: docs/algorithms/preference-mle.md (Zhu, Jordan, Jiao, "Principled RLHF
from Pairwise or K-wise Comparisons", ICML 2023, arXiv:2301.11270, sections 2-4) and
docs/algorithms/nash-preference.md (general preferences).

Feedback models (every oracle is batched over seeds and counts its queries per seed):

* :class:`LinearBTLOracle` -- Bradley-Terry-Luce over a linear reward in known features:
  ``P(x1 preferred to x0) = sigma(<theta*, x1 - x0>)``. ``x`` is a feature vector phi(s, a) of an
  item, or the summed features psi(tau) = sum_h phi(s_h, a_h) of a whole trajectory
  (:func:`trajectory_features`), which gives BTL over trajectories with r*(tau) = <theta*, psi>.
* :class:`PlackettLuceOracle` -- K-wise rankings: ranking sigma (best first) has probability
  ``prod_j exp(r_{sigma(j)}) / sum_{k >= j} exp(r_{sigma(k)})`` (:func:`plackett_luce_probability`);
  sampled exactly by the Gumbel-max trick (sort r + Gumbel noise in decreasing order).
* :class:`TrajectoryBTLOracle` -- BTL over whole trajectories of a tabular MDP scored by its true
  mean rewards, asked per seed only where the learner chooses to (PR-LSVI's uncertainty rule).
* :class:`PreferenceMatrixOracle` -- a general preference matrix ``P[i, j] = P(i preferred to j)``
  with ``P + P^T = 1``; it need not come from any reward (intransitive cycles are allowed).
  :func:`btl_matrix` builds the BTL matrix of a reward vector.

Seeding (``theorylab.seeding``): an oracle gets one ``numpy.random.Generator`` per seed and draws
seed b's answers from ``rngs[b]`` only, in a fixed pattern per call, so seed b answers the same
alone or inside a batch and the same root seed gives the same answers.

Offline data (Zhu-Jordan-Jiao's contextual bandit, section 2): a :class:`ComparisonBandit` holds
known features ``phi (S, A, d)``, a context distribution ``rho (S,)`` and the true ``theta* (d,)``;
:class:`PairwiseDataset` and :class:`RankingDataset` hold per-seed comparisons. The coverage term of
Theorem 3.2, ``||(Sigma_D + lambda I)^{-1/2} E_{s~rho}[phi(s, pi(s)) - v]||_2``, is computed exactly
by :func:`coverage_term` (Sigma_D normalised by 1/n, as in the paper).

The Theorem 3.9 instance (``zjj-thm39``, [S]: the third-party reproduction cites Appendix B.3):
one context, d = 3, phi(a1..a4) = (1,1,0), (1,0,0), (0,0,0), (0,1,0), theta* = (-1, 0.1, 0.9),
B = 2; data: n - 1 comparisons of (a1, a2) and one of (a2, a3) (:func:`zjj_thm39_dataset`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

from theorylab.errors import TheorylabError
from theorylab.seeding import ENV_STREAM, generators, seed_indices

SUM_TOL = 1e-9


class PreferenceError(TheorylabError, ValueError):
    """Invalid preference input: a matrix, ranking size, feature shape or dataset that does not
    fit; the message names the offending index and value."""


def sigmoid(z: np.ndarray) -> np.ndarray:
    """The logistic link sigma(z) = 1 / (1 + e^{-z}) (``scipy.special.expit``)."""
    return expit(z)


def sigmoid_slope_min(radius: float) -> float:
    """min of sigma' on [-radius, radius]: 1 / (2 + e^{-radius} + e^{radius})."""
    return 1.0 / (2.0 + np.exp(-radius) + np.exp(radius))


# ------------------------------------------------------------------------------ validation
def _as_theta(theta, name: str = "theta") -> np.ndarray:
    t = np.array(theta, dtype=np.float64)
    if t.ndim != 1 or t.size < 1:
        raise PreferenceError(f"{name} must be a vector (d,), got shape {t.shape}")
    bad = ~np.isfinite(t)
    if bad.any():
        i = int(np.argwhere(bad)[0, 0])
        raise PreferenceError(f"{name} is not finite at index {i}: {t[i]}")
    return t


def _check_features(x: np.ndarray, d: int, name: str, trailing: int = 1) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < trailing or x.shape[-1] != d:
        raise PreferenceError(f"{name} must end in the feature dimension d = {d}, got {x.shape}")
    bad = ~np.isfinite(x)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise PreferenceError(f"{name} is not finite at index {idx}: {x[idx]}")
    return x


def validate_preference_matrix(P) -> np.ndarray:
    """Check ``P (N, N)``: finite, entries in [0, 1], ``P[i, j] + P[j, i] = 1`` (so P[i, i] = 1/2).

    Returns a float64 copy; raises :class:`PreferenceError` naming the first bad (i, j)."""
    M = np.array(P, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] < 1:
        raise PreferenceError(f"a preference matrix must be square (N, N), got shape {M.shape}")
    bad = ~np.isfinite(M)
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise PreferenceError(f"preference matrix is not finite at (i={i}, j={j}): {M[i, j]}")
    bad = (M < 0) | (M > 1)
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise PreferenceError(
            f"P[{i}, {j}] = {M[i, j]:.6g} is not a probability: entries must lie in [0, 1]"
        )
    S = M + M.T
    bad = np.abs(S - 1.0) > SUM_TOL
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise PreferenceError(
            f"P[{i}, {j}] + P[{j}, {i}] = {S[i, j]:.12g}, expected 1 (tolerance {SUM_TOL:g}): "
            "exactly one of the two items wins each comparison"
        )
    return M


def btl_matrix(rewards) -> np.ndarray:
    """``P[i, j] = sigma(r_i - r_j)``, the BTL preference matrix of a reward vector ``(N,)``."""
    r = _as_theta(rewards, "rewards")
    return sigmoid(r[:, None] - r[None, :])


def cyclic_preference_matrix(a: float = 0.3, b: float = 0.2, c: float = 0.1) -> np.ndarray:
    """A 3-cycle plus a dominated fourth item (no reward explains it): item 0 beats 1 with
    probability 1/2 + a, 1 beats 2 with 1/2 + c, 2 beats 0 with 1/2 + b, and each of 0, 1, 2
    beats item 3 with probability 0.9.

    The von Neumann winner is unique and known in closed form: p = (c, b, a, 0) / (a + b + c)
    (the kernel of the antisymmetric part on the cycle, see docs/algorithms/nash-preference.md)."""
    for name, v in (("a", a), ("b", b), ("c", c)):
        if not 0.0 < v <= 0.5:
            raise PreferenceError(f"cyclic_preference_matrix: {name} must lie in (0, 1/2], got {v}")
    M = np.zeros((4, 4))
    M[0, 1], M[1, 2], M[2, 0] = a, c, b
    M[0, 3] = M[1, 3] = M[2, 3] = 0.4
    M = M - M.T
    return 0.5 + M


# ------------------------------------------------------------------------------ oracles
class _CountingOracle:
    """Per-seed generators and per-seed query counters (``queries (B,)``)."""

    def __init__(self, rngs: Sequence[np.random.Generator]) -> None:
        self.rngs = list(rngs)
        if not self.rngs:
            raise PreferenceError("an oracle needs at least one generator (one per seed)")
        self.queries = np.zeros(len(self.rngs), dtype=np.int64)

    @property
    def n_seeds(self) -> int:
        return len(self.rngs)

    def _check_batch(self, arr: np.ndarray, name: str) -> None:
        if arr.ndim < 1 or arr.shape[0] != self.n_seeds:
            raise PreferenceError(
                f"{name} must have a leading seed axis of length {self.n_seeds}, got {arr.shape}"
            )


class LinearBTLOracle(_CountingOracle):
    """BTL over a linear reward: ``P(x1 > x0) = sigma(<theta*, x1 - x0>)``.

    theta: ``(d,)``; rngs: one generator per seed. ``compare(x1, x0, repeats)`` with
    ``x1, x0 (B, n, d)`` returns ``(B, n)`` win counts of x1 out of ``repeats`` independent
    comparisons and adds ``n * repeats`` to each seed's ``queries``."""

    def __init__(self, theta, rngs: Sequence[np.random.Generator]) -> None:
        super().__init__(rngs)
        self.theta = _as_theta(theta)
        self.d = self.theta.size

    def probability(self, x1, x0) -> np.ndarray:
        """Exact ``P(x1 > x0)``, shape of ``x1`` less its last axis."""
        x1 = _check_features(x1, self.d, "x1")
        x0 = _check_features(x0, self.d, "x0")
        return sigmoid((x1 - x0) @ self.theta)

    def compare(self, x1, x0, repeats: int = 1) -> np.ndarray:
        if isinstance(repeats, bool) or int(repeats) != repeats or repeats < 1:
            raise PreferenceError(f"repeats must be a positive integer, got {repeats!r}")
        x1 = np.asarray(x1, dtype=np.float64)
        x0 = np.asarray(x0, dtype=np.float64)
        if x1.ndim != 3 or x1.shape != x0.shape:
            raise PreferenceError(
                f"x1 and x0 must both have shape (B, n, d), got {x1.shape} and {x0.shape}"
            )
        self._check_batch(x1, "x1")
        p = self.probability(x1, x0)  # (B, n)
        out = np.empty(p.shape, dtype=np.int64)
        for b, rng in enumerate(self.rngs):
            out[b] = rng.binomial(int(repeats), p[b])
        self.queries += p.shape[1] * int(repeats)
        return out


class PlackettLuceOracle(_CountingOracle):
    """K-wise rankings under Plackett-Luce with reward ``<theta*, x>``.

    ``rank(x)`` with ``x (B, n, K, d)`` returns ``(B, n, K)`` positions 0..K-1 ordered best first
    (``out[b, i, 0]`` is the preferred item of query i) and adds n to each seed's ``queries``."""

    def __init__(self, theta, rngs: Sequence[np.random.Generator]) -> None:
        super().__init__(rngs)
        self.theta = _as_theta(theta)
        self.d = self.theta.size

    def rank(self, x) -> np.ndarray:
        x = _check_features(x, self.d, "x")
        if x.ndim != 4:
            raise PreferenceError(f"x must have shape (B, n, K, d), got {x.shape}")
        self._check_batch(x, "x")
        K = x.shape[2]
        if K < 2:
            raise PreferenceError(f"Plackett-Luce ranks K >= 2 items per query, got K = {K}")
        r = x @ self.theta  # (B, n, K)
        out = np.empty(r.shape, dtype=np.int64)
        for b, rng in enumerate(self.rngs):
            g = rng.gumbel(size=r.shape[1:])  # Gumbel-max: argsort of r + G is PL-distributed
            out[b] = np.argsort(-(r[b] + g), axis=-1, kind="stable")
        self.queries += r.shape[1]
        return out


def plackett_luce_probability(rewards, ranking) -> float:
    """Exact probability of ``ranking`` (item indices, best first) given ``rewards (K,)``."""
    r = _as_theta(rewards, "rewards")
    order = np.asarray(ranking, dtype=np.int64)
    K = r.size
    if K < 2:
        raise PreferenceError(f"Plackett-Luce needs K >= 2 items, got K = {K}")
    if order.shape != (K,) or sorted(order.tolist()) != list(range(K)):
        raise PreferenceError(f"ranking must be a permutation of 0..{K - 1}, got {order.tolist()}")
    z = r[order]
    logp = 0.0
    for j in range(K - 1):
        tail = z[j:]
        m = tail.max()
        logp += z[j] - (m + np.log(np.exp(tail - m).sum()))
    return float(np.exp(logp))


class PreferenceMatrixOracle(_CountingOracle):
    """A general (possibly intransitive) preference matrix ``P (N, N)``, ``P + P^T = 1``.

    ``compare(i, j, repeats)`` with integer arrays ``i, j (B, n)`` returns ``(B, n)`` win counts of
    item i over item j and adds ``n * repeats`` to each seed's ``queries``."""

    def __init__(self, P, rngs: Sequence[np.random.Generator]) -> None:
        super().__init__(rngs)
        self.P = validate_preference_matrix(P)
        self.N = self.P.shape[0]

    def compare(self, i, j, repeats: int = 1) -> np.ndarray:
        if isinstance(repeats, bool) or int(repeats) != repeats or repeats < 1:
            raise PreferenceError(f"repeats must be a positive integer, got {repeats!r}")
        i = np.asarray(i)
        j = np.asarray(j)
        if i.ndim != 2 or i.shape != j.shape:
            raise PreferenceError(f"i and j must both have shape (B, n), got {i.shape}, {j.shape}")
        self._check_batch(i, "i")
        for name, arr in (("i", i), ("j", j)):
            bad = (arr < 0) | (arr >= self.N)
            if bad.any():
                idx = tuple(int(v) for v in np.argwhere(bad)[0])
                raise PreferenceError(
                    f"{name}{list(idx)} = {arr[idx]} is not an item index in 0..{self.N - 1}"
                )
        p = self.P[i, j]
        out = np.empty(p.shape, dtype=np.int64)
        for b, rng in enumerate(self.rngs):
            out[b] = rng.binomial(int(repeats), p[b])
        self.queries += p.shape[1] * int(repeats)
        return out

    def compare_seed(self, b: int, i: int, j: int, repeats: int = 1) -> int:
        """Seed b alone: wins of item i over item j in ``repeats`` comparisons (drawn from
        ``rngs[b]``, counted in ``queries[b]``): for learners whose seeds query at different
        times."""
        if not (0 <= i < self.N and 0 <= j < self.N):
            raise PreferenceError(f"items ({i}, {j}) are not both in 0..{self.N - 1}")
        if isinstance(repeats, bool) or int(repeats) != repeats or repeats < 1:
            raise PreferenceError(f"repeats must be a positive integer, got {repeats!r}")
        self.queries[b] += int(repeats)
        return int(self.rngs[b].binomial(int(repeats), self.P[i, j]))


class TrajectoryBTLOracle(_CountingOracle):
    """BTL over whole trajectories of a tabular MDP: ``P(tau1 > tau0) = sigma(R(tau1) - R(tau0))``
    with ``R(tau) = sum_h r_h(s_h, a_h)`` the true mean rewards ``R (S, A)`` or ``(H, S, A)``.

    ``compare(s1, a1, s0, a0, ask)`` with ``(B, H)`` trajectories and ``ask (B,)`` booleans
    returns ``(B,)``: 1 if tau1 is preferred, 0 if tau0, -1 where the seed did not ask; each seed
    draws one uniform from its own generator per call whether it asks or not (so its answers do
    not depend on the other seeds) and ``queries`` counts the asks."""

    def __init__(self, R, H: int, rngs: Sequence[np.random.Generator]) -> None:
        super().__init__(rngs)
        R = np.asarray(R, dtype=np.float64)
        if R.ndim == 2:
            R = np.broadcast_to(R, (int(H), *R.shape))
        if R.ndim != 3 or R.shape[0] != H:
            raise PreferenceError(f"R must be (S, A) or (H, S, A) with H = {H}, got {R.shape}")
        self.R = R
        self.H = int(H)

    def trajectory_reward(self, states, actions) -> np.ndarray:
        """R(tau) = sum_h r_h(s_h, a_h) for ``(B, H)`` trajectories: ``(B,)``."""
        s, a = np.asarray(states), np.asarray(actions)
        if s.shape != a.shape or s.ndim != 2 or s.shape[1] != self.H:
            raise PreferenceError(
                f"states and actions must be (B, H) with H = {self.H}, got {s.shape}, {a.shape}"
            )
        return self.R[np.arange(self.H)[None, :], s, a].sum(axis=1)

    def probability(self, s1, a1, s0, a0) -> np.ndarray:
        """Exact ``P(tau1 > tau0)`` per seed, ``(B,)``."""
        return sigmoid(self.trajectory_reward(s1, a1) - self.trajectory_reward(s0, a0))

    def compare(self, s1, a1, s0, a0, ask) -> np.ndarray:
        p = self.probability(s1, a1, s0, a0)
        ask = np.asarray(ask, dtype=bool)
        if ask.shape != (self.n_seeds,) or p.shape != (self.n_seeds,):
            raise PreferenceError(
                f"trajectories and ask need a seed axis of length {self.n_seeds}, got "
                f"{p.shape} and {ask.shape}"
            )
        u = np.array([rng.random() for rng in self.rngs])
        self.queries += ask
        return np.where(ask, (u < p).astype(np.int64), -1)


def trajectory_features(states, actions, phi) -> np.ndarray:
    """psi(tau) = sum_h phi(s_h, a_h): ``states, actions (B, H)``, ``phi (S, A, d)`` or
    ``(H, S, A, d)`` -> ``(B, d)``."""
    phi = np.asarray(phi, dtype=np.float64)
    s = np.asarray(states)
    a = np.asarray(actions)
    if s.shape != a.shape or s.ndim != 2:
        raise PreferenceError(f"states and actions must be (B, H), got {s.shape}, {a.shape}")
    if phi.ndim == 3:
        return phi[s, a].sum(axis=1)
    if phi.ndim == 4 and phi.shape[0] == s.shape[1]:
        return phi[np.arange(s.shape[1])[None, :], s, a].sum(axis=1)
    raise PreferenceError(
        f"phi must be (S, A, d) or (H, S, A, d) with H = {s.shape[1]}, got {phi.shape}"
    )


# ------------------------------------------------------------------------------ offline data
@dataclass(frozen=True)
class ComparisonBandit:
    """Zhu-Jordan-Jiao's contextual bandit: ``phi (S, A, d)`` known features, ``rho (S,)`` the
    context distribution, ``theta (d,)`` the true parameter in Theta_B = {1^T theta = 0,
    ||theta||_2 <= B}; rewards r(s, a) = <theta, phi(s, a)>."""

    phi: np.ndarray
    rho: np.ndarray
    theta: np.ndarray
    B: float
    name: str = "comparison-bandit"

    def __post_init__(self) -> None:
        phi = np.array(self.phi, dtype=np.float64)
        if phi.ndim != 3 or min(phi.shape) < 1:
            raise PreferenceError(f"phi must have shape (S, A, d), got {phi.shape}")
        S, A, d = phi.shape
        _check_features(phi, d, "phi")
        rho = np.array(self.rho, dtype=np.float64)
        if rho.shape != (S,):
            raise PreferenceError(f"rho must have shape (S,) = ({S},), got {rho.shape}")
        if (rho < 0).any() or abs(rho.sum() - 1) > SUM_TOL:
            raise PreferenceError(f"rho must be a distribution, got {rho.tolist()}")
        theta = _as_theta(self.theta)
        if theta.shape != (d,):
            raise PreferenceError(f"theta must have shape (d,) = ({d},), got {theta.shape}")
        if abs(theta.sum()) > SUM_TOL:
            raise PreferenceError(f"theta must sum to 0 (1^T theta = 0), sums to {theta.sum():g}")
        if not self.B > 0 or np.linalg.norm(theta) > self.B + SUM_TOL:
            raise PreferenceError(
                f"||theta|| = {np.linalg.norm(theta):.6g} must be at most B = {self.B}"
            )
        for k, v in (("phi", phi), ("rho", rho), ("theta", theta)):
            v.setflags(write=False)
            object.__setattr__(self, k, v)
        object.__setattr__(self, "B", float(self.B))

    @property
    def S(self) -> int:
        return self.phi.shape[0]

    @property
    def A(self) -> int:
        return self.phi.shape[1]

    @property
    def d(self) -> int:
        return self.phi.shape[2]

    @property
    def L(self) -> float:
        """max_{s,a} ||phi(s, a)||_2 (the L of Zhu-Jordan-Jiao's Assumption on the features)."""
        return float(np.linalg.norm(self.phi, axis=-1).max())

    @property
    def rewards(self) -> np.ndarray:
        """r(s, a) = <theta*, phi(s, a)>: ``(S, A)``."""
        return self.phi @ self.theta

    def policy_matrix(self, policy) -> np.ndarray:
        """A deterministic ``(S,)`` or stochastic ``(S, A)`` policy as ``(S, A)`` probabilities."""
        pi = np.asarray(policy)
        if pi.shape == (self.S,):
            if not np.issubdtype(pi.dtype, np.integer) or (pi < 0).any() or (pi >= self.A).any():
                raise PreferenceError(f"a deterministic policy takes actions 0..{self.A - 1}")
            out = np.zeros((self.S, self.A))
            out[np.arange(self.S), pi] = 1.0
            return out
        if pi.shape == (self.S, self.A):
            pi = pi.astype(np.float64)
            if (pi < -1e-9).any() or np.abs(pi.sum(-1) - 1).max() > 1e-6:
                raise PreferenceError("a stochastic policy's rows must be distributions")
            return pi
        raise PreferenceError(
            f"policy must be (S,) or (S, A) = ({self.S}, {self.A}), got {pi.shape}"
        )

    def value(self, policy, theta=None) -> float:
        """J(pi) = E_{s~rho} E_{a~pi(s)} <theta, phi(s, a)> (theta defaults to theta*)."""
        t = self.theta if theta is None else _as_theta(theta)
        return float(np.einsum("s,sa,sa->", self.rho, self.policy_matrix(policy), self.phi @ t))

    def optimal_policy(self) -> np.ndarray:
        return self.rewards.argmax(axis=-1)

    def suboptimality(self, policy) -> float:
        """J(pi*) - J(pi), exact."""
        return self.value(self.optimal_policy()) - self.value(policy)

    def feature_expectation(self, policy) -> np.ndarray:
        """E_{s~rho} E_{a~pi(s)} phi(s, a): ``(d,)``."""
        return np.einsum("s,sa,sad->d", self.rho, self.policy_matrix(policy), self.phi)


@dataclass(frozen=True)
class PairwiseDataset:
    """Per-seed comparisons: ``states, a0, a1, y (B, n)``; y = 1 means a1 was preferred."""

    states: np.ndarray
    a0: np.ndarray
    a1: np.ndarray
    y: np.ndarray
    queries: np.ndarray = field(default=None)  # (B,) oracle queries spent to label the data

    @property
    def n_seeds(self) -> int:
        return self.states.shape[0]

    @property
    def n(self) -> int:
        return self.states.shape[1]

    def differences(self, bandit: ComparisonBandit) -> np.ndarray:
        """x_i = phi(s_i, a1_i) - phi(s_i, a0_i): ``(B, n, d)``."""
        return bandit.phi[self.states, self.a1] - bandit.phi[self.states, self.a0]

    def covariance(self, bandit: ComparisonBandit) -> np.ndarray:
        """Sigma_D = (1/n) sum_i x_i x_i^T: ``(B, d, d)``."""
        x = self.differences(bandit)
        return np.einsum("bni,bnj->bij", x, x) / self.n


@dataclass(frozen=True)
class RankingDataset:
    """Per-seed K-wise rankings: ``states (B, n)``, ``ranked (B, n, K)`` actions best first."""

    states: np.ndarray
    ranked: np.ndarray
    queries: np.ndarray = field(default=None)

    @property
    def K(self) -> int:
        return self.ranked.shape[2]

    @property
    def n(self) -> int:
        return self.states.shape[1]

    def features(self, bandit: ComparisonBandit) -> np.ndarray:
        """phi of the ranked actions, best first: ``(B, n, K, d)``."""
        return bandit.phi[self.states[..., None], self.ranked]

    def pairwise_split(self) -> PairwiseDataset:
        """InstructGPT's split: each ranking gives its K(K-1)/2 pairs (j < k, winner ranked j);
        ``a1`` is the winner and y = 1, so n K (K-1)/2 comparisons per seed."""
        j, k = np.triu_indices(self.K, 1)
        win = self.ranked[:, :, j].reshape(self.states.shape[0], -1)
        lose = self.ranked[:, :, k].reshape(self.states.shape[0], -1)
        st = np.repeat(self.states, len(j), axis=1)
        return PairwiseDataset(st, lose, win, np.ones_like(win), self.queries)


def _rngs(seeds, seed: int) -> list[np.random.Generator]:
    return generators(seed, seed_indices(seeds), ENV_STREAM)


def label_pairs(
    bandit: ComparisonBandit, states, a0, a1, *, seeds: int | Sequence[int] = 1, seed: int = 0
) -> PairwiseDataset:
    """Label the given comparisons ``states, a0, a1 (n,)`` (the same pairs for every seed) with
    a fresh BTL oracle per seed (environment stream of ``theorylab.seeding``)."""
    st, x0, x1 = (np.asarray(v, dtype=np.int64) for v in (states, a0, a1))
    if not (st.shape == x0.shape == x1.shape) or st.ndim != 1:
        raise PreferenceError(
            f"states, a0, a1 must be (n,), got {st.shape}, {x0.shape}, {x1.shape}"
        )
    for name, arr, hi in (("states", st, bandit.S), ("a0", x0, bandit.A), ("a1", x1, bandit.A)):
        bad = (arr < 0) | (arr >= hi)
        if bad.any():
            i = int(np.argwhere(bad)[0, 0])
            raise PreferenceError(f"{name}[{i}] = {arr[i]} is outside 0..{hi - 1}")
    oracle = LinearBTLOracle(bandit.theta, _rngs(seeds, seed))
    B = oracle.n_seeds
    S, A0, A1 = (np.broadcast_to(v, (B, v.size)).copy() for v in (st, x0, x1))
    y = oracle.compare(bandit.phi[S, A1], bandit.phi[S, A0])
    return PairwiseDataset(S, A0, A1, y, oracle.queries.copy())


def sample_pairwise(
    bandit: ComparisonBandit, n: int, *, seeds: int | Sequence[int] = 1, seed: int = 0
) -> PairwiseDataset:
    """n comparisons per seed: s ~ rho, (a0, a1) uniform over ordered pairs of distinct actions,
    labelled by BTL. Seed b draws contexts, pairs and labels from its own environment stream."""
    if bandit.A < 2:
        raise PreferenceError("comparisons need at least two actions")
    rngs = _rngs(seeds, seed)
    B = len(rngs)
    st = np.empty((B, n), np.int64)
    a0 = np.empty((B, n), np.int64)
    a1 = np.empty((B, n), np.int64)
    for b, rng in enumerate(rngs):
        st[b] = rng.choice(bandit.S, size=n, p=bandit.rho)
        a0[b] = rng.integers(bandit.A, size=n)
        a1[b] = (a0[b] + 1 + rng.integers(bandit.A - 1, size=n)) % bandit.A
    oracle = LinearBTLOracle(bandit.theta, rngs)
    y = oracle.compare(bandit.phi[st, a1], bandit.phi[st, a0])
    return PairwiseDataset(st, a0, a1, y, oracle.queries.copy())


def sample_rankings(
    bandit: ComparisonBandit, n: int, K: int, *, seeds: int | Sequence[int] = 1, seed: int = 0
) -> RankingDataset:
    """n K-wise rankings per seed: s ~ rho, K distinct actions uniformly, ranked by PL."""
    if isinstance(K, bool) or int(K) != K or K < 2:
        raise PreferenceError(f"Plackett-Luce ranks K >= 2 items per query, got K = {K!r}")
    if K > bandit.A:
        raise PreferenceError(f"K = {K} exceeds the number of actions A = {bandit.A}")
    rngs = _rngs(seeds, seed)
    B = len(rngs)
    st = np.empty((B, n), np.int64)
    acts = np.empty((B, n, K), np.int64)
    for b, rng in enumerate(rngs):
        st[b] = rng.choice(bandit.S, size=n, p=bandit.rho)
        acts[b] = np.argsort(rng.random((n, bandit.A)), axis=-1)[:, :K]
    oracle = PlackettLuceOracle(bandit.theta, rngs)
    order = oracle.rank(bandit.phi[st[..., None], acts])  # (B, n, K) positions, best first
    ranked = np.take_along_axis(acts, order, axis=-1)
    return RankingDataset(st, ranked, oracle.queries.copy())


def coverage_term(
    bandit: ComparisonBandit,
    covariance: np.ndarray,
    policy,
    lam: float,
    v: np.ndarray | None = None,
) -> np.ndarray:
    """||(Sigma_D + lam I)^{-1/2} (E_{s~rho} phi(s, pi(s)) - v)||_2 for each seed.

    covariance: ``(B, d, d)`` or ``(d, d)`` (Sigma_D, 1/n-normalised); v: ``(d,)`` reference
    vector (default 0). Returns ``(B,)`` (or a scalar for one matrix). Computed by a Cholesky
    solve, exactly up to round-off."""
    if not lam >= 0:
        raise PreferenceError(f"lambda must be >= 0, got {lam}")
    u = bandit.feature_expectation(policy) - (0.0 if v is None else np.asarray(v, float))
    M = np.asarray(covariance, dtype=np.float64) + lam * np.eye(bandit.d)
    Lc = np.linalg.cholesky(M)
    w = np.linalg.solve(Lc, np.broadcast_to(u, M.shape[:-1])[..., None])[..., 0]
    return np.linalg.norm(w, axis=-1)


# ------------------------------------------------------------------------------ families
ZJJ_PHI = ((1.0, 1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 1.0, 0.0))
ZJJ_THETA = (-1.0, 0.1, 0.9)


def zjj_thm39() -> ComparisonBandit:
    """Zhu-Jordan-Jiao Thm 3.9: one context, 4 actions, greedy-on-MLE stays 0.1-suboptimal."""
    return ComparisonBandit(
        np.array(ZJJ_PHI)[None], np.ones(1), np.array(ZJJ_THETA), 2.0, name="zjj-thm39"
    )


def zjj_thm39_dataset(n: int, *, seeds: int | Sequence[int] = 1, seed: int = 0) -> PairwiseDataset:
    """The Theorem 3.9 data: n - 1 comparisons of (a1, a2) and one of (a2, a3) (0-based actions
    (0, 1) and (1, 2)), labelled by BTL under theta*."""
    if isinstance(n, bool) or int(n) != n or n < 2:
        raise PreferenceError(f"the Theorem 3.9 dataset needs n >= 2 comparisons, got {n!r}")
    a0 = np.array([0] * (n - 1) + [1])
    a1 = np.array([1] * (n - 1) + [2])
    return label_pairs(zjj_thm39(), np.zeros(n, np.int64), a0, a1, seeds=seeds, seed=seed)


@dataclass(frozen=True)
class PreferenceGame:
    """A one-prompt preference game: ``P (N, N)`` general preferences, ``pi_ref (N,)``."""

    P: np.ndarray
    pi_ref: np.ndarray
    name: str = "preference-game"

    def __post_init__(self) -> None:
        P = validate_preference_matrix(self.P)
        ref = np.array(self.pi_ref, dtype=np.float64)
        if ref.shape != (P.shape[0],) or (ref <= 0).any() or abs(ref.sum() - 1) > SUM_TOL:
            raise PreferenceError(
                f"pi_ref must be a full-support distribution of shape ({P.shape[0]},), got {ref}"
            )
        object.__setattr__(self, "P", P)
        object.__setattr__(self, "pi_ref", ref)

    @property
    def N(self) -> int:
        return self.P.shape[0]


def cyclic_preferences(a: float = 0.3, b: float = 0.2, c: float = 0.1) -> PreferenceGame:
    """Intransitive preferences: a 3-cycle plus a dominated item; uniform pi_ref."""
    return PreferenceGame(cyclic_preference_matrix(a, b, c), np.full(4, 0.25), "cyclic-preferences")


def btl_preferences(rewards: tuple = (0.0, 0.5, 1.0, 0.2)) -> PreferenceGame:
    """BTL preferences of a reward vector (transitive; the vN winner is the argmax item)."""
    r = np.asarray(rewards, dtype=np.float64)
    return PreferenceGame(btl_matrix(r), np.full(r.size, 1.0 / r.size), "btl-preferences")


def random_comparison_bandit(
    S: int = 3, A: int = 6, d: int = 5, B: float = 2.0, norm: float = 1.0, seed: int = 0
) -> ComparisonBandit:
    """A random instance: phi ~ N(0, 1/d) entries (S, A, d), uniform rho, theta* drawn on the
    sum-zero sphere of radius ``norm`` <= B (fixed by ``seed``)."""
    if not 0 < norm <= B:
        raise PreferenceError(f"need 0 < norm <= B, got norm = {norm}, B = {B}")
    rng = np.random.default_rng(seed)
    phi = rng.normal(scale=1.0 / np.sqrt(d), size=(S, A, d))
    theta = rng.normal(size=d)
    theta -= theta.mean()
    theta *= norm / np.linalg.norm(theta)
    return ComparisonBandit(phi, np.full(S, 1.0 / S), theta, B, name="comparison-bandit")


# ------------------------------------------------------------------------------ MDP trajectories
def identifiable_features(phi) -> np.ndarray:
    """``phi (S, A, d)`` checked for Zhu-Jordan-Jiao's identifiable set {1^T theta = 0}: trajectory
    comparisons see theta only up to theta + c 1 when every phi(s, a) has the same coordinate sum
    (one-hot and simplex features), and then 1^T theta = 0 picks one representative; for other
    features the constraint would bias the MLE, so they are refused."""
    phi = _check_features(phi, np.shape(phi)[-1], "phi", trailing=3)
    if phi.ndim != 3:
        raise PreferenceError(f"phi must have shape (S, A, d), got {phi.shape}")
    sums = phi.sum(axis=-1)
    if np.abs(sums - sums.flat[0]).max() > 1e-9:
        s, a = (int(v) for v in np.unravel_index(np.abs(sums - sums.flat[0]).argmax(), sums.shape))
        raise PreferenceError(
            f"features must have the same coordinate sum at every (s, a) for the constraint "
            f"1^T theta = 0 to identify theta: sum phi(0, 0) = {sums.flat[0]:.6g}, "
            f"sum phi({s}, {a}) = {sums[s, a]:.6g}"
        )
    return phi


def centred_parameter(R, phi) -> np.ndarray:
    """theta* in {1^T theta = 0} with <phi(s, a), theta*> = R(s, a) - c for one constant c: the
    parameter trajectory comparisons identify (least squares, exact when R is linear in phi).
    R: stationary mean rewards ``(S, A)``; phi: ``(S, A, d)``. Returns ``(d,)``."""
    R = np.asarray(R, dtype=np.float64)
    phi = identifiable_features(phi)
    if R.shape != phi.shape[:2]:
        raise PreferenceError(f"R must be stationary (S, A) = {phi.shape[:2]}, got {R.shape}")
    X = phi.reshape(-1, phi.shape[-1])
    theta, *_ = np.linalg.lstsq(X, R.ravel(), rcond=None)
    theta = theta - theta.mean()  # theta + t 1 shifts every reward by t sum_k phi_k: unseen
    resid = X @ theta - R.ravel()
    if np.ptp(resid) > 1e-9:
        raise PreferenceError(
            f"the rewards are not linear in the features (residual spread {np.ptp(resid):.3g})"
        )
    return theta


@dataclass(frozen=True)
class TrajectoryPairs:
    """Per-seed trajectory comparisons on a finite-horizon MDP: ``states0, actions0, states1,
    actions1 (B, n, H)``; ``y (B, n)`` = 1 when tau1 was preferred; ``queries (B,)``."""

    states0: np.ndarray
    actions0: np.ndarray
    states1: np.ndarray
    actions1: np.ndarray
    y: np.ndarray
    queries: np.ndarray

    @property
    def n(self) -> int:
        return self.y.shape[1]

    @property
    def n_seeds(self) -> int:
        return self.y.shape[0]

    def differences(self, phi) -> np.ndarray:
        """x_i = psi(tau1_i) - psi(tau0_i), psi(tau) = sum_h phi(s_h, a_h): ``(B, n, d)``."""
        phi = np.asarray(phi, dtype=np.float64)
        return phi[self.states1, self.actions1].sum(axis=2) - phi[self.states0, self.actions0].sum(
            axis=2
        )

    def covariance(self, phi) -> np.ndarray:
        """Sigma_D = (1/n) sum_i x_i x_i^T: ``(B, d, d)``."""
        x = self.differences(phi)
        return np.einsum("bni,bnj->bij", x, x) / self.n


def sample_trajectory_pairs(
    mdp, n: int, behaviour, *, seeds: int | Sequence[int] = 1, seed: int = 0
) -> TrajectoryPairs:
    """n pairs of trajectories per seed, both rolled out by ``behaviour`` (``(H, S, A)`` or any
    form ``mdp.rollout`` takes), labelled by BTL on the true trajectory rewards
    sum_h R_h(s_h, a_h). Seed b draws its 2n rollouts and then its n labels from its own
    environment-stream generator, so it is the same alone or in a batch."""
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise PreferenceError(f"n (trajectory pairs) must be a positive integer, got {n!r}")
    if mdp.horizon is None:
        raise PreferenceError(f"{mdp.name}: trajectory comparisons need a finite horizon")
    n, H = int(n), int(mdp.horizon)
    rngs = _rngs(seeds, seed)
    B = len(rngs)
    out = {k: np.empty((B, n, H), np.int64) for k in ("s0", "a0", "s1", "a1")}
    y = np.empty((B, n), np.int64)
    R = np.asarray(mdp.R, dtype=np.float64)
    R = np.broadcast_to(R, (H, *R.shape)) if R.ndim == 2 else R
    for b, rng in enumerate(rngs):
        traj = mdp.rollout(behaviour, rng=[rng] * (2 * n))  # 2n episodes from seed b's stream
        out["s0"][b], out["a0"][b] = traj.states[:n], traj.actions[:n]
        out["s1"][b], out["a1"][b] = traj.states[n:], traj.actions[n:]
        ret = R[np.arange(H)[None, :], traj.states, traj.actions].sum(axis=1)  # (2n,)
        y[b] = rng.random(n) < sigmoid(ret[n:] - ret[:n])
    return TrajectoryPairs(out["s0"], out["a0"], out["s1"], out["a1"], y, np.full(B, n))
