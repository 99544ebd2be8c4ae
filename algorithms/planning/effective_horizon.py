"""The effective horizon: k steps of value iteration on Q^{pi_rand}, and the smallest k that works.

Seed reference: ``seed-catalogue-000.md#4`` (rows 000#4, 001#10, 002-004#A3). Laidlaw, Russell
and Dragan, "Bridging RL Theory and Practice with the Effective Horizon" (NeurIPS 2023) and
"The Effective Horizon Explains Deep RL Performance in Stochastic Environments" (ICLR 2024).

Definition used (reconstructed [A] from the catalogue rows, which paraphrase the abstract; the
paper's text was not read here): with Q^1 = Q^{pi_rand} (the exact Q of the uniformly random
policy, a finite-horizon policy evaluation) and Q^{j+1}_t(s, a) = r(s, a) + E_{s'} max_a'
Q^j_{t+1}(s', a') (the Bellman optimality operator; Q_H = 0), the MDP is *k-QVI-solvable* when
every policy greedy with respect to Q^k (every tie-break) is optimal. The effective horizon used
here is the smallest such k, k* <= H (Q^H = Q* always works). The paper's stochastic effective
horizon adds a log_A of the sample count needed to estimate Q^1 (k + log_A m_k); that term is
not computed here.

"Every greedy policy is optimal" is checked exactly: the forward set of (t, s) reachable from
mu0 playing any greedy action of Q^k is computed, and there every greedy action must have
Q*_t(s, a) = V*_t(s) (within ``tol``). If some greedy policy reaches (t, s) and a greedy action
there is suboptimal, switching to it at (t, s) loses value, so the test is exact both ways
(the brute-force enumeration of all greedy deterministic policies in tests/test_sqirl.py is the
independent answer).
"""

from __future__ import annotations

import numpy as np


def random_policy_q(mdp) -> np.ndarray:
    """Q^{pi_rand} ``(H, S, A)`` of the uniformly random policy, by backward recursion."""
    H = _horizon(mdp)
    Q = np.empty((H, mdp.S, mdp.A))  # (H, S, A)
    V = np.zeros(mdp.S)  # (S,) V_{t+1}
    for t in range(H - 1, -1, -1):
        Q[t] = mdp.reward(t) + mdp.expected_next(V, t)
        V = Q[t].mean(axis=1)
    return Q


def qvi_iterate(mdp, k: int, Q1: np.ndarray | None = None) -> np.ndarray:
    """Q^k ``(H, S, A)``: k - 1 Bellman optimality backups applied to Q^1 = Q^{pi_rand}."""
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"k must be an integer >= 1, got k={k!r}")
    H = _horizon(mdp)
    Q = random_policy_q(mdp) if Q1 is None else np.asarray(Q1, dtype=float)  # (H, S, A)
    for _ in range(int(k) - 1):
        new = np.empty_like(Q)
        for t in range(H):
            nxt = Q[t + 1].max(axis=1) if t + 1 < H else np.zeros(mdp.S)  # (S,)
            new[t] = mdp.reward(t) + mdp.expected_next(nxt, t)
        Q = new
    return Q


def greedy_sets(Q: np.ndarray, tol: float = 1e-12) -> np.ndarray:
    """Boolean ``(H, S, A)``: the actions within ``tol`` of the maximum of ``Q (H, S, A)``."""
    return Q >= Q.max(axis=-1, keepdims=True) - tol


def all_greedy_optimal(mdp, Q: np.ndarray, tol: float = 1e-9) -> bool:
    """Whether every policy greedy w.r.t. ``Q (H, S, A)`` (any tie-break) is optimal from mu0."""
    from theorylab.algorithms.planning.finite_horizon import backward_induction

    sol = backward_induction(mdp)
    H = _horizon(mdp)
    greedy = greedy_sets(Q)  # (H, S, A)
    optimal = sol.Q >= sol.V[:H, :, None] - tol  # (H, S, A)
    reach = np.asarray(mdp.mu0) > 0  # (S,) reachable at stage t under some greedy policy
    P = mdp.dense_P()
    for t in range(H):
        if np.any(greedy[t][reach] & ~optimal[t][reach]):
            return False
        if t + 1 < H:
            Pt = P[t] if P.ndim == 4 else P  # (S, A, S)
            reach = (Pt * (greedy[t] & reach[:, None])[:, :, None]).sum(axis=(0, 1)) > 0
    return True


def effective_horizon(mdp, tol: float = 1e-9) -> int:
    """k*: the smallest k >= 1 with every greedy policy of Q^k optimal (<= H; see the module)."""
    H = _horizon(mdp)
    Q = random_policy_q(mdp)  # Q^1
    for k in range(1, H + 1):
        if all_greedy_optimal(mdp, Q, tol):
            return k
        Q = qvi_iterate(mdp, 2, Q1=Q)  # one more backup
    raise AssertionError(f"Q^H = Q* must be solvable; {mdp!r} gave no k <= H={H}")


def _horizon(mdp) -> int:
    if getattr(mdp, "gamma", None) is not None or mdp.horizon is None:
        raise ValueError(
            f"the effective horizon is defined here for finite-horizon, undiscounted MDPs; "
            f"{mdp!r} has horizon={mdp.horizon}, gamma={getattr(mdp, 'gamma', None)}"
        )
    return int(mdp.horizon)
