"""The feasible reward set of a finite-horizon MDP and a deterministic expert, exactly (seed row
001#2, Metelli, Lazzati & Restelli, ICML 2023; see ``us_irl.py`` for what was read).

The feasible set ``R_p = {r in [-1, 1]^{H x S x A}: the expert is optimal for r under p at every
stage and state}``. Its explicit form [A, the form of Metelli et al. 2021 and Lindner et al.
2022 that the paper builds on]: r is feasible iff there are ``V (H + 1, S)`` with
``V_{H+1} = 0`` and ``zeta (H, S, A) >= 0`` with ``r_h(s, a) = -zeta_h(s, a) 1{a != pi_h(s)} +
V_h(s) - p_h(s, a) . V_{h+1}``: the expert's actions have zero advantage, the others <= 0.

Three independent membership tests, written differently:

* :func:`is_feasible` -- backward induction of the expert's value, then every advantage <= 0;
* :func:`is_feasible_lp` -- an LP in ``(V, zeta)`` for the explicit form (no value iteration);
* :func:`is_feasible_by_enumeration` -- every deterministic Markov policy's value (A^{HS} of
  them, tiny problems only): the expert's value equals the best at every stage and state.

:func:`distance_to_set` is the exact L-infinity distance ``min_{r' in R_p} max |r - r'|`` by an
LP (HiGHS); the Hausdorff distance between two sets is a max of such distances over one set,
and :func:`hausdorff_lower` brackets it from below by two probe rewards (the exact Hausdorff
distance between two polytopes is a maximisation of a convex function; not computed here);
:func:`sign_probe_lower` by rewards chosen against the estimation error (the S term).
"""

from __future__ import annotations

import itertools

import numpy as np
import scipy.sparse as sps
from scipy.optimize import linprog


def expert_values(p: np.ndarray, expert: np.ndarray, reward: np.ndarray) -> np.ndarray:
    """``(H + 1, S)`` the expert's value ``V_h(s)`` under ``p (H, S, A, S)``, ``reward (H, S,
    A)``, ``expert (H, S)``; ``V_{H+1} = 0`` (row H)."""
    H, S, _, _ = p.shape
    V = np.zeros((H + 1, S))
    idx = np.arange(S)
    for h in range(H - 1, -1, -1):
        a = expert[h]
        V[h] = reward[h, idx, a] + p[h, idx, a] @ V[h + 1]
    return V


def advantages(p: np.ndarray, expert: np.ndarray, reward: np.ndarray) -> np.ndarray:
    """``(H, S, A)`` the expert's advantage ``Q_h(s, a) - V_h(s)``."""
    V = expert_values(p, expert, reward)
    return reward + np.einsum("hsat,ht->hsa", p, V[1:]) - V[:-1, :, None]


def is_feasible(p, expert, reward, tol: float = 1e-9) -> bool:
    """The reward is in ``[-1, 1]`` and every advantage of the expert is <= 0 (to ``tol``)."""
    reward = np.asarray(reward, dtype=float)
    if np.abs(reward).max() > 1.0 + tol:
        return False
    return bool(advantages(p, expert, reward).max() <= tol)


def _explicit_form(p: np.ndarray, expert: np.ndarray):
    """The sparse map ``(V_1..V_H, zeta) -> r``: ``M (HSA, HS + HSA)`` and the variables' bounds
    (V free, zeta >= 0 on the expert's complement, = 0 on its actions)."""
    H, S, A, _ = p.shape
    n_v, n_r = H * S, H * S * A
    rows = np.arange(n_r)
    h, s, a = np.unravel_index(rows, (H, S, A))
    V_part = sps.csr_matrix((np.ones(n_r), (rows, h * S + s)), shape=(n_r, n_v))
    nxt = h < H - 1
    r_i = np.repeat(rows[nxt], S)
    c_i = ((h[nxt] + 1) * S)[:, None] + np.arange(S)
    vals = -p[h[nxt], s[nxt], a[nxt]]  # (k, S)
    V_part = V_part + sps.csr_matrix((vals.ravel(), (r_i, c_i.ravel())), shape=(n_r, n_v))
    M = sps.hstack([V_part, -sps.identity(n_r)], format="csr")
    is_expert = a == expert[h, s]
    bounds = [(None, None)] * n_v + [(0.0, 0.0) if e else (0.0, None) for e in is_expert]
    return M, bounds


def is_feasible_lp(p, expert, reward, tol: float = 1e-7) -> bool:
    """Membership by the explicit form: the LP ``M (V, zeta) = r, zeta >= 0`` is feasible, and
    r is in the box."""
    reward = np.asarray(reward, dtype=float)
    if np.abs(reward).max() > 1.0 + tol:
        return False
    M, bounds = _explicit_form(p, expert)
    n = M.shape[1]
    # minimise the total equality residual e+ + e- (zero iff the explicit form holds)
    m = M.shape[0]
    A_eq = sps.hstack([M, sps.identity(m), -sps.identity(m)], format="csr")
    res = linprog(np.r_[np.zeros(n), np.ones(2 * m)], A_eq=A_eq, b_eq=reward.ravel(),
                  bounds=bounds + [(0.0, None)] * (2 * m), method="highs")  # fmt: skip
    if res.status != 0:
        raise RuntimeError(f"is_feasible_lp: HiGHS failed ({res.message})")
    return bool(res.fun <= tol)


def is_feasible_by_enumeration(p, expert, reward, tol: float = 1e-9) -> bool:
    """Membership by enumerating every deterministic Markov policy (``A^{HS}`` of them; refuses
    more than 2^16): the expert's value equals the best value at every stage and state."""
    reward = np.asarray(reward, dtype=float)
    H, S, A, _ = p.shape
    if A ** (H * S) > 2**16:
        raise ValueError(f"is_feasible_by_enumeration: A^(HS) = {A}^{H * S} policies > 2^16")
    if np.abs(reward).max() > 1.0 + tol:
        return False
    best = np.full((H, S), -np.inf)
    for flat in itertools.product(range(A), repeat=H * S):
        best = np.maximum(best, expert_values(p, np.reshape(flat, (H, S)), reward)[:-1])
    return bool((best - expert_values(p, expert, reward)[:-1]).max() <= tol)


def distance_to_set(reward: np.ndarray, p: np.ndarray, expert: np.ndarray) -> float:
    """``min_{r' in R_p} max_{h,s,a} |reward - r'|`` exactly, by one LP over ``(V, zeta, t)``:
    ``|M (V, zeta) - reward| <= t``, ``-1 <= M (V, zeta) <= 1``. At most 1 (0 is in R_p)."""
    M, bounds = _explicit_form(p, expert)
    m, n = M.shape
    ones = sps.csr_matrix(np.ones((m, 1)))
    zero = sps.csr_matrix((m, 1))
    A_ub = sps.vstack([sps.hstack([M, -ones]), sps.hstack([-M, -ones]),
                       sps.hstack([M, zero]), sps.hstack([-M, zero])], format="csr")  # fmt: skip
    r = np.asarray(reward, dtype=float).ravel()
    b_ub = np.r_[r, -r, np.ones(m), np.ones(m)]
    c = np.r_[np.zeros(n), 1.0]
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=bounds + [(0.0, None)], method="highs")
    if res.status != 0:
        raise RuntimeError(f"distance_to_set: HiGHS failed ({res.message})")
    return float(res.fun)


def coupled_reward(p, expert, reward, p_other) -> np.ndarray:
    """``(H, S, A)`` the reward with the same explicit-form parameters ``(V, zeta)`` as
    ``reward`` under p, mapped through ``p_other``: ``reward + (p - p_other) V_{h+1}``. It is in
    ``R_{p_other}`` when it stays in the box."""
    V = expert_values(p, expert, reward)
    return reward + np.einsum("hsat,ht->hsa", p - p_other, V[1:])


def hausdorff_lower(reward, p, expert, p_hat, probes: int = 2) -> float:
    """A lower bound on the Hausdorff distance between ``R_p`` and ``R_{p_hat}``: the largest of
    the exact distances ``d(reward, R_{p_hat})`` (reward in R_p), ``d(r', R_p)`` for r' the
    coupled image of ``reward`` in ``R_{p_hat}`` clipped to the box (counted only when it is
    still in ``R_{p_hat}``, checked) and :func:`sign_probe_lower` with ``probes`` probes."""
    d1 = max(distance_to_set(reward, p_hat, expert), sign_probe_lower(p, expert, p_hat, probes))
    r2 = np.clip(coupled_reward(p, expert, reward, p_hat), -1.0, 1.0)
    if not is_feasible(p_hat, expert, r2, tol=1e-9):
        return d1
    return max(d1, distance_to_set(r2, p, expert))


def sign_probe_lower(p, expert, p_hat, probes: int = 3) -> float:
    """A lower bound on ``sup_{r in R_p} d(r, R_{p_hat})`` from rewards chosen against the
    estimation error. For a non-expert triple (h, s, a), h < H - 1, let ``w = (p_hat - p)_h(s,
    a) - (p_hat - p)_h(s, pi_h(s))`` (how much better a looks than the expert's action under
    p_hat, per successor). For the ``probes`` triples of largest ``||w||_1``: the reward
    ``sign(w_j)`` on every absorbing state j (every action keeps it, at every stage) and 0
    elsewhere, when it is in R_p (checked), and its exact distance to ``R_{p_hat}`` (an LP).
    Its successor values make a look better than the expert by ``(H - h - 1) ||w||_1 ~ H
    sqrt(S / n)``: the S term of the rate. 0 when no probe is feasible."""
    H, S, A, _ = p.shape
    idx = np.arange(S)
    absorbing = np.all(p[:, idx, :, idx] == 1.0, axis=(1, 2))  # (S, H, A) -> (S,)
    err = p_hat - p  # (H, S, A, S)
    w = err - np.take_along_axis(err, expert[:, :, None, None], axis=2)  # (H, S, A, S)
    l1 = np.abs(w).sum(axis=-1)[: H - 1]  # (H - 1, S, A); 0 on the expert's actions
    best = 0.0
    if not absorbing.any():
        return best
    for flat in np.argsort(l1, axis=None)[::-1][:probes]:
        h, s, a = np.unravel_index(flat, l1.shape)
        sign = np.where(w[h, s, a] >= 0.0, 1.0, -1.0)  # (S,)
        r = np.zeros((H, S, A))
        r[:, absorbing, :] = sign[absorbing][None, :, None]
        if is_feasible(p, expert, r):
            best = max(best, distance_to_set(r, p_hat, expert))
    return best
