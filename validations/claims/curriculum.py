"""Claims on the curricula and hint schemes of issue 28's tier-B rows: SEC (002-004#B2), DUMP
(002-004#B3), MoPPS (000#72), online difficulty filtering (001#58) and SEELE (002-004#G9), on
:mod:`theorylab.mdps.curriculum`'s synthetic RLVR learner, and Guide (002-004#G7) on an answer
bandit. Cards docs/algorithms/{sec, dump, mopps, difficulty-filtering, seele, guide}.md; every
control is a mutation in validations/curriculum_mutations.py."""

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


class MoPPSClaim(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.policy_optimization import mopps
        from theorylab.experiment import run
        from theorylab.mdps import make
        from theorylab.mdps.curriculum import UniformCurriculum, simulate

        # (i) the streaming posterior against prior x likelihood integrated numerically in logit
        # coordinates (p = sigmoid(z): the integrand p^(a0+s) (1-p)^(b0+f) is smooth in z and
        # decays exponentially, so the trapezoid rule on a fine z grid is accurate to round-off)
        rng = np.random.default_rng(seed)
        z = np.linspace(-60.0, 60.0, 400_001)
        log_p, log_q = -np.logaddexp(0, -z), -np.logaddexp(0, z)
        worst = 0.0
        for _ in range(cfg["posterior_cases"]):
            G = int(rng.integers(2, 17))
            a0, b0 = float(rng.uniform(0.5, 3)), float(rng.uniform(0.5, 3))
            ks = rng.integers(0, G + 1, size=int(rng.integers(1, 30)))
            a, b = a0, b0
            for k in ks:
                a, b = mopps.discounted_update(a, b, k, G, 1.0, a0, b0)
            logw = (a0 + ks.sum()) * log_p + (b0 + G * len(ks) - ks.sum()) * log_q
            w = np.exp(logw - logw.max())
            worst = max(worst, abs(float((w * np.exp(log_p)).sum() / w.sum()) - a / (a + b)))
        rep.checks.append(
            Check(
                "posterior-is-beta-bernoulli",
                worst < 1e-9,
                f"undiscounted (lam = 1) streaming Beta update = prior x binomial likelihood "
                f"integrated on a 4e5-point logit grid, in mean, to {worst:.1e} over "
                f"{cfg['posterior_cases']} random priors, G and histories",
            )
        )
        lam = cfg["lam"]
        rises, shares, errs, curves = [], [], [], {}
        for spec, T in cfg["instances"]:
            kw = dict(iterations=T, learners=cfg["learners"])
            res = run("mopps", spec, lam=lam, **kw)
            flat = run("mopps", spec, lam=1.0, **kw)
            uni = simulate(make(spec), T, UniformCurriculum(make(spec).K), cfg["learners"],
                           np.random.default_rng(seed + 1), target=0.5)  # fmt: skip
            errs.append((float(np.nanmean(res.target_gap)), float(np.nanmean(flat.target_gap))))
            rises.append((float(res.objective[-1] - res.objective[0]),
                          _improvement(uni.pass_rate)))  # fmt: skip
            shares.append(
                (
                    res.config["target_share"],
                    float((np.abs(uni.chosen_p - 0.5) <= mopps.TARGET_BAND).mean()),
                )
            )
            curves[spec] = (res.target_gap[:-1], flat.target_gap[:-1])
        rep.checks.append(
            Check(
                "discounting-tracks-moving-pass-rates",
                all(e <= cfg["track_ratio"] * f for e, f in errs),
                f"mean |posterior mean - true pass rate| of the pulled category (lam = {lam}, "
                f"lam = 1): "
                + "; ".join(f"{e:.4f}, {f:.4f}" for e, f in errs)
                + f" (<= {cfg['track_ratio']} x)",
            )
        )
        rep.checks.append(
            Check(
                "concentrates-near-target-and-beats-uniform",
                all(r >= cfg["vs_uniform"] * u for r, u in rises)
                and all(s >= u + cfg["share_margin"] for s, u in shares),
                "rise of the mean pass rate (MoPPS, uniform): "
                + "; ".join(f"{r:.4f}, {u:.4f}" for r, u in rises)
                + f" (>= {cfg['vs_uniform']} x); share of pulls within {mopps.TARGET_BAND} of "
                "p* = 1/2 (MoPPS, uniform): "
                + "; ".join(f"{s:.3f}, {u:.3f}" for s, u in shares)
                + f" (margin {cfg['share_margin']})",
            )
        )
        spec, T = cfg["stationary"], cfg["T"]
        st = run("mopps", spec, iterations=T, learners=cfg["stationary_learners"], lam=1.0)
        R = st.regularised
        slope = float(np.log(R[T] / R[T // 10]) / np.log(10))
        best = float(st.policies[-1].max() / T)
        rep.checks.append(
            Check(
                "stationary-regret-logarithmic",
                slope < cfg["slope_max"] and best >= cfg["best_share"],
                f"frozen learner ({spec}, {cfg['stationary_learners']} learners), lam = 1: "
                f"distance regret {R[T // 100]:.2f}, "
                f"{R[T // 10]:.2f}, {R[T]:.2f} at T = {T // 100}, {T // 10}, {T}; log-log slope "
                f"over the last decade {slope:.3f} < {cfg['slope_max']}; the closest arm takes "
                f"{best:.4f} of the pulls (>= {cfg['best_share']})",
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            e, f = curves[cfg["instances"][0][0]]
            ax = plot_regret(
                {f"MoPPS lam = {lam}": e[None], "MoPPS lam = 1 (no discount)": f[None]},
                xlabel="training step", ylabel="|posterior mean - pass rate| of the pull",
                title=f"{self.name} [{rep.scale}]",
            )  # fmt: skip
            save_claim_figure(ax, plot)


register_validation(
    MoPPSClaim(
        name="mopps-posterior-sampling",
        statement=(
            "MoPPS's streaming Beta posterior is exact Beta-Bernoulli inference when undiscounted; "
            "discounting makes its posterior mean track pass rates that rise as the model learns; "
            "Thompson sampling toward pass rate 1/2 concentrates training there and raises a "
            "synthetic learner's mean pass rate more than uniform sampling; with a frozen learner "
            "its regret in distance to the target grows logarithmically"
        ),
        scales={
            "quick": {
                "posterior_cases": 20,
                "lam": 0.9,
                "learners": 64,
                "instances": [
                    ["curriculum:K=6,G=8,eta=0.25", 120],
                    ["curriculum:K=8,G=8,eta=0.25,low=-5,high=4", 240],
                ],
                "track_ratio": 0.8,
                "vs_uniform": 1.25,
                "share_margin": 0.03,
                "stationary": "curriculum:K=4,G=8,eta=0,low=-3.5,high=0",
                "T": 5_000,
                "stationary_learners": 64,
                "slope_max": 0.5,
                "best_share": 0.99,
            },
            "full": {
                "posterior_cases": 200,
                "lam": 0.9,
                "learners": 512,
                "instances": [
                    ["curriculum:K=6,G=8,eta=0.25", 120],
                    ["curriculum:K=8,G=8,eta=0.25,low=-5,high=4", 240],
                    ["curriculum:K=10,G=16,eta=0.2,low=-6,high=4", 400],
                ],
                "track_ratio": 0.8,
                "vs_uniform": 1.25,
                "share_margin": 0.03,
                "stationary": "curriculum:K=4,G=8,eta=0,low=-3.5,high=0",
                "T": 100_000,
                "stationary_learners": 64,
                "slope_max": 0.5,
                "best_share": 0.99,
            },
        },  # fmt: skip
    ),
    controls=("mopps-posterior-frozen",),
    papers=("000#72",),
)


class DifficultyFilteringClaim(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.experiment import run
        from theorylab.mdps import make

        # (i) GRPO's group step (1/G) sum_i (r_i - rbar)(r_i - p) written out: zero exactly for
        # groups that all solve or all fail, rbar (1 - rbar) otherwise
        worst, zero = 0.0, 0.0
        for G in (2, 4, 8, 16):
            for k in range(G + 1):
                r = np.r_[np.ones(k), np.zeros(G - k)]
                for p in (0.1, 0.5, 0.9):
                    g = float(((r - r.mean()) * (r - p)).mean())
                    worst = max(worst, abs(g - r.mean() * (1 - r.mean())))
                    if k in (0, G):
                        zero = max(zero, abs(g))
        rep.checks.append(
            Check(
                "zero-variance-groups-carry-no-gradient",
                worst < 1e-15 and zero == 0.0,
                f"group step (1/G) sum (r_i - rbar)(r_i - p) = rbar(1 - rbar) to {worst:.1e} for "
                f"every k of G = 2, 4, 8, 16; exactly {zero} on all-solve / all-fail groups",
            )
        )
        lift, U = cfg["lift"], cfg["updates"]
        rows, fractions, curves = [], [], {}
        for spec in cfg["instances"]:
            kw = dict(iterations=U, batch=cfg["batch"], learners=cfg["learners"])
            f = run("difficulty-filtering", spec, filtering=True, **kw)
            b = run("difficulty-filtering", spec, filtering=False, **kw)
            target = f.objective[0] + lift
            uf = int(np.argmax(f.objective >= target)) if (f.objective >= target).any() else None
            ub = int(np.argmax(b.objective >= target)) if (b.objective >= target).any() else None
            rows.append((uf, ub, None if uf is None else float(f.regularised[uf]),
                         None if ub is None else float(b.regularised[ub])))  # fmt: skip
            inst = make(spec)
            p0 = inst.p0
            exact = float(np.mean(1 - p0**inst.G - (1 - p0) ** inst.G))  # uniform category
            fractions.append((float(f.entropy[1]), float(b.entropy[1]), exact))
            curves[spec] = (f.objective, b.objective)
        ok = all(
            uf is not None
            and ub is not None
            and uf <= cfg["update_ratio"] * ub
            and rf <= cfg["rollout_ratio"] * rb
            for uf, ub, rf, rb in rows
        )
        rep.checks.append(
            Check(
                "fewer-updates-to-target",
                ok,
                f"updates (filtered, unfiltered) to a mean pass rate {lift} above the start: "
                + "; ".join(f"{uf}, {ub}" for uf, ub, _, _ in rows)
                + f" (filtered <= {cfg['update_ratio']} x); rollouts spent by then: "
                + "; ".join(f"{rf}, {rb}" for _, _, rf, rb in rows)
                + f" (filtered <= {cfg['rollout_ratio']} x)",
            )
        )
        se = [math.sqrt(e * (1 - e) / (cfg["batch"] * cfg["learners"])) for _, _, e in fractions]
        rep.checks.append(
            Check(
                "filtered-batches-are-all-signal",
                all(
                    fi == 1.0 and abs(bi - e) <= 4 * s
                    for (fi, bi, e), s in zip(fractions, se, strict=True)
                ),  # fmt: skip
                "fraction of the first batch's groups with a gradient (filtered, unfiltered, "
                "exact 1 - p^G - (1-p)^G averaged over categories): "
                + "; ".join(f"{fi:.3f}, {bi:.3f}, {e:.3f}" for fi, bi, e in fractions)
                + " (filtered = 1; unfiltered within 4 standard errors of exact)",
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            fo, bo = curves[cfg["instances"][0]]
            ax = plot_regret(
                {"balanced filtering": fo[None], "unfiltered GRPO batch": bo[None]},
                xlabel="update", ylabel="mean pass rate", title=f"{self.name} [{rep.scale}]",
            )  # fmt: skip
            save_claim_figure(ax, plot)


register_validation(
    DifficultyFilteringClaim(
        name="difficulty-filtering-fewer-updates",
        statement=(
            "A GRPO group that all solve or all fail carries no gradient but takes a batch slot; "
            "balanced online filtering (keep only intermediate-accuracy groups) fills every batch "
            "with signal and reaches a target mean pass rate in far fewer updates than the "
            "unfiltered batch, for about the same number of rollouts"
        ),
        scales={
            "quick": {
                "instances": [
                    "curriculum:K=6,G=8,eta=1.0",
                    "curriculum:K=6,G=4,eta=1.0,low=-3,high=3",
                ],
                "updates": 300,
                "batch": 8,
                "learners": 64,
                "lift": 0.25,
                "update_ratio": 0.7,
                "rollout_ratio": 1.3,
            },
            "full": {
                "instances": [
                    "curriculum:K=6,G=8,eta=1.0",
                    "curriculum:K=6,G=4,eta=1.0,low=-3,high=3",
                    "curriculum:K=8,G=8,eta=1.0,low=-5,high=4",
                ],
                "updates": 600,
                "batch": 8,
                "learners": 256,
                "lift": 0.25,
                "update_ratio": 0.7,
                "rollout_ratio": 1.3,
            },
        },  # fmt: skip
    ),
    controls=("difficulty-filter-dropped",),
    papers=("001#58",),
)


class SEELEClaim(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from scipy.optimize import minimize
        from scipy.special import expit

        from theorylab.algorithms.policy_optimization import seele
        from theorylab.experiment import run
        from theorylab.mdps import make

        # (i) the IRT fit is the maximiser of the ridge-penalised binomial likelihood: its gradient,
        # written out here, vanishes, and scipy's BFGS from zero finds no better point (the
        # objective is strictly concave, so a zero gradient is the unique maximum)
        rng = np.random.default_rng(seed)
        worst_grad, worst_gain = 0.0, -np.inf
        for _ in range(cfg["fit_cases"]):
            G, n = int(rng.integers(2, 17)), int(rng.integers(3, 12))
            h = rng.uniform(0, 1, n)
            k = rng.binomial(G, expit(rng.normal(-1, 1) + rng.uniform(0.5, 8) * h))
            a, b = seele.fit_irt(h[None], k[None].astype(float), G)

            def nll(x, h=h, k=k, G=G):
                z = x[0] + x[1] * h
                return float(-(k * z - G * np.logaddexp(0, z)).sum() + 5e-4 * (x @ x))

            r = k - G * expit(a[0] + b[0] * h)
            grad = np.array([r.sum() - 1e-3 * a[0], (r * h).sum() - 1e-3 * b[0]])
            worst_grad = max(worst_grad, float(np.abs(grad).max()))
            ref = minimize(nll, np.zeros(2), method="BFGS", options={"gtol": 1e-10}).x
            worst_gain = max(worst_gain, nll(np.r_[a, b]) - nll(ref))
        rep.checks.append(
            Check(
                "irt-fit-is-the-likelihood-maximiser",
                worst_grad < 1e-8 and worst_gain <= 1e-12,
                f"over {cfg['fit_cases']} random items and designs, the gradient of the "
                f"ridge-penalised binomial log-likelihood at Newton's fit is <= {worst_grad:.1e}, "
                f"and scipy's BFGS finds no better point (Newton's objective minus BFGS's <= "
                f"{worst_gain:.1e})",
            )
        )
        spec, R = cfg["frozen"], cfg["rounds"]
        fz = run("seele", spec, iterations=R, learners=cfg["learners"], window=R)
        err = fz.target_gap  # (R+1,)
        r0 = R // 8
        slope = float(np.log(err[R] / err[r0]) / np.log(R / r0))
        acc = float(np.nanmean(fz.entropy[R // 2 :]))
        inst = make(spec)  # the exact accuracy at h* (h* clipped to [0, 1] on the easiest items)
        star = np.clip((0.0 - inst.theta0) / inst.hint, 0.0, 1.0)
        exact = float(expit(inst.theta0 + inst.hint * star).mean())
        rep.checks.append(
            Check(
                "hint-converges-to-target-accuracy",
                err[R] <= cfg["err_tol"]
                and slope <= cfg["slope_max"]
                and abs(acc - exact) <= cfg["acc_tol"],
                f"frozen learner ({spec}), every earlier round in the fit: mean |h - h*| "
                f"{err[r0]:.4f} at round {r0}, {err[R]:.4f} at {R} (<= {cfg['err_tol']}; log-log "
                f"slope {slope:.2f} <= {cfg['slope_max']}); rollout accuracy over the second half "
                f"{acc:.4f}, exact at h* {exact:.4f} (p* = 0.5 where h* is inside [0, 1]; +- "
                f"{cfg['acc_tol']})",
            )
        )
        spec, R = cfg["learning"], cfg["learning_rounds"]
        kw = dict(iterations=R, learners=cfg["learners"])
        runs = {
            "SEELE": run("seele", spec, **kw),
            "no hint": run("seele", spec, schedule="fixed", fixed_hint=0.0, **kw),
            "half hint": run("seele", spec, schedule="fixed", fixed_hint=0.5, **kw),
        }
        rise = {n: float(r.objective[-1] - r.objective[0]) for n, r in runs.items()}
        sig = {n: float(r.regularised[-1]) for n, r in runs.items()}
        f = cfg["vs_fixed"]
        ok = all(rise["SEELE"] >= f * rise[n] and sig["SEELE"] >= f * sig[n]
                 for n in ("no hint", "half hint"))  # fmt: skip
        rep.checks.append(
            Check(
                "more-signal-and-progress-than-fixed-hints",
                ok,
                f"learning ({spec}, {R} rounds): unhinted pass-rate rise "
                + ", ".join(f"{n} {v:.4f}" for n, v in rise.items())
                + "; summed training signal rbar(1 - rbar) "
                + ", ".join(f"{n} {v:.1f}" for n, v in sig.items())
                + f" (SEELE >= {f} x each fixed hint)",
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            x = np.arange(1, cfg["rounds"] + 1)
            ax = plot_regret(
                {"SEELE: mean |h - h*|": err[None, 1:]}, x=x, xlabel="round",
                ylabel="hint error", title=f"{self.name} [{rep.scale}]",
            )  # fmt: skip
            ax.set_xscale("log")
            ax.set_yscale("log")
            save_claim_figure(ax, plot)


register_validation(
    SEELEClaim(
        name="seele-irt-hint-convergence",
        statement=(
            "SEELE's item-response fit is the binomial maximum-likelihood item; on a frozen "
            "learner the hint it predicts converges to the exact h* with pass rate p* = 1/2 (at "
            "about the 1/sqrt(n) rate of the fit) and rollout accuracy sits at p*; on a learning "
            "learner it yields more training signal and more unhinted progress than fixed hints"
        ),
        scales={
            "quick": {
                "fit_cases": 20,
                "learners": 64,
                "frozen": "curriculum:K=6,G=8,eta=0,low=-6,high=1,hint=8",
                "rounds": 200,
                "err_tol": 0.01,
                "slope_max": -0.3,
                "acc_tol": 0.01,
                "learning": "curriculum:K=6,G=8,eta=0.25,low=-6,high=1,hint=8",
                "learning_rounds": 60,
                "vs_fixed": 1.25,
            },
            "full": {
                "fit_cases": 200,
                "learners": 128,
                "frozen": "curriculum:K=6,G=8,eta=0,low=-6,high=1,hint=8",
                "rounds": 400,
                "err_tol": 0.005,
                "slope_max": -0.3,
                "acc_tol": 0.005,
                "learning": "curriculum:K=6,G=8,eta=0.25,low=-6,high=1,hint=8",
                "learning_rounds": 60,
                "vs_fixed": 1.25,
            },
        },  # fmt: skip
    ),
    controls=("seele-irt-slope-ignored",),
    papers=("002-004#G9",),
)


class GuideClaim(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from scipy.special import softmax

        from theorylab.algorithms.policy_optimization import guide
        from theorylab.experiment import run
        from theorylab.mdps import make

        rng = np.random.default_rng(seed)
        # (i) the weighted score's expectation under the hinted policy, enumerated, is grad J
        worst = 0.0
        for _ in range(cfg["cases"]):
            A = int(rng.integers(2, 9))
            theta = rng.normal(0, 2, A)
            corr = np.zeros(A, dtype=bool)
            corr[rng.choice(A, size=int(rng.integers(1, A)), replace=False)] = True
            pi = softmax(theta)
            pi_h = softmax(theta + rng.uniform(0, 8) * corr)
            J = float(pi[corr].sum())
            grad = pi * (corr - J)  # the softmax policy gradient of J = pi(correct)
            got = guide.weighted_score_expectation(pi, pi_h, corr.astype(float), rng.uniform())
            worst = max(worst, float(np.abs(got - grad).max()))
        rep.checks.append(
            Check(
                "weighted-update-unbiased-for-unhinted-objective",
                worst < 1e-14,
                f"E over hinted answers of pi/pi_h (r - b)(e_y - pi), enumerated, = grad "
                f"pi(correct) = pi (r - J) to {worst:.1e} over {cfg['cases']} random policies, "
                f"hints and baselines b",
            )
        )
        # (ii) the expected one-step update, sampled, against the closed forms
        theta = np.array([[0.0, 1.0, -3.0, 0.5, -1.0]])
        corr = np.array([[False, False, True, False, False]])
        G, N = cfg["group"], cfg["draws"]
        pi = softmax(theta, axis=1)[0]
        J = float(pi[2])
        grad = pi * (corr[0] - J)
        zs = {}
        for mode, factor in (("guide", 1 + (1 - J) ** G), ("grpo", 1.0)):
            st, _ = guide.guide_update(np.repeat(theta, N, 0), np.repeat(corr, N, 0),
                                       cfg["hint"], G, mode, rng)  # fmt: skip
            want = (G - 1) / G * factor * grad
            zs[mode] = float(np.abs((st.mean(0) - want) / (st.std(0) / math.sqrt(N))).max())
        rep.checks.append(
            Check(
                "expected-update-matches-closed-form",
                max(zs.values()) < 5,
                f"{N} one-step updates (G = {G}, J = {J:.4f}): Guide's mean = ((G-1)/G)(1 + "
                f"(1-J)^G) grad J within {zs['guide']:.2f} standard errors, GRPO's = ((G-1)/G) "
                f"grad J within {zs['grpo']:.2f} (< 5)",
            )
        )
        # (iii) hard prompts: Guide's updates are non-zero where GRPO's groups all fail
        spec, T = cfg["instance"], cfg["steps"]
        kw = dict(iterations=T, learners=cfg["learners"], hint=cfg["hint"], group=G)
        gd = run("guide-grpo", spec, mode="guide", **kw)
        gp = run("guide-grpo", spec, mode="grpo", **kw)
        act = (float(gd.regularised[1]), float(gp.regularised[1]))
        rise = tuple(float(r.objective[-1] - r.objective[0]) for r in (gd, gp))
        inst = make(spec)  # exact P(non-zero first update) per prompt
        J = inst.accuracy(inst.base_logp)  # (P,)
        Jh = (softmax(inst.base_logp + cfg["hint"] * inst.correct, axis=1) * inst.correct).sum(1)
        mixed, mixed_h = 1 - J**G - (1 - J) ** G, 1 - Jh**G - (1 - Jh) ** G
        exact = (float((mixed + (1 - J) ** G * mixed_h).mean()), float(mixed.mean()))
        n = cfg["learners"] * len(J)
        ok = all(abs(a - e) <= 4 * math.sqrt(e * (1 - e) / n) + 1e-12
                 for a, e in zip(act, exact, strict=True))  # fmt: skip
        rep.checks.append(
            Check(
                "signal-on-all-fail-prompts",
                ok and rise[0] >= cfg["rise_ratio"] * rise[1],
                f"{spec}: fraction of prompts with a non-zero first update, Guide {act[0]:.4f} "
                f"(exact {exact[0]:.4f}), GRPO {act[1]:.4f} (exact {exact[1]:.4f}; each within 4 "
                f"standard errors); accuracy rise over {T} steps Guide {rise[0]:.5f}, GRPO "
                f"{rise[1]:.5f} (>= {cfg['rise_ratio']} x)",
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            ax = plot_regret(
                {"Guide-GRPO": gd.objective[None], "GRPO": gp.objective[None]},
                xlabel="step", ylabel="unhinted accuracy", title=f"{self.name} [{rep.scale}]",
            )  # fmt: skip
            save_claim_figure(ax, plot)


register_validation(
    GuideClaim(
        name="guide-hinted-importance-weights",
        statement=(
            "Guide's importance-weighted update from hinted rollouts is unbiased for the unhinted "
            "objective; with GRPO's group-mean baseline its expected step is ((G-1)/G)(1 + "
            "(1-J)^G) grad J against GRPO's ((G-1)/G) grad J; on prompts whose groups almost all "
            "fail it updates where GRPO's advantage is zero and learns faster early"
        ),
        scales={
            "quick": {
                "cases": 50,
                "group": 4,
                "draws": 100_000,
                "hint": 6.0,
                "instance": "answer-bandit:P=8,A=6,rare=4",
                "steps": 10,
                "learners": 256,
                "rise_ratio": 1.2,
            },
            "full": {
                "cases": 500,
                "group": 4,
                "draws": 1_000_000,
                "hint": 6.0,
                "instance": "answer-bandit:P=16,A=8,rare=5,seed=1",
                "steps": 10,
                "learners": 1024,
                "rise_ratio": 1.2,
            },
        },  # fmt: skip
    ),
    controls=("guide-importance-weights-dropped",),
    papers=("002-004#G7",),
)
