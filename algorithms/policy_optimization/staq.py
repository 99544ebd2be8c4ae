r"""Finite-memory policy mirror descent (StaQ): the policy from the last M Q-functions only.

Seed row ``seed-catalogue-000.md#33``: A. Shilova, A. Davey, B. Driss, R. Akrour, "StaQ it!
Growing neural networks for Policy Mirror Descent", arXiv:2506.13862 (2025).

What was read [V] (the abstract, through the stored arXiv page and the ICLR 2026 OpenReview
abstract): policy mirror descent (PMD) solves the entropy/KL-regularised problem, but "the
closed-form solution involves the sum of all past Q-functions, which is intractable"; StaQ keeps
"only the last M Q-functions in memory", and "for finite and large enough M, a convergent
algorithm can be derived, introducing no error in the policy update"; empirically performance
improves with M "up to a certain threshold where performance becomes indistinguishable with
exact PMD". Not read: section 4's update, theorem and threshold. Reconstructed [A]:

* entropy-regularised PMD (Cen et al. 2021; Lan 2021 [M]) on a discounted tabular MDP with
  temperature tau (uniform reference) and step eta: with beta = 1 / (1 + eta tau) and
  alpha = eta / (1 + eta tau),

      pi_{k+1}(a|s) ∝ pi_k(a|s)^beta exp(alpha Q_k(s, a)),    Q_k = Q^{pi_k}_tau (exact),

  so from the uniform pi_0, log pi_{k+1} = alpha sum_{i=0}^{k} beta^i Q_{k-i} + const: the
  weighted sum of *all* past Q's;
* finite memory M: log pi_{k+1} = alpha sum_{i=0}^{min(k, M-1)} beta^i Q_{k-i} + const (the
  last M tables, the same weights; exact PMD while k < M);
* what that implies, derived here [A]: a limit pi_bar of the finite-memory iteration satisfies
  pi_bar = softmax((1 - beta^M) Q^{pi_bar}_tau / tau) -- the soft-optimal condition with its
  logits scaled by (1 - beta^M) -- so the limit is biased away from pi*_tau by O(beta^M) in the
  logits, and the bias falls geometrically in M; M >= log(eps) / log(beta) ("above the
  threshold") brings it below eps, while small M leaves it visible. M = infinity is exact PMD,
  which converges linearly to pi*_tau.

Algorithm (``staq``): K iterations from the uniform pi_0; every iterate scored exactly (J,
J_tau, entropy, KL(pi_k || pi*_tau) with pi*_tau by soft value iteration on the planning floor).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from theorylab.algorithms.planning.soft_value_iteration import regularised_q, soft_value_iteration
from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_positive,
    soft_scored_path,
)
from theorylab.algorithms.registry import register

PAPERS = ("000#33",)


def memory_weights(eta: float, tau: float, n: int) -> np.ndarray:
    """alpha beta^i for i = 0..n-1 (n,): the weight of Q_{k-i} in log pi_{k+1}."""
    beta, alpha = 1.0 / (1.0 + eta * tau), eta / (1.0 + eta * tau)
    return alpha * beta ** np.arange(n)


def staq_logits(history: list[np.ndarray], eta: float, tau: float, memory: int | None):
    """log pi_{k+1} (S, A) from Q_0..Q_k (newest last), keeping the last ``memory`` tables
    (None: all of them, exact PMD)."""
    kept = history if memory is None else history[-memory:]
    w = memory_weights(eta, tau, len(kept))  # w[0] for the newest
    logits = np.einsum("i,isa->sa", w, np.stack(kept[::-1]))
    return logits - logsumexp(logits, axis=1, keepdims=True)


def staq_iterates(
    mdp, iterations: int, *, tau: float, eta: float, memory: int | None = None
) -> PolicyPath:
    """K finite-memory PMD iterations (module docstring) from the uniform policy."""
    iterations = check_iterations("staq", iterations)
    check_positive("staq", tau=tau, eta=eta)
    if memory is not None and (
        isinstance(memory, bool) or not isinstance(memory, (int, np.integer)) or memory < 1
    ):
        raise ValueError(
            f"staq: memory must be a positive integer (or None: all past Q's), got {memory!r}"
        )
    if getattr(mdp, "gamma", None) is None or getattr(mdp, "horizon", None) is not None:
        raise ValueError(
            "staq is stated for discounted MDPs; give one with gamma (e.g. "
            f"random:S=5,A=3,gamma=0.9), got {getattr(mdp, 'name', mdp)!r}"
        )
    star = soft_value_iteration(mdp, tau, tol=1e-13)
    pi = np.full((mdp.S, mdp.A), 1.0 / mdp.A)
    history, policies = [], [pi]
    for _ in range(iterations):
        history.append(regularised_q(mdp, pi, tau))
        if memory is not None and len(history) > memory:
            history.pop(0)
        pi = np.exp(staq_logits(history, eta, tau, memory))
        policies.append(pi)
    pis = np.stack(policies)  # (K+1, S, A)
    config = {
        "tau": float(tau),
        "eta": float(eta),
        "memory": None if memory is None else int(memory),
        "beta": 1.0 / (1.0 + eta * tau),
        "gamma": float(mdp.gamma),
    }
    return soft_scored_path(mdp, pis, star, tau, config)


@register("staq", kind="policy-optimization", problem="tabular-discounted", papers=PAPERS)
def staq(problem, iterations, tau: float = 0.1, eta: float = 1.0, memory: int | None = None):
    """Policy mirror descent from the last M Q-functions (memory=None: exact PMD)."""
    return staq_iterates(problem, iterations, tau=tau, eta=eta, memory=memory)
