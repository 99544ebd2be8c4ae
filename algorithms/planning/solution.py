"""The result type every exact planner returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Solution:
    """An exact (or certified epsilon-exact) solution of an MDP.

    Finite horizon: ``V (H+1, S)`` with ``V[H] = 0``, ``Q (H, S, A)``, ``policy (H, S)`` int.
    Discounted: ``V (S,)``, ``Q (S, A)``, ``policy (S,)`` int.
    ``value`` is ``V_1(mu0)`` (``V[0] @ mu0``, or ``V @ mu0`` when discounted).
    ``info`` holds solver statistics: ``seconds``, ``iterations``, ``error_bound`` (a certified
    bound on ``||V - V*||_inf`` for iterative solvers), ``method``.
    """

    V: np.ndarray
    Q: np.ndarray
    policy: np.ndarray
    value: float
    info: dict = field(default_factory=dict)
