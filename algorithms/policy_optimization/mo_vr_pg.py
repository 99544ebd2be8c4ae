r"""Variance-reduced policy gradient for a smooth scalarisation of vector returns (MO-VR-PG).

Seed row ``seed-catalogue-001.md#60``: D. Guidobene, L. Benedetti, D. Arapovic, "Variance
Reduced Policy Gradient Method for Multi-Objective Reinforcement Learning", arXiv:2508.10608
(2025). Read [V]: the abstract only (stored arXiv page): objectives "combined using a non-linear
scalarization function", policy gradient methods, and "variance-reduction techniques to reduce
the sample complexity of policy gradients while maintaining general assumptions". Not read: the
algorithm, its estimator, its rate. Everything below is reconstructed [A] from the abstract and
the catalogue row ("tabular MDP with vector rewards; scalarisation f(J_1..J_m); exact J by
linear solves; estimator variance lower; fewer samples to stationarity than vanilla PG"), with
the standard STORM/PAGE-style importance-weighted recursion of
variance-reduced policy gradient (Xu, Gao & Gu 2020, SRVR-PG [M]; Gargiani et al. 2022 PAGE-PG
[M]).

Setting [A]: a discounted tabular MDP, m reward tables r_i (m, S, A), softmax policy
pi_theta(a|s) ∝ exp theta(s, a), objectives J_i(theta) = mu0^T (I - gamma P_pi)^{-1} r_{i,pi}
(exact, linear solves), scalarisation f(J) = sum_i log J_i (concave, smooth for J > 0).

Exact gradient (policy-gradient theorem, softmax):
    dJ_i/dtheta(s, a) = d_pi(s) pi(a|s) A_i(s, a) / (1 - gamma),
    d_pi = (1 - gamma) mu0^T (I - gamma P_pi)^{-1};
    grad f = sum_i f_i'(J) grad J_i = sum_i grad J_i / J_i.

Sampled estimators [A]. A trajectory runs from s_0 ~ mu0 for T ~ Geometric steps with
P(T > t) = gamma^t (the survival clock ignores the policy), so with undiscounted sums
    J_hat_i = sum_{t<T} r_i(s_t, a_t),
    g_hat_i = sum_{t<T} grad log pi(a_t|s_t) sum_{t'=t}^{T-1} r_i(s_t', a_t')
are unbiased for J_i and grad J_i (given T > t the rest is memoryless: E[tail | s_t, a_t] = Q_i).
* vanilla: a batch of B trajectories at theta_k, grad f_hat = sum_i f_i'(mean J_hat) mean g_hat_i;
* PAGE-style VR (``estimator="vr"``): every ``period`` steps a large batch N as vanilla; in
  between, with B trajectories tau ~ pi_{theta_k},
      v_k = v_{k-1} + mean[g_hat(theta_k; tau) - w(tau) g_hat(theta_{k-1}; tau)],
      w(tau) = prod_{t<T} pi_{theta_{k-1}}(a_t|s_t) / pi_{theta_k}(a_t|s_t),
  and the same recursion for the J estimates; E[w g_hat(theta_{k-1}; tau)] = grad J(theta_{k-1}),
  so v_k is unbiased for grad J(theta_k) when v_{k-1} is for grad J(theta_{k-1}).
  ``importance_weight=False`` drops w (the mutation: biased).
Deviation: the chain rule f'(J_hat) is evaluated at an estimate, so grad f_hat is biased at
O(1/batch) for both estimators; the unbiasedness claim is made for the per-objective gradients.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from theorylab.algorithms.planning.softmax_gradient import softmax_policy
from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
)
from theorylab.algorithms.registry import register

PAPERS = ("001#60",)
ESTIMATORS = ("vanilla", "vr")


def vector_rewards(mdp, m: int, seed: int) -> np.ndarray:
    """(m, S, A): the model's reward first, then m - 1 U(0.05, 1) tables from ``seed``."""
    rng = np.random.default_rng(seed)
    extra = rng.uniform(0.05, 1.0, size=(m - 1, mdp.S, mdp.A))
    return np.concatenate([np.asarray(mdp.R, float)[None], extra])


def exact_objectives(mdp, rewards: np.ndarray, theta: np.ndarray):
    """J (m,) and grad J (m, S, A) by linear solves (policy-gradient theorem)."""
    pi = softmax_policy(theta)  # (S, A)
    g, S = mdp.gamma, mdp.S
    P_pi = np.einsum("sa,sat->st", pi, mdp.P)  # (S, S)
    M = np.linalg.inv(np.eye(S) - g * P_pi)  # (S, S)
    r_pi = np.einsum("sa,msa->ms", pi, rewards)  # (m, S)
    V = r_pi @ M.T  # (m, S)
    Q = rewards + g * np.einsum("sat,mt->msa", mdp.P, V)  # (m, S, A)
    occ = mdp.mu0 @ M  # (S,) = d_pi / (1 - gamma)
    grad = occ[None, :, None] * pi[None] * (Q - V[:, :, None])  # (m, S, A)
    return V @ mdp.mu0, grad


def log_utility(J: np.ndarray):
    """f(J) = sum log J_i and f'(J) = 1 / J (m,); J_i <= 0 gives -inf and a zero slope."""
    Jp = np.maximum(J, 1e-12)
    return float(np.log(Jp).sum()), 1.0 / Jp


def sample_trajectories(mdp, theta: np.ndarray, n: int, rng: np.random.Generator):
    """n geometric-length trajectories under pi_theta: states, actions (n, L), alive mask (n, L)."""
    pi = softmax_policy(theta)
    lengths = rng.geometric(1.0 - mdp.gamma, size=n)  # T >= 1, P(T > t) = gamma^t
    L = int(lengths.max())
    states, actions = np.zeros((n, L), int), np.zeros((n, L), int)
    s = rng.choice(mdp.S, size=n, p=mdp.mu0)
    cumP = np.cumsum(mdp.P, axis=-1)  # (S, A, S)
    cumpi = np.cumsum(pi, axis=-1)  # (S, A)
    for t in range(L):
        a = np.minimum((rng.random(n)[:, None] > cumpi[s]).sum(1), mdp.A - 1)
        states[:, t], actions[:, t] = s, a
        s = np.minimum((rng.random(n)[:, None] > cumP[s, a]).sum(1), mdp.S - 1)
    alive = np.arange(L)[None] < lengths[:, None]  # (n, L)
    return states, actions, alive


def trajectory_estimates(rewards, theta, states, actions, alive):
    """Per-trajectory J_hat (n, m), g_hat (n, m, S, A) at theta, and log pi_theta(tau) (n,)."""
    n, L = states.shape
    S, A = theta.shape
    logpi = theta - logsumexp(theta, axis=1, keepdims=True)  # (S, A)
    r = rewards[:, states, actions] * alive[None]  # (m, n, L)
    tails = np.flip(np.cumsum(np.flip(r, -1), -1), -1)  # (m, n, L): sum_{t' >= t}
    score = -np.exp(logpi)[states] * alive[..., None]  # (n, L, A): grad_theta(s_t, .) log pi
    score[np.arange(n)[:, None], np.arange(L)[None], actions] += alive
    onehot = np.eye(S)[states]  # (n, L, S)
    g = np.einsum("mnl,nla,nls->nmsa", tails, score, onehot, optimize=True)  # (n, m, S, A)
    return r.sum(-1).T, g, (logpi[states, actions] * alive).sum(-1)


def vanilla_estimate(mdp, rewards, theta, n, rng):
    """Batch means (J_hat (m,), grad J_hat (m, S, A)) from n fresh trajectories at theta."""
    J, g, _ = trajectory_estimates(rewards, theta, *sample_trajectories(mdp, theta, n, rng))
    return J.mean(0), g.mean(0)


def importance_weights(logp_prev: np.ndarray, logp_cur: np.ndarray) -> np.ndarray:
    """w(tau) = pi_prev(tau) / pi_cur(tau) (n,) from trajectory log-probabilities (n,)."""
    return np.exp(logp_prev - logp_cur)


def vr_increments(mdp, rewards, theta, theta_prev, n, rng, *, importance_weight: bool = True):
    """Per trajectory tau ~ pi_theta, est(theta; tau) - w(tau) est(theta_prev; tau) for J (n, m)
    and grad J (n, m, S, A): the PAGE/STORM increment (w = 1 without the importance weight)."""
    traj = sample_trajectories(mdp, theta, n, rng)
    J1, g1, lp1 = trajectory_estimates(rewards, theta, *traj)
    J0, g0, lp0 = trajectory_estimates(rewards, theta_prev, *traj)
    w = importance_weights(lp0, lp1) if importance_weight else np.ones(n)  # (n,)
    return J1 - w[:, None] * J0, g1 - w[:, None, None, None] * g0


def vr_correction(mdp, rewards, theta, theta_prev, n, rng, *, importance_weight: bool = True):
    """The batch mean of :func:`vr_increments`: (m,), (m, S, A)."""
    dJ, dg = vr_increments(
        mdp, rewards, theta, theta_prev, n, rng, importance_weight=importance_weight
    )
    return dJ.mean(0), dg.mean(0)


def mo_pg_iterates(
    mdp,
    iterations: int,
    *,
    objectives: int = 2,
    estimator: str = "vr",
    step: float = 0.5,
    batch: int = 10,
    big_batch: int = 100,
    period: int = 10,
    importance_weight: bool = True,
    seed: int = 0,
) -> tuple[PolicyPath, np.ndarray]:
    """Stochastic gradient ascent on f(J) = sum log J_i; the path and samples used (K+1,)."""
    who = "mo-vr-pg"
    iterations = check_iterations(who, iterations)
    check_number(who, "step", step)
    if estimator not in ESTIMATORS:
        raise ValueError(f"{who}: estimator must be one of {ESTIMATORS}, got {estimator!r}")
    for name, v in (
        ("objectives", objectives),
        ("batch", batch),
        ("big_batch", big_batch),
        ("period", period),
    ):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{who}: {name} must be a positive integer, got {v!r}")
    if getattr(mdp, "gamma", None) is None or getattr(mdp, "horizon", None) is not None:
        raise ValueError(
            f"{who} is stated for discounted MDPs; give one with gamma (e.g. "
            f"random:S=5,A=3,gamma=0.9), got {getattr(mdp, 'name', mdp)!r}"
        )
    rewards = vector_rewards(mdp, objectives, seed)
    rng = np.random.default_rng(seed + 1)
    theta = np.zeros((mdp.S, mdp.A))
    thetas, used, total = [theta], [0], 0
    J_est = g_est = None
    prev = theta
    for k in range(iterations):
        if estimator == "vanilla" or k % period == 0:
            n = batch if estimator == "vanilla" else big_batch
            J_est, g_est = vanilla_estimate(mdp, rewards, theta, n, rng)
        else:
            dJ, dg = vr_correction(
                mdp, rewards, theta, prev, batch, rng, importance_weight=importance_weight
            )
            J_est, g_est = J_est + dJ, g_est + dg
            n = batch
        total += n
        _, slope = log_utility(J_est)
        prev, theta = theta, theta + step * np.einsum("m,msa->sa", slope, g_est)
        thetas.append(theta)
        used.append(total)
    return scored_path(mdp, rewards, np.stack(thetas), estimator, step), np.array(used)


def scored_path(mdp, rewards, thetas: np.ndarray, estimator: str, step: float) -> PolicyPath:
    """Exact f(J), ||grad f|| (as target_gap) and entropy of the iterates thetas (K+1, S, A)."""
    values, norms = [], []
    for th in thetas:
        J, grad = exact_objectives(mdp, rewards, th)
        f, slope = log_utility(J)
        values.append(f)
        norms.append(float(np.linalg.norm(np.einsum("m,msa->sa", slope, grad))))
    pis = np.stack([softmax_policy(th) for th in thetas])  # (K+1, S, A)
    ent = -(pis * np.log(np.maximum(pis, 1e-300))).sum(-1).mean(-1)
    return PolicyPath(
        objective=np.array(values),
        regularised=np.array(values),
        entropy=ent,
        target_gap=np.array(norms),
        target_value=float("nan"),
        policies=pis,
        config={"estimator": estimator, "step": float(step), "m": int(rewards.shape[0])},
    )


@register("mo-vr-pg", kind="policy-optimization", problem="tabular-discounted", papers=PAPERS)
def mo_vr_pg(
    problem,
    iterations,
    objectives: int = 2,
    estimator: str = "vr",
    step: float = 0.5,
    batch: int = 10,
    big_batch: int = 100,
    period: int = 10,
    seed: int = 0,
):
    """Sampled gradient ascent on sum_i log J_i: vanilla REINFORCE or the PAGE-style VR
    estimator (objective: f(J); target_gap: the exact ||grad f||)."""
    return mo_pg_iterates(
        problem,
        iterations,
        objectives=objectives,
        estimator=estimator,
        step=step,
        batch=batch,
        big_batch=big_batch,
        period=period,
        seed=seed,
    )[0]
