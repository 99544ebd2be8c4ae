"""Every figure helper of theorylab (ground floor: no import of mdps/, algorithms/, ...).

* :func:`plot_regret` -- mean cumulative regret over seeds with a pointwise bootstrap band
  (:func:`theorylab.stats.mean_curve_ci`: percentile bootstrap over seeds), and the theorem's
  bound as a dashed curve labelled with its constants; optionally the bound rescaled to meet the
  empirical curve at the last episode, which shows the *rate* when the constants put the raw
  bound far above the data (the label says "rescaled" and by how much).
* :func:`plot_loglog` -- the same curves on log-log axes with the fitted growth exponents
  (:func:`theorylab.stats.loglog_slope`, bootstrap CI in the legend) and a reference line of the
  bound's exponent.
* :func:`save_figure` -- PNG / SVG / PDF by suffix, written atomically (temp file + os.replace).
* offline RL: :func:`plot_suboptimality_vs_n` (log-log against the sample size N, with the
  fitted slope and the bound drawn as printed or rescaled, the label saying so),
  :func:`plot_suboptimality_vs_cstar` (against the concentrability C*),
  :func:`plot_suboptimality_lines` (log-x, for curves that reach exactly 0) and
  :func:`plot_suboptimality_seeds` (per-seed values at one N);
* risk: :func:`plot_return_distribution` (an exact return law with VaR, CVaR and the mean
  marked; the lines' ``gid`` are ``"var"``, ``"cvar"``, ``"mean"``) and :func:`plot_cvar_regret`.

This is the one home of the library's figure helpers (``docs/architecture.md``); results draw
themselves through it (``Result.plot``), and the scripts that *compute* the docs' figures live in
``theorylab.figures``.

No global state is touched: figures are built as ``matplotlib.figure.Figure`` objects (no pyplot
figure manager, no ``matplotlib.use``, no rcParams changes), rendered with the Agg canvas, so the
module is safe in scripts, servers, tests and notebooks alike. Every plotting function takes an
optional ``ax`` and returns the Axes it drew on (its figure is ``ax.figure``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
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


def new_panels(n: int, panel_size: tuple[float, float] = (7.0, 5.6)) -> list[Axes]:
    """``n`` side-by-side Axes on one fresh Agg-backed Figure (constrained layout)."""
    fig = Figure(figsize=(panel_size[0] * n, panel_size[1]), layout="constrained")
    FigureCanvasAgg(fig)
    return list(fig.subplots(1, n, squeeze=False)[0])


def _legend_below(ax: Axes) -> None:
    """The legend under the axes, so long labels (bound constants, sources) never cover data;
    the constrained layout of :func:`new_axes` makes room for it."""
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.13), frameon=False)


def _finish(
    ax: Axes,
    xlabel: str | None,
    ylabel: str,
    title: str | None,
    *,
    log: str = "",
    legend: str | None = "inside",
) -> None:
    """The common finish of a figure: log scales on the axes named in ``log`` (``"x"``, ``"y"``,
    ``"xy"``), the axis labels (``xlabel`` None: none), the title when there is one, and the
    legend (``"inside"``: small, in the axes; ``"below"``: :func:`_legend_below`; None: the
    caller draws its own)."""
    if "x" in log:
        ax.set_xscale("log")
    if "y" in log:
        ax.set_yscale("log")
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if legend == "below":
        _legend_below(ax)
    elif legend == "inside":
        ax.legend(fontsize="small")


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


def _mean_band(
    ax: Axes, xv, arr, color, label: str, confidence: float, n_resamples: int, log: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The mean of ``arr (B, K)`` against ``xv (K,)`` with its bootstrap band (when B > 1). On log
    axes (``log``) only the positive points are drawn (e.g. zero regret at k = 1 is dropped) and
    the band is floored at 1e-3 of the mean. Returns the mean ``(K,)`` and the drawn points
    ``ok (K,)``."""
    mean, lo, hi = mean_curve_ci(arr, confidence, n_resamples=n_resamples)
    ok = mean > 0 if log else np.ones(arr.shape[1], dtype=bool)
    ax.plot(
        xv[ok], mean[ok], color=color, lw=1.6, label=_band_label(label, arr.shape[0], confidence)
    )
    if arr.shape[0] > 1:
        low = np.maximum(lo[ok], mean[ok] * 1e-3) if log else lo[ok]
        ax.fill_between(xv[ok], low, hi[ok], color=color, alpha=0.2, lw=0)
    return mean, ok


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
    references: Mapping[str, np.ndarray] | None = None,
    informative_from: Mapping[str, int | None] | None = None,
    notes: Sequence[str] = (),
    loglog: bool = False,
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
    references: ``{label: (K,)}`` exact reference curves drawn in grey, e.g. the null agent's
        cumulative regret (uniformly random policy; dash-dot) and the trivial bound K x the
        largest per-episode regret (dotted), from ``theorylab.validations.reference``.
    informative_from: ``{bound label: K or None}`` the K from which each bound is informative
        (below the trivial bound): a vertical line marks it when it falls inside the plotted
        range; otherwise the bound's legend entry says it is vacuous over the plotted range.
    notes: extra legend lines (no curve), e.g. why a bound is not drawn.
    loglog: logarithmic axes (non-positive points dropped), on which a bound drawn as printed
        fits beside the data.
    """
    if not curves:
        raise ValueError("plot_regret needs at least one curve")
    if loglog and rescale_bound is not False:
        raise ValueError("loglog=True draws the bounds as printed: pass rescale_bound=False")
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
        mean, _ = _mean_band(ax, xv, arr, colors[i], label, confidence, n_resamples, loglog)
        means[label], xs[label] = mean, xv

    first_x = xs[next(iter(curves))]
    for j, (label, ref) in enumerate((references or {}).items()):
        r = np.asarray(ref, dtype=float)  # (K,)
        if r.shape != first_x.shape:
            raise ValueError(f"reference {label!r} has shape {r.shape}, expected {first_x.shape}")
        ok = r > 0 if loglog else np.ones(r.shape, dtype=bool)
        ax.plot(
            first_x[ok],
            r[ok],
            color=str(0.2 + 0.25 * j),
            lw=1.3,
            ls=("-." if j == 0 else ":"),
            label=label,
        )
    informative = dict(informative_from or {})

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
            shown = label
            if label in informative:
                k_inf = informative[label]
                if k_inf is not None and k_inf <= xb[-1]:
                    ax.axvline(
                        k_inf,
                        color=color,
                        ls=":",
                        lw=1.2,
                        label=f"{label.split(' ')[0]} informative from K = {k_inf}",
                    )
                elif k_inf is None:
                    shown = f"{label}: vacuous over the plotted range (and beyond)"
                else:
                    shown = (
                        f"{label}: vacuous over the plotted range "
                        f"(informative from K = {k_inf:.3g})"
                    )
            if rescale_bound is False or rescale_bound == "both":
                ok = b > 0 if loglog else np.ones(b.shape, dtype=bool)
                ax.plot(xb[ok], b[ok], ls="--", color=color, lw=1.4, label=shown)
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
                    label=f"{shown}, rescaled ×{c:.3g} to meet {target} at the end (rate only)",
                )
    for note in notes:
        ax.plot([], [], " ", label=note)
    _finish(ax, xlabel, ylabel, title, log="xy" if loglog else "", legend="below")
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
        mean, ok = _mean_band(ax, xv, arr, colors[i], label, confidence, n_resamples, True)
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
    _finish(ax, xlabel, ylabel, title, log="xy", legend="below")
    return ax


_DEFERRED: list[tuple[Figure | Axes, list, int]] | None = None


@contextlib.contextmanager
def deferred_saves() -> Iterator[list[tuple[Figure | Axes, list, int]]]:
    """Within the block :func:`save_figure` keeps each figure instead of writing it; yields the
    list of ``(figure, paths, dpi)`` it kept, for the caller to complete (:func:`title_note`) and
    write with :func:`save_figure` after the block. ``theorylab.validations.validate`` uses it:
    a claim draws its figure while it runs, but its verdict is final only after its negative
    controls have run."""
    global _DEFERRED
    outer, _DEFERRED = _DEFERRED, []
    try:
        yield _DEFERRED
    finally:
        _DEFERRED = outer


def title_note(fig: Figure | Axes, text: str) -> None:
    """Append ``": text"`` to the title of a one-axes figure (a suptitle on any other)."""
    fig = fig.figure if isinstance(fig, Axes) else fig
    titled = [ax for ax in fig.axes if ax.get_title()]
    if len(fig.axes) == 1 and titled:
        titled[0].set_title(f"{titled[0].get_title()}: {text}")
    else:
        fig.suptitle(text)


def save_figure(
    fig: Figure | Axes, path: str | os.PathLike | Sequence[str | os.PathLike], *, dpi: int = 150
) -> list[Path]:
    """Write ``fig`` to each path, the format taken from the suffix (.png, .svg, .pdf).

    Every file is written atomically. SVG output is made reproducible (fixed id salt, no date).
    Returns the paths written (inside :func:`deferred_saves`: the paths it will be written to).
    """
    figure = fig.figure if isinstance(fig, Axes) else fig
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    for p in map(Path, paths):
        if FORMATS.get(p.suffix.lower()) is None:
            raise ValueError(f"cannot tell the format of {p}; use one of {sorted(FORMATS)}")
    if _DEFERRED is not None:
        _DEFERRED.append((fig, paths, dpi))  # as given: a Figure or its Axes
        return [Path(p) for p in paths]
    out = []
    for p in map(Path, paths):
        fmt = FORMATS[p.suffix.lower()]
        metadata = {"Date": None} if fmt == "svg" else None
        with (
            matplotlib.rc_context({"svg.hashsalt": "theorylab"}),
            atomic_writer(p, "wb") as fh,
        ):
            figure.savefig(fh, format=fmt, dpi=dpi, metadata=metadata)
        out.append(p)
    return out


# ------------------------------------------------------------------------------ offline RL
def _with_bound(ax: Axes, x, curves, bound_curves, rescale: bool) -> None:
    if not bound_curves:
        return
    first = np.atleast_2d(np.asarray(next(iter(curves.values())), dtype=float)).mean(axis=0)
    for i, (label, b) in enumerate(bound_curves.items()):
        b = np.asarray(b, dtype=float)
        if rescale:
            c = first[-1] / b[-1]
            ax.plot(
                x,
                c * b,
                ls="--",
                color=f"C{5 + i}",
                lw=1.3,
                label=f"{label}, rescaled x{c:.2g} to meet the data (rate only)",
            )
        else:
            ax.plot(x, b, ls="--", color=f"C{5 + i}", lw=1.3, label=label)
    ax.legend(fontsize="x-small")


def plot_suboptimality_vs_n(
    N,
    curves: Mapping[str, np.ndarray],
    *,
    bound_curves: Mapping[str, np.ndarray] | None = None,
    bound_exponent: float | None = -0.5,
    rescale_bound: bool = True,
    fit_range=(0.5, 1.0),
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """Log-log sub-optimality against the sample size N.

    N: ``(K,)`` sample sizes; curves: ``{label: (B, K)}`` exact sub-optimality per seed (positive
    means are required inside the fit range; zeros are dropped from the log axes).
    bound_curves: ``{label: (K,)}`` a bound evaluated at N (e.g. ``get_bound("vi-lcb-upper")``
    with its constant C = 1); bound_exponent: a reference line N^exponent.
    """
    Nv = np.asarray(N, dtype=float)
    fits: dict[str, SlopeFit] = {}
    for label, c in curves.items():
        arr = np.atleast_2d(np.asarray(c, dtype=float))
        ok = arr.mean(axis=0) > 0
        if ok.sum() >= 2:
            fits[label] = loglog_slope(Nv[ok], arr[:, ok], fit_range=fit_range)
    ax = plot_loglog(
        Nv,
        curves,
        fits,
        bound_exponent,
        x_name="N",
        ax=ax,
        title=title,
        xlabel="samples N",
        ylabel="sub-optimality V*(mu0) - V^pi_hat(mu0)",
    )
    _with_bound(ax, Nv, curves, bound_curves, rescale_bound)
    return ax


def plot_suboptimality_vs_cstar(
    C_star,
    curves: Mapping[str, np.ndarray],
    *,
    bound_exponent: float | None = 0.5,
    fit_range=(0.5, 1.0),
    ax: Axes | None = None,
    title: str | None = None,
    N: int | None = None,
) -> Axes:
    """Log-log sub-optimality against the single-policy concentrability C* at a fixed N."""
    Cv = np.asarray(C_star, dtype=float)
    fits = {}
    for label, c in curves.items():
        arr = np.atleast_2d(np.asarray(c, dtype=float))
        if np.all(arr.mean(axis=0) > 0):
            fits[label] = loglog_slope(Cv, arr, fit_range=fit_range)
    return plot_loglog(
        Cv,
        curves,
        fits,
        bound_exponent,
        x_name="{C^*}",
        ax=ax,
        title=title,
        xlabel="single-policy concentrability C*" + (f"  (N = {N:g})" if N else ""),
        ylabel="sub-optimality",
    )


def plot_suboptimality_lines(
    N,
    curves: Mapping[str, np.ndarray],
    *,
    reference: float | None = None,
    reference_label: str = "",
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """Mean sub-optimality (with a +-1 standard error band) against N on a log-x axis, for curves
    that reach exactly 0 (which a log-log plot cannot show), e.g. partial coverage."""
    ax = new_axes() if ax is None else ax
    Nv = np.asarray(N, dtype=float)
    for i, (label, c) in enumerate(curves.items()):
        arr = np.atleast_2d(np.asarray(c, dtype=float))
        m = arr.mean(axis=0)
        se = arr.std(axis=0, ddof=1) / np.sqrt(arr.shape[0]) if arr.shape[0] > 1 else 0 * m
        ax.plot(Nv, m, marker="o", color=f"C{i}", label=f"{label} (mean of {arr.shape[0]} seeds)")
        ax.fill_between(Nv, m - se, m + se, color=f"C{i}", alpha=0.2, lw=0)
    if reference is not None:
        ax.axhline(reference, color="0.4", ls=":", label=reference_label)
    _finish(ax, "samples N", "sub-optimality", title, log="x")
    return ax


def plot_suboptimality_seeds(
    values: Mapping[str, np.ndarray],
    *,
    N: int | None = None,
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """Per-seed exact sub-optimality at one dataset size: one column of points per algorithm,
    with the mean and its Student t 95% interval.

    values: ``{label: (B,)}`` sub-optimality per seed.
    """
    from theorylab.stats import final_ci

    ax = new_axes((6.4, 4.2)) if ax is None else ax
    for i, (label, v) in enumerate(values.items()):
        v = np.asarray(v, dtype=float).ravel()
        jitter = np.linspace(-0.15, 0.15, len(v)) if len(v) > 1 else np.zeros(1)
        ax.plot(i + jitter, v, "o", color=f"C{i}", alpha=0.6, ms=4)
        ci = final_ci(v)
        ax.errorbar(
            [i + 0.3],
            [ci.mean],
            yerr=[[ci.mean - ci.ci_low], [ci.ci_high - ci.mean]] if len(v) > 1 else None,
            fmt="s",
            color="k",
            capsize=4,
            label=f"{label}: mean {ci.mean:.3g} over {len(v)} seeds"
            + (" (95% CI)" if len(v) > 1 else ""),
        )
    ax.set_xticks(range(len(values)), list(values))
    xlabel = None if N is None else f"dataset size N = {N:g}"
    _finish(ax, xlabel, "sub-optimality V*(mu0) - V^pi_hat(mu0)", title)
    return ax


# ------------------------------------------------------------------------------ risk
MARKERS = ("var", "cvar", "mean")


def plot_return_distribution(
    dist,
    tau: float = 0.25,
    *,
    ax=None,
    row: int = 0,
    title: str | None = None,
    tol: float = 1e-12,
):
    """Bars of an exact return distribution with VaR_tau, CVaR_tau and the mean marked.

    dist: a return distribution with ``values (n,)`` and ``probs (n,)`` or ``(B, n)`` (e.g.
        :class:`~theorylab.algorithms.risk.ReturnDistribution` (one policy, or a batch:
        ``row`` picks the policy).
    tau: the CVaR level in (0, 1].
    ax: an Axes to draw on (default: a fresh one from ``theorylab.plotting.new_axes``).
    Atoms with probability <= ``tol`` are not drawn. Returns the Axes.
    """
    from theorylab.risk_measures import cvar, var

    if ax is None:
        ax = new_axes((6.4, 4.2))
    values = np.asarray(dist.values, dtype=float)
    probs = np.asarray(dist.probs, dtype=float)
    if probs.ndim == 2:
        probs = probs[row]
    keep = probs > tol
    v, p = values[keep], probs[keep]
    m = float(p @ v)
    q = float(var(v, p, tau))
    c = float(cvar(v, p, tau))
    step = float(np.min(np.diff(values))) if len(values) > 1 else 1.0
    width = 0.6 * step
    # the tau-tail: mass below VaR fully, the VaR atom up to tau
    below = np.cumsum(p) - p  # mass strictly before each atom (v sorted ascending)
    tail = np.clip(tau - below, 0.0, p)
    ax.bar(v, p, width=width, color="C0", alpha=0.35, label="Pr(Z = z)")
    ax.bar(v, tail, width=width, color="C0", alpha=0.9, label=f"worst {tau:g} of the mass")
    ax.axvline(q, color="C3", ls=":", lw=2, label=f"VaR_{tau:g} = {q:.3g}", gid="var")
    ax.axvline(c, color="C3", ls="--", lw=2, label=f"CVaR_{tau:g} = {c:.3g}", gid="cvar")
    ax.axvline(m, color="k", ls="-", lw=1.5, label=f"mean = {m:.3g}", gid="mean")
    ax.set_ylim(0, max(1.3 * float(p.max()), 0.05))
    ax.set_xlim(float(values[0]) - step, float(values[-1]) + step)  # the whole return lattice
    _finish(ax, "return Z", "probability", title, legend=None)
    ax.legend(loc="upper left", fontsize="small", ncols=2)
    return ax


def plot_cvar_regret(curves: Mapping[str, np.ndarray], *, objective: str = "CVaR", **kwargs):
    """Cumulative exact risk-sensitive regret: ``plot_regret`` with the objective in the label.

    curves: ``{label: (B, K) cumulative regret}`` (e.g. ``run(...).cumulative_regret``);
    objective: e.g. ``"static CVaR_0.25"`` or ``"iterated CVaR^0.25"``. Other keyword arguments
    go to :func:`theorylab.plotting.plot_regret`.
    """
    kwargs.setdefault("ylabel", f"cumulative {objective} regret")
    return plot_regret(curves, **kwargs)


# ------------------------------------------------------------------------------ deep training
def plot_training_panels(
    result, metrics: Sequence[str] = ("accuracy", "kl_optimum"), *, panel_size=(6.0, 4.8)
) -> Figure:
    """Side-by-side panels of a training result's exact-metric curves (one per metric), each
    drawn by ``result.plot(ax=..., metric=...)``; returns the Figure."""
    fig = Figure(figsize=(panel_size[0] * len(metrics), panel_size[1]), layout="constrained")
    FigureCanvasAgg(fig)
    for ax, metric in zip(fig.subplots(1, len(metrics), squeeze=False)[0], metrics, strict=True):
        result.plot(ax=ax, metric=metric)
    return fig


# ------------------------------------------------------------------------------ deep twins
def plot_twin_curves(
    curves: Mapping[str, tuple], path: str | None = None, ax: Axes | None = None, title: str = ""
) -> Axes:
    """Training curves of tabular deep twins: ``{label: (steps (n,), tv_predicted, kl_optimum)}``
    with (n,) or (B, n) curves (the mean over seeds is drawn): the TV to the twin's predicted
    fixed point (solid) and the KL to pi*_beta (dashed), log scale, floored at 1e-16."""
    own = ax is None
    ax = new_axes() if own else ax
    for (label, (steps, tv, kl)), color in zip(curves.items(), _colors(len(curves)), strict=True):
        tv = np.atleast_2d(np.asarray(tv, dtype=float)).mean(axis=0)
        kl = np.atleast_2d(np.asarray(kl, dtype=float)).mean(axis=0)
        ax.plot(steps, np.maximum(tv, 1e-16), color=color, label=f"{label}: TV to its prediction")
        ax.plot(steps, np.maximum(kl, 1e-16), color=color, linestyle="--",
                label=f"{label}: KL to pi*_beta")  # fmt: skip
    _finish(ax, "gradient step", "exact distance", title, log="y", legend="below")
    if own and path:
        save_figure(ax.figure, path)
    return ax


def plot_lines(
    x,
    curves: Mapping[str, np.ndarray],
    *,
    xlabel: str,
    ylabel: str,
    title: str = "",
    logx: bool = False,
    logy: bool = False,
    path: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Plain exact curves against one parameter: ``{label: (len(x),) values}`` (no bands: the
    values are exact, not estimates)."""
    own = ax is None
    ax = new_axes() if own else ax
    for (label, y), color in zip(curves.items(), _colors(len(curves)), strict=True):
        ax.plot(x, y, color=color, marker="o", markersize=3, label=label)
    log = ("x" if logx else "") + ("y" if logy else "")
    _finish(ax, xlabel, ylabel, title, log=log, legend="below")
    if own and path:
        save_figure(ax.figure, path)
    return ax


def plot_regularised_values(
    alphas,
    values,
    lp_value: float,
    *,
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """The alpha -> 0 picture of f-regularised RL: the gap ``J_LP - J(alpha)`` against alpha on
    log-log axes, with the slope-1 guide through the smallest alpha.

    alphas: ``(M,)`` increasing; values: ``(M,)`` J(alpha); lp_value: J_LP (same units).
    """
    ax = new_axes() if ax is None else ax
    a = np.asarray(alphas, dtype=float)
    gap = lp_value - np.asarray(values, dtype=float)
    ax.plot(a, np.maximum(gap, 1e-300), marker="o", label="J_LP - J(alpha)")
    if a.size > 1 and gap[0] > 0:
        ax.plot(a, gap[0] * a / a[0], color="0.4", ls=":", label="slope 1 (rate alpha)")
    _finish(ax, "alpha", "regularisation gap", title, log="xy")
    return ax


def plot_regret_and_queries(
    regret: Mapping[str, np.ndarray],
    queries: Mapping[str, np.ndarray],
    *,
    x: np.ndarray | None = None,
    confidence: float = 0.95,
    ax: Axes | None = None,
    title: str | None = None,
    xlabel: str = "episode k",
    ylabel: str = "cumulative regret",
) -> Axes:
    """Preference-based runs: the regret (or sub-optimality) curves with bootstrap bands on the
    left axis and the mean number of preference queries, dotted, on a right axis (log scale).

    regret, queries: ``{label: (B, K)}``; the right axis is ``ax.right_axis``."""
    ax = plot_regret(
        regret, x=x, confidence=confidence, ax=ax, title=title, xlabel=xlabel, ylabel=ylabel
    )
    right = ax.twinx()
    colors = _colors(len(regret))
    for i, (label, q) in enumerate(queries.items()):
        arr = np.atleast_2d(np.asarray(q, dtype=float))
        xv = np.arange(1, arr.shape[1] + 1) if x is None else np.asarray(x, dtype=float)
        right.plot(
            xv,
            arr.mean(axis=0),
            ls=":",
            lw=1.8,
            color=colors[i % len(colors)],
            label=f"{label}: queries (mean)",
        )
    right.set_ylabel("preference queries (dotted)")
    if np.any([np.asarray(q).max() > 0 for q in queries.values()]):
        right.set_yscale("symlog")
    right.legend(fontsize="x-small", loc="upper left")
    ax.right_axis = right
    return ax


def plot_regret_query_tradeoff(
    thresholds: Sequence[float],
    regret: np.ndarray,
    queries: np.ndarray,
    *,
    confidence: float = 0.95,
    ax: Axes | None = None,
    title: str | None = None,
    guide: bool = True,
) -> Axes:
    """The regret / query trade-off of an active-query learner (PR-LSVI's threshold): one point
    per threshold at (mean final queries, mean final cumulative regret), Student t intervals over
    seeds on both axes, log-log, each point labelled with its threshold; ``guide`` draws the
    lower-bound shape regret ~ K / sqrt(Q) (slope -1/2) through the point with the most queries.

    thresholds: ``(M,)``; regret, queries: ``(M, B)`` final values per threshold and seed."""
    from theorylab.stats import final_ci

    ax = new_axes() if ax is None else ax
    r = np.asarray(regret, dtype=float)
    q = np.asarray(queries, dtype=float)
    if r.shape != q.shape or r.ndim != 2 or r.shape[0] != len(thresholds):
        raise ValueError(
            f"regret and queries must be (M, B) with M = {len(thresholds)} thresholds, got "
            f"{r.shape} and {q.shape}"
        )
    rc = [final_ci(row, confidence) for row in r]
    qc = [final_ci(row, confidence) for row in q]
    xm, ym = np.array([c.mean for c in qc]), np.array([c.mean for c in rc])
    xerr = np.array([[c.mean - c.ci_low for c in qc], [c.ci_high - c.mean for c in qc]])
    yerr = np.array([[c.mean - c.ci_low for c in rc], [c.ci_high - c.mean for c in rc]])
    ax.errorbar(xm, ym, xerr=xerr, yerr=yerr, fmt="o-", capsize=3, label="mean final (95% CI)")
    for t, xv, yv in zip(thresholds, xm, ym, strict=True):
        ax.annotate(f"eps = {t:g}", (xv, yv), textcoords="offset points", xytext=(6, 4))
    if guide and (xm > 0).all():
        i = int(np.argmax(xm))
        grid = np.geomspace(xm.min(), xm.max(), 50)
        ax.plot(
            grid,
            ym[i] * np.sqrt(xm[i] / grid),
            color="0.4",
            ls=":",
            label="slope -1/2: regret ~ K / sqrt(queries)",
        )
    xlabel, ylabel = "preference queries Q (mean over seeds)", "cumulative regret (mean over seeds)"
    _finish(ax, xlabel, ylabel, title, log="xy")
    return ax


# ------------------------------------------------------------------ exact policy optimisation
def plot_policy_path(
    curves: Mapping[str, np.ndarray],
    *,
    ylabel: str,
    title: str = "",
    logy: bool = False,
    ax: Axes | None = None,
    path: str | None = None,
) -> Axes:
    """Exact per-iterate curves of policy-optimisation runs: ``{label: (K+1,) values}`` against
    the iteration k = 0..K (no bands: the values are exact). ``logy`` floors at 1e-16."""
    own = ax is None
    ax = new_axes() if own else ax
    for (label, y), color in zip(curves.items(), _colors(len(curves)), strict=True):
        y = np.asarray(y, dtype=float)
        ax.plot(np.arange(y.size), np.maximum(y, 1e-16) if logy else y, color=color, label=label)
    _finish(ax, "iteration k", ylabel, title, log="y" if logy else "", legend="below")
    if own and path:
        save_figure(ax.figure, path)
    return ax


def plot_goal_distances(
    target: np.ndarray,
    learned: Mapping[str, np.ndarray],
    *,
    title: str = "",
    ax: Axes | None = None,
    path: str | None = None,
) -> Axes:
    """Learned goal distances against the true ones, one point per ordered pair (s, g) with
    s != g: ``target`` ``(S, S)``, ``learned`` ``{label: (S, S)}``; the diagonal y = x is exact
    recovery. Points are not jittered: equal distances overlap, the first label's drawn on top."""
    own = ax is None
    ax = new_axes() if own else ax
    target = np.asarray(target, dtype=float)
    off = ~np.eye(target.shape[0], dtype=bool)
    markers = ("o", "x", "s", "^", "v", "d")
    for i, ((label, d), color) in enumerate(
        zip(learned.items(), _colors(len(learned)), strict=True)
    ):
        d = np.asarray(d, dtype=float)
        ax.scatter(
            target[off],
            d[off],
            s=18,
            color=color,
            marker=markers[i % 6],
            label=label,
            zorder=3 + len(learned) - i,  # the first on top
        )
    top = float(target[off].max()) if off.any() else 1.0
    ax.plot([0, top], [0, top], color="0.4", lw=1, ls="--", label="exact: d = d*")
    _finish(ax, "true distance d*(s, g)", "learned d(s, g)", title, legend="below")
    if own and path:
        save_figure(ax.figure, path)
    return ax
