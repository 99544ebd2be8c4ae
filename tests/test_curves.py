"""Long-run summaries: the log-spaced grid of K (theorylab.curves)."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.curves import curve_on_grid, log_grid


@pytest.mark.parametrize("K", [1, 2, 9, 10, 1000, 10_000_000])
def test_log_grid_spans_1_to_K(K):
    grid = log_grid(K)
    assert grid[0] == 1 and grid[-1] == K
    assert np.all(np.diff(grid) > 0)
    assert len(grid) <= 10 * np.log10(max(K, 1)) + 2
    if K == 10_000_000:
        assert 60 <= len(grid) <= 72  # about 10 per decade, not 10^7 numbers


def test_log_grid_rejects_bad_K():
    with pytest.raises(ValueError, match="positive integer"):
        log_grid(0)


def test_curve_on_grid_reads_counts_one_based():
    cum = np.arange(1.0, 101.0)[None].repeat(2, axis=0)  # cumulative regret k after k episodes
    assert curve_on_grid(cum, np.array([1, 10, 100])).tolist() == [[1, 10, 100], [1, 10, 100]]
