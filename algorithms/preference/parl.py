r"""PARL: policy alignment as a bilevel problem; the exact hypergradient through the lower level.

Seed references: ``seed-catalogue-000.md#70`` and ``seed-catalogue-002-004.md#E13`` (the same
paper). Paper: Souradip Chakraborty, Amrit Singh Bedi, Alec Koppel, Dinesh Manocha, Huazheng Wang,
Mengdi Wang, Furong Huang, "PARL: A Unified Framework for Policy Alignment in Reinforcement
Learning from Human Feedback", ICLR 2024 (arXiv:2308.02585).

What was read [V] (the catalogue rows' quotations of the abstract): the framework works "by
explicitly parameterizing the distribution of the upper alignment objective (reward design) by the
lower optimal variable (optimal policy for the designed reward)", giving "a new class of stochastic
bilevel problems where the stochasticity at the upper objective depends upon the lower-level
variable"; the algorithm A-PARL has "sample complexity bounds of order O(1/T)". The paper's
equations, its hypergradient estimator and constants were not read (a time-boxed search found the
abstract and title page on public copies of arXiv:2308.02585; the body was not read in the time
box); everything below is reconstructed [A] / standard [M].

The bilevel problem (this module's exact form [A]), on a discounted tabular MDP with true reward
r* (the model's mean rewards), reward parameters theta (d,) and reward model r_theta = phi theta
(features phi (S, A, d); tabular: one-hot, d = S A):

    lower:  pi_theta = the KL-regularised optimum of r_theta at temperature tau (uniform
            reference): Q = r_theta + gamma P V, V = tau log mean_a e^{Q/tau},
            pi_theta = softmax(Q / tau)  (soft policy iteration; soft_value_iteration agrees);
    upper:  F(theta) = sum_{s, a != a'} w_theta(s, a, a') l_theta(s, a, a')
                       - (kappa / 2) ||theta||^2,
            w_theta(s, a, a') = d_theta(s) pi_theta(a|s) pi_theta(a'|s),
            l_theta(s, a, a') = p*(s,a,a') log sig(r_theta(s,a) - r_theta(s,a'))
                                + (1 - p*) log sig(r_theta(s,a') - r_theta(s,a)),
            p*(s, a, a') = sig(beta (r*(s,a) - r*(s,a'))),

the expected log-likelihood of BTL comparisons of two responses the lower level's own policy gives
at the states it visits (d_theta the normalised discounted state occupancy of pi_theta from mu0):
the data distribution w_theta depends on theta through the lower level, which is PARL's point.

Hypergradient [M] (implicit differentiation of the soft Bellman fixed point):

    dQ/dtheta = (I - gamma P Pi_theta)^{-1} Phi   (SA, d); Pi (S, SA) holds pi's rows,
    dlog pi(a|s)/dtheta = (dQ(s,a) - sum_b pi(b|s) dQ(s,b)) / tau,
    d_theta' = (1 - gamma) mu0' M,  M = (I - gamma P_pi)^{-1},
    dd'/dtheta_k = gamma d' (dP_pi/dtheta_k) M,
    grad F = sum w grad l - kappa theta   (the myopic term: the data held fixed)
           + sum l grad w                 (the decision-dependent term: pi_theta and d_theta).

``parl`` (kind ``policy-optimization``) runs gradient ascent theta_{t+1} = theta_t + alpha grad F
from theta_0 = 0 and records F, ||grad F|| and the lower level's true value J*(pi_theta) for every
iterate. With alpha <= 1/L (L the smoothness of F) the ascent lemma gives
F(theta_{t+1}) >= F(theta_t) + (alpha / 2) ||grad F(theta_t)||^2, so
min_{t < T} ||grad F(theta_t)||^2 <= 2 (F(theta_T) - F(theta_0)) / (alpha T): the O(1/T)
stationarity rate the paper states, here with exact gradients (no sampling error term).

``myopic=True`` drops the decision-dependent term (the trajectory distribution treated as fixed):
the "naive" gradient the catalogue's control names. Claim: ``parl-hypergradient-exact`` in
``validations/claims/preference.py``; card docs/algorithms/parl.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, log_expit, logsumexp, softmax

from theorylab.algorithms.planning.evaluation import evaluate_discounted
from theorylab.algorithms.planning.soft_value_iteration import (
    policy_entropy,
    soft_value_iteration,
)
from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
)
from theorylab.algorithms.registry import register

PAPERS = ("000#70", "002-004#E13")


@dataclass(frozen=True)
class BilevelProblem:
    """The exact bilevel problem of the module docstring on one discounted model.

    phi (S, A, d) reward features; p_star (S, A, A) true preference probabilities; tau the lower
    level's temperature; kappa the upper level's ridge."""

    mdp: object
    phi: np.ndarray
    p_star: np.ndarray
    tau: float
    kappa: float

    @property
    def pairs(self) -> np.ndarray:
        """(A, A) mask of the distinct pairs a != a'."""
        return 1.0 - np.eye(self.mdp.A)


def bilevel_problem(mdp, *, features="tabular", beta: float = 4.0, tau=0.5, kappa=0.01, seed=0):
    """The problem on ``mdp``: tabular one-hot features or ``features`` i.i.d. N(0, 1) ones."""
    S, A = mdp.S, mdp.A
    if isinstance(features, str) and features == "tabular":
        phi = np.eye(S * A).reshape(S, A, S * A)
    elif (
        isinstance(features, (int, np.integer)) and not isinstance(features, bool) and features > 0
    ):
        phi = np.random.default_rng(seed).standard_normal((S, A, int(features)))
    else:
        raise ValueError(f"parl: features must be 'tabular' or a positive int, got {features!r}")
    r = mdp.reward(0)
    p_star = expit(beta * (r[:, :, None] - r[:, None, :]))  # (S, A, A)
    return BilevelProblem(mdp, phi, p_star, float(tau), float(kappa))


def lower_level(prob: BilevelProblem, theta: np.ndarray, *, tol: float = 1e-13) -> np.ndarray:
    """The soft-optimal policy pi_theta (S, A) of r_theta, by soft policy iteration (evaluate the
    regularised value by a linear solve, then pi <- softmax(Q / tau)) until the soft Bellman
    residual is below ``tol``; :func:`lower_level_by_value_iteration` is the second answer."""
    mdp, tau = prob.mdp, prob.tau
    r = prob.phi @ theta  # (S, A)
    pi = np.full((mdp.S, mdp.A), 1.0 / mdp.A)
    for _ in range(200):
        V = evaluate_discounted(mdp, pi, reward=r - tau * np.log(pi * mdp.A))
        Q = r + mdp.gamma * mdp.expected_next(V)
        V_soft = tau * (logsumexp(Q / tau, axis=1) - np.log(mdp.A))
        pi = softmax(Q / tau, axis=1)
        if np.max(np.abs(V_soft - V)) <= tol:
            return pi
    raise RuntimeError(f"parl: soft policy iteration did not reach residual {tol:g}")


def lower_level_by_value_iteration(prob: BilevelProblem, theta: np.ndarray) -> np.ndarray:
    """pi_theta by soft value iteration (the planning floor's solver), to 1e-12."""
    return soft_value_iteration(prob.mdp, prob.tau, reward=prob.phi @ theta).policy


def state_occupancy(mdp, pi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """d (S,) = (1 - gamma) mu0' (I - gamma P_pi)^-1 and M = (I - gamma P_pi)^-1 (S, S)."""
    P = np.asarray(mdp.dense_P())  # (S, A, S)
    P_pi = np.einsum("sa,sat->st", pi, P)
    M = np.linalg.inv(np.eye(mdp.S) - mdp.gamma * P_pi)
    return (1.0 - mdp.gamma) * mdp.mu0 @ M, M


def pair_loglik(prob: BilevelProblem, theta: np.ndarray) -> np.ndarray:
    """l_theta(s, a, a') (S, A, A)."""
    r = prob.phi @ theta
    delta = r[:, :, None] - r[:, None, :]
    return prob.p_star * log_expit(delta) + (1.0 - prob.p_star) * log_expit(-delta)


def upper_objective(prob: BilevelProblem, theta: np.ndarray) -> float:
    """F(theta), exactly: the lower level solved, its occupancy by a linear solve."""
    pi = lower_level(prob, theta)
    d, _ = state_occupancy(prob.mdp, pi)
    w = d[:, None, None] * pi[:, :, None] * pi[:, None, :] * prob.pairs
    return float((w * pair_loglik(prob, theta)).sum() - 0.5 * prob.kappa * theta @ theta)


def decision_term(prob: BilevelProblem, theta: np.ndarray, pi: np.ndarray, ell: np.ndarray):
    """sum_{s,a,a'} l(s, a, a') grad w_theta(s, a, a') (d,): the upper objective's dependence on
    theta through the lower level's policy and its occupancy (implicit differentiation)."""
    mdp, phi, tau, g = prob.mdp, prob.phi, prob.tau, prob.mdp.gamma
    S, A, dim = phi.shape
    P = np.asarray(mdp.dense_P())  # (S, A, S)
    d, M = state_occupancy(mdp, pi)
    Pi = np.zeros((S, S * A))  # V's derivative in Q: Pi[s, (s, a)] = pi(a|s)
    Pi[np.repeat(np.arange(S), A), np.arange(S * A)] = pi.ravel()
    dQ = np.linalg.solve(np.eye(S * A) - g * P.reshape(S * A, S) @ Pi, phi.reshape(S * A, dim))
    dQ = dQ.reshape(S, A, dim)
    dlogpi = (dQ - np.einsum("sb,sbk->sk", pi, dQ)[:, None, :]) / tau  # (S, A, d)
    dpi = pi[:, :, None] * dlogpi
    dP_pi = np.einsum("sak,sat->stk", dpi, P)  # (S, S, d)
    dd = g * np.einsum("s,stk,tu->uk", d, dP_pi, M)  # (S, d)
    dw = (
        dd[:, None, None, :] * (pi[:, :, None] * pi[:, None, :])[..., None]
        + d[:, None, None, None] * dpi[:, :, None, :] * pi[:, None, :, None]
        + d[:, None, None, None] * pi[:, :, None, None] * dpi[:, None, :, :]
    ) * prob.pairs[None, :, :, None]  # (S, A, A, d)
    return np.einsum("sab,sabk->k", ell, dw)


def gradient_parts(prob: BilevelProblem, theta: np.ndarray):
    """(myopic term (d,), decision-dependent term (d,), F(theta), pi_theta (S, A))."""
    phi = prob.phi
    pi = lower_level(prob, theta)  # (S, A)
    d, _ = state_occupancy(prob.mdp, pi)
    ell = pair_loglik(prob, theta)  # (S, A, A)
    w = d[:, None, None] * pi[:, :, None] * pi[:, None, :] * prob.pairs
    r = phi @ theta
    dl = prob.p_star - expit(r[:, :, None] - r[:, None, :])  # dl / d delta (S, A, A)
    dphi = phi[:, :, None, :] - phi[:, None, :, :]  # (S, A, A, d)
    myopic = np.einsum("sab,sabk->k", w * dl, dphi) - prob.kappa * theta
    F = float((w * ell).sum() - 0.5 * prob.kappa * theta @ theta)
    return myopic, decision_term(prob, theta, pi, ell), F, pi


def hypergradient(prob: BilevelProblem, theta: np.ndarray, *, myopic: bool = False):
    """(grad F(theta) (d,), F(theta)) by implicit differentiation (module docstring);
    ``myopic``: without the decision-dependent term (the data distribution held fixed)."""
    m, dec, F, _ = gradient_parts(prob, theta)
    return (m if myopic else m + dec), F


@register("parl", kind="policy-optimization", problem="tabular-discounted", papers=PAPERS)
def parl_iterates(
    mdp,
    iterations: int,
    *,
    alpha: float = 1.0,
    tau: float = 0.5,
    kappa: float = 0.01,
    beta: float = 4.0,
    features="tabular",
    myopic: bool = False,
    feature_seed: int = 0,
) -> PolicyPath:
    """PARL (Chakraborty et al. 2024): gradient ascent on the bilevel preference objective with
    the exact hypergradient through the soft-optimal lower level (``myopic``: without it)."""
    who = "parl"
    K = check_iterations(who, iterations)
    alpha = check_number(who, "alpha", alpha)
    tau = check_number(who, "tau", tau)
    kappa = check_number(who, "kappa", kappa, positive=False)
    beta = check_number(who, "beta", beta, positive=False)
    if not isinstance(myopic, bool):
        raise ValueError(f"{who}: myopic must be true or false, got {myopic!r}")
    if getattr(mdp, "stage_dependent", False) or getattr(mdp, "reward_stage_dependent", False):
        raise ValueError(f"{who} needs a stationary discounted MDP, got {mdp.name!r}")
    prob = bilevel_problem(
        mdp, features=features, beta=beta, tau=tau, kappa=kappa, seed=feature_seed
    )
    theta = np.zeros(prob.phi.shape[-1])
    thetas, Fs, norms, pis = [], [], [], []
    for k in range(K + 1):
        m, dec, F, pi = gradient_parts(prob, theta)
        grad = m if myopic else m + dec
        thetas.append(theta.copy())
        Fs.append(F)
        norms.append(float(np.linalg.norm(m + dec)))  # the true gradient's norm either way
        pis.append(pi)
        if k < K:
            theta = theta + alpha * grad
    policies = np.stack(pis)  # (K+1, S, A)
    values = np.array([evaluate_discounted(mdp, p) @ mdp.mu0 for p in policies])
    return PolicyPath(
        objective=values,
        regularised=np.array(Fs),
        entropy=policy_entropy(policies).mean(axis=-1),
        target_gap=np.full(K + 1, np.nan),
        target_value=float("nan"),
        policies=policies,
        config={
            "alpha": alpha,
            "tau": tau,
            "kappa": kappa,
            "beta": beta,
            "features": str(features),
            "myopic": myopic,
            "grad_norm": norms,
            "theta": np.stack(thetas).tolist(),
        },
    )
