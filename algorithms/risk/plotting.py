"""Plots for the risk-sensitive core: the exact return distribution with its risk measures marked.

``plot_return_distribution(dist, tau=0.25)`` draws the atoms of a :class:`ReturnDistribution` as
bars and marks VaR_tau (dotted), CVaR_tau (dashed) and the mean (solid) as vertical lines whose
``gid`` is ``"var"``, ``"cvar"`` and ``"mean"`` (so tests and callers can find them). The lower
tail -- the atoms that CVaR_tau averages over, with the atom at VaR_tau entering partially -- is
shaded darker. ``plot_cvar_regret`` is :func:`theorylab.plotting.plot_regret` with the objective
in the axis label (no other difference; the regret arrays are the same).

Matplotlib only (no pyplot state): figures come from :func:`theorylab.plotting.new_axes`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

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

    dist: a :class:`~theorylab.algorithms.risk.ReturnDistribution` (one policy, or a batch:
        ``row`` picks the policy).
    tau: the CVaR level in (0, 1].
    ax: an Axes to draw on (default: a fresh one from ``theorylab.plotting.new_axes``).
    Atoms with probability <= ``tol`` are not drawn. Returns the Axes.
    """
    from theorylab.algorithms.risk.cvar import cvar, var
    from theorylab.plotting import new_axes

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
    ax.set_xlabel("return Z")
    ax.set_ylabel("probability")
    ax.set_ylim(0, max(1.3 * float(p.max()), 0.05))
    ax.set_xlim(float(values[0]) - step, float(values[-1]) + step)  # the whole return lattice
    if title:
        ax.set_title(title)
    ax.legend(loc="upper left", fontsize="small", ncols=2)
    return ax


def plot_cvar_regret(curves: Mapping[str, np.ndarray], *, objective: str = "CVaR", **kwargs):
    """Cumulative exact risk-sensitive regret: ``plot_regret`` with the objective in the label.

    curves: ``{label: (B, K) cumulative regret}`` (e.g. ``run(...).cumulative_regret``);
    objective: e.g. ``"static CVaR_0.25"`` or ``"iterated CVaR^0.25"``. Other keyword arguments
    go to :func:`theorylab.plotting.plot_regret`.
    """
    from theorylab.plotting import plot_regret

    kwargs.setdefault("ylabel", f"cumulative {objective} regret")
    return plot_regret(curves, **kwargs)


def safe_risky_figure(path, *, tau: float = 0.25, H: int = 3):
    """The tutorial figure: risk-neutral vs CVaR_tau-optimal return laws on ``cvar-safe-risky``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from theorylab.algorithms.planning import backward_induction
    from theorylab.algorithms.risk import return_distribution, static_cvar_planning
    from theorylab.mdps import make
    from theorylab.plotting import save_figure

    mdp = make(f"cvar-safe-risky:H={H}")
    neutral = backward_induction(mdp)
    sol = static_cvar_planning(mdp, tau)
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2, sharey=True)
    plot_return_distribution(
        return_distribution(mdp, neutral.policy),
        tau,
        ax=left,
        title=f"risk-neutral optimum (V* = {float(neutral.value):.3g}): RISKY",
    )
    plot_return_distribution(
        return_distribution(mdp, sol.policy),
        tau,
        ax=right,
        title=f"CVaR_{tau:g}-optimal (CVaR* = {sol.value:.3g}): SAFE",
    )
    fig.suptitle(f"{mdp.name}: exact return distributions")
    return save_figure(fig, path)
