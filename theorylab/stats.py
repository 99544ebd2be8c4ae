"""Statistics over seeds (ground floor: imports nothing from mdps/, algorithms/ or validations/).

Every run in theorylab has a leading seed axis ``B``: the B seeds are independent replications
of the same experiment, so every statement below is about the *distribution over seeds*.

* :func:`mean_curve_ci` -- a pointwise confidence interval for the mean curve over seeds.
  Default: the nonparametric bootstrap percentile interval (Efron & Tibshirani 1993, *An
  Introduction to the Bootstrap*, ch. 13), the same estimator as
  ``scipy.stats.bootstrap(..., method="percentile")``, vectorised so that one replicate resamples
  the seed indices once and reuses them for every episode. ``method="t"`` gives Student's t
  interval instead. The band is *pointwise* (each episode has coverage ``confidence``), not a
  simultaneous band over the whole curve.
* :func:`loglog_slope` -- the growth rate of a regret curve: the least-squares slope of
  ``log(mean over seeds of y)`` against ``log x`` over a fit range, with a bootstrap-over-seeds
  percentile interval (resample whole seeds, refit). This is how a claim such as "regret grows
  like K^(1/2)" is tested. Works the same for sweeps over S, A or H.
* :func:`fraction_below` -- the fraction of seeds whose value is at most a bound, with the exact
  Clopper-Pearson interval (Clopper & Pearson 1934, via ``scipy.stats.binomtest``). This is how
  "regret <= bound with probability >= 1 - delta" is tested.
* :func:`final_ci` -- mean and Student t interval of one value per seed (CLI summary tables),
  cut at the quantity's support (a regret's interval never goes below 0) and marked clipped.

Conventions. ``confidence`` is the two-sided level in (0, 1). ``rng`` is an int seed, a
``numpy.random.Generator`` or None; None means the fixed seed 0, so a figure or report is
reproducible bit for bit (pass a Generator for independent draws). With a single seed (B = 1)
there is nothing to resample: every interval collapses to the point estimate (lo = hi = mean),
silently and by design -- check ``n_seeds`` before reading an interval.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.stats

DEFAULT_RESAMPLES = 2000
# Bootstrap work is done in blocks of columns so that the (n_resamples, block) matrix of
# replicate means stays around this many float64 entries (~32 MB).
_BLOCK_ENTRIES = 4_000_000


def _check_confidence(confidence: float) -> float:
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return float(confidence)


def _as_rng(rng: int | np.random.Generator | None) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(0 if rng is None else rng)


def _as_curves(curves, name: str = "curves") -> np.ndarray:
    """``(B, K)`` float array; a 1-d array is one seed ``(1, K)``."""
    arr = np.asarray(curves, dtype=float)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"{name} must have shape (B seeds, K points), got {arr.shape}")
    return arr


def _resample_weights(B: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_resamples, B)`` weights: row r holds how often each seed is drawn in replicate r,
    divided by B, so ``weights @ curves`` is the replicate's mean curve."""
    idx = rng.integers(0, B, size=(n_resamples, B))  # (R, B) resampled seed indices
    flat = (idx + B * np.arange(n_resamples)[:, None]).ravel()
    counts = np.bincount(flat, minlength=n_resamples * B).reshape(n_resamples, B)
    return counts / B


def mean_curve_ci(
    curves,
    confidence: float = 0.95,
    method: Literal["bootstrap", "t"] = "bootstrap",
    n_resamples: int = DEFAULT_RESAMPLES,
    rng: int | np.random.Generator | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean over seeds of ``curves (B, K)`` with a pointwise confidence interval.

    method="bootstrap": percentile interval of ``n_resamples`` bootstrap replicates; replicate r
        draws B seed indices with replacement once and averages those seeds' curves at every
        point (so the band is the band of resampled *curves*). Equals, up to Monte Carlo error,
        ``scipy.stats.bootstrap((curves[:, k],), np.mean, method="percentile")`` at each k.
    method="t": ``mean +- t_{B-1, (1+confidence)/2} * sd / sqrt(B)``.

    B = 1 (or zero spread) gives ``lo = hi = mean`` without a warning. NaNs propagate to the
    points where they occur. Returns ``(mean (K,), lo (K,), hi (K,))``.
    """
    confidence = _check_confidence(confidence)
    y = _as_curves(curves)  # (B, K)
    B, K = y.shape
    mean = y.mean(axis=0)  # (K,)
    if B == 1:
        return mean, mean.copy(), mean.copy()
    if method == "t":
        sem = y.std(axis=0, ddof=1) / math.sqrt(B)  # (K,)
        half = scipy.stats.t.ppf(0.5 + confidence / 2, df=B - 1) * sem
        return mean, mean - half, mean + half
    if method != "bootstrap":
        raise ValueError(f"method must be 'bootstrap' or 't', got {method!r}")
    if int(n_resamples) < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples!r}")
    W = _resample_weights(B, int(n_resamples), _as_rng(rng))  # (R, B)
    q = 100 * np.array([(1 - confidence) / 2, (1 + confidence) / 2])
    lo, hi = np.empty(K), np.empty(K)
    block = max(1, _BLOCK_ENTRIES // int(n_resamples))
    for start in range(0, K, block):
        sl = slice(start, min(K, start + block))
        reps = W @ y[:, sl]  # (R, block) replicate means
        lo[sl], hi[sl] = np.percentile(reps, q, axis=0)
    # Percentiles of replicate means lie in [min, max] of the data up to rounding; keep the
    # documented invariant lo <= mean <= hi exact for plotting.
    return mean, np.minimum(lo, mean), np.maximum(hi, mean)


@dataclass(frozen=True)
class SlopeFit:
    """A log-log growth-rate fit ``mean_y(x) ~ exp(intercept) * x ** slope``.

    slope: least-squares slope of ``log(mean over seeds of y)`` on ``log x`` over the fit range.
    ci_low, ci_high: bootstrap-over-seeds percentile interval for the slope (equal to the slope
        when n_seeds = 1). intercept: in natural-log units. n_seeds: B. x_range: the first and last
        x used in the fit. n_points: how many x values entered the fit. confidence: the level.
    """

    slope: float
    ci_low: float
    ci_high: float
    intercept: float
    n_seeds: int
    x_range: tuple[float, float]
    n_points: int = 0
    confidence: float = 0.95

    def predict(self, x) -> np.ndarray:
        """The fitted power law ``exp(intercept) * x ** slope``."""
        return np.exp(self.intercept) * np.asarray(x, dtype=float) ** self.slope

    def contains(self, exponent: float) -> bool:
        """Whether ``exponent`` lies inside the confidence interval of the slope."""
        return self.ci_low <= exponent <= self.ci_high

    def __str__(self) -> str:
        pct = f"{100 * self.confidence:g}%"
        return (
            f"slope {self.slope:.3f} [{self.ci_low:.3f}, {self.ci_high:.3f}] "
            f"({pct} bootstrap over {self.n_seeds} seeds, "
            f"x in [{self.x_range[0]:g}, {self.x_range[1]:g}], {self.n_points} points)"
        )


def _fit_indices(lx: np.ndarray, fit_range, max_points: int | None) -> np.ndarray:
    """Sorted unique indices of the points entering the fit.

    Explicit indices (slice, integer array, boolean mask) are used as given; a fraction tuple
    selects a part of the log-x range and is thinned to ``max_points`` log-uniform points.
    """
    K = lx.shape[0]
    if isinstance(fit_range, slice):
        return np.unique(np.arange(K)[fit_range])
    if not (isinstance(fit_range, tuple) and len(fit_range) == 2):
        sel = np.asarray(fit_range)
        if sel.dtype == bool:
            if sel.shape != (K,):
                raise ValueError(f"a boolean fit_range must have shape ({K},), got {sel.shape}")
            return np.flatnonzero(sel)
        if sel.ndim != 1 or not np.issubdtype(sel.dtype, np.integer):
            raise ValueError(
                "fit_range must be a (lo, hi) tuple of fractions of the log-x range, a slice, "
                f"an integer index array or a boolean mask; got {fit_range!r}"
            )
        return np.unique(np.arange(K)[sel])  # handles negative indices, checks bounds
    f_lo, f_hi = (float(f) for f in fit_range)
    if not 0.0 <= f_lo < f_hi <= 1.0:
        raise ValueError(f"fit_range fractions must satisfy 0 <= lo < hi <= 1, got {fit_range}")
    a, b = lx[0], lx[-1]
    tol = 1e-12 * max(1.0, b - a)
    sel = np.flatnonzero((lx >= a + f_lo * (b - a) - tol) & (lx <= a + f_hi * (b - a) + tol))
    if max_points is not None and sel.size > max_points:
        # Thin to (about) log-uniform spacing so every part of the log-x range weighs the same;
        # dense x = 1..K would otherwise put almost all the weight on the last decade.
        targets = np.linspace(lx[sel[0]], lx[sel[-1]], int(max_points))
        pos = np.searchsorted(lx[sel], targets).clip(0, sel.size - 1)
        sel = np.unique(sel[pos])
    return sel


def _ols_slopes(lx: np.ndarray, ly: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares slope and intercept of each row of ``ly (R, m)`` on ``lx (m,)``."""
    xc = lx - lx.mean()
    slope = (ly - ly.mean(axis=-1, keepdims=True)) @ xc / (xc @ xc)  # (R,)
    intercept = ly.mean(axis=-1) - slope * lx.mean()
    return slope, intercept


def loglog_slope(
    x,
    y,
    fit_range: tuple[float, float] | slice | Sequence[int] | np.ndarray = (0.5, 1.0),
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    rng: int | np.random.Generator | None = None,
    max_points: int | None = 200,
) -> SlopeFit:
    """Growth exponent of ``y`` in ``x``: least-squares slope of log(mean_y) on log(x).

    x: ``(K,)`` positive, increasing (episodes 1..K, or swept S / A / H values).
    y: ``(B, K)`` positive values per seed (cumulative regret, or final regret per swept value);
        a 1-d ``(K,)`` array is one seed.
    fit_range: which points enter the fit --
        * a tuple ``(lo, hi)`` of fractions of the *log*-x range: the points with
          ``log x`` in ``[log x_0 + lo * L, log x_0 + hi * L]`` where ``L = log(x_last / x_0)``.
          The default ``(0.5, 1.0)`` keeps the second half of the run in log space (for
          x = 1..10^4 that is K in [100, 10^4]): a regret bound is ``c K^a`` plus lower-order
          terms (burn-in while every (s, a) is still unvisited, ``S^2 A H^2``-type additive
          terms, log factors) that dominate the first episodes and bend the early curve, so the
          asymptotic exponent is read where the leading term dominates. For a sweep over a few
          parameter values use ``(0.0, 1.0)`` (all points).
        * a slice, an integer index array or a boolean mask of length K: explicit points.
    max_points: if more points than this fall in the fit range, they are thinned to a
        log-uniform grid (each part of the log range weighs the same; x = 1..K is dense at the
        end). None keeps every point.

    The fit is to the log of the mean over seeds (the quantity a bound controls), not the mean of
    logs. CI: bootstrap over seeds -- each replicate resamples B seeds with replacement, averages,
    refits; percentile interval. B = 1 gives ci_low = ci_high = slope. Replicates whose mean is not
    positive somewhere are dropped with a ``RuntimeWarning``.
    """
    confidence = _check_confidence(confidence)
    xv = np.asarray(x, dtype=float)
    yv = _as_curves(y, "y")  # (B, K)
    B, K = yv.shape
    if xv.shape != (K,):
        raise ValueError(f"x must have shape ({K},) to match y {yv.shape}, got {xv.shape}")
    if not np.all(np.isfinite(xv)) or np.any(xv <= 0):
        raise ValueError("x must be finite and positive for a log-log fit")
    if np.any(np.diff(xv) <= 0):
        raise ValueError("x must be strictly increasing")
    lx = np.log(xv)
    sel = _fit_indices(lx, fit_range, max_points)
    if sel.size < 2:
        raise ValueError(
            f"fit_range {fit_range!r} leaves {sel.size} point(s) (x = {xv.tolist()[:10]}...); "
            "a slope needs at least 2 -- widen it, e.g. fit_range=(0.0, 1.0) for a short sweep"
        )
    ys = yv[:, sel]  # (B, m)
    if not np.all(np.isfinite(ys)):
        raise ValueError("y has non-finite values inside the fit range")
    mean = ys.mean(axis=0)  # (m,)
    if np.any(mean <= 0):
        bad = int(np.flatnonzero(mean <= 0)[0])
        raise ValueError(
            f"the mean of y over seeds is {mean[bad]:g} <= 0 at x = {xv[sel][bad]:g}; a log-log "
            "fit needs positive values -- start the fit range later"
        )
    lxs = lx[sel]
    fit_slope, fit_intercept = _ols_slopes(lxs, np.log(mean)[None, :])  # (1,), (1,)
    slope, intercept = float(fit_slope[0]), float(fit_intercept[0])
    if B == 1:
        lo = hi = slope
    else:
        W = _resample_weights(B, int(n_resamples), _as_rng(rng))  # (R, B)
        reps = W @ ys  # (R, m) replicate mean curves
        ok = np.all(reps > 0, axis=1)
        if not np.all(ok):
            warnings.warn(
                f"{int((~ok).sum())} of {ok.size} bootstrap replicates have a non-positive mean "
                "in the fit range and were dropped",
                RuntimeWarning,
                stacklevel=2,
            )
        rep_slopes, _ = _ols_slopes(lxs, np.log(reps[ok]))  # (R_ok,)
        q = 100 * np.array([(1 - confidence) / 2, (1 + confidence) / 2])
        lo, hi = (float(v) for v in np.percentile(rep_slopes, q))
        lo, hi = min(lo, slope), max(hi, slope)
    return SlopeFit(
        slope=slope,
        ci_low=lo,
        ci_high=hi,
        intercept=intercept,
        n_seeds=B,
        x_range=(float(xv[sel[0]]), float(xv[sel[-1]])),
        n_points=int(sel.size),
        confidence=confidence,
    )


@dataclass(frozen=True)
class FractionBelow:
    """``n_below`` of ``n`` seeds have value <= bound; Clopper-Pearson interval for the rate."""

    fraction: float
    ci_low: float
    ci_high: float
    n_below: int
    n: int
    confidence: float = 0.95

    def __str__(self) -> str:
        return (
            f"{self.n_below}/{self.n} = {self.fraction:.3f} below the bound "
            f"[{self.ci_low:.3f}, {self.ci_high:.3f}] ({100 * self.confidence:g}% Clopper-Pearson)"
        )


def fraction_below(values, bound, confidence: float = 0.95) -> FractionBelow:
    """Fraction of seeds with ``values <= bound`` and its exact Clopper-Pearson interval.

    values: ``(B,)`` one value per seed (e.g. final cumulative regret). bound: a float or ``(B,)``
    (a per-seed bound). "Below" includes equality, as in "regret <= bound w.p. >= 1 - delta".
    The interval comes from ``scipy.stats.binomtest(n_below, B).proportion_ci(method="exact")``.
    """
    confidence = _check_confidence(confidence)
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or v.size < 1:
        raise ValueError(f"values must have shape (B,), got {v.shape}")
    b = np.broadcast_to(np.asarray(bound, dtype=float), v.shape)
    if np.any(np.isnan(v)) or np.any(np.isnan(b)):
        raise ValueError("values and bound must not contain NaN")
    k, n = int(np.count_nonzero(v <= b)), int(v.size)
    ci = scipy.stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
    return FractionBelow(k / n, float(ci.low), float(ci.high), k, n, confidence)


@dataclass(frozen=True)
class MeanCI:
    """Mean of ``n`` per-seed values with a Student t interval (collapsed to the mean if n = 1).

    clipped: the t interval left the quantity's ``support`` (e.g. below 0 for a regret) and was
    cut at its edge; the interval is then ``[support edge, ...]`` and says so when printed.
    """

    mean: float
    ci_low: float
    ci_high: float
    n: int
    confidence: float = 0.95
    clipped: bool = False

    @property
    def half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2

    def __str__(self) -> str:
        text = f"{self.mean:.4g} +- {self.half_width:.2g}"
        return text + (" (interval clipped to the support)" if self.clipped else "")

    def interval_text(self, spec: str = ".2f") -> str:
        """``[low, high]`` for a table cell, ``[low, high] clipped`` when cut at the support."""
        return f"[{self.ci_low:{spec}}, {self.ci_high:{spec}}]" + (
            " clipped" if self.clipped else ""
        )


def final_ci(
    values,
    confidence: float = 0.95,
    support: tuple[float | None, float | None] = (None, None),
) -> MeanCI:
    """Mean and two-sided Student t interval ``mean +- t_{n-1} * sd / sqrt(n)`` of ``values (B,)``.

    Used for summary tables (final cumulative regret, returns). B = 1 or zero spread gives
    ``ci_low = ci_high = mean``.

    support: ``(low, high)`` bounds the quantity cannot leave (None: unbounded), e.g. ``(0, None)``
    for a regret. The symmetric t interval ignores them: with few seeds it reaches far past them
    (two seeds multiply the spread by t_{1, 0.975} = 12.7, so a regret's interval goes negative).
    Such an interval is cut at the support's edge and marked ``clipped=True`` (never past the
    mean, which round-off may put a hair outside the support).
    """
    confidence = _check_confidence(confidence)
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or v.size < 1:
        raise ValueError(f"values must have shape (B,), got {v.shape}")
    low, high = support
    n, m = int(v.size), float(v.mean())
    if n == 1:
        return MeanCI(m, m, m, 1, confidence)
    sem = float(v.std(ddof=1)) / math.sqrt(n)
    half = float(scipy.stats.t.ppf(0.5 + confidence / 2, df=n - 1)) * sem
    lo, hi = m - half, m + half
    clipped = (low is not None and lo < low) or (high is not None and hi > high)
    if low is not None:
        lo = max(lo, min(float(low), m))
    if high is not None:
        hi = min(hi, max(float(high), m))
    return MeanCI(m, lo, hi, n, confidence, bool(clipped))
