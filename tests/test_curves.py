"""Long-run summaries: the log-spaced grid of K and the burn-in point (theorylab.curves)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.curves import burn_in, curve_on_grid, log_grid, long_run_summary, smoothed


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


def test_burn_in_of_a_step_curve():
    r = np.r_[np.ones(1000), np.zeros(5000)]
    # window 10: the mean over episodes 996..1005 is 0.5 (not below 0.5); from 1006 on it is
    assert burn_in(r, 0.5, window=10) == 1006
    assert burn_in(np.zeros(50), 0.5, window=10) == 1  # below from the start


def test_a_non_learning_agent_never_burns_in():
    # negative control: regret per episode at the null level for the whole run
    assert burn_in(np.full(10_000, 0.8), 0.4, window=100) is None
    # and one that dips below only to come back above at the end
    assert burn_in(np.r_[np.ones(100), np.zeros(100), np.ones(100)], 0.5, window=5) is None


@settings(max_examples=60, deadline=None)
@given(
    x=st.lists(st.floats(0.0, 2.0), min_size=1, max_size=300),
    window=st.integers(1, 40),
    threshold=st.floats(0.1, 1.5),
)
def test_burn_in_is_the_first_count_after_which_the_smoothed_curve_stays_below(
    x, window, threshold
):
    r = np.array(x)
    m = smoothed(r, window)
    k = burn_in(r, threshold, window)
    if k is None:
        assert m[-1] >= threshold
    else:
        assert np.all(m[k - 1 :] < threshold)
        assert k == 1 or m[k - 2] >= threshold


def test_long_run_summary_is_small_and_consistent():
    rng = np.random.default_rng(0)
    K = 100_000
    r = np.where(np.arange(K) < 2000, 0.9, 0.05) + 0.01 * rng.random((3, K))
    s = long_run_summary(r, null_regret=1.0)
    assert len(s["K_grid"]) == len(s["cumulative_regret_mean"]) == len(s["cumulative_regret"][0])
    assert len(s["K_grid"]) < 60
    np.testing.assert_allclose(s["final_cumulative_regret"], r.sum(axis=1))
    assert s["burn_in_window"] == 1000
    assert 2000 < s["burn_in"] < 2000 + 1000  # the step at 2000, seen through a 1000 window
    assert all(2000 < k < 3000 for k in s["burn_in_per_seed"])
