r"""Soft (KL- or entropy-regularised) value iteration on a discounted tabular MDP.

The regularised objective of a stationary policy pi with a reference policy ref (S, A) and a
temperature tau > 0 is

    J_tau(pi) = E_pi sum_t gamma^t [ r(s_t, a_t) - tau KL(pi(.|s_t) || ref(.|s_t)) ],

(ref uniform: entropy regularisation up to the constant tau log A / (1 - gamma)). Its optimum
solves the soft Bellman equations (Neu, Jonsson & Gomez 2017, eq. (6)-(7) [M]; Geist, Scherrer &
Pietquin 2019, section 3 [M]):

    Q(s, a) = r(s, a) + gamma sum_s' P(s'|s, a) V(s'),
    V(s) = tau log sum_a ref(a|s) exp(Q(s, a) / tau),
    pi*_tau(a|s) = ref(a|s) exp((Q(s, a) - V(s)) / tau)    (softmax(Q / tau) for a uniform ref).

The map V -> tau log sum ref e^{(r + gamma P V)/tau} is a gamma-contraction in the sup norm, so
the iteration converges geometrically from any start; it stops when the sup-norm step is below
``tol (1 - gamma) / gamma`` (then ||V - V*|| <= tol). The independent answer is the occupancy
convex programme of :func:`theorylab.algorithms.dual.behaviour_kl.solve_behaviour_kl` (no
Bellman backup, no log-sum-exp); tests/test_policy_optimization.py checks the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from theorylab.algorithms.planning.evaluation import evaluate_discounted


@dataclass(frozen=True)
class SoftSolution:
    """Q (S, A), V (S,), policy (S, A) pi*_tau, iterations used; tau and gamma."""

    Q: np.ndarray
    V: np.ndarray
    policy: np.ndarray
    iterations: int
    tau: float
    gamma: float


def _reference(mdp, reference) -> np.ndarray:
    if reference is None:
        return np.full((mdp.S, mdp.A), 1.0 / mdp.A)
    ref = np.asarray(reference, dtype=np.float64)
    if ref.shape != (mdp.S, mdp.A) or np.any(ref < 0):
        raise ValueError(f"reference must be a policy of shape {(mdp.S, mdp.A)}")
    bad = np.flatnonzero(np.abs(ref.sum(axis=1) - 1.0) > 1e-9)
    if bad.size:
        raise ValueError(f"reference row s={int(bad[0])} sums to {ref[bad[0]].sum():.12g}")
    return ref


def soft_backup(mdp, V: np.ndarray, tau: float, log_ref: np.ndarray, gamma: float, reward=None):
    """One soft Bellman backup: (Q (S, A), V' (S,)) from V (S,) (``reward`` (S, A) replaces
    the model's mean rewards)."""
    Q = (mdp.reward(0) if reward is None else reward) + gamma * mdp.expected_next(V)
    return Q, tau * logsumexp(Q / tau + log_ref, axis=1)


def soft_policy(Q: np.ndarray, V: np.ndarray, tau: float, log_ref: np.ndarray) -> np.ndarray:
    """pi(a|s) = ref(a|s) exp((Q(s, a) - V(s)) / tau), renormalised (S, A)."""
    logits = log_ref + Q / tau
    return np.exp(logits - logsumexp(logits, axis=1, keepdims=True))


def soft_value_iteration(
    mdp,
    tau: float,
    *,
    reference: np.ndarray | None = None,
    gamma: float | None = None,
    tol: float = 1e-12,
    max_iter: int = 1_000_000,
    reward: np.ndarray | None = None,
) -> SoftSolution:
    """The regularised optimum of the module docstring (reference None: uniform; ``reward``
    (S, A), of any range, replaces the model's mean rewards)."""
    if not (np.isfinite(tau) and tau > 0):
        raise ValueError(f"tau must be a finite number > 0, got {tau!r}")
    g = mdp.gamma if gamma is None else gamma
    if g is None or not 0 <= g < 1:
        raise ValueError(f"soft value iteration needs a discount gamma in [0, 1), got {g!r}")
    log_ref = np.log(_reference(mdp, reference))
    V = np.zeros(mdp.S)
    stop = tol * (1 - g) / max(g, 1e-300)
    for it in range(1, max_iter + 1):
        Q, V_new = soft_backup(mdp, V, tau, log_ref, g, reward)
        step = float(np.max(np.abs(V_new - V)))
        V = V_new
        if step <= stop:
            break
    Q, V = soft_backup(mdp, V, tau, log_ref, g, reward)
    return SoftSolution(Q, V, soft_policy(Q, V, tau, log_ref), it, float(tau), float(g))


def regularised_value(
    mdp, policy: np.ndarray, tau: float, *, reference=None, gamma: float | None = None
) -> np.ndarray:
    """J_tau of a stationary policy (S, A), exactly: V (S,) of the reward r - tau log(pi/ref)."""
    ref = _reference(mdp, reference)
    pi = np.asarray(policy, dtype=np.float64)
    with np.errstate(divide="ignore"):
        log_ratio = np.where(pi > 0, np.log(np.where(pi > 0, pi, 1.0)) - np.log(ref), 0.0)
    return evaluate_discounted(mdp, pi, gamma=gamma, reward=mdp.reward(0) - tau * log_ratio)


def policy_entropy(policy: np.ndarray) -> np.ndarray:
    """Per-state entropy (S,) of a stationary policy (S, A), nats."""
    p = np.asarray(policy, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(p > 0, p * np.log(p), 0.0).sum(axis=-1)


def regularised_q(
    mdp, policy: np.ndarray, tau: float, *, reference=None, gamma: float | None = None
) -> np.ndarray:
    """Q^pi_tau (S, A) = r + gamma P V^pi_tau, exactly (V^pi_tau by :func:`regularised_value`):
    the regularised Q-function that policy mirror descent steps on."""
    g = mdp.gamma if gamma is None else gamma
    V = regularised_value(mdp, policy, tau, reference=reference, gamma=g)
    return mdp.reward(0) + g * mdp.expected_next(V)


def soft_backward_induction(mdp, lam: float, reference: np.ndarray, *, bonus=None, model=None):
    """KL-regularised ("soft") backward induction toward ``reference`` on a finite-horizon MDP:

        V_H = 0,  Q_h = r_h + b_h + P_h V_{h+1},
        V_h(s) = lam log sum_a ref_h(a|s) e^{Q_h(s, a) / lam},
        pi_h(a|s) = ref_h(a|s) e^{(Q_h(s, a) - V_h(s)) / lam},

    the optimum of E sum_h [r_h - lam KL(pi_h(s_h) || ref_h(s_h))] (the discounted form is
    :func:`soft_value_iteration`). reference (H, S, A) or (S, A); ``bonus`` (H, S, A) adds b_h
    and then clips V_h to at most H - h (an optimistic planner); ``model`` (H, S, A, S) replaces
    the transitions (an estimated model). Returns (V (H+1, S), Q (H, S, A), policy (H, S, A)).
    """
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be a finite number > 0, got {lam!r}")
    H, S, A = mdp.horizon, mdp.S, mdp.A
    ref = np.broadcast_to(np.asarray(reference, dtype=np.float64), (H, S, A))
    with np.errstate(divide="ignore"):
        log_ref = np.log(ref)
    V = np.zeros((H + 1, S))
    Q = np.empty((H, S, A))
    pi = np.empty((H, S, A))
    for h in range(H - 1, -1, -1):
        nxt = mdp.expected_next(V[h + 1], h) if model is None else model[h] @ V[h + 1]
        Q[h] = mdp.reward(h) + nxt + (0.0 if bonus is None else bonus[h])
        logits = Q[h] / lam + log_ref[h]
        V[h] = lam * logsumexp(logits, axis=1)
        if bonus is not None:
            V[h] = np.minimum(V[h], H - h)
        pi[h] = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
    return V, Q, pi
