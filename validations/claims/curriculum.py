"""Claims on the curriculum bandits of issue 28's tier-B rows: SEC (002-004#B2) and DUMP
(002-004#B3), both on :mod:`theorylab.mdps.curriculum`'s synthetic RLVR learner. Cards
docs/algorithms/sec.md and dump.md; the controls ``sec-mean-reward-value`` and
``dump-bonus-dropped`` are in validations/curriculum_mutations.py."""

from __future__ import annotations

import math

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.registry import register_validation


def _improvement(pass_rate: np.ndarray) -> float:
    return float(pass_rate[..., -1].mean() - pass_rate[..., 0].mean())


class SECCurriculumClaim(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from scipy.stats import binom

        from theorylab.experiment import run
        from theorylab.mdps import make
        from theorylab.mdps.curriculum import (
            UniformCurriculum,
            expected_abs_advantage,
            simulate,
        )

        # (i) the proxy, enumerated: k successes of G give |r_i - rbar| = 1 - k/G on the k
        # successes and k/G on the G - k failures
        ps = np.linspace(0.0, 1.0, 101)
        worst, peaks = 0.0, []
        for G in (2, 4, 8, 16):
            k = np.arange(G + 1)
            per_group = (k * (1 - k / G) + (G - k) * (k / G)) / G  # (G+1,)
            enum = (binom.pmf(k[None], G, ps[:, None]) * per_group[None]).sum(1)  # (101,)
            closed = 2 * ps * (1 - ps) * (G - 1) / G
            worst = max(worst, float(np.abs(enum - closed).max()),
                        float(np.abs(expected_abs_advantage(ps, G) - enum).max()))  # fmt: skip
            peaks.append(float(ps[enum.argmax()]))
        rep.checks.append(
            Check(
                "abs-advantage-peaks-at-one-half",
                worst < 1e-14 and all(p == 0.5 for p in peaks),
                f"E of a group's mean |advantage| enumerated over Binomial(G, p) = 2p(1-p)(G-1)/G "
                f"to {worst:.1e} for G = 2, 4, 8, 16 on 101 pass rates; its argmax {peaks}",
            )
        )
        gains, sweet, track, curves = [], [], [], {}
        for spec, T in cfg["instances"]:
            res = run("sec", spec, iterations=T, learners=cfg["learners"], tau=cfg["tau"])
            uni = simulate(make(spec), T, UniformCurriculum(make(spec).K), cfg["learners"],
                           np.random.default_rng(seed + 1))  # fmt: skip
            sec_gain = float(res.objective[-1] - res.objective[0])
            oracle_gain = float(res.target_value - res.objective[0])
            uni_gain = _improvement(uni.pass_rate)
            gains.append((sec_gain, uni_gain, oracle_gain))
            uni_sweet = float(((uni.chosen_p >= 0.2) & (uni.chosen_p <= 0.8)).mean())
            sweet.append((res.config["sweet_spot_share"], uni_sweet))
            track.append((res.config["best_arm_share"], float((uni.gap <= 1e-12).mean())))
            curves[spec] = (res.objective, uni.pass_rate.mean(0), res.objective + res.target_gap)
        ok = all(s >= cfg["vs_uniform"] * u and s >= cfg["vs_oracle"] * o for s, u, o in gains)
        rep.checks.append(
            Check(
                "beats-uniform-near-oracle",
                ok,
                "rise of the mean pass rate (SEC, uniform, myopic oracle) per instance: "
                + "; ".join(f"{s:.4f}, {u:.4f}, {o:.4f}" for s, u, o in gains)
                + f" (SEC >= {cfg['vs_uniform']} x uniform and >= {cfg['vs_oracle']} x oracle)",
            )
        )
        ok = all(s >= u + cfg["sweet_margin"] for s, u in sweet) and all(
            s >= cfg["track_factor"] * u for s, u in track
        )
        rep.checks.append(
            Check(
                "concentrates-and-tracks",
                ok,
                "share of pulls with the category's pass rate in [0.2, 0.8] (SEC, uniform): "
                + "; ".join(f"{s:.3f}, {u:.3f}" for s, u in sweet)
                + f" (margin {cfg['sweet_margin']}); share of pulls of the current best arm: "
                + "; ".join(f"{s:.3f}, {u:.3f}" for s, u in track)
                + f" (SEC >= {cfg['track_factor']} x uniform)",
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            spec = cfg["instances"][0][0]
            s, u, o = curves[spec]
            ax = plot_regret(
                {"SEC": s[None], "uniform": u[None], "myopic oracle": o[None]},
                xlabel="training step", ylabel="mean pass rate",
                title=f"{self.name} [{rep.scale}]",
            )  # fmt: skip
            save_claim_figure(ax, plot)


register_validation(
    SECCurriculumClaim(
        name="sec-absolute-advantage-curriculum",
        statement=(
            "With binary rewards and the group-mean baseline, the expected mean absolute advantage "
            "is 2p(1-p)(G-1)/G, largest at pass rate 1/2; SEC's TD(0) + Boltzmann curriculum on "
            "it concentrates on categories near the sweet spot, tracks the moving best category, "
            "and raises a synthetic learner's mean pass rate more than uniform sampling, close to "
            "a myopic oracle that knows the learner"
        ),
        scales={
            "quick": {
                "instances": [
                    ["curriculum:K=6,G=8,eta=0.25", 120],
                    ["curriculum:K=8,G=8,eta=0.25,low=-5,high=4", 240],
                ],
                "learners": 64,
                "tau": 0.05,
                "vs_uniform": 1.25,
                "vs_oracle": 0.75,
                "sweet_margin": 0.05,
                "track_factor": 1.5,
            },
            "full": {
                "instances": [
                    ["curriculum:K=6,G=8,eta=0.25", 120],
                    ["curriculum:K=8,G=8,eta=0.25,low=-5,high=4", 240],
                    ["curriculum:K=10,G=16,eta=0.2,low=-6,high=4", 400],
                ],
                "learners": 512,
                "tau": 0.05,
                "vs_uniform": 1.25,
                "vs_oracle": 0.75,
                "sweet_margin": 0.05,
                "track_factor": 1.5,
            },
        },  # fmt: skip
    ),
    controls=("sec-mean-reward-value",),
    papers=("002-004#B2",),
)


class DUMPCurriculumClaim(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.bounds import get_bound
        from theorylab.experiment import run
        from theorylab.mdps import make
        from theorylab.mdps.curriculum import expected_abs_advantage
        from theorylab.validations.reference import informative_from

        spec, T = cfg["stationary"], cfg["T"]
        inst = make(spec)
        mu = expected_abs_advantage(inst.p0, inst.G)  # (K,) the arms' exact means (eta = 0)
        gaps = mu.max() - mu
        res = run("dump", spec, iterations=T, learners=cfg["learners"])
        R = res.regularised  # (T+1,) mean pseudo-regret
        grid = [t for t in cfg["grid"] if t <= T]
        card = get_bound("auer2002-ucb1-thm1")  # Auer et al. 2002, Theorem 1
        inst_terms = dict(inv_gap_sum=float((1 / gaps[gaps > 0]).sum()), gap_sum=float(gaps.sum()))
        bound = [float(card.evaluate(K=t, **inst_terms)) for t in grid]
        trivial = [float(t * gaps.max()) for t in grid]
        first = informative_from(
            lambda k: np.array([float(card.evaluate(K=float(k[0]), **inst_terms))]),
            float(gaps.max()),
        )
        rep.informative_from = {"variable": "K", "value": first, "at": T,
                                "bound": "auer2002-ucb1-thm1",
                                "max_episode_regret": float(gaps.max())}  # fmt: skip
        informative = [t for t in grid if first is not None and t >= first]
        under = all(R[t] <= b for t, b in zip(grid, bound, strict=True))
        rep.checks.append(
            Check(
                "pseudo-regret-under-ucb1-bound",
                bool(informative) and informative[-1] == grid[-1] and under,
                f"frozen learner ({spec}: arms' E|A| {np.round(mu, 4).tolist()}), "
                f"{cfg['learners']} learners: mean pseudo-regret at T = {grid}: "
                f"{[round(float(R[t]), 1) for t in grid]} <= the UCB1 bound "
                f"{[round(b, 1) for b in bound]}; informative (below T max gap "
                f"{[round(v) for v in trivial]}) from T = {first}"
                + ("" if informative else " -- VACUOUS"),
            )
        )
        n = res.policies[-1]  # (K,) mean pulls
        sub = gaps > 0
        ratio = n[sub] / (2 * math.log(T) / gaps[sub] ** 2)
        lo, hi = cfg["pull_ratio"]
        growing = bool(np.all(np.diff([res.policies[t].min() for t in grid]) > 0))
        slope = math.log(R[T] / R[T // 10]) / math.log(10)
        rep.checks.append(
            Check(
                "pulls-at-ucb1-rate",
                bool(np.all((ratio >= lo) & (ratio <= hi)))
                and growing
                and slope < cfg["slope_max"],
                f"suboptimal arms' mean pulls / (2 ln T / gap^2) = {np.round(ratio, 3).tolist()} "
                f"in [{lo}, {hi}]; the least-pulled arm's count grows along the grid "
                f"({[round(float(res.policies[t].min()), 1) for t in grid]}); pseudo-regret's "
                f"log-log slope over the last decade {slope:.3f} < {cfg['slope_max']}",
            )
        )
        ns_spec, ns_T = cfg["learning"]
        ns = run("dump", ns_spec, iterations=ns_T, learners=cfg["learners"])
        ns_inst = make(ns_spec)
        best = int(expected_abs_advantage(ns_inst.p0, ns_inst.G).argmax())
        q = ns_T // 4
        c = ns.policies  # (T+1, K) mean pull counts
        first = float((c[q, best] - c[ns_inst.K, best]) / (q - ns_inst.K))
        last = float((c[ns_T, best] - c[ns_T - q, best]) / q)
        rep.checks.append(
            Check(
                "moves-away-as-advantage-falls",
                last <= cfg["share_drop"] * first and ns.objective[-1] > ns.objective[0],
                f"learning ({ns_spec}, T = {ns_T}): the initially best category's share of pulls "
                f"{first:.3f} in the first quarter (after the round robin), {last:.3f} in the "
                f"last (<= {cfg['share_drop']} x); mean pass rate {ns.objective[0]:.3f} -> "
                f"{ns.objective[-1]:.3f}",
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            t = np.unique(np.geomspace(1, T, 200).astype(int))  # a log grid of steps
            ub = np.array([float(card.evaluate(K=int(k), **inst_terms)) for k in t])
            ax = plot_regret(
                {"DUMP (UCB1)": R[None, t]}, {"UCB1 bound (Auer et al. 2002, Thm 1)": ub}, x=t,
                xlabel="step t", ylabel="pseudo-regret", title=f"{self.name} [{rep.scale}]",
            )  # fmt: skip
            ax.set_xscale("log")
            save_claim_figure(ax, plot)


register_validation(
    DUMPCurriculumClaim(
        name="dump-ucb-curriculum",
        statement=(
            "DUMP's UCB1 over distributions on the mean absolute advantage: with a frozen learner "
            "(stationary arms) its pseudo-regret stays under UCB1's bound 8 sum ln T / gap + "
            "(1 + pi^2/3) sum gap where that bound is informative, every arm keeps being pulled "
            "at UCB1's rate 2 ln T / gap^2; with a learning learner the schedule leaves a "
            "distribution once its advantage falls"
        ),
        scales={
            "quick": {
                "stationary": "curriculum:K=4,G=8,eta=0,low=-3.5,high=0",
                "T": 10_000,
                "grid": [100, 300, 1000, 3000, 10_000],
                "learners": 64,
                "pull_ratio": [0.3, 1.2],
                "slope_max": 0.6,
                "learning": ["curriculum:K=6,G=8,eta=0.25", 400],
                "share_drop": 0.75,
            },
            "full": {
                "stationary": "curriculum:K=4,G=8,eta=0,low=-3.5,high=0",
                "T": 100_000,
                "grid": [100, 1000, 3000, 10_000, 30_000, 100_000],
                "learners": 128,
                "pull_ratio": [0.3, 1.2],
                "slope_max": 0.6,
                "learning": ["curriculum:K=6,G=8,eta=0.25", 400],
                "share_drop": 0.75,
            },
        },  # fmt: skip
    ),
    controls=("dump-bonus-dropped",),
    papers=("002-004#B3",),
)
