"""``theorylab demo``: the README's main job.

UCBVI (Bernstein and Hoeffding bonuses, Azar et al. 2017) and PSRL against the certainty-equivalent
greedy learner on RiverSwim, with exact regret. Prints a table (final regret with a 95% CI, the
log-log slope of cumulative regret over the last quarter of log K with its bootstrap CI, the
theorem's bound at K) and writes a plot of the cumulative regret curves with Azar et al.'s
Theorem 2 drawn rescaled to show its rate.

The instance is RiverSwim with S=4, H=4: with the papers' printed constants UCBVI spends its
first few thousand episodes in a burn-in where every Q sits at the cap H (linear regret; see
validations/claims/tabular_regret.py), and on this instance it leaves the burn-in within the
demo's 20000 episodes, so the table shows the contrast the theory predicts. On S=6, H=20 the
burn-in lasts more than 6000 episodes for UCBVI-BF and more than 20000 for UCBVI-CH.
"""

from __future__ import annotations

import time

import numpy as np

DEMO_MDP = "riverswim:S=4,H=4"
DEMO_ALGORITHMS = ("ucbvi-bernstein", "ucbvi-hoeffding", "psrl", "greedy")
DRAWN_BOUND = "azar2017-thm2"  # drawn rescaled on the first curve (UCBVI-BF)


def demo(
    out: str = "regret.png",
    episodes: int | None = None,
    seeds: int | None = None,
    progress: bool = True,
) -> int:
    from theorylab import stats
    from theorylab.bounds import get_bound
    from theorylab.experiment import run
    from theorylab.plotting import plot_regret, save_figure
    from theorylab.table import from_dicts
    from theorylab.validations.claim import algorithm_bound, run_bound_curve

    K = episodes or 20_000
    B = seeds or 8
    t0 = time.perf_counter()
    rows, curves = [], {}
    bounds = {}
    for algo in DEMO_ALGORITHMS:
        res = run(algo, DEMO_MDP, episodes=K, seeds=B, progress=progress)
        cum = res.cumulative_regret
        curves[algo] = cum
        ci = stats.final_ci(cum[:, -1])
        mean, lo, hi = ci.mean, ci.ci_low, ci.ci_high
        fit = stats.loglog_slope(np.arange(1, K + 1), cum, fit_range=(0.75, 1.0))
        bound_at_K = ""
        name = algorithm_bound(algo)  # the theorem the algorithm carries
        try:
            curve = run_bound_curve(name, res, 0.1)[0] if name else None
        except ValueError:  # an unspecified absolute constant (PSRL's card): no number to print
            curve = None
        if curve is not None:
            if name == DRAWN_BOUND:
                bounds[f"{DRAWN_BOUND} ({get_bound(name).source_short()})"] = curve
            bound_at_K = f"{curve[-1]:.3g}"
        rows.append(
            {
                "algorithm": algo,
                "final regret": f"{mean:.1f}",
                "95% CI": f"[{lo:.1f}, {hi:.1f}]",
                "slope, last log-quarter": f"{fit.slope:.2f} [{fit.ci_low:.2f}, {fit.ci_high:.2f}]",
                "theorem bound at K": bound_at_K,
                "seed-episodes/s": f"{res.episodes_per_second:.0f}",
            }
        )
    print(f"Exact regret on {DEMO_MDP}, K={K} episodes, {B} seeds (V*={res.optimal_value:.4f})")
    print(from_dicts(rows))
    print(
        "Reading the table: UCBVI-BF has left its burn-in and grows like K^(1/2) over the last\n"
        "quarter of log K. UCBVI-CH's printed bonus 7 H L / sqrt(N) keeps every Q at the cap H\n"
        "until about (7 L)^2 visits per state-action pair, so within this run it is still in its\n"
        "burn-in (linear). The theorems' bounds hold by orders of magnitude: they are ceilings,\n"
        "not fits; the plot draws Theorem 2 rescaled to show its rate."
    )
    fig = plot_regret(
        curves,
        bound_curves=bounds,
        rescale_bound=True,
        title=f"Cumulative regret on {DEMO_MDP} ({B} seeds, 95% bands)",
    )
    save_figure(fig, out)
    print(f"wrote {out}  ({time.perf_counter() - t0:.1f} s)")
    return 0
