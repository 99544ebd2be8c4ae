r"""Inverse Preference Learning (IPL), exactly on a tabular discounted MDP: a Q-function fitted to
segment preferences through the inverse soft Bellman operator, with no reward model.

Seed reference: ``seed-catalogue-000.md#21``. Paper: Hejna & Sadigh, "Inverse Preference Learning:
Preference-based RL without a Reward Function", NeurIPS 2023, arXiv:2305.15363. Card:
docs/algorithms/ipl.md.

What was read [V]: the catalogue row and the abstract ("for a fixed policy, the Q-function
encodes all information about the reward function, effectively making them interchangeable"; the
preference likelihood is placed directly on the rewards the Q-function implies). The inverse
soft Bellman form below, the segment design and everything computed are ours [A]/[M]: the
paper's losses (its regulariser on the implied reward, the IQL/XQL value estimators) were not
read and are not reproduced.

Setting: a discounted MDP (P, gamma), a temperature tau, the uniform reference. For Q (S, A) the
soft value is V_Q(s) = tau log sum_a (1/A) exp(Q(s, a) / tau) and the implied reward is the
inverse soft Bellman operator

    r_Q(s, a) = Q(s, a) - gamma sum_s' P(s'|s, a) V_Q(s')                       (T^{-1} Q)

Q -> r_Q is a bijection whose inverse is soft value iteration: Q is the soft-optimal Q-function of
r_Q, so softmax(Q / tau) is the soft-optimal policy of r_Q (an identity, not an approximation).
Segments sigma = (s_0, a_0, ..., s_{L-1}, a_{L-1}) start uniformly and follow the uniform behaviour
policy (weights w(sigma), all of them enumerated); their BTL preferences follow the true reward's
undiscounted segment sums R*(sigma). IPL minimises the population preference loss on the implied
rewards,

    L(Q) = sum_{sigma, sigma'} w w' [ -p* log s(R_Q(sigma) - R_Q(sigma')) ],  p* = s(R* - R*'),

over Q (L-BFGS with the exact gradient through T^{-1}). Its minimum is the entropy of the true
preferences, attained at every Q with r_Q = r* + c on the segments' support: the optimal policy
of IPL's Q is then the soft-optimal policy of r* (a constant shift of r changes no policy).

Registered algorithm ``ipl`` (kind ``policy-optimization``, a discounted tabular problem): the
L-BFGS iterates of IPL's population fit, each scored by the runner's exact metrics against the
soft optimum pi*_tau of :func:`soft_value_iteration` (``target_gap`` = KL(pi_k || pi*_tau)).
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit, logsumexp, softmax

from theorylab.algorithms.planning.soft_value_iteration import soft_value_iteration
from theorylab.algorithms.policy_optimization.path import soft_scored_path
from theorylab.algorithms.registry import register
from theorylab.errors import TheorylabError


class IPLError(TheorylabError, ValueError):
    """Bad input to IPL: the problem, the temperature, the segment length."""


def soft_values(Q: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """V_Q (S,) = tau log mean_a exp(Q / tau) and pi_Q = softmax(Q / tau) (S, A)."""
    A = Q.shape[1]
    return tau * (logsumexp(Q / tau, axis=1) - np.log(A)), softmax(Q / tau, axis=1)


def implied_reward(Q: np.ndarray, P: np.ndarray, gamma: float, tau: float) -> np.ndarray:
    """r_Q = Q - gamma P V_Q, the inverse soft Bellman operator: ``Q (S, A)``, ``P (S, A, S)``."""
    return Q - gamma * P @ soft_values(Q, tau)[0]


def segments(mdp, L: int) -> tuple[np.ndarray, np.ndarray]:
    """Every length-L segment of a uniform start state x the uniform behaviour policy x P with
    positive weight: occurrence counts ``M (N, S A)`` and weights ``w (N,)`` (summing to 1). The
    uniform start makes every (s, a) appear, so the implied reward is identified everywhere."""
    S, A, P = mdp.S, mdp.A, np.asarray(mdp.P)
    rows, ws = [], []
    for path in itertools.product(range(S * A), repeat=L):
        sa = [divmod(k, A) for k in path]
        w = 1.0 / (S * A)
        for (s, a), (s2, _) in itertools.pairwise(sa):
            w *= P[s, a, s2] / A
        if w > 0:
            m = np.zeros(S * A)
            np.add.at(m, list(path), 1.0)
            rows.append(m)
            ws.append(w)
    return np.array(rows), np.array(ws)


def preference_loss(R: np.ndarray, R_star: np.ndarray, w: np.ndarray):
    """sum_{i, j} w_i w_j [-p*_ij log s(R_i - R_j)] and its gradient in ``R (N,)``."""
    D = R[:, None] - R[None, :]
    p = expit(R_star[:, None] - R_star[None, :])
    W = w[:, None] * w[None, :]
    val = float(-(W * p * log_expit(D)).sum())
    G = W * (expit(D) - p)  # the pair {i, j}'s derivative in D_ij (G is antisymmetric)
    return val, G.sum(1)


def _check(mdp, tau: float, L: int) -> None:
    if getattr(mdp, "gamma", None) is None or not 0 <= mdp.gamma < 1:
        raise IPLError(f"ipl needs a discounted MDP (gamma in [0, 1)), got {mdp!r}")
    if not (isinstance(tau, (int, float)) and tau > 0):
        raise IPLError(f"ipl: tau (the soft temperature) must be > 0, got {tau!r}")
    if isinstance(L, bool) or int(L) != L or not 1 <= L <= 3:
        raise IPLError(
            f"ipl: segment_length must be 1, 2 or 3 (segments are enumerated), got {L!r}"
        )


def bellman_discount(mdp) -> float:
    """The gamma of the inverse operator (the control ``ipl-bellman-term-dropped`` sets 0:
    r_Q = Q, the myopic reading of Q as a reward)."""
    return float(mdp.gamma)


def fit_ipl(mdp, tau: float, L: int = 2, max_iter: int = 2000):
    """IPL's population fit: ``(Q (S, A), iterates list of (S, A) Q's, loss at Q, the minimum
    of the loss (the true preferences' entropy))``."""
    _check(mdp, tau, L)
    S, A, g = mdp.S, mdp.A, bellman_discount(mdp)
    P = np.asarray(mdp.P, dtype=np.float64)
    M, w = segments(mdp, int(L))
    R_star = M @ np.asarray(mdp.reward(0), dtype=np.float64).reshape(-1)
    floor = preference_loss(R_star, R_star, w)[0]

    def fun(q):
        Q = q.reshape(S, A)
        r = implied_reward(Q, P, g, tau)
        val, gR = preference_loss(M @ r.reshape(-1), R_star, w)
        gr = (M.T @ gR).reshape(S, A)  # dL / dr_Q
        _, pi = soft_values(Q, tau)
        # r_Q(s, a) = Q(s, a) - gamma sum_s' P(s'|s, a) V(s'); dV(s') / dQ(s', a') = pi(a'|s')
        back = np.einsum("sa,sat->t", gr, P)  # (S,): sum_{s,a} gr(s, a) P(s'|s, a)
        return val, (gr - g * pi * back[:, None]).reshape(-1)

    iterates = [np.zeros((S, A))]
    res = minimize(
        fun,
        np.zeros(S * A),
        jac=True,
        method="L-BFGS-B",
        callback=lambda q: iterates.append(q.reshape(S, A).copy()),
        options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": int(max_iter)},
    )
    return res.x.reshape(S, A), iterates, float(res.fun), floor


@register("ipl", kind="policy-optimization", problem="tabular-discounted", papers=("000#21",))
def ipl(problem, iterations, tau: float = 0.5, segment_length: int = 2):
    """IPL (Hejna & Sadigh 2023) on population segment preferences: the L-BFGS iterates of the
    Q-fit, each played as softmax(Q_k / tau), against the soft optimum of the true reward."""
    Q, its, _, _ = fit_ipl(problem, tau, segment_length, max_iter=int(iterations))
    its = (its + [Q] * (int(iterations) + 1))[: int(iterations) + 1]  # converged: hold the fit
    pis = np.stack([soft_values(q, tau)[1] for q in its])
    star = soft_value_iteration(problem, tau)
    return soft_scored_path(problem, pis, star, tau, {"tau": float(tau), "L": segment_length})
