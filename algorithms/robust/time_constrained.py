r"""Time-constrained robust MDPs: an adversary whose parameter moves by a bounded step per step.

Seed row ``seed-catalogue-000.md#50`` (tier B): "Time-Constrained Robust MDPs" (the TC-RMDP
formulation; arXiv:2406.08395 [A for the number]).

What was read [V] (the abstract, through the catalogue row): robust MDPs beyond rectangularity,
with multifactorial, correlated and time-dependent disturbances; a time-constrained adversary
over parameterised dynamics; three algorithms using different levels of information about the
environment (not built).

Reconstructed [A] (the tabular DP the catalogue row describes, with the adversary's parameter
observed by the agent): a family P_psi on a grid of n (odd) kernels along a path through the
problem's kernel P at the middle index (:func:`parameter_family`); at every step, after the
agent's action, the adversary picks psi_t with |psi_t - psi_{t-1}| <= L (in grid steps), the
same psi_t for the whole kernel (correlated, non-rectangular); psi_0 is free. Robust
DP on the augmented state (s, psi_prev):

    V(s, j) = max_a r(s, a) + gamma min_{k : |k - j| <= L} P_k(.|s, a) . V(., k),
    V_TC(s) = min_j V(s, j).

Orderings (each checked in ``validations/claims/robust.py``): the (s, a)-rectangular robust
value over the rows {P_k(.|s, a)} <= V_TC <= the nominal optimum (the adversary may hold the
middle index);
V_TC is non-increasing in L; L >= n - 1 (no time constraint) gives the rectangular value, and
L = 0 (a static adversary the agent observes) gives min_k V*_{P_k}.
"""

from __future__ import annotations

import numpy as np

from theorylab.algorithms.planning.robust import iterate_to_fixed_point
from theorylab.algorithms.policy_optimization.path import PolicyPath
from theorylab.algorithms.registry import register
from theorylab.algorithms.robust.finite_sets import dynamic_robust_vi, perturbed_models

PAPERS = ("000#50",)


def parameter_family(mdp, levels: int, seed: int, spread: float = 0.8) -> np.ndarray:
    """(n, S, A, S), n odd: a path of kernels through the problem's kernel P at the middle index
    c = (n - 1) / 2, P_k = P + t (D - P) for k = c + t c (t in [0, 1]) and P + t (E - P) for
    k = c - t c, with D, E = (1 - spread) P + spread (Dirichlet(1) kernels)."""
    P, D, E = perturbed_models(mdp, 3, spread, seed)
    c = (levels - 1) // 2
    out = []
    for k in range(levels):
        t = (k - c) / c
        out.append(P + t * (D - P) if t >= 0 else P - t * (E - P))
    return np.stack(out)


def tc_backup(R: np.ndarray, family: np.ndarray, V: np.ndarray, L: int, gamma: float):
    """One sweep on (s, psi_prev): V (S, n) -> (V' (S, n), Q (S, n, A))."""
    n = family.shape[0]
    PV = np.einsum("ksat,tk->ksa", family, V)  # (n, S, A): P_k(.|s, a) . V(., k)
    Q = np.empty((R.shape[0], n, R.shape[1]))
    for j in range(n):
        lo, hi = max(0, j - L), min(n, j + L + 1)
        Q[:, j, :] = R + gamma * PV[lo:hi].min(axis=0)
    return Q.max(axis=2), Q


def tc_robust_vi(mdp, family: np.ndarray, L: int, tol: float = 1e-12, sweeps=None, record=None):
    """V (S, n) on the augmented state, V_TC (S,) = min over psi_prev, and the policy (S, n)."""
    g, R = mdp.gamma, mdp.reward(0)

    def backup(V):
        V_new, Q = tc_backup(R, family, V, int(L), g)
        if record is not None:
            record(V_new.min(axis=1), Q.argmax(axis=2))
        return V_new

    V0 = np.zeros((mdp.S, family.shape[0]))
    if sweeps is None:
        V, _ = iterate_to_fixed_point(backup, V0, g, tol)
    else:  # exactly `sweeps` backups
        V, _ = iterate_to_fixed_point(backup, V0, g, -1.0, int(sweeps))
    V, Q = tc_backup(R, family, V, int(L), g)
    return V, V.min(axis=1), Q.argmax(axis=2)


@register("tc-rmdp", kind="policy-optimization", problem="tabular-discounted", papers=PAPERS)
def tc_rmdp(problem, iterations, levels: int = 5, step: int = 1, family_seed: int = 0):
    """Time-constrained robust DP on (s, psi_prev) (module docstring); one sweep per iteration."""
    if (
        isinstance(levels, bool)
        or not isinstance(levels, (int, np.integer))
        or levels < 3
        or levels % 2 == 0
    ):
        raise ValueError(f"tc-rmdp: levels must be an odd integer >= 3, got {levels!r}")
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
        raise ValueError(f"tc-rmdp: step (L, in grid steps) must be an integer >= 0, got {step!r}")
    family = parameter_family(problem, int(levels), int(family_seed))
    values, pols = [], []

    def record(v, pol):
        values.append(float(v @ problem.mu0))
        pols.append(pol)

    tc_robust_vi(problem, family, int(step), sweeps=int(iterations), record=record)
    J = np.array(values)
    V_rect, _ = dynamic_robust_vi(problem, family)
    c = (int(levels) - 1) // 2
    V_nom, _ = dynamic_robust_vi(problem, family[c : c + 1])
    return PolicyPath(
        objective=J,
        regularised=np.full(J.size, float(V_rect @ problem.mu0)),
        entropy=np.zeros(J.size),
        target_gap=np.full(J.size, np.nan),
        target_value=float(V_nom @ problem.mu0),
        policies=np.stack(pols),  # (K, S, n): the action at (s, psi_prev)
        config={"levels": int(levels), "step": int(step), "gamma": float(problem.gamma)},
    )
