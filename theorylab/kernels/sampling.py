"""Inverse-CDF sampling of next states from rows of a transition matrix, vectorised over draws.

The one rule every sampler in theorylab follows (``TabularMDP.rollout``, the numpy backend, and
the numba and torch backends, which are tested to return the same integers): the next state of
row r with uniform u is the first state whose within-row cumulative probability exceeds u,
clamped to the row's last positive entry, so a cumulative sum that rounds below 1 can never
return a zero-probability state.

* :func:`inverse_cdf_dense`: rows given densely ``(n, S)``; a count of ``cdf <= u``.
* :func:`inverse_cdf_csr`: rows of a CSR matrix, searched within their slice by a vectorised
  bisection (log2 of the longest row's length steps), so nothing is densified.
* :func:`draws_per_row`: n independent draws from each row of an ``(R, Y)`` table of
  non-negative weights (the token-tree twins' responses, roll-outs and reward atoms).
* :func:`sample_episodes`: whole episodes from per-seed uniforms, the loop that
  ``TabularMDP.rollout`` and the numpy backend share (initial state and a stochastic policy's
  action by the same clamped inverse CDF).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def inverse_cdf_dense(P_rows: np.ndarray, u: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Next states ``(n,)`` int64 of dense rows ``P_rows (n, S)`` for uniforms ``u (n,)``.

    last: ``(n,)`` column of each row's last positive entry (the clamp)."""
    cdf = np.cumsum(P_rows, axis=1)  # (n, S)
    return np.minimum((cdf <= u[:, None]).sum(axis=1), last)


def draws_per_row(rng: np.random.Generator, weights: np.ndarray, n: int) -> np.ndarray:
    """``(R, n)`` int64: n draws from each row of ``weights (R, Y)`` (non-negative, each row with
    a positive entry; rows are normalised by their total), by the clamped inverse CDF above with
    ``u ~ U[0, total)``; the uniforms are one ``rng.random((R, n))`` call."""
    cum = np.cumsum(weights, axis=1)  # (R, Y)
    u = rng.random((weights.shape[0], n)) * cum[:, -1:]  # (R, n)
    last = weights.shape[1] - 1 - np.argmax(weights[:, ::-1] > 0, axis=1)  # (R,)
    return np.minimum((cum[:, None, :] <= u[:, :, None]).sum(-1), last[:, None])


def inverse_cdf_csr(
    indptr: np.ndarray,
    indices: np.ndarray,
    cum: np.ndarray,
    rows: np.ndarray,
    u: np.ndarray,
    last: np.ndarray,
) -> np.ndarray:
    """Next states ``(n,)`` int64 of CSR rows ``rows (n,)`` for uniforms ``u (n,)``.

    indptr, indices: the CSR arrays; cum: ``(nnz,)`` within-row cumulative sums of the data
    (:func:`theorylab.kernels.csr.row_cumsum`); last: ``(n,)`` storage position of each row's
    last positive entry (stored zeros at a row's end are skipped)."""
    lo = indptr[rows].astype(np.int64)
    hi = indptr[rows + 1].astype(np.int64) - 1
    while True:  # first j in [lo, hi] with cum[j] > u (log2(max row nnz) iterations)
        active = lo < hi
        if not active.any():
            break
        mid = (lo + hi) // 2
        go_left = cum[mid] > u
        hi = np.where(active & go_left, mid, hi)
        lo = np.where(active & ~go_left, mid + 1, lo)
    return indices[np.minimum(lo, last)].astype(np.int64)


def sample_episodes(
    mu0: np.ndarray,
    A: int,
    policies: np.ndarray,
    U: np.ndarray,
    T: int,
    horizon: int | None,
    mean_reward: Callable[[int], np.ndarray],
    bernoulli: bool,
    sample_next: Callable[[np.ndarray, np.ndarray, int], np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """B episodes of T steps from per-seed uniforms ``U (B, 1 + 3T)``: ``U[:, 0]`` draws the
    initial state from ``mu0 (S,)``; step t uses ``U[:, 1+3t]`` (the action of a stochastic
    policy), ``U[:, 2+3t]`` (the transition) and ``U[:, 3+3t]`` (a Bernoulli reward).

    policies: deterministic ``(B, Hp, S)`` int or stochastic ``(B, Hp, S, A)`` (stage
    ``min(t, Hp - 1)`` at step t); horizon: H (model stage ``min(t, H - 1)`` at step t) or None
    (stage 0 throughout); mean_reward(h): ``(S, A)`` mean rewards of stage h; bernoulli: pay
    ``1[u < mean]`` instead of the mean; sample_next(rows, u, h): next states ``(B,)`` of the
    flat rows ``s*A + a``. Returns states, actions, rewards, next_states, each ``(B, T)``.
    """
    B = policies.shape[0]
    stochastic = policies.ndim == 4
    n_pol_stages = policies.shape[1]
    seeds = np.arange(B)
    last_mu0 = mu0.shape[0] - 1 - int(np.argmax(mu0[::-1] > 0))
    s = np.minimum((np.cumsum(mu0)[None, :] <= U[:, :1]).sum(axis=1), last_mu0).astype(np.int64)
    states = np.empty((B, T), np.int64)
    actions = np.empty((B, T), np.int64)
    rewards = np.empty((B, T), np.float64)
    nexts = np.empty((B, T), np.int64)
    for t in range(T):
        hp = min(t, n_pol_stages - 1)
        ua, ut, ur = U[:, 1 + 3 * t], U[:, 2 + 3 * t], U[:, 3 + 3 * t]
        if stochastic:  # never a zero-probability action: clamp to the last positive one
            prob = policies[seeds, hp, s]  # (B, A)
            cdf = np.cumsum(prob, axis=1)
            last = A - 1 - np.argmax(prob[:, ::-1] > 0, axis=1)
            a = np.minimum((cdf <= ua[:, None]).sum(axis=1), last)
        else:
            a = policies[seeds, hp, s]
        h = min(t, horizon - 1) if horizon is not None else 0
        mean = mean_reward(h)[s, a]
        r = (ur < mean).astype(np.float64) if bernoulli else mean
        s_next = sample_next(s * A + a, ut, h)
        states[:, t], actions[:, t], rewards[:, t], nexts[:, t] = s, a, r, s_next
        s = s_next
    return states, actions, rewards, nexts
