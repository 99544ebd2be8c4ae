r"""The reward -> policy map: the argmax policy's cliff and the entropy-regularised optimum.

Seed row ``seed-catalogue-002-004.md#F4``: X. Xu, "The Policy Cliff: A Theoretical Analysis of
Reward-Policy Maps in Large Language Models", arXiv:2507.20150 (2025). An analysis paper; the
library implements the objects it analyses on a discounted tabular MDP and the claim
``policy-cliff-entropy-stability`` checks its statements.

What was read [V] (the abstract, through the stored arXiv page): policy brittleness "often stems
from non-unique optimal actions"; entropy regularisation "restores policy stability at the cost
of increased stochasticity". Not read: the theorems' statements, numbers and constants (the
stored text is the abstract only). Reconstructed [A], and written out in the claim:

* the cliff: with two tied optimal actions at a state, the argmax (greedy) optimal policy moves
  by ||Delta pi(s)||_1 = 2 under a reward perturbation of any size delta > 0 -- no Lipschitz
  constant exists;
* the stable map: pi*_tau = the soft-optimal policy (softmax(Q*_tau / tau) for the uniform
  reference; :mod:`theorylab.algorithms.planning.soft_value_iteration`). Since the soft Bellman
  operator is a gamma-contraction and r enters it additively, ||Q*_tau(r) - Q*_tau(r')||_inf <=
  ||r - r'||_inf / (1 - gamma); and the softmax's Jacobian (diag p - p p^T) / tau maps a
  change dQ to ||dp||_1 = sum_a p_a |dQ_a - p.dQ| / tau <= range(dQ) / (2 tau). Hence

      max_s ||pi*_tau(r)(s) - pi*_tau(r')(s)||_1 <= ||r - r'||_inf / (tau (1 - gamma)),

  a Lipschitz constant proportional to 1/tau (the row's "constant ~ 1/tau"). At a tie of two
  actions with identical transitions, a perturbation +delta on one, -delta on the other moves
  their Q-difference by exactly 2 delta and the policy by delta / tau at small tau: the constant
  1/tau is attained there, the 1/(1 - gamma) factor is not (it needs Q to move unevenly).
* the trade-off: the entropy of pi*_tau increases with tau (from the entropy of the uniform
  policy over the tied actions at tau -> 0 to log A at tau -> infinity).

Algorithm (``soft-vi``): soft value iteration from V = 0, the iterate policies
pi_k = softmax(Q_k / tau) scored exactly (J, J_tau, entropy, KL(pi_k || pi*_tau)); it is the
shared solver of the planning floor run as an iteration.
"""

from __future__ import annotations

import numpy as np

from theorylab.algorithms.planning.greedy import greedy_actions
from theorylab.algorithms.planning.soft_value_iteration import (  # noqa: F401 (policy_entropy:
    policy_entropy,  # read as pc.policy_entropy by the policy-cliff claim)
    soft_backup,
    soft_policy,
    soft_value_iteration,
)
from theorylab.algorithms.planning.value_iteration import value_iteration
from theorylab.algorithms.policy_optimization.path import PolicyPath, soft_scored_path
from theorylab.algorithms.registry import register

PAPERS = ("002-004#F4",)


def soft_optimum_of_reward(mdp, reward: np.ndarray, tau: float) -> np.ndarray:
    """pi*_tau (S, A) of ``mdp`` with its mean rewards replaced by ``reward`` (S, A), uniform
    reference, solved to 1e-13."""
    return soft_value_iteration(mdp._replace(R=reward), tau, tol=1e-13).policy


def greedy_optimum_of_reward(mdp, reward: np.ndarray) -> np.ndarray:
    """The argmax optimal policy (S, A) (one-hot; ties to the lowest action index) of ``mdp``
    with its mean rewards replaced by ``reward``."""
    sol = value_iteration(mdp._replace(R=reward), tol=1e-13)
    Q = np.asarray(sol.Q)
    Q = Q[0] if Q.ndim == 3 else Q
    a = greedy_actions(Q)
    return np.eye(mdp.A)[a]


def soft_value_iterates(mdp, iterations: int, *, tau: float) -> PolicyPath:
    """K soft value-iteration steps from V = 0; pi_k = the soft policy of Q_k."""
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)):
        raise ValueError(f"soft-vi: iterations must be a positive integer, got {iterations!r}")
    if iterations < 1:
        raise ValueError(f"soft-vi: iterations must be a positive integer, got {iterations!r}")
    if not (isinstance(tau, (int, float)) and np.isfinite(tau) and tau > 0):
        raise ValueError(f"soft-vi: tau must be a finite number > 0, got {tau!r}")
    if getattr(mdp, "gamma", None) is None or getattr(mdp, "horizon", None) is not None:
        raise ValueError(
            f"soft-vi is stated for discounted MDPs; give one with gamma and no horizon (e.g. "
            f"random:S=5,A=3,gamma=0.9), got {getattr(mdp, 'name', mdp)!r}"
        )
    g = mdp.gamma
    log_ref = np.full((mdp.S, mdp.A), -np.log(mdp.A))
    star = soft_value_iteration(mdp, tau)
    V = np.zeros(mdp.S)
    policies = [np.full((mdp.S, mdp.A), 1.0 / mdp.A)]
    for _ in range(int(iterations)):
        Q, V = soft_backup(mdp, V, tau, log_ref, g)
        policies.append(soft_policy(Q, V, tau, log_ref))
    pis = np.stack(policies)  # (K+1, S, A)
    config = {"tau": float(tau), "gamma": float(g), "reference": "uniform"}
    return soft_scored_path(mdp, pis, star, tau, config)


@register("soft-vi", kind="policy-optimization", problem="tabular-discounted", papers=PAPERS)
def soft_vi(problem, iterations, tau: float = 0.1):
    """Soft value iteration; iterates softmax(Q_k / tau) -> pi*_tau (entropy-regularised)."""
    return soft_value_iterates(problem, iterations, tau=tau)
