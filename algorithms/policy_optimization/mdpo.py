r"""Mirror Descent Policy Optimization (MDPO), on-policy and tabular: the exact step and its
m-step gradient approximation.

Seed rows ``seed-catalogue-000.md#29`` (= ``seed-catalogue-002-004.md#F2``): M. Tomar,
L. Shani, Y. Efroni, M. Ghavamzadeh, "Mirror Descent Policy Optimization", ICLR 2022
(arXiv:2005.09814).

What was read [V] (the abstract, as quoted in the catalogue): MDPO "iteratively updates the
policy by approximately solving a trust-region problem, whose objective function consists of two
terms: a linearization of the standard RL objective and a proximity term that restricts two
consecutive policies to be close to each other. Each update performs this approximation by
taking multiple gradient steps on this objective function"; explicitly enforcing the trust
region is "not a necessity". Not read: the paper's equations and step sizes. Reconstructed [A]
(standard tabular mirror descent, Shani, Efroni & Mannor 2020 [M]):

* the per-state problem at iterate k, with step eta:
  ``max_p <p, Q^{pi_k}(s, .)> - (1/eta) KL(p || pi_k(.|s))``, whose maximiser is the closed-form
  step ``pi_{k+1}(a|s) ∝ pi_k(a|s) exp(eta Q^{pi_k}(s, a))`` (``m=None``);
* MDPO's approximation: m steps of gradient ascent (step ``lr``) on that objective in the softmax
  logits z of p, from z = log pi_k(s): dF/dz_b = p_b (g_b - p.g) with
  g = Q(s, .) - (1/eta)(log p - log pi_k(s)) (exact gradients: the tabular stand-in for the
  paper's sampled ones);
* tabular MDPO with softmax policies is the natural policy gradient: the NPG step
  theta + eta' F^-1 grad J (F the Fisher matrix under the normalised visitation) moves the
  logits by eta' A^pi / (1 - gamma) (Agarwal et al. 2021, Lemma 5.1 [M]), i.e. the MD step with
  eta = eta' / (1 - gamma).

Algorithm (``mdpo``): K steps from the uniform policy, each iterate scored exactly (J(pi_k),
entropy; V*(mu0) as the target); ``config["step_error"]`` holds max |pi_{k+1} - closed-form
step| of each step (0 for the exact step).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from theorylab.algorithms.planning.advantage import policy_advantage
from theorylab.algorithms.planning.soft_value_iteration import policy_entropy
from theorylab.algorithms.planning.value_iteration import value_iteration
from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_positive,
)
from theorylab.algorithms.registry import register

PAPERS = ("000#29", "002-004#F2")


def md_step(log_pi: np.ndarray, Q: np.ndarray, eta: float) -> np.ndarray:
    """log pi_{k+1} (S, A) = log pi_k + eta Q, normalised: the closed-form mirror-descent step."""
    z = log_pi + eta * Q
    return z - logsumexp(z, axis=1, keepdims=True)


def proximal_gradient(z: np.ndarray, log_pi: np.ndarray, Q: np.ndarray, eta: float) -> np.ndarray:
    """d/dz of <softmax(z), Q> - (1/eta) KL(softmax(z) || pi_k) per state (S, A)."""
    log_p = z - logsumexp(z, axis=1, keepdims=True)
    p = np.exp(log_p)
    g = Q - (log_p - log_pi) / eta
    return p * (g - (p * g).sum(axis=1, keepdims=True))


def gradient_step(log_pi: np.ndarray, Q: np.ndarray, eta: float, m: int, lr: float):
    """MDPO's approximate step: m gradient-ascent steps of size lr from z = log pi_k."""
    z = log_pi.copy()
    for _ in range(m):
        z = z + lr * proximal_gradient(z, log_pi, Q, eta)
    return z - logsumexp(z, axis=1, keepdims=True)


def mdpo_iterates(
    mdp, iterations: int, *, eta: float, m: int | None = None, lr: float = 1.0
) -> PolicyPath:
    """K MDPO steps from the uniform policy (module docstring); m None: the exact step."""
    iterations = check_iterations("mdpo", iterations)
    check_positive("mdpo", eta=eta, lr=lr)
    if m is not None and (isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1):
        raise ValueError(f"mdpo: m must be a positive integer (or None: the exact step), got {m!r}")
    if getattr(mdp, "gamma", None) is None or getattr(mdp, "horizon", None) is not None:
        raise ValueError(
            "mdpo is stated for discounted MDPs; give one with gamma (e.g. "
            f"random:S=5,A=3,gamma=0.9), got {getattr(mdp, 'name', mdp)!r}"
        )
    log_pi = np.full((mdp.S, mdp.A), -np.log(mdp.A))
    policies, values, step_error = [np.exp(log_pi)], [], [0.0]
    for _ in range(iterations):
        adv = policy_advantage(mdp, np.exp(log_pi))
        values.append(adv.eta)
        Q = adv.A + adv.V[:, None]
        exact = md_step(log_pi, Q, eta)
        log_pi = exact if m is None else gradient_step(log_pi, Q, eta, int(m), lr)
        step_error.append(float(np.abs(np.exp(log_pi) - np.exp(exact)).max()))
        policies.append(np.exp(log_pi))
    pis = np.stack(policies)  # (K+1, S, A)
    values.append(policy_advantage(mdp, pis[-1]).eta)
    V_star = np.asarray(value_iteration(mdp, tol=1e-13).V).ravel()
    return PolicyPath(
        objective=np.array(values),
        regularised=np.full(pis.shape[0], np.nan),
        entropy=policy_entropy(pis).mean(axis=-1),
        target_gap=np.full(pis.shape[0], np.nan),
        target_value=float(V_star @ mdp.mu0),
        policies=pis,
        config={
            "eta": float(eta),
            "m": None if m is None else int(m),
            "lr": float(lr),
            "gamma": float(mdp.gamma),
            "step_error": step_error,
        },
    )


@register("mdpo", kind="policy-optimization", problem="tabular-discounted", papers=PAPERS)
def mdpo(problem, iterations, eta: float = 1.0, m: int | None = None, lr: float = 1.0):
    """Mirror-descent policy optimisation: pi_{k+1} ∝ pi_k exp(eta Q^pi_k), exactly (m None)
    or by m gradient steps on the proximal objective."""
    return mdpo_iterates(problem, iterations, eta=eta, m=m, lr=lr)
