"""A one-dimensional point mass on a grid: a metric-state MDP with a fine action grid (the
setting of the PRDC claim, seed row 002-004#C3).

* States: ``nx`` grid points ``x_i`` evenly spaced in [-1, 1]; actions: ``nu`` controls ``u_j``
  evenly spaced in [-1, 1] (a fine grid stands in for a continuous action).
* Dynamics: ``y = x + step * u + noise * eps`` with ``eps ~ N(0, 1)``; the next state is the grid
  cell holding ``y`` (midpoint boundaries, end cells open: the walls at -1 and 1), exactly as in
  ``gp-dynamics`` (:func:`~theorylab.mdps.families.gp_dynamics.discretised_gaussian`).
* Reward ``1 - ((x - 0.5)^2 + c u^2) / (2.25 + c)`` in [0, 1], c = ``control`` (default 0.1: the
  cost of ``gp-dynamics``: reach x = 0.5, pay c u^2 for control); start state x = -1; discount
  ``gamma`` (discounted only).

The model is a :class:`TabularMDP` carrying its coordinates ``pm_x (nx,)`` and ``pm_u (nu,)``.
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.families.gp_dynamics import (
    CONTROL_WEIGHT,
    TARGET,
    cell_bounds,
    discretised_gaussian,
)
from theorylab.mdps.registry import register
from theorylab.mdps.tabular import TabularMDP


@register("point-mass")
def point_mass(
    nx: int = 21,
    nu: int = 21,
    step: float = 0.2,
    noise: float = 0.05,
    control: float = CONTROL_WEIGHT,
    gamma: float = 0.9,
) -> TabularMDP:
    """The grid point mass (module docstring)."""
    if nx < 3 or nu < 2:
        raise InvalidMDPError(f"point-mass needs nx >= 3 and nu >= 2, got nx={nx}, nu={nu}")
    if nx * nu > 20000:
        raise InvalidMDPError(f"point-mass: nx * nu = {nx * nu} > 20000")
    if not (np.isfinite(step) and step > 0.0):
        raise InvalidMDPError(f"point-mass needs step > 0, got step={step!r}")
    if not (np.isfinite(noise) and noise > 0.0):
        raise InvalidMDPError(f"point-mass needs noise > 0, got noise={noise!r}")
    if not (np.isfinite(control) and control >= 0.0):
        raise InvalidMDPError(f"point-mass needs control >= 0, got control={control!r}")
    if not 0.0 < gamma < 1.0:
        raise InvalidMDPError(f"point-mass needs 0 < gamma < 1, got gamma={gamma!r}")
    x, u = np.linspace(-1.0, 1.0, nx), np.linspace(-1.0, 1.0, nu)
    means = x[:, None] + step * u[None, :]  # (nx, nu)
    P = discretised_gaussian(means, noise, cell_bounds(x))  # (nx, nu, nx)
    cost = (x[:, None] - TARGET) ** 2 + control * u[None, :] ** 2
    c_max = float((1.0 + TARGET) ** 2 + control)
    mu0 = np.zeros(nx)
    mu0[0] = 1.0  # start at x = -1
    name = (
        f"point-mass:nx={nx},nu={nu},step={step!r},noise={noise!r},control={control!r},"
        f"gamma={gamma!r}"
    )
    mdp = TabularMDP(P, 1.0 - cost / c_max, mu0=mu0, gamma=gamma, name=name)
    mdp.pm_x, mdp.pm_u = x, u
    return mdp
