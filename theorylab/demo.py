"""``theorylab demo``: the README's main job.

UCBVI (Bernstein and Hoeffding bonuses, Azar et al. 2017) against the certainty-equivalent greedy
learner on RiverSwim, with exact regret. Prints a table (final regret with a 95% CI, the log-log
slope of cumulative regret with its bootstrap CI, the Theorem bound at K) and writes a plot of
the cumulative regret curves with the Bernstein bound (Azar et al. Theorem 2) drawn rescaled to
show its rate.
"""

from __future__ import annotations

import time

import numpy as np

DEMO_MDP = "riverswim:S=6,H=20"
DEMO_ALGORITHMS = ("ucbvi-bernstein", "ucbvi-hoeffding", "greedy")
DEMO_BOUND = {"ucbvi-bernstein": "azar2017-thm2", "ucbvi-hoeffding": "azar2017-thm1"}


def demo(
    out: str = "regret.png",
    episodes: int | None = None,
    seeds: int | None = None,
    progress: bool = True,
) -> int:
    from theorylab import stats
    from theorylab.bounds import get_bound
    from theorylab.cli import _table
    from theorylab.experiment import run
    from theorylab.plotting import plot_regret, save_figure
    from theorylab.validations.claim import SLOPE_FIT_RANGE, bound_inputs

    K = episodes or 3000
    B = seeds or 16
    t0 = time.perf_counter()
    rows, curves = [], {}
    bounds = {}
    for algo in DEMO_ALGORITHMS:
        res = run(algo, DEMO_MDP, episodes=K, seeds=B, progress=progress)
        cum = res.cumulative_regret
        curves[algo] = cum
        ci = stats.final_ci(cum[:, -1])
        mean, lo, hi = ci.mean, ci.ci_low, ci.ci_high
        fit = stats.loglog_slope(np.arange(1, K + 1), cum, fit_range=SLOPE_FIT_RANGE)
        bound_at_K = ""
        if algo in DEMO_BOUND:
            bound = get_bound(DEMO_BOUND[algo])
            k = np.arange(1, K + 1, dtype=float)
            vals = {
                "S": res.config["S"],
                "A": res.config["A"],
                "H": res.config["H"],
                "K": k,
                "delta": 0.1,
            }
            curve = np.broadcast_to(bound.evaluate(**bound_inputs(bound, vals)), k.shape)
            bounds[f"{DEMO_BOUND[algo]} ({bound.source_short()})"] = np.asarray(curve, float)
            bound_at_K = f"{curve[-1]:.3g}"
        rows.append(
            {
                "algorithm": algo,
                "final regret": f"{mean:.1f}",
                "95% CI": f"[{lo:.1f}, {hi:.1f}]",
                "slope (log-log)": f"{fit.slope:.2f} [{fit.ci_low:.2f}, {fit.ci_high:.2f}]",
                "theorem bound at K": bound_at_K,
                "seed-episodes/s": f"{res.episodes_per_second:.0f}",
            }
        )
    print(f"Exact regret on {DEMO_MDP}, K={K} episodes, {B} seeds (V*={res.optimal_value:.4f})")
    print(_table(rows))
    fig = plot_regret(
        curves,
        bound_curves=bounds,
        rescale_bound=True,
        title=f"Cumulative regret on {DEMO_MDP} ({B} seeds, 95% bands)",
    )
    save_figure(fig, out)
    print(f"wrote {out}  ({time.perf_counter() - t0:.1f} s)")
    return 0
