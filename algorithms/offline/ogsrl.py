r"""OGSRL: the support-guarded, cost-constrained occupancy LP on the empirical model (tabular).

Seed reference: ``seed-catalogue-002-004.md#C7`` -- Yan, Shen, Wachi, Gros, Zhao, Hu, "Offline
Guarded Safe Reinforcement Learning for Medical Treatment Optimization Strategies" (OGSRL),
arXiv:2505.16242 (2025). Read [V]: the abstract and public summaries of the paper (search, ~5 min;
the full text and code were not read) -- a model-based offline method solving an *estimated CMDP*
(E-CMDP) with two constraints: an "OOD guardian", a polynomial sublevel set fitted to the data's
state-action region with an *OOD cost bound* on leaving it, and "a safety cost constraint"; the
guarantee: "policies that satisfy these constraints remain in safe and reliable regions and
achieve performance close to the best possible policy supported by the data". Reconstructed [A]
(the catalogue's tabular reading): the sublevel set becomes the exact support
``S_D = {(s, a): n(s, a) > 0}``, the OOD cost the indicator of pairs outside S_D with bound 0
(equivalently ``d = 0`` off S_D), the E-CMDP the empirical model, and the CMDP is solved exactly
by its occupancy LP (Altman 1999, ch. 3) [std LP]:

    max_{d >= 0}  <d, r_hat> / (1 - gamma)
    s.t.  sum_a d(s, a) = (1 - gamma) mu0(s) + gamma sum_{s', a'} P_hat(s | s', a') d(s', a')
          d(s, a) = 0                       for (s, a) outside S_D   (the OOD guardian)
          <d, c> / (1 - gamma) <= kappa                               (the safety cost)

with ``S_D = {(s, a): n(s, a) > 0}`` the pairs in the data and ``(P_hat, r_hat)`` the empirical
model (:func:`theorylab.algorithms.dual.empirical_model.empirical_models`). The policy is
``pi(a|s) = d(s, a) / sum_a d(s, a)`` where the optimum visits s and uniform over the supported
actions elsewhere, so it plays only supported pairs everywhere. The LP is
:func:`theorylab.algorithms.dual.cmdp.solve_cmdp_lp` with its ``support`` argument.

Why the guardian matters, in tabular form. On a pair without data the model knows nothing; the
model has to say *something* there (``fill_reward``: the reward of a self-loop the model puts on
every unseen pair; the library's convention is 0 -- a learned model extrapolates to anything).
With the support row the answer does not depend on the fill at all; without it (the mutation
``ogsrl-support-dropped``) an optimistic fill is exploited -- the offline failure mode.

Constants: none beyond the inputs. ``costs`` ``(S, A)`` (or ``(m, S, A)``) known to the learner
(the medical-knowledge cost of the paper is a given function of (s, a) [A]); ``kappa`` the bound
on the discounted cost ``V_c(mu0)``; ``costs=None``: no cost row (the support LP alone).

Guarantees checked (``validations/claims/offline.py``, ``ogsrl-support-restricted-optimum``), on
population data (the empirical model equals the true one on S_D): the policy plays only pairs in
S_D, its true cost is <= kappa, and its true value equals the best support-restricted policy's,
found by brute force over deterministic policies and their pairwise mixtures (a constrained
optimum mixes at most m + 1 deterministic policies, Altman 1999, Thm. 3.8) -- never by an LP.
Deviations: discounted only; exact support instead of a fitted sublevel set; the LP instead of
the paper's CPO-style policy optimisation; the "near-optimality" gap to the unrestricted optimum
is reported (INFO), not bounded (the paper's finite-sample constants were not read).
Measured (claim, seed 0): V(pi) - V_brute <= 1.6e-14 relative and cost excess <= 2e-14 over 30
instances (full); the unguarded CMDP optimum on the true model leaves the support on 29/30 and is
1.27 above OGSRL on average (max 4.34, V in [0, 10]) -- the price of staying on the data.
"""

from __future__ import annotations

import time

import numpy as np

from theorylab.algorithms.dual.cmdp import check_costs, solve_cmdp_lp
from theorylab.algorithms.dual.empirical_model import empirical_models
from theorylab.algorithms.dual.inputs import DualInputError
from theorylab.algorithms.offline.dataset import OfflineDataset
from theorylab.algorithms.offline.result import OfflineResult
from theorylab.mdps import TabularMDP


def _filled(model: TabularMDP, support: np.ndarray, fill_reward: float) -> TabularMDP:
    """The empirical model with reward ``fill_reward`` on the (self-loop) unseen pairs."""
    if fill_reward == 0.0:
        return model
    R = np.where(support, model.reward(0), fill_reward)  # (S, A)
    return TabularMDP(model.P_flat(0), R, model.mu0, gamma=model.gamma, name=model.name)


def guarded_policy(occupancy: np.ndarray, support: np.ndarray) -> np.ndarray:
    """``occupancy (S, A)`` -> ``pi (S, A)``: ``d / sum_a d`` where visited, uniform over the
    supported actions elsewhere (uniform over all where a state has none)."""
    mass = occupancy.sum(axis=1, keepdims=True)
    allowed = support | ~support.any(axis=1, keepdims=True)
    rest = allowed / allowed.sum(axis=1, keepdims=True)
    return np.where(mass > 0, occupancy / np.where(mass > 0, mass, 1.0), rest)


def ogsrl(
    dataset: OfflineDataset,
    *,
    costs: np.ndarray | None = None,
    kappa: float = np.inf,
    fill_reward: float = 0.0,
) -> OfflineResult:
    """The support- and cost-constrained occupancy LP per seed (module docstring)."""
    if not (np.isfinite(fill_reward) and 0.0 <= fill_reward <= 1.0):
        raise DualInputError(f"fill_reward must be in [0, 1], got {fill_reward!r}")
    if not (isinstance(kappa, (int, float)) and kappa == kappa):
        raise DualInputError(f"kappa must be a number (inf: no cost bound), got {kappa!r}")
    t0 = time.perf_counter()
    models = empirical_models(dataset, "ogsrl")
    S, A = dataset.S, dataset.A
    if costs is None or kappa == np.inf:
        c, b = np.zeros((1, S, A)), np.zeros(1)  # no cost row: 0 <= 0
    else:
        m = 1 if np.ndim(costs) == 2 else int(np.shape(costs)[0])
        c, b = check_costs(models[0][0], costs, np.full(m, float(kappa)))
    pols, values, cost_values, supports = [], [], [], []
    for model, d_hat in models:
        support = d_hat > 0  # (S, A)
        sol = solve_cmdp_lp(_filled(model, support, fill_reward), c, b, support=support)
        pols.append(guarded_policy(sol.occupancy, support))
        values.append(sol.value)
        cost_values.append(sol.cost_values)
        supports.append(support)
    return OfflineResult(
        algorithm="ogsrl",
        policy=np.stack(pols),  # (B, S, A)
        value_estimate=np.asarray(values),  # (B,) the LP value on the empirical model
        V=None,
        Q=None,
        pessimistic=False,
        params={"kappa": float(kappa), "fill_reward": fill_reward, "costs": costs is not None},
        info={
            "seconds": time.perf_counter() - t0,
            "cost_estimate": np.stack(cost_values).tolist(),
            "support": np.stack(supports),
        },
    )


__all__ = ["guarded_policy", "ogsrl"]
