"""Exact advantages and discounted state visitation of a stationary policy (discounted MDP).

The pieces of the policy-improvement identities (Kakade & Langford 2002; Schulman et al. 2015,
eq. (1)-(3)): ``A_pi(s, a) = Q_pi(s, a) - V_pi(s)`` and the unnormalised discounted visitation
``rho_pi(s) = sum_t gamma^t Pr(s_t = s)`` from mu0, with which

    eta(pi~) = eta(pi) + sum_s rho_pi~(s) sum_a pi~(a|s) A_pi(s, a)     (performance difference),
    L_pi(pi~) = eta(pi) + sum_s rho_pi(s) sum_a pi~(a|s) A_pi(s, a)      (the local surrogate).

All by linear solves (:func:`~theorylab.algorithms.planning.evaluation.evaluate_discounted`,
:func:`~theorylab.algorithms.planning.lp.occupancy_measure`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.algorithms.planning.evaluation import evaluate_discounted
from theorylab.algorithms.planning.lp import occupancy_measure


@dataclass(frozen=True)
class PolicyAdvantage:
    """eta = V_pi(mu0); V (S,); A (S, A); rho (S,) unnormalised discounted visitation
    (sums to 1 / (1 - gamma))."""

    eta: float
    V: np.ndarray
    A: np.ndarray
    rho: np.ndarray


def policy_advantage(mdp, policy: np.ndarray) -> PolicyAdvantage:
    """The exact quantities of a stationary stochastic policy (S, A) on a discounted model."""
    g = mdp.gamma
    V = evaluate_discounted(mdp, policy)
    Q = mdp.reward(0) + g * mdp.expected_next(V)
    rho = occupancy_measure(mdp, policy, gamma=g).sum(axis=1) / (1.0 - g)
    return PolicyAdvantage(float(V @ mdp.mu0), V, Q - V[:, None], rho)


def surrogate(adv: PolicyAdvantage, policy: np.ndarray) -> float:
    """L_pi(pi~) of the module docstring for pi~ = ``policy`` (S, A)."""
    return adv.eta + float((adv.rho[:, None] * policy * adv.A).sum())
