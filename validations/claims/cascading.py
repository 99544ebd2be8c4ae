"""Claim of cascading RL (``kind="cascading"``; seed row 001#13, Du, Srikant & Chen 2024).

``cascading-vi-sqrt-k``: (i) the BestPerm oracle (``algorithms/cascading/best_perm.py``, sort by
click value + a DP over the set) equals the brute-force argmax over all N!/(N - m)! ordered lists
on random cascades (values to 1e-9, and its list attains the maximum), and value iteration with
BestPerm as planner reproduces ``V*`` of random cascading MDPs computed by brute-force planning
(:meth:`~theorylab.mdps.cascading.CascadingMDP.optimal`); (ii) CascadingVI's cumulative regret
against that brute-force optimum is sublinear: the log-log slope over the second half of the run
(log scale) has a bootstrap 95% interval below ``max_slope`` = 0.7 (the asymptotic exponent
is 1/2; at these K the Hoeffding-type bonuses are still in their burn-in and the measured
slope is 0.55-0.6, a linear-regret learner's is ~1). Controls:
``cascading-sort-by-qw`` (order and select by q w: FAILs (i)) and ``cascading-vi-greedy`` (no
bonus: linear regret, FAILs (ii)).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.registry import register_validation


def oracle_gaps(n_instances: int, seed: int) -> tuple[float, int, int]:
    """``(max |BestPerm - brute force|, misses, instances)`` on random cascades with N <= 6:
    q ~ U[0, 1], w ~ U[0, 3], w_bot ~ U[0, 3]; a miss is a value gap > 1e-9 or a list that does
    not attain the brute-force maximum."""
    from theorylab.algorithms.cascading.best_perm import best_perm
    from theorylab.mdps.cascading import cascade_value

    rng = np.random.default_rng([seed, 13])
    worst, misses = 0.0, 0
    for _ in range(n_instances):
        N = int(rng.integers(2, 7))
        m = int(rng.integers(1, N + 1))
        q, w, w_bot = rng.uniform(size=N), 3 * rng.uniform(size=N), 3 * rng.uniform()
        lists = np.array(list(itertools.permutations(range(N), m)))  # (L, m)
        brute = float(cascade_value(q[lists], w[lists], w_bot).max())
        chosen, value = best_perm(q, w, w_bot, m)
        attained = float(cascade_value(q[chosen], w[chosen], w_bot))
        gap = max(abs(float(value) - brute), abs(attained - brute))
        worst = max(worst, gap)
        misses += gap > 1e-9
    return worst, misses, n_instances


def planner_gap(spec: str) -> float:
    """``max_{h,s} |V_BestPerm - V*_brute|`` on one cascading MDP."""
    from theorylab.algorithms.cascading.best_perm import best_perm
    from theorylab.mdps import make

    mdp = make(spec)
    v_star = mdp.optimal()[0]  # (H + 1, S)
    V = np.zeros(mdp.S)
    gap = 0.0
    for h in range(mdp.H - 1, -1, -1):
        w = mdp.click_values(V)  # (S, N + 1)
        V = best_perm(mdp.q, w[:, : mdp.N], w[:, mdp.N], mdp.m)[1]
        gap = max(gap, float(np.abs(V - v_star[h]).max()))
    return gap


@dataclass(frozen=True)
class CascadingVISqrtK(ScaledClaim):
    name: str = "cascading-vi-sqrt-k"
    statement: str = (
        "Cascading RL (Du, Srikant & Chen 2024; seed row 001#13): the BestPerm oracle (order by "
        "click value w, choose the set by a DP) equals the brute-force argmax over all N!/(N-m)! "
        "ordered lists on random cascades (N <= 6) and, as a planner, reproduces V* of random "
        "cascading MDPs planned by brute force; CascadingVI (optimistic item-level estimates of "
        "q and P, BestPerm as planner, bonus constant 1) has sublinear cumulative regret against "
        "that optimum on cascading:S=2,N=4,m=2,H=2 instances (log-log slope over the second half "
        "of the run, bootstrap 95% interval below 0.7; a linear learner's is ~1). Quick: 300 "
        "oracle instances, K = 2000, 2 instances x 3 seeds; full: 2000 oracle instances, "
        "K = 8000, 3 instances x 4 seeds."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {"oracle": 300, "K": 2000, "instances": 2, "seeds": 3},
            "full": {"oracle": 2000, "K": 8000, "instances": 3, "seeds": 4},
        }
    )
    problem: str = "cascading:S=2,N=4,m=2,H=2"
    planner_problems: tuple[str, ...] = (
        "cascading:S=3,N=5,m=2,H=3",
        "cascading:S=2,N=6,m=3,H=2",
        "cascading:S=4,N=4,m=4,H=3",
    )
    max_slope: float = 0.7

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        import theorylab as tl
        from theorylab.stats import loglog_slope

        worst, misses, n = oracle_gaps(cfg["oracle"], seed)
        specs = [f"{p},seed={seed + i}" for p in self.planner_problems for i in range(3)]
        pgap = max(planner_gap(s) for s in specs)
        rep.checks += [
            Check(
                "BestPerm = brute-force argmax over all ordered lists (random cascades, N <= 6)",
                misses == 0,
                f"{misses}/{n} instances missed; max value gap {worst:.2e}",
                {"misses": misses, "instances": n, "max_gap": worst},
            ),
            Check(
                "value iteration with BestPerm = brute-force planning (V* of cascading MDPs)",
                pgap <= 1e-9,
                f"max |V_BestPerm - V*| {pgap:.2e} over {len(specs)} MDPs",
                {"max_gap": pgap},
            ),
        ]
        K, B = cfg["K"], cfg["seeds"]
        runs = []
        for inst in range(cfg["instances"]):
            res = tl.run("cascading-vi", f"{self.problem},seed={inst}", episodes=K, seeds=B,
                         seed=seed)  # fmt: skip
            runs.append(res.cumulative_regret)
        R = np.concatenate(runs)  # (runs, K)
        x = np.arange(1, K + 1)
        fit = loglog_slope(x, R + 1e-12, rng=seed)
        rep.checks.append(
            Check(
                f"CascadingVI regret sublinear (slope 95% CI below {self.max_slope:g})",
                fit.ci_high < self.max_slope,
                f"slope {fit.slope:.3f} [{fit.ci_low:.3f}, {fit.ci_high:.3f}] over k in "
                f"[{fit.x_range[0]:.0f}, {fit.x_range[1]:.0f}]; mean R_K {R[:, -1].mean():.1f} "
                f"({R.shape[0]} runs)",
                {"slope": fit.slope, "ci": [fit.ci_low, fit.ci_high]},
            )
        )
        rep.slope, rep.slope_ci = fit.slope, (fit.ci_low, fit.ci_high)
        if plot:
            from theorylab.plotting import plot_regret

            ax = plot_regret({"CascadingVI": R}, x=x, xlabel="episode k", loglog=True,
                             title=f"CascadingVI on {self.problem}")  # fmt: skip
            save_claim_figure(ax, plot)


register_validation(
    CascadingVISqrtK(),
    controls=("cascading-sort-by-qw", "cascading-vi-greedy"),
    papers=("001#13",),
)
