r"""P2R, the preference-to-reward interface of Wang, Liu, Jin (2023), around UCBVI-Bernstein.

Paper: Wang, Liu, Jin, "Is RLHF More Difficult than Standard RL?", NeurIPS 2023, arXiv:2306.14111,
Algorithm 1 (P2R). Card: docs/algorithms/p2r.md. Provenance: the branch structure is [S] (a
third-party implementation "P2R + UCBVI-BF" and a formalisation whose docstrings name the cache
branch); the tests and constants below are [M] reconstructions, documented as deviations. No
bound card: the paper's theorem numbers and exponents were not recovered, so the claim tests
shapes (queries bounded, regret sub-linear), not constants.

Setting (the tabular instantiation): rewards r*(s, a) in [0, 1], linear in known features
phi(s, a) in R^d (one-hot by default: the tabular reward class). The learner never sees r*; it can
ask a BTL oracle to compare a pair (s, a) against a fixed reference pair (s0, a0):
P((s, a) preferred) = sigma(r*(s, a) - r*(s0, a0)). P2R answers the RL algorithm's reward
requests with estimates z(s, a) of r*(s, a) - r*(s0, a0), through three branches:

1. **cache**: (s, a) was answered before -> the same label (so the labels define one reward);
2. **confident**: else, with the version space
   V = {theta : 0 <= <theta, phi(s', a')> <= 1 for all (s', a'),
                |<theta, x_i> - z_i| <= eps0 for every queried i},   x = phi(s, a) - phi(s0, a0),
   if max_{theta, theta' in V} <theta - theta', x> <= 2 eps0 (two LPs, HiGHS), answer the
   midpoint of [min_V <theta, x>, max_V <theta, x>] without a query;
3. **query**: else compare (s, a) with (s0, a0) m times, y_bar = wins / m, and answer
   z = clip(sigma^{-1}(y_bar), -1, 1); add (x, z) to the version space.

Correctness of the labels (exact argument, our reconstruction): r* - r*(s0, a0) lies in [-1, 1],
where sigma' >= alpha = sigma'(1) = 0.1966; clipping y_bar to [sigma(-1), sigma(1)] is a
projection, so |z - (r* - r*0)| <= |y_bar - p| / alpha. Hoeffding with
m = ceil(log(2 N_max / delta) / (2 alpha^2 eps0^2)), N_max = S A (at most one query per pair, a
union bound), makes every queried label eps0-accurate w.p. >= 1 - delta; then theta* lies in V,
so confident labels are eps0-accurate as well. With the one-hot class each pair is queried at
most once, so the number of queries is at most (SA - 1) m for every K: bounded, the tabular case
of the eluder-dimension bound. (The paper's version space is a least-squares set with a slack
beta; the eps0-box set used here is the one the Hoeffding event certifies directly.)

The RL algorithm is UCBVI-BF (``ucbvi-bernstein``, Azar et al. 2017) run with unknown rewards
(its empirical-mean-reward mode), fed the reward (z + 1) / 2 in [0, 1] for each visited pair: an
affine map of r* - r*0 up to eps0 / 2, so the optimal policy is unchanged when eps0 is small
against the gaps. Regret is exact on the true MDP (the runner's policy evaluation).

With the default one-hot class the confident branch never fires (every x is a new coordinate
direction: confident = 0, queries = (SA - 1) m); it fires with ``reward_class="env-features"``
where pairs share features -- claim ``p2r-version-space-confident`` (action-only features on a
3-state MDP: 4 of the 5 non-reference pairs answered without a query, queries = m = rank(x) m).

Deviations: comparisons are of single state-action pairs against a reference pair (segments of
length 1), not whole trajectories, as in the third-party tabular implementation; the reference
pair is (s0, a0) = (0, 0) unless given. ``cache=False`` disables the cache and confident
branches (re-query every visit): a known-bug mutation kept only as the negative control of the
query claim, NOT the paper's algorithm.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import linprog

from theorylab.agent import EnvSpec
from theorylab.algorithms.online.ucbvi import UCBVIBernstein
from theorylab.algorithms.registry import register
from theorylab.mdps.preference import PreferenceMatrixOracle, sigmoid_slope_min
from theorylab.mdps.tabular import Trajectories

ALPHA = sigmoid_slope_min(1.0)  # min of sigma' over reward differences in [-1, 1]
WIDTH_TOL = 1e-9  # LP round-off allowed in the confident test (a width of exactly 2 eps0 passes)


def repeats_for(eps0: float, delta: float, n_max: int) -> int:
    """m = ceil(log(2 n_max / delta) / (2 alpha^2 eps0^2)): Hoeffding + union over n_max queries."""
    return int(math.ceil(math.log(2.0 * n_max / delta) / (2.0 * ALPHA**2 * eps0**2)))


class VersionSpace:
    """{theta : 0 <= Phi theta <= 1, |<theta, x_i> - z_i| <= eps0} for one seed (LP widths)."""

    def __init__(self, Phi: np.ndarray, eps0: float) -> None:
        self.Phi = Phi  # (SA, d)
        self.eps0 = eps0
        self.X: list[np.ndarray] = []
        self.z: list[float] = []

    def add(self, x: np.ndarray, z: float) -> None:
        self.X.append(x)
        self.z.append(z)

    def interval(self, x: np.ndarray) -> tuple[float, float]:
        """[min_V <theta, x>, max_V <theta, x>]; (-inf, inf) if V is empty (failure event)."""
        if not np.any(x):
            return 0.0, 0.0
        A = [self.Phi, -self.Phi]
        b = [np.ones(len(self.Phi)), np.zeros(len(self.Phi))]
        if self.X:
            X, z = np.array(self.X), np.array(self.z)
            A += [X, -X]
            b += [z + self.eps0, -(z - self.eps0)]
        A_ub, b_ub = np.vstack(A), np.concatenate(b)
        free = [(None, None)] * self.Phi.shape[1]
        lo = linprog(x, A_ub=A_ub, b_ub=b_ub, bounds=free, method="highs")
        hi = linprog(-x, A_ub=A_ub, b_ub=b_ub, bounds=free, method="highs")
        if lo.status != 0 or hi.status != 0:
            return -math.inf, math.inf
        return float(lo.fun), float(-hi.fun)


@register(
    "p2r-ucbvi",
    kind="preference",
    problem="tabular",
    bounds=(),
    feedback=("btl",),
    feedback_note="it inverts the BTL link of one pairwise comparison against a reference pair",
    papers=("000#24", "001#53"),
)
class P2RUCBVI:
    """P2R (Wang-Liu-Jin 2023, Alg. 1) feeding UCBVI-BF rewards from pairwise comparisons."""

    name = "p2r-ucbvi"

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs,
        oracle: PreferenceMatrixOracle,
        *,
        episodes: int,
        delta: float = 0.1,
        eps0: float = 0.1,
        reference: int = 0,
        reward_class: str = "tabular",
        cache: bool = True,
        tie_break: str = "least-visited",
    ) -> None:
        if not 0.0 < eps0 < 1.0:
            raise ValueError(f"p2r-ucbvi: eps0 must lie in (0, 1), got {eps0!r}")
        if not 0.0 < delta < 1.0:
            raise ValueError(f"p2r-ucbvi: delta must lie in (0, 1), got {delta!r}")
        SA = env.S * env.A
        if oracle.N != SA or oracle.n_seeds != n_seeds:
            raise ValueError(
                f"p2r-ucbvi: the oracle compares {oracle.N} items for {oracle.n_seeds} seeds; "
                f"expected the S*A = {SA} state-action pairs and {n_seeds} seeds"
            )
        if not 0 <= reference < SA:
            raise ValueError(f"p2r-ucbvi: reference pair index must be in 0..{SA - 1}")
        if reward_class == "tabular":
            Phi = np.eye(SA)
        elif reward_class == "env-features":
            if env.features is None:
                raise ValueError("p2r-ucbvi: reward_class='env-features' needs env.features")
            Phi = np.asarray(env.features, dtype=np.float64).reshape(SA, -1)
        else:
            raise ValueError(
                f"p2r-ucbvi: reward_class must be 'tabular' or 'env-features', got {reward_class!r}"
            )
        self.n_seeds, self.oracle, self.eps0, self.delta = n_seeds, oracle, eps0, delta
        self.reference, self.cache, self.Phi = int(reference), bool(cache), Phi
        self.m = repeats_for(eps0, delta, SA)
        self.labels = np.full((n_seeds, SA), np.nan)  # cached z(s, a) per seed
        self.labels[:, self.reference] = 0.0  # x = 0: known exactly, no query
        self.spaces = [VersionSpace(Phi, eps0) for _ in range(n_seeds)]
        self.counts = {k: np.zeros(n_seeds, np.int64) for k in ("cache", "confident", "query")}
        blind = EnvSpec(env.S, env.A, env.H, None, env.mu0, env.stage_dependent)
        self.inner = UCBVIBernstein(
            blind, n_seeds, rngs, episodes=episodes, delta=delta, tie_break=tie_break
        )

    @property
    def queries(self) -> np.ndarray:
        """Comparisons asked so far per seed, ``(B,)``."""
        return self.oracle.queries

    def policy(self) -> np.ndarray:
        return self.inner.policy()

    def _resolve(self, b: int, pair: int) -> float:
        """Branches 2 and 3 for an uncached pair of seed b."""
        x = self.Phi[pair] - self.Phi[self.reference]
        if self.cache:
            lo, hi = self.spaces[b].interval(x)
            if hi - lo <= 2.0 * self.eps0 + WIDTH_TOL:
                self.counts["confident"][b] += 1
                return 0.5 * (lo + hi)
        wins = self.oracle.compare_seed(b, pair, self.reference, self.m)
        p = min(max(wins / self.m, float(_SIG_M1)), float(_SIG_P1))
        z = float(np.log(p / (1.0 - p)))  # sigma^{-1}, within [-1, 1] after the clip
        self.spaces[b].add(x, z)
        self.counts["query"][b] += 1
        return z

    def update(self, traj: Trajectories) -> None:
        pairs = traj.states * (self.labels.shape[1] // self.inner.S) + traj.actions  # (B, H)
        rows = np.arange(self.n_seeds)[:, None]
        if self.cache:
            known = ~np.isnan(self.labels[rows, pairs])
            self.counts["cache"] += known.sum(axis=1)
            z = self.labels[rows, pairs]
            for b, h in zip(*np.nonzero(~known), strict=True):
                pr = pairs[b, h]
                if np.isnan(self.labels[b, pr]):  # a pair twice in one episode: resolve once
                    self.labels[b, pr] = self._resolve(b, pr)
                else:
                    self.counts["cache"][b] += 1
                z[b, h] = self.labels[b, pr]
        else:
            z = np.empty(pairs.shape)
            for b in range(self.n_seeds):
                for h in range(pairs.shape[1]):
                    z[b, h] = self._resolve(b, pairs[b, h])
        rewards = (z + 1.0) / 2.0  # (z + 1) / 2 in [0, 1]
        self.inner.update(Trajectories(traj.states, traj.actions, rewards, traj.next_states))


_SIG_M1, _SIG_P1 = 1.0 / (1.0 + math.e), math.e / (1.0 + math.e)  # sigma(-1), sigma(1)
