"""theorylab.stats against known answers: exact power laws, scipy's bootstrap / t / binomial."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.stats

from theorylab.stats import (
    SlopeFit,
    final_ci,
    fraction_below,
    loglog_slope,
    mean_curve_ci,
)

# ---------------------------------------------------------------- mean_curve_ci


def test_bootstrap_band_matches_scipy_bootstrap_pointwise():
    rng = np.random.default_rng(7)
    B, K = 16, 40
    curves = rng.gamma(2.0, size=(B, K)).cumsum(axis=1)  # (B, K) cumulative-regret-like
    mean, lo, hi = mean_curve_ci(curves, 0.9, n_resamples=40_000, rng=1)
    np.testing.assert_allclose(mean, curves.mean(axis=0))
    for k in (0, 17, K - 1):
        ref = scipy.stats.bootstrap(
            (curves[:, k],),
            np.mean,
            confidence_level=0.9,
            method="percentile",
            n_resamples=40_000,
            rng=np.random.default_rng(2),
        ).confidence_interval
        sem = curves[:, k].std(ddof=1) / np.sqrt(B)
        # two Monte Carlo estimates of the same percentiles: with 40 000 resamples each, their
        # difference has a standard deviation of about 0.05 SEM; allow 4 of those
        assert abs(lo[k] - ref.low) < 0.2 * sem
        assert abs(hi[k] - ref.high) < 0.2 * sem


def test_bootstrap_band_contains_mean_and_is_reproducible():
    curves = np.random.default_rng(0).normal(size=(5, 300)).cumsum(axis=1)
    mean, lo, hi = mean_curve_ci(curves)
    assert mean.shape == lo.shape == hi.shape == (300,)
    assert np.all(lo <= mean) and np.all(mean <= hi)
    again = mean_curve_ci(curves)
    np.testing.assert_array_equal(lo, again[1])  # rng=None is the fixed seed 0
    other = mean_curve_ci(curves, rng=np.random.default_rng(123))
    assert not np.array_equal(lo, other[1])


def test_bootstrap_blocks_over_columns_give_the_same_band(monkeypatch):
    import theorylab.stats as stats

    curves = np.random.default_rng(3).exponential(size=(6, 50)).cumsum(axis=1)
    whole = mean_curve_ci(curves, n_resamples=500, rng=5)
    monkeypatch.setattr(stats, "_BLOCK_ENTRIES", 500 * 7)  # blocks of 7 columns
    blocked = mean_curve_ci(curves, n_resamples=500, rng=5)
    for a, b in zip(whole, blocked, strict=True):
        np.testing.assert_allclose(a, b)


def test_single_seed_gives_degenerate_band_without_warning():
    curve = np.arange(1.0, 11.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for method in ("bootstrap", "t"):
            mean, lo, hi = mean_curve_ci(curve[None, :], method=method)
            np.testing.assert_array_equal(mean, curve)
            np.testing.assert_array_equal(lo, curve)
            np.testing.assert_array_equal(hi, curve)
        mean, lo, hi = mean_curve_ci(curve)  # a 1-d array is one seed
        np.testing.assert_array_equal(lo, hi)


def test_t_band_matches_scipy_t_interval():
    curves = np.random.default_rng(4).normal(3.0, 2.0, size=(9, 5))
    mean, lo, hi = mean_curve_ci(curves, 0.95, method="t")
    for k in range(5):
        ref = scipy.stats.t.interval(
            0.95, df=8, loc=curves[:, k].mean(), scale=scipy.stats.sem(curves[:, k])
        )
        np.testing.assert_allclose((lo[k], hi[k]), ref)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"confidence": 1.0}, "confidence"),
        ({"method": "bca"}, "method"),
        ({"n_resamples": 0}, "n_resamples"),
    ],
)
def test_mean_curve_ci_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        mean_curve_ci(np.ones((3, 4)), **kwargs)


def test_mean_curve_ci_rejects_bad_shapes():
    with pytest.raises(ValueError, match="shape"):
        mean_curve_ci(np.ones((2, 3, 4)))


# ---------------------------------------------------------------- loglog_slope


def test_exact_power_law_has_exact_slope_and_degenerate_ci():
    x = np.arange(1.0, 2001.0)
    y = 3.0 * x**0.5 * np.ones((5, 1))  # (B, K), every seed identical
    fit = loglog_slope(x, y)
    assert isinstance(fit, SlopeFit)
    assert fit.slope == pytest.approx(0.5, abs=1e-12)
    assert fit.ci_low == pytest.approx(0.5, abs=1e-12)
    assert fit.ci_high == pytest.approx(0.5, abs=1e-12)
    assert fit.intercept == pytest.approx(np.log(3.0), abs=1e-10)
    assert fit.n_seeds == 5
    # default range: second half of the log-x range, i.e. x in [sqrt(2000), 2000]
    assert fit.x_range[0] == pytest.approx(np.ceil(np.sqrt(2000.0)))
    assert fit.x_range[1] == 2000.0
    assert fit.n_points == 200  # thinned to a log-uniform grid
    np.testing.assert_allclose(fit.predict([4.0, 100.0]), [6.0, 30.0])
    assert fit.contains(0.5) and not fit.contains(0.6)
    assert "slope 0.500" in str(fit)


def test_single_seed_slope_has_degenerate_ci():
    x = np.arange(1.0, 101.0)
    fit = loglog_slope(x, 2 * x**0.7)  # a 1-d y is one seed
    assert fit.n_seeds == 1
    assert fit.ci_low == fit.slope == fit.ci_high
    assert fit.slope == pytest.approx(0.7, abs=1e-12)


def test_default_range_reads_the_late_exponent_past_a_burn_in():
    # linear burn-in up to x = 100, then 10 sqrt(x) (continuous at 100): the second half of the
    # log range starts at x = 100 and sees only the sqrt part.
    x = np.arange(1.0, 10_001.0)
    y = np.where(x <= 100, x, 10 * np.sqrt(x))[None, :].repeat(3, axis=0)
    assert loglog_slope(x, y).slope == pytest.approx(0.5, abs=1e-9)
    whole = loglog_slope(x, y, fit_range=(0.0, 1.0)).slope
    assert 0.6 < whole < 0.9  # the burn-in bends a whole-run fit


def test_noisy_power_law_ci_covers_the_true_slope():
    # y_i(x) = 5 x^a exp(s z_i + s w_i(x) - s^2): E[y] = 5 x^a exactly, seeds independent.
    a, s, B = 0.5, 0.3, 20
    x = np.geomspace(10, 10_000, 60)
    rng = np.random.default_rng(11)
    covered, slopes = 0, []
    n_rep = 100
    for _ in range(n_rep):
        noise = s * rng.normal(size=(B, 1)) + s * rng.normal(size=(B, x.size)) - s**2
        y = 5 * x**a * np.exp(noise)  # (B, K)
        fit = loglog_slope(x, y, fit_range=(0.0, 1.0), n_resamples=500, rng=rng)
        covered += fit.contains(a)
        slopes.append(fit.slope)
        assert fit.ci_low <= fit.slope <= fit.ci_high
    assert abs(np.mean(slopes) - a) < 0.01
    assert covered >= 85  # nominal 95 of 100 (percentile bootstrap runs slightly narrow)


def test_parameter_sweep_slope_over_S():
    S = np.array([2.0, 4.0, 8.0, 16.0, 32.0])
    rng = np.random.default_rng(2)
    final = S**2 * rng.lognormal(0.0, 0.1, size=(30, S.size))  # (B, n_values) final regret
    fit = loglog_slope(S, final, fit_range=(0.0, 1.0))
    assert fit.contains(2.0)
    assert fit.ci_high - fit.ci_low < 0.1
    assert fit.x_range == (2.0, 32.0) and fit.n_points == 5


def test_explicit_fit_ranges():
    x = np.arange(1.0, 51.0)
    y = np.vstack([x**1.5, 2 * x**1.5])
    for fr in (slice(10, 20), np.arange(10, 20), list(range(10, 20)), (x >= 11) & (x <= 20)):
        fit = loglog_slope(x, y, fit_range=fr)
        assert fit.x_range == (11.0, 20.0) and fit.n_points == 10
        assert fit.slope == pytest.approx(1.5, abs=1e-12)


@pytest.mark.parametrize(
    "x, y, kwargs, match",
    [
        (np.arange(1.0, 5.0), np.ones((2, 4)), {"fit_range": (0.9, 1.0)}, "at least 2"),
        (np.arange(1.0, 5.0), np.zeros((2, 4)), {}, "positive"),
        (np.array([1.0, 3.0, 2.0, 4.0]), np.ones((2, 4)), {}, "increasing"),
        (np.arange(0.0, 4.0), np.ones((2, 4)), {}, "positive"),
        (np.arange(1.0, 4.0), np.ones((2, 4)), {}, "shape"),
        (np.arange(1.0, 5.0), np.ones((2, 4)), {"fit_range": (0.5, 0.2)}, "fractions"),
        (np.arange(1.0, 5.0), np.ones((2, 4)), {"fit_range": [0.5, 1.0]}, "integer"),
    ],
)
def test_loglog_slope_rejects_bad_input(x, y, kwargs, match):
    with pytest.raises(ValueError, match=match):
        loglog_slope(x, y, **kwargs)


def test_replicates_with_nonpositive_mean_are_dropped_with_a_warning():
    x = np.arange(1.0, 11.0)
    y = np.vstack([np.zeros(10), x])  # seed 0 has zero regret throughout
    with pytest.warns(RuntimeWarning, match="dropped"):
        fit = loglog_slope(x, y, fit_range=(0.0, 1.0), n_resamples=200)
    assert fit.slope == pytest.approx(1.0)


# ---------------------------------------------------------------- fraction_below, final_ci


def test_fraction_below_counts_ties_and_matches_clopper_pearson():
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])
    res = fraction_below(values, 5.0)  # 5 <= 5 counts
    assert (res.n_below, res.n, res.fraction) == (5, 8, 5 / 8)
    ref = scipy.stats.binomtest(5, 8).proportion_ci(0.95, method="exact")
    assert (res.ci_low, res.ci_high) == pytest.approx((ref.low, ref.high))
    assert "5/8" in str(res)


def test_fraction_below_per_seed_bound_and_extremes():
    values = np.array([1.0, 5.0, 2.0])
    assert fraction_below(values, np.array([2.0, 4.0, 2.0])).n_below == 2
    everything = fraction_below(np.zeros(20), 1.0)
    assert everything.fraction == 1.0 and everything.ci_high == 1.0
    assert everything.ci_low == pytest.approx(0.025 ** (1 / 20))  # exact one-sided limit
    with pytest.raises(ValueError, match="NaN"):
        fraction_below(np.array([1.0, np.nan]), 1.0)


def test_final_ci_matches_scipy_t_interval():
    v = np.random.default_rng(5).normal(10.0, 3.0, size=12)
    res = final_ci(v, 0.9)
    ref = scipy.stats.t.interval(0.9, df=11, loc=v.mean(), scale=scipy.stats.sem(v))
    assert res.mean == pytest.approx(v.mean())
    assert (res.ci_low, res.ci_high) == pytest.approx(ref)
    assert res.n == 12 and res.half_width == pytest.approx((ref[1] - ref[0]) / 2)


def test_final_ci_degenerate_cases():
    one = final_ci(np.array([4.0]))
    assert one.mean == one.ci_low == one.ci_high == 4.0
    const = final_ci(np.full(5, 2.0))
    assert const.ci_low == const.ci_high == 2.0
    with pytest.raises(ValueError, match="shape"):
        final_ci(np.ones((2, 2)))


def test_final_ci_with_a_support_never_leaves_it_and_says_when_it_was_cut():
    # two seeds of a cumulative regret: the t interval (t_{1, 0.975} = 12.71) goes negative
    v = np.array([0.5, 6.0])
    m, sd = v.mean(), v.std(ddof=1)
    half = 12.706204736174707 * sd / np.sqrt(2)  # t_{1, 0.975}, written out
    free = final_ci(v)
    assert free.ci_low == pytest.approx(m - half) and free.ci_low < 0 and not free.clipped
    cut = final_ci(v, support=(0.0, None))
    assert cut.ci_low == 0.0 and cut.ci_high == pytest.approx(m + half) and cut.clipped
    assert "clipped" in str(cut) and cut.interval_text() == f"[0.00, {m + half:.2f}] clipped"
    # inside the support nothing changes and nothing is flagged
    tight = final_ci(np.array([5.0, 5.1, 4.9, 5.05]), support=(0.0, None))
    assert tight == final_ci(np.array([5.0, 5.1, 4.9, 5.05])) and not tight.clipped
    # an upper edge (an accuracy in [0, 1])
    acc = final_ci(np.array([0.9, 1.0]), support=(0.0, 1.0))
    assert acc.ci_high == 1.0 and acc.ci_low < 0.95 and acc.clipped


def test_two_seed_regret_summary_interval_is_not_negative():
    from theorylab.results import RegretResult

    regret = np.zeros((2, 10))
    regret[0, 0], regret[1, :] = 0.5, 0.6  # final cumulative regret 0.5 and 6.0
    res = RegretResult(regret, np.ones((2, 10)), np.full((2, 10), np.nan), 1.0, 1.0, {})
    s = res.summary()
    assert s["final_regret_ci_low"] == 0.0 and s["final_regret_ci_clipped"]
    assert res.table_row()["95% CI"].endswith("clipped at 0")
    assert res.json_summary()["final_regret_ci"][0] == 0.0
