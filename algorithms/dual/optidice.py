r"""OptiDICE, tabular and exact: offline policy optimisation as the dual-V problem on the data.

Reference: Lee, Jeon, Lee, Pineau, Kim, "OptiDICE: Offline Policy Optimization via Stationary
Distribution Correction Estimation", ICML 2021, section 3 (the nu-objective, their eq. (7)-(9) [M]
for the numbering) with ``f(x) = (x - 1)^2 / 2``; its identification with dual-V is Sikchi et al.
ICLR 2024 section 5 and theory-preference-dual-llm.md 6.2 (checked identity):

    min_nu  (1 - gamma) E_{mu0}[nu] + E_{d^D}[ -alpha f(w*_nu) + w*_nu e_nu ],
    w*_nu = max(0, (f')^{-1}(e_nu / alpha)),   e_nu(s, a) = r(s, a) + gamma E_{s'}[nu(s')] - nu(s),

which equals ``(1 - gamma) E_{mu0} nu + alpha E_{d^D}[f*_p(e_nu / alpha)]``: the dual-V objective
of :mod:`~theorylab.algorithms.dual.dual_v` with d^O = d^D. The policy is read off
``d* = d^D w*``: ``pi(a|s) = d*(s, a) / sum_a' d*(s, a')``.

Tabular exact sub-problem (the deviation from the paper, which fits nu and w with networks by
stochastic gradients): every expectation is under the empirical distribution of the dataset
(:mod:`~theorylab.algorithms.dual.empirical_model`), and the convex nu-problem is solved to
optimality (Newton, |grad| <= 1e-13). Where ``d*(s, .) = 0`` (states the solution never visits
under the empirical model) the policy falls back to the empirical behaviour policy (uniform where
there is no data): OptiDICE itself has no policy there. ``value_estimate`` is
``E_{d*}[r_hat] / (1 - gamma)``, OptiDICE's own estimate of its policy's value (not pessimistic).
Any f of :mod:`~theorylab.algorithms.dual.f_divergences` may be chosen (``f="kl"`` gives the
relative-entropy LP); the paper's choice is the default.
"""

from __future__ import annotations

import time

import numpy as np

from theorylab.algorithms.dual.dual_v import solve_dual_v
from theorylab.algorithms.dual.empirical_model import empirical_models
from theorylab.algorithms.offline.dataset import OfflineDataset
from theorylab.algorithms.offline.result import OfflineResult


def optidice(dataset: OfflineDataset, *, alpha: float = 0.1, f: str = "half-chi2") -> OfflineResult:
    """Fit tabular OptiDICE to a discounted dataset; one exact dual-V solve per seed.

    Returns an :class:`OfflineResult` with ``policy (B, S, A)``, ``value_estimate (B,)``,
    ``V (B, S)`` (nu*), ``Q = None``. Raises UncoveredFlowError when the data cannot carry any
    flow from mu0 under the empirical model (names the (s, a) pairs), DualInputError for alpha <= 0
    or finite-horizon data.
    """
    t0 = time.perf_counter()
    models = empirical_models(dataset, "optidice")
    B, S, A = dataset.n_seeds, dataset.S, dataset.A
    policy = np.empty((B, S, A))
    nu = np.empty((B, S))
    estimate = np.empty(B)
    gaps, residuals = [], []
    for b, (mdp, d_hat) in enumerate(models):
        sol = solve_dual_v(mdp, d_hat, alpha, f)
        d = sol.occupancy
        mass = d.sum(axis=1, keepdims=True)
        behaviour = np.where(
            d_hat.sum(1, keepdims=True) > 0,
            d_hat / np.maximum(d_hat.sum(1, keepdims=True), 1e-300),
            1.0 / A,
        )
        policy[b] = np.where(mass > 0, d / np.where(mass > 0, mass, 1.0), behaviour)
        nu[b] = sol.V
        estimate[b] = float(np.sum(d * mdp.reward(0))) / (1.0 - sol.gamma)
        gaps.append(sol.gap)
        residuals.append(sol.flow_residual)
    return OfflineResult(
        algorithm="optidice",
        policy=policy,
        value_estimate=estimate,
        V=nu,
        Q=None,
        pessimistic=False,
        params={"alpha": alpha, "f": f},
        info={
            "seconds": time.perf_counter() - t0,
            "duality_gap": np.array(gaps),
            "flow_residual": np.array(residuals),
        },
    )
