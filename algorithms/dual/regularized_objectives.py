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

Finite horizon (:mod:`~theorylab.algorithms.dual.occupancy_flow`): the same statements with the
stage-wise flow, ``d (H, S, A)``, ``d^O (H, S, A)`` (each stage a distribution),
``E_d[r] = sum_h E_{d_h}[r_h]``, ``D_f = sum_h D_f(d_h || d^O_h)``, the dual-V objective
``mu^T V_0 + alpha sum_h E_{d^O_h}[f*_p(delta_V(h, s, a) / alpha)]`` and ``J_LP = V*_0(mu)``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from theorylab.algorithms.dual.f_divergences import FDivergence
from theorylab.algorithms.dual.occupancy_flow import Flow, occupancy_flow
from theorylab.algorithms.planning.lp import OccupancyPolicy


@dataclass(frozen=True)
class RegularizedSolution(OccupancyPolicy):
    """A solution of the f-regularised occupancy problem, from either side.

    occupancy ``(S, A)`` discounted or ``(H, S, A)`` finite horizon (zero off the support of d^O),
    V ``(S,)`` or ``(H+1, S)`` (``V_H = 0``); ``primal_value = E_d[r] - alpha D_f(d || d^O)`` at
    ``occupancy``; ``dual_value`` the dual-V objective at ``V``; ``gap = dual_value -
    primal_value`` (derived, never stored); ``flow_residual`` the max-norm of the flow
    constraint's residual at ``occupancy``. ``gamma`` (discounted) or ``horizon`` (finite
    horizon). ``method``: "cvxpy-primal", "newton", "lbfgs" or "lp" (TV). ``info``: solver details
    (iterations, gradient norm, status, solver). Build one with :meth:`certify`, which computes
    the four certificate numbers from (d, V) itself.
    """

    occupancy: np.ndarray
    V: np.ndarray
    primal_value: float
    dual_value: float
    flow_residual: float
    divergence: str
    alpha: float
    gamma: float | None
    horizon: int | None
    method: str
    seconds: float
    info: dict = field(default_factory=dict)

    @classmethod
    def certify(
        cls,
        flow: Flow,
        occupancy: np.ndarray,
        V: np.ndarray,
        d_ref: np.ndarray,
        alpha: float,
        f: FDivergence,
        *,
        method: str,
        started: float,
        info: dict | None = None,
        domain_tol: float = 0.0,
    ) -> RegularizedSolution:
        """The one constructor: primal at d, dual-V at V and the flow residual of d, computed
        exactly; ``started`` is the ``time.perf_counter()`` of the solve's start.

        occupancy and d_ref in ``flow.d_shape``; V ``(m,)`` multipliers or V-shaped;
        domain_tol: see ``FDivergence.conjugate_nonneg`` (TV's multipliers read off an LP).
        """
        x = flow.multipliers(np.reshape(V, (-1, flow.S)) if flow.finite else V)
        d = np.asarray(occupancy, dtype=np.float64).reshape(flow.d_shape)
        return cls(
            occupancy=d,
            V=flow.values(x),
            primal_value=flow_primal_objective(flow, d, d_ref, alpha, f),
            dual_value=flow_dual_objective(flow, x, d_ref, alpha, f, domain_tol),
            flow_residual=float(np.max(np.abs(flow.residual(d)), initial=0.0)),
            divergence=f.name,
            alpha=alpha,
            gamma=flow.gamma,
            horizon=flow.horizon,
            method=method,
            seconds=time.perf_counter() - started,
            info=dict(info or {}),
        )

    @property
    def gap(self) -> float:
        """``dual_value - primal_value``: >= 0 for a flow-feasible d, 0 exactly at the optimum."""
        return self.dual_value - self.primal_value

    def summary(self) -> dict:
        return {
            "divergence": self.divergence,
            "alpha": self.alpha,
            "gamma": self.gamma,
            "horizon": self.horizon,
            "method": self.method,
            "primal": self.primal_value,
            "dual": self.dual_value,
            "gap": self.gap,
            "flow_residual": self.flow_residual,
            "seconds": self.seconds,
        }


# ------------------------------------------------------------------ on a Flow (the solvers' form)
def flow_primal_objective(
    flow: Flow, occupancy: np.ndarray, d_ref: np.ndarray, alpha: float, f: FDivergence
) -> float:
    """``E_d[r] - alpha D_f(d || d^O)``; occupancy, d_ref in ``flow.d_shape``."""
    d = np.asarray(occupancy, dtype=np.float64)
    return float(flow.r @ d.ravel() - alpha * f.divergence(d, d_ref))


def flow_dual_objective(
    flow: Flow, x: np.ndarray, d_ref: np.ndarray, alpha: float, f: FDivergence, domain_tol=0.0
) -> float:
    """``b^T x + alpha E_{d^O}[f*_p(delta / alpha)]``, x ``(m,)`` the multipliers."""
    delta = flow.r - flow.M @ x
    w = np.asarray(d_ref, dtype=np.float64).ravel()
    on = w > 0
    with np.errstate(over="ignore"):
        conj = f.conjugate_nonneg(delta[on] / alpha, domain_tol)
    return float(flow.b @ x + alpha * np.sum(w[on] * conj))


def flow_recover_occupancy(
    flow: Flow, x: np.ndarray, d_ref: np.ndarray, alpha: float, f: FDivergence
) -> np.ndarray:
    """``d = d^O max(0, (f')^{-1}(delta / alpha))`` in ``flow.d_shape`` (smooth f), x ``(m,)``."""
    delta = flow.r - flow.M @ x
    w = np.asarray(d_ref, dtype=np.float64).ravel()
    d = np.zeros_like(delta)
    on = w > 0
    d[on] = w[on] * f.ratio(delta[on] / alpha)
    return d.reshape(flow.d_shape)


# ------------------------------------------------------------------ on an MDP (public form)
# gamma=None on a model with a horizon means the finite-horizon problem (occupancy_flow).
def bellman_residual(mdp, V: np.ndarray, gamma: float | None) -> np.ndarray:
    """``delta_V``: V ``(S,)`` -> ``(S, A)`` discounted; V ``(H+1, S)`` -> ``(H, S, A)``."""
    return occupancy_flow(mdp, gamma).bellman_residual(V)


def primal_objective(
    mdp, occupancy: np.ndarray, d_ref: np.ndarray, alpha: float, f: FDivergence
) -> float:
    """``E_d[r] - alpha D_f(d || d^O)`` for occupancy, d_ref ``(S, A)`` or ``(H, S, A)`` (no
    feasibility check; the shape says which objective)."""
    d = np.asarray(occupancy, dtype=np.float64)
    if d.ndim == 3:
        r = np.stack([mdp.reward(h) for h in range(d.shape[0])])
    else:
        r = mdp.reward(0)
    return float(np.sum(d * r) - alpha * f.divergence(d, d_ref))


def dual_v_objective(
    mdp,
    V: np.ndarray,
    d_ref: np.ndarray,
    alpha: float,
    f: FDivergence,
    gamma: float | None,
    mu,
    domain_tol: float = 0.0,
) -> float:
    """``(1 - gamma) mu^T V + alpha E_{d^O}[f*_p(delta_V / alpha)]`` (finite horizon:
    ``mu^T V_0 + ...``). V ``(S,)`` / ``(H+1, S)``, d_ref ``(S, A)`` / ``(H, S, A)``, mu ``(S,)``;
    domain_tol: see ``FDivergence.conjugate_nonneg``."""
    flow = occupancy_flow(mdp, gamma, mu)
    return flow_dual_objective(flow, flow.multipliers(V), d_ref, alpha, f, domain_tol)


def recover_occupancy(
    mdp, V: np.ndarray, d_ref: np.ndarray, alpha: float, f: FDivergence, gamma: float | None
) -> np.ndarray:
    """``d(s, a) = d^O(s, a) max(0, (f')^{-1}(delta_V(s, a) / alpha))`` (smooth f)."""
    flow = occupancy_flow(mdp, gamma)
    return flow_recover_occupancy(flow, flow.multipliers(V), d_ref, alpha, f)
