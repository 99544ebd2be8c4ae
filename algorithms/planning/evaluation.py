"""Exact policy evaluation, batched over many policies at once.

Finite horizon (deterministic or stochastic, stage-dependent policies):

    V^pi_H = 0,   Q^pi_h = r_h + P_h V^pi_{h+1},   V^pi_h(s) = sum_a pi_h(a|s) Q^pi_h(s, a).

All B policies share one sparse/dense product per stage: ``P_h @ V.T`` with ``V (B, S)``, so the
cost is O(H * nnz(P) * B) with BLAS (dense) or a single CSR-times-dense-block product (sparse).
This is what exact regret calls every episode.

Discounted: V^pi = (I - gamma P_pi)^{-1} r_pi, solved exactly with a (sparse) linear solve.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from theorylab.backends import get_backend


def evaluate_policies(
    mdp, policies: np.ndarray, *, batched: bool | None = None, backend="numpy"
) -> np.ndarray:
    """Exact values of one or many policies on a finite-horizon MDP.

    policies: deterministic ``(B, H, S)`` int / stochastic ``(B, H, S, A)`` (batched), or a single
        ``(H, S)`` / ``(H, S, A)`` policy; stationary forms ``(B, S)`` etc. are broadcast over h.
    batched: whether the first axis is the policy axis (inferred from ndim when None).
    backend: a :mod:`theorylab.backends` name or Backend. "numpy" (default) is the recursion
        below, operation for operation; "numba" evaluates deterministic policies in one compiled
        pass (the policy's row of each state, or every row once per block of 32 seeds on small
        models; no (B, S, A) temporary) and equals numpy bit for bit on sparse models (to
        round-off on dense ones); "torch" runs on its device.
    Returns ``V (B, H+1, S)`` (or ``(H+1, S)`` for a single policy) with ``V[..., H, :] = 0``
    (in the backend's dtype: float64 unless a float32 backend is passed).
    """
    pol = np.asarray(policies)
    if mdp.horizon is None:
        raise ValueError(f"{mdp!r} has no horizon: use evaluate_discounted")
    if batched is None:  # full forms only; stationary batched forms need batched=True
        batched = pol.ndim == (3 if np.issubdtype(pol.dtype, np.integer) else 4)
    pol = mdp.check_policy(pol, batched=batched)
    single = not batched
    if single:
        pol = pol[None]
    # The numpy backend runs (theorylab.backends.base.Backend.evaluate_policies), h = H-1 .. 0:
    #     Q = mdp.reward(h)[None] + mdp.expected_next(V[:, h + 1], h)      # (B, S, A)
    #     V[:, h] = Q[b, s, pi_h(s)]   or   sum_a pi_h(a|s) Q[b, s, a]
    bk = get_backend(backend)
    V = bk.to_numpy(bk.evaluate_policies(bk.model(mdp), pol))  # (B, H+1, S)
    return V[0] if single else V


def policy_values(
    mdp, policies: np.ndarray, *, batched: bool | None = None, backend="numpy"
) -> np.ndarray:
    """``V^pi_1(mu0)`` for each policy: ``(B,)`` (or a 0-d array for one policy). ``batched`` is
    inferred as in :func:`evaluate_policies` when None; ``backend`` as there."""
    V = evaluate_policies(mdp, policies, batched=batched, backend=backend)
    return V[..., 0, :] @ mdp.mu0


def evaluate_discounted(
    mdp, policy: np.ndarray, *, gamma: float | None = None, reward: np.ndarray | None = None
) -> np.ndarray:
    """Exact discounted value ``V^pi (S,)`` of a stationary policy ``(S,)`` int or ``(S, A)``.

    Solves ``(I - gamma P_pi) V = r_pi`` (sparse LU for sparse models). ``reward (S, A)``
    replaces the model's mean rewards (a regularised reward such as ``r - tau log(pi / ref)``,
    which need not lie in [0, 1]).
    """
    g = gamma if gamma is not None else mdp.gamma
    if g is None:
        raise ValueError(f"{mdp!r} has no discount: pass gamma=")
    if mdp.stage_dependent or mdp.reward_stage_dependent:
        raise ValueError("discounted evaluation needs a stationary (not stage-dependent) MDP")
    S, A = mdp.S, mdp.A
    pol = np.asarray(policy)
    if np.issubdtype(pol.dtype, np.integer):
        if pol.shape != (S,):
            raise ValueError(f"stationary deterministic policy must have shape ({S},)")
        pi = np.zeros((S, A))
        pi[np.arange(S), pol] = 1.0
    else:
        pi = pol.astype(np.float64)
        if pi.shape != (S, A):
            raise ValueError(f"stationary stochastic policy must have shape ({S}, {A})")
    M = mdp.P_flat(0)
    # P_pi[s, s'] = sum_a pi(a|s) P(s'|s,a) = Pi @ P_flat with Pi (S, S*A) block-diagonal in s.
    Pi = sp.csr_array((pi.ravel(), np.arange(S * A), np.arange(0, S * A + 1, A)), shape=(S, S * A))
    R = mdp.reward(0) if reward is None else np.asarray(reward, dtype=np.float64)
    if R.shape != (S, A):
        raise ValueError(f"reward must have shape ({S}, {A}), got {R.shape}")
    r_pi = np.where(pi > 0, pi * R, 0.0).sum(axis=1)  # 0 * (-inf) log-ratios count as 0
    if mdp.sparse:
        P_pi = sp.csc_array(Pi @ M)
        return spla.spsolve(sp.eye(S, format="csc") - g * P_pi, r_pi)
    P_pi = Pi @ M
    return np.linalg.solve(np.eye(S) - g * P_pi, r_pi)
