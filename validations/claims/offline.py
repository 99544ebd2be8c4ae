r"""Offline-RL claims: rates in N, growth in C*, partial coverage, PEVI's data-dependent bound,
the pessimism invariant, and one-hot PEVI = tabular PEVI.

Every claim computes sub-optimality exactly on the true model (``theorylab.algorithms.offline``)
and has a ``quick`` scale (seconds, run in CI by tests/test_validations.py) and a ``full`` scale
(minutes, ``-m slow``). Each scale's numbers (sweep, seeds, acceptance ranges) are part of the
claim and are printed in the report. Slopes are least-squares log-log slopes of the mean over
seeds with a bootstrap-over-seeds 95% CI, fitted on the upper half of the (log) sweep -- the
asymptotic regime, as for the regret claims (``validations.claim.SLOPE_FIT_RANGE``).

Claims and what they test (see docs/tutorials/why-pessimism.md for the story and the figures):

1. ``offline-lcb-rates`` -- Rashidinejad et al. 2021: LCB's sub-optimality falls like N^(-1/2) on
   generic data (C* = 4) and like N^(-1) on near-expert data (C* = 1.05), on the
   ``multiscale-bandit`` instance (one hard context at every scale of the sweep: log-uniform gaps
   for the sqrt(C*/N) term, log-uniform masses for the missing-mass 1/N term). The algorithm is
   ``pessimistic-vi-hoeffding`` at H = 1, which is LCB for contextual bandits; the full scale also
   runs VI-LCB (discounted, gamma = 1/2, c_L = 1/2: the exact Hoeffding width) on N in
   [10^5, 10^7] -- VI-LCB's data splitting into T + 1 = 1 + log N / (1 - gamma) folds delays its
   rate regime by a factor of about T.
2. ``offline-lcb-cstar`` -- at fixed N, sub-optimality grows no faster than sqrt(C*) (slope CI
   reaching down to 1/2 or below) and sub-linearly (CI below 1), but grows (CI above 0), and is
   at most half the uniform policy's at every C* (the last two give the claim its power: a
   policy that ignores the data has a slope of 0 in C*). C* is varied by covariate shift
   (``multiscale-bandit:junk=true``, ``covariate_shift_distribution``): the data's mass on pi*'s
   contexts is 2/C*, both actions alike, so the *only* change is the amount of data where pi*
   goes. (Varying C* through the behaviour's action mixture instead also changes how well the
   competing action is covered; LCB's penalty gap is then sqrt(C*) - (1 - 1/C*)^(-1/2), whose
   log-slope approaches 1/2 only from above -- measured 0.58 [0.53, 0.62] for C* in [128, 1024]
   at N = 10^6. That is recorded in the docs, not tested as sqrt growth.)
3. ``offline-pessimism-partial-coverage`` -- on ``tempting-arms`` with every tempting arm tried
   m = 2 times, pessimistic VI's sub-optimality reaches exactly 0 while naive VI fails on a fraction
   of seeds bounded away from 0 at every N, matching the Poisson-limit prediction
   ``naive_failure_limit()`` = 0.969.
4. ``pevi-data-dependent-bound`` -- PEVI (linear MDP ``offline-linear:d=2,H=2``, beta = d H
   sqrt(zeta), c_beta = 1 [M], xi = 0.1): SubOpt <= 2 beta sum_h E_{pi*}||phi||_{Lambda_h^-1} on
   at least 1 - xi of the seeds at every N where the bound is below the sub-optimality range, and
   V_hat(mu0) <= V^pi_hat(mu0) on at least 1 - xi of the runs with V_hat > 0 (the two halves of
   Theorem 4.2's proof); the registered card ``pevi-linear`` evaluates to the same number. On the
   default offline-linear (d = 4, H = 4) the bound is vacuous up to N = 4e5 (issue 13), so the
   claim uses d = 2, H = 2, where it is below the null policies' sub-optimality from N = 1e5.
5. ``offline-pessimism-lower-bound`` -- V_hat(mu0) <= V^{pi_hat}(mu0) on at least 1 - delta of the
   *informative* seed-runs, for every pessimistic algorithm at its documented constants. A run
   whose penalty clipped V_hat(mu0) to 0 satisfies the invariant whatever the algorithm does
   (rewards are >= 0), so only runs with V_hat(mu0) > 0 count, each case's N are chosen where
   every seed is informative, the report prints how many were, and a case with fewer than half
   informative runs fails. Negative control: naive VI (no penalty) fails it.
6. ``pevi-one-hot-equals-tabular`` -- PEVI run with explicit one-hot features equals the closed-form
   tabular PEVI: identical policies and |Q_lin - Q_tab| <= 1e-12 (round-off of the d x d solves).
7. ``behaviour-cloning-imitates-behaviour`` -- behaviour cloning converges to the behaviour policy:
   |SubOpt(BC) - SubOpt(pi_b)| falls like N^(-1/2) (the empirical policy's error), so BC's
   sub-optimality tends to the behaviour's (0.626 on the instance), never to 0, while pessimistic
   VI's reaches 0 (full scale, every seed at N = 3e5). The slope CI contains -1/2 at the claim's
   seed; over master seeds 0-9 at quick scale it did for 9 (seed 7: -0.39 [-0.47, -0.31]), as a
   95% interval should. Seeds are drawn in chunks (a seed's data does not depend on its batch):
   one draw of 256 seeds x 10^6 trajectories of H = 5 would need over 20 GB.
8. ``ogsrl-support-restricted-optimum`` -- OGSRL (002-004#C7, ``algorithms/offline/ogsrl.py``) on
   random MDPs (S = 6, A = 3, gamma = 0.9) with population data from a behaviour on a random
   action subset per state, a random cost and a binding budget kappa (halfway between the least
   support-restricted cost and the cost of the best support-restricted policy): the policy puts
   no mass on unseen pairs, its true cost is <= kappa, its true value equals the best
   support-restricted value by enumeration of deterministic policies and their two-policy
   mixtures (exact linear solves, no LP), the answer does not change when the model's reward on
   unseen pairs is 1 instead of 0, and on N = 2000 sampled transitions the LP value equals the
   same enumeration on the empirical model. Controls: ``ogsrl-support-dropped`` (fails the
   support and fill checks: the fill of 1 is exploited), ``ogsrl-budget-dropped`` (fails cost,
   value and sampled checks). INFO: the gap to the unguarded true-model CMDP optimum.
9. ``trajectory-weighting-improves-deterministic`` -- return-weighted trajectory sampling
   (002-004#C1, ``algorithms/offline/trajectory_weighting.py``) on the enumerated trajectories
   (probabilities as row weights) of a random stochastic behaviour in random deterministic MDPs
   (S = 4, A = 2, H = 3, random mu0): the cloned policy's exact value (backward induction written
   in the claim) is >= the behaviour's on every fit, above it by > 0.01 on average, and equals the
   re-weighted data's mean return; on the stochastic gamble MDP it is below the behaviour's.
   Control: ``trajectory-weighting-inverted``.
10. ``vw-pevi-heteroscedastic-rate`` -- PNLSVI's guarantee (000#26) on vw-pevi: on a
   heteroscedastic linear MDP (``heteroscedastic_instance``) the exact sub-optimality is
   O(1/sqrt(N)) on the sweep and at most half the unweighted pessimistic LSVI's at the same width.
   Control: ``vw-pevi-weights-inverted``.
11. ``mbrcsl-stitches-rcsl-does-not`` -- RCSL / MBRCSL (000#5): on the stitching MDP RCSL returns
   the best data return (1.0 < V* = 1.5), MBRCSL returns V*; on random deterministic MDPs RCSL
   equals the best data return and MBRCSL the best support-restricted value (``support_value``).
   Control: ``mbrcsl-no-rollouts``.
12. ``het-pevi-source-floor`` -- HetPEVI (000#71): sub-optimality floors in n at fixed K, falls
   with K, pessimism holds on the target. Controls: ``het-pevi-single-source``,
   ``het-pevi-source-term-dropped``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from theorylab.validations.claim import (
    SLOPE_FIT_RANGE,
    Check,
    Report,
    ScaledClaim,
    finished_report,
    save_claim_figure,
)
from theorylab.validations.registry import register_validation

ROUND_OFF = 1e-12


# ------------------------------------------------------------------------------ helpers
def _sweep_n(
    mdp,
    algorithm: str,
    Ns,
    B: int,
    seed: int,
    params=None,
    chunk: int | None = None,
    clipped: list | None = None,
    **data,
) -> np.ndarray:
    """Exact sub-optimality ``(B, K)`` on nested datasets (the first n of one draw of max N),
    through ``theorylab.run`` (its ``loop="auto"`` takes the compiled sweep of
    ``theorylab.algorithms.offline.compiled_sweep`` when the algorithm has one: the same numbers
    as fitting every head(n) of make_dataset's draw, tests/test_offline_compiled_sweep.py).

    ``chunk``: process the seeds in groups of at most this many (memory); a seed's data and fit do
    not depend on its batch, so the result is the same. ``clipped``: a list that receives the
    ``(B, K)`` boolean array "the algorithm's value estimate is 0" (its penalty clipped every value
    at mu0 to 0, so its policy is a tie-break, not a choice)."""
    from theorylab.experiment import run

    out = np.empty((B, len(Ns)))
    zero = np.zeros((B, len(Ns)), dtype=bool)
    step = chunk or B
    for lo in range(0, B, step):
        idx = list(range(lo, min(B, lo + step)))
        res = run(
            algorithm,
            mdp,
            seeds=idx,
            seed=seed,
            dataset_size=[int(n) for n in Ns],
            sampling="samples",
            **data,
            **(params or {}),
        )
        out[idx] = res.suboptimality
        zero[idx] = np.asarray(res.value_estimate) <= 1e-12
    if clipped is not None:
        clipped.append(zero)
    return out


def _slope(x, y):
    from theorylab.stats import loglog_slope

    return loglog_slope(np.asarray(x, dtype=float), y, fit_range=SLOPE_FIT_RANGE)


def _range_check(name: str, fit, lo: float, hi: float, *, contains: float | None = None) -> Check:
    inside = lo <= fit.ci_low and fit.ci_high <= hi
    ok = inside and (contains is None or fit.contains(contains))
    want = f"CI inside [{lo}, {hi}]" + (
        f" and containing {contains}" if contains is not None else ""
    )
    return Check(
        name,
        ok,
        f"log-log slope {fit.slope:.3f}, 95% CI [{fit.ci_low:.3f}, {fit.ci_high:.3f}]; {want}",
        {"slope": fit.slope, "slope_ci": [fit.ci_low, fit.ci_high]},
    )


def _unclipped(check: Check, clipped_fraction: float) -> Check:
    """A rate check is VACUOUS when the penalty clips the value estimate at mu0 to 0 on every
    seed at every N of its fit window: the policy is then a tie-break, and no rate of a
    pessimistic algorithm is being measured (issue 13). The fraction is reported either way."""
    check.detail += (
        f"; value estimate clipped to 0 on {clipped_fraction:.0%} of the seed-N pairs of the fit "
        "window"
    )
    check.values["clipped_fraction"] = float(clipped_fraction)
    if clipped_fraction >= 1.0 and check.status == "PASS":
        check.status = "VACUOUS"
    return check


# ------------------------------------------------------------------------------ 1. rates in N
class LCBRates(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.bounds import get_bound
        from theorylab.mdps import make

        upper = get_bound("vi-lcb-upper")
        near = get_bound("vi-lcb-lower-near-expert")
        rep.bound_exponent = float(upper.exponent("N"))
        curves = {}
        fits = {}
        clip: dict[str, float] = {}
        mdp = make(cfg["mdp"])
        for label, (cov, other) in (
            ("generic", (0.25, "adversarial")),
            ("near-expert", (0.9, "uniform")),
        ):
            zero: list = []
            y = _sweep_n(
                mdp,
                cfg["algorithm"],
                cfg["N"],
                cfg["seeds"],
                seed,
                coverage=cov,
                other=other,
                clipped=zero,
            )
            curves[f"LCB, {label} data"] = y
            fits[label] = _slope(cfg["N"], y)
            clip[label] = zero[0][:, len(cfg["N"]) // 2 :].mean()  # the fit window (upper half)
        g, ne = fits["generic"], fits["near-expert"]
        rep.slope, rep.slope_ci = g.slope, (g.ci_low, g.ci_high)
        rep.checks.append(
            _unclipped(
                _range_check(
                    "generic-rate (C* = 4)",
                    g,
                    *cfg["generic_range"],
                    contains=cfg.get("generic_contains"),
                ),
                clip["generic"],
            )
        )
        rep.checks.append(
            _unclipped(
                _range_check("near-expert-rate (C* = 1.05)", ne, *cfg["near_range"]),
                clip["near-expert"],
            )
        )
        rep.checks.append(
            Check(
                "near-expert-faster",
                ne.ci_high < g.ci_low,
                f"near-expert slope CI [{ne.ci_low:.3f}, {ne.ci_high:.3f}] lies below the "
                f"generic CI [{g.ci_low:.3f}, {g.ci_high:.3f}] (bound exponents in N: "
                f"vi-lcb-upper {float(upper.exponent('N')):g}, vi-lcb-lower-near-expert "
                f"{float(near.exponent('N')):g})",
            )
        )
        if "vi_lcb" in cfg:
            v = cfg["vi_lcb"]
            vmdp = make(v["mdp"])
            for label, (cov, other), rng, contains in (
                ("generic", (0.25, "adversarial"), cfg["generic_range"], -0.5),
                ("near-expert", (0.9, "uniform"), cfg["near_range"], None),
            ):
                y = _sweep_n(
                    vmdp,
                    "vi-lcb",
                    v["N"],
                    v["seeds"],
                    seed,
                    {"c_L": v["c_L"], "initial_policy": v["initial_policy"]},
                    chunk=v.get("chunk"),
                    coverage=cov,
                    other=other,
                )
                curves[f"VI-LCB (gamma=0.5), {label}"] = y
                rep.checks.append(
                    _range_check(f"vi-lcb-{label}-rate", _slope(v["N"], y), *rng, contains=contains)
                )
        rep.config["slopes"] = {k: [f.slope, f.ci_low, f.ci_high] for k, f in fits.items()}
        if plot:
            from theorylab.plotting import plot_suboptimality_vs_n

            lcb = {k: c for k, c in curves.items() if k.startswith("LCB")}
            ax = plot_suboptimality_vs_n(
                cfg["N"], lcb, bound_exponent=-0.5, title=f"{self.name} [{rep.scale}]"
            )
            save_claim_figure(ax, plot)


register_validation(
    LCBRates(
        name="offline-lcb-rates",
        statement=(
            "LCB's exact sub-optimality falls like N^(-1/2) on generic data (C* = 4) and faster, "
            "close to N^(-1), on near-expert data (C* = 1.05) (Rashidinejad et al. 2021), on the "
            "multiscale-bandit instance"
        ),
        bound="vi-lcb-upper",
        scales={
            "quick": {
                "mdp": "multiscale-bandit",
                "algorithm": "pessimistic-vi-hoeffding",
                "N": [1000, 3000, 10_000, 30_000, 100_000],
                "seeds": 16,
                "generic_range": (-0.8, -0.3),
                "near_range": (-1.4, -0.6),
            },
            "full": {
                "mdp": "multiscale-bandit",
                "algorithm": "pessimistic-vi-hoeffding",
                "N": [1000, 3000, 10_000, 30_000, 100_000, 300_000, 1_000_000],
                "seeds": 32,
                "generic_range": (-0.8, -0.3),
                "generic_contains": -0.5,
                "near_range": (-1.25, -0.75),
                "vi_lcb": {
                    "mdp": "multiscale-bandit:gamma=0.5",
                    "N": [100_000, 300_000, 1_000_000, 3_000_000, 10_000_000],
                    "seeds": 32,
                    "chunk": 8,
                    "c_L": 0.5,
                    # the slopes in docs/algorithms/vi-lcb.md were measured with the code's random
                    # start; the default is now Algorithm 3's behaviour start (issue 14), not yet
                    # re-measured at this scale
                    "initial_policy": "random",
                },
            },
        },
    ),
    controls=("frozen", "random"),
    targets={"offline": ("pessimistic-vi-hoeffding", "vi-lcb")},
    papers=("000#41",),
)


# ------------------------------------------------------------------------------ 2. growth in C*
class LCBConcentrability(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.offline.coverage import optimal_solution
        from theorylab.bounds import get_bound
        from theorylab.experiment import run
        from theorylab.mdps import make
        from theorylab.mdps.families.offline_instances import covariate_shift_distribution
        from theorylab.validations.reference import null_regret_per_episode

        mdp = make(cfg["mdp"])
        v_star = optimal_solution(mdp).value
        B, N = cfg["seeds"], cfg["N"]
        sub = np.empty((B, len(cfg["C_star"])))
        measured = []
        for k, C in enumerate(cfg["C_star"]):
            res = run(
                cfg["algorithm"],
                mdp,
                seeds=B,
                seed=seed,
                dataset_size=N,
                sampling="samples",
                data_distribution=covariate_shift_distribution(mdp, C),
            )  # loop="auto": the compiled sweep (the same numbers as make_dataset + fit)
            measured.append(res.coverage["C_star"])
            sub[:, k] = res.suboptimality[:, 0]
        fit_ = _slope(measured, sub)
        rep.slope, rep.slope_ci = fit_.slope, (fit_.ci_low, fit_.ci_high)
        rep.bound_exponent = float(get_bound("vi-lcb-upper").exponent("C_star"))
        rep.checks.append(
            Check(
                "no-faster-than-sqrt",
                fit_.ci_low <= 0.5,
                f"slope in C* {fit_.slope:.3f}, 95% CI [{fit_.ci_low:.3f}, {fit_.ci_high:.3f}] "
                f"over C* in [{fit_.x_range[0]:g}, {fit_.x_range[1]:g}]; must not lie above 1/2 "
                f"(bound exponent in C*: {rep.bound_exponent:g})",
                {"slope": fit_.slope, "slope_ci": [fit_.ci_low, fit_.ci_high]},
            )
        )
        rep.checks.append(
            Check("sub-linear", fit_.ci_high < 1.0, f"slope CI upper end {fit_.ci_high:.3f} < 1")
        )
        # Power (issue 13): the two checks above are one-sided, and a policy that ignores the
        # data (action 0, uniform) has a sub-optimality constant in C* (slope 0), so it passed
        # them. Where the data sit must matter (slope CI above 0), and LCB must have learned from
        # them at every C* (at most half the uniform policy's exact sub-optimality).
        rep.checks.append(
            Check(
                "grows-with-C*",
                fit_.ci_low > 0.0,
                f"slope CI lower end {fit_.ci_low:.3f} > 0 (a policy that ignores the data has "
                "a sub-optimality constant in C*: slope 0)",
            )
        )
        null = null_regret_per_episode(mdp, v_star)
        means = sub.mean(axis=0)  # (len(C_star),)
        rep.checks.append(
            Check(
                "beats-the-uniform-policy",
                bool(np.all(means <= 0.5 * null)),
                f"mean sub-optimality per C* {np.round(means, 4).tolist()}; the uniform "
                f"policy's (exact) {null:.4g}: at most half of it at every C* (largest ratio "
                f"{float(means.max() / null):.3g})",
                {"null_suboptimality": null, "largest_ratio": float(means.max() / null)},
            )
        )
        rep.config["C_star_measured"] = measured
        rep.config["mean_suboptimality"] = sub.mean(axis=0).tolist()
        if plot:
            from theorylab.plotting import plot_suboptimality_vs_cstar

            ax = plot_suboptimality_vs_cstar(
                measured, {"LCB (covariate shift)": sub}, N=N, title=f"{self.name} [{rep.scale}]"
            )
            save_claim_figure(ax, plot)


register_validation(
    LCBConcentrability(
        name="offline-lcb-cstar",
        statement=(
            "at fixed N, LCB's exact sub-optimality grows with the single-policy concentrability "
            "C* no faster than sqrt(C*) and sub-linearly, but it does grow (slope CI above 0: the "
            "data's coverage of pi* matters), and at every C* it is at most half the uniform "
            "policy's exact sub-optimality (covariate-shift data on multiscale-bandit)"
        ),
        bound="vi-lcb-upper",
        scales={
            "quick": {
                "mdp": "multiscale-bandit:n_gap=20,gap_ratio=0.7,n_mass=0,junk=true",
                "algorithm": "pessimistic-vi-hoeffding",
                "N": 100_000,
                "C_star": [2, 4, 8, 16, 32, 64],
                "seeds": 32,
            },
            "full": {
                "mdp": "multiscale-bandit:n_gap=20,gap_ratio=0.7,n_mass=0,junk=true",
                "algorithm": "pessimistic-vi-hoeffding",
                "N": 1_000_000,
                "C_star": [2, 4, 8, 16, 32, 64, 128, 256],
                "seeds": 64,
            },
        },
    ),
    controls=("frozen", "random"),
    targets={"offline": ("pessimistic-vi-hoeffding",)},
    papers=("000#41",),
)


# ------------------------------------------------------------------------------ 3. partial coverage
class PartialCoverage(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from scipy.stats import binomtest

        from theorylab.algorithms.offline import dataset_concentrability, fit, make_dataset
        from theorylab.algorithms.offline.coverage import optimal_solution
        from theorylab.algorithms.offline.scoring import suboptimality
        from theorylab.mdps import make
        from theorylab.mdps.families.offline_instances import (
            naive_failure_limit,
            tempting_arms_coverage,
        )

        mdp = make(cfg["mdp"])
        H, m = mdp.horizon, cfg["m"]
        K = mdp.A - 1
        p, r_safe = 0.3, 0.6  # the family defaults the spec uses
        gap = (H - 1) * (r_safe - p)
        v_star = optimal_solution(mdp).value
        algos = ["naive-vi", *cfg["pessimistic"]]
        sub = {a: np.empty((cfg["seeds"], len(cfg["N"]))) for a in algos}
        cstars = []
        for k, N in enumerate(cfg["N"]):
            w = tempting_arms_coverage(N, m, K, H=H)
            ds = make_dataset(mdp, N, coverage=w, other="uniform", seeds=cfg["seeds"], seed=seed)
            cstars.append(dataset_concentrability(mdp, ds)["C_star"])
            for a in algos:
                sub[a][:, k] = suboptimality(mdp, fit(a, ds).policy, v_star)
        limit = naive_failure_limit(m, K, p, r_safe)
        fails = (sub["naive-vi"] > gap / 2).sum(axis=0)  # (K_N,)
        cis = [binomtest(int(f), cfg["seeds"]).proportion_ci(method="exact") for f in fails]
        low = min(ci.low for ci in cis)
        rep.checks.append(
            Check(
                "naive-bounded-away",
                low >= 0.5,
                f"naive VI picks a tempting arm on {fails.tolist()} of {cfg['seeds']} seeds at "
                f"N = {cfg['N']}; lowest 95% Clopper-Pearson lower end {low:.3f} >= 0.5; mean "
                f"sub-optimality {np.round(sub['naive-vi'].mean(axis=0), 3).tolist()} "
                f"(gap of a tempting arm {gap:.3f})",
                {"failures": fails.tolist()},
            )
        )
        last = cis[-1]
        rep.checks.append(
            Check(
                "naive-matches-poisson-limit",
                last.low <= limit <= last.high,
                f"failure rate {fails[-1] / cfg['seeds']:.3f} at N = {cfg['N'][-1]}, 95% CI "
                f"[{last.low:.3f}, {last.high:.3f}] contains the proof's limit 1 - (1 - q_m)^K = "
                f"{limit:.3f}",
            )
        )
        for a in cfg["pessimistic"]:
            final = sub[a][:, -1]
            rep.checks.append(
                Check(
                    f"{a}-to-zero",
                    bool(np.all(final <= ROUND_OFF)),
                    f"sub-optimality at N = {cfg['N'][-1]}: max over seeds {final.max():.3g}; "
                    f"mean over N {np.round(sub[a].mean(axis=0), 4).tolist()}",
                )
            )
        rep.config["C_star"] = cstars
        if plot:
            from theorylab.plotting import plot_suboptimality_lines

            ax = plot_suboptimality_lines(
                cfg["N"],
                sub,
                reference=limit * gap,
                reference_label="naive VI: Poisson-limit prediction",
                title=f"{self.name} [{rep.scale}]",
            )
            save_claim_figure(ax, plot)


register_validation(
    PartialCoverage(
        name="offline-pessimism-partial-coverage",
        statement=(
            "on tempting-arms (each of 20 tempting arms tried twice, C* -> 1) pessimistic VI's "
            "exact sub-optimality reaches 0 while naive model-based VI's stays bounded away from "
            "0 at every N, at the rate predicted by the proof sketch"
        ),
        scales={
            "quick": {
                "mdp": "tempting-arms",
                "m": 2.0,
                "N": [3000, 30_000, 300_000],
                "seeds": 16,
                "pessimistic": ["pessimistic-vi-hoeffding", "pessimistic-vi-bernstein"],
            },
            "full": {
                "mdp": "tempting-arms",
                "m": 2.0,
                "N": [3000, 10_000, 30_000, 100_000, 300_000, 1_000_000],
                "seeds": 64,
                "pessimistic": ["pessimistic-vi-hoeffding", "pessimistic-vi-bernstein"],
            },
        },
    ),
    controls=("frozen", "random"),
    targets={"offline": ("pessimistic-vi-hoeffding", "pessimistic-vi-bernstein")},
)


# ------------------------------------------------------------------------------ 4. PEVI bound
class PEVIBound(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.offline import fit, make_dataset, pevi_coverage
        from theorylab.algorithms.offline.coverage import optimal_solution
        from theorylab.algorithms.offline.scoring import (
            pessimism_holds,
            policy_values,
            suboptimality,
        )
        from theorylab.bounds import get_bound
        from theorylab.mdps import make
        from theorylab.stats import fraction_below
        from theorylab.validations.reference import null_regret_per_episode

        mdp = make(cfg["mdp"])
        card = get_bound("pevi-linear")
        xi, H, d = cfg["xi"], mdp.horizon, mdp.phi.shape[-1]
        v_star = optimal_solution(mdp).value
        B = cfg["seeds"]
        subs, bounds = np.empty((B, len(cfg["N"]))), np.empty((B, len(cfg["N"])))
        held = np.zeros((B, len(cfg["N"])), dtype=bool)  # V_hat(mu0) <= V^pi_hat(mu0)
        live = np.zeros((B, len(cfg["N"])), dtype=bool)  # V_hat(mu0) > 0: the check can fail
        card_err = 0.0
        for k, N in enumerate(cfg["N"]):
            ds = make_dataset(mdp, N, coverage=cfg["coverage"], seeds=B, seed=seed)
            res = fit("pevi", ds, phi=mdp.phi, xi=xi, c_beta=cfg["c_beta"])
            cover = pevi_coverage(mdp, ds, mdp.phi, lam=1.0)
            bound = 2.0 * res.params["beta"] * cover
            from_card = card.evaluate(
                H=H, K=ds.n_episodes, d=d, phi_norm_sum=cover, delta=xi, c=cfg["c_beta"]
            )
            card_err = max(card_err, float(np.max(np.abs(from_card / bound - 1))))
            values = policy_values(mdp, res.policy)
            subs[:, k] = v_star - values
            bounds[:, k] = bound
            held[:, k] = pessimism_holds(res.value_estimate, values)
            live[:, k] = informative_runs(res.value_estimate)
        # Vacuity (docs/validations.md, "Three verdicts"): a bound at or above the sub-optimality
        # range V* - min_pi V^pi holds for any policy; only the N where it is below the range on
        # every seed are tested.
        from theorylab.validations.vacuity import max_episode_regret

        tab = mdp.to_tabular() if hasattr(mdp, "to_tabular") else mdp
        value_range = max_episode_regret(tab)
        informative = (bounds < value_range).all(axis=0)  # (len(N),)
        tested = [k for k in range(len(cfg["N"])) if informative[k]]
        rates = [1.0 - fraction_below(subs[:, k], bounds[:, k]).fraction for k in tested]
        worst_rate = max(rates) if rates else 0.0
        rep.violation_rate = worst_rate
        first_n = next((int(cfg["N"][k]) for k in tested), None)
        rep.informative_from = {
            "variable": "N",
            "value": first_n,
            "at": int(cfg["N"][-1]),
            "bound": "pevi-linear (data-dependent: read off the sweep, not solved)",
            "from_sweep": True,
            "max_episode_regret": value_range,
        }
        # The null policies' exact sub-optimality: the bound can fail a policy that ignores the
        # data only where it is below these (reported: where the claim has its power).
        frozen = float(suboptimality(mdp, np.zeros((1, H, mdp.S), dtype=np.int64), v_star)[0])
        uniform = null_regret_per_episode(mdp, v_star)
        below_nulls = [
            int(cfg["N"][k]) for k in tested if bounds[:, k].max() < min(frozen, uniform)
        ]
        rep.checks.append(
            Check(
                "below-bound",
                worst_rate <= xi,
                f"sub-optimality range V* - min V^pi = {value_range:.4g}; the bound is below it on "
                f"every seed at N = {[int(cfg['N'][k]) for k in tested]} of {cfg['N']}; largest "
                f"violation rate there {worst_rate:.3f} (allowed xi = {xi}); max SubOpt / bound "
                f"= {np.max(subs / bounds):.3g}; the bound is below the action-0 policy's "
                f"({frozen:.4g}) and the uniform policy's ({uniform:.4g}) sub-optimality at N = "
                f"{below_nulls}"
                + ("" if tested else "; the bound is vacuous at every N of this scale"),
                {
                    "violation_rate": worst_rate,
                    "informative_N": [int(cfg["N"][k]) for k in tested],
                    "below_null_N": below_nulls,
                },
                status=None if tested else "VACUOUS",
            )
        )
        # The other half of Theorem 4.2's proof: on its good event PEVI's estimate is pessimistic,
        # V_hat(mu0) <= V^pi_hat(mu0) (SubOpt = (V* - V_hat) + (V_hat - V^pi_hat), the second term
        # <= 0). Only runs with V_hat(mu0) > 0 can fail it (rewards are >= 0), as in
        # offline-pessimism-lower-bound; at least half of the runs must be such.
        n_live, n_held = int(live.sum()), int((held & live).sum())
        rate = 1.0 - n_held / n_live if n_live else 1.0
        rep.checks.append(
            Check(
                "pessimism",
                bool(n_live >= 0.5 * live.size and rate <= xi),
                f"V_hat(mu0) > 0 on {n_live}/{live.size} seed-N runs (at least half required); "
                f"V_hat(mu0) <= V^pi_hat(mu0) on {n_held}/{n_live} of them (failure rate "
                f"{rate:.3f}, allowed xi = {xi})",
                {"failure_rate": rate, "informative": n_live, "runs": int(live.size)},
            )
        )
        rep.checks.append(
            Check(
                "card-agrees",
                card_err <= 1e-9,
                f"pevi-linear card (c = {cfg['c_beta']}) / implemented 2 beta sum_h "
                f"E||phi||_(Lambda^-1): max relative difference {card_err:.2e}",
            )
        )
        nonvac = bounds[:, -1] < H
        rep.checks.append(
            Check(
                "bound-below-H-at-largest-N (information: a property of the data, not the policy)",
                True,
                f"bound < H = {H} on {int(nonvac.sum())}/{B} seeds at N = {cfg['N'][-1]} "
                f"(mean bound {bounds[:, -1].mean():.3g}); fraction below H per N: "
                f"{np.round((bounds < H).mean(axis=0), 2).tolist()}",
                status="INFO",
            )
        )
        rep.config["mean_bound"] = bounds.mean(axis=0).tolist()
        rep.config["mean_suboptimality"] = subs.mean(axis=0).tolist()
        rep.config["null_suboptimality"] = {"action 0": frozen, "uniform": uniform}
        if plot:
            from theorylab.plotting import plot_suboptimality_lines

            ax = plot_suboptimality_lines(
                cfg["N"],
                {"PEVI sub-optimality": subs, "2 beta sum_h E||phi||": bounds},
                title=f"{self.name} [{rep.scale}]",
            )
            ax.set_yscale("log")
            save_claim_figure(ax, plot)


register_validation(
    PEVIBound(
        name="pevi-data-dependent-bound",
        statement=(
            "PEVI's exact sub-optimality on a linear MDP is at most 2 beta sum_h "
            "E_pi*||phi(s_h,a_h)||_(Lambda_h^-1) (beta = d H sqrt(log(2dHK/xi)), c = 1 [M]) on at "
            "least 1 - xi of the seeds at every N where that bound is below the sub-optimality "
            "range, and its estimate is pessimistic, V_hat(mu0) <= V^pi_hat(mu0), on at least "
            "1 - xi of the runs with V_hat(mu0) > 0 (the two halves of Jin, Yang, Wang 2021, "
            "Theorem 4.2's proof); on offline-linear:d=2,H=2 (d = 2, H = 2: the bound is "
            "informative from N of about 1e4 and below the action-0 and uniform policies' "
            "sub-optimality from 1e5; on the default d = 4, H = 4 it is vacuous up to N = 4e5)"
        ),
        bound="pevi-linear",
        scales={
            "quick": {
                "mdp": "offline-linear:d=2,H=2",
                "N": [1000, 10_000, 100_000],
                "seeds": 16,
                "coverage": 0.3,
                "xi": 0.1,
                "c_beta": 1.0,
            },
            "full": {
                "mdp": "offline-linear:d=2,H=2",
                "N": [1000, 3000, 10_000, 30_000, 100_000, 300_000],
                "seeds": 64,
                "coverage": 0.3,
                "xi": 0.1,
                "c_beta": 1.0,
            },
        },
    ),
    controls=("frozen", "random", "pevi-penalty-sign"),
    targets={"offline": ("pevi",)},
)


# ------------------------------------------------------------------------------ 5. pessimism
def informative_runs(value_estimate: np.ndarray) -> np.ndarray:
    """Per seed, whether the pessimism check ``V_hat(mu0) <= V^{pi_hat}(mu0)`` can fail at all.

    Rewards are >= 0, so ``V^pi >= 0`` for every policy: a run whose penalty clipped V_hat(mu0) to
    0 satisfies the invariant whatever the algorithm does (issue 13: most runs of the former
    claim were of this kind). Only runs with ``V_hat(mu0) > 0`` test anything."""
    return np.asarray(value_estimate) > ROUND_OFF


class PessimismInvariant(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.offline import fit, make_dataset
        from theorylab.algorithms.offline.scoring import pessimism_holds, policy_values
        from theorylab.mdps import make
        from theorylab.stats import fraction_below

        delta, need = cfg["delta"], cfg["min_informative"]
        worst = 0.0
        for label, spec, algo, params, Ns in cfg["cases"]:
            mdp = make(spec)
            if "phi" in params:
                params = dict(params, phi=mdp.phi)
            held, informative, total, gaps = 0, 0, 0, []
            for N in Ns:
                ds = make_dataset(
                    mdp, N, coverage=0.3, other="adversarial", seeds=cfg["seeds"], seed=seed
                )
                res = fit(algo, ds, **params)
                values = policy_values(mdp, res.policy)
                live = informative_runs(res.value_estimate)
                ok = pessimism_holds(res.value_estimate, values)
                held += int(ok[live].sum())
                informative += int(live.sum())
                total += ok.size
                gaps.append(float((values - res.value_estimate).min()))
            # the failure rate among the runs that could fail (a clipped run cannot)
            rate = 1.0 - held / informative if informative else 0.0
            worst = max(worst, rate)
            frac = fraction_below(
                np.zeros(max(informative, 1)),
                np.r_[np.zeros(held), -np.ones(informative - held)] if informative else np.zeros(1),
            )
            enough = informative >= need * total
            rep.checks.append(
                Check(
                    label,
                    bool(rate <= delta and enough),
                    f"informative (V_hat(mu0) > 0) on {informative}/{total} seed-runs over "
                    f"N = {list(Ns)} (at least {need:.0%} required); V_hat <= V^pi_hat on "
                    f"{held}/{informative} of them (failure rate {rate:.3f}, allowed {delta}; CI "
                    f"[{1 - frac.ci_high:.3f}, {1 - frac.ci_low:.3f}]); "
                    f"min(V^pi_hat - V_hat) = {min(gaps):.3g}",
                    {"failure_rate": rate, "informative": informative, "runs": total},
                )
            )
        rep.violation_rate = worst


# Each case's N are those at which the algorithm at its documented constants leaves V_hat(mu0) > 0
# on every seed (measured at 32 seeds, seed 0; below them the penalty clips V_hat to 0 and the
# check is void). VI-LCB at the code's c_L = 2000 is not a case: V_hat = 0 at every N <= 10^7
# (docs/algorithms/vi-lcb.md), so no affordable run of it can test pessimism.
FH = "random:S=5,A=3,H=4,seed=3"
LIN = "offline-linear"


def _pessimism_cases(scale: str):
    quick = scale == "quick"
    return [
        ("pessimistic-vi-hoeffding", FH, "pessimistic-vi-hoeffding", {}, [10_000, 30_000]),
        (
            "pessimistic-vi-bernstein",
            FH,
            "pessimistic-vi-bernstein",
            {},
            [100_000] if quick else [100_000, 300_000],
        ),
        # beta = c d H sqrt(zeta) with d = S A: on S = 5, A = 3 the penalty clips V_hat to 0 up
        # to N = 10^6 at least, so tabular PEVI runs on a smaller instance (d = 4)
        (
            "pevi-tabular",
            "random:S=2,A=2,H=2,seed=3",
            "pevi-tabular",
            {},
            [30_000, 100_000],
        ),
        (
            "pevi (linear features)",
            LIN,
            "pevi",
            {"phi": True},
            [300_000] if quick else [300_000, 1_000_000],
        ),
        ("vw-pevi (linear features)", LIN, "vw-pevi", {"phi": True}, [3_000, 30_000]),
        (
            "vi-lcb (c_L = 1/2, Hoeffding)",
            "multiscale-bandit:gamma=0.5",
            "vi-lcb",
            {"c_L": 0.5},
            [30_000] if quick else [30_000, 300_000],
        ),
    ]


register_validation(
    PessimismInvariant(
        name="offline-pessimism-lower-bound",
        statement=(
            "every pessimistic algorithm's own value estimate is a lower bound on its returned "
            "policy's exact value, V_hat(mu0) <= V^pi_hat(mu0), on at least 1 - delta of the "
            "informative seed-runs (those with V_hat(mu0) > 0: a run clipped to 0 cannot fail), "
            "and at least half of the runs are informative"
        ),
        scales={
            "quick": {
                "delta": 0.1,
                "seeds": 32,
                "min_informative": 0.5,
                "cases": _pessimism_cases("quick"),
            },
            "full": {
                "delta": 0.1,
                "seeds": 128,
                "min_informative": 0.5,
                "cases": _pessimism_cases("full"),
            },
        },
    ),
    controls=("frozen", "random", "pevi-penalty-sign"),
    targets={
        "offline": (
            "pessimistic-vi-hoeffding",
            "pessimistic-vi-bernstein",
            "pevi-tabular",
            "pevi",
            "vw-pevi",
            "vi-lcb",
        )
    },
    papers=("000#41",),
)


# ------------------------------------------------------------------------------ 6. one-hot PEVI
class OneHotPEVI(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.offline import fit, make_dataset
        from theorylab.algorithms.offline.pevi import one_hot_features
        from theorylab.mdps import make

        rng = np.random.default_rng(seed)
        worst_q, worst_v, same = 0.0, 0.0, True
        for _ in range(cfg["instances"]):
            S, A, H = (int(rng.integers(2, 7)), int(rng.integers(2, 4)), int(rng.integers(1, 5)))
            mdp = make(f"random:S={S},A={A},H={H},seed={int(rng.integers(1000))}")
            N = int(rng.integers(H, 50 * S * A * H))
            ds = make_dataset(
                mdp,
                N,
                coverage=float(rng.random()),
                seeds=4,
                seed=int(rng.integers(1000)),
                kind="samples",
            )
            beta = float(rng.choice([0.0, 0.2, 1.0]))
            lin = fit("pevi", ds, phi=one_hot_features(S, A), beta=beta)
            tab = fit("pevi-tabular", ds, beta=beta)
            same &= bool(np.array_equal(lin.policy, tab.policy))
            worst_q = max(worst_q, float(np.abs(lin.Q - tab.Q).max()))
            worst_v = max(worst_v, float(np.abs(lin.value_estimate - tab.value_estimate).max()))
        rep.checks.append(
            Check(
                "same-policies",
                same,
                f"identical policies on all {cfg['instances']} random instances x 4 seeds",
            )
        )
        rep.checks.append(
            Check("same-Q", worst_q <= ROUND_OFF, f"max |Q_lin - Q_tab| = {worst_q:.2e} <= 1e-12")
        )
        rep.checks.append(
            Check(
                "same-value",
                worst_v <= ROUND_OFF,
                f"max |V_hat_lin - V_hat_tab| = {worst_v:.2e} <= 1e-12",
            )
        )


register_validation(
    OneHotPEVI(
        name="pevi-one-hot-equals-tabular",
        statement=(
            "PEVI with explicit one-hot features equals tabular PEVI (Gamma = beta / sqrt(n + "
            "lambda)): identical policies, Q equal up to 1e-12"
        ),
        bound="pevi-linear",
        scales={"quick": {"instances": 8}, "full": {"instances": 200}},
    ),
    controls=("pevi-gram-without-ridge",),
)


# ------------------------------------------------------------------------------ 8. when it pays
class PessimismPaysFromN(ScaledClaim):
    """Where pessimism at the papers' constants starts to pay (issue 13, item 4c).

    While the penalty exceeds the fitted value everywhere, the pessimistic estimate is clipped
    to 0 at every (h, s, a), every Q ties at 0, and the greedy policy is the tie-break's (action
    0): its sub-optimality is that of the all-zeros policy, whatever the data -- no rate of a
    pessimistic algorithm can be read there. Once the data outweighs the penalty, the algorithm
    beats behaviour cloning (which converges to the behaviour policy, not to pi*)."""

    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.offline.coverage import optimal_solution
        from theorylab.algorithms.planning import evaluate_policies
        from theorylab.experiment import run
        from theorylab.mdps import make

        mdp = make(cfg["mdp"])
        Ns, B = list(cfg["N"]), cfg["seeds"]
        v_star = optimal_solution(mdp).value
        zeros = np.zeros((1, mdp.horizon, mdp.S), dtype=np.int64)
        tie = float(v_star - evaluate_policies(mdp, zeros, batched=True)[0, 0] @ mdp.mu0)
        sub, clipped = {}, {}
        for a in (*cfg["pessimistic"], "behaviour-cloning", "naive-vi"):
            r = run(a, mdp, seeds=B, seed=seed, dataset_size=Ns, coverage=cfg["coverage"])
            sub[a] = np.asarray(r.suboptimality)  # (B, len(Ns))
            clipped[a] = np.asarray(r.value_estimate) <= 1e-12
        bc = sub["behaviour-cloning"]
        worst = 0.0
        for a in cfg["pessimistic"]:
            if clipped[a].any():
                worst = max(worst, float(np.abs(sub[a][clipped[a]] - tie).max()))
        clip_text = "; ".join(
            f"{a}: {np.round(clipped[a].mean(axis=0), 2).tolist()}" for a in cfg["pessimistic"]
        )
        rep.checks.append(
            Check(
                "clipped-estimate-is-a-tie-break",
                worst <= ROUND_OFF,
                f"where V_hat(mu0) = 0 the sub-optimality is the all-zeros policy's ({tie:.4g}) "
                f"to {worst:.1e}; fraction of seeds clipped per N = {Ns}: {clip_text}",
                {"tie_break_suboptimality": tie, "max_error": worst},
            )
        )
        for a, n in cfg["must_pay"].items():
            k = Ns.index(n)
            ok = sub[a][:, k] <= 0.5 * bc[:, k]
            rep.checks.append(
                Check(
                    f"{a} pays by N = {n}",
                    bool(ok.all()),
                    f"SubOpt <= half of behaviour cloning's on {int(ok.sum())}/{B} seeds at "
                    f"N = {n} (mean {sub[a][:, k].mean():.4g} vs BC {bc[:, k].mean():.4g})",
                )
            )
        first = {}
        for a in cfg["pessimistic"]:
            beats = np.nonzero(sub[a].mean(axis=0) < bc.mean(axis=0))[0]
            first[a] = int(Ns[beats[0]]) if beats.size else None
        rep.checks.append(
            Check(
                "where it starts to pay (information)",
                True,
                "first N of the sweep at which the mean SubOpt is below behaviour cloning's: "
                + ", ".join(f"{a}: {v if v else 'not by ' + str(Ns[-1])}" for a, v in first.items())
                + f"; naive VI's mean SubOpt per N: {np.round(sub['naive-vi'].mean(0), 4).tolist()}"
                f"; BC's: {np.round(bc.mean(0), 4).tolist()}",
                {"pays_from_N": first},
                status="INFO",
            )
        )
        rep.config["mean_suboptimality"] = {a: v.mean(axis=0).tolist() for a, v in sub.items()}


register_validation(
    PessimismPaysFromN(
        name="offline-pessimism-pays-from-n",
        statement=(
            "at the papers' constants on random:S=8,A=3,H=5,seed=0 with 30% optimal coverage "
            "(behaviour 0.3 pi* + 0.7 uniform): wherever a pessimistic algorithm's estimate "
            "V_hat(mu0) is clipped to 0 its policy is the tie-break (the all-zeros policy's "
            "sub-optimality, exactly), so no rate is claimed there; pessimistic VI (Hoeffding) "
            "pays from N of about 5e4 (SubOpt at most half of behaviour cloning's on every seed "
            "at N = 5e4) and, at full scale, pessimistic VI (Bernstein) by N = 1e6. Measured (8 "
            "seeds): clipped at N = 1e3 (Hoeffding), up to 1e4 (Bernstein), up to 1e6 (tabular "
            "PEVI, which does not pay by 1e6); naive VI is already at SubOpt 0 on this instance."
        ),
        scales={
            "quick": {
                "mdp": "random:S=8,A=3,H=5,seed=0",
                "coverage": 0.3,
                "N": [1000, 50_000],
                "seeds": 8,
                "pessimistic": ["pessimistic-vi-hoeffding"],
                "must_pay": {"pessimistic-vi-hoeffding": 50_000},
            },
            "full": {
                "mdp": "random:S=8,A=3,H=5,seed=0",
                "coverage": 0.3,
                "N": [1000, 10_000, 30_000, 50_000, 100_000, 1_000_000],
                "seeds": 8,
                "pessimistic": [
                    "pessimistic-vi-hoeffding",
                    "pessimistic-vi-bernstein",
                    "pevi-tabular",
                ],
                "must_pay": {
                    "pessimistic-vi-hoeffding": 100_000,
                    "pessimistic-vi-bernstein": 1_000_000,
                },
            },
        },
    ),
    controls=("frozen", "random"),
    targets={"offline": ("pessimistic-vi-hoeffding", "pessimistic-vi-bernstein", "pevi-tabular")},
)


# ------------------------------------------------------------------------------ 7. imitation
class ImitationConverges(ScaledClaim):
    """Behaviour cloning converges to the behaviour policy, so its sub-optimality converges to
    the behaviour's, not to 0; pessimism's goes to 0 (full scale)."""

    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.offline import fit, make_dataset
        from theorylab.algorithms.offline.coverage import optimal_solution
        from theorylab.algorithms.offline.dataset import behaviour_policy
        from theorylab.algorithms.offline.scoring import suboptimality
        from theorylab.algorithms.planning import policy_values
        from theorylab.mdps import make

        mdp = make(cfg["mdp"])
        sol = optimal_solution(mdp)
        pi_b = behaviour_policy(mdp, cfg["coverage"], "uniform", solution=sol)
        sub_b = sol.value - float(policy_values(mdp, pi_b, batched=False))
        Ns, B = cfg["N"], cfg["seeds"]
        algos = ["behaviour-cloning", *cfg["contrast"]]
        sub = {a: np.empty((B, len(Ns))) for a in algos}
        step = cfg.get("chunk", B)  # seeds per dataset draw (memory: N H samples per seed)
        for lo in range(0, B, step):
            idx = list(range(lo, min(B, lo + step)))  # a seed's data does not depend on its batch
            ds = make_dataset(
                mdp, max(Ns), coverage=cfg["coverage"], other="uniform", seeds=idx, seed=seed,
                kind="trajectories",
            )  # fmt: skip
            for k, n in enumerate(Ns):
                head = ds.head(int(n))
                for a in algos:
                    sub[a][idx, k] = suboptimality(mdp, fit(a, head).policy, sol.value)
            del ds
        bc = sub["behaviour-cloning"]
        dev = np.abs(bc - sub_b)  # (B, K): |SubOpt(pi_hat) - SubOpt(pi_b)|
        rep.checks.append(
            _range_check("bc-converges-to-behaviour", _slope(Ns, dev), -1.0, -0.25, contains=-0.5)
        )
        rep.checks[-1].detail += (
            f"; |SubOpt(BC) - SubOpt(pi_b)| mean over seeds "
            f"{np.round(dev.mean(axis=0), 4).tolist()} at N = {Ns}"
        )
        final = bc[:, -1]
        rep.checks.append(
            Check(
                "bc-does-not-reach-zero",
                bool(np.all(final >= sub_b / 2)),
                f"SubOpt(BC) at N = {Ns[-1]}: min over seeds {final.min():.4f} >= half the "
                f"behaviour policy's SubOpt(pi_b) = {sub_b:.4f} (coverage {cfg['coverage']}: "
                "imitation cannot improve on the data's policy)",
                {"suboptimality_behaviour": sub_b},
            )
        )
        for a in cfg["contrast"]:
            won = bool(np.all(sub[a][:, -1] < final))
            rep.checks.append(
                Check(
                    f"{a}-beats-imitation",
                    won or not cfg["contrast_must_win"],
                    f"{a}: SubOpt at N = {Ns[-1]} below BC's on "
                    f"{int((sub[a][:, -1] < final).sum())}/{B} seeds (mean "
                    f"{np.round(sub[a].mean(axis=0), 4).tolist()})"
                    + ("" if cfg["contrast_must_win"] else "; reported, not tested at this scale"),
                )
            )
        rep.config["suboptimality_behaviour"] = sub_b
        if plot:
            from theorylab.plotting import plot_suboptimality_lines

            ax = plot_suboptimality_lines(
                Ns,
                sub,
                reference=sub_b,
                reference_label="behaviour policy's sub-optimality",
                title=f"{self.name} [{rep.scale}]",
            )
            save_claim_figure(ax, plot)


register_validation(
    ImitationConverges(
        name="behaviour-cloning-imitates-behaviour",
        statement=(
            "behaviour cloning (pi_hat_h(a|s) = n_h(s,a) / n_h(s)) on trajectories of a "
            "behaviour policy pi_b = 0.5 pi* + 0.5 uniform (random MDP S = 10, A = 3, H = 5): "
            "|SubOpt(pi_hat) - SubOpt(pi_b)| falls like N^(-1/2) (slope CI over the upper half "
            "of the N sweep inside [-1, -0.25] and containing -1/2), so SubOpt(pi_hat) tends to "
            "SubOpt(pi_b) > 0, not to 0 (at the largest N it stays above SubOpt(pi_b) / 2 on "
            "every seed); at full scale pessimistic VI's sub-optimality is below BC's on every "
            "seed at the largest N"
        ),
        scales={
            "quick": {
                "mdp": "random:S=10,A=3,H=5,seed=0",
                "coverage": 0.5,
                "N": [100, 300, 1000, 3000, 10_000, 30_000, 100_000],
                "seeds": 128,
                "chunk": 32,
                "contrast": ["pessimistic-vi-hoeffding"],
                "contrast_must_win": False,
            },
            "full": {
                "mdp": "random:S=10,A=3,H=5,seed=0",
                "coverage": 0.5,
                "N": [100, 300, 1000, 3000, 10_000, 30_000, 100_000, 300_000],
                "seeds": 256,
                "chunk": 16,
                "contrast": ["pessimistic-vi-hoeffding"],
                "contrast_must_win": True,
            },
        },
    ),
    controls=("frozen", "random"),
    targets={"offline": ("behaviour-cloning",)},
)


# ------------------------------------------------------------ 8. OGSRL (issue 31, 002-004#C7)
def _dense_P(mdp, h: int) -> np.ndarray:
    """``P_h`` as a dense ``(S, A, S)`` array (sparse or dense models alike)."""
    P = mdp.P_flat(h)
    return np.asarray(P.todense() if hasattr(P, "todense") else P).reshape(mdp.S, mdp.A, mdp.S)


def _exact_values(mdp, pi: np.ndarray, reward: np.ndarray) -> float:
    """``V^pi(mu0)`` of a stochastic ``pi (S, A)`` for ``reward (S, A)``: the linear system
    ``(I - gamma P_pi) V = r_pi`` written out here (not the library's evaluator)."""
    g = mdp.gamma
    P = _dense_P(mdp, 0)
    P_pi = np.einsum("sa,sat->st", pi, P)
    V = np.linalg.solve(np.eye(mdp.S) - g * P_pi, (pi * reward).sum(axis=1))
    return float(np.asarray(mdp.mu0) @ V)


def deterministic_values(mdp, support: np.ndarray, cost: np.ndarray):
    """``(V_r, V_c)`` at mu0 of every deterministic policy on the support (any action where a
    state has no data), enumerated: two arrays ``(n_policies,)``."""
    import itertools

    r = mdp.reward(0)
    choices = [np.flatnonzero(row) if row.any() else np.arange(mdp.A) for row in support]
    vals, costs = [], []
    for acts in itertools.product(*choices):
        pi = np.zeros((mdp.S, mdp.A))
        pi[np.arange(mdp.S), acts] = 1.0
        vals.append(_exact_values(mdp, pi, r))
        costs.append(_exact_values(mdp, pi, cost))
    return np.array(vals), np.array(costs)


def best_mixture(v: np.ndarray, c: np.ndarray, kappa: float) -> float:
    """``max V_r`` with ``V_c <= kappa`` over single deterministic policies and mixtures of two
    (a constrained optimum with one cost mixes at most two; both values are linear in the
    mixture of occupancies). -inf when none is feasible."""
    tol = 1e-12 * (1.0 + abs(kappa))
    ok = c <= kappa + tol
    best = float(v[ok].max()) if ok.any() else -np.inf
    for i in np.flatnonzero(ok):
        over = (c > kappa + tol) & (v > v[i])
        if over.any():
            alpha = (c[over] - kappa) / (c[over] - c[i])  # weight on i, the cheap one
            best = max(best, float((alpha * v[i] + (1.0 - alpha) * v[over]).max()))
    return best


def _ogsrl_instances(cfg, seed: int):
    """(mdp, support, cost, kappa) per instance: a random discounted MDP, a random non-empty
    action subset per state as the behaviour's support, a random cost, and kappa halfway
    between the least support-restricted cost and the cost of the best support-restricted
    policy (so the budget binds)."""
    from theorylab.validations.claims.dual_imitation import discounted_instance

    for i in range(cfg["mdps"]):
        mdp = discounted_instance(seed + 700 + i)
        rng = np.random.default_rng([seed, 31, i])
        support = rng.random((mdp.S, mdp.A)) < cfg["keep"]
        support[np.arange(mdp.S), rng.integers(mdp.A, size=mdp.S)] = True
        cost = rng.random((mdp.S, mdp.A))
        v, c = deterministic_values(mdp, support, cost)
        c_free = c[v >= v.max() - 1e-12].min()
        yield mdp, support, cost, 0.5 * (c.min() + c_free)


@dataclass
class OGSRLSupportOptimum:
    name: str = "ogsrl-support-restricted-optimum"
    statement: str = (
        "OGSRL (support- and cost-constrained occupancy LP on the empirical model) on seeded "
        "random MDPs (S = 6, A = 3, gamma = 0.9) with population data from a behaviour on a "
        "random action subset per state and a binding cost budget kappa: its policy plays only "
        "pairs in the data, its true cost is <= kappa (1e-7), its true value equals the best "
        "support-restricted policy's found by brute force over deterministic policies and their "
        "two-policy mixtures (1e-7 (1 + |V|)); the answer is the same whatever reward the model "
        "puts on unseen pairs; on N = 2000 sampled transitions its value estimate equals the "
        "brute force on the empirical model"
    )
    scales: dict[str, dict] = field(
        default_factory=lambda: {
            "quick": {"mdps": 4, "keep": 0.5, "sampled": 1},
            "full": {"mdps": 30, "keep": 0.5, "sampled": 10},
        }
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        import time

        from theorylab.algorithms.dual.cmdp import solve_cmdp_lp
        from theorylab.algorithms.dual.empirical_model import empirical_models
        from theorylab.algorithms.offline.dataset import make_dataset, population_dataset
        from theorylab.algorithms.registry import get_algorithm

        t0 = time.perf_counter()
        cfg = self.scales[scale]
        fit = get_algorithm("ogsrl").factory
        off_mass = cost_over = v_err = fill_diff = est_err = 0.0
        gaps, leaves, n, n_sampled = [], 0, 0, 0
        curves = {
            "OGSRL V(pi)": [],
            "brute force on the support (= OGSRL)": [],
            "unguarded optimum": [],
        }
        for i, (mdp, support, cost, kappa) in enumerate(_ogsrl_instances(cfg, seed)):
            beh = support / support.sum(axis=1, keepdims=True)
            ds = population_dataset(mdp, behaviour=beh)
            seen = ds.data_distribution > 0  # (S, A): the pairs in the data
            reach = seen.any(axis=1)  # states in the data (the others are never reached)
            v_ref = best_mixture(*deterministic_values(mdp, seen, cost), kappa)
            pi0 = None
            for fill in (0.0, 1.0):
                pi = fit(ds, costs=cost, kappa=kappa, fill_reward=fill).policy[0]  # (S, A)
                off_mass = max(off_mass, float(pi[reach][~seen[reach]].sum()))
                if pi0 is not None:
                    fill_diff = max(fill_diff, float(np.abs(pi[reach] - pi0[reach]).max()))
                    continue
                pi0 = pi
                cost_over = max(cost_over, _exact_values(mdp, pi, cost) - kappa)
                v = _exact_values(mdp, pi, mdp.reward(0))
                v_err = max(v_err, abs(v - v_ref) / (1.0 + abs(v_ref)))
                free = solve_cmdp_lp(mdp, cost, [kappa])  # the unguarded (true-model) LP
                gaps.append(free.value - v)
                for key, x in zip(curves, (v, v_ref, free.value), strict=True):
                    curves[key].append(x)
                leaves += bool((free.occupancy[~seen] > 1e-9).any())
            n += 1
            if i < cfg["sampled"]:
                sampled = make_dataset(
                    mdp, 2000, data_distribution=ds.data_distribution, seed=seed + i
                )
                res = fit(sampled, costs=cost, kappa=kappa)
                emp, d_hat = empirical_models(sampled, "claim")[0]
                ref = best_mixture(*deterministic_values(emp, d_hat > 0, cost), kappa)
                est_err = max(est_err, abs(res.value_estimate[0] - ref) / (1.0 + abs(ref)))
                n_sampled += 1
        checks = [
            Check(
                "stays on the data's support",
                off_mass <= 1e-9,
                f"max policy mass on unseen pairs (reached states) = {off_mass:.1e}, with the "
                f"model's unseen reward 0 or 1 (<= 1e-9); {n} instances",
                {"max_off_support_mass": off_mass},
            ),
            Check(
                "cost <= kappa",
                cost_over <= 1e-7,
                f"max (V_c(pi) - kappa) = {cost_over:.1e} (<= 1e-7)",
                {"max_cost_excess": cost_over},
            ),
            Check(
                "value = best support-restricted (brute force)",
                v_err <= 1e-7,
                f"max |V(pi) - V_brute| / (1 + |V|) = {v_err:.1e} (<= 1e-7)",
                {"max_relative_error": v_err},
            ),
            Check(
                "answer independent of the unseen pairs' model",
                fill_diff <= 1e-7,
                f"max |pi(fill 1) - pi(fill 0)| on reached states = {fill_diff:.1e} (<= 1e-7)",
                {"max_policy_difference": fill_diff},
            ),
            Check(
                "sampled data: estimate = brute force on the empirical model",
                est_err <= 1e-7,
                f"max relative error {est_err:.1e} over {n_sampled} datasets of N = 2000",
                {"max_relative_error": est_err},
            ),
            Check(
                "gap to the unguarded optimum (near-optimality, iv)",
                True,
                f"true-model CMDP optimum minus OGSRL's value: mean {np.mean(gaps):.3f}, max "
                f"{np.max(gaps):.3f}; the unguarded LP leaves the support on {leaves}/{n}",
                {"gaps": [float(x) for x in gaps], "unguarded_leaves": leaves},
                status="INFO",
            ),
        ]
        config = {**cfg, "seed": seed, "mdp": "random:S=6,A=3,gamma=0.9", "N_sampled": 2000}
        if plot:
            from theorylab.plotting import plot_lines

            order = np.argsort(gaps)
            plot_lines(
                np.arange(1, n + 1),
                {k: np.asarray(v)[order] for k, v in curves.items()},
                xlabel="instance (sorted by the price of the guardian)",
                ylabel="V(mu0), true model",
                title="OGSRL vs brute force on the support",
                path=plot,
            )
        return finished_report(self.name, self.statement, scale, checks, t0, config, figure=plot)


register_validation(
    OGSRLSupportOptimum(),
    controls=("ogsrl-support-dropped", "ogsrl-budget-dropped"),
    targets={"offline": ("ogsrl",)},
    papers=("002-004#C7",),
)


# ------------------------------------------------- 9. trajectory weighting (issue 31, 002-004#C1)
def enumerated_trajectories(mdp, behaviour: np.ndarray):
    """Every trajectory of ``behaviour (H, S, A)`` on the finite-horizon ``mdp`` with its
    probability as the row weight (the infinite-data limit), as a trajectory OfflineDataset."""
    from theorylab.algorithms.offline.dataset import OfflineDataset

    H, S, A = mdp.horizon, mdp.S, mdp.A
    rows = []  # (states, actions, rewards, next states, probability) per trajectory

    def walk(h, s, prob, path):
        if h == H:
            rows.append((path, prob))
            return
        P = _dense_P(mdp, h)
        for a in range(A):
            pa = prob * behaviour[h, s, a]
            for s2 in np.flatnonzero(P[s, a] > 0):
                if pa * P[s, a, s2] > 0:
                    step = (s, a, float(mdp.reward(h)[s, a]), int(s2))
                    walk(h + 1, int(s2), pa * P[s, a, s2], [*path, step])

    for s0 in np.flatnonzero(np.asarray(mdp.mu0) > 0):
        walk(0, int(s0), float(mdp.mu0[s0]), [])
    cols = np.array([[st for st in path] for path, _ in rows], dtype=float)  # (K, H, 4)
    p = np.repeat([prob for _, prob in rows], H)
    K = len(rows)
    return OfflineDataset(
        states=cols[:, :, 0].reshape(1, -1).astype(np.int64),
        actions=cols[:, :, 1].reshape(1, -1).astype(np.int64),
        rewards=cols[:, :, 2].reshape(1, -1),
        next_states=cols[:, :, 3].reshape(1, -1).astype(np.int64),
        stages=np.tile(np.arange(H), K)[None],
        S=S,
        A=A,
        horizon=H,
        gamma=None,
        mu0=np.asarray(mdp.mu0),
        kind="trajectories",
        weights=p[None],
        n_episodes=K,
        behaviour=behaviour,
    )


def finite_value(mdp, pi: np.ndarray) -> float:
    """``V^pi_1(mu0)`` of ``pi (H, S, A)`` by backward induction, written out here."""
    S = mdp.S
    V = np.zeros(S)
    for h in range(mdp.horizon - 1, -1, -1):
        P = _dense_P(mdp, h)
        V = (pi[h] * (mdp.reward(h) + P @ V)).sum(axis=1)
    return float(np.asarray(mdp.mu0) @ V)


def deterministic_instance(seed: int, S: int = 4, A: int = 2, H: int = 3):
    """A random deterministic MDP (one next state per (h, s, a)) with a random mu0, and a random
    stochastic behaviour ``(H, S, A)``."""
    from theorylab.mdps import TabularMDP

    rng = np.random.default_rng([seed, 31, 1])
    P = np.zeros((H, S, A, S))
    nxt = rng.integers(S, size=(H, S, A))
    P[np.arange(H)[:, None, None], np.arange(S)[None, :, None], np.arange(A), nxt] = 1.0
    R = rng.random((H, S, A))
    mdp = TabularMDP(P, R, rng.dirichlet(np.ones(S)), horizon=H)
    return mdp, rng.dirichlet(np.ones(A), size=(H, S))


def gamble_instance():
    """The stochastic counterexample (H = 2): at step 1, ``safe`` leads to a state paying 0.5,
    ``gamble`` to one paying 1 with probability 0.3, else 0; behaviour uniform. V^beta = 0.4;
    the return weighting favours gamble's lucky episodes: V^{pi_w} -> 0.3."""
    from theorylab.mdps import TabularMDP

    P = np.zeros((2, 4, 2, 4))
    P[0, 1:, :, 0] = 1.0  # (states 1-3 are not occupied at step 1)
    P[0, 0, 0, 1] = 1.0  # safe -> state 1
    P[0, 0, 1, 2], P[0, 0, 1, 3] = 0.3, 0.7  # gamble -> win (2) or lose (3)
    P[1, :, :, 0] = 1.0
    R = np.zeros((2, 4, 2))
    R[1, 1], R[1, 2] = 0.5, 1.0
    return TabularMDP(P, R, np.array([1.0, 0, 0, 0]), horizon=2), np.full((2, 4, 2), 0.5)


def _plot_sorted(curves: dict, key: str, xlabel: str, title: str, path: str) -> None:
    """Exact values per instance, instances sorted by ``curves[key]``."""
    from theorylab.plotting import plot_lines

    order = np.argsort(curves[key])
    plot_lines(
        np.arange(1, len(order) + 1),
        {k: np.asarray(v)[order] for k, v in curves.items()},
        xlabel=xlabel,
        ylabel="V(mu0), exact",
        title=title,
        path=path,
    )


@dataclass
class TrajectoryWeightingImproves:
    name: str = "trajectory-weighting-improves-deterministic"
    statement: str = (
        "Return-weighted trajectory sampling (w = exp(G / 0.1), normalised within each initial "
        "state) on the enumerated trajectories of a random stochastic behaviour in random "
        "deterministic MDPs (S = 4, A = 2, H = 3, random mu0): the cloned policy's exact value "
        "is >= the behaviour's on every instance (1e-12), strictly above on average, and equals "
        "the re-weighted data's mean return (1e-10); on the stochastic gamble MDP it falls below "
        "the behaviour's (the theorem needs determinism)"
    )
    scales: dict[str, dict] = field(
        default_factory=lambda: {
            "quick": {"instances": 10, "temperatures": [0.1, 1.0]},
            "full": {"instances": 200, "temperatures": [0.03, 0.1, 0.3, 1.0]},
        }
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        import time

        from theorylab.algorithms.registry import get_algorithm

        t0 = time.perf_counter()
        cfg = self.scales[scale]
        fit = get_algorithm("trajectory-weighting").factory
        worst_drop = identity = 0.0
        gains = []
        curves = {"behaviour V(beta)": [], f"weighted V(pi_w), T = {cfg['temperatures'][0]}": []}
        for i in range(cfg["instances"]):
            mdp, beh = deterministic_instance(seed + i)
            data = enumerated_trajectories(mdp, beh)
            v_beh = finite_value(mdp, beh)
            for temp in cfg["temperatures"]:
                res = fit(data, temperature=temp)
                v = finite_value(mdp, res.policy[0])
                if temp == cfg["temperatures"][0]:
                    for key, x in zip(curves, (v_beh, v), strict=True):
                        curves[key].append(x)
                worst_drop = max(worst_drop, v_beh - v)
                identity = max(identity, abs(v - res.value_estimate[0]))
                gains.append(v - v_beh)
        mdp, beh = gamble_instance()
        res = fit(enumerated_trajectories(mdp, beh), temperature=0.1)
        v_g, v_gb = finite_value(mdp, res.policy[0]), finite_value(mdp, beh)
        checks = [
            Check(
                "V(pi_w) >= V(behaviour), deterministic MDPs",
                worst_drop <= 1e-12,
                f"max (V_beta - V_w) = {worst_drop:.1e} over {len(gains)} fits (<= 1e-12)",
                {"max_drop": worst_drop},
            ),
            Check(
                "a real improvement",
                float(np.mean(gains)) > 0.01,
                f"mean V_w - V_beta = {np.mean(gains):.4f} (> 0.01; min {np.min(gains):.2e})",
                {"mean_gain": float(np.mean(gains))},
            ),
            Check(
                "V(pi_w) = mean return of the re-weighted data",
                identity <= 1e-10,
                f"max |V_w - E_q[G]| = {identity:.1e} (<= 1e-10)",
                {"max_identity_error": identity},
            ),
            Check(
                "stochastic MDP: the inequality fails (scope)",
                v_g < v_gb - 0.05,
                f"gamble MDP: V_w = {v_g:.4f} < V_beta = {v_gb:.4f} (by > 0.05)",
                {"gamble_v_w": v_g, "gamble_v_beta": v_gb},
            ),
        ]
        config = {**cfg, "seed": seed, "S": 4, "A": 2, "H": 3}
        if plot:
            _plot_sorted(
                curves,
                next(iter(curves)),
                "deterministic MDP (sorted by the behaviour's value)",
                "return weighting improves on the behaviour",
                plot,
            )
        return finished_report(self.name, self.statement, scale, checks, t0, config, figure=plot)


register_validation(
    TrajectoryWeightingImproves(),
    controls=("trajectory-weighting-inverted",),
    targets={"offline": ("trajectory-weighting",)},
    papers=("002-004#C1", "001#46"),
)


# ------------------------------------- 10. PNLSVI's guarantee on vw-pevi (issue 31, 000#26)
def heteroscedastic_instance(C: int = 6, H: int = 9, q: float = 0.8):
    """C contexts (h = 0), each with a ``noisy`` action (0) to G (reward 0.75 per step) or B (0.25
    per step) with p = 1/2 - g_c / 4, and a ``steady`` action (1) to M (0.5 per step); G, B,
    M absorbing. Values from stage 1 on are 6, 2 and 4 for H = 9: the noisy action's value
    is 4 - g_c with target variance ~4 (sigma = 2), the steady one's 4 with variance 0, so
    steady is optimal by the gap g_c (log-uniform in [0.01, 0.3]). The behaviour plays noisy
    with q = 0.8, so n_noisy = sigma^2 n_steady: variance-weighted widths are equal at a
    context, unweighted ones favour the noisy action by beta / (2 sqrt(n_steady)). mu0 puts
    0.2 / 1.2 on M so that G, B and M hold the same data downstream (their pessimistic
    losses cancel), rewards stay in (0, 1) (no clipping at 0). Returns the TabularMDP, the
    behaviour ``(H, S, A)`` and the feature map ``phi (S, A, 2C + 3)`` (one per context-
    action, one per G, B, M: a linear MDP)."""
    from theorylab.mdps import TabularMDP

    S, A = C + 3, 2
    G, B, M = C, C + 1, C + 2
    P = np.zeros((H, S, A, S))
    R = np.zeros((H, S, A))
    half = 0.5 * (H - 1)  # the value range from stage 1 is (0.75 - 0.25) (H - 1)
    for c, g in enumerate(np.geomspace(0.01, 0.3, C)):
        p = 0.5 - g / half
        P[:, c, 0, G], P[:, c, 0, B] = p, 1.0 - p
        P[:, c, 1, M] = 1.0
    for s in (G, B, M):
        P[:, s, :, s] = 1.0
    R[:, G], R[:, B], R[:, M] = 0.75, 0.25, 0.5
    mu0 = np.zeros(S)
    mu0[:C], mu0[M] = 1.0 / (1.2 * C), 0.2 / 1.2
    beh = np.full((H, S, A), 0.5)
    beh[:, :C, 0], beh[:, :C, 1] = q, 1.0 - q
    phi = np.zeros((S, A, 2 * C + 3))
    for c in range(C):
        phi[c, 0, 2 * c] = phi[c, 1, 2 * c + 1] = 1.0
    for i, s in enumerate((G, B, M)):
        phi[s, :, 2 * C + i] = 1.0
    return TabularMDP(P, R, mu0, horizon=H), beh, phi


def optimal_finite_value(mdp) -> float:
    """``V*_1(mu0)`` by backward induction with a max, written out here."""
    V = np.zeros(mdp.S)
    for h in range(mdp.horizon - 1, -1, -1):
        V = (mdp.reward(h) + _dense_P(mdp, h) @ V).max(axis=1)
    return float(np.asarray(mdp.mu0) @ V)


def _suboptimality_exact(mdp, policy: np.ndarray, v_star: float) -> np.ndarray:
    """``V* - V^pi`` per seed of a deterministic ``policy (B, H, S)``, by ``finite_value``."""
    eye = np.eye(mdp.A)
    return np.array([v_star - finite_value(mdp, eye[p]) for p in policy])


@dataclass
class VarianceWeightingGuarantee:
    name: str = "vw-pevi-heteroscedastic-rate"
    statement: str = (
        "Variance-weighted pessimistic LSVI (vw-pevi, 000#26's linear case) on a heteroscedastic "
        "linear MDP (6 contexts, noisy action of target variance 4 vs a steady optimal one, "
        "H = 9, d = 15): sub-optimality, exact by backward induction, is O(1/sqrt(N)) on the "
        "sweep (sqrt(N) SubOpt at the largest N <= at the smallest), and at every N at most half "
        "the unweighted pessimistic LSVI's with the same width beta and lambda (PEVI)"
    )
    scales: dict[str, dict] = field(
        default_factory=lambda: {
            "quick": {"Ns": [20_000, 60_000], "seeds": 12},
            "full": {"Ns": [20_000, 50_000, 120_000, 300_000], "seeds": 32},
        }
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        import time

        from theorylab.algorithms.offline import make_dataset
        from theorylab.algorithms.registry import get_algorithm

        t0 = time.perf_counter()
        cfg = self.scales[scale]
        mdp, beh, phi = heteroscedastic_instance()
        H, d = mdp.horizon, phi.shape[-1]
        c_ref = 1.0 / (math.sqrt(d) * H)  # the pilot at the main pass's width sqrt(d zeta)
        v_star = optimal_finite_value(mdp)
        vw, pevi = get_algorithm("vw-pevi").factory, get_algorithm("pevi").factory
        curves: dict[str, list[float]] = {"vw-pevi": [], "unweighted, same beta": [], "pevi": []}
        sigma_noisy = []
        for N in cfg["Ns"]:
            ds = make_dataset(mdp, N * H, behaviour=beh, seeds=cfg["seeds"], seed=seed)
            r = vw(ds, phi=phi, c_beta_ref=c_ref)
            same = pevi(ds, phi=phi, beta=r.params["beta"], lam=r.params["lam"])
            own = pevi(ds, phi=phi)
            for key, res in zip(curves, (r, same, own), strict=True):
                curves[key].append(float(_suboptimality_exact(mdp, res.policy, v_star).mean()))
            sigma_noisy.append(float(np.sqrt(r.info["sigma2"][:, 0, 0, 0]).mean()))
        Ns = np.asarray(cfg["Ns"], dtype=float)
        w, u = np.asarray(curves["vw-pevi"]), np.asarray(curves["unweighted, same beta"])
        scaled = np.sqrt(Ns) * w
        slope = float(np.polyfit(np.log(Ns), np.log(np.maximum(w, 1e-12)), 1)[0])
        checks = [
            Check(
                "SubOpt = O(1/sqrt(N)) on the sweep",
                bool(scaled[-1] <= scaled[0]) and bool(w[0] > 0),
                f"sqrt(N) SubOpt: {np.round(scaled, 3).tolist()} (last <= first; first > 0); "
                f"log-log slope {slope:.2f}",
                {"sqrtN_subopt": scaled.tolist(), "slope": slope},
            ),
            Check(
                "variance weighting beats unweighted (same beta)",
                bool(np.all(w <= 0.5 * u)) and bool(np.all(u > 0)),
                f"vw {np.round(w, 4).tolist()} vs unweighted {np.round(u, 4).tolist()} "
                "(vw <= 0.5 x unweighted at every N)",
                {"vw": w.tolist(), "unweighted": u.tolist()},
            ),
            Check(
                "INFO: PEVI at its own width (d H sqrt(zeta))",
                True,
                f"SubOpt {np.round(curves['pevi'], 4).tolist()}; estimated sigma at a noisy pair "
                f"{np.round(sigma_noisy, 2).tolist()} (true 2)",
                {"pevi": curves["pevi"], "sigma_noisy": sigma_noisy},
            ),
        ]
        config = {**cfg, "seed": seed, "H": H, "d": d, "c_beta_ref": c_ref}
        if plot:
            from theorylab.plotting import plot_lines

            plot_lines(
                Ns,
                {k: np.maximum(np.asarray(v), 1e-6) for k, v in curves.items()},
                xlabel="episodes N",
                ylabel="mean sub-optimality (exact)",
                title="variance weighting on a heteroscedastic MDP",
                path=plot,
                logx=True,
                logy=True,
            )
        return finished_report(self.name, self.statement, scale, checks, t0, config, figure=plot)


register_validation(
    VarianceWeightingGuarantee(),
    controls=("vw-pevi-weights-inverted",),
    targets={"offline": ("vw-pevi",)},
    papers=("000#26",),
)


# ------------------------------------------------ 11. RCSL vs MBRCSL (issue 31, 000#5)
def mixture_dataset(mdp, policies: list[np.ndarray], weights=None):
    """The enumerated trajectories of each deterministic ``policies[i] (H, S)`` with mass
    ``weights[i]`` (default equal), concatenated: the exact data distribution of a
    non-Markov behaviour that runs one whole policy per episode."""
    from dataclasses import replace

    weights = np.full(len(policies), 1.0 / len(policies)) if weights is None else weights
    eye = np.eye(mdp.A)
    parts = [enumerated_trajectories(mdp, eye[pi]) for pi in policies]
    cat = {
        k: np.concatenate([getattr(d, k) for d in parts], axis=1)
        for k in ("states", "actions", "rewards", "next_states", "stages")
    }
    wts = np.concatenate([w * d.weights for w, d in zip(weights, parts, strict=True)], axis=1)
    return replace(
        parts[0], **cat, weights=wts, n_episodes=sum(d.n_episodes for d in parts), behaviour=None
    )


def stitching_instance():
    """H = 2, one start state s0 and one shared middle state m (S = 2, A = 2, deterministic):
    at s0 action 0 pays 0.5, action 1 pays 0, both lead to m; at m action 0 pays 0, action 1
    pays 1. The data hold (0, 0) (return 0.5) and (1, 1) (return 1) half and half; the optimal
    (0, 1) (return 1.5) never appears whole, only its two halves do."""
    from theorylab.mdps import TabularMDP

    P = np.zeros((2, 2, 2, 2))
    P[:, :, :, 1] = 1.0
    R = np.zeros((2, 2, 2))
    R[0, 0, 0], R[1, 1, 1] = 0.5, 1.0
    mdp = TabularMDP(P, R, np.array([1.0, 0.0]), horizon=2)
    return mdp, [np.zeros((2, 2), dtype=np.int64), np.ones((2, 2), dtype=np.int64)]


def random_stitching_instance(seed: int, S: int = 4, A: int = 3, H: int = 4, k: int = 3):
    """A random deterministic MDP from a single start state and k random deterministic
    policies whose whole episodes make the data."""
    mdp, _ = deterministic_instance(seed, S, A, H)
    from theorylab.mdps import TabularMDP

    mu0 = np.zeros(S)
    mu0[0] = 1.0
    mdp = TabularMDP(np.stack([_dense_P(mdp, h) for h in range(H)]), mdp.R, mu0, horizon=H)
    rng = np.random.default_rng([seed, 31, 5])
    return mdp, [rng.integers(A, size=(H, S)) for _ in range(k)]


def support_value(mdp, data) -> float:
    """The best value over paths that use only (h, s, a) seen in the data: backward induction
    on the true model restricted to those pairs (-inf elsewhere), written out here."""
    H, S, A = mdp.horizon, mdp.S, mdp.A
    seen = np.zeros((H, S, A), dtype=bool)
    live = data.weights[0] > 0
    seen[data.stages[0][live], data.states[0][live], data.actions[0][live]] = True
    V = np.zeros(S)
    for h in range(H - 1, -1, -1):
        P, fin = _dense_P(mdp, h), np.isfinite(V)
        blocked = P @ (~fin).astype(float) > 0  # (S, A): may land where no seen path goes on
        Q = mdp.reward(h) + P @ np.where(fin, V, 0.0)
        V = np.where(seen[h] & ~blocked, Q, -np.inf).max(axis=1)
    start = np.asarray(mdp.mu0) > 0
    return float(np.asarray(mdp.mu0)[start] @ V[start])


@dataclass
class RcslStitching:
    name: str = "mbrcsl-stitches-rcsl-does-not"
    statement: str = (
        "On a stitching MDP whose optimal trajectory never appears whole in the data (two "
        "sub-optimal halves sharing a state), RCSL's return-conditioned policy returns the best "
        "data trajectory's return (1.0 < V* = 1.5, V* by backward induction) while MBRCSL "
        "(empirical model, behaviour-cloned rollouts, keep returns >= the data's best, RCSL) "
        "returns V*; on random deterministic MDPs (S = 4, A = 3, H = 4, data = whole episodes "
        "of 3 random policies) RCSL's value equals the best data return and MBRCSL's equals the "
        "best support-restricted value (backward induction over seen pairs), exactly"
    )
    scales: dict[str, dict] = field(
        default_factory=lambda: {
            "quick": {"instances": 20, "sampled_rollouts": 2000},
            "full": {"instances": 300, "sampled_rollouts": 20000},
        }
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        import time

        from theorylab.algorithms.registry import get_algorithm

        t0 = time.perf_counter()
        cfg = self.scales[scale]
        rcsl, mb = get_algorithm("rcsl").factory, get_algorithm("mbrcsl").factory
        eye = np.eye(2)
        mdp, pols = stitching_instance()
        data = mixture_dataset(mdp, pols)
        v_star = optimal_finite_value(mdp)
        v_r = finite_value(mdp, eye[rcsl(data).policy[0]])
        v_m = finite_value(mdp, eye[mb(data).policy[0]])
        v_s = finite_value(mdp, eye[mb(data, rollouts=str(cfg["sampled_rollouts"])).policy[0]])
        errs_r, errs_m = [0.0], [0.0]
        gains, curves = [], {"best data return (RCSL)": [], "MBRCSL": [], "V*": []}
        for i in range(cfg["instances"]):
            m2, p2 = random_stitching_instance(seed + i)
            d2 = mixture_dataset(m2, p2)
            e2 = np.eye(m2.A)
            best_data = max(finite_value(m2, e2[p]) for p in p2)
            vr = finite_value(m2, e2[rcsl(d2).policy[0]])
            vm = finite_value(m2, e2[mb(d2).policy[0]])
            errs_r.append(abs(vr - best_data))
            errs_m.append(abs(vm - support_value(m2, d2)))
            gains.append(vm - vr)
            for key, x in zip(curves, (vr, vm, optimal_finite_value(m2)), strict=True):
                curves[key].append(x)
        err_r, err_m = float(np.max(errs_r)), float(np.max(errs_m))  # NaN propagates: fails
        checks = [
            Check(
                "stitching MDP: RCSL stays below optimal",
                v_r < v_star - 0.25,
                f"V(RCSL) = {v_r:.4f} < V* = {v_star:.4f} (by > 0.25; best data return 1.0)",
                {"v_rcsl": v_r, "v_star": v_star},
            ),
            Check(
                "stitching MDP: MBRCSL reaches the optimum",
                abs(v_m - v_star) <= ROUND_OFF,
                f"|V(MBRCSL) - V*| = {abs(v_m - v_star):.1e} (<= 1e-12); with "
                f"{cfg['sampled_rollouts']} sampled rollouts V = {v_s:.4f}",
                {"v_mbrcsl": v_m, "v_sampled": v_s},
            ),
            Check(
                "random MDPs: MBRCSL = best support-restricted value",
                bool(err_m <= 1e-10),
                f"max |V(MBRCSL) - V_support| = {err_m:.1e} over {cfg['instances']} (<= 1e-10)",
                {"max_err_mbrcsl": err_m},
            ),
            Check(
                "random MDPs: RCSL = best data trajectory, MBRCSL improves",
                bool(err_r <= 1e-10) and float(np.mean(gains)) > 0.01,
                f"max |V(RCSL) - best data return| = {err_r:.1e} (<= 1e-10); mean "
                f"V(MBRCSL) - V(RCSL) = {np.mean(gains):.4f} (> 0.01)",
                {"max_err_rcsl": err_r, "mean_gain": float(np.mean(gains))},
            ),
        ]
        config = {**cfg, "seed": seed}
        if plot:
            _plot_sorted(
                curves,
                "V*",
                "random deterministic MDP (sorted by V*)",
                "MBRCSL stitches, RCSL does not",
                plot,
            )
        return finished_report(self.name, self.statement, scale, checks, t0, config, figure=plot)


register_validation(
    RcslStitching(),
    controls=("mbrcsl-no-rollouts",),
    targets={"offline": ("rcsl", "mbrcsl")},
    papers=("000#5",),
)


# ------------------------------------------- 12. HetPEVI, perturbed sources (issue 31, 000#71)
def perturbed_sources_target(C: int = 6):
    """H = 2: C contexts (mu0 uniform), each with two actions to G (reward 1 at stage 1) or B
    (0): action 1 with probability 1/2 + g_c (g_c log-uniform in [0.01, 0.2]), action 0 with
    1/2; action 1 is optimal (ties go to action 0, so clipping everything is sub-optimal)."""
    from theorylab.mdps import TabularMDP

    S, G, B = C + 2, C, C + 1
    P = np.zeros((2, S, 2, S))
    for c, g in enumerate(np.geomspace(0.01, 0.2, C)):
        P[0, c, 1, G], P[0, c, 1, B] = 0.5 + g, 0.5 - g
        P[0, c, 0, G] = P[0, c, 0, B] = 0.5
    P[0, G:, :, :] = 0.0
    P[:, G, :, G] = P[:, B, :, B] = 1.0
    P[1, :C, :, G] = 1.0
    R = np.zeros((2, S, 2))
    R[1, G] = 1.0
    mu0 = np.zeros(S)
    mu0[:C] = 1.0 / C
    return TabularMDP(P, R, mu0, horizon=2)


def perturbed_source(target, alpha: float, rng: np.random.Generator):
    """One source: every stage-0 context row of the target's kernel redrawn from
    ``Beta(alpha p_G, alpha p_B)`` (mean the target's; sd ~ 0.5 / sqrt(alpha))."""
    from theorylab.mdps import TabularMDP

    P = np.stack([_dense_P(target, h) for h in range(target.horizon)])
    G, B = target.S - 2, target.S - 1
    x = rng.beta(alpha * P[0, :G, :, G], alpha * P[0, :G, :, B])  # (C, A)
    P[0, :G, :, G], P[0, :G, :, B] = x, 1.0 - x
    return TabularMDP(P, target.R, target.mu0, horizon=target.horizon)


@dataclass
class HetPeviSources:
    name: str = "het-pevi-source-floor"
    statement: str = (
        "HetPEVI on K randomly perturbed sources (Beta perturbations of mean the target's, "
        "alpha = 20) of an H = 2 target with 6 contexts, n episodes per source, penalty "
        "constants c_n = c_K = 0.05: sub-optimality on the target (exact) floors in n at the "
        "smallest K (at the largest n, 10 x the middle one, >= 0.5 x its value -- a 1/sqrt(n) "
        "decay would give 0.32 -- and > 0), falls with K at the largest n "
        "(K_max <= 0.5 x K_min), and V_hat(mu0) <= V^pi_hat(mu0) on the target on >= 90% of "
        "the runs at every (K, n)"
    )
    scales: dict[str, dict] = field(
        default_factory=lambda: {
            "quick": {"Ks": [2, 16], "ns": [100, 300, 3000], "draws": 8, "seeds": 4},
            "full": {"Ks": [2, 8, 32], "ns": [100, 1000, 10000], "draws": 16, "seeds": 8},
        }
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        import time

        from theorylab.algorithms.offline import make_dataset
        from theorylab.algorithms.offline.het_pevi import concat_sources
        from theorylab.algorithms.registry import get_algorithm

        t0 = time.perf_counter()
        cfg = self.scales[scale]
        target = perturbed_sources_target()
        v_star = optimal_finite_value(target)
        fit = get_algorithm("het-pevi").factory
        Ks, ns = cfg["Ks"], cfg["ns"]
        sub = np.zeros((len(Ks), len(ns)))
        pess = np.zeros((len(Ks), len(ns)))
        eye = np.eye(target.A)
        for i, K in enumerate(Ks):
            for j, n in enumerate(ns):
                gaps, holds = [], []
                for r in range(cfg["draws"]):
                    rng = np.random.default_rng([seed, 71, K, r])
                    srcs = [perturbed_source(target, 20.0, rng) for _ in range(K)]
                    data = concat_sources(
                        [
                            make_dataset(
                                m,
                                2 * n,
                                coverage=0.0,
                                seeds=cfg["seeds"],
                                seed=seed * 10**6 + K * 10**4 + r * 100 + k,
                            )
                            for k, m in enumerate(srcs)
                        ]
                    )
                    res = fit(data, c_n=0.05, c_K=0.05)
                    for b in range(cfg["seeds"]):
                        v = finite_value(target, eye[res.policy[b]])
                        gaps.append(v_star - v)
                        holds.append(res.value_estimate[b] <= v + ROUND_OFF)
                sub[i, j], pess[i, j] = np.mean(gaps), np.mean(holds)
        floor = sub[0, -1] >= 0.5 * sub[0, len(ns) // 2] and sub[0, -1] > 0
        checks = [
            Check(
                "sub-optimality floors in n at the smallest K",
                bool(floor),
                f"K = {Ks[0]}: SubOpt over n = {ns}: {np.round(sub[0], 4).tolist()} "
                "(last >= 0.5 x middle, > 0)",
                {"subopt": sub.tolist()},
            ),
            Check(
                "the floor falls with K",
                bool(sub[-1, -1] <= 0.5 * sub[0, -1]),
                f"largest n: SubOpt over K = {Ks}: {np.round(sub[:, -1], 4).tolist()} "
                "(K_max <= 0.5 x K_min)",
                {"subopt_vs_K": sub[:, -1].tolist()},
            ),
            Check(
                "pessimism on the target",
                bool(np.all(pess >= 0.9)),
                f"min fraction of runs with V_hat <= V^pi_hat = {pess.min():.3f} (>= 0.9)",
                {"pessimism": pess.tolist()},
            ),
        ]
        config = {**cfg, "seed": seed, "alpha": 20.0, "c_n": 0.05, "c_K": 0.05}
        if plot:
            from theorylab.plotting import plot_lines

            plot_lines(
                np.asarray(ns, dtype=float),
                {f"K = {K}": np.maximum(sub[i], 1e-5) for i, K in enumerate(Ks)},
                xlabel="episodes per source n",
                ylabel="mean sub-optimality on the target (exact)",
                title="HetPEVI: a floor in n that falls with K",
                path=plot,
                logx=True,
                logy=True,
            )
        return finished_report(self.name, self.statement, scale, checks, t0, config, figure=plot)


register_validation(
    HetPeviSources(),
    controls=("het-pevi-single-source", "het-pevi-source-term-dropped"),
    targets={"offline": ("het-pevi",)},
    papers=("000#71", "001#42"),
)
