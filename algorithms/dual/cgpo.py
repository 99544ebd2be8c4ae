r"""CGPO with a mixture of judges on an exact bandit: the Lagrangian primal-dual twin.

Seed reference: ``seed-catalogue-002-004.md#F8`` (tier B). Paper: Xu et al., "The Perfect Blend:
Redefining RLHF with Mixture of Judges" (arXiv:2409.20370, 2024). What was read [V]: the catalogue
row only -- the abstract's "Mixture of Judges (MoJ) with cost-efficient constrained policy
optimization with stratification", "reaching a pareto-optimal point across an extremely large
number of objectives", "theoretical guarantees" (claimed, not stated). Search found no text of
the paper's optimisers (CRPG, CODPO, CRRAFT), so the update below is reconstructed [A] from the
catalogue's model: "a contextual bandit with several reward models and binary constraint judges;
constrained policy optimisation via a Lagrangian primal-dual method or an exact LP over response
distributions". Stratification (separate optimisation per task) is one task here.

Problem (:mod:`theorylab.mdps.judged_bandit`): max_pi E_rho[<pi, r> - beta KL(pi || ref)] s.t.
E_rho <pi, c_j> <= eps_j for every judge j (c_j in {0, 1}: judge j flags the response). The
Lagrangian L(pi, lambda) = E_rho[<pi, r - sum_j lambda_j c_j> - beta KL] + sum_j lambda_j eps_j is
maximised by pi_lambda ∝ ref exp((r - lambda^T c) / beta); the dual

    D(lambda) = E_rho[ beta log sum_a ref exp((r - lambda^T c) / beta) ] + lambda^T eps,
    dD/dlambda_j = eps_j - E_rho <pi_lambda, c_j>,

is convex and smooth (Hessian E Cov_{pi_lambda}(c) / beta, norm <= K / (4 beta)).

* :func:`cgpo_moj` -- the primal-dual iteration, exact expectations: a KL-mirror-ascent step on
  L(., lambda_k) (step eta) and a projected dual step lambda_{k+1} = [lambda_k + step (E <pi_{k+1},
  c> - eps)]_+ per judge (step 4 beta / K = 1 / L by default). Judge j's multiplier grows while its
  constraint is violated, which lowers the reward of the responses it flags: the MoJ's penalised
  reward r - lambda^T c. Its fixed point is a KKT point of the constrained problem, hence (convex
  problem, Slater: response 0 is flagged by no judge) the constrained optimum.
* :func:`optimal_multipliers` -- the stated limit, lambda* = argmin_{lambda >= 0} D by L-BFGS-B
  (scipy) to a gradient tolerance of 1e-13; pi* = pi_{lambda*}.

With every lambda_j frozen at 0 the iteration is plain KL-regularised RLHF, whose limit is the
Gibbs policy of r: on ``judged-bandit`` it reward-hacks (the control of claim
``cgpo-judges-constrained-optimum``; the mutation ``cgpo-judges-ignored``).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp

from theorylab.algorithms.policy_optimization.path import PolicyPath, check_iterations, check_number
from theorylab.algorithms.registry import register
from theorylab.mdps.kl_bandit import kl_rows


def dual_value_and_gradient(bandit, lams: np.ndarray) -> tuple[float, np.ndarray]:
    """D(lambda) and its gradient eps - E_rho <pi_lambda, c_j> ``(K,)``."""
    penalty = np.einsum("j,jsa->sa", lams, bandit.flags)
    z = np.log(bandit.ref) + (bandit.reward - penalty) / bandit.beta  # (S, A)
    value = float(bandit.rho @ (bandit.beta * logsumexp(z, axis=1))) + float(lams @ bandit.eps)
    return value, bandit.eps - bandit.violations(bandit.gibbs(lams))


def optimal_multipliers(bandit) -> np.ndarray:
    """lambda* = argmin_{lambda >= 0} D(lambda) ``(K,)`` (L-BFGS-B)."""
    res = minimize(
        lambda lam: dual_value_and_gradient(bandit, lam),
        np.zeros(bandit.K),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, None)] * bandit.K,
        options={"gtol": 1e-13, "ftol": 1e-15, "maxiter": 10_000},
    )
    return np.asarray(res.x, dtype=np.float64)


def dual_step(lams: np.ndarray, violation: np.ndarray, eps: np.ndarray, step: float) -> np.ndarray:
    """The judges' projected dual step [lambda + step (E <pi, c> - eps)]_+ ``(K,)``."""
    return np.maximum(0.0, lams + step * (violation - eps))


def cgpo_moj(bandit, iterations: int, eta: float = 1.0, step: float | None = None) -> PolicyPath:
    """K primal-dual iterations (module docstring); iterates pi_k, lambda_k from pi_0 = ref,
    lambda_0 = 0, scored against pi_{lambda*}."""
    T = check_iterations("cgpo-moj", iterations)
    eta = check_number("cgpo-moj", "eta", eta)
    step = check_number("cgpo-moj", "step", 4.0 * bandit.beta / bandit.K if step is None else step)
    log_ref = np.log(bandit.ref)
    log_pi = log_ref.copy()  # (S, A)
    lams = np.zeros(bandit.K)
    all_lams, pis = [lams], [bandit.ref.copy()]
    for _ in range(T):
        penalised = bandit.reward - np.einsum("j,jsa->sa", lams, bandit.flags)  # MoJ reward
        z = (log_pi / eta + bandit.beta * log_ref + penalised) / (1.0 / eta + bandit.beta)
        log_pi = z - logsumexp(z, axis=1, keepdims=True)
        pi = np.exp(log_pi)
        lams = dual_step(lams, bandit.violations(pi), bandit.eps, step)
        all_lams.append(lams)
        pis.append(pi)
    pis_a = np.stack(pis)  # (T+1, S, A)
    star = optimal_multipliers(bandit)
    target = bandit.gibbs(star)
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.where(pis_a > 0, pis_a * np.log(pis_a), 0.0).sum(-1)
    return PolicyPath(
        objective=np.array([bandit.expected(p, bandit.reward) for p in pis_a]),
        regularised=np.array([bandit.objective(p) for p in pis_a]),
        entropy=ent @ bandit.rho,
        target_gap=kl_rows(pis_a, target[None]) @ bandit.rho,
        target_value=bandit.objective(target),
        policies=np.log(pis_a),
        config={
            "algorithm": "cgpo-moj",
            "eta": eta,
            "step": step,
            "lambda_star": star.tolist(),
            "multipliers": np.stack(all_lams).tolist(),
            "violations": np.stack([bandit.violations(p) for p in pis_a]).tolist(),
            "eps": bandit.eps.tolist(),
            "beta": bandit.beta,
        },
    )


@register("cgpo-moj", kind="policy-optimization", problem="judged-bandit", papers=("002-004#F8",))
def run_cgpo_moj(problem, iterations, eta: float = 1.0, step: float | None = None):
    """CGPO with a mixture of judges (Xu et al. 2024; primal-dual twin [A]): KL mirror ascent on
    the judge-penalised reward, projected ascent on each judge's multiplier."""
    return cgpo_moj(problem, iterations, eta=eta, step=step)
