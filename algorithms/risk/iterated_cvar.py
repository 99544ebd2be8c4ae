"""Iterated (nested) CVaR: exact dynamic programming and policy evaluation (Du, Wang, Huang 2023).

Du, Wang, Huang, "Provably Efficient Risk-Sensitive RL: Iterated CVaR and Worst Path", ICLR 2023
(arXiv:2206.02678), section 3, Eqs. (i)-(ii) and (2); theory.md section 4.3 [V].

    Q_h(s, a) = r_h(s, a) + CVaR^alpha_{s' ~ P_h(.|s,a)}( V_{h+1}(s') ),   V_H = 0 (0-based stages),
    V^pi_h(s) = Q^pi_h(s, pi_h(s))  (evaluation),     V*_h(s) = max_a Q*_h(s, a)  (optimality).

CVaR over the *next-state distribution* (lower tail, :mod:`.cvar`), computed exactly by sorting the
next-state values once per stage (and seed): O(S log S + S^2 A) per stage, dense. Worst path
(alpha -> 0, Du et al. Eq. (2)): ``Q_h = r_h + min_{s' in supp P_h(.|s,a)} V_{h+1}(s')`` with the
support ``{s' : P_h(s'|s,a) > 0}``; ``alpha = 0`` selects it here. ``alpha = 1`` is the
risk-neutral Bellman equation (a test checks it against backward induction to 1e-12).

Deviations and conventions:
* Du et al. assume deterministic rewards and a fixed initial state s_1. Here r_h is the mean
  reward (for a Bernoulli reward model the objective is defined with the mean reward, as the
  recursion has no place for reward noise), and the value at the initial distribution is
  ``sum_s mu0(s) V_1(s)`` (equal to V_1(s_1) when mu0 is a point mass, as in every family here).
* Stage-dependent P_h / r_h are allowed (the recursion is the same); sparse P is densified one
  stage at a time.
* Ties between actions go to the smallest index (values equal to 1e-12 relative).
"""

from __future__ import annotations

import time

import numpy as np

from theorylab.algorithms.planning.solution import Solution
from theorylab.algorithms.risk.static_cvar_planning import first_argmax
from theorylab.risk_measures import tail_masses


def _check_alpha(alpha: float) -> float:
    alpha = float(alpha)
    if not (0.0 <= alpha <= 1.0):
        raise ValueError(f"alpha must lie in [0, 1] (0 = worst path), got {alpha!r}")
    return alpha


def cvar_next(P: np.ndarray, V: np.ndarray, alpha: float) -> np.ndarray:
    """``CVaR^alpha_{s' ~ P[b, row]}(V[b, s'])`` for probability rows and value vectors.

    P: ``(R, S')`` or ``(B, R, S')`` probability rows (true or empirical; an all-zero row, an
        unvisited pair, gives 0 for alpha > 0 and +inf for alpha = 0);
    V: ``(B, S')`` values. alpha in [0, 1]; 0 means the worst path (min over the support).
    Returns ``(B, R)``.
    """
    V = np.asarray(V, dtype=np.float64)
    P = np.asarray(P, dtype=np.float64)
    B = V.shape[0]
    if P.ndim == 2:
        P = np.broadcast_to(P, (B, *P.shape))
    if alpha == 0.0:
        return np.where(P > 0, V[:, None, :], np.inf).min(axis=-1)
    order = np.argsort(V, axis=-1, kind="stable")  # (B, S'): one sort per seed, shared by all rows
    Vs = np.take_along_axis(V, order, axis=-1)
    Ps = np.take_along_axis(P, np.broadcast_to(order[:, None, :], P.shape), axis=-1)
    return (tail_masses(Ps, alpha) * Vs[:, None, :]).sum(axis=-1) / alpha


def _dense_stage(mdp, h: int) -> np.ndarray:
    M = mdp.P_flat(h)
    return M.toarray() if hasattr(M, "toarray") else np.asarray(M)


def iterated_cvar_planning(mdp, alpha: float) -> Solution:
    """Optimal iterated-CVaR values and a deterministic optimal policy (Du et al. Eq. (ii)).

    alpha in [0, 1] (0 = worst path, Eq. (2)). Returns a :class:`Solution` with ``V (H+1, S)``,
    ``Q (H, S, A)``, ``policy (H, S)`` and ``value = mu0 . V_0``.
    """
    alpha = _check_alpha(alpha)
    if mdp.horizon is None:
        raise ValueError(f"{mdp!r} has no finite horizon")
    t0 = time.perf_counter()
    H, S, A = mdp.horizon, mdp.S, mdp.A
    V = np.zeros((H + 1, S))
    Q = np.empty((H, S, A))
    policy = np.empty((H, S), dtype=np.int64)
    for h in range(H - 1, -1, -1):
        Q[h] = mdp.reward(h) + cvar_next(_dense_stage(mdp, h), V[h + 1][None], alpha)[0].reshape(
            S, A
        )
        policy[h] = first_argmax(Q[h], axis=1)
        V[h] = np.take_along_axis(Q[h], policy[h][:, None], axis=1)[:, 0]
    return Solution(
        V=V,
        Q=Q,
        policy=policy,
        value=float(V[0] @ mdp.mu0),
        info={
            "method": "iterated CVaR dynamic programming" if alpha > 0 else "worst path DP",
            "alpha": alpha,
            "iterations": H,
            "error_bound": 0.0,
            "seconds": time.perf_counter() - t0,
        },
    )


def evaluate_iterated_cvar(
    mdp, policies: np.ndarray, alpha: float, *, batched: bool | None = None
) -> np.ndarray:
    """Iterated-CVaR values of deterministic Markov policies (Du et al. Eq. (i)).

    policies: ``(B, H, S)`` int (batched) or ``(H, S)``. Returns ``V (B, H+1, S)`` or
    ``(H+1, S)`` with ``V[..., H, :] = 0``.
    """
    alpha = _check_alpha(alpha)
    pol = np.asarray(policies)
    if not np.issubdtype(pol.dtype, np.integer):
        raise ValueError("iterated-CVaR evaluation takes deterministic policies (int arrays)")
    if batched is None:
        batched = pol.ndim == 3
    pol = mdp.check_policy(pol, batched=batched)
    single = not batched
    if single:
        pol = pol[None]
    B, H, S, A = pol.shape[0], mdp.horizon, mdp.S, mdp.A
    V = np.zeros((B, H + 1, S))
    rows = np.arange(S)[None, None, :] * A + pol  # (B, H, S): flat row s*A + pi_h(s)
    for h in range(H - 1, -1, -1):
        P = _dense_stage(mdp, h)  # (S*A, S')
        Prow = P[rows[:, h]]  # (B, S, S'): the rows each seed's policy uses
        r = mdp.reward(h).reshape(-1)[rows[:, h]]  # (B, S)
        V[:, h] = r + cvar_next(Prow, V[:, h + 1], alpha)
    return V[0] if single else V


def iterated_cvar_values(mdp, policies: np.ndarray, alpha: float) -> np.ndarray:
    """``sum_s mu0(s) V^pi_1(s)`` under the iterated-CVaR objective for each policy, ``(B,)``."""
    V = evaluate_iterated_cvar(mdp, policies, alpha, batched=True)  # (B, H+1, S)
    return (V[:, 0] * mdp.mu0).sum(axis=-1)  # a row sum: the same bits alone or batched
