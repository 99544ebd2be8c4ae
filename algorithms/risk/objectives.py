"""Risk-sensitive objectives for :func:`theorylab.run` (the ``objective`` hook of an agent class).

Each implements the protocol of :mod:`theorylab.objectives`: ``optimal_value(mdp)``,
``policy_values(mdp, policies) -> (B,)`` (exact, batched over seeds) and
``rollout(mdp, policies, rngs)``, so that regret is computed exactly every episode:

* :class:`StaticCVaR` (Wang, Kallus, Sun 2023): ``regret_k = CVaR*_tau - CVaR_tau(Z^{pi_k})``,
  with CVaR* from :func:`.static_cvar_planning` and CVaR_tau(Z^{pi_k}) from the exact return
  distribution (:func:`.return_distribution`). Policies are :class:`.AugmentedPolicy` (rolled out
  with their budget) or plain Markov arrays.
* :class:`IteratedCVaR` (Du, Wang, Huang 2023): ``regret_k = V*_1(mu0) - V^{pi_k}_1(mu0)`` under the
  nested recursion (:mod:`.iterated_cvar`); ``alpha = 0`` is the worst path (:class:`WorstPath`).

Objectives that depend on an algorithm parameter (tau, alpha) are built from the registration's
parameters, never read from the agent (:func:`theorylab.algorithms.objectives.objective_of`):
the registrations of ``cvar-ucbvi``, ``icvar-rm`` and ``maxwp`` pass :func:`static_cvar_of`,
:func:`iterated_cvar_of` and :func:`worst_path_of`.
"""

from __future__ import annotations

import numpy as np

from theorylab.algorithms.risk.augmented_policy import AugmentedPolicy, budget_rollout
from theorylab.algorithms.risk.iterated_cvar import (
    _check_alpha,
    iterated_cvar_planning,
    iterated_cvar_values,
)
from theorylab.algorithms.risk.return_distribution import return_distribution
from theorylab.algorithms.risk.static_cvar_planning import static_cvar_planning
from theorylab.risk_measures import _check_tau


class StaticCVaR:
    """Static CVaR_tau of the episode return (lower tail), exact on the reward lattice."""

    def __init__(self, tau: float) -> None:
        self.tau = _check_tau(tau)
        self.name = f"static CVaR (tau={self.tau:g})"

    def optimal_value(self, mdp) -> float:
        return static_cvar_planning(mdp, self.tau).value

    def policy_values(self, mdp, policies) -> np.ndarray:
        if isinstance(policies, AugmentedPolicy):
            dist = return_distribution(mdp, policies.as_batch())
        else:
            dist = return_distribution(mdp, policies, batched=True)
        return np.atleast_1d(dist.cvar(self.tau))

    def rollout(self, mdp, policies, rngs):
        if isinstance(policies, AugmentedPolicy):
            return budget_rollout(mdp, policies.as_batch(), rngs)
        return mdp.rollout(policies, rng=rngs)


class IteratedCVaR:
    """Iterated CVaR^alpha (Du et al. Eq. (i)); alpha = 0 is the worst path (Eq. (2))."""

    def __init__(self, alpha: float) -> None:
        self.alpha = _check_alpha(alpha)
        self.name = (
            f"iterated CVaR (alpha={self.alpha:g})" if self.alpha > 0 else "worst path (alpha -> 0)"
        )

    def optimal_value(self, mdp) -> float:
        return iterated_cvar_planning(mdp, self.alpha).value

    def policy_values(self, mdp, policies) -> np.ndarray:
        return iterated_cvar_values(mdp, np.asarray(policies), self.alpha)

    def rollout(self, mdp, policies, rngs):
        return mdp.rollout(policies, rng=rngs)


class WorstPath(IteratedCVaR):
    """The worst-path objective (Du et al. section 6): max_pi min over paths of the return."""

    def __init__(self) -> None:
        super().__init__(0.0)


def static_cvar_of(params: dict) -> StaticCVaR:
    """The yardstick of a static-CVaR algorithm: CVaR at its ``tau`` parameter."""
    return StaticCVaR(params["tau"])


def iterated_cvar_of(params: dict) -> IteratedCVaR:
    """The yardstick of an iterated-CVaR algorithm: iterated CVaR at its ``alpha`` parameter."""
    return IteratedCVaR(params["alpha"])


def worst_path_of(params: dict) -> WorstPath:
    """The yardstick of a worst-path algorithm (no parameter)."""
    return WorstPath()
