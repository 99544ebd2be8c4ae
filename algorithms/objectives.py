"""What "regret" measures: the objective an online run is scored by.

An objective tells :func:`theorylab.run` three things about the true MDP:

* ``optimal_value(mdp) -> float``: the optimum of the objective at mu0 (V*_1(mu0) for the
  risk-neutral objective, CVaR*_tau for static CVaR, ...);
* ``policy_values(mdp, policies) -> (B,)``: the exact objective value of every seed's policy;
* ``rollout(mdp, policies, rngs) -> Trajectories``: how those policies act (a budget-augmented
  CVaR policy carries its budget along the trajectory, for instance).

regret_k = optimal_value - policy_values(pi_k), per seed. The yardstick is never taken from the
agent under test (issue 13: a buggy or dishonest agent could otherwise grade itself): an
algorithm's *registration* declares it, ``@register(..., objective=static_cvar_of)``, as a
function of the algorithm's parameters (defaults merged with the user's), and
:func:`objective_of` builds it from those parameters alone, with the objective's own exact planner
(``optimal_value``) and exact evaluation (``policy_values``). Without a declaration the objective
is :data:`RISK_NEUTRAL`.
"""

from __future__ import annotations

import numpy as np


class RiskNeutral:
    """The expected undiscounted return over the horizon: V^pi_1(mu0)."""

    name = "expected return"

    def optimal_value(self, mdp) -> float:
        from theorylab.algorithms.planning import backward_induction

        return backward_induction(mdp).value

    def policy_values(self, mdp, policies: np.ndarray) -> np.ndarray:
        from theorylab.algorithms.planning import evaluate_policies

        # sum_s mu0(s) V(s) as a row sum (numpy's pairwise order, the same for every batch
        # size), not ``V @ mu0`` (BLAS: gemv for one seed and a blocked kernel for several, whose
        # last bits differ): a seed's regret is the same alone or batched, and the whole-run
        # kernel (algorithms/online/whole_run_kernel.py) reproduces it bit for bit
        return (evaluate_policies(mdp, policies, batched=True)[:, 0] * mdp.mu0).sum(axis=-1)

    def rollout(self, mdp, policies: np.ndarray, rngs):
        return mdp.rollout(policies, rng=rngs)


RISK_NEUTRAL = RiskNeutral()


class BackendRiskNeutral:
    """The risk-neutral objective (:data:`RISK_NEUTRAL`) with its exact policy evaluation and its
    rollouts run by a backend. With the numpy backend the numbers are RISK_NEUTRAL's, bit for
    bit; rollouts give the same trajectories on every backend."""

    name = RISK_NEUTRAL.name

    def __init__(self, backend) -> None:
        self.backend = backend

    def optimal_value(self, mdp) -> float:
        return RISK_NEUTRAL.optimal_value(mdp)

    def policy_values(self, mdp, policies: np.ndarray) -> np.ndarray:
        from theorylab.algorithms.planning import evaluate_policies

        V = evaluate_policies(mdp, policies, batched=True, backend=self.backend)
        return (V[:, 0] * mdp.mu0).sum(axis=-1)  # as RiskNeutral.policy_values

    def rollout(self, mdp, policies: np.ndarray, rngs):
        from theorylab.mdps import Trajectories

        return Trajectories(*self.backend.rollout_mdp(mdp, policies, list(rngs)))


def objective_of(entry, params: dict):
    """The objective a run of ``entry`` with user parameters ``params`` is scored by, built from
    the registration alone (module docstring): ``entry.extra["objective"](all_params)`` with the
    algorithm's defaults updated by ``params``, else :data:`RISK_NEUTRAL`."""
    make = entry.extra.get("objective")
    if make is None:
        return RISK_NEUTRAL
    return make({**entry.parameters(), **params})
