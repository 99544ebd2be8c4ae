"""A linear-mixture RiverSwim: ``P(.|s, a) = sum_i theta_i P_i(.|s, a)`` over d = 3 known kernels.

The instance of the linear-mixture average-reward MDPs of LOOP (seed row 000#37; He, Zhong &
Yang 2024, whose linear-mixture AMDP has ``P(s'|s, a) = <phi(s'|s, a), theta*>`` with known
features phi and unknown theta*). Here the features are three RiverSwim-shaped kernels
(``phi(s'|s, a) = (P_1, P_2, P_3)(s'|s, a)``):

* ``P_1``: RiverSwim itself (:mod:`.riverswim`: right from an interior state 0.35 up, 0.6 stay,
  0.05 down);
* ``P_2``: a strong current (right from an interior state 0.05 up, 0.35 stay, 0.6 down; at 0:
  0.9 stay, 0.1 up; at S - 1: 0.3 stay, 0.7 down; left as RiverSwim's);
* ``P_3``: lazy (every action stays put).

``theta* = (w1, w2, 1 - w1 - w2)`` with ``w1 > 0`` (the chain then communicates), ``w2 >= 0``,
``w1 + w2 <= 1``; rewards are RiverSwim's. The model is a plain :class:`TabularMDP` (every
tabular learner runs on it) carrying ``mixture_basis (d, S, A, S)`` and ``mixture_theta (d,)``
for the linear-mixture learner.
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.families.riverswim import LEFT, RIGHT, riverswim
from theorylab.mdps.registry import register
from theorylab.mdps.sizes import check_dense_size
from theorylab.mdps.tabular import TabularMDP


def mixture_basis(S: int) -> np.ndarray:
    """The three kernels ``(3, S, 2, S)``: RiverSwim, strong current, lazy."""
    base = np.zeros((3, S, 2, S))
    base[0] = riverswim(S).P
    for s in range(S):
        base[1, s, LEFT, max(0, s - 1)] = 1.0
        base[2, s, :, s] = 1.0
    base[1, 0, RIGHT, 0], base[1, 0, RIGHT, 1] = 0.9, 0.1
    for s in range(1, S - 1):
        base[1, s, RIGHT, s + 1], base[1, s, RIGHT, s], base[1, s, RIGHT, s - 1] = 0.05, 0.35, 0.6
    base[1, S - 1, RIGHT, S - 1], base[1, S - 1, RIGHT, S - 2] = 0.3, 0.7
    return base


@register("riverswim-mixture")
def riverswim_mixture(S: int = 4, w1: float = 0.6, w2: float = 0.2, H: int = 20) -> TabularMDP:
    """RiverSwim as the mixture ``w1 P_1 + w2 P_2 + (1 - w1 - w2) P_3`` (module docstring)."""
    if S < 3:
        raise InvalidMDPError(f"riverswim-mixture needs S >= 3 states, got S={S}")
    if not (0.0 < w1 <= 1.0 and 0.0 <= w2 and w1 + w2 <= 1.0 + 1e-12):
        raise InvalidMDPError(
            f"riverswim-mixture needs w1 in (0, 1], w2 >= 0 and w1 + w2 <= 1, got w1={w1}, w2={w2}"
        )
    check_dense_size("riverswim-mixture", f"S={S}", S, 2)
    theta = np.array([w1, w2, max(0.0, 1.0 - w1 - w2)])
    basis = mixture_basis(S)
    P = np.einsum("i,isat->sat", theta, basis)
    mdp = TabularMDP(
        P, riverswim(S).R, horizon=H, name=f"riverswim-mixture:S={S},w1={w1!r},w2={w2!r},H={H}"
    )
    mdp.mixture_basis = basis  # (d, S, A, S)
    mdp.mixture_theta = theta  # (d,)
    return mdp
