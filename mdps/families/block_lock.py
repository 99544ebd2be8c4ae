r"""Block combination lock: a rich-observation (block) MDP over a combination lock's latents.

Built for MusIK (``seed-catalogue-001.md#27``, Mhammedi et al. 2023): a block MDP whose latent
states are hidden behind disjoint blocks of observations, with the latent dynamics of a
combination lock (Misra et al. 2020's HOMER lock, reconstructed), so that one-step inverse
kinematics cannot tell the good latent states apart and multi-step inverse kinematics can.

* Latents per step: ``n_good`` good states g_0 .. g_{n_good-1} and one bad state b (N = n_good + 1).
  At step h the good state g_j has a secret action ``c_h(j) = (j + o_h) mod A`` (o_h drawn from
  ``code_seed``): distinct secrets for distinct good states (n_good <= A). The secret action moves
  to a uniformly random good state at h + 1; every other action, and every action at b, moves to
  b. The first latent is uniform over all N.
* Reward: only at the last step, Bernoulli(``reward``) for the secret action at a good state.
  V* = reward * n_good / N; the uniform policy's value is reward * (n_good / N) * A^-H.
* Observations: latent z emits one of ``m`` observations uniformly, z * m .. z * m + m - 1 (the
  same index set at every step, the step being the time index): S = N m. The observation-level
  model P_h(x' | x, a) = T_h(z(x') | z(x), a) / m is an ordinary stage-dependent tabular MDP.

:meth:`BlockMDP.reveal` gives the emission map z(x) ``(S,)`` and the latent transitions
``(H, N, A, N)`` (for tests and claims, never to an agent).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.families.chain import require_int, require_probability
from theorylab.mdps.registry import register
from theorylab.mdps.tabular import TabularMDP


@dataclass(frozen=True)
class BlockTruth:
    """The hidden structure: ``latent (S,)`` z(x), ``T (H, N, A, N)``, ``secrets (H, n_good)``."""

    latent: np.ndarray
    T: np.ndarray
    secrets: np.ndarray


class BlockMDP(TabularMDP):
    """A tabular MDP over observations with a hidden latent (block) structure."""

    def __init__(
        self,
        P,
        R,
        mu0,
        truth: BlockTruth,
        *,
        horizon: int | None,
        name: str,
        gamma: float | None = None,
    ) -> None:
        super().__init__(
            P, R, mu0, horizon=horizon, gamma=gamma, reward_model="bernoulli", name=name
        )
        self._truth = truth
        self.n_latent = int(truth.T.shape[1])

    def reveal(self) -> BlockTruth:
        return self._truth


@register("block-lock")
def block_lock(
    H: int = 4,
    A: int = 2,
    n_good: int = 2,
    m: int = 3,
    reward: float = 0.8,
    code_seed: int = 0,
) -> BlockMDP:
    """Block combination lock (module docstring)."""
    H = require_int("block-lock", "H", H, 2)
    A = require_int("block-lock", "A", A, 2)
    n_good = require_int("block-lock", "n_good", n_good, 1)
    m = require_int("block-lock", "m", m, 1)
    code_seed = require_int("block-lock", "code_seed", code_seed, 0)
    reward = require_probability("block-lock", "reward", reward)
    if n_good > A:
        raise InvalidMDPError(
            f"block-lock: n_good must be <= A (distinct secret actions), got n_good={n_good}, A={A}"
        )
    N = n_good + 1
    bad = n_good
    offsets = np.random.default_rng([code_seed, 27]).integers(0, A, size=H)  # (H,)
    secrets = (np.arange(n_good)[None, :] + offsets[:, None]) % A  # (H, n_good)
    T = np.zeros((H, N, A, N))  # latent transitions: (H, N, A, N)
    T[:, :, :, bad] = 1.0
    for h in range(H):
        for j in range(n_good):
            T[h, j, secrets[h, j]] = 0.0
            T[h, j, secrets[h, j], :n_good] = 1.0 / n_good
    latent = np.repeat(np.arange(N), m)  # z(x): (S,)
    S = N * m
    P = T[:, latent][:, :, :, latent] / m  # (H, S, A, S)
    R = np.zeros((H, S, A))  # (H, S, A)
    for j in range(n_good):
        R[H - 1, latent == j, secrets[H - 1, j]] = reward
    mu0 = np.full(S, 1.0 / S)
    name = f"block-lock:H={H},A={A},n_good={n_good},m={m},reward={reward!r},code_seed={code_seed}"
    return BlockMDP(P, R, mu0, BlockTruth(latent, T, secrets), horizon=H, name=name)
