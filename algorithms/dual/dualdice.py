r"""DualDICE, tabular and exact: off-policy evaluation by the dual-Q problem with zero reward.

Reference: Nachum, Chow, Dai, Li, "DualDICE: Behavior-Agnostic Estimation of Discounted
Stationary Distribution Corrections", NeurIPS 2019, section 3 (the objective
``min_nu 1/2 E_{d^D}[(nu - B^pi nu)^2] - (1 - gamma) E_{s0 ~ mu0, a0 ~ pi}[nu(s0, a0)]``, their
eq. (6) [M] for the numbering, whose minimiser has ``nu - B^pi nu = w_{pi/D} = d^pi / d^D``, with
``B^pi nu(s, a) = gamma E_{s' ~ P, a' ~ pi}[nu(s', a')]``); the estimator is
``V_hat = E_{d^D}[w r] / (1 - gamma)``. Identification with dual-Q (Sikchi et al. ICLR 2024,
section 5): with Q = -nu it is the dual-Q problem of :mod:`~theorylab.algorithms.dual.dual_q` for
zero reward, alpha = 1 and ``f*(y) = y^2 / 2``; we solve it as the dual-Q problem with OptiDICE's
``f = (x - 1)^2 / 2`` (``f*(y) = y + y^2 / 2``), which has the same minimiser up to the shift
``w = 1 + y`` and returns ``w = d^pi / d^D`` directly.

Tabular exact sub-problem (deviation from the paper, which uses the Fenchel trick and function
approximation to avoid double sampling): expectations under the empirical distribution of the
data (:mod:`~theorylab.algorithms.dual.empirical_model`), the inner Bellman expectation under the
empirical P_hat, solved to optimality. Then ``d_hat^D w = d_hat^pi``, the occupancy of pi in the
empirical MDP, so the estimate equals the model-based (certainty-equivalence) value of pi on the
empirical MDP: the tests check this identity, and the claim ``dualdice-ope-rate`` measures the
error ``|V_hat - V^pi(mu0)| ~ N^(-1/2)``. Needs ``d_hat^pi << d_hat^D`` (pi only takes actions seen
in the data where it goes), else UncoveredFlowError names the pairs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from theorylab.algorithms.dual.dual_q import solve_dual_q
from theorylab.algorithms.dual.empirical_model import empirical_models
from theorylab.algorithms.offline.dataset import OfflineDataset
from theorylab.mdps import TabularMDP


@dataclass
class DICEEstimate:
    """value ``(B,)`` the DualDICE estimate of V^pi(mu0); ratio ``(B, S, A)`` the estimated
    correction w = d^pi / d^D (0 where there is no data); info: solver diagnostics."""

    value: np.ndarray
    ratio: np.ndarray
    info: dict = field(default_factory=dict)


def dualdice(dataset: OfflineDataset, policy: np.ndarray) -> DICEEstimate:
    """Estimate V^pi(mu0) of a target policy (``(S,)`` int or ``(S, A)``) from discounted data."""
    t0 = time.perf_counter()
    models = empirical_models(dataset, "dualdice")
    B, S, A = dataset.n_seeds, dataset.S, dataset.A
    values = np.empty(B)
    ratio = np.zeros((B, S, A))
    gaps = []
    for b, (mdp, d_hat) in enumerate(models):
        zero = TabularMDP(mdp.P_flat(0), np.zeros((S, A)), mdp.mu0, gamma=mdp.gamma)
        sol = solve_dual_q(zero, policy, d_hat, 1.0, "half-chi2")
        on = d_hat > 0
        ratio[b][on] = sol.occupancy[on] / d_hat[on]
        values[b] = float(np.sum(d_hat * ratio[b] * mdp.reward(0))) / (1.0 - mdp.gamma)
        gaps.append(sol.gap)
    return DICEEstimate(
        values, ratio, {"seconds": time.perf_counter() - t0, "duality_gap": np.array(gaps)}
    )
