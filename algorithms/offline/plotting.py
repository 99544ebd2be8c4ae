"""Figures for offline RL: sub-optimality against N (log-log, with the bound) and against C*.

Both helpers draw the mean over seeds with a bootstrap band and the fitted log-log slope
(``theorylab.plotting.plot_loglog``), then the bound: either a curve evaluated from a Bound card
(drawn dashed, as printed, or rescaled to meet the first curve at its last point -- the label says
so) or just the bound's exponent as a reference line. They return the Axes; save with
``theorylab.plotting.save_figure``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.axes import Axes

from theorylab.plotting import plot_loglog
from theorylab.stats import SlopeFit, loglog_slope


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
    from theorylab.plotting import new_axes

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
    ax.set_xscale("log")
    ax.set_xlabel("samples N")
    ax.set_ylabel("sub-optimality")
    if title:
        ax.set_title(title)
    ax.legend(fontsize="small")
    return ax


# ------------------------------------------------------------------------------ tutorial figures
def make_tutorial_figures(outdir: str = "docs/figures", *, quick: bool = False, seed: int = 0):
    """The three figures of docs/tutorials/why-pessimism.md (returns their paths and the data).

    1. partial coverage (``tempting-arms``): naive VI, pessimistic VI and behaviour cloning
       against N;
    2. rates (``multiscale-bandit``): LCB on generic (C* = 4) and near-expert (C* = 1.05) data, and
       naive VI on generic data, log-log against N;
    3. concentrability: LCB's sub-optimality against C* at fixed N, with C* varied by covariate
       shift and by the behaviour's action mixture.
    """
    from pathlib import Path

    from theorylab.algorithms.offline import dataset_concentrability, fit, make_dataset
    from theorylab.algorithms.offline.coverage import optimal_solution
    from theorylab.algorithms.offline.experiment import suboptimality
    from theorylab.mdps import make
    from theorylab.mdps.families.offline_instances import (
        covariate_shift_distribution,
        naive_failure_limit,
        tempting_arms_coverage,
    )
    from theorylab.plotting import save_figure

    out = Path(outdir)
    B = 8 if quick else 32
    data: dict = {}
    # 1. partial coverage
    mdp = make("tempting-arms")
    Ns = [3000, 10_000, 30_000, 100_000] + ([] if quick else [300_000, 1_000_000])
    algos = (
        "naive-vi",
        "pessimistic-vi-hoeffding",
        "pessimistic-vi-bernstein",
        "behaviour-cloning",
    )
    v_star = optimal_solution(mdp).value
    curves = {a: np.empty((B, len(Ns))) for a in algos}
    for k, N in enumerate(Ns):
        ds = make_dataset(mdp, N, coverage=tempting_arms_coverage(N), seeds=B, seed=seed)
        for a in algos:
            curves[a][:, k] = suboptimality(mdp, fit(a, ds).policy, v_star)
    ax = plot_suboptimality_lines(
        Ns,
        curves,
        reference=naive_failure_limit() * 0.6,
        reference_label="naive VI, predicted limit (1 - (1 - q_m)^K) x gap",
        title="tempting-arms: each of 20 tempting arms tried twice (C* -> 1)",
    )
    p1 = save_figure(ax, out / "why-pessimism-1-partial-coverage.png")[0]
    data["partial_coverage"] = {a: c.mean(axis=0).tolist() for a, c in curves.items()}
    # 2. rates in N
    mdp = make("multiscale-bandit")
    Ns = [1000, 3000, 10_000, 30_000, 100_000] + ([] if quick else [300_000, 1_000_000])
    v_star = optimal_solution(mdp).value
    curves = {}
    for label, algo, cov, other in (
        ("LCB, generic data (C* = 4)", "pessimistic-vi-hoeffding", 0.25, "adversarial"),
        ("LCB, near-expert data (C* = 1.05)", "pessimistic-vi-hoeffding", 0.9, "uniform"),
        ("naive VI, generic data (C* = 4)", "naive-vi", 0.25, "adversarial"),
    ):
        ds = make_dataset(
            mdp, max(Ns), coverage=cov, other=other, seeds=B, seed=seed, kind="samples"
        )
        curves[label] = np.stack(
            [suboptimality(mdp, fit(algo, ds.head(n)).policy, v_star) for n in Ns], axis=1
        )
    ax = plot_suboptimality_vs_n(
        Ns, curves, bound_exponent=-0.5, title="multiscale-bandit: rates in N"
    )
    p2 = save_figure(ax, out / "why-pessimism-2-rates.png")[0]
    data["rates"] = {k: c.mean(axis=0).tolist() for k, c in curves.items()}
    # 3. growth in C*
    mdp = make("multiscale-bandit:n_gap=20,gap_ratio=0.7,n_mass=0,junk=true")
    N = 100_000 if quick else 1_000_000
    Cs = [2, 4, 8, 16, 32, 64] + ([] if quick else [128, 256])
    v_star = optimal_solution(mdp).value
    shift = np.empty((B, len(Cs)))
    mix = np.empty((B, len(Cs)))
    for k, C in enumerate(Cs):
        ds = make_dataset(
            mdp,
            N,
            data_distribution=covariate_shift_distribution(mdp, C),
            seeds=B,
            seed=seed,
            kind="samples",
        )
        shift[:, k] = suboptimality(mdp, fit("pessimistic-vi-hoeffding", ds).policy, v_star)
        ds = make_dataset(
            mdp, N, coverage=1.0 / C, other="adversarial", seeds=B, seed=seed, kind="samples"
        )
        assert abs(dataset_concentrability(mdp, ds)["C_star"] - C) < 1e-9 * C
        mix[:, k] = suboptimality(mdp, fit("pessimistic-vi-hoeffding", ds).policy, v_star)
    ax = plot_suboptimality_vs_cstar(
        Cs,
        {"LCB, C* by covariate shift": shift, "LCB, C* by action mixture": mix},
        N=N,
        title="multiscale-bandit: growth in C* at fixed N",
    )
    p3 = save_figure(ax, out / "why-pessimism-3-cstar.png")[0]
    data["cstar"] = {
        "C_star": Cs,
        "covariate_shift": shift.mean(axis=0).tolist(),
        "action_mixture": mix.mean(axis=0).tolist(),
    }
    return [p1, p2, p3], data
