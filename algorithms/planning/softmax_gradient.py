"""The exact policy gradient of a tabular softmax policy on a discounted MDP.

For ``pi_theta(a|s) = exp(theta[s, a]) / sum_b exp(theta[s, b])`` and a start distribution mu,
the policy-gradient theorem in the softmax parametrisation (Agarwal, Kakade, Lee & Mahajan 2021,
Lemma 4.1 [V]; Mei et al. 2020, Lemma 1) reads

    dV^pi(mu) / dtheta[s, a] = rho^pi_mu(s) pi(a|s) A^pi(s, a),

with ``rho^pi_mu(s) = sum_t gamma^t Pr(s_t = s | s_0 ~ mu)`` the unnormalised discounted visitation
(``d^pi_mu / (1 - gamma)``). Both come from ``M = I - gamma P_pi``:
``M V = r_pi`` and ``M^T rho = mu``, two dense solves (dense models: a policy-gradient run takes
thousands of steps on small chains). The tests check them against the library's own evaluation
(:func:`~theorylab.algorithms.planning.evaluation.evaluate_discounted`,
:func:`~theorylab.algorithms.planning.lp.occupancy_measure`) and the gradient against finite
differences.
"""

from __future__ import annotations

import numpy as np


def softmax_policy(theta: np.ndarray) -> np.ndarray:
    """pi (..., S, A) from logits theta (..., S, A), row by row (the last axis is the action)."""
    z = np.exp(theta - theta.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def softmax_gradient(mdp, theta: np.ndarray, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(grad (S, A), V (S,)): the exact gradient of V^{pi_theta}(mu) in theta, and V^{pi_theta}.

    mdp: a dense, stationary discounted TabularMDP; theta (S, A); mu (S,) a distribution.
    """
    if mdp.sparse or mdp.gamma is None:
        raise ValueError(f"softmax_gradient needs a dense discounted model, got {mdp.name!r}")
    S, A = mdp.S, mdp.A
    g = mdp.gamma
    pi = softmax_policy(theta)
    P = mdp.P_flat(0).reshape(S, A, S)  # (S, A, S)
    R = mdp.reward(0)  # (S, A)
    M = np.eye(S) - g * np.einsum("sa,sat->st", pi, P)  # (S, S)
    V = np.linalg.solve(M, (pi * R).sum(axis=1))  # (S,)
    rho = np.linalg.solve(M.T, np.asarray(mu, dtype=np.float64))  # (S,), sums to 1/(1-g)
    adv = R + g * (P @ V) - V[:, None]  # (S, A)
    return rho[:, None] * pi * adv, V


def dense_policy_value(mdp, pi: np.ndarray) -> np.ndarray:
    """V^pi (S,) of pi (S, A) by one dense solve ``(I - gamma P_pi) V = r_pi``."""
    S, A = mdp.S, mdp.A
    M = np.eye(S) - mdp.gamma * np.einsum("sa,sat->st", pi, mdp.P_flat(0).reshape(S, A, S))
    return np.linalg.solve(M, (pi * mdp.reward(0)).sum(axis=1))


def state_visitation(mdp, pi: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """d^pi_mu (S,): the normalised discounted visitation ``(1 - gamma) (I - gamma P_pi^T)^-1 mu``
    of pi (S, A) from mu (S,)."""
    S, A = mdp.S, mdp.A
    P = mdp.P_flat(0).reshape(S, A, S)
    M = np.eye(S) - mdp.gamma * np.einsum("sa,sat->st", pi, P)
    return (1.0 - mdp.gamma) * np.linalg.solve(M.T, np.asarray(mu, dtype=np.float64))
