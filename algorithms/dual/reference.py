r"""The reference (data) distribution d^O of the regularised problem when none is given.

``d^O`` is the discounted occupancy of a behaviour policy, the same mixture the offline datasets
use (:func:`theorylab.algorithms.offline.dataset.behaviour_policy`):
``pi_b = coverage * pi* + (1 - coverage) * other`` with ``other`` "uniform" or "adversarial". The
default (coverage 0, uniform) is the uniform policy's occupancy: it covers every state reachable
from mu0, so the flow is always covered (:mod:`~theorylab.algorithms.dual.inputs`).
"""

from __future__ import annotations

import numpy as np

from theorylab.algorithms.offline.dataset import behaviour_policy
from theorylab.algorithms.planning.lp import _discount, occupancy_measure


def behaviour_reference(
    mdp, *, coverage: float = 0.0, other: str = "uniform", gamma: float | None = None
) -> np.ndarray:
    """``d^{pi_b}`` of the behaviour mixture (module docstring): discounted ``(S, A)``, or the
    stage occupancies ``(H, S, A)`` of a model with a horizon when gamma is None (the
    finite-horizon problem, as ``occupancy_flow`` decides)."""
    if mdp.horizon is not None and gamma is None:
        return occupancy_measure(mdp, behaviour_policy(mdp, coverage, other))
    g = _discount(mdp, gamma)
    model = mdp if mdp.gamma == g and mdp.horizon is None else mdp.with_objective(gamma=g)
    pol = behaviour_policy(model, coverage, other)  # pi* from the exact planner
    return occupancy_measure(model, pol, gamma=g)
