"""RiverSwim (Strehl and Littman 2008), in the canonical TabulaRL definition.

Source: Osband, ``iosband/TabulaRL``, ``src/environment.py``, ``make_riverSwim``
(theory.md 9.1 [V]).

* S states in a line, A = 2 actions: 0 = left (with the current), 1 = right (swim); start state 0.
* Left moves deterministically to max(0, s - 1).
* Right from an interior state s in 1..S-2: 0.35 to s + 1, 0.6 stay, 0.05 to s - 1.
* Right at s = 0: 0.4 stay, 0.6 to 1.  Right at s = S - 1: 0.6 stay, 0.4 to S - 2.
* Rewards: r(0, left) = 5/1000 and r(S - 1, right) = 1, all others 0 (the [0, 1] scaling of
  Strehl and Littman's 5 and 10000).
* Episode length H = 20 by default (TabulaRL's epLen).
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.registry import register
from theorylab.mdps.sizes import check_dense_size
from theorylab.mdps.tabular import TabularMDP

LEFT, RIGHT = 0, 1


@register("riverswim")
def riverswim(S: int = 6, H: int = 20, gamma: float = 0.0, sparse: bool = False) -> TabularMDP:
    """RiverSwim (TabulaRL): swim right against the current for reward 1 at the far end.

    gamma > 0 adds a discount (for value iteration); sparse=True builds CSR transitions.
    """
    if S < 2:
        raise InvalidMDPError(f"riverswim needs S >= 2 states, got S={S}")
    if H < 1:
        raise InvalidMDPError(f"riverswim needs H >= 1, got H={H}")
    check_dense_size("riverswim", f"S={S}", S, 2)
    P = np.zeros((S, 2, S))
    R = np.zeros((S, 2))
    for s in range(S):
        P[s, LEFT, max(0, s - 1)] = 1.0
    if S == 2:
        P[0, RIGHT, 0], P[0, RIGHT, 1] = 0.4, 0.6
        P[1, RIGHT, 1], P[1, RIGHT, 0] = 0.6, 0.4
    else:
        P[0, RIGHT, 0], P[0, RIGHT, 1] = 0.4, 0.6
        for s in range(1, S - 1):
            P[s, RIGHT, s + 1], P[s, RIGHT, s], P[s, RIGHT, s - 1] = 0.35, 0.6, 0.05
        P[S - 1, RIGHT, S - 1], P[S - 1, RIGHT, S - 2] = 0.6, 0.4
    R[0, LEFT] = 5 / 1000
    R[S - 1, RIGHT] = 1.0
    name = f"riverswim:S={S},H={H}" + (f",gamma={float(gamma)!r}" if gamma > 0 else "")
    mdp = TabularMDP(P, R, horizon=H, gamma=gamma if gamma > 0 else None, name=name)
    return mdp.to_sparse() if sparse else mdp
