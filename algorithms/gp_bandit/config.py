r"""CONFIG: constrained efficient global optimisation with lower-confidence-bound surrogates.

Seed reference: ``seed-catalogue-000.md#39`` (tier A). Paper: W. Xu, Y. Jiang, B. Svetozarevic,
C. N. Jones, "Constrained Efficient Global Optimization of Expensive Black-box Functions",
ICML 2023, arXiv:2211.00162 (the catalogue row names other authors; the arXiv listing, the ICML
page and the authors' code name these). What was read: the abstract and two summaries [V] (LCB
surrogates of the objective and the constraints; each round solves the auxiliary problem; "the
same cumulative regret bound as that in the unconstrained case and similar cumulative constraint
violation upper bounds"; sublinear for Matern and squared-exponential kernels; infeasibility
declared when the auxiliary problem is infeasible), and the authors' code
(github.com/PREDICT-EPFL/ConfigOPT, ``config/config.py``) [V]: ``lcb = mean - beta * sd`` for
the objective and every constraint, the next point ``argmin`` of the objective's LCB over the
points whose constraint LCBs are all <= 0; their notebook scores ``[f(x_t) - f_min]^+`` and
``[g(x_t)]^+``. The paper's theorem, its beta_t and its constants were not read [A].

Algorithm (round t = 1..T, grid D of m points, N constraints g_i, GP posteriors
``mu_(t-1), sigma_(t-1)`` of f and every g_i, :mod:`theorylab.kernels.gp`)::

    LCB_f(x)   = mu_f(x)   - beta_t^(1/2) sigma_f(x)
    LCB_g_i(x) = mu_g_i(x) - beta_t^(1/2) sigma_g_i(x)
    F_t = {x in D : LCB_g_i(x) <= 0 for every i}          (optimistic feasible set)
    F_t empty:  declare the problem infeasible and stop
    otherwise:  x_t = argmin_{x in F_t} LCB_f(x),  observe f(x_t) + eps, g(x_t) + eps'

solved by enumeration of the grid. Under the confidence event (``|h - mu_h| <= beta^(1/2)
sigma_h`` for h = f, g_i at every x and t) a truly feasible x* stays in F_t, so a feasible
problem is never declared infeasible and ``LCB_f(x_t) <= f(x*)``.

beta_t [A: the finite-domain Bayesian confidence of GP-UCB, Srinivas et al. 2010, Theorem 1 /
Lemma 5.1, with a union bound over the N + 1 functions]::

    beta_t = 2 log((N + 1) |D| t^2 pi^2 / (6 delta))

It holds when f and the g_i are drawn from the GP prior the learner uses (the problems of
``gp-constrained``). The paper states its results under an RKHS-norm assumption with a beta_t of
the Chowdhury-Gopalan form (``B + R sqrt(2 (gamma_(t-1) + 1 + ln(1/delta)))``, from memory [M],
not used). The authors' code uses a constant beta = 3 on sd [V]. The regret rate carried by the
card ``xu2023-config-regret`` is GP-UCB's ``sqrt(C1 T beta_T gamma_T)``, C1 = 8 / log(1 +
sigma^-2), which the abstract says CONFIG matches.

Parameters: ``delta`` (0.1), ``scale`` (multiplies beta_t^(1/2); 1 is the rule above, 0 the
greedy mean-only learner, other values carry no guarantee). Controls (registered mutations,
``validations/gp_bandit_mutations.py``): beta = 0 (greedy) and the constraint ignored (F_t = D:
GP-UCB on f alone).

Computation: the posteriors of f and g are updated one observation at a time (rank-one
conditioning of ``(B, m)`` means and ``(B, m, m)`` covariances, batched over seeds; O(B m^2) per
round; tests compare them with the Cholesky posterior of :func:`theorylab.kernels.gp.gp_posterior`).
"""

from __future__ import annotations

import math

import numpy as np

from theorylab.algorithms.gp_bandit.run_record import GridBanditRun
from theorylab.algorithms.registry import register
from theorylab.kernels.gp import condition, posterior_sd
from theorylab.mdps.gp_grid import ConstrainedGPProblem

BOUND = "xu2023-config-regret"


def bayes_beta(t: np.ndarray, m: int, n_constraints: int, delta: float) -> np.ndarray:
    """beta_t = 2 log((N + 1) m t^2 pi^2 / (6 delta)) for rounds ``t (T,)`` (1-based)."""
    t = np.asarray(t, dtype=np.float64)
    return 2.0 * np.log((n_constraints + 1) * m * t**2 * math.pi**2 / (6.0 * delta))


def beta_scale() -> float:
    """A multiplier on beta_t^(1/2) (1: as above; the greedy control patches it to 0)."""
    return 1.0


def optimistic_feasible(lcb_g: np.ndarray) -> np.ndarray:
    """``(B, m)`` bool: the optimistic feasible set ``LCB_g(x) <= 0`` of every seed."""
    return lcb_g <= 0.0


def config_choices(problem: ConstrainedGPProblem, rounds: int, rngs, *, delta: float,
                   scale: float) -> GridBanditRun:  # fmt: skip
    """CONFIG on every seed (one generator each draws that seed's observation noise)."""
    B, m, T = len(rngs), problem.m, int(rounds)
    noise = float(problem.noise)
    mean_f = np.broadcast_to(problem.f_prior, (B, m)).copy()  # (B, m)
    mean_g = np.broadcast_to(problem.g_prior, (B, m)).copy()
    cov_f = np.broadcast_to(problem.K, (B, m, m)).copy()  # (B, m, m)
    cov_g = cov_f.copy()
    beta = bayes_beta(np.arange(1, T + 1), m, 1, delta)  # (T,)
    root = np.sqrt(beta) * float(scale) * beta_scale()  # (T,)
    choices = np.full((B, T), -1, dtype=np.int64)
    declared = np.zeros(B, dtype=np.int64)
    lcb_min = np.full((B, T), np.nan)  # LCB_f(x_t): the optimistic value (<= f* when calibrated)
    feasible_size = np.zeros((B, T), dtype=np.int64)  # |F_t|
    active = np.ones(B, dtype=bool)
    rows = np.arange(B)
    for t in range(T):
        if not active.any():
            break
        lcb_f = mean_f - root[t] * posterior_sd(cov_f)  # (B, m)
        lcb_g = mean_g - root[t] * posterior_sd(cov_g)
        F = optimistic_feasible(lcb_g)  # (B, m)
        size = F.sum(axis=1)  # (B,)
        newly = active & (size == 0)
        declared[newly] = t + 1
        active &= ~newly
        feasible_size[:, t] = size
        if not active.any():
            break
        masked = np.where(F, lcb_f, np.inf)
        x = masked.argmin(axis=1)  # (B,)
        choices[active, t] = x[active]
        lcb_min[active, t] = masked[rows, x][active]
        live = np.flatnonzero(active)
        y_f, y_g = problem.observe(x[live], [rngs[i] for i in live])
        for mean, cov, y in ((mean_f, cov_f, y_f), (mean_g, cov_g, y_g)):
            sub_mean, sub_cov = mean[live], cov[live]
            condition(sub_mean, sub_cov, x[live], y, noise)
            mean[live], cov[live] = sub_mean, sub_cov
    return GridBanditRun(
        choices=choices,
        declared=declared,
        diagnostics={"beta": beta, "lcb_min": lcb_min, "feasible_size": feasible_size},
        config={"delta": float(delta), "scale": float(scale) * beta_scale(), "m": m},
    )


@register(
    "config",
    kind="gp-bandit",
    problem="gp-constrained",
    bounds=(BOUND,),
    papers=("000#39",),
    summary="CONFIG (Xu et al. 2023): argmin of the objective's LCB over the points whose "
    "constraint LCB is <= 0 (exact GP posteriors on a grid); infeasibility declared when none is",
)
def config(problem, rounds, rngs, delta: float = 0.1, scale: float = 1.0) -> GridBanditRun:
    """CONFIG on a ``gp-constrained`` problem for ``rounds`` evaluations per seed."""
    if not isinstance(problem, ConstrainedGPProblem):
        raise ValueError(
            f"config runs on a constrained GP grid problem (e.g. gp-constrained:m=50), got "
            f"{getattr(problem, 'name', type(problem).__name__)!r}"
        )
    ok = isinstance(delta, (int, float)) and not isinstance(delta, bool)
    if not (ok and 0.0 < delta < 1.0):
        raise ValueError(f"config: delta must lie in (0, 1), got {delta!r}")
    ok = isinstance(scale, (int, float)) and not isinstance(scale, bool)
    if not (ok and math.isfinite(scale) and scale >= 0.0):
        raise ValueError(f"config: scale must be a finite number >= 0, got {scale!r}")
    return config_choices(problem, rounds, rngs, delta=float(delta), scale=float(scale))
