r"""Pessimistic MLE over occupancy measures: Zhu, Jordan, Jiao (2023), Section 5 (MDPs with
trajectory comparisons, known transitions), with greedy-on-MLE beside it.

Paper: Zhu, Jordan, Jiao, "Principled RLHF from Pairwise or K-wise Comparisons", ICML 2023,
arXiv:2301.11270, Section 5. Card: docs/algorithms/preference-mle.md ("MDPs: Section 5").
Provenance: everything here is [M] (the reference, section 1.6): the section's text was not
readable; the construction is the bandit Algorithm 1 with psi in place of phi, as the reference
records it, and the bound is the same Theorem 3.2 form (C = 1 unless told).

Setting: a finite-horizon MDP with known transitions and stationary rewards r*(s, a) =
<phi(s, a), theta*> (one-hot features by default, d = S A; or a linear MDP's features);
comparisons of whole trajectories, P(tau1 > tau0) = sigma(<theta*, psi(tau1) - psi(tau0)>),
psi(tau) = sum_h phi(s_h, a_h) (data: :func:`theorylab.mdps.preference.sample_trajectory_pairs`).

    theta_hat = constrained BTL MLE on x_i = psi(tau1_i) - psi(tau0_i)   (mle.btl_mle, Theta_B)
    Sigma_D   = (1/n) sum_i x_i x_i^T,   M = Sigma_D + lambda I
    f         = C sqrt((d + log(1/delta)) / (gamma^2 n) + lambda B^2),
                gamma = 1/(2 + e^{-LB} + e^{LB}),  L = H max ||phi|| >= max_tau ||psi(tau)||
                (the bandit radius with psi's norm)
    u(d)      = sum_{h,s,a} d_h(s, a) phi(s, a) - v   (= E_{tau ~ pi} psi(tau) - v, linear in d)
    pi_PE     from  max_{d in occupancy polytope}  <theta_hat, u(d)> - f ||u(d)||_{M^{-1}}

The polytope is the finite-horizon flow LP (``theorylab.algorithms.planning.lp``): d >= 0,
sum_a d_0(s, a) = mu0(s), sum_a d_{h+1}(s, a) = sum_{s', a'} P_h(s | s', a') d_h(s', a').
The objective is concave, so this is a second-order cone program (cvxpy, Clarabel); the policy is
pi_h(a|s) = d_h(s, a) / sum_a d_h(s, a) (uniform where d_h(s, .) = 0), whose occupancy is d.
As in :mod:`~theorylab.algorithms.preference.pessimistic`, the confidence set is the ellipsoid
alone, so the inner minimum is in closed form (a lower bound on the paper's); on theta* in it,

    SubOpt(pi_PE) <= 2 f ||E_{pi*} psi - v||_{M^{-1}}          (``bound``, per seed)

Greedy contrast: the optimal policy (backward induction) for the reward <phi, theta_hat>.
Sub-optimality is exact: V*(mu0) - V^pi(mu0) with the true rewards, from the exact occupancy.

Finding (docs/algorithms/preference-mle.md): with L = H max ||phi|| the curvature gamma is
e^{-LB}-small, so the bound is vacuous at any n we can run (riverswim:S=3,H=3, one-hot, n = 3000:
bound about 6356 against a largest possible sub-optimality of 0.214) and the pessimistic policy
is the best-covered one; no claim is registered on it.

Deviations: rewards stationary (one theta); the constraint 1^T theta = 0 is used only for features
whose coordinate sum is the same at every (s, a) (then theta + t 1 is invisible to comparisons;
:func:`theorylab.mdps.preference.identifiable_features` refuses the others); B defaults to
sqrt(d), a valid norm bound for the centred theta* of rewards in [0, 1] with one-hot or simplex
features; v = 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from theorylab.algorithms.planning.lp import occupancy_measure, policy_from_occupancy
from theorylab.algorithms.preference.mle import MLEError, btl_mle, solve_clarabel
from theorylab.algorithms.preference.pessimistic import mle_radius
from theorylab.mdps.preference import TrajectoryPairs, identifiable_features


@dataclass
class PessimisticMDPResult:
    """Per-seed output (B seeds): theta_hat ``(B, d)``; policy and greedy ``(B, H, S, A)``;
    radius f; suboptimality, greedy_suboptimality, pessimistic_value, coverage and bound
    ``(B,)``; queries ``(B,)`` comparisons used."""

    theta_hat: np.ndarray
    policy: np.ndarray
    greedy: np.ndarray
    radius: float
    suboptimality: np.ndarray
    greedy_suboptimality: np.ndarray
    pessimistic_value: np.ndarray
    coverage: np.ndarray
    bound: np.ndarray
    queries: np.ndarray


def feature_expectation(mdp, policy, phi) -> np.ndarray:
    """E_{tau ~ pi} psi(tau) = sum_{h,s,a} d^pi_h(s, a) phi(s, a), exact: ``(d,)``."""
    return np.einsum("hsa,sad->d", occupancy_measure(mdp, policy), phi)


def policy_value(mdp, policy) -> float:
    """V^pi_0(mu0) with the true mean rewards, from the exact occupancy."""
    R = np.asarray(mdp.R, dtype=np.float64)
    R = np.broadcast_to(R, (mdp.horizon, *R.shape)) if R.ndim == 2 else R
    return float((occupancy_measure(mdp, policy) * R).sum())


def planned_policy(mdp, reward) -> np.ndarray:
    """The optimal deterministic policy ``(H, S)`` for the stationary reward ``(S, A)`` on the
    true transitions (backward induction; ties: the smallest action)."""
    H, S = mdp.horizon, mdp.S
    V = np.zeros(S)
    pol = np.empty((H, S), np.int64)
    for h in range(H - 1, -1, -1):
        Q = reward + mdp.expected_next(V, h)  # (S, A)
        pol[h] = Q.argmax(axis=1)
        V = Q.max(axis=1)
    return pol


def pessimistic_occupancy_policy(
    mdp, phi, theta_hat: np.ndarray, M: np.ndarray, radius: float
) -> tuple[np.ndarray, float]:
    """argmax over occupancies of <theta_hat, u(d)> - f ||u(d)||_{M^-1} (one seed), by cvxpy
    (Clarabel). Returns the policy ``(H, S, A)`` and the optimal objective value."""
    import cvxpy as cp

    H, S, A = mdp.horizon, mdp.S, mdp.A
    d = phi.shape[-1]
    Lc = np.linalg.cholesky(np.linalg.inv(M))  # ||u||_{M^-1} = ||Lc^T u||
    occ = [cp.Variable(S * A, nonneg=True) for _ in range(H)]
    E = np.kron(np.eye(S), np.ones((1, A)))  # (S, S A): sum over actions
    cons = [E @ occ[0] == np.asarray(mdp.mu0, dtype=np.float64)]
    for h in range(H - 1):
        P = mdp.P_flat(h)
        P = P.toarray() if hasattr(P, "toarray") else np.asarray(P)
        cons.append(E @ occ[h + 1] == P.T @ occ[h])
    Phi = phi.reshape(S * A, d)
    u = sum(Phi.T @ o for o in occ)
    obj = theta_hat @ u - radius * cp.norm(Lc.T @ u, 2)
    prob = cp.Problem(cp.Maximize(obj), cons)
    solve_clarabel(prob, "pessimistic occupancy policy", MLEError)
    dval = np.stack([o.value.reshape(S, A) for o in occ])  # (H, S, A)
    return policy_from_occupancy(dval), float(prob.value)


def pessimistic_objective(mdp, phi, policy, theta_hat, M, radius) -> float:
    """<theta_hat, u_pi> - f ||u_pi||_{M^-1} for a policy, from its exact occupancy."""
    u = feature_expectation(mdp, policy, phi)
    return float(theta_hat @ u - radius * math.sqrt(u @ np.linalg.solve(M, u)))


def fit_pessimistic_mle_mdp(
    mdp,
    data: TrajectoryPairs,
    phi,
    *,
    delta: float = 0.1,
    lam: float = 1e-3,
    C: float = 1.0,
    B: float | None = None,
    solver: str = "newton",
) -> PessimisticMDPResult:
    """Section 5's pessimistic MLE on every seed of ``data``, greedy beside it, the bound exact."""
    phi = identifiable_features(phi)
    if mdp.horizon is None or np.asarray(mdp.R).ndim != 2:
        raise MLEError(
            f"{mdp.name}: Section 5 here needs a finite horizon and stationary rewards (S, A)"
        )
    d, H = phi.shape[-1], mdp.horizon
    B = math.sqrt(d) if B is None else float(B)
    X = data.differences(phi)  # (n seeds, n, d)
    theta_hat = btl_mle(X, data.y, B, solver=solver)  # (n seeds, d)
    Sigma = data.covariance(phi)
    L = H * float(np.linalg.norm(phi, axis=-1).max())
    f = mle_radius(data.n, d, delta, lam, B, L, C)
    Mats = Sigma + lam * np.eye(d)
    R = np.asarray(mdp.R, dtype=np.float64)
    opt = planned_policy(mdp, R)
    v_star = policy_value(mdp, opt)
    u_star = feature_expectation(mdp, opt, phi)
    nb = theta_hat.shape[0]
    pols = np.empty((nb, H, mdp.S, mdp.A))
    greedy = np.empty((nb, H, mdp.S, mdp.A))
    jhat, sub, gsub, cov = (np.empty(nb) for _ in range(4))
    for b in range(nb):
        pols[b], _ = pessimistic_occupancy_policy(mdp, phi, theta_hat[b], Mats[b], f)
        jhat[b] = pessimistic_objective(mdp, phi, pols[b], theta_hat[b], Mats[b], f)
        g = planned_policy(mdp, phi @ theta_hat[b])
        greedy[b] = np.eye(mdp.A)[g]
        sub[b] = v_star - policy_value(mdp, pols[b])
        gsub[b] = v_star - policy_value(mdp, g)
        cov[b] = math.sqrt(u_star @ np.linalg.solve(Mats[b], u_star))
    return PessimisticMDPResult(
        theta_hat, pols, greedy, f, sub, gsub, jhat, cov, 2 * f * cov, data.queries.copy()
    )
