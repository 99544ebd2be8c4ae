"""``lowrank-reward``: a random MDP whose mean-reward matrix ``R (S, A)`` has rank at most r.

The instance of PAMC (``algorithms/offline/pamc.py``, seed row 001#32): transitions as the
``random`` family (``P(. | s, a) ~ Dirichlet(alpha 1_S)``), mean rewards ``R = U V^T`` with the
rows of ``U (S, r)`` uniform on the simplex and ``V (A, r)`` uniform on ``[0, 1]``, so every
entry is a convex combination of numbers in [0, 1] (rewards stay in [0, 1]) and
``rank R <= r``. Rewards are Bernoulli draws of their means by default (``noise=bernoulli``;
``noise=deterministic`` observes the means). Starts in state 0. Random stream:
``default_rng(seed)`` draws P, then U, then V.
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.families.chain import require_int
from theorylab.mdps.families.random_mdps import dirichlet_rows
from theorylab.mdps.lowrank import random_simplex
from theorylab.mdps.registry import register
from theorylab.mdps.sizes import check_dense_size
from theorylab.mdps.tabular import TabularMDP

NOISES = ("bernoulli", "deterministic")


@register("lowrank-reward")
def lowrank_reward(
    S: int = 20,
    A: int = 10,
    r: int = 2,
    H: int = 5,
    alpha: float = 1.0,
    noise: str = "bernoulli",
    seed: int = 0,
) -> TabularMDP:
    """Random Dirichlet transitions and a rank-<= r reward matrix U V^T in [0, 1]."""
    S = require_int("lowrank-reward", "S", S, 1)
    A = require_int("lowrank-reward", "A", A, 1)
    H = require_int("lowrank-reward", "H", H, 1)
    r = require_int("lowrank-reward", "r", r, 1)
    if r > min(S, A):
        raise InvalidMDPError(f"lowrank-reward needs r <= min(S, A) = {min(S, A)}, got r={r}")
    if not (alpha > 0 and np.isfinite(alpha)):
        raise InvalidMDPError(f"lowrank-reward needs a Dirichlet alpha > 0, got alpha={alpha}")
    if noise not in NOISES:
        raise InvalidMDPError(f"lowrank-reward: noise={noise!r} must be one of {NOISES}")
    check_dense_size("lowrank-reward", f"S={S},A={A}", S, A)
    rng = np.random.default_rng(seed)
    P = np.empty((S, A, S))
    dirichlet_rows(rng, P.reshape(S * A, S), alpha)
    U = random_simplex(rng, (S,), r)  # (S, r) rows on the simplex
    V = rng.random((A, r))  # (A, r) in [0, 1]
    R = np.clip(U @ V.T, 0.0, 1.0)  # (S, A), rank <= r (the clip only removes round-off)
    return TabularMDP(
        P,
        R,
        horizon=H,
        reward_model=noise,
        name=f"lowrank-reward:S={S},A={A},r={r},H={H},alpha={alpha},noise={noise},seed={seed}",
    )
