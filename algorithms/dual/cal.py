r"""CAL: conservative, augmented-Lagrangian primal-dual for an off-policy constrained MDP.

Seed reference: ``seed-catalogue-000.md#36`` (tier B). Paper: Zifan Wu, Bo Tang, Qian Lin,
Chao Yu, Shangqin Mao, Qianlong Xie, Xingxing Wang, Dong Wang, "Off-Policy Primal-Dual Safe
Reinforcement Learning", ICLR 2024 (code: github.com/ZifanWu/CAL).

What was read [V] (the catalogue row): two ingredients, "conservative policy optimization" -- an
uncertainty-aware cost estimate "to avoid off-policy cost underestimation" -- and "local policy
convexification" (an augmented Lagrangian) "to reduce suboptimality"; "we provide theoretical
interpretations of the joint coupling effect of these two ingredients" (no formal rate); and,
from a public summary of arXiv:2401.14758 found in a time-boxed search, that the conservative
estimate is an ensemble upper confidence bound Q_c^UCB and the convexification an augmented
Lagrangian (with a gradient rectification not reproduced here). The paper's update rules and
constants were not read; the tabular twin below is reconstructed [A]
from those sentences and the catalogue's twin ("tabular CMDP; ensemble/UCB cost-Q; augmented
Lagrangian"), on top of :mod:`theorylab.algorithms.dual.cmdp` (the CMDP LP, the exact
projection onto the occupancy polytope, and plain Lagrangian GDA, the baseline).

Algorithm (``cal``, kind ``constrained``, exact in occupancy space like ``reload``):

* off-policy cost data [A]: ``samples`` state-action pairs drawn from the uniform policy's
  normalised occupancy, each with a Bernoulli(c(s, a)) cost observation; c_hat the empirical
  mean; the conservative estimate c_ucb = min(1, c_hat + kappa / sqrt(n(s, a))) (1 where
  n = 0). ``samples=0`` uses the true cost (no estimation), and kappa = 0 the plain estimate;
* augmented-Lagrangian GDA [A]: with g(d) = <d, c_ucb> - (1 - gamma) b,

      d      <- Pi_K(d + eta (r - max(0, lambda + rho g(d)) c_ucb)),
      lambda <- clip(lambda + eta g(d), 0, lambda_max),

  i.e. a gradient step on L_rho(d, lambda) = <d, r> - ((lambda + rho g(d))_+^2 - lambda^2) /
  (2 rho), the augmented Lagrangian of the method of multipliers (Hestenes 1969, Powell 1969
  [M]): the quadratic term makes it strongly concave across the constraint near the optimum
  (CAL's "local convexification"). At rho = 0 the step is Lagrangian GDA exactly
  (``cmdp.lagrangian_gda(optimistic=False)``; the claim checks the two agree iterate by
  iterate).

Measured (``cal-augmented-lagrangian`` in ``validations/claims/dual.py``): with the true cost,
rho = 5 brings the last iterate to the LP optimum while GDA (rho = 0) keeps oscillating and spends
many more iterations above the cost bound; with an estimated cost, kappa > 0 keeps the output
feasible under the true cost where kappa = 0 does not always.
"""

from __future__ import annotations

import time

import numpy as np

from theorylab.algorithms.dual.cmdp import (
    GDATrace,
    lagrangian_problem,
    project_onto_occupancies,
    scored_trace,
)
from theorylab.algorithms.dual.inputs import DualInputError

PAPERS = ("000#36",)


def conservative_cost(
    mdp, costs: np.ndarray, samples: int, kappa: float, rng, gamma: float
) -> np.ndarray:
    """c_ucb (m, S, A) from ``samples`` off-policy Bernoulli cost observations (module
    docstring); the true costs when samples = 0."""
    from theorylab.algorithms.planning.lp import occupancy_measure

    if samples == 0:
        return costs
    S, A = mdp.S, mdp.A
    beh = occupancy_measure(mdp, np.full((S, A), 1.0 / A), gamma=gamma).ravel()
    beh = beh / beh.sum()
    n = rng.multinomial(samples, beh).reshape(S, A)  # (S, A)
    hits = rng.binomial(np.broadcast_to(n, costs.shape), costs)  # (m, S, A)
    with np.errstate(invalid="ignore", divide="ignore"):
        c_hat = np.where(n > 0, hits / np.maximum(n, 1), 1.0)
        width = np.where(n > 0, kappa / np.sqrt(np.maximum(n, 1)), 1.0)
    return np.minimum(1.0, c_hat + width)


def effective_multiplier(lam: np.ndarray, gap: np.ndarray, rho: float) -> np.ndarray:
    """(lambda + rho g(d))_+, the multiplier the augmented Lagrangian's gradient in d carries
    (lambda itself at rho = 0: the plain Lagrangian)."""
    return np.maximum(0.0, lam + rho * gap) if rho > 0 else lam


def cal_primal_dual(
    mdp,
    costs,
    thresholds,
    *,
    steps: int = 2000,
    eta: float = 1.0,
    rho: float = 5.0,
    kappa: float = 1.0,
    samples: int = 0,
    sample_seed: int = 0,
    lambda_max: float = 10.0,
    gamma: float | None = None,
    mu: np.ndarray | None = None,
) -> GDATrace:
    """Run CAL (module docstring); the trace is measured under the *true* costs."""
    from theorylab.algorithms.planning.lp import occupancy_measure

    t0 = time.perf_counter()
    if not steps >= 1 or not eta > 0:
        raise DualInputError(f"cal: steps must be >= 1 and eta > 0, got {steps}, {eta}")
    for name, value in (("rho", rho), ("kappa", kappa)):
        if not (np.isfinite(value) and value >= 0):
            raise DualInputError(f"cal: {name} must be a finite number >= 0, got {value!r}")
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 0:
        raise DualInputError(f"cal: samples must be an integer >= 0, got {samples!r}")
    P = lagrangian_problem(mdp, costs, thresholds, gamma, mu, lambda_max)
    g, mu, c, b, opt, M, rhs, r = P.g, P.mu, P.c, P.b, P.opt, P.M, P.rhs, P.r
    S, A, m = mdp.S, mdp.A, c.shape[0]
    c_used = conservative_cost(mdp, c, int(samples), kappa, np.random.default_rng(sample_seed), g)
    C_true, C, budget = P.C, c_used.reshape(m, S * A), P.budget
    d = occupancy_measure(mdp, np.full((S, A), 1.0 / A), gamma=g, mu=mu).ravel()
    lam, xk = np.zeros(m), None
    occ, lams = np.empty((steps, S * A)), np.empty((steps, m))  # iterates d_t, lambda_t
    for t in range(steps):
        gap = C @ d - budget  # (m,) the estimated constraint
        effective = effective_multiplier(lam, gap, rho)
        d, xk = project_onto_occupancies(M, d + eta * (r - effective @ C), rhs, xk)
        lam = np.clip(lam + eta * gap, 0.0, lambda_max)
        occ[t], lams[t] = d, lam
    method = f"cal(rho={rho:g}, kappa={kappa:g}, samples={int(samples)})"
    # scored under the true costs
    return scored_trace(method, eta, occ, lams, r, C_true, b, g, M, rhs, opt, (S, A), t0)
