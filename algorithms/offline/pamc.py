r"""PAMC: policy-aware completion of a low-rank reward matrix, with split-conformal sets.

Seed reference ``seed-catalogue-001.md#32`` (tier B). Paper: Shihab, Akter & Sharma, *What
Fundamental Structure in Reward Functions Enables Efficient Sparse-Reward Learning?*
(arXiv:2509.03790, 2025).

What was read and what was reconstructed
----------------------------------------
* [V] the abstracts (arXiv and OpenReview versions) and the catalogue row: the reward matrix
  ``R (S, A)`` is (approximately) low rank; its entries are observed only where the policy goes
  (a policy-induced, missing-not-at-random mask); PAMC completes it ("matrix completion under
  policy-dependent sampling", recovery guarantees "with inverse-propensity weighting"), gives
  "distribution-free confidence sets via conformal prediction", and degrades "gracefully when
  low-rank structure is only approximate". Without structure any learner needs
  ``Omega(S A / p)`` samples.
* [A] the completion: weighted alternating least squares (ALS) of rank r on the observed
  entries (:func:`complete_als`), with a spectral start, and the convex alternative, the
  minimum nuclear norm matrix that interpolates the observed entries (:func:`complete_nuclear`,
  cvxpy), both standard (Candes & Recht 2009; Jain, Netrapalli & Sanghavi 2013). The paper's
  equations and constants were not read.
* [A] the confidence sets: split conformal prediction (Vovk et al. 2005; Lei et al. 2018) with
  absolute residual scores ``|y - R_hat(s, a)|`` on calibration draws that were not used to fit,
  and the finite-sample quantile: the ``k``-th smallest of n scores,
  ``k = ceil((n + 1)(1 - alpha))`` (``+inf`` when ``k > n``). For exchangeable continuous
  scores the coverage of a fresh draw is exactly ``k / (n + 1)``, in
  ``[1 - alpha, 1 - alpha + 1 / (n + 1))`` (:func:`conformal_quantile`).
* [A] inverse-propensity weights (``weights="ipw"``): the entry ``(s, a)`` weighted by
  ``1 / p_hat(s, a)`` with ``p_hat`` the fraction of samples at that pair.

As an offline algorithm (``tl.run("pamc", ...)``, finite horizon)
---------------------------------------------------------------
[M] The reward is treated as stationary (one ``S x A`` matrix; the ``lowrank-reward`` family has
one). Per seed the observed pairs (count > 0) are split at random (``default_rng([split_seed,
seed index])``, so a seed's split is the same alone or in a batch) into a fitting and a
calibration part (``calibration`` of them, at least one when there are at least two); the
rank-r completion fitted on the fitting part's mean rewards, clipped to [0, 1] (the library's
reward range), gives ``R_hat (S, A)`` at *every* pair, visited or not; the calibration scores
are ``|r - R_hat(s, a)|`` for the first reward sample at each calibration pair, and
``info["radius"] (B,)`` is the conformal quantile at level alpha: a
fresh reward at a pair drawn like the calibration pairs lies in ``R_hat +- radius`` with
probability at least 1 - alpha. Planning is backward induction on the per-stage empirical
transitions with ``R_hat`` as the reward (``Q_h = R_hat + P_hat_h V_{h+1}``; ``P_hat V = 0`` at
pairs without data, the convention of ``naive-vi``). ``info["R_hat"] (B, S, A)`` is returned.

Deviations. No exploration loop and no abstention rule (the paper's bi-level loop is not
reproduced); ALS is a local method started spectrally (no guarantee is claimed for it here,
its recoveries are measured against the truth in the claim ``pamc-completion-phase-transition``).
"""

from __future__ import annotations

import math
import time

import numpy as np

from theorylab.algorithms.offline.dataset import OfflineDataset
from theorylab.algorithms.offline.empirical import all_samples, require_data, stage_blocks
from theorylab.algorithms.offline.result import OfflineResult, greedy, value_at_start

WEIGHTS = ("uniform", "ipw")


def _check_rank(rank: int, S: int, A: int) -> int:
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 1:
        raise ValueError(f"pamc: rank={rank!r} must be an integer >= 1")
    if rank > min(S, A):
        raise ValueError(f"pamc: rank={rank} must be at most min(S, A) = {min(S, A)}")
    return int(rank)


def complete_als(
    Y: np.ndarray,
    weights: np.ndarray,
    rank: int,
    *,
    reg: float = 1e-6,
    iters: int = 200,
    tol: float = 1e-12,
) -> np.ndarray:
    """Rank-r weighted ALS, ``argmin_{U,V} sum w_ij (Y_ij - (U V^T)_ij)^2 + reg (|U|^2 + |V|^2)``.

    ``Y (S, A)`` (any value where ``w = 0``), ``weights (S, A) >= 0`` (0: unobserved). Start: the
    rank-r SVD of the zero-filled matrix rescaled by the observed fraction. Each half-step solves
    the S (or A) ridge problems in one batched ``np.linalg.solve``. Returns ``U V^T (S, A)``.
    """
    Y = np.asarray(Y, dtype=float)
    W = np.asarray(weights, dtype=float)
    S, A = Y.shape
    r = _check_rank(rank, S, A)
    seen = W > 0
    if not seen.any():
        return np.zeros((S, A))
    Yz = np.where(seen, Y, 0.0)  # (S, A)
    u, s, vt = np.linalg.svd(Yz / seen.mean(), full_matrices=False)
    U = u[:, :r] * np.sqrt(s[:r])  # (S, r)
    V = vt[:r].T * np.sqrt(s[:r])  # (A, r)
    eye = reg * np.eye(r)
    prev = U @ V.T
    for _ in range(iters):
        G = np.einsum("ia,ak,al->ikl", W, V, V) + eye  # (S, r, r)
        U = np.linalg.solve(G, np.einsum("ia,ak->ik", W * Yz, V)[..., None])[..., 0]
        G = np.einsum("ia,ik,il->akl", W, U, U) + eye  # (A, r, r)
        V = np.linalg.solve(G, np.einsum("ia,ik->ak", W * Yz, U)[..., None])[..., 0]
        cur = U @ V.T
        if np.abs(cur - prev).max() <= tol * (1.0 + np.abs(cur).max()):
            break
        prev = cur
    return U @ V.T


def complete_nuclear(Y: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The minimum nuclear-norm ``X (S, A)`` with ``X = Y`` on ``mask`` (cvxpy, an SDP)."""
    import cvxpy as cp

    Y = np.asarray(Y, dtype=float)
    mask = np.asarray(mask, dtype=bool)
    X = cp.Variable(Y.shape)
    M = mask.astype(float)
    prob = cp.Problem(cp.Minimize(cp.normNuc(X)), [cp.multiply(M, X) == M * np.where(mask, Y, 0)])
    prob.solve(solver=cp.CLARABEL)
    return np.asarray(X.value)


def conformal_quantile(scores: np.ndarray, alpha: float) -> float:
    """Split conformal's finite-sample quantile: the ``ceil((n + 1)(1 - alpha))``-th smallest
    score (``+inf`` when that exceeds n). Coverage of a fresh exchangeable draw >= 1 - alpha."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"pamc: alpha={alpha!r} must be in (0, 1)")
    s = np.sort(np.asarray(scores, dtype=float).ravel())
    k = math.ceil((s.size + 1) * (1.0 - alpha))
    return float(s[k - 1]) if k <= s.size else math.inf


def _complete_seed(
    sums: np.ndarray, counts: np.ndarray, first: np.ndarray, rank: int, alpha: float,
    calibration: float, weights: str, rng: np.random.Generator,
) -> tuple[np.ndarray, float]:  # fmt: skip
    """One seed: ``(R_hat (S, A), radius)`` from reward sums/counts and first rewards (S, A)."""
    seen = np.flatnonzero(counts.ravel() > 0)
    n_cal = int(round(calibration * seen.size)) if seen.size >= 2 else 0
    n_cal = min(max(n_cal, 1 if seen.size >= 2 and calibration > 0 else 0), seen.size - 1)
    perm = rng.permutation(seen)
    cal, fit = perm[:n_cal], perm[n_cal:]
    mask = np.zeros(counts.size, dtype=bool)
    mask[fit] = True
    mask = mask.reshape(counts.shape)
    Y = np.where(counts > 0, sums / np.maximum(counts, 1e-300), 0.0)  # (S, A) mean rewards
    w = mask.astype(float)
    if weights == "ipw":
        w = np.where(mask, counts.sum() / np.maximum(counts, 1e-300), 0.0)
        w /= w[mask].mean()
    R_hat = np.clip(complete_als(Y, w, rank), 0.0, 1.0)  # the library's reward range
    radius = (
        conformal_quantile(np.abs(first.ravel()[cal] - R_hat.ravel()[cal]), alpha)
        if n_cal
        else math.inf
    )
    return R_hat, radius


def pamc(
    dataset: OfflineDataset,
    *,
    rank: int = 2,
    alpha: float = 0.1,
    calibration: float = 0.2,
    weights: str = "uniform",
    split_seed: int = 0,
) -> OfflineResult:
    """PAMC on offline data (module docstring): complete, calibrate, plan on ``R_hat``."""
    if dataset.horizon is None:
        raise ValueError("pamc: finite-horizon data only (the dataset is discounted)")
    rank = _check_rank(rank, dataset.S, dataset.A)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"pamc: alpha={alpha!r} must be in (0, 1)")
    if not 0.0 <= calibration < 1.0:
        raise ValueError(f"pamc: calibration={calibration!r} must be in [0, 1)")
    if weights not in WEIGHTS:
        raise ValueError(f"pamc: weights={weights!r} must be one of {WEIGHTS}")
    require_data(dataset, "pamc")
    t0 = time.perf_counter()
    B, S, A, H = dataset.n_seeds, dataset.S, dataset.A, dataset.horizon
    blk = all_samples(dataset)
    counts = blk.counts()  # (B, S, A)
    sums = blk.sums(blk.reward)  # (B, S, A)
    first = np.zeros(B * S * A)  # the first reward sample of every pair, in data order
    order = np.arange(blk.size)[::-1]  # later samples written first, so the first one wins
    first[blk.sa[order]] = blk.reward[order]
    first = first.reshape(B, S, A)
    R_hat = np.empty((B, S, A))
    radius = np.empty(B)
    for b in range(B):
        R_hat[b], radius[b] = _complete_seed(
            sums[b],
            counts[b],
            first[b],
            rank,
            alpha,
            calibration,
            weights,
            np.random.default_rng([split_seed, dataset.seed_indices[b]]),  # same alone or batched
        )
    V = np.zeros((B, H + 1, S))
    Q = np.empty((B, H, S, A))
    for h, sb in reversed(list(enumerate(stage_blocks(dataset)))):
        Q[:, h] = R_hat + sb.means(sb.next_values(V[:, h + 1]), sb.counts())
        V[:, h] = Q[:, h].max(axis=-1)
    return OfflineResult(
        algorithm="pamc",
        policy=greedy(Q),
        value_estimate=value_at_start(V[:, 0], dataset.mu0),
        V=V,
        Q=Q,
        pessimistic=False,
        params={
            "rank": rank,
            "alpha": alpha,
            "calibration": calibration,
            "weights": weights,
            "split_seed": split_seed,
        },  # fmt: skip
        info={"seconds": time.perf_counter() - t0, "R_hat": R_hat, "radius": radius},
    )
