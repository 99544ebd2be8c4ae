"""``gp-constrained``: a constrained black-box problem on a grid with f and g drawn from a GP
prior (:class:`theorylab.mdps.gp_grid.ConstrainedGPProblem`; CONFIG, seed row 000#39).

The grid: ``m`` points per axis evenly spaced on [0, 1]^d (d = 1 or 2; m^d points). Kernel
``se`` or ``matern12`` / ``matern32`` / ``matern52`` (:mod:`theorylab.kernels.gp`), unit prior
variance, length scale ``length``. f and g are independent draws (numpy seed ``seed``); g's
prior mean is the constant ``offset`` (known to the learner): ``offset = 0`` gives a feasible
set of about half the grid, a large offset (e.g. 3.5) an instance that is usually infeasible --
enumeration decides (``problem.feasible``).
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.kernels.gp import KERNELS, kernel_matrix, prior_draws
from theorylab.mdps.gp_grid import ConstrainedGPProblem
from theorylab.mdps.registry import register

MAX_POINTS = 1000  # the learners keep an (m, m) posterior covariance per seed


@register("gp-constrained")
def gp_constrained(
    m: int = 50,
    d: int = 1,
    kernel: str = "se",
    length: float = 0.1,
    noise: float = 0.1,
    offset: float = 0.0,
    seed: int = 0,
) -> ConstrainedGPProblem:
    """The grid problem (module docstring)."""
    if isinstance(m, bool) or not isinstance(m, int) or m < 2:
        raise InvalidMDPError(f"gp-constrained: m (grid points per axis) must be an integer >= 2, "
                         f"got {m!r}")  # fmt: skip
    if d not in (1, 2):
        raise InvalidMDPError(f"gp-constrained: d (grid dimension) must be 1 or 2, got {d!r}")
    if m**d > MAX_POINTS:
        raise InvalidMDPError(f"gp-constrained: m^d = {m**d} grid points > {MAX_POINTS} (the exact "
                         "GP keeps an (m^d, m^d) covariance per seed)")  # fmt: skip
    if kernel not in KERNELS:
        raise InvalidMDPError(f"gp-constrained: kernel must be one of {', '.join(KERNELS)}, "
                         f"got {kernel!r}")  # fmt: skip
    for label, val in (("length", length), ("noise", noise)):
        if not (isinstance(val, (int, float)) and np.isfinite(val) and val > 0):
            raise InvalidMDPError(
                f"gp-constrained: {label} must be a finite number > 0, got {val!r}"
            )
    if not (isinstance(offset, (int, float)) and np.isfinite(offset)):
        raise InvalidMDPError(f"gp-constrained: offset must be a finite number, got {offset!r}")
    axis = np.linspace(0.0, 1.0, m)
    X = np.stack(np.meshgrid(*([axis] * d), indexing="ij"), axis=-1).reshape(-1, d)  # (m^d, d)
    K = kernel_matrix(kernel, X, length=float(length))
    draws = prior_draws(K, np.random.default_rng(seed), 2)  # (2, m^d): f and g - offset
    n = X.shape[0]
    name = (
        f"gp-constrained:m={m},d={d},kernel={kernel},length={length!r},noise={noise!r},"
        f"offset={offset!r},seed={seed}"
    )
    return ConstrainedGPProblem(
        X=X,
        K=K,
        f=draws[0],
        g=draws[1] + float(offset),
        f_prior=np.zeros(n),
        g_prior=np.full(n, float(offset)),
        noise=float(noise),
        kernel=kernel,
        length=float(length),
        name=name,
    )
