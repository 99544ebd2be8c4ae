"""A K-batch policy-evaluation query model with a hidden chain (seed row 001#25, the multi-batch
lower bound of Johnson, Pike-Burke & Rebeschini 2023; reconstructed, see
``algorithms/linear/multi_batch.py``).

:class:`PointerChaseProblem` -- horizon ``H``, at every stage the ``2^d`` states
``s in [0, 2^d)`` with the d-dimensional features ``phi(s)_i = (2 b_i(s) - 1) / sqrt(d)``
(``b_i`` the i-th bit of s) and the linear reward ``r(s) = theta . phi(s)``,
``theta = sqrt(d) e_0`` (so ``r(s) = 2 b_0(s) - 1 in {-1, +1}``). The target policy's
transition is deterministic: from the start state ``chain[0]`` the policy visits the hidden
chain ``chain[0..H-1]``, whose states all have reward ``sign`` (one instance-level sign, drawn
with the chain from ``seed``); every other state moves to a pseudo-random state
(:meth:`~PointerChaseProblem.successor`). The quantity to evaluate is
``V = sum_h r(chain[h]) = H * sign``.

A query ``(h, s)`` returns ``r(s) + noise * eps`` (eps ~ N(0, 1)) and the successor of s at
stage h: what a generative model of the target policy's chain returns. The learner is told
``chain[0]`` and nothing else about the chain; a learner that does not query ``chain[h]`` does
not learn ``chain[h+1]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_MIX = np.uint64(0x9E3779B97F4A7C15)


def _hash(seed: int, h: np.ndarray, s: np.ndarray) -> np.ndarray:
    """A splitmix64 hash of (seed, h, s) -> uint64, vectorised."""
    with np.errstate(over="ignore"):  # uint64 arithmetic wraps by design
        x = (np.uint64(seed) * _MIX) ^ (np.asarray(h, dtype=np.uint64) << np.uint64(40))
        x = (x ^ np.asarray(s, dtype=np.uint64)) + _MIX
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@dataclass(frozen=True, eq=False)
class PointerChaseProblem:
    """d: feature dimension (``2^d`` states per stage); H: horizon; noise: reward noise's standard
    deviation; chain ``(H,)`` the target policy's states (hidden from the learner but chain[0]);
    sign: the chain's common reward (+1 or -1); seed: the instance's hash seed."""

    d: int
    H: int
    noise: float
    chain: np.ndarray
    sign: int
    seed: int
    name: str = "pointer-chase"

    @property
    def n_states(self) -> int:
        return 1 << self.d

    @property
    def start(self) -> int:
        return int(self.chain[0])

    @property
    def theta(self) -> np.ndarray:
        """``(d,)`` the reward parameter ``sqrt(d) e_0``."""
        t = np.zeros(self.d)
        t[0] = np.sqrt(self.d)
        return t

    def features(self, s: np.ndarray) -> np.ndarray:
        """``(..., d)`` the features of states ``s (...)``."""
        s = np.asarray(s, dtype=np.int64)
        bits = (s[..., None] >> np.arange(self.d)) & 1
        return (2.0 * bits - 1.0) / np.sqrt(self.d)

    def reward(self, s: np.ndarray) -> np.ndarray:
        """``(...)`` the exact reward ``theta . phi(s)``."""
        return self.features(s) @ self.theta

    def successor(self, h: np.ndarray, s: np.ndarray) -> np.ndarray:
        """``(...)`` the target policy's next state from state s at stage h (-1 after the last
        stage): the chain's next state on the chain, a hashed state elsewhere."""
        h = np.asarray(h, dtype=np.int64)
        s = np.asarray(s, dtype=np.int64)
        h, s = np.broadcast_arrays(h, s)
        out = (_hash(self.seed, h, s) % np.uint64(self.n_states)).astype(np.int64)
        for k in range(self.H - 1):
            out = np.where((h == k) & (s == self.chain[k]), self.chain[k + 1], out)
        return np.where(h >= self.H - 1, -1, out)

    def query(self, h: np.ndarray, s: np.ndarray, rng: np.random.Generator):
        """Answers to queries ``(h, s)`` (arrays of one shape): noisy rewards and successors."""
        s = np.asarray(s, dtype=np.int64)
        y = self.reward(s) + self.noise * rng.standard_normal(s.shape)
        return y, self.successor(h, s)

    @property
    def value(self) -> float:
        """The exact ``V = sum_h r(chain[h])`` (= H * sign by construction)."""
        return float(self.reward(self.chain).sum())

    def truth(self) -> dict[str, float]:
        return {"value": self.value}
