r"""TRPO's theoretically justified iteration (the KL-penalty form) and its natural-gradient limit.

Seed row ``seed-catalogue-000.md#61``: J. Schulman, S. Levine, P. Moritz, M. I. Jordan,
P. Abbeel, "Trust Region Policy Optimization", ICML 2015 (arXiv:1502.05477).

What was read [V] (the abstract and section 1 through the stored arXiv text, and a summary of
sections 2-3): eta(pi) the expected discounted reward; the local surrogate
``L_pi(pi~) = eta(pi) + sum_s rho_pi(s) sum_a pi~(a|s) A_pi(s, a)``; Theorem 1,
``eta(pi_new) >= L_pi_old(pi_new) - C D_KL^max(pi_old, pi_new)`` with
``C = 4 eps gamma / (1 - gamma)^2``, ``eps = max_{s,a} |A_pi_old(s, a)|``; and Algorithm 1:
``pi_{i+1} = argmax_pi [L_pi_i(pi) - C D_KL^max(pi_i, pi)]``, which improves eta monotonically
(M_i(pi_i) = eta(pi_i), so any pi with M_i(pi) >= M_i(pi_i) has eta(pi) >= eta(pi_i)). The
practical algorithm replaces the penalty with a constraint on the rho-averaged KL (section 4)
and, for small steps, is the natural policy gradient step (Kakade 2002; the paper's section 7
[A for the section number]).

Reconstructed / chosen [A]: the policy class -- log-linear ``pi_theta(a|s) ∝ exp(theta .
phi(s, a))`` (tabular: phi one-hot, d = S A; or d random Gaussian features, where a step that
helps the visited states can hurt the others); the inner maximisation by BFGS from theta_i with
the step accepted only when M_i does not decrease (the monotonicity argument needs no more than
that; the exact argmax of a non-concave M is not computable); D_KL^max taken as
max_s KL(pi_i(.|s) || pi(.|s)) (Theorem 1 holds in either direction, since it enters through
Pinsker's inequality).

Algorithm (``trpo-penalty``): theta_0 = 0 (uniform); K iterations of the penalised step.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp

from theorylab.algorithms.planning.advantage import policy_advantage, surrogate
from theorylab.algorithms.policy_optimization.path import PolicyPath
from theorylab.algorithms.registry import register

PAPERS = ("000#61",)


def penalty_constant(A: np.ndarray, gamma: float) -> float:
    """C = 4 eps gamma / (1 - gamma)^2 with eps = max |A_pi(s, a)| (Theorem 1)."""
    return 4.0 * float(np.max(np.abs(A))) * gamma / (1.0 - gamma) ** 2


def log_linear_logpolicy(theta: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """log pi_theta (S, A) from theta (d,) and features phi (S, A, d) (finite even where
    pi_theta underflows)."""
    z = phi @ theta
    return z - logsumexp(z, axis=1, keepdims=True)


def log_linear_policy(theta: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """pi_theta (S, A) from theta (d,) and features phi (S, A, d)."""
    return np.exp(log_linear_logpolicy(theta, phi))


def features(mdp, spec, seed: int = 0) -> np.ndarray:
    """phi (S, A, d): ``"tabular"`` (one-hot, d = S A), an int d (i.i.d. N(0, 1) features), or
    an array (S, A, d) given as it is."""
    if isinstance(spec, np.ndarray):
        if spec.ndim != 3 or spec.shape[:2] != (mdp.S, mdp.A):
            raise ValueError(
                f"trpo-penalty: a features array must have shape ({mdp.S}, {mdp.A}, d), "
                f"got {spec.shape}"
            )
        return np.asarray(spec, dtype=np.float64)
    if isinstance(spec, str) and spec == "tabular":
        return np.eye(mdp.S * mdp.A).reshape(mdp.S, mdp.A, mdp.S * mdp.A)
    if isinstance(spec, bool) or not isinstance(spec, (int, np.integer)) or spec < 1:
        raise ValueError(
            f"trpo-penalty: features must be 'tabular' or a positive int, got {spec!r}"
        )
    return np.random.default_rng(seed).standard_normal((mdp.S, mdp.A, int(spec)))


def state_kl(old: np.ndarray, log_new: np.ndarray) -> np.ndarray:
    """KL(old(.|s) || new(.|s)) per state (S,), from old (S, A) > 0 and log new (S, A)."""
    return (old * (np.log(old) - log_new)).sum(axis=1)


def penalised_step(mdp, theta: np.ndarray, phi: np.ndarray, c_scale: float = 1.0):
    """One step of Algorithm 1 from theta: (theta', M(theta'), C). The penalty is
    ``c_scale * penalty_constant`` (c_scale = 1: the paper's constant)."""
    pi = log_linear_policy(theta, phi)
    adv = policy_advantage(mdp, pi)
    C = c_scale * penalty_constant(adv.A, mdp.gamma)

    def negative_m(th):
        log_new = log_linear_logpolicy(th, phi)
        return -(surrogate(adv, np.exp(log_new)) - C * float(state_kl(pi, log_new).max()))

    def gradient(th):  # a (sub)gradient of -M: the KL term at its arg-max state
        new = log_linear_policy(th, phi)
        mean_new = np.einsum("sa,sad->sd", new, phi)
        psi = phi - mean_new[:, None, :]
        g_l = np.einsum("s,sa,sad->d", adv.rho, new * adv.A, psi)
        s = int(np.argmax(state_kl(pi, log_linear_logpolicy(th, phi))))
        g_kl = mean_new[s] - pi[s] @ phi[s]
        return -(g_l - C * g_kl)

    res = minimize(negative_m, theta, jac=gradient, method="L-BFGS-B", options={"maxiter": 500})
    start = -negative_m(theta)  # = eta(pi)
    if np.all(np.isfinite(res.x)) and -res.fun >= start:
        return res.x, float(-res.fun), C
    return theta, start, C


def trpo_penalty_iterates(
    mdp,
    iterations: int,
    *,
    features_spec="tabular",
    c_scale: float = 1.0,
    seed: int = 0,
    init: float = 0.0,
) -> PolicyPath:
    """K steps of the penalised iteration from theta_0 = init * 1 (init 0: the uniform policy;
    module docstring)."""
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)):
        raise ValueError(f"trpo-penalty: iterations must be a positive integer, got {iterations!r}")
    if iterations < 1:
        raise ValueError(f"trpo-penalty: iterations must be a positive integer, got {iterations!r}")
    if not (isinstance(c_scale, (int, float)) and np.isfinite(c_scale) and c_scale >= 0):
        raise ValueError(f"trpo-penalty: c_scale must be a finite number >= 0, got {c_scale!r}")
    if getattr(mdp, "gamma", None) is None or getattr(mdp, "horizon", None) is not None:
        raise ValueError(
            "trpo-penalty is stated for discounted MDPs; give one with gamma (e.g. "
            f"random:S=5,A=3,gamma=0.9), got {getattr(mdp, 'name', mdp)!r}"
        )
    phi = features(mdp, features_spec, seed)
    theta = np.full(phi.shape[-1], float(init))
    pis = [log_linear_policy(theta, phi)]
    surrogates, penalties, kls = [np.nan], [np.nan], [0.0]
    for _ in range(int(iterations)):
        theta, m, C = penalised_step(mdp, theta, phi, c_scale)
        pis.append(log_linear_policy(theta, phi))
        surrogates.append(m)
        penalties.append(C)
        kls.append(float(state_kl(pis[-2], log_linear_logpolicy(theta, phi)).max()))
    etas = np.array([policy_advantage(mdp, p).eta for p in pis])
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.where(np.stack(pis) > 0, np.stack(pis) * np.log(np.stack(pis)), 0.0)
    return PolicyPath(
        objective=etas,
        regularised=np.where(np.isnan(surrogates), etas, surrogates),
        entropy=entropy.sum(axis=-1).mean(axis=-1),
        target_gap=np.full(etas.size, np.nan),
        target_value=float("nan"),
        policies=np.stack(pis),
        config={
            "features": str(features_spec),
            "c_scale": float(c_scale),
            "penalty": [float(c) for c in penalties],
            "max_kl": kls,
            "gamma": float(mdp.gamma),
        },
    )


def natural_gradient(mdp, theta: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """F^-1 g (d,): g = grad eta (the policy-gradient theorem, exact) and F the Fisher matrix of
    pi_theta under the normalised visitation rho / sum rho (pseudo-inverse)."""
    pi = log_linear_policy(theta, phi)
    adv = policy_advantage(mdp, pi)
    psi = phi - np.einsum("sa,sad->sd", pi, phi)[:, None, :]  # (S, A, d) grad log pi
    g = np.einsum("s,sa,sad->d", adv.rho, pi * adv.A, psi)
    w = adv.rho / adv.rho.sum()
    F = np.einsum("s,sa,sad,sae->de", w, pi, psi, psi)
    return np.linalg.pinv(F) @ g


def trust_region_step(mdp, theta: np.ndarray, phi: np.ndarray, delta: float) -> np.ndarray:
    """The constrained step of section 4: argmax L(theta') s.t. the rho-averaged
    KL(pi_theta || pi_theta') <= delta (SLSQP from theta)."""
    pi = log_linear_policy(theta, phi)
    adv = policy_advantage(mdp, pi)
    w = adv.rho / adv.rho.sum()

    def mean_kl(th):
        return float(w @ state_kl(pi, log_linear_logpolicy(th, phi)))

    start = theta + 1e-3 * np.sqrt(delta) * natural_gradient(mdp, theta, phi)
    res = minimize(
        lambda th: -surrogate(adv, log_linear_policy(th, phi)),
        start,
        method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda th: delta - mean_kl(th)}],
        options={"ftol": 1e-14, "maxiter": 500},
    )
    return res.x


@register("trpo-penalty", kind="policy-optimization", problem="tabular-discounted", papers=PAPERS)
def trpo_penalty(
    problem,
    iterations,
    features="tabular",
    c_scale: float = 1.0,
    seed: int = 0,
    init: float = 0.0,
):
    """TRPO's Algorithm 1: maximise L - C max-KL, C = 4 eps gamma/(1-gamma)^2 (Schulman 2015)."""
    return trpo_penalty_iterates(
        problem, iterations, features_spec=features, c_scale=c_scale, seed=seed, init=init
    )
