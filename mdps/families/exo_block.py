r"""Exogenous block MDP: a latent ring walk behind rich observations that also show a distractor.

Built for representation learning from videos (``seed-catalogue-001.md#30``, Misra, Saran, Lin et
al. 2024): a block MDP (as ``block-lock``, whose :class:`BlockMDP` it reuses) whose observations
carry, besides the latent state, an exogenous distractor e that the actions never affect. Whether
e is re-drawn every step (iid noise) or persists (a temporally correlated exogenous process) is
the switch the paper's results turn on.

* Latent z in 0 .. N-1 on a ring; actions 0, 1, 2 move left, stay, right; with probability
  ``slip`` the move is replaced by a uniformly random latent (so the latent's one-step laws
  overlap, and a persistent distractor is easier to predict than the latent).
* Distractor e in 0 .. E-1, independent of z and of the actions (:func:`distractor_kernel`):
  ``noise="iid"``: e' uniform every step; ``noise="sticky"``: e' = e with probability ``stay``,
  else uniform over the other E - 1 values.
* Observation x = (z E + e) m + j with j uniform in 0 .. m-1 (m copies per (z, e)): S = N E m;
  the observation-level model is P(x'|x, a) = T(z'|z, a) K(e'|e) / m.
* Reward 1 at latent 0 (every action), 0 elsewhere; discounted by ``gamma``; mu0 uniform.

:meth:`BlockMDP.reveal` gives the latent map z(x) ``(S,)`` and the latent transitions
``(1, N, A, N)`` (``secrets`` is empty); :func:`distractor_of` gives e(x).
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.families.block_lock import BlockMDP, BlockTruth
from theorylab.mdps.families.chain import require_discount, require_int, require_probability
from theorylab.mdps.registry import register

NOISES = ("iid", "sticky")


def distractor_kernel(E: int, noise: str, stay: float) -> np.ndarray:
    """K(e'|e) ``(E, E)``: uniform rows (iid) or sticky (``stay`` on the diagonal)."""
    if noise == "iid" or E == 1:
        return np.full((E, E), 1.0 / E)
    K = np.full((E, E), (1.0 - stay) / (E - 1))
    np.fill_diagonal(K, stay)
    return K


def distractor_of(S: int, E: int, m: int) -> np.ndarray:
    """e(x) ``(S,)`` for observations x = (z E + e) m + j."""
    return (np.arange(S) // m) % E


@register("exo-block")
def exo_block(
    N: int = 4,
    E: int = 4,
    m: int = 2,
    slip: float = 0.5,
    noise: str = "sticky",
    stay: float = 0.95,
    gamma: float = 0.9,
) -> BlockMDP:
    """Exogenous block MDP (module docstring)."""
    N = require_int("exo-block", "N", N, 3)
    E = require_int("exo-block", "E", E, 1)
    m = require_int("exo-block", "m", m, 1)
    slip = require_probability("exo-block", "slip", slip)
    stay = require_probability("exo-block", "stay", stay)
    if noise not in NOISES:
        raise InvalidMDPError(f"exo-block: noise must be one of {NOISES}, got noise={noise!r}")
    gamma = require_discount("exo-block", gamma)
    A = 3
    T = np.full((N, A, N), slip / N)  # latent transitions: (N, A, N)
    for z in range(N):
        for a, step in enumerate((-1, 0, 1)):
            T[z, a, (z + step) % N] += 1.0 - slip
    K = distractor_kernel(E, noise, stay)  # (E, E)
    S = N * E * m
    x = np.arange(S)
    latent = x // (E * m)  # z(x): (S,)
    exo = distractor_of(S, E, m)  # e(x): (S,)
    P = T[latent][:, :, latent] * K[exo][:, exo][:, None, :] / m  # (S, A, S)
    R = np.repeat((latent == 0).astype(np.float64)[:, None], A, axis=1)  # (S, A)
    mu0 = np.full(S, 1.0 / S)
    name = f"exo-block:N={N},E={E},m={m},slip={slip!r},noise={noise},stay={stay!r},gamma={gamma!r}"
    truth = BlockTruth(latent, T[None], np.zeros((1, 0), dtype=np.int64))
    return BlockMDP(P, R, mu0, truth, horizon=None, gamma=gamma, name=name)
