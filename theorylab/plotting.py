"""Regret figures with the bound drawn on them (ground floor: no import of mdps/, algorithms/, ...).

* :func:`plot_regret` -- mean cumulative regret over seeds with a pointwise bootstrap band
  (:func:`theorylab.stats.mean_curve_ci`: percentile bootstrap over seeds), and the theorem's
  bound as a dashed curve labelled with its constants; optionally the bound rescaled to meet the
  empirical curve at the last episode, which shows the *rate* when the constants put the raw
  bound far above the data (the label says "rescaled" and by how much).
* :func:`plot_loglog` -- the same curves on log-log axes with the fitted growth exponents
  (:func:`theorylab.stats.loglog_slope`, bootstrap CI in the legend) and a reference line of the
  bound's exponent.
* :func:`save_figure` -- PNG / SVG / PDF by suffix, written atomically (temp file + os.replace).

No global state is touched: figures are built as ``matplotlib.figure.Figure`` objects (no pyplot
figure manager, no ``matplotlib.use``, no rcParams changes), rendered with the Agg canvas, so the
module is safe in scripts, servers, tests and notebooks alike. Every plotting function takes an
optional ``ax`` and returns the Axes it drew on (its figure is ``ax.figure``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from theorylab.stats import SlopeFit, loglog_slope, mean_curve_ci
from theorylab.store import atomic_writer

FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}


def new_axes(figsize: tuple[float, float] = (8.0, 5.6)) -> Axes:
    """A fresh Axes on its own Agg-backed Figure (not registered with pyplot)."""
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig.add_subplot()


def _legend_below(ax: Axes) -> None:
    """The legend under the axes, so long labels (bound constants, sources) never cover data;
    the constrained layout of :func:`new_axes` makes room for it."""
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.13), frameon=False)


def _colors(n: int) -> list:
    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    return [cycle[i % len(cycle)] for i in range(n)]


def _darker(color, amount: float = 0.45) -> tuple[float, float, float]:
    """``color`` blended towards black (fit lines drawn over their own curve stay visible)."""
    r, g, b = matplotlib.colors.to_rgb(color)
    return (r * (1 - amount), g * (1 - amount), b * (1 - amount))


def _band_label(label: str, B: int, confidence: float) -> str:
    if B == 1:
        return f"{label} (1 seed)"
    return f"{label} (mean of {B} seeds, {100 * confidence:g}% bootstrap CI)"


def plot_regret(
    curves: Mapping[str, np.ndarray],
    bound_curves: Mapping[str, np.ndarray] | None = None,
    *,
    rescale_bound: bool | str = False,
    x: np.ndarray | None = None,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    ax: Axes | None = None,
    title: str | None = None,
    xlabel: str = "episode k",
    ylabel: str = "cumulative regret",
) -> Axes:
    """Mean cumulative regret per algorithm with bootstrap bands, and the bound curves.

    curves: ``{label: (B, K) cumulative regret}`` (a ``(K,)`` array is one seed).
    bound_curves: ``{label: (K,)}`` the bound evaluated at each episode; put the constants in the
        label (``"Thm 1: 7 H S sqrt(A T L)"``); drawn dashed.
    rescale_bound: False draws the bounds as they are; True draws each bound multiplied by the
        factor that makes it equal the first curve's mean at the last episode (the label says
        "rescaled × c"); a curve label instead of True rescales to that curve; ``"both"`` draws
        the raw and the rescaled bound.
    x: ``(K,)`` x values (default episodes 1..K; curves of different K get their own 1..K).
    """
    if not curves:
        raise ValueError("plot_regret needs at least one curve")
    ax = new_axes() if ax is None else ax
    colors = _colors(len(curves) + len(bound_curves or {}))
    means: dict[str, np.ndarray] = {}
    xs: dict[str, np.ndarray] = {}
    for i, (label, curve) in enumerate(curves.items()):
        arr = np.atleast_2d(np.asarray(curve, dtype=float))  # (B, K)
        K = arr.shape[1]
        xv = np.arange(1, K + 1) if x is None else np.asarray(x, dtype=float)
        if xv.shape != (K,):
            raise ValueError(f"x has shape {xv.shape}, curve {label!r} has {K} points")
        mean, lo, hi = mean_curve_ci(arr, confidence, n_resamples=n_resamples)
        ax.plot(
            xv, mean, color=colors[i], lw=1.6, label=_band_label(label, arr.shape[0], confidence)
        )
        if arr.shape[0] > 1:
            ax.fill_between(xv, lo, hi, color=colors[i], alpha=0.2, lw=0)
        means[label], xs[label] = mean, xv

    if bound_curves:
        target = next(iter(curves)) if rescale_bound in (True, "both") else rescale_bound
        if target is not False and target not in means:
            raise ValueError(
                f"rescale_bound={rescale_bound!r} names no curve; curves: {list(means)}"
            )
        for j, (label, bound) in enumerate(bound_curves.items()):
            b = np.asarray(bound, dtype=float)  # (K,)
            color = colors[len(curves) + j]
            xb = xs[target] if target is not False else xs[next(iter(curves))]
            if b.shape != xb.shape:
                raise ValueError(f"bound {label!r} has shape {b.shape}, expected {xb.shape}")
            if rescale_bound is False or rescale_bound == "both":
                ax.plot(xb, b, ls="--", color=color, lw=1.4, label=label)
            if target is not False:
                if b[-1] <= 0:
                    raise ValueError(f"bound {label!r} is not positive at the last episode")
                c = means[target][-1] / b[-1]
                ax.plot(
                    xb,
                    c * b,
                    ls=":" if rescale_bound == "both" else "--",
                    color=color,
                    lw=1.4,
                    label=f"{label}, rescaled ×{c:.3g} to meet {target} at the end (rate only)",
                )
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    _legend_below(ax)
    return ax


def _exponent_text(exponent: float) -> str:
    frac = Fraction(exponent).limit_denominator(12)
    if abs(float(frac) - exponent) < 1e-9 and frac.denominator != 1:
        return f"{frac.numerator}/{frac.denominator}"
    return f"{exponent:g}"


def plot_loglog(
    x: np.ndarray,
    curves: Mapping[str, np.ndarray],
    fits: Mapping[str, SlopeFit] | None = None,
    bound_exponent: float | None = None,
    *,
    x_name: str = "K",
    confidence: float = 0.95,
    n_resamples: int = 1000,
    ax: Axes | None = None,
    title: str | None = None,
    xlabel: str = "episodes K",
    ylabel: str = "cumulative regret",
) -> Axes:
    """Log-log plot of mean curves with bands, fitted slopes and the bound's exponent.

    x: ``(K,)`` positive x values shared by all curves (episodes, or swept S / A / H values).
    curves: ``{label: (B, K)}`` positive values (cumulative regret, final regret per value).
    fits: ``{label: SlopeFit}``; None fits every curve with :func:`loglog_slope`'s defaults.
        Each fit is drawn dashed, in a darker shade of its curve's colour, over its x range; the
        slope and its CI go in the legend.
    bound_exponent: draws ``x ** bound_exponent`` anchored at the first curve's mean at the
        last x (a reference for the *rate*; the constant is not the bound's).
    """
    if not curves:
        raise ValueError("plot_loglog needs at least one curve")
    ax = new_axes() if ax is None else ax
    xv = np.asarray(x, dtype=float)
    if fits is None:
        fits = {label: loglog_slope(xv, c, confidence=confidence) for label, c in curves.items()}
    colors = _colors(len(curves))
    first_mean = None
    for i, (label, curve) in enumerate(curves.items()):
        arr = np.atleast_2d(np.asarray(curve, dtype=float))  # (B, K)
        if arr.shape[1] != xv.shape[0]:
            raise ValueError(f"curve {label!r} has {arr.shape[1]} points, x has {xv.shape[0]}")
        mean, lo, hi = mean_curve_ci(arr, confidence, n_resamples=n_resamples)
        ok = mean > 0  # log axes: drop non-positive points (e.g. zero regret at k = 1)
        ax.plot(
            xv[ok],
            mean[ok],
            color=colors[i],
            lw=1.6,
            label=_band_label(label, arr.shape[0], confidence),
        )
        if arr.shape[0] > 1:
            ax.fill_between(
                xv[ok],
                np.maximum(lo[ok], mean[ok] * 1e-3),
                hi[ok],
                color=colors[i],
                alpha=0.2,
                lw=0,
            )
        first_mean = (xv[ok][-1], mean[ok][-1]) if first_mean is None else first_mean
        fit = fits.get(label)
        if fit is not None:
            xf = np.geomspace(*fit.x_range, 50)
            ax.plot(
                xf,
                fit.predict(xf),
                color=_darker(colors[i]),
                ls="--",
                lw=1.3,
                zorder=3,
                label=(
                    f"{label} fit: slope {fit.slope:.3f} "
                    f"[{fit.ci_low:.3f}, {fit.ci_high:.3f}] ({100 * fit.confidence:g}% CI)"
                ),
            )
    if bound_exponent is not None and first_mean is not None:
        x_end, y_end = first_mean
        xr = xv[xv > 0]
        ax.plot(
            xr,
            y_end * (xr / x_end) ** bound_exponent,
            color="0.4",
            ls=":",
            lw=1.4,
            label=(
                f"${x_name}^{{{_exponent_text(bound_exponent)}}}$ "
                "(bound's rate, anchored at the end)"
            ),
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    _legend_below(ax)
    return ax


def save_figure(
    fig: Figure | Axes, path: str | os.PathLike | Sequence[str | os.PathLike], *, dpi: int = 150
) -> list[Path]:
    """Write ``fig`` to each path, the format taken from the suffix (.png, .svg, .pdf).

    Every file is written atomically. SVG output is made reproducible (fixed id salt, no date).
    Returns the paths written.
    """
    figure = fig.figure if isinstance(fig, Axes) else fig
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    out = []
    for p in map(Path, paths):
        fmt = FORMATS.get(p.suffix.lower())
        if fmt is None:
            raise ValueError(f"cannot tell the format of {p}; use one of {sorted(FORMATS)}")
        metadata = {"Date": None} if fmt == "svg" else None
        with (
            matplotlib.rc_context({"svg.hashsalt": "theorylab"}),
            atomic_writer(p, "wb") as fh,
        ):
            figure.savefig(fh, format=fmt, dpi=dpi, metadata=metadata)
        out.append(p)
    return out


def plot_twin_curves(traces, path: str | None = None, ax: Axes | None = None, title: str = ""):
    """Training curves of tabular twins (theorylab.algorithms.deep.twins.TwinTrace or anything
    with ``twin``, ``steps``, ``tv_predicted`` and ``kl_optimum``): TV to the predicted fixed
    point (solid) and KL to pi*_beta (dashed), log scale."""
    own = ax is None
    ax = new_axes() if own else ax
    for tr, color in zip(traces, _colors(len(traces)), strict=True):
        floor = 1e-16
        ax.plot(tr.steps, np.maximum(tr.tv_predicted, floor), color=color,
                label=f"{tr.twin}: TV to its predicted point")  # fmt: skip
        ax.plot(tr.steps, np.maximum(tr.kl_optimum, floor), color=color, linestyle="--",
                label=f"{tr.twin}: KL to pi*_beta")  # fmt: skip
    ax.set_yscale("log")
    ax.set_xlabel("gradient step")
    ax.set_ylabel("exact distance")
    if title:
        ax.set_title(title)
    _legend_below(ax)
    if own and path:
        save_figure(ax.figure, path)
    return ax
