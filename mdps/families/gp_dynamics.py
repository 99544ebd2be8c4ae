"""A one-dimensional system with Gaussian-process dynamics, discretised on a grid (NeoRL's
setting, seed row 000#38, at a size where the GP posterior is exact).

* States: ``nx`` grid points ``x_i`` evenly spaced in [-1, 1]; controls: ``nu`` points ``u_j`` in
  [-1, 1].
* Dynamics: ``y = f(x, u) + sigma_n eps`` with ``eps ~ N(0, 1)``; the next state is the grid
  point nearest ``y`` (cells ``[b_i, b_(i+1))`` with midpoint boundaries, the end cells open
  to +-infinity), so ``P(x_i | x, u) = Phi((b_(i+1) - f) / sigma_n) - Phi((b_i - f) / sigma_n)``,
  except that cells of mass below ``TAIL = 1e-9`` are cut and the row renormalised (a draw of y
  landing there is redrawn: the simulated chain is exactly P, and the Gaussian likelihood the
  learner uses is off by at most the cut mass).
* ``f(x, u) = 0.7 x + 0.4 u + g(x, u)`` with ``g`` one draw (numpy seed ``seed``) of a zero-mean
  GP with the RBF kernel ``k(z, z') = s^2 exp(-||z - z'||^2 / (2 l^2))`` (``s = 0.3``,
  ``l = 0.5``) on the ``nx nu`` grid pairs (exact: a Gaussian vector with covariance K).
* Cost ``c(x, u) = (x - 0.5)^2 + 0.1 u^2`` (known), reward ``1 - c / c_max`` in [0, 1]; the
  average-cost optimum is the average-reward optimum of this tabular model (the LP).

The model is a :class:`TabularMDP` carrying what a GP learner knows: ``gp_x (nx,)``,
``gp_u (nu,)``, ``gp_prior_mean (nx, nu)`` (``0.7 x + 0.4 u``), ``gp_kernel (nx nu, nx nu)``
(pairs in ``x``-major order), ``gp_noise`` (sigma_n), ``gp_cost (nx, nu)``, and, for
diagnostics only, ``gp_f (nx, nu)`` (the true f).
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.registry import register
from theorylab.mdps.tabular import TabularMDP

SIGNAL, LENGTH = 0.3, 0.5  # the RBF kernel's s and l
TARGET, CONTROL_WEIGHT = 0.5, 0.1
TAIL = 1e-9  # cells of smaller Gaussian mass are cut (the LP needs no 1e-300 entries)


def cell_bounds(x: np.ndarray) -> np.ndarray:
    """Cell boundaries ``(nx + 1,)``: -inf, the midpoints, +inf."""
    return np.r_[-np.inf, (x[1:] + x[:-1]) / 2.0, np.inf]


def discretised_gaussian(means: np.ndarray, noise: float, bounds: np.ndarray) -> np.ndarray:
    """``(..., nx)`` probabilities of each cell under ``N(mean, noise^2)``."""
    from scipy.special import ndtr

    cdf = ndtr((bounds - means[..., None]) / noise)  # (..., nx + 1)
    p = np.diff(cdf, axis=-1)
    p[p < TAIL] = 0.0  # cells the draw rejects (the learner's kernel redraws y there)
    return p / p.sum(axis=-1, keepdims=True)


def rbf_kernel(x: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``(nx nu, nx nu)`` RBF covariance over the grid pairs, x-major."""
    z = np.stack(np.meshgrid(x, u, indexing="ij"), axis=-1).reshape(-1, 2)
    d2 = ((z[:, None, :] - z[None, :, :]) ** 2).sum(axis=-1)
    return SIGNAL**2 * np.exp(-d2 / (2.0 * LENGTH**2))


@register("gp-dynamics")
def gp_dynamics(
    nx: int = 21, nu: int = 5, noise: float = 0.1, seed: int = 0, H: int = 20
) -> TabularMDP:
    """The grid-discretised GP system (module docstring)."""
    if nx < 3 or nu < 2:
        raise InvalidMDPError(f"gp-dynamics needs nx >= 3 and nu >= 2, got nx={nx}, nu={nu}")
    if nx * nu > 2000:
        raise InvalidMDPError(f"gp-dynamics: nx * nu = {nx * nu} > 2000 (the exact GP is cubic)")
    if not noise > 0.0:
        raise InvalidMDPError(f"gp-dynamics needs noise > 0, got noise={noise}")
    x, u = np.linspace(-1.0, 1.0, nx), np.linspace(-1.0, 1.0, nu)
    K = rbf_kernel(x, u)
    rng = np.random.default_rng(seed)
    L = np.linalg.cholesky(K + 1e-9 * np.eye(nx * nu))
    g = (L @ rng.standard_normal(nx * nu)).reshape(nx, nu)
    prior = 0.7 * x[:, None] + 0.4 * u[None, :]  # (nx, nu)
    f = prior + g
    P = discretised_gaussian(f, noise, cell_bounds(x))  # (nx, nu, nx)
    cost = (x[:, None] - TARGET) ** 2 + CONTROL_WEIGHT * u[None, :] ** 2
    c_max = float((1.0 + TARGET) ** 2 + CONTROL_WEIGHT)
    mu0 = np.zeros(nx)
    mu0[0] = 1.0  # start at x = -1
    name = f"gp-dynamics:nx={nx},nu={nu},noise={noise!r},seed={seed},H={H}"
    mdp = TabularMDP(P, 1.0 - cost / c_max, mu0=mu0, horizon=H, name=name)
    mdp.gp_x, mdp.gp_u, mdp.gp_prior_mean, mdp.gp_kernel = x, u, prior, K
    mdp.gp_noise, mdp.gp_cost, mdp.gp_f, mdp.gp_cost_scale = float(noise), cost, f, c_max
    return mdp
