r"""RL with general utilities: concave F of the occupancy measure, policy gradient by the chain
rule, and the exact optimum on the occupancy polytope (Frank-Wolfe, cvxpy).

Seed reference: ``seed-catalogue-000.md#14`` (= ``seed-catalogue-001.md#65``, the same paper; tier
A). Paper: Barakat, Fatkhullin, He, "Reinforcement Learning with General Utilities: Simpler
Variance Reduction and Large State-Action Space", ICML 2023 (arXiv:2306.01854). What was read
[V]: the abstract -- maximise F(lambda^pi) of the state-action occupancy measure (constrained RL,
pure exploration, learning from demonstrations as cases); a single-loop normalised PG with
recursive-momentum variance reduction; O~(eps^-3) samples for first-order stationarity and
O~(eps^-2) for global optimality (concave F, "adequate assumptions"); O~(eps^-4) with a linear
regression subroutine for large spaces. Reconstructed [A]: everything below. The chain rule
``grad_theta F(lambda^theta) = grad_theta <lambda^theta, z>`` at the pseudo-reward
``z = grad F(lambda^theta)`` is the identity the paper builds on; with z fixed it is the policy
gradient theorem, ``d(s) pi(a|s) A_z(s, a)`` for softmax policies (d the normalised state
occupancy, A_z the advantage of the reward z, discount gamma).

Deviation (stated, not hidden): :func:`utility_pg` uses *exact* gradients (exact occupancy and
advantage by linear solves) and plain gradient ascent with a constant step; the paper's method is
stochastic (trajectory samples, normalised steps, recursive momentum), and its rates are sample
complexities. Variance reduction has nothing to reduce with exact gradients, so the eps^-2
sample-complexity rate is not tested here (it is in
:mod:`theorylab.algorithms.dual.general_utilities_vr`, N-VR-PG, claim ``nvr-pg-global-rate``);
what is checked here is the global optimum the paper's analysis relies on (concave F, softmax PG
reaches F*) against two independent answers.

Utilities (``lambda (S, A)`` the normalised discounted occupancy, summing to 1):

* ``entropy`` -- ``F = -sum_s d(s) log d(s)``, ``d(s) = sum_a lambda(s, a)`` (maximum-entropy
  exploration); ``grad F(s, a) = -(log d(s) + 1)``.
* ``kl-expert`` -- ``F = -KL(lambda || lambda_E)``, lambda_E the occupancy of a random expert
  policy (learning from demonstrations); ``F* = 0`` at lambda = lambda_E, in closed form.
* ``linear`` -- ``F = <lambda, r> / (1 - gamma) = V_r(mu0)``: the pseudo-reward is r / (1 - gamma)
  and the method is ordinary softmax PG on V_r.

Second answers: :func:`frank_wolfe` (the linear maximisation oracle over the polytope is planning
with the reward grad F: policy iteration; exact line search; its duality gap
``<grad F(lambda_k), s_k - lambda_k> >= F* - F(lambda_k)`` certifies the optimum from above) and
:func:`optimum_cvxpy` (the concave program on ``{lambda >= 0 : M^T lambda = (1 - gamma) mu}``
of the planning LP, :mod:`theorylab.algorithms.dual.occupancy_flow`).
"""

from __future__ import annotations

from dataclasses import dataclass

import cvxpy as cp
import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import softmax

from theorylab.algorithms.dual.occupancy_flow import occupancy_flow
from theorylab.algorithms.planning.evaluation import evaluate_discounted
from theorylab.algorithms.planning.lp import occupancy_measure
from theorylab.algorithms.policy_optimization.path import PolicyPath, check_iterations, check_number

UTILITIES = ("entropy", "kl-expert", "linear")


@dataclass(frozen=True)
class Utility:
    """A concave utility F of the occupancy ``lambda (S, A)``: name, gamma, and for kl-expert
    the expert occupancy ``(S, A)``; for linear the reward ``(S, A)``."""

    name: str
    gamma: float
    expert: np.ndarray | None = None
    reward: np.ndarray | None = None

    def value(self, lam: np.ndarray) -> float:
        if self.name == "entropy":
            d = lam.sum(axis=1)
            return float(-np.sum(d[d > 0] * np.log(d[d > 0])))
        if self.name == "kl-expert":
            on = lam > 0
            return float(-np.sum(lam[on] * np.log(lam[on] / self.expert[on])))
        return float(np.sum(lam * self.reward)) / (1.0 - self.gamma)

    def gradient(self, lam: np.ndarray) -> np.ndarray:
        """``grad F (S, A)``, the pseudo-reward of the chain rule."""
        if self.name == "entropy":
            d = lam.sum(axis=1, keepdims=True)
            return np.broadcast_to(-(np.log(d) + 1.0), lam.shape).copy()
        if self.name == "kl-expert":
            return -(np.log(lam / self.expert) + 1.0)
        return self.reward / (1.0 - self.gamma)

    def expression(self, x: cp.Variable, S: int, A: int):
        """The cvxpy expression of F at ``x (S*A,)``."""
        if self.name == "entropy":
            return cp.sum(cp.entr(cp.reshape(x, (S, A), order="C") @ np.ones(A)))
        if self.name == "kl-expert":
            return -cp.sum(cp.rel_entr(x, self.expert.ravel()))
        return self.reward.ravel() @ x / (1.0 - self.gamma)


def expert_policy(S: int, A: int, seed: int) -> np.ndarray:
    """The kl-expert utility's expert: rows Dirichlet(1) from ``seed`` ``(S, A)``."""
    return np.random.default_rng(seed).dirichlet(np.ones(A), size=S)


def make_utility(mdp, utility: str, expert_seed: int = 0) -> Utility:
    """The utility named ``utility`` on a discounted model (``UTILITIES``)."""
    if utility not in UTILITIES:
        raise ValueError(f"utility must be one of {', '.join(UTILITIES)}, got {utility!r}")
    g = mdp.gamma
    if utility == "kl-expert":
        pi_e = expert_policy(mdp.S, mdp.A, expert_seed)
        return Utility(utility, g, expert=occupancy_measure(mdp, pi_e, gamma=g))
    if utility == "linear":
        return Utility(utility, g, reward=np.asarray(mdp.reward(0), dtype=np.float64))
    return Utility(utility, g)


def utility_gradient(mdp, F: Utility, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(grad_theta F(lambda^theta) (S, A), lambda^theta (S, A))`` for the softmax policy of
    theta: ``d(s) pi(a|s) A_z(s, a)`` with the pseudo-reward ``z = grad F(lambda^theta)``."""
    pi = softmax(theta, axis=1)
    lam = occupancy_measure(mdp, pi, gamma=F.gamma)
    z = pseudo_reward(F, lam)
    V = evaluate_discounted(mdp, pi, gamma=F.gamma, reward=z)
    Q = z + F.gamma * (mdp.P_flat(0) @ V).reshape(mdp.S, mdp.A)
    return lam.sum(axis=1, keepdims=True) * pi * (Q - V[:, None]), lam


def pseudo_reward(F: Utility, lam: np.ndarray) -> np.ndarray:
    """The chain rule's reward ``z = grad F(lambda)`` (a separate function: the control
    ``general-utility-frozen-reward`` freezes it)."""
    return F.gradient(lam)


def utility_pg(mdp, F: Utility, iterations: int, step: float) -> PolicyPath:
    """Exact softmax PG on F(lambda^theta) from theta = 0 (uniform policy): K steps
    ``theta <- theta + step grad_theta F``. Iterates pi_0..pi_K, scored exactly."""
    theta = np.zeros((mdp.S, mdp.A))
    pis, values, lams = [], [], []
    for k in range(iterations + 1):
        grad, lam = utility_gradient(mdp, F, theta)
        pis.append(softmax(theta, axis=1))
        values.append(F.value(lam))
        lams.append(lam)
        if k < iterations:
            theta = theta + step * grad
    pis = np.stack(pis)  # (K+1, S, A)
    ent = -(pis * np.log(pis)).sum(-1)  # softmax policies have full support
    d = np.stack(lams).sum(axis=-1)  # (K+1, S): weights of the policy entropy
    return PolicyPath(
        objective=np.array(values),
        regularised=np.array(values),
        entropy=(ent * d).sum(axis=-1),
        target_gap=np.full(iterations + 1, np.nan),
        target_value=float("nan"),
        policies=np.log(pis),
        config={"utility": F.name, "step": step, "gamma": F.gamma},
    )


def greedy_occupancy(mdp, reward: np.ndarray, gamma: float) -> np.ndarray:
    """The occupancy ``(S, A)`` of an optimal deterministic policy for ``reward (S, A)`` (policy
    iteration with exact evaluation): Frank-Wolfe's linear maximisation oracle."""
    S, A = mdp.S, mdp.A
    pol = np.zeros(S, dtype=np.int64)
    P = mdp.P_flat(0)
    for _ in range(10 * S * A + 10):
        V = evaluate_discounted(mdp, pol, gamma=gamma, reward=reward)
        Q = reward + gamma * (P @ V).reshape(S, A)
        best = Q.argmax(axis=1)
        keep = Q[np.arange(S), pol] >= Q[np.arange(S), best] - 1e-12
        new = np.where(keep, pol, best)
        if np.array_equal(new, pol):
            break
        pol = new
    return occupancy_measure(mdp, pol, gamma=gamma)


def frank_wolfe(mdp, F: Utility, iterations: int = 500) -> tuple[np.ndarray, float, float]:
    """Frank-Wolfe on the occupancy polytope from the uniform policy's occupancy, exact line
    search. Returns ``(lambda (S, A), F(lambda), gap)``, gap the last duality gap (an upper
    bound on ``F* - F(lambda)``)."""
    lam = occupancy_measure(mdp, np.full((mdp.S, mdp.A), 1.0 / mdp.A), gamma=F.gamma)
    gap = np.inf
    for _ in range(iterations):
        z = F.gradient(lam)
        s = greedy_occupancy(mdp, z, F.gamma)
        gap = float(np.sum(z * (s - lam)))
        if gap <= 1e-12:
            break
        lam = _line_search(F, lam, s - lam)
    return lam, F.value(lam), max(gap, 0.0)


def _line_search(F: Utility, lam: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """``lam + t* direction`` with t* maximising F on [0, 1] (bounded Brent)."""
    res = minimize_scalar(
        lambda t: -F.value(lam + t * direction),
        bounds=(0.0, 1.0),
        method="bounded",
        options={"xatol": 1e-12},
    )
    return lam + res.x * direction


def optimum_cvxpy(mdp, F: Utility) -> tuple[float, np.ndarray]:
    """``max_{lambda in K} F(lambda)`` by cvxpy (exponential cone; CLARABEL): ``(F*, lambda*)``."""
    flow = occupancy_flow(mdp, gamma=F.gamma)
    x = cp.Variable(mdp.S * mdp.A, nonneg=True)
    problem = cp.Problem(cp.Maximize(F.expression(x, mdp.S, mdp.A)), [flow.M.T @ x == flow.b])
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    lam = np.clip(np.asarray(x.value), 0.0, None).reshape(mdp.S, mdp.A)
    return float(problem.value), lam


def run_utility_pg(
    mdp, iterations: int, utility: str = "entropy", step: float = 1.0, expert_seed: int = 0
) -> PolicyPath:
    """The registered entry: checks, then :func:`utility_pg`."""
    K = check_iterations("general-utility-pg", iterations)
    step = check_number("general-utility-pg", "step", step)
    return utility_pg(mdp, make_utility(mdp, utility, expert_seed), K, step)
