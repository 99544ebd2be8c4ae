"""Long regret curves made small: a log-spaced grid of K, and the burn-in point.

A run of 10^7 episodes x 8 seeds has 8 x 10^7 per-episode regrets. The full curves stay in the
binary store (``Result.save``, or the whole-run checkpoint's segments); summaries (JSON, CSV,
tables) carry them on a log-spaced grid of episode counts plus the final values:

* :func:`log_grid` -- about ``per_decade`` episode counts per decade from 1 to K (distinct
  integers, always including 1 and K);
* :func:`curve_on_grid` -- the cumulative regret ``(B, K)`` read at those counts;
* :func:`burn_in` -- the burn-in point: the first K after which the per-episode regret, smoothed
  over a trailing window, stays below a threshold for the rest of the run (the runner uses half
  of the null agent's regret: the uniform random policy's, computed exactly). None when the
  smoothed regret is still above the threshold at the end of the run.

Ground floor: numpy only.
"""

from __future__ import annotations

import numpy as np

DEFAULT_PER_DECADE = 10


def log_grid(K: int, per_decade: int = DEFAULT_PER_DECADE) -> np.ndarray:
    """Episode counts ``1 <= k <= K`` spaced evenly in log K: ``(n,)`` int64, increasing, with
    1 and K included (n is about ``per_decade * log10(K) + 1``)."""
    if isinstance(K, bool) or int(K) != K or K < 1:
        raise ValueError(f"K must be a positive integer, got {K!r}")
    if per_decade < 1:
        raise ValueError(f"per_decade must be >= 1, got {per_decade!r}")
    n = int(np.ceil(per_decade * np.log10(K))) + 1
    grid = np.unique(np.round(np.logspace(0.0, np.log10(K), max(n, 2))).astype(np.int64))
    grid[-1] = K
    return np.unique(np.concatenate([[1], grid]))


def curve_on_grid(curve: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """``curve (..., K)`` (a cumulative curve: entry k-1 belongs to k episodes) at the episode
    counts ``grid (n,)``: ``(..., n)``."""
    return np.asarray(curve)[..., np.asarray(grid) - 1]


def smoothed(regret: np.ndarray, window: int) -> np.ndarray:
    """Trailing mean of the per-episode ``regret (K,)`` over ``window`` episodes: entry k - 1 is
    the mean over episodes max(1, k - window + 1) .. k (shorter at the start). ``(K,)``."""
    r = np.asarray(regret, dtype=np.float64)
    if r.ndim != 1:
        raise ValueError(f"regret must be one curve (K,), got shape {r.shape}")
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window!r}")
    c = np.concatenate([[0.0], np.cumsum(r)])
    k = np.arange(1, r.size + 1)
    lo = np.maximum(k - window, 0)
    return (c[k] - c[lo]) / (k - lo)


def default_window(K: int) -> int:
    """Smoothing window for a run of K episodes: 1% of K, at least 10 and at most 10^5."""
    return int(min(max(K // 100, 10), 100_000))


def burn_in(regret: np.ndarray, threshold: float, window: int | None = None) -> int | None:
    """The first episode count k after which the smoothed per-episode regret stays below
    ``threshold`` through the end of the run, or None if it ends above it.

    regret: ``(K,)`` per-episode regret (one seed, or the mean over seeds); window: the trailing
    window of :func:`smoothed` (default :func:`default_window`). Counts are 1-based (k = 1 is
    the first episode)."""
    r = np.asarray(regret, dtype=np.float64)
    if r.size == 0:
        return None
    m = smoothed(r, default_window(r.size) if window is None else window)
    above = np.flatnonzero(m >= threshold)
    if above.size == 0:
        return 1
    if above[-1] == r.size - 1:
        return None
    return int(above[-1]) + 2  # the count after the last episode at or above the threshold


def long_run_summary(
    regret: np.ndarray,
    null_regret: float,
    *,
    per_decade: int = DEFAULT_PER_DECADE,
    window: int | None = None,
) -> dict:
    """A small, JSON-able summary of per-episode ``regret (B, K)``: the mean and per-seed
    cumulative regret on :func:`log_grid`, the final values, the null agent's per-episode
    regret and the burn-in point (threshold = half of it) of the seed-mean curve and of each
    seed."""
    r = np.asarray(regret, dtype=np.float64)
    if r.ndim != 2:
        raise ValueError(f"regret must be (B, K), got shape {r.shape}")
    B, K = r.shape
    w = default_window(K) if window is None else int(window)
    grid = log_grid(K, per_decade)
    cum = np.cumsum(r, axis=1)
    threshold = 0.5 * float(null_regret)
    return {
        "K_grid": grid.tolist(),
        "cumulative_regret_mean": curve_on_grid(cum.mean(axis=0), grid).tolist(),
        "cumulative_regret": curve_on_grid(cum, grid).tolist(),
        "final_cumulative_regret": cum[:, -1].tolist(),
        "final_regret_per_episode": float(r[:, -w:].mean()),
        "null_regret_per_episode": float(null_regret),
        "burn_in_threshold": threshold,
        "burn_in_window": w,
        "burn_in": burn_in(r.mean(axis=0), threshold, w),
        "burn_in_per_seed": [burn_in(r[b], threshold, w) for b in range(B)],
    }
