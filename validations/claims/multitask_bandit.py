"""Multi-task best-arm identification with a shared representation (seed row 001#19, DouExpDes,
Du, Huang & Sun 2023; reconstructed: ``algorithms/multitask_bandit/douexpdes.py``).

``douexpdes-samples-scale-with-k`` checks on ``multitask-linear:d,k=2,M`` (gaps the same at every
d, delta = 0.05):

1. The design: Frank-Wolfe's G-optimal design on the instance's arms (d_min) has G-value <= (1 +
   1e-3) d
   (Kiefer-Wolfowitz) and a log det within the duality gap d 1e-3 below cvxpy's D-optimal one
   (an independent solver).
2. delta-correct: every task's recommendation equals its brute-force best arm (argmax of the exact
   means) on >= 1 - delta of the seeds, for DouExpDes and the baseline, every task stopping by
   its own rule.
3. The representation: the exact largest principal-angle sine between the learned and the true B
   stays below the misspecification ``eps_r / sqrt(c_rep)`` the eliminations assume, in every
   phase of every seed.
4. Sharing pays: DouExpDes' per-task samples at d_max fall by >= 4x from M_min to M_max; the
   independent baseline's do not fall (ratio <= 1.25).
5. k, not d: at M_max the log-log slope in d of DouExpDes' per-task samples is <= 0.7 and at least
   0.4 below the baseline's (about 1), and DouExpDes needs fewer samples at d_max.

Controls: ``douexpdes-random-representation`` (a random subspace in place of the learned one)
fails 3; ``douexpdes-independent-tasks`` (DouExpDes solving every task alone, the native
baseline) fails 4 and 5.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from theorylab.validations.claim import Check, Report, finished_report
from theorylab.validations.registry import register_validation

DELTA = 0.05
BUDGET = 10**9  # per-task pull cap (never reached on these instances)


def d_optimal_log_det(X: np.ndarray) -> float:
    """``max_lambda log det sum_x lambda_x x x^T`` over the simplex, by cvxpy (the independent
    answer to Frank-Wolfe: by Kiefer-Wolfowitz the G- and D-optimal designs coincide)."""
    import cvxpy as cp

    lam = cp.Variable(X.shape[0], nonneg=True)
    prob = cp.Problem(cp.Maximize(cp.log_det(X.T @ cp.diag(lam) @ X)), [cp.sum(lam) == 1])
    prob.solve()
    return float(prob.value)


def _slope(ds, values) -> float:
    return float(np.polyfit(np.log(ds), np.log(values), 1)[0])


@dataclass
class DouExpDesSamplesScaleWithK:
    name: str = "douexpdes-samples-scale-with-k"
    statement: str = (
        "DouExpDes (reconstructed) on M linear bandits sharing a 2-dimensional representation in "
        "R^d (gaps independent of d, delta = 0.05): delta-correct like independent per-task "
        "elimination; the learned subspace within the misspecification its eliminations assume; "
        "per-task samples fall >= 4x from M_min to M_max while the baseline's do not; at M_max "
        "their log-log slope in d is <= 0.7 and >= 0.4 below the baseline's, and below the "
        "baseline at d_max; Frank-Wolfe's design matches cvxpy's D-optimal design"
    )
    scales: dict[str, dict] = field(
        default_factory=lambda: {
            "quick": {"d": [8, 32], "M": [4, 256], "seeds": 4},
            "full": {"d": [8, 16, 32], "M": [4, 64, 1024], "seeds": 12},
        }
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        import theorylab as tl
        from theorylab.algorithms.multitask_bandit.design import g_optimal_design, g_value
        from theorylab.mdps import make

        t0 = time.perf_counter()
        cfg = self.scales[scale]
        ds, Ms = cfg["d"], cfg["M"]
        checks: list[Check] = []

        X = make(f"multitask-linear:d={ds[0]},k=2,M=4,seed={seed}").arms
        lam = g_optimal_design(X)
        gv = g_value(X, lam)
        ld = float(np.linalg.slogdet(X.T @ (lam[:, None] * X))[1])
        ref = d_optimal_log_det(X)
        ok = gv <= (1 + 1e-3) * ds[0] and -1e-6 <= ref - ld <= 1e-3 * ds[0]  # duality gap <= d tol
        checks.append(Check(
            "Frank-Wolfe design = Kiefer-Wolfowitz optimum (cvxpy)", ok,
            f"d = {ds[0]}: G-value {gv:.4f} (<= {(1 + 1e-3) * ds[0]:.4f}); log det {ld:.5f} vs "
            f"cvxpy D-optimal {ref:.5f} (gap in [0, d 1e-3])",
            {"g_value": gv, "log_det": ld, "cvxpy": ref}))  # fmt: skip

        S = {}  # (algorithm, d, M) -> mean per-task samples
        per_seed = {}  # (algorithm, d, M) -> (B,) per-task samples of every seed
        wrong, unstopped, ratio = {}, 0, 0.0
        for d in ds:
            for M in Ms:
                spec = f"multitask-linear:d={d},k=2,M={M},seed={seed}"
                for algo in ("douexpdes", "independent-elimination"):
                    r = tl.run(algo, spec, rounds=BUDGET, delta=DELTA, seeds=cfg["seeds"],
                               seed=seed)  # fmt: skip
                    per_seed[algo, d, M] = r.per_task_samples()
                    S[algo, d, M] = float(per_seed[algo, d, M].mean())
                    wrong[algo] = wrong.get(algo, 0) + int(np.sum(~r.correct()))
                    unstopped += int(np.sum(~np.asarray(r.stopped)))
                    if "sin_theta" in r.diagnostics:  # (absent when nothing is learned)
                        eps = 2.0 ** -np.arange(1, r.diagnostics["sin_theta"].shape[1] + 1)
                        e = eps / np.sqrt(r.config["learner"]["c_rep"])
                        ratio = max(ratio, float(np.nanmax(r.diagnostics["sin_theta"] / e)))
        runs = len(ds) * len(Ms) * cfg["seeds"]
        ok = all(w <= DELTA * runs for w in wrong.values()) and unstopped == 0
        checks.append(Check(
            "delta-correct identification (brute-force best arms)", ok,
            ", ".join(f"{a}: {w}/{runs} runs with a wrong task" for a, w in wrong.items())
            + f" (<= delta = {DELTA}); tasks stopped by the budget: {unstopped}",
            {"wrong": wrong, "runs": runs, "unstopped": unstopped}))  # fmt: skip
        checks.append(Check(
            "learned subspace within the planned misspecification", ratio <= 1.0,
            f"max over seeds and phases of sin(B_hat, B) / (eps_r / sqrt(c_rep)) = {ratio:.3f} "
            "(<= 1)", {"ratio": ratio}))  # fmt: skip

        dm, m0, m1 = ds[-1], Ms[0], Ms[-1]
        fall = S["douexpdes", dm, m0] / S["douexpdes", dm, m1]
        base = S["independent-elimination", dm, m0] / S["independent-elimination", dm, m1]
        checks.append(Check(
            "per-task samples fall with M (baseline's do not)", fall >= 4 and base <= 1.25,
            f"d = {dm}: DouExpDes M = {m0} -> {m1}: {S['douexpdes', dm, m0]:.4g} -> "
            f"{S['douexpdes', dm, m1]:.4g} (x{fall:.2f} fewer, >= 4); baseline x{base:.2f} "
            "(<= 1.25)", {"fall": fall, "baseline_fall": base}))  # fmt: skip
        sd = _slope(ds, [S["douexpdes", d, m1] for d in ds])
        sb = _slope(ds, [S["independent-elimination", d, m1] for d in ds])
        below = S["douexpdes", dm, m1] < S["independent-elimination", dm, m1]
        ok = sd <= 0.7 and sd <= sb - 0.4 and below
        checks.append(Check(
            "per-task samples scale with k, not d (large M)", ok,
            f"M = {m1}: slope in d {sd:.3f} (<= 0.7) vs baseline {sb:.3f} (difference >= 0.4); "
            f"at d = {dm}: {S['douexpdes', dm, m1]:.4g} vs "
            f"{S['independent-elimination', dm, m1]:.4g}",
            {"slope": sd, "baseline_slope": sb}))  # fmt: skip

        if plot:
            from theorylab.plotting import plot_regret, save_figure

            curves = {f"{'DouExpDes' if a == 'douexpdes' else 'independent'}, d = {d}":
                      np.stack([per_seed[a, d, M] for M in Ms], axis=1)  # (B, len(Ms))
                      for a in ("douexpdes", "independent-elimination") for d in ds}  # fmt: skip
            ax = plot_regret(curves, x=np.asarray(Ms), xlabel="tasks M",
                             ylabel="pulls per task", title="DouExpDes vs independent "
                             "elimination, k = 2", loglog=True)  # fmt: skip
            save_figure(ax.figure, plot)
        config = {**cfg, "k": 2, "delta": DELTA, "seed": seed,
                  "samples": {f"{a}|d={d}|M={M}": v for (a, d, M), v in S.items()}}  # fmt: skip
        return finished_report(self.name, self.statement, scale, checks, t0, config, figure=plot)


register_validation(
    DouExpDesSamplesScaleWithK(),
    controls=("douexpdes-random-representation", "douexpdes-independent-tasks"),
    targets={"multitask-bandit": ("douexpdes",)},
    papers=("001#19",),
)


GFUCB_SPEC = "multitask-linear:d=8,k=2,M={M},candidates=64,confusion=0.8,nuisance=1,seed={seed}"


@dataclass
class GFUCBRegretFallsWithM:
    """Seed row 001#20 (GFUCB, Lu, Zhao, Du & Huang 2022; reconstructed:
    ``algorithms/multitask_bandit/gfucb.py``). On ``GFUCB_SPEC`` (J = 64 candidate
    representations, the wrong ones seen only through the arms' nuisance directions):

    1. at M = 1 GFUCB and the per-task baseline are the same learner (identical arms pulled);
    2. GFUCB's per-task regret at M_max is <= 0.75 of its M = 1 value, the intervals over seeds
       apart;
    3. the baseline's does not fall (M_max / M_1 >= 0.9) and GFUCB is below it at M_max;
    4. the true representation is the learner's final choice (argmin of the joint loss) on >= 90%
       of the seeds at M_max.

    Control ``gfucb-independent-tasks`` (GFUCB with per-task confidence sets) fails 2 and 3.
    """

    name: str = "gfucb-regret-falls-with-m"
    statement: str = (
        "GFUCB (reconstructed) on M concurrent linear bandits sharing phi from a class of 64 "
        "(d = 8, k = 2): at M = 1 it is the per-task baseline; its per-task regret at M_max is "
        "<= 0.75 of its M = 1 value while the baseline's does not fall (>= 0.9) and stays above "
        "GFUCB's; the true phi is selected on >= 90% of seeds at M_max"
    )
    scales: dict[str, dict] = field(
        default_factory=lambda: {
            "quick": {"M": [1, 16], "rounds": 1500, "seeds": 4},
            "full": {"M": [1, 4, 16], "rounds": 1500, "seeds": 8},
        }
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        import theorylab as tl
        from theorylab.stats import final_ci

        t0 = time.perf_counter()
        cfg = self.scales[scale]
        Ms, T = cfg["M"], cfg["rounds"]
        checks: list[Check] = []
        R, runs = {}, {}
        for M in Ms:
            for algo in ("gfucb", "gfucb-independent"):
                r = tl.run(algo, GFUCB_SPEC.format(M=M, seed=seed), rounds=T,
                           seeds=cfg["seeds"], seed=seed)  # fmt: skip
                R[algo, M] = final_ci(r.per_task_regret(), support=(0.0, None))
                runs[algo, M] = r
        same = bool(
            np.array_equal(runs["gfucb", Ms[0]].regret, runs["gfucb-independent", Ms[0]].regret)
        )
        checks.append(Check(
            "M = 1: GFUCB is the per-task learner", same,
            f"identical regret curves at M = {Ms[0]}: {same}", {"identical": same}))  # fmt: skip
        g0, g1 = R["gfucb", Ms[0]], R["gfucb", Ms[-1]]
        ok = g1.mean <= 0.75 * g0.mean and g1.ci_high < g0.ci_low
        checks.append(Check(
            "GFUCB's per-task regret falls with M", ok,
            f"M = {Ms[0]}: {g0.mean:.1f} [{g0.ci_low:.1f}, {g0.ci_high:.1f}] -> M = {Ms[-1]}: "
            f"{g1.mean:.1f} [{g1.ci_low:.1f}, {g1.ci_high:.1f}] (ratio {g1.mean / g0.mean:.3f} "
            "<= 0.75, intervals apart)", {"ratio": g1.mean / g0.mean}))  # fmt: skip
        b0, b1 = R["gfucb-independent", Ms[0]], R["gfucb-independent", Ms[-1]]
        ok = b1.mean >= 0.9 * b0.mean and g1.ci_high < b1.ci_low
        checks.append(Check(
            "the per-task baseline does not fall; GFUCB below it", ok,
            f"baseline M = {Ms[0]} -> {Ms[-1]}: {b0.mean:.1f} -> {b1.mean:.1f} (ratio "
            f"{b1.mean / b0.mean:.3f} >= 0.9); at M = {Ms[-1]} GFUCB {g1.mean:.1f} vs baseline "
            f"{b1.mean:.1f} [{b1.ci_low:.1f}, {b1.ci_high:.1f}]",
            {"baseline_ratio": b1.mean / b0.mean}))  # fmt: skip
        r = runs["gfucb", Ms[-1]]
        hit = float(np.mean(r.selected == r.true_representation))
        checks.append(Check(
            "the true representation is selected", hit >= 0.9,
            f"M = {Ms[-1]}: argmin of the joint loss = the true phi on {hit:.3f} of the seeds "
            "(>= 0.9)", {"selected": hit}))  # fmt: skip

        if plot:
            from theorylab.plotting import plot_regret, save_figure

            curves = {f"{a}, M = {M}": runs[a, M].regret for M in Ms
                      for a in ("gfucb", "gfucb-independent")}  # fmt: skip
            ax = plot_regret(curves, xlabel="round", ylabel="regret per task",
                             title="GFUCB vs per-task confidence sets, |Phi| = 64")  # fmt: skip
            save_figure(ax.figure, plot)
        config = {**cfg, "spec": GFUCB_SPEC, "seed": seed,
                  "regret": {f"{a}|M={M}": v.mean for (a, M), v in R.items()}}  # fmt: skip
        return finished_report(self.name, self.statement, scale, checks, t0, config, figure=plot)


register_validation(
    GFUCBRegretFallsWithM(),
    controls=("gfucb-independent-tasks",),
    targets={"multitask-bandit": ("gfucb",)},
    papers=("001#20",),
)
