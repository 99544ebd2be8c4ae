"""``random-game``: a random tabular two-player zero-sum Markov game
(:class:`theorylab.mdps.markov_game.TabularMarkovGame`; seed row 001#43).

``random-game:S=3,A=3,B=3,H=3,seed=0``: ``P[h, s, a, b]`` Dirichlet(1) draws, ``R[h, s, a, b]``
uniform on [0, 1] (numpy seed ``seed``), mu0 uniform.
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.markov_game import TabularMarkovGame
from theorylab.mdps.registry import register

MAX_CELLS = 20000  # H S A B S transition entries


@register("random-game")
def random_game(S: int = 3, A: int = 3, B: int = 3, H: int = 3, seed: int = 0):
    """The game (module docstring)."""
    for label, val in (("S", S), ("A", A), ("B", B), ("H", H)):
        if isinstance(val, bool) or not isinstance(val, int) or val < 1:
            raise InvalidMDPError(f"random-game: {label} must be an integer >= 1, got {val!r}")
    if H * S * A * B * S > MAX_CELLS:
        raise InvalidMDPError(
            f"random-game: H S A B S = {H * S * A * B * S} transition entries > {MAX_CELLS}"
        )
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(H, S, A, B))  # (H, S, A, B, S)
    R = rng.random((H, S, A, B))
    name = f"random-game:S={S},A={A},B={B},H={H},seed={seed}"
    return TabularMarkovGame(P=P, R=R, mu0=np.full(S, 1.0 / S), name=name)
