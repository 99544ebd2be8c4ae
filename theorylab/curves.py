"""Long regret curves made small: a log-spaced grid of episode counts.

A run of 10^7 episodes x 8 seeds has 8 x 10^7 per-episode regrets. The full curves stay in the
binary store (``Result.save``, or the whole-run checkpoint's segments); summaries (JSON, CSV)
carry them on a log-spaced grid of episode counts plus the final values:

* :func:`log_grid` -- about ``per_decade`` episode counts per decade from 1 to K (distinct
  integers, always including 1 and K);
* :func:`curve_on_grid` -- a cumulative curve ``(B, K)`` read at those counts.

(The burn-in point of a run is ``theorylab.validations.reference.burn_in_end``.)
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
