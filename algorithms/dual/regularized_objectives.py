r"""The f-regularised occupancy problem and its dual-V objective, evaluated exactly.

Reference: Sikchi, Zheng, Zhang, Niekum, "Dual RL", ICLR 2024 (arXiv 2302.08560), section 4
(the regularised primal "RL" problem and its dual-V form); theory-preference-dual-llm.md 6.2.

Regularised primal (d normalised: ``sum d = 1``, so ``E_d[r] = (1 - gamma) V^pi(mu)``):

    J(alpha) = max_{d >= 0, d << d^O}  E_d[r] - alpha D_f(d || d^O)
               s.t. sum_a d(s, a) = (1 - gamma) mu(s) + gamma sum_{s',a'} P(s|s', a') d(s', a')

dual-V (one multiplier V(s) per flow constraint, d >= 0 kept):

    min_V  (1 - gamma) mu^T V + alpha E_{d^O}[ f*_p(delta_V(s, a) / alpha) ],
    delta_V(s, a) = r(s, a) + gamma sum_{s'} P(s'|s, a) V(s') - V(s)

and primal recovery ``d*(s, a) = d^O(s, a) w(delta_{V*}(s, a) / alpha)``, ``w = (f*_p)'``.

Weak duality holds for any V and any feasible d (``E_d r - alpha D_f <= dual(V)`` by Fenchel-Young),
so ``dual(V) - primal(d)`` is a certificate: it is >= 0 whenever d is flow-feasible and 0 exactly
at the optimum. As alpha -> 0, ``0 <= J_LP - J(alpha) <= alpha D_f(d_LP || d^O)`` for every LP
optimum d_LP << d^O (plug d_LP into the primal; D_f >= 0 bounds the other side): the regularised
value converges to the LP value ``(1 - gamma) V*(mu)`` at rate O(alpha).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from theorylab.algorithms.dual.f_divergences import FDivergence


@dataclass
class RegularizedSolution:
    """A solution of the f-regularised occupancy problem, from either side.

    occupancy ``(S, A)`` (normalised; zero off the support of d^O), V ``(S,)``;
    ``primal_value = E_d[r] - alpha D_f(d || d^O)`` at ``occupancy``; ``dual_value`` the dual-V
    objective at ``V``; ``gap = dual_value - primal_value``; ``flow_residual`` the max-norm of the
    flow constraint's residual at ``occupancy``. ``method``: "cvxpy-primal", "newton", "lbfgs" or
    "lp" (TV). ``info``: solver details (iterations, gradient norm, status, solver).
    """

    occupancy: np.ndarray
    V: np.ndarray
    primal_value: float
    dual_value: float
    gap: float
    flow_residual: float
    divergence: str
    alpha: float
    gamma: float
    method: str
    seconds: float
    info: dict = field(default_factory=dict)

    @property
    def policy(self) -> np.ndarray:
        """``pi(a|s) = d(s, a) / sum_a' d(s, a')`` ``(S, A)`` (uniform where d(s, .) = 0)."""
        from theorylab.algorithms.planning.lp import policy_from_occupancy

        return policy_from_occupancy(self.occupancy)

    def summary(self) -> dict:
        return {
            "divergence": self.divergence,
            "alpha": self.alpha,
            "gamma": self.gamma,
            "method": self.method,
            "primal": self.primal_value,
            "dual": self.dual_value,
            "gap": self.gap,
            "flow_residual": self.flow_residual,
            "seconds": self.seconds,
        }


def bellman_residual(mdp, V: np.ndarray, gamma: float) -> np.ndarray:
    """``delta_V(s, a) = r(s, a) + gamma (P V)(s, a) - V(s)``: V ``(S,)`` -> ``(S, A)``."""
    V = np.asarray(V, dtype=np.float64)
    return mdp.reward(0) + gamma * mdp.expected_next(V, 0) - V[:, None]


def primal_objective(
    mdp, occupancy: np.ndarray, d_ref: np.ndarray, alpha: float, f: FDivergence
) -> float:
    """``E_d[r] - alpha D_f(d || d^O)`` for occupancy, d_ref ``(S, A)`` (no feasibility check)."""
    d = np.asarray(occupancy, dtype=np.float64)
    return float(np.sum(d * mdp.reward(0)) - alpha * f.divergence(d, d_ref))


def dual_v_objective(
    mdp,
    V: np.ndarray,
    d_ref: np.ndarray,
    alpha: float,
    f: FDivergence,
    gamma: float,
    mu,
    domain_tol: float = 0.0,
) -> float:
    """``(1 - gamma) mu^T V + alpha E_{d^O}[f*_p(delta_V / alpha)]``.

    V ``(S,)``, d_ref ``(S, A)``, mu ``(S,)``; domain_tol: see ``FDivergence.conjugate_nonneg``.
    """
    delta = bellman_residual(mdp, V, gamma)
    on = d_ref > 0
    with np.errstate(over="ignore"):
        conj = f.conjugate_nonneg(delta[on] / alpha, domain_tol)
    return float((1.0 - gamma) * np.dot(mu, V) + alpha * np.sum(d_ref[on] * conj))


def recover_occupancy(
    mdp, V: np.ndarray, d_ref: np.ndarray, alpha: float, f: FDivergence, gamma: float
) -> np.ndarray:
    """``d(s, a) = d^O(s, a) max(0, (f')^{-1}(delta_V(s, a) / alpha))`` ``(S, A)`` (smooth f)."""
    delta = bellman_residual(mdp, V, gamma)
    d = np.zeros_like(delta)
    on = d_ref > 0
    d[on] = d_ref[on] * f.ratio(delta[on] / alpha)
    return d
