r"""One-shot safety alignment by optimal dualisation (MoCAN), and the primal-dual baseline.

Seed reference: ``seed-catalogue-000.md#62`` (tier A). Paper: Huang, Li, Dobriban, Bastani,
Hassani, Ding, "One-Shot Safety Alignment for Large Language Models via Optimal Dualization",
NeurIPS 2024 (arXiv:2405.19544). What was read [V]: the abstract and a review page -- constrained
RLHF reduces to an unconstrained alignment problem by pre-optimising a *smooth and convex dual
function with a closed form* (also locally strongly convex), then aligning once with the
lambda*-combined reward; MoCAN (model-based: reward and safety models given) and PeCAN
(preference-based). The dual's formula below is reconstructed [A] (the catalogue row's "standard
form"; the derivation is three lines and checked numerically by the claim
``mocan-one-shot-dual``); the solver (safeguarded Newton) and the primal-dual baseline's steps are
ours [A]. PeCAN (the dual from DPO-pretrained implicit rewards) is not implemented: on an exact
bandit its implicit rewards differ from r and g by a per-prompt shift only, which moves b by
``E_rho`` of the safety shift.

Problem (:mod:`theorylab.mdps.safety_bandit`): ``max_pi E_rho[<pi, r> - beta KL(pi || ref)]`` s.t.
``E_rho <pi, g> >= b``. The Lagrangian ``L(pi, lambda) = E_rho[<pi, r + lambda g> - beta KL] -
lambda b`` is maximised by the Gibbs policy ``pi_lambda ∝ ref exp((r + lambda g) / beta)``, so the
dual function is closed-form,

    D(lambda) = E_rho[ beta log sum_a ref(a|s) exp((r(s,a) + lambda g(s,a)) / beta) ] - lambda b,
    D'(lambda) = E_rho <pi_lambda, g> - b,      D''(lambda) = E_rho Var_{pi_lambda}(g) / beta >= 0,

convex and smooth; ``lambda* = argmin_{lambda >= 0} D``. Strong duality (Slater: b below the
largest achievable safety) makes ``D(lambda*)`` the constrained optimum and ``pi_{lambda*}`` the
constrained optimal policy; when lambda* > 0, ``D'(lambda*) = 0``: the constraint binds.

* :func:`mocan` -- MoCAN's first stage, exactly: Newton's method on D from lambda = 0 (kept in a
  bracket [lo, hi] with D'(lo) < 0 <= D'(hi), bisecting when a Newton step leaves it); the
  iterates pi_{lambda_k}; its stated limit pi_{lambda*} with lambda* from bisection on D' to
  machine precision. The second stage (unconstrained alignment with r + lambda* g) is the Gibbs
  policy here.
* :func:`primal_dual` -- the baseline the paper replaces: one KL-mirror-ascent step on
  L(., lambda_k) per iteration, ``pi_{k+1} ∝ (pi_k^{1/eta} ref^beta exp(r + lambda_k g))^{1 /
  (1/eta + beta)}``, then a projected dual step ``lambda_{k+1} = [lambda_k - step (E <pi_{k+1},
  g> - b)]_+``. Its limit is lambda* (the claim measures it).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from theorylab.algorithms.policy_optimization.path import PolicyPath, check_iterations, check_number
from theorylab.mdps.kl_bandit import kl_rows

LAMBDA_TOL = 1e-13


def dual_value(bandit, lam: float) -> float:
    """``D(lambda)`` (module docstring)."""
    z = np.log(bandit.ref) + (bandit.reward + lam * bandit.safety) / bandit.beta  # (S, A)
    return float(bandit.rho @ (bandit.beta * logsumexp(z, axis=1))) - lam * bandit.threshold


def dual_derivatives(bandit, lam: float) -> tuple[float, float]:
    """``(D'(lambda), D''(lambda))``: ``E_rho <pi_lambda, g> - b`` and
    ``E_rho Var_{pi_lambda}(g) / beta``."""
    pi = bandit.gibbs(lam)  # (S, A)
    mean = np.einsum("sa,sa->s", pi, bandit.safety)  # (S,)
    var = np.einsum("sa,sa->s", pi, bandit.safety**2) - mean**2
    return float(bandit.rho @ mean) - bandit.threshold, float(bandit.rho @ var) / bandit.beta


def _bracket(bandit) -> float:
    """hi with D'(hi) >= 0 (doubling from 1); D' increases to E_rho max g - b > 0 (Slater)."""
    s_max = float(bandit.rho @ bandit.safety.max(axis=1))
    if not s_max > bandit.threshold:
        raise ValueError(
            f"safety threshold b = {bandit.threshold:.6g} is not below the largest achievable "
            f"safety {s_max:.6g}: the constrained problem has no strictly feasible policy"
        )
    hi = 1.0
    while dual_derivatives(bandit, hi)[0] < 0:
        hi *= 2.0
    return hi


def optimal_multiplier(bandit) -> float:
    """lambda* by bisection on D' (monotone) to LAMBDA_TOL: 0 when D'(0) >= 0 (inactive)."""
    if dual_derivatives(bandit, 0.0)[0] >= 0:
        return 0.0
    lo, hi = 0.0, _bracket(bandit)
    while hi - lo > LAMBDA_TOL * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        if dual_derivatives(bandit, mid)[0] < 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def newton_multipliers(bandit, iterations: int) -> np.ndarray:
    """lambda_0 = 0, ..., lambda_K: safeguarded Newton on D over lambda >= 0 ``(K+1,)``."""
    lams = np.zeros(iterations + 1)
    grad, _ = dual_derivatives(bandit, 0.0)
    if grad >= 0:
        return lams  # the constraint is inactive: lambda* = 0 from the start
    lo, hi = 0.0, _bracket(bandit)
    lam = 0.0
    for k in range(1, iterations + 1):
        grad, hess = dual_derivatives(bandit, lam)
        if grad < 0:
            lo = max(lo, lam)
        else:
            hi = min(hi, lam)
        step = lam - grad / hess if hess > 0 else np.inf
        lam = step if lo < step < hi else 0.5 * (lo + hi)
        lams[k] = lam
    return lams


def _path(bandit, lams: np.ndarray, pis: np.ndarray, config: dict) -> PolicyPath:
    """The exact metrics of iterates ``pis (K+1, S, A)`` with multipliers ``lams (K+1,)``
    against the constrained optimum pi_{lambda*}."""
    star = optimal_multiplier(bandit)
    target = bandit.gibbs(star)
    kl = kl_rows(pis, target[None])  # (K+1, S)
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.where(pis > 0, pis * np.log(pis), 0.0).sum(-1)
    return PolicyPath(
        objective=np.array([bandit.expected(p, bandit.reward) for p in pis]),
        regularised=np.array([bandit.objective(p) for p in pis]),
        entropy=ent @ bandit.rho,
        target_gap=kl @ bandit.rho,
        target_value=bandit.objective(target),
        policies=np.log(pis),
        config={
            **config,
            "lambda_star": star,
            "multipliers": lams.tolist(),
            "safety_excess": [bandit.expected(p, bandit.safety) - bandit.threshold for p in pis],
            "threshold": bandit.threshold,
            "beta": bandit.beta,
        },
    )


def mocan(bandit, iterations: int) -> PolicyPath:
    """MoCAN's one-shot dual (module docstring): K safeguarded Newton steps on D(lambda)."""
    K = check_iterations("mocan", iterations)
    lams = newton_multipliers(bandit, K)
    pis = np.stack([bandit.gibbs(lam) for lam in lams])  # (K+1, S, A)
    return _path(bandit, lams, pis, {"algorithm": "mocan"})


def primal_dual(bandit, iterations: int, eta: float = 1.0, step: float | None = None) -> PolicyPath:
    """The Lagrangian primal-dual baseline (module docstring): KL mirror ascent on pi with step
    eta, projected gradient descent on lambda with step ``step``; iterates pi_k, lambda_k.

    step None: ``1 / L = 4 beta / (max g - min g)^2``, L the smoothness of D (D'' = E Var(g) /
    beta <= (max g - min g)^2 / (4 beta), Popoviciu). A fixed step of 1 was measured too slow at
    beta = 2 (|lambda_3000 - lambda*| up to 2.6e-5 on the claim's bandits) -- D'' shrinks like
    1/beta -- and 1/L converges to 1e-13 at every beta of the claim."""
    K = check_iterations("safety-primal-dual", iterations)
    eta = check_number("safety-primal-dual", "eta", eta)
    if step is None:
        spread = float(bandit.safety.max() - bandit.safety.min())
        step = 4.0 * bandit.beta / max(spread, 1e-12) ** 2
    step = check_number("safety-primal-dual", "step", step)
    log_ref = np.log(bandit.ref)
    log_pi = log_ref.copy()  # (S, A): pi_0 = ref
    lam = 0.0
    lams, pis = [0.0], [bandit.ref.copy()]
    for _ in range(K):
        z = (log_pi / eta + bandit.beta * log_ref + bandit.reward + lam * bandit.safety) / (
            1.0 / eta + bandit.beta
        )
        log_pi = z - logsumexp(z, axis=1, keepdims=True)
        pi = np.exp(log_pi)
        lam = max(0.0, lam - step * (bandit.expected(pi, bandit.safety) - bandit.threshold))
        lams.append(lam)
        pis.append(pi)
    config = {"algorithm": "safety-primal-dual", "eta": eta, "step": step}
    return _path(bandit, np.array(lams), np.stack(pis), config)
