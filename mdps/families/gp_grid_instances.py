"""``gp-constrained``: a constrained black-box problem on a grid with f and g drawn from a GP
prior (:class:`theorylab.mdps.gp_grid.ConstrainedGPProblem`; CONFIG, seed row 000#39);
``transfer-grid``: MBTL's training-task selection problem
(:class:`theorylab.mdps.gp_grid.TransferGridProblem`; seed row 002-004#B1).

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
from theorylab.mdps.gp_grid import ConstrainedGPProblem, TransferGridProblem
from theorylab.mdps.registry import register

MAX_POINTS = 1000  # the learners keep an (m, m) posterior covariance per seed
PERFORMANCE_VARIANCE = 0.25  # transfer-grid: the prior variance of the training performance


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


@register("transfer-grid")
def transfer_grid(
    m: int = 20,
    length: float = 0.2,
    slope: float = 2.0,
    noise: float = 0.05,
    seed: int = 0,
) -> TransferGridProblem:
    """MBTL's synthetic transfer problem (seed row 002-004#B1): m contexts evenly spaced on
    [0, 1]; the training performance f = 1 + a draw of a squared-exponential GP (variance 0.25,
    length ``length``; prior mean 1 known to the learner); transfer ``J[c, c'] = f(c) - slope
    |c - c'|``; a trained model's evaluations carry N(0, noise^2) noise."""
    if isinstance(m, bool) or not isinstance(m, int) or not 2 <= m <= 60:
        raise InvalidMDPError(f"transfer-grid: m (contexts) must be an integer in [2, 60], "
                              f"got {m!r}")  # fmt: skip
    for label, val in (("length", length), ("noise", noise), ("slope", slope)):
        if not (isinstance(val, (int, float)) and np.isfinite(val) and val >= 0):
            raise InvalidMDPError(
                f"transfer-grid: {label} must be a finite number >= 0, got {val!r}"
            )
    if length == 0 or noise == 0:
        raise InvalidMDPError("transfer-grid: length and noise must be > 0")
    c = np.linspace(0.0, 1.0, m)
    K = kernel_matrix("se", c[:, None], length=float(length), variance=PERFORMANCE_VARIANCE)
    f = 1.0 + prior_draws(K, np.random.default_rng(seed), 1)[0]
    name = f"transfer-grid:m={m},length={length!r},slope={slope!r},noise={noise!r},seed={seed}"
    return TransferGridProblem(
        contexts=c, K=K, f=f, f_prior=np.ones(m), slope=float(slope), noise=float(noise),
        length=float(length), name=name,
    )  # fmt: skip
