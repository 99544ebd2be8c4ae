"""``theorylab demo``: the README's main job.

UCBVI (Bernstein and Hoeffding bonuses, Azar et al. 2017) and PSRL against the certainty-equivalent
greedy learner on RiverSwim, with exact regret. Prints a table (final regret with a 95% CI, the
log-log slope of cumulative regret over the last quarter of log K with its bootstrap CI, the
episode at which each run left its burn-in, the theorem's bound at K) and writes a plot of the
cumulative regret curves beside the null agent's exact regret (the uniformly random policy).

Every sentence printed after the table is computed from the run: whether each algorithm left its
burn-in (``theorylab.validations.reference.burn_in_end``: its per-episode regret stays below half
the null agent's) and at which episode, the slope measured after it, and from which K each
theorem carried becomes informative (below K times the largest per-episode regret). Nothing is
asserted that the run did not show.

The default instance is RiverSwim with S=4, H=4 and K=20000: with the papers' printed constants
UCBVI-BF leaves its burn-in within the run (about episode 2900) and the curve visibly bends;
UCBVI-CH's bonus keeps it in its burn-in for the whole run, and the demo says so.
"""

from __future__ import annotations

import time

import numpy as np

DEMO_MDP = "riverswim:S=4,H=4"
DEMO_ALGORITHMS = ("ucbvi-bernstein", "ucbvi-hoeffding", "psrl", "greedy")
DEMO_EPISODES = 20_000
DEMO_SEEDS = 8


def _positive(name: str, value: int | None, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"--{name} must be a positive integer, got {value!r}")
    return int(value)


def reading(name: str, res, ref, end: int | None, fit) -> str:
    """One sentence about one run, every number taken from it."""
    K = res.episodes
    tail = float(res.regret[:, -max(1, K // 10) :].mean())
    null = ref.null_per_episode
    if end is None:
        return (
            f"{name}: not out of its burn-in at K = {K}: over the last 10% of episodes it loses "
            f"{tail:.3g} per episode, the null agent {null:.3g} (a longer run would tell whether "
            "and when it leaves it)."
        )
    if end <= 10:  # the first window (validations.reference.window_means): from the start
        after = "no burn-in (below half the null agent's regret from the first episodes)"
    else:
        after = f"left its burn-in at about episode {end}"
    if fit is None:
        return f"{name}: {after}; too few episodes after it to fit a slope."
    lo, hi = fit.x_range
    return (
        f"{name}: {after}; over episodes {lo:.0f}..{hi:.0f} its cumulative regret grows like "
        f"K^{fit.slope:.2f} [{fit.ci_low:.2f}, {fit.ci_high:.2f}], and at the end it loses "
        f"{tail:.2g} per episode against the null agent's {null:.2g}."
    )


def demo(
    out: str = "regret.png",
    episodes: int | None = None,
    seeds: int | None = None,
    progress: bool = True,
) -> int:
    from theorylab import stats
    from theorylab.experiment import run
    from theorylab.mdps import make
    from theorylab.plotting import plot_regret, save_figure
    from theorylab.table import from_dicts
    from theorylab.validations.reference import (
        NULL_LABEL,
        burn_in_end,
        plot_keywords,
        regret_reference,
    )

    K = _positive("episodes", episodes, DEMO_EPISODES)
    B = _positive("seeds", seeds, DEMO_SEEDS)
    mdp = make(DEMO_MDP)
    t0 = time.perf_counter()
    rows, curves, sentences, bounds = [], {}, [], {}
    ref = None
    for algo in DEMO_ALGORITHMS:
        res = run(algo, mdp, episodes=K, seeds=B, progress=progress)
        cum = res.cumulative_regret
        curves[algo] = cum
        ref = regret_reference(res, mdp)
        end = burn_in_end(res.regret, ref.null_per_episode)
        ci = stats.final_ci(cum[:, -1], support=(0.0, None))
        fit = None
        if end is not None and K - end >= 20:
            start = max(0.75, float(np.log(end) / np.log(K)))  # after the burn-in only
            fit = stats.loglog_slope(np.arange(1, K + 1), cum, fit_range=(start, 1.0))
        slope = stats.loglog_slope(np.arange(1, K + 1), cum, fit_range=(0.75, 1.0))
        rows.append(
            {
                "algorithm": algo,
                "final regret": f"{ci.mean:.1f}",
                "95% CI": ci.interval_text(".1f"),
                "slope, last log-quarter": (
                    f"{slope.slope:.2f} [{slope.ci_low:.2f}, {slope.ci_high:.2f}]"
                ),
                "burn-in left at": "not yet" if end is None else str(end),
                "theorem bound at K": (
                    f"{ref.bound_curve[-1]:.3g}" if ref.bound_curve is not None else ""
                ),
                "seed-episodes/s": f"{res.episodes_per_second:.0f}",
                # numba's compile (first run) or cache load, apart from the rate above
                "compile s": f"{res.config.get('compile_seconds', 0.0):.1f}",
            }
        )
        sentences.append(reading(algo, res, ref, end, fit))
        if ref.bound_name is not None:
            bounds[ref.bound_name] = ref
    print(
        f"Exact regret on {DEMO_MDP}, K={K} episodes, {B} seeds (V*={res.optimal_value:.4f}; "
        f"the null agent, a uniformly random policy, loses {ref.null_per_episode:.4f} per episode)"
    )
    print(from_dicts(rows))
    print("Reading the table (every number from this run):")
    for line in sentences:
        print(f"- {line}")
    for bref in bounds.values():
        print(f"- {bref.bound_status()} (trivial bound: K x {bref.max_per_episode:.4g}).")
    # the null agent (the same for every algorithm); each theorem as printed where it is
    # informative, else a legend line saying it is vacuous over the run and from which K not
    keywords: dict = {"references": {NULL_LABEL: ref.null_curve}, "notes": []}
    for bref in bounds.values():
        drawn = plot_keywords(bref)
        keywords["notes"] += [n for n in drawn["notes"] if n.startswith(bref.bound_name)]
        for key in ("bound_curves", "informative_from"):
            keywords.setdefault(key, {}).update(drawn.get(key, {}))
    fig = plot_regret(
        curves,
        title=f"Cumulative regret on {DEMO_MDP} ({B} seeds, 95% bands)",
        **keywords,
    )
    save_figure(fig, out)
    print(f"wrote {out}  ({time.perf_counter() - t0:.1f} s)")
    return 0
