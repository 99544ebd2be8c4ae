r"""Preference-based RL claims: greedy vs pessimistic MLE, K-wise vs pairwise-split MLE, P2R's
queries against its regret, and no-regret Nash dynamics.

Each claim has a quick scale (seconds, CI) and a full scale (minutes, ``-m slow``), computes its
quantity exactly where it can (sub-optimality and regret on the true model, duality gaps in closed
form) and carries a negative control -- a contrast or known-bug mutation run through the *same*
test -- that is reported as a check which passes only when the control FAILS the test (so the
test is shown able to fail). Each claim also registers one known-bug mutation of
``theorylab.validations.mutations`` that ``validate`` runs through the whole claim and that must
FAIL it (docs/validations.md, "Power"): ``pessimistic-mle-bonus-sign`` (1),
``plackett-luce-top-choice-only`` (2), ``p2r-no-cache`` (3), ``inpo-no-kl-pull`` (4).
Cards: docs/algorithms/preference-mle.md, p2r.md, nash-preference.md.

1. ``zjj-greedy-fails-pessimism-bounded`` -- Zhu-Jordan-Jiao Theorem 3.9 instance. Greedy on the
   constrained MLE is >= 0.1 sub-optimal with a probability bounded away from 0 at every n (the
   lowest 95% Clopper-Pearson lower end over the sweep is >= 0.1 at quick scale, 64 seeds, and >=
   0.15 at full scale, 256 seeds; the exact probability, by enumeration at the small n, is >=
   sigma(-1) = 0.269 and tends to it), while the pessimistic MLE (C = 1 [M], delta = 0.1, lambda
   = 1e-3) stays under Theorem 3.2's bound 2 f ||(Sigma_D + lambda I)^{-1/2} (phi(a4) - v)|| on
   at least 1 - delta of the seeds at every n and is never worse than the safe arm (mean <= 0.1)
   nor than greedy. The bound (a data-dependent quantity) falls like n^(-1/2): its log-log slope
   lies in [-0.55, -0.45]. Note (the reference, lesson 2): at C = 1 pessimism plays the safe a3
   (0.1) until n ~ 2e5 and then the optimal a4, so its own sub-optimality does not follow
   n^(-1/2) on this instance -- the claim tests the bound's rate and the bound, not a rate of
   pi_PE. The bound is evaluated in the claim from Lemma 3.1's printed formula and the coverage
   term written out there (``_theorem32_bound``), and the module's own ``res.bound`` must equal
   it to 1e-9 (``bound-formula``): a radius mutated in the library fails that check even where
   SubOpt stays under both. Controls: greedy on uniform full-coverage data (comparison-bandit)
   passes the same failure test? it must not; an optimistic-MLE mutation (+ f ||u|| instead of
   -) must violate the bound at the largest n.
2. ``kwise-mle-beats-pairwise-split`` -- Theorem 4.3 (asymptotic efficiency, [M]): at equal data
   (the same rankings), the true Plackett-Luce MLE_K has lower mean squared error than the
   pairwise-split MLE_2: the paired difference's 95% t interval lies below 0 at every n.
   Control: the top-choice MLE (the PL likelihood's first factor only) through the same test.
3. ``p2r-queries-bounded-regret-sublinear`` -- P2R around UCBVI-BF: comparisons asked stay below
   (SA - 1) m on every seed (the tabular eluder bound), their log-log slope in K over the second
   half is <= 0.1 (bounded, hence slower than any power; the claim "queries grow like log K"
   holds a fortiori), while exact cumulative regret is sub-linear (slope CI below
   ``regret_slope_max``: 0.95 at quick scale, fitted on the second half of log K; 0.75 at full
   scale, fitted on the last fifth of log K, K in [3800, 30000], because UCBVI-BF's burn-in with
   Azar's constants is linear for the first few thousand episodes -- on the log-second half
   [173, 30000] the full run measured 0.81 [0.81, 0.81]). Control: ``cache=false`` (re-query
   every visit) must fail the query slope test.
4. ``nash-dynamics-converge`` -- on the intransitive ``cyclic-preferences`` game: the registered
   ``inpo`` minimises INPO's loss exactly at every iteration (``nash.inpo_step``), and its
   trajectory (exact gap and distance to pi* at every t) equals exact KL-regularised OMD's, the
   reference (``nash.omd_dynamics``), to 1e-12 -- a wrong update rule with the same fixed point
   fails this; its last iterate (tau = 0.2, eta = 0.5) is within 1e-10 of the
   equilibrium computed independently (root solve) and exact duality gap < 1e-10; Hedge self-play
   (tau = 0) has its average iterate's gap below 0.01 and falling (log-log slope <= -0.5 over
   T in [10^2, 10^3.5]); INPO on sampled comparisons (N m pairs y, y' ~ pi_t per iteration,
   one comparison each, the empirical loss minimised exactly) reduces the exact gap of its last
   iterate to below 5% of the start on every seed, with N m T queries.
   Control: Hedge's *last* iterate through the last-iterate test (it cycles: gap >= 0.03).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.registry import register_validation


def _control(name: str, failed: bool, detail: str) -> Check:
    return Check(f"negative-control: {name}", failed, f"{detail} (must FAIL the test)")


# ------------------------------------------------------------------ 1. Theorem 3.9 vs 3.2
def _failure_test(sub: np.ndarray, floor: float) -> tuple[bool, float]:
    """P[SubOpt >= 0.1] per column: the lowest Clopper-Pearson lower end must be >= floor."""
    from theorylab.stats import fraction_below

    lows = [fraction_below(-s, -0.1 + 1e-12).ci_low for s in sub.T]  # SubOpt >= 0.1
    return min(lows) >= floor, min(lows)


def _optimistic_suboptimality(bandit, theta_hat, M, radius) -> float:
    """Known-bug mutation (one context): argmax_a <theta_hat, phi_a> + f ||phi_a||_{M^-1}."""
    phi = bandit.phi[0]
    w = np.sqrt(np.einsum("ad,ad->a", phi, np.linalg.solve(M, phi.T).T))
    a = int(np.argmax(phi @ theta_hat + radius * w))
    return float(bandit.rewards[0].max() - bandit.rewards[0, a])


def _theorem32_bound(bandit, data, n: int, delta: float, lam: float) -> np.ndarray:
    """2 f ||(Sigma_D + lambda I)^{-1/2} u_pi*|| per seed ``(B,)``, written out here (not the
    module's ``mle_radius`` / ``coverage_term``): f from Lemma 3.1's printed formula with L =
    max ||phi||, u_pi* = E_rho phi(s, argmax_a r(s, a)) (v = 0)."""
    from theorylab.validations.claims.confidence_sets import zjj_lemma31_radius

    L = float(np.max(np.sqrt((bandit.phi**2).sum(-1))))
    f = zjj_lemma31_radius(n, bandit.d, delta, lam, bandit.B, L)
    best = (bandit.phi @ bandit.theta).argmax(axis=1)  # (S,)
    u = bandit.rho @ bandit.phi[np.arange(bandit.S), best]  # (d,)
    M = data.covariance(bandit) + lam * np.eye(bandit.d)  # (B, d, d)
    return 2.0 * f * np.sqrt(np.einsum("i,bi->b", u, np.linalg.solve(M, u[None, :, None])[..., 0]))


class GreedyFailsPessimismBounded(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.preference.pessimistic import (
            fit_pessimistic_mle,
            zjj_thm39_exact,
        )
        from theorylab.algorithms.registry import get_algorithm
        from theorylab.mdps import make
        from theorylab.mdps.preference import sample_pairwise, zjj_thm39, zjj_thm39_dataset
        from theorylab.stats import fraction_below, loglog_slope

        bandit = zjj_thm39()
        Ns, B, delta = cfg["n"], cfg["seeds"], 0.1
        pess = np.empty((B, len(Ns)))
        greedy = np.empty((B, len(Ns)))
        bound = np.empty((B, len(Ns)))  # Theorem 3.2's bound, evaluated in the claim
        library_bound = np.empty((B, len(Ns)))  # the module's own evaluation of it
        optimistic = np.empty(B)
        chunk = cfg.get("chunk", B)  # seeds per draw (memory); a seed's data ignores its batch
        for j, n in enumerate(Ns):
            for lo in range(0, B, chunk):
                idx = list(range(lo, min(B, lo + chunk)))
                data = zjj_thm39_dataset(n, seeds=idx, seed=seed + j)
                res = fit_pessimistic_mle(bandit, data, delta=delta, lam=1e-3, C=1.0)
                pess[idx, j], greedy[idx, j], library_bound[idx, j] = (
                    res.suboptimality,
                    res.greedy_suboptimality,
                    res.bound,
                )
                bound[idx, j] = _theorem32_bound(bandit, data, n, delta, 1e-3)
                if j == len(Ns) - 1:
                    M = data.covariance(bandit) + 1e-3 * np.eye(3)
                    optimistic[idx] = [
                        _optimistic_suboptimality(bandit, res.theta_hat[b], M[b], res.radius)
                        for b in range(len(idx))
                    ]
                del data
        ok, low = _failure_test(greedy, cfg["failure_floor"])
        rep.checks.append(
            Check(
                "greedy-fails",
                ok,
                f"P[SubOpt(greedy) >= 0.1] at n = {Ns}: "
                f"{np.round((greedy >= 0.1 - 1e-12).mean(0), 3).tolist()}; lowest 95% "
                f"Clopper-Pearson lower end {low:.3f} >= {cfg['failure_floor']}",
                {"failure_rate": (greedy >= 0.1 - 1e-12).mean(0).tolist()},
            )
        )
        exact = [zjj_thm39_exact(n, pessimism=False) for n in cfg["exact_n"]]
        rep.checks.append(
            Check(
                "greedy-fails-exact",
                all(e.greedy_failure >= 0.2689 for e in exact),
                "exact P[SubOpt(greedy) >= 0.1] by enumeration: "
                + ", ".join(f"n={e.n}: {e.greedy_failure:.4f}" for e in exact)
                + " >= sigma(-1) = 0.2689",
            )
        )
        rel = float(np.max(np.abs(library_bound / bound - 1.0)))
        rep.checks.append(
            Check(
                "bound-formula",
                rel <= 1e-9,
                "the module's bound 2 f ||u_pi*||_{M^-1} against the claim's (Lemma 3.1's f and "
                f"the coverage term written out here): max |ratio - 1| = {rel:.2e} <= 1e-9",
            )
        )
        worst = min(fraction_below(pess[:, j], bound[:, j]).fraction for j in range(len(Ns)))
        rep.violation_rate = 1 - worst
        rep.checks.append(
            Check(
                "pessimism-below-bound",
                worst >= 1 - delta,
                f"SubOpt(pi_PE) <= 2 f coverage (Theorem 3.2, C = 1) on a fraction {worst:.3f} "
                f">= 1 - delta = {1 - delta} of the seeds at every n (worst n)",
            )
        )
        pm, gm = pess.mean(0), greedy.mean(0)
        rep.checks.append(
            Check(
                "pessimism-safe",
                bool((pm <= 0.1 + 1e-6).all() and (pm < gm).all()),
                f"mean SubOpt pessimistic {np.round(pm, 4).tolist()} <= 0.1 and below greedy "
                f"{np.round(gm, 4).tolist()}",
            )
        )
        fit = loglog_slope(np.asarray(Ns, float), bound, fit_range=(0.0, 1.0))
        rep.slope, rep.slope_ci = fit.slope, (fit.ci_low, fit.ci_high)
        rep.bound_exponent = -0.5
        rep.checks.append(
            Check(
                "bound-rate",
                -0.55 <= fit.ci_low and fit.ci_high <= -0.45,
                f"log-log slope of the bound in n: {fit.slope:.3f} [{fit.ci_low:.3f}, "
                f"{fit.ci_high:.3f}] inside [-0.55, -0.45]",
            )
        )
        # controls
        entry = get_algorithm("greedy-mle")
        cb = make(cfg["control_bandit"])
        ctrl = np.stack(
            [
                entry.factory(cb, sample_pairwise(cb, n, seeds=B, seed=seed)).suboptimality
                for n in cfg["control_n"]
            ],
            axis=1,
        )
        c_ok, c_low = _failure_test(ctrl, cfg["failure_floor"])
        rep.checks.append(
            _control(
                "greedy-mle on uniform data",
                not c_ok,
                f"lowest Clopper-Pearson lower end of its failure rate {c_low:.3f} "
                f"(means {np.round(ctrl.mean(0), 4).tolist()})",
            )
        )
        frac = fraction_below(optimistic, bound[:, -1]).fraction
        rep.checks.append(
            _control(
                "optimistic-MLE mutation (+f||u||) against the bound",
                frac < 1 - delta,
                f"at n = {Ns[-1]} it is below the bound on {frac:.3f} of the seeds",
            )
        )
        rep.config["means"] = {"pessimistic": pm.tolist(), "greedy": gm.tolist()}
        if plot:
            from theorylab.plotting import plot_suboptimality_lines

            ax = plot_suboptimality_lines(
                Ns,
                {"greedy MLE": greedy, "pessimistic MLE (C = 1)": pess},
                reference=0.2689,
                reference_label="sigma(-1): greedy's failure probability in the limit",
                title=f"{self.name} [{rep.scale}]",
            )
            ax.set_xlabel("comparisons n")
            save_claim_figure(ax, plot)


register_validation(
    GreedyFailsPessimismBounded(
        name="zjj-greedy-fails-pessimism-bounded",
        statement=(
            "Zhu-Jordan-Jiao Thm 3.9 instance: greedy-on-MLE is >= 0.1 sub-optimal with a "
            "probability bounded away from 0 at every n (95% Clopper-Pearson lower end >= 0.1 "
            "quick, >= 0.15 full; exactly it tends to sigma(-1) = 0.269 from above), while the "
            "pessimistic MLE stays under Thm 3.2's bound (C = 1 [M]) on >= 1 - delta of the "
            "seeds, never worse than the safe arm, and the bound falls like n^(-1/2)"
        ),
        bound="zjj-thm3.2",
        scales={
            "quick": {
                "n": [10, 1000, 100_000],
                "seeds": 64,
                "failure_floor": 0.1,
                "exact_n": [10],
                "control_bandit": "comparison-bandit:S=1,A=4,d=3,seed=1",
                "control_n": [10, 1000],
            },
            "full": {
                "n": [10, 100, 1000, 10_000, 100_000, 1_000_000],
                "seeds": 256,
                "chunk": 16,
                "failure_floor": 0.15,
                "exact_n": [10, 100, 1000],
                "control_bandit": "comparison-bandit:S=1,A=4,d=3,seed=1",
                "control_n": [10, 1000, 10_000],
            },
        },
    ),
    controls=("pessimistic-mle-bonus-sign", "zjj-radius-log-dropped"),
    papers=("000#48",),
)


# ------------------------------------------------------------------ 2. K-wise vs split
def _paired_below(a: np.ndarray, b: np.ndarray) -> tuple[bool, Any]:
    """95% t interval of mean(a - b) entirely below 0."""
    from theorylab.stats import final_ci

    ci = final_ci(a - b)
    return ci.ci_high < 0, ci


class KwiseBeatsSplit(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.preference.mle import fit_pairwise_split, plackett_luce_mle
        from theorylab.mdps import make
        from theorylab.mdps.preference import sample_rankings

        bandit = make(cfg["bandit"])
        K, B = cfg["K"], cfg["seeds"]
        errs = {"MLE_K (Plackett-Luce)": [], "MLE_2 (pairwise split)": [], "top-1": []}
        for j, n in enumerate(cfg["n"]):
            data = sample_rankings(bandit, n, K, seeds=B, seed=seed + j)
            F = data.features(bandit)
            th = {
                "MLE_K (Plackett-Luce)": plackett_luce_mle(F, bandit.B),
                "MLE_2 (pairwise split)": fit_pairwise_split(bandit, data),
                "top-1": plackett_luce_mle(F, bandit.B, stages=1),
            }
            for k, v in th.items():
                errs[k].append(((v - bandit.theta) ** 2).sum(axis=1))
            kw, sp, top = (errs[k][-1] for k in errs)
            ok, ci = _paired_below(kw, sp)
            rep.checks.append(
                Check(
                    f"kwise-beats-split (n = {n})",
                    ok,
                    f"MSE MLE_K {kw.mean():.4g}, MLE_2 {sp.mean():.4g}; paired difference "
                    f"{ci.mean:.3g} [{ci.ci_low:.3g}, {ci.ci_high:.3g}] entirely below 0",
                )
            )
            c_ok, cci = _paired_below(top, sp)
            rep.checks.append(
                _control(
                    f"top-choice MLE vs split (n = {n})",
                    not c_ok,
                    f"MSE top-1 {top.mean():.4g}; paired difference {cci.mean:.3g} "
                    f"[{cci.ci_low:.3g}, {cci.ci_high:.3g}]",
                )
            )
        rep.config["mse"] = {k: [float(e.mean()) for e in v] for k, v in errs.items()}
        if plot:
            from theorylab.plotting import plot_suboptimality_vs_n

            curves = {k: np.sqrt(np.stack(v, axis=1)) for k, v in errs.items()}
            ax = plot_suboptimality_vs_n(
                cfg["n"], curves, bound_exponent=-0.5, title=f"{self.name} [{rep.scale}]"
            )
            ax.set_ylabel("||theta_hat - theta*||_2")
            ax.set_xlabel(f"rankings n (K = {K})")
            save_claim_figure(ax, plot)


register_validation(
    KwiseBeatsSplit(
        name="kwise-mle-beats-pairwise-split",
        statement=(
            "Zhu-Jordan-Jiao Thm 4.3: at equal data the true Plackett-Luce MLE has lower mean "
            "squared error than the pairwise-split MLE (paired 95% CI below 0 at every n)"
        ),
        scales={
            "quick": {
                "bandit": "comparison-bandit:S=2,A=6,d=4,norm=3,B=4,seed=1",
                "K": 6,
                "n": [300],
                "seeds": 160,
            },
            "full": {
                "bandit": "comparison-bandit:S=2,A=6,d=4,norm=3,B=4,seed=1",
                "K": 6,
                "n": [300, 1000, 3000],
                "seeds": 512,
            },
        },
    ),
    controls=("plackett-luce-top-choice-only",),
    papers=("000#48",),
)


# ------------------------------------------------------------------ 3. P2R
class P2RQueries(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        import theorylab as tl
        from theorylab.algorithms.preference.p2r import repeats_for
        from theorylab.mdps import make
        from theorylab.stats import loglog_slope

        mdp = make(cfg["mdp"])
        K, B = cfg["episodes"], cfg["seeds"]
        res = tl.run(f"p2r-ucbvi:eps0={cfg['eps0']}", mdp, episodes=K, seeds=B, seed=seed)
        x = np.arange(1, K + 1, dtype=float)
        m = repeats_for(cfg["eps0"], 0.1, mdp.S * mdp.A)
        cap = (mdp.S * mdp.A - 1) * m
        q = res.queries.astype(float)
        rep.checks.append(
            Check(
                "queries-below-eluder-bound",
                bool((q[:, -1] <= cap).all()),
                f"queries at K = {K}: max {int(q[:, -1].max())} <= (SA - 1) m = {cap}",
            )
        )
        qfit = loglog_slope(x, q, fit_range=(0.5, 1.0))
        rep.checks.append(
            Check(
                "queries-slope",
                qfit.ci_high <= 0.1,
                f"log-log slope of queries over the second half {qfit.slope:.3g} "
                f"[{qfit.ci_low:.3g}, {qfit.ci_high:.3g}] <= 0.1",
            )
        )
        rfit = loglog_slope(x, res.curve, fit_range=tuple(cfg["regret_fit_range"]))
        rep.slope, rep.slope_ci = rfit.slope, (rfit.ci_low, rfit.ci_high)
        rep.checks.append(
            Check(
                "regret-sublinear",
                rfit.ci_high < cfg["regret_slope_max"],
                f"log-log slope of exact cumulative regret {rfit.slope:.3f} "
                f"[{rfit.ci_low:.3f}, {rfit.ci_high:.3f}] < {cfg['regret_slope_max']} (fit on "
                f"the fraction {cfg['regret_fit_range']} of log K)",
            )
        )
        ctrl = tl.run(
            f"p2r-ucbvi:eps0={cfg['eps0']},cache=false",
            mdp,
            episodes=cfg["control_episodes"],
            seeds=2,
            seed=seed,
        )
        cx = np.arange(1, cfg["control_episodes"] + 1, dtype=float)
        cfit = loglog_slope(cx, ctrl.queries.astype(float), fit_range=(0.5, 1.0))
        rep.checks.append(
            _control(
                "cache=false (re-query every visit) through queries-slope",
                cfit.ci_high > 0.1,
                f"its query slope {cfit.slope:.3f}",
            )
        )
        rep.config.update(
            final_regret=float(res.curve[:, -1].mean()),
            final_queries=float(q[:, -1].mean()),
            m=m,
        )
        if plot:
            from theorylab.plotting import plot_regret_and_queries

            ax = plot_regret_and_queries(
                {"P2R + UCBVI-BF": res.curve},
                {"P2R + UCBVI-BF": q},
                title=f"{self.name} [{rep.scale}] on {cfg['mdp']}",
            )
            save_claim_figure(ax, plot)


register_validation(
    P2RQueries(
        name="p2r-queries-bounded-regret-sublinear",
        statement=(
            "P2R around UCBVI-BF (Wang-Liu-Jin 2023): preference queries stay below (SA - 1) m "
            "and stop growing (log-log slope <= 0.1, slower than log K) while exact regret is "
            "sub-linear"
        ),
        scales={
            "quick": {
                "mdp": "riverswim:S=2,H=3",
                "episodes": 3000,
                "seeds": 8,
                "eps0": 0.1,
                "regret_slope_max": 0.95,
                "regret_fit_range": (0.5, 1.0),
                "control_episodes": 200,
            },
            "full": {
                "mdp": "riverswim:S=4,H=5",
                "episodes": 30_000,
                "seeds": 16,
                "eps0": 0.1,
                "regret_slope_max": 0.75,
                "regret_fit_range": (0.8, 1.0),
                "control_episodes": 2000,
            },
        },
    ),
    controls=("p2r-no-cache",),
    papers=("000#24", "001#53"),
)


# ------------------------------------------------------------------ 4. Nash dynamics
class NashDynamics(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.preference.nash import omd_dynamics, regularised_equilibrium
        from theorylab.experiment import run
        from theorylab.mdps import make
        from theorylab.stats import loglog_slope

        tau = cfg["tau"]
        reg = run("inpo", cfg["game"], iterations=cfg["T"], tau=tau, eta=cfg["eta"], seed=seed)
        dist, gap_T = float(reg.extra["distance"][0, -1]), float(reg.values[0, -1])
        game = make(cfg["game"])
        omd = omd_dynamics(game.P, game.pi_ref, tau, cfg["eta"], cfg["T"])  # the reference
        star = regularised_equilibrium(game.P, game.pi_ref, tau)
        d_ref = np.abs(omd.iterates - star).max(axis=-1)  # (T + 1,)
        path = max(
            float(np.max(np.abs(reg.values[0] - omd.gap))),
            float(np.max(np.abs(reg.extra["distance"][0] - d_ref))),
        )
        rep.checks.append(
            Check(
                "inpo-loss-steps-are-omd-steps",
                path < 1e-12,
                f"inpo (each iterate the exact minimiser of INPO's loss L_t) against exact OMD "
                f"pi_(t+1) ∝ pi_t^(1 - eta tau) pi_ref^(eta tau) exp(eta P pi_t) from pi_ref: "
                f"max over t of |gap difference| and |distance-to-pi* difference| = {path:.1e} "
                "(< 1e-12: the same trajectory, not only the same fixed point)",
            )
        )
        rep.checks.append(
            Check(
                "omd-last-iterate",
                dist < 1e-10 and gap_T < 1e-10,
                f"inpo, tau = {tau}, eta = {cfg['eta']}, T = {cfg['T']}: max |pi_T - pi*| = "
                f"{dist:.2e} (pi* by an independent root solve), exact duality gap {gap_T:.2e} "
                "(both < 1e-10)",
            )
        )
        hedge_run = run(
            "hedge-selfplay", cfg["game"], iterations=cfg["hedge_T"], eta=cfg["hedge_eta"]
        )
        average_gap, last_gap = hedge_run.values[0], hedge_run.extra["last_gap"][0]
        t = np.arange(1, cfg["hedge_T"] + 2, dtype=float)
        lo, hi = cfg["hedge_fit"]
        mask = (t >= lo) & (t <= hi)
        fit = loglog_slope(t[mask], average_gap[mask], fit_range=(0.0, 1.0))
        rep.slope, rep.slope_ci = fit.slope, (fit.ci_low, fit.ci_high)
        rep.checks.append(
            Check(
                "hedge-average-iterate",
                average_gap[-1] < 0.01 and fit.slope <= -0.5,
                f"hedge-selfplay (tau = 0): average iterate's gap {average_gap[-1]:.4f} < 0.01 at "
                f"T = {cfg['hedge_T']}; log-log slope over T in [{lo}, {hi}] {fit.slope:.3f} "
                "<= -0.5",
            )
        )
        samp = run(
            "inpo",
            cfg["game"],
            iterations=cfg["sampled_T"],
            seeds=cfg["seeds"],
            seed=seed,
            tau=tau,
            eta=cfg["sampled_eta"],
            m=cfg["m"],
        )
        ratio = samp.values[:, -1] / samp.values[:, 0]
        rep.checks.append(
            Check(
                "sampled-inpo",
                bool((ratio < 0.05).all()),
                f"inpo with m = {cfg['m']} comparisons per response per iteration: last-iterate "
                f"gap / initial gap max {ratio.max():.4f} < 0.05 over {cfg['seeds']} seeds; "
                f"queries {int(samp.queries[0, -1])} per seed",
            )
        )
        tail = last_gap[-cfg["hedge_T"] // 4 :]
        rep.checks.append(
            _control(
                "Hedge's last iterate through the last-iterate test",
                not (tail[-1] < 1e-10),
                f"its gap over the last quarter stays in [{tail.min():.3f}, {tail.max():.3f}]",
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            T = cfg["hedge_T"]
            reg_gap = reg.values[0]
            curves = {
                f"OMD last iterate (tau = {tau})": np.pad(
                    reg_gap, (0, T - cfg["T"]), constant_values=np.nan
                )[None, 1:]
                if T > cfg["T"]
                else reg_gap[None, 1 : T + 1],
                "Hedge average iterate (tau = 0)": average_gap[None, 1:],
                "Hedge last iterate (tau = 0)": last_gap[None, 1:],
            }
            ax = plot_regret(
                curves,
                xlabel="iteration t",
                ylabel="exact duality gap",
                title=f"{self.name} [{rep.scale}]",
            )
            ax.set_xscale("log")
            ax.set_yscale("log")
            save_claim_figure(ax, plot)


register_validation(
    NashDynamics(
        name="nash-dynamics-converge",
        statement=(
            "On intransitive preferences, KL-regularised OMD (INPO's update) converges in the "
            "last iterate to the regularised Nash equilibrium, Hedge's average iterate to the "
            "von Neumann winner, and sampled INPO shrinks the exact duality gap; Hedge's last "
            "iterate cycles"
        ),
        scales={
            "quick": {
                "game": "cyclic-preferences",
                "tau": 0.2,
                "eta": 0.5,
                "T": 400,
                "hedge_eta": 0.05,
                "hedge_T": 4000,
                "hedge_fit": (100, 3000),
                "sampled_eta": 0.2,
                "sampled_T": 150,
                "m": 40,
                "seeds": 8,
            },
            "full": {
                "game": "cyclic-preferences",
                "tau": 0.2,
                "eta": 0.5,
                "T": 400,
                "hedge_eta": 0.05,
                "hedge_T": 20_000,
                "hedge_fit": (100, 3000),
                "sampled_eta": 0.2,
                "sampled_T": 300,
                "m": 100,
                "seeds": 32,
            },
        },
    ),
    controls=("inpo-no-kl-pull",),
    papers=("000#24", "001#53", "002-004#E2"),
)


# ====================================================================== issue 29: alignment rows
# 5. gshf-kl-regularised-rates, 6. gshf-online-beats-offline (000#35, Xiong et al. 2024; card
# docs/algorithms/gshf.md); 7. hypo-coverage-dichotomy (000#45), 8. dno-monotone-nash (E1),
# 9. maxmin-rlhf-egalitarian (E9), 10. rlhs-hindsight-beats-foresight (E14): cards hypo.md, dno.md,
# maxmin-rlhf.md, rlhs.md; controls in validations/alignment_mutations.py.
def _gibbs_written_out(ref: np.ndarray, r: np.ndarray, eta: float) -> np.ndarray:
    """pi(a|s) = ref(a|s) exp(r(s, a) / eta) / sum_b ref(b|s) exp(r(s, b) / eta), written here."""
    w = ref * np.exp((r - r.max(axis=-1, keepdims=True)) / eta)
    return w / w.sum(axis=-1, keepdims=True)


def _kl_suboptimality(bandit, pi: np.ndarray) -> float:
    """eta E_rho KL(pi || pi*) (the identity J(pi*) - J(pi) = eta E KL(pi || pi*))."""
    star = _gibbs_written_out(bandit.ref, bandit.rewards, bandit.eta)
    t = np.where(pi > 0, pi * np.log(np.where(pi > 0, pi, 1.0) / star), 0.0)
    return float(bandit.eta * bandit.rho @ t.sum(-1))


def _rejection_by_enumeration(ref, r, eta: float, M: int) -> np.ndarray:
    """The M-draw rejection sampler's law by enumerating every sequence of (draw, accept?)."""
    import itertools

    acc = np.exp((r - r.max()) / eta)
    A = ref.size
    law = np.zeros(A)
    for seq in itertools.product(range(A), repeat=M):
        p_seq = float(np.prod(ref[list(seq)]))
        miss = 1.0
        for a in seq:  # the first accepted draw is returned
            law[a] += p_seq * miss * acc[a]
            miss *= 1 - acc[a]
        law[seq[-1]] += p_seq * miss  # none accepted: the M-th draw
    return law


class GSHFRates(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.preference.gshf import rejection_sample, rejection_sampling_law
        from theorylab.algorithms.registry import get_algorithm
        from theorylab.mdps import make
        from theorylab.mdps.preference import sample_pairwise
        from theorylab.stats import fraction_below, loglog_slope
        from theorylab.validations.claims.confidence_sets import zjj_lemma31_radius

        bandit = make(cfg["bandit"])
        Ns, B, delta, lam = cfg["n"], cfg["seeds"], 0.1, cfg["lam"]
        entry = get_algorithm("gshf-offline")
        sub, bound, lib_bound, sub_id, argmax_sub = (np.empty((B, len(Ns))) for _ in range(5))
        star = _gibbs_written_out(bandit.ref, bandit.rewards, bandit.eta)
        nu = np.einsum("s,sa,sad->d", bandit.rho, bandit.ref, bandit.phi)
        u = np.einsum("s,sa,sad->d", bandit.rho, star, bandit.phi) - nu
        L = float(np.max(np.linalg.norm(bandit.phi, axis=-1)))
        for j, n in enumerate(Ns):
            data = sample_pairwise(bandit, n, seeds=B, seed=seed + j)
            res = entry.factory(bandit, data, delta=delta, lam=lam, C=1.0)
            sub[:, j], lib_bound[:, j] = res.suboptimality, res.bound
            sub_id[:, j] = [_kl_suboptimality(bandit, p) for p in res.policy]
            f = zjj_lemma31_radius(n, bandit.d, delta, lam, bandit.B, L)
            Mx = data.covariance(bandit) + lam * np.eye(bandit.d)
            bound[:, j] = (
                2
                * f
                * np.sqrt(
                    np.einsum(
                        "i,bi->b",
                        u,
                        np.linalg.solve(Mx, np.broadcast_to(u, (B, bandit.d))[..., None])[..., 0],
                    )
                )
            )
            # the unregularised answer: argmax of the MLE's reward (deterministic)
            greedy = np.einsum("sad,bd->bsa", bandit.phi, res.theta_hat).argmax(-1)
            argmax_sub[:, j] = [bandit.suboptimality(bandit.policy_matrix(g)) for g in greedy]
        ident = float(np.max(np.abs(sub - sub_id)))
        rep.checks.append(
            Check(
                "kl-suboptimality-exact",
                ident < 1e-9,
                "the library's J(pi*) - J(pi_hat) (closed-form J(pi*) = eta E log Z) against "
                f"eta E KL(pi_hat || pi*) with pi* written out here: max difference {ident:.1e}",
            )
        )
        rel = float(np.max(np.abs(lib_bound / bound - 1.0)))
        rep.checks.append(
            Check(
                "bound-formula",
                rel <= 1e-9,
                "the module's bound 2 f ||E phi(pi*) - nu||_{M^-1} against the claim's (Lemma "
                f"3.1's printed f, pi* and nu written out here): max |ratio - 1| = {rel:.2e}",
            )
        )
        worst = min(fraction_below(sub[:, j], bound[:, j]).fraction for j in range(len(Ns)))
        rep.violation_rate = 1 - worst
        rep.checks.append(
            Check(
                "below-bound",
                worst >= 1 - delta,
                f"SubOpt(pi_hat) <= 2 f ||u*|| on a fraction {worst:.3f} >= 1 - delta of the "
                "seeds at every n (worst n)",
            )
        )
        trivial = bandit.suboptimality(bandit.ref)  # doing nothing: play the reference
        informative = [n for n, b in zip(Ns, bound.mean(0), strict=True) if b < trivial]
        rep.checks.append(
            Check(
                "bound-informative",
                bool(bound.mean(0)[-1] < trivial),
                f"mean bound {np.round(bound.mean(0), 4).tolist()} against the trivial "
                f"J(pi*) - J(ref) = {trivial:.4f}: informative at n in {informative} (a bound "
                "above the trivial one would be VACUOUS)",
            )
        )
        x = np.asarray(Ns, float)
        bfit = loglog_slope(x, bound, fit_range=(0.0, 1.0))
        sfit = loglog_slope(x, sub, fit_range=(0.0, 1.0))
        rep.slope, rep.slope_ci, rep.bound_exponent = sfit.slope, (sfit.ci_low, sfit.ci_high), -0.5
        rep.checks.append(
            Check(
                "bound-rate",
                -0.55 <= bfit.ci_low and bfit.ci_high <= -0.45,
                f"log-log slope of the bound in n {bfit.slope:.3f} [{bfit.ci_low:.3f}, "
                f"{bfit.ci_high:.3f}] inside [-0.55, -0.45] (the paper's n^(-1/2))",
            )
        )
        rep.checks.append(
            Check(
                "suboptimality-rate",
                sfit.ci_high <= -0.5,
                f"log-log slope of the mean KL-regularised sub-optimality {sfit.slope:.3f} "
                f"[{sfit.ci_low:.3f}, {sfit.ci_high:.3f}] <= -0.5: at least the bound's rate "
                "(measured near -1: the plug-in loses second order in the reward error)",
            )
        )
        # rejection sampling toward the Gibbs policy (one context of the instance)
        ref0, r0, eta = bandit.ref[0], bandit.rewards[0], bandit.eta
        g0 = star[0]
        enum_err = max(
            float(
                np.abs(
                    rejection_sampling_law(ref0, r0, eta, m)
                    - _rejection_by_enumeration(ref0, r0, eta, m)
                ).max()
            )
            for m in (1, 2, 3)
        )
        Ms = np.arange(1, cfg["M_max"] + 1)
        tv = np.array(
            [0.5 * np.abs(rejection_sampling_law(ref0, r0, eta, int(m)) - g0).sum() for m in Ms]
        )
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(29, 35)))
        m_mc = cfg["M_mc"]
        draws = rejection_sample(ref0, r0, eta, m_mc, cfg["mc_samples"], rng)
        freq = np.bincount(draws, minlength=ref0.size) / draws.size
        q = rejection_sampling_law(ref0, r0, eta, m_mc)
        z = float(np.max(np.abs(freq - q) / np.sqrt(q * (1 - q) / draws.size)))
        rep.checks.append(
            Check(
                "rejection-sampling-to-gibbs",
                enum_err < 1e-12
                and bool(np.all(np.diff(tv[tv > 1e-12]) < 0))
                and tv[-1] < 1e-3
                and z < 4.5,
                f"exact law against the enumeration of every draw sequence (M <= 3): "
                f"{enum_err:.1e}; TV(q_M, Gibbs) strictly falling (down to 1e-12), "
                f"{tv[0]:.4f} at M = 1 -> "
                f"{tv[-1]:.2e} at M = {Ms[-1]} (< 1e-3); {draws.size} Monte Carlo outputs at M = "
                f"{m_mc}: max |freq - q| / sd = {z:.2f} (< 4.5)",
            )
        )
        afit = loglog_slope(x, argmax_sub, fit_range=(0.0, 1.0))
        rep.checks.append(
            _control(
                "the argmax of the MLE's reward (the unregularised answer) through the rate test",
                not afit.ci_high <= -0.5,
                f"its KL-regularised sub-optimality {np.round(argmax_sub.mean(0), 4).tolist()}, "
                f"slope {afit.slope:.3f}",
            )
        )
        best_of = np.array([_best_of_m_law(ref0, r0, int(m)) for m in Ms])
        bo_tv = 0.5 * np.abs(best_of - g0).sum(-1)
        rep.checks.append(
            _control(
                "best-of-M (argmax of r over M draws) through the to-Gibbs test",
                not bo_tv[-1] < 1e-3,
                f"TV(best-of-M, Gibbs) at M = {Ms[-1]}: {bo_tv[-1]:.3f}",
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            ax = plot_regret(
                {"GSHF offline (pessimistic)": sub, "argmax of the MLE (control)": argmax_sub},
                {"bound 2 f ||u*||": bound.mean(0)},
                x=x,
                xlabel="comparisons n",
                ylabel="KL-regularised sub-optimality",
                title=f"{self.name} [{rep.scale}]",
            )
            ax.set_xscale("log")
            ax.set_yscale("log")
            save_claim_figure(ax, plot)


def _best_of_m_law(ref: np.ndarray, r: np.ndarray, M: int) -> np.ndarray:
    """Law of argmax_r over M draws from ref (ties impossible for distinct rewards): P(best is
    a) = F(a)^M - F(a-)^M in the order of increasing reward."""
    order = np.argsort(r)
    cdf = np.cumsum(ref[order])
    prev = np.concatenate([[0.0], cdf[:-1]])
    law = np.empty_like(ref)
    law[order] = cdf**M - prev**M
    return law


register_validation(
    GSHFRates(
        name="gshf-kl-regularised-rates",
        statement=(
            "GSHF offline (pessimistic MLE under the KL constraint): the exact KL-regularised "
            "sub-optimality against the Gibbs policy stays under 2 f ||E phi(pi*) - nu||_{M^-1} "
            "on 1 - delta of the seeds, the bound falls like n^(-1/2) and is informative at the "
            "largest n, the sub-optimality falls at least as fast (measured ~ n^(-1)); the "
            "M-draw rejection sampler's law tends to the Gibbs policy geometrically in M"
        ),
        scales={
            "quick": {
                "bandit": "kl-bandit:eta=0.2",
                "lam": 1e-5,
                "n": [4000, 16000, 64000],
                "seeds": 12,
                "M_max": 64,
                "M_mc": 8,
                "mc_samples": 100_000,
            },
            "full": {
                "bandit": "kl-bandit:eta=0.2",
                "lam": 1e-5,
                "n": [4000, 16000, 64000, 256000],
                "seeds": 64,
                "M_max": 128,
                "M_mc": 8,
                "mc_samples": 1_000_000,
            },
        },
        bound="gshf-offline-pessimism",
    ),
    controls=("gibbs-temperature-inverted",),
    papers=("000#35",),
)


class GSHFOnlineBeatsOffline(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.experiment import run
        from theorylab.mdps import make
        from theorylab.stats import loglog_slope
        from theorylab.validations.claims.preference_duels import _welch_below

        bandit = make(cfg["bandit"])
        common = dict(dataset_size=cfg["n"], design="reference", seeds=cfg["seeds"], seed=seed)
        dpo = run("gshf-offline", cfg["bandit"], C=0.0, **common).values  # (B, n)
        online = run("gshf-iterative", cfg["bandit"], batch=cfg["batch"], **common)
        hybrid = run(
            "gshf-iterative", cfg["bandit"], batch=cfg["batch"], offline_fraction=0.5, **common
        ).values
        on = online.values
        q_ok = bool(np.array_equal(online.queries, np.broadcast_to(cfg["n"], on.shape)))
        cis = [_welch_below(on[:, j], dpo[:, j]) for j in range(len(cfg["n"]))]
        hcis = [_welch_below(hybrid[:, j], dpo[:, j]) for j in range(len(cfg["n"]))]
        rep.checks.append(
            Check(
                "online-beats-offline-dpo",
                all(c[0] for c in cis) and q_ok,
                f"{bandit.name} (best action's reference mass {bandit.ref[0, -1]}), data from ref "
                "x ref: mean KL-regularised sub-optimality online "
                f"{np.round(on.mean(0), 4).tolist()} vs offline DPO "
                f"{np.round(dpo.mean(0), 4).tolist()} at n = {cfg['n']} "
                "comparisons each; Welch 95% intervals of the difference "
                + ", ".join(f"[{lo:.3f}, {hi:.3f}]" for _, lo, hi in cis)
                + f" below 0; online queries equal the budget n: {q_ok}",
            )
        )
        rep.checks.append(
            Check(
                "hybrid-beats-offline-dpo",
                all(c[0] for c in hcis),
                "hybrid (half the offline data, half online) "
                f"{np.round(hybrid.mean(0), 4).tolist()}, Welch intervals "
                + ", ".join(f"[{lo:.3f}, {hi:.3f}]" for _, lo, hi in hcis)
                + " below 0",
            )
        )
        x = np.asarray(cfg["n"], float)
        ofit = loglog_slope(x, on, fit_range=(0.0, 1.0))
        rep.slope, rep.slope_ci = ofit.slope, (ofit.ci_low, ofit.ci_high)
        rep.checks.append(
            Check(
                "online-converges",
                ofit.ci_high <= -0.5,
                f"online's log-log slope in n {ofit.slope:.3f} [{ofit.ci_low:.3f}, "
                f"{ofit.ci_high:.3f}] <= -0.5",
            )
        )
        dfit = loglog_slope(x, dpo, fit_range=(0.0, 1.0))
        rep.checks.append(
            _control(
                "offline DPO on the poorly covered data through the convergence test",
                not dfit.ci_high <= -0.5,
                f"its slope {dfit.slope:.3f} [{dfit.ci_low:.3f}, {dfit.ci_high:.3f}]",
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            ax = plot_regret(
                {"GSHF online": on, "GSHF hybrid": hybrid, "offline DPO (control)": dpo},
                x=x,
                xlabel="comparisons n",
                ylabel="KL-regularised sub-optimality",
                title=f"{self.name} [{rep.scale}]",
            )
            ax.set_xscale("log")
            ax.set_yscale("log")
            save_claim_figure(ax, plot)


register_validation(
    GSHFOnlineBeatsOffline(
        name="gshf-online-beats-offline",
        statement=(
            "On data from a reference policy that seldom draws the best action, GSHF's online "
            "rounds (main agent + optimistic enhancer) and its hybrid beat offline DPO (the Gibbs "
            "policy of the reward MLE) at equal comparisons, and online's KL-regularised "
            "sub-optimality falls at least like n^(-1/2) while offline DPO's stalls"
        ),
        scales={
            "quick": {"bandit": "gshf-coverage", "n": [400, 1600], "seeds": 8, "batch": 100},
            "full": {
                "bandit": "gshf-coverage",
                "n": [200, 400, 800, 1600, 3200],
                "seeds": 24,
                "batch": 100,
            },
        },
    ),
    controls=("gshf-enhancer-no-bonus",),
    papers=("000#35",),
)


# ------------------------------------------------------------------ 7. HyPO coverage dichotomy
def _hypo_reduced(ref, r, beta: float, lam: float) -> np.ndarray:
    """HyPO's population minimiser on the 3-response instance (a, b compared, c never), from the
    decomposition KL = KL(m || ref(C)) + m K_C + (1 - m) K_U written out here: pi_U = ref_U, the
    mass m profiled out, a 1-D search over t = h_a - h_b on C."""
    from scipy.optimize import minimize_scalar

    pC, pU = ref[0] + ref[1], ref[2]
    q = 1.0 / (1.0 + np.exp(-(r[0] - r[1])))  # P(a > b)

    def cond(t):  # pi_C(a) given t
        return 1.0 / (1.0 + ref[1] / ref[0] * np.exp(-t))

    def obj(t):
        x = cond(t)
        a0, b0 = ref[0] / pC, ref[1] / pC
        kc = x * np.log(x / a0) + (1 - x) * np.log((1 - x) / b0)
        dpo = -q * np.log(1 / (1 + np.exp(-beta * t))) - (1 - q) * np.log(
            1 / (1 + np.exp(beta * t))
        )
        return dpo - lam * np.log(pC * np.exp(-kc) + pU)

    t = minimize_scalar(obj, bounds=(-50, 50), method="bounded", options={"xatol": 1e-12}).x
    x = cond(t)
    a0, b0 = ref[0] / pC, ref[1] / pC
    kc = x * np.log(x / a0) + (1 - x) * np.log((1 - x) / b0)
    m = pC * np.exp(-kc) / (pC * np.exp(-kc) + pU)
    return np.array([m * x, m * (1 - x), 1 - m])


class HyPOCoverage(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.preference import hypo as H
        from theorylab.experiment import run
        from theorylab.stats import loglog_slope

        r, beta, lam, R = np.array(cfg["r"]), cfg["beta"], cfg["lam"], cfg["R"]
        eps = np.array(cfg["eps"])
        covered = np.array([True, True, False])
        mu = np.zeros((3, 3))
        mu[0, 1] = 1.0  # the data compare a and b only
        wins = H.population_wins(mu, r)
        q = 1.0 / (1.0 + np.exp(-(r[0] - r[1])))
        entropy = -(q * np.log(q) + (1 - q) * np.log(1 - q))  # min of L_DPO (beta h = r on C)
        dpo_sup, dpo_J, rlhf, hypo_kl, hypo_err, fam_err = ([] for _ in range(6))
        for e in eps:
            ref = np.array([(1 - e) / 2, (1 - e) / 2, e])
            for t in (0.0, 0.5, 1 - 1e-9):
                p = H.dpo_minimiser_family(ref, r, covered, beta, t)
                with np.errstate(divide="ignore"):  # t = 0: pi(c) = 0, h(c) = -inf (unseen)
                    h = np.log(p / ref)
                fam_err.append(abs(H.dpo_loss(h, wins, beta) - entropy))
            p = H.dpo_minimiser_family(ref, r, covered, beta, 1 - 1e-9)
            kl = float(np.sum(p * np.log(p / ref)))
            dpo_sup.append(kl)
            dpo_J.append(float(p @ r - beta * kl))
            rlhf.append(H.rlhf_kl_sup(ref, r, covered, beta, R))
            ph = H.hypo_minimiser(ref, wins, beta, lam)
            hypo_kl.append(float(np.sum(ph * np.log(ph / ref))))
            hypo_err.append(float(np.abs(ph - _hypo_reduced(ref, r, beta, lam)).max()))
        dpo_sup, rlhf, hypo_kl = np.array(dpo_sup), np.array(rlhf), np.array(hypo_kl)
        rep.checks.append(
            Check(
                "dpo-minimisers-leave-the-data",
                max(fam_err) < 1e-9 and bool(np.all(dpo_sup >= 0.99 * np.log(1 / eps))),
                "pi_t = (1 - t) Gibbs_C + t ref_U attains the DPO population minimum (the "
                f"binary entropy of P(a > b), {entropy:.6f}) to {max(fam_err):.1e} for t in "
                "{0, 0.5, 1 - 1e-9}; at t = 1 - 1e-9 its KL to ref "
                f"{np.round(dpo_sup, 3).tolist()} >= 0.99 log(1/eps) for eps = {eps.tolist()} "
                f"(unbounded as eps -> 0); its regularised value J {np.round(dpo_J, 3).tolist()}",
            )
        )
        rep.checks.append(
            Check(
                "rlhf-stays-close",
                bool(np.all(rlhf <= R / beta + 1e-12)),
                "RLHF (bounded reward class [0, R], Gibbs policy): sup KL(pi || ref) over the "
                f"rewards the data allow {np.round(rlhf, 4).tolist()} <= R / beta = {R / beta}",
            )
        )
        rep.checks.append(
            Check(
                "hypo-exact-and-close",
                max(hypo_err) < 1e-7
                and abs(hypo_kl[-1] - hypo_kl[-2]) < 1e-4
                and bool(np.all(hypo_kl <= R / beta)),
                f"HyPO (lam = {lam}) minimiser against the decomposition written out here: max "
                f"difference {max(hypo_err):.1e} (< 1e-7); KL(pi_HyPO || ref) "
                f"{np.round(hypo_kl, 5).tolist()} converges as eps -> 0 and stays <= R / beta",
            )
        )
        # global coverage: every pair compared; DPO's minimiser is unique and is the Gibbs policy
        ref = np.array([0.3, 0.3, 0.4])
        full = H.population_wins(np.triu(np.ones((3, 3)), 1), r)
        pd = H.hypo_minimiser(ref, full, beta, 0.0)
        gibbs = ref * np.exp(r / beta) / (ref * np.exp(r / beta)).sum()
        gerr = float(np.abs(pd - gibbs).max())
        res = run(
            "hypo",
            cfg["bandit"],
            dataset_size=cfg["n"],
            design="uniform",
            seeds=cfg["seeds"],
            seed=seed,
            lam=0.0,
        )
        fit = loglog_slope(np.asarray(cfg["n"], float), res.values, fit_range=(0.0, 1.0))
        rep.slope, rep.slope_ci = fit.slope, (fit.ci_low, fit.ci_high)
        rep.checks.append(
            Check(
                "dpo-converges-with-global-coverage",
                gerr < 1e-8 and fit.ci_high <= -0.5,
                f"all pairs covered: DPO's population minimiser equals the Gibbs policy to "
                f"{gerr:.1e}; on {cfg['bandit']} with uniform pairs its empirical minimiser's "
                f"KL-regularised sub-optimality {np.round(res.values.mean(0), 5).tolist()} at n = "
                f"{cfg['n']}, slope {fit.slope:.3f} [{fit.ci_low:.3f}, {fit.ci_high:.3f}] <= -0.5",
            )
        )
        rep.checks.append(
            _control(
                "DPO's minimiser set through the bounded-KL test",
                not bool(np.all(dpo_sup <= R / beta)),
                f"its sup KL {np.round(dpo_sup, 3).tolist()} against R / beta = {R / beta}",
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            ax = plot_regret(
                {
                    "DPO minimiser set: sup KL (control)": dpo_sup[None],
                    "RLHF: sup KL": rlhf[None],
                    "HyPO: KL": hypo_kl[None],
                },
                x=1.0 / eps,
                xlabel="1 / eps (eps = reference mass of the unseen response)",
                ylabel="KL(pi || ref)",
                title=f"{self.name} [{rep.scale}]",
            )
            ax.set_xscale("log")
            save_claim_figure(ax, plot)


register_validation(
    HyPOCoverage(
        name="hypo-coverage-dichotomy",
        statement=(
            "With partial coverage (the data never compare a response), DPO's exact minimisers "
            "include policies whose KL to the reference grows like log(1/eps) without bound, "
            "while RLHF's bounded-reward Gibbs policy stays within R / beta and HyPO's unique "
            "minimiser (DPO + lam KL) stays close; with global coverage DPO's minimiser is the "
            "Gibbs policy and its empirical minimiser converges"
        ),
        scales={
            "quick": {
                "r": [1.0, 0.5, 0.0],
                "beta": 0.5,
                "lam": 0.1,
                "R": 1.0,
                "eps": [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6],
                "bandit": "gshf-coverage:eps=0.25",
                "n": [100, 400, 1600],
                "seeds": 6,
            },
            "full": {
                "r": [1.0, 0.5, 0.0],
                "beta": 0.5,
                "lam": 0.1,
                "R": 1.0,
                "eps": [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8, 1e-10],
                "bandit": "gshf-coverage:eps=0.25",
                "n": [100, 400, 1600, 6400, 25600],
                "seeds": 48,
            },
        },
    ),
    controls=("hypo-kl-dropped",),
    papers=("000#45",),
)


# ------------------------------------------------------------------ 8. DNO
def _btl_scores(P: np.ndarray) -> np.ndarray:
    """The BTL reward that best explains P (population MLE: min sum_{i != j} -P_ij log
    sigma(s_i - s_j), sum s = 0), by scipy BFGS: the point-wise reward baseline."""
    from scipy.optimize import minimize
    from scipy.special import log_expit

    N = P.shape[0]
    off = ~np.eye(N, dtype=bool)

    def f(s):
        d = s[:, None] - s[None, :]
        return float(-(P * log_expit(d))[off].sum()) + float(s.sum() ** 2)

    return minimize(f, np.zeros(N), method="BFGS", options={"gtol": 1e-10}).x


class DNOMonotoneNash(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.preference.nash import von_neumann_winner
        from theorylab.experiment import run
        from theorylab.mdps import make
        from theorylab.stats import loglog_slope

        game = make(cfg["game"])
        P, eta, T = game.P, cfg["eta"], cfg["T"]
        res = run("dno", cfg["game"], iterations=T, eta=eta, seed=seed)
        # a second implementation: the closed-form step pi_t exp(P pi_t / eta) / Z written here
        pi = game.pi_ref.copy()
        closed = [pi]
        for _ in range(T):
            w = pi * np.exp((P @ pi) / eta)
            pi = w / w.sum()
            closed.append(pi)
        closed = np.array(closed)  # (T + 1, N)
        avg = np.cumsum(closed, 0) / np.arange(1, T + 2)[:, None]
        expl = 0.5 - (avg @ P).min(-1)
        path = float(np.abs(res.extra["exploitability"][0] - expl).max())
        rep.checks.append(
            Check(
                "regression-step-is-soft-policy-iteration",
                path < 1e-10,
                "dno (each iterate the least-squares minimiser of DNO's regression on win rates) "
                "against the closed form pi_t exp(P pi_t / eta) / Z written here: max over t of "
                f"|exploitability difference| {path:.1e} (< 1e-10)",
            )
        )
        win = np.einsum("ti,ij,tj->t", closed[1:], P, closed[:-1])
        kl = np.sum(closed[1:] * np.log(closed[1:] / closed[:-1]), axis=-1)
        lib_win = res.extra["win_rate"][0, 1:]
        margin = float((lib_win - 0.5 - eta * kl).min())
        rep.checks.append(
            Check(
                "monotone-improvement",
                margin >= -1e-12 and float(np.abs(lib_win - win).max()) < 1e-10,
                f"win rate of pi_(t+1) over pi_t, min over t = {lib_win.min():.6f} >= 1/2; "
                f"min of win - 1/2 - eta KL(pi_(t+1) || pi_t) = {margin:.1e} >= -1e-12 (the "
                "sharper form)",
            )
        )
        winner, value = von_neumann_winner(P)
        t = np.arange(1, T + 2, dtype=float)
        lo = cfg["fit_from"]
        fit = loglog_slope(t[lo:], res.extra["exploitability"][:, lo:], fit_range=(0.0, 1.0))
        rep.slope, rep.slope_ci = fit.slope, (fit.ci_low, fit.ci_high)
        final = float(res.extra["exploitability"][0, -1])
        dist = float(res.extra["distance"][0, -1])
        rep.checks.append(
            Check(
                "average-to-von-neumann-winner",
                final < cfg["max_exploitability"] and fit.slope <= -0.5,
                f"average iterate's exploitability {final:.4f} < {cfg['max_exploitability']} at T "
                f"= {T}, log-log slope over t in [{lo}, {T}] {fit.slope:.3f} <= -0.5; distance to "
                f"the LP's von Neumann winner {np.round(winner, 4).tolist()} (value {value:.4f}): "
                f"{dist:.4f}",
            )
        )
        s = _btl_scores(P)
        pick = int(np.argmax(s))
        btl_expl = float(0.5 - P[pick].min())
        rep.checks.append(
            _control(
                "the BTL-reward maximiser (the point-wise reward baseline) through the "
                "exploitability test",
                not btl_expl < cfg["max_exploitability"],
                f"BTL scores {np.round(s, 3).tolist()}: plays response {pick}, exploitability "
                f"{btl_expl:.3f}",
            )
        )
        last = float(0.5 - (closed[-1] @ P).min())
        rep.checks.append(
            _control(
                "DNO's last iterate through the exploitability test",
                not last < cfg["max_exploitability"],
                f"exploitability of pi_T {last:.4f} (it cycles)",
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            ax = plot_regret(
                {
                    "DNO average iterate": res.extra["exploitability"][:, 1:],
                    "DNO last iterate (control)": (0.5 - (closed @ P).min(-1))[None, 1:],
                },
                xlabel="iteration t",
                ylabel="exploitability",
                title=f"{self.name} [{rep.scale}]",
            )
            ax.set_xscale("log")
            ax.set_yscale("log")
            save_claim_figure(ax, plot)


register_validation(
    DNOMonotoneNash(
        name="dno-monotone-nash",
        statement=(
            "DNO's regression step is soft policy iteration on the win rate against pi_t: the "
            "win rate of pi_(t+1) over pi_t is >= 1/2 + eta KL(pi_(t+1) || pi_t) every "
            "iteration, and on cyclic preferences the average iterate's exploitability falls to "
            "0 (the LP's von Neumann winner); a BTL reward maximiser stays exploitable"
        ),
        scales={
            "quick": {
                "game": "cyclic-preferences",
                "eta": 20.0,
                "T": 2000,
                "fit_from": 100,
                "max_exploitability": 0.02,
            },
            "full": {
                "game": "cyclic-preferences",
                "eta": 20.0,
                "T": 20000,
                "fit_from": 100,
                "max_exploitability": 0.003,
            },
        },
    ),
    controls=("dno-target-reversed",),
    papers=("002-004#E1",),
)


# ------------------------------------------------------------------ 9. MaxMin-RLHF
class MaxMinEgalitarian(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.preference.maxmin import maxmin_primal
        from theorylab.algorithms.registry import get_algorithm
        from theorylab.mdps import make
        from theorylab.mdps.kl_bandit import sample_group_pairs
        from theorylab.stats import loglog_slope

        b = make(cfg["bandit"])
        p_star, v_primal = maxmin_primal(b.ref, b.rho, b.group_rewards, b.eta)
        v_lib, pi_lib = b.optimal_value(), b.optimal_policy()
        gap = max(abs(v_lib - v_primal), float(np.abs(pi_lib - p_star).max()))
        rep.checks.append(
            Check(
                "maxmin-exact",
                gap < 1e-6,
                f"max-min value by the dual (min over the simplex of eta log sum ref "
                f"exp(lambda r / eta)) {v_lib:.8f} against the cvxpy primal {v_primal:.8f}; "
                f"max difference of value and policy {gap:.1e} (< 1e-6)",
            )
        )
        mm, gshf = get_algorithm("maxmin-rlhf").factory, get_algorithm("gshf-offline").factory
        Ns, B = cfg["n"], cfg["seeds"]
        single_min, mm_min, em_err, w_err, same = (np.empty((B, len(Ns))) for _ in range(5))
        for j, n in enumerate(Ns):
            data = sample_group_pairs(b, n, seeds=B, seed=seed + j)
            one = mm(b, data, K=1)
            two = mm(b, data, K=2, em_iterations=cfg["em_iterations"])
            dpo = gshf(b, data, C=0.0)
            single_min[:, j] = one.utilities.min(-1)
            mm_min[:, j] = two.utilities.min(-1)
            same[:, j] = np.abs(one.policy - dpo.policy).max(axis=(1, 2))
            for s in range(B):  # match fitted groups to true ones (label switching)
                errs = [
                    np.linalg.norm(two.thetas[s][list(perm)] - b.group_thetas, axis=1).max()
                    for perm in ((0, 1), (1, 0))
                ]
                k = int(np.argmin(errs))
                em_err[s, j] = errs[k]
                w_err[s, j] = np.abs(
                    two.weights[s][list((0, 1) if k == 0 else (1, 0))] - b.weights
                ).max()
        rep.checks.append(
            Check(
                "single-reward-fails-the-minority",
                bool(np.all(single_min <= v_lib - cfg["single_margin"])),
                "single-reward RLHF (K = 1): min over groups of U_k "
                f"{np.round(single_min.mean(0), 3).tolist()} (mean over seeds) <= max-min value "
                f"{v_lib:.3f} - {cfg['single_margin']} on every seed and n",
            )
        )
        sub = v_lib - mm_min
        fit = loglog_slope(np.asarray(Ns, float), np.maximum(sub, 1e-12), fit_range=(0.0, 1.0))
        rep.slope, rep.slope_ci = fit.slope, (fit.ci_low, fit.ci_high)
        rep.checks.append(
            Check(
                "maxmin-raises-the-minimum",
                bool(np.all(mm_min > single_min)) and sub.mean(0)[-1] < cfg["max_gap"],
                f"MaxMin (K = 2, EM): min_k U_k {np.round(mm_min.mean(0), 4).tolist()} above "
                f"the single reward's on every seed; its gap to the max-min value "
                f"{np.round(sub.mean(0), 4).tolist()} < {cfg['max_gap']} at n = {Ns[-1]} "
                f"(slope {fit.slope:.2f})",
            )
        )
        rep.checks.append(
            Check(
                "em-recovers-the-groups",
                em_err.mean(0)[-1] < cfg["em_tol"]
                and em_err.mean(0)[-1] < em_err.mean(0)[0]
                and w_err.mean(0)[-1] < 0.05,
                f"EM: max_k ||theta_k_hat - theta_k|| (best label matching) "
                f"{np.round(em_err.mean(0), 3).tolist()} falling, < {cfg['em_tol']} at the largest"
                f" n; group weights within {w_err.mean(0)[-1]:.3f} (< 0.05)",
            )
        )
        rep.checks.append(
            Check(
                "k1-is-standard-rlhf",
                float(same.max()) < 1e-10,
                "maxmin-rlhf with K = 1 against gshf-offline with C = 0 (the Gibbs policy of the "
                f"pooled MLE) on the same data: max policy difference {same.max():.1e}",
            )
        )
        rep.checks.append(
            _control(
                "single-reward RLHF through the raise-the-minimum test",
                not (single_min.mean(0)[-1] > v_lib - cfg["max_gap"]),
                f"its gap to the max-min value {v_lib - single_min.mean(0)[-1]:.3f}",
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            ax = plot_regret(
                {"MaxMin-RLHF (K = 2)": sub, "single reward (K = 1, control)": v_lib - single_min},
                x=np.asarray(Ns, float),
                xlabel="comparisons n",
                ylabel="max-min value - min_k U_k(pi)",
                title=f"{self.name} [{rep.scale}]",
            )
            ax.set_xscale("log")
            ax.set_yscale("log")
            save_claim_figure(ax, plot)


register_validation(
    MaxMinEgalitarian(
        name="maxmin-rlhf-egalitarian",
        statement=(
            "With a majority and a minority group of users, the single-reward RLHF policy leaves "
            "the minority far below the max-min value; MaxMin-RLHF (EM over BTL groups, then the "
            "max-min KL-regularised policy, exact by its convex dual = the cvxpy primal) raises "
            "the minimum utility toward it, EM recovers the group rewards, and K = 1 is "
            "standard RLHF"
        ),
        scales={
            "quick": {
                "bandit": "maxmin-groups",
                "n": [1000, 4000],
                "seeds": 3,
                "em_iterations": 15,
                "single_margin": 0.5,
                "max_gap": 0.05,
                "em_tol": 0.4,
            },
            "full": {
                "bandit": "maxmin-groups",
                "n": [1000, 2000, 4000],
                "seeds": 8,
                "em_iterations": 15,
                "single_margin": 0.5,
                "max_gap": 0.02,
                "em_tol": 0.2,
            },
        },
    ),
    controls=("maxmin-utilitarian",),
    papers=("002-004#E9",),
)


# ------------------------------------------------------------------ 10. RLHS
class RLHSHindsight(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.experiment import run
        from theorylab.mdps import make
        from theorylab.mdps.kl_bandit import rlhs_ratings
        from theorylab.stats import loglog_slope

        Ns, B = cfg["n"], cfg["seeds"]
        common = dict(dataset_size=Ns, seeds=B, seed=seed)
        fore = run("gshf-offline", "rlhs:feedback=foresight", C=0.0, **common).values
        hind = run("rlhs", "rlhs:feedback=foresight", accuracy=1.0, **common).values
        b = make("rlhs")
        u, f = rlhs_ratings(b.p_good)
        eta, sc = b.eta, b.scale

        def gibbs(r):  # written out here
            w = b.ref * np.exp((r - r.max(-1, keepdims=True)) / eta)
            return w / w.sum(-1, keepdims=True)

        star = gibbs(sc * u)

        def true_gap(pi):  # eta E_rho KL(pi || pi*), the identity, not the library's value
            return float(eta * b.rho @ (pi * np.log(pi / star)).sum(-1))

        fore_pop = gibbs(sc * f)  # the population RLHF policy under foresight ratings
        rating_gain = float(b.rho @ ((fore_pop - star) * f).sum(-1))
        rep.checks.append(
            Check(
                "foresight-learns-sycophancy",
                bool(np.all(fore >= cfg["fore_floor"]))
                and fore_pop[1, 1] > 0.9
                and rating_gain > 0,
                f"DPO on foresight comparisons: true-utility sub-optimality "
                f"{np.round(fore.mean(0), 3).tolist()} >= {cfg['fore_floor']} on every seed and n; "
                "its population policy praises a bad item with probability "
                f"{fore_pop[1, 1]:.3f} and gains {rating_gain:.3f} in foresight rating over the "
                f"true optimum (Goodhart) while losing {true_gap(fore_pop):.3f} in true utility",
            )
        )
        fit = loglog_slope(np.asarray(Ns, float), hind, fit_range=(0.0, 1.0))
        rep.slope, rep.slope_ci = fit.slope, (fit.ci_low, fit.ci_high)
        rep.checks.append(
            Check(
                "hindsight-maximises-true-utility",
                fit.ci_high <= -0.5 and hind.mean(0)[-1] < cfg["hind_max"],
                f"RLHS (hindsight, accuracy 1): sub-optimality {np.round(hind.mean(0), 4).tolist()}"
                f", < {cfg['hind_max']} at n = {Ns[-1]}, slope {fit.slope:.2f} [{fit.ci_low:.2f},"
                f" {fit.ci_high:.2f}] <= -0.5",
            )
        )
        acc = cfg["accuracies"]
        pop = [true_gap(gibbs(sc * (a * u + (1 - a) * f))) for a in acc]
        lib = [b.suboptimality(gibbs(sc * (a * u + (1 - a) * f))) for a in acc]
        samp = [
            float(
                run(
                    "rlhs", "rlhs", dataset_size=[Ns[-1]], seeds=B, seed=seed, accuracy=a
                ).values.mean()
            )
            for a in acc
        ]
        rep.checks.append(
            Check(
                "simulator-accuracy-helps",
                bool(np.all(np.diff(pop) < 0))
                and max(abs(x - y) for x, y in zip(pop, lib, strict=True)) < 1e-12
                and bool(np.all(np.diff(samp) < 0)),
                f"simulated hindsight at accuracy {acc}: population sub-optimality "
                f"{np.round(pop, 4).tolist()} (eta E KL(pi || pi*), equal to the library's value to"
                f" 1e-12) and sampled at n = {Ns[-1]} {np.round(samp, 4).tolist()}, both strictly "
                "falling in the accuracy",
            )
        )
        ffit = loglog_slope(np.asarray(Ns, float), fore, fit_range=(0.0, 1.0))
        rep.checks.append(
            _control(
                "DPO on foresight comparisons through the hindsight test",
                not (ffit.ci_high <= -0.5 and fore.mean(0)[-1] < cfg["hind_max"]),
                f"its sub-optimality {fore.mean(0)[-1]:.3f}, slope {ffit.slope:.2f}",
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            ax = plot_regret(
                {"RLHS (hindsight)": hind, "RLHF on foresight (control)": fore},
                x=np.asarray(Ns, float),
                xlabel="comparisons n",
                ylabel="true-utility sub-optimality",
                title=f"{self.name} [{rep.scale}]",
            )
            ax.set_xscale("log")
            ax.set_yscale("log")
            save_claim_figure(ax, plot)


register_validation(
    RLHSHindsight(
        name="rlhs-hindsight-beats-foresight",
        statement=(
            "On a two-step model where praise changes the user's belief, RLHF on foresight "
            "ratings learns the sycophantic message (high rating, low true utility) while RLHS's "
            "hindsight labels drive the true-utility sub-optimality to 0, and simulated "
            "hindsight helps more the more accurate the simulator"
        ),
        scales={
            "quick": {
                "n": [200, 800, 3200],
                "seeds": 4,
                "fore_floor": 1.5,
                "hind_max": 0.01,
                "accuracies": [0.0, 0.25, 0.5, 0.75, 1.0],
            },
            "full": {
                "n": [200, 800, 3200, 12800],
                "seeds": 32,
                "fore_floor": 1.5,
                "hind_max": 0.005,
                "accuracies": [0.0, 0.25, 0.5, 0.75, 1.0],
            },
        },
    ),
    controls=("rlhs-foresight-labels",),
    papers=("002-004#E14",),
)


# ------------------------------------------------------------------ issue 29 (drpo29): DR-PO
class DRPOCoveredPolicy(ScaledClaim):
    """DR-PO (002-004#E4): dataset resets reach V(pi_D) - eps on a combination lock; the
    no-reset baseline with the same rollouts does not (``algorithms/preference/drpo.py``)."""

    def _run(self, cfg, seed, plot, rep):
        from theorylab.experiment import run
        from theorylab.mdps.families.chain import combination_code
        from theorylab.mdps.registry import make

        eps, K = cfg["eps"], cfg["iterations"]
        finals, base_finals, pd_errors, closed_errors, curves = [], [], [], [], {}
        for H in cfg["H"]:
            spec = f"combination-lock:H={H},A={cfg['A']},code_seed={cfg['code_seed']}"
            mdp, A = make(spec), cfg["A"]
            code = combination_code(H, A, cfg["code_seed"])
            for noise in cfg["noise"]:
                v_d = (1 - noise + noise / A) ** H  # pi_D's value on the lock, written out
                for i in range(cfg["seeds"]):
                    kw = dict(iterations=K, noise=noise, pairs=cfg["pairs"])
                    kw.update(resets=cfg["resets"], sample_seed=seed * 1000 + i)
                    res = run("dr-po", mdp, **kw)
                    base = run("dr-po", mdp, reset="initial", **kw)
                    pd_errors.append(abs(res.config["value_pi_D"] - v_d))
                    pi_k = res.policies[-1]  # (H, S, A); path state h is state h
                    closed = float(np.prod(pi_k[np.arange(H), np.arange(H), code]))
                    closed_errors.append(abs(closed - res.objective[-1]))
                    finals.append((H, noise, i, float(res.objective[-1]), v_d))
                    base_finals.append((H, noise, i, float(base.objective[-1]), v_d))
                    if i == 0:
                        curves[f"DR-PO, H={H}, noise={noise}"] = res.objective
                        curves[f"no reset, H={H}, noise={noise}"] = base.objective

        def margin(rows):  # min over runs of V(pi_K) - (V(pi_D) - eps)
            return min(v - (vd - eps) for *_, v, vd in rows)

        m, mb = margin(finals), margin(base_finals)
        worst = min(finals, key=lambda t: t[3] - t[4])
        rollouts = K * cfg["resets"] * cfg["A"]
        rep.checks.extend(
            [
                Check(
                    "V(pi_D) exact = (1 - noise + noise / A)^H",
                    max(pd_errors) <= 1e-12,
                    f"max |library - closed form| = {max(pd_errors):.2e} (tolerance 1e-12)",
                    {"max_error": max(pd_errors)},
                ),
                Check(
                    "V(pi_K) exact = prod_h pi_K(code_h | path h)",
                    max(closed_errors) <= 1e-12,
                    f"max |policy evaluation - closed form| = {max(closed_errors):.2e}",
                    {"max_error": max(closed_errors)},
                ),
                Check(
                    f"DR-PO: V(pi_K) >= V(pi_D) - {eps} on every run",
                    m >= 0,
                    f"{len(finals)} runs ({rollouts} rollouts each); min V(pi_K) - V(pi_D) = "
                    f"{m - eps:+.4f} (H={worst[0]}, noise={worst[1]}, run {worst[2]}: "
                    f"V(pi_K) = {worst[3]:.4f}, V(pi_D) = {worst[4]:.4f})",
                    {"finals": finals},
                ),
                _control(
                    "no-reset baseline (rollouts from rho_0), same budget",
                    mb < 0,
                    f"max V(pi_K) = {max(t[3] for t in base_finals):.2e} against V(pi_D) >= "
                    f"{min(t[4] for t in base_finals):.4f}",
                ),
            ]
        )
        if plot:
            from theorylab.plotting import plot_policy_path

            ax = plot_policy_path(
                curves,
                ylabel="V^pi_k(rho_0) (exact, true reward)",
                title="DR-PO: dataset resets vs rollouts from rho_0 (combination lock)",
            )
            save_claim_figure(ax, plot)


register_validation(
    DRPOCoveredPolicy(
        name="drpo-matches-covered-policy",
        statement=(
            "DR-PO (Chang et al. 2024; dr-po through tl.run): with a BTL outcome-reward MLE "
            "fitted on trajectory pairs of pi_D = (1 - noise) pi* + noise Unif and sampled NPG "
            "whose rollouts reset to dataset states, the output's exact value V(pi_K) >= "
            "V(pi_D) - 0.05 on every seed on the combination lock (A = 4), for pi_D with noise "
            "0.1 and 0.3 (V(pi_D) = (1 - noise + noise/A)^H, checked in closed form; V(pi_K) "
            "checked against prod_h pi_K(code_h | path_h)); the no-reset baseline (rollouts "
            "from rho_0, the same number of rollouts) stays below V(pi_D) - 0.05. Quick: H = 8, "
            "4 seeds; full: H = 8 and 10, 16 seeds."
        ),
        scales={
            "quick": {
                "H": [8],
                "A": 4,
                "code_seed": 3,
                "noise": [0.1, 0.3],
                "pairs": 4000,
                "resets": 64,
                "iterations": 40,
                "eps": 0.05,
                "seeds": 4,
            },
            "full": {
                "H": [8, 10],
                "A": 4,
                "code_seed": 3,
                "noise": [0.1, 0.3],
                "pairs": 4000,
                "resets": 64,
                "iterations": 60,
                "eps": 0.05,
                "seeds": 16,
            },
        },
    ),
    controls=("drpo-no-dataset-reset",),
    papers=("002-004#E4",),
)


# ------------------------------------------------------------------ issue 29 (drpo29): PARL
def _relative_error(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


class PARLHypergradient(ScaledClaim):
    """PARL (000#70 / 002-004#E13): the implicit hypergradient against central finite
    differences of the exact bilevel objective; gradient-norm decay at the O(1/T) rate
    (``algorithms/preference/parl.py``)."""

    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.preference import parl as P
        from theorylab.experiment import run
        from theorylab.mdps.registry import make

        h = cfg["fd_step"]
        fd_errors, myopic_errors, lower_errors, ascents = [], [], [], []
        for i in range(cfg["mdps"]):
            spec = f"random:S={cfg['S']},A={cfg['A']},gamma=0.9,seed={seed * 100 + i}"
            mdp = make(spec).with_objective(horizon=None, gamma=0.9)
            for feats in ("tabular", cfg["features"]):
                prob = P.bilevel_problem(mdp, features=feats, seed=i)
                rng = np.random.default_rng(seed * 100 + i)
                theta = rng.standard_normal(prob.phi.shape[-1])
                lower_errors.append(
                    float(
                        np.abs(
                            P.lower_level(prob, theta)
                            - P.lower_level_by_value_iteration(prob, theta)
                        ).max()
                    )
                )
                fd = np.array(  # central differences of the exact bilevel objective
                    [
                        (
                            P.upper_objective(prob, theta + h * e)
                            - P.upper_objective(prob, theta - h * e)
                        )
                        / (2 * h)
                        for e in np.eye(theta.size)
                    ]
                )
                fd_errors.append(_relative_error(P.hypergradient(prob, theta)[0], fd))
                myopic_errors.append(
                    _relative_error(P.hypergradient(prob, theta, myopic=True)[0], fd)
                )
            kw = dict(iterations=cfg["iterations"], alpha=cfg["alpha"])
            ascents.append((run("parl", spec, **kw), run("parl", spec, myopic=True, **kw)))
        alpha, tol = cfg["alpha"], cfg["fd_tol"]
        worst_step, worst_rate, decay, gaps = np.inf, np.inf, [], []
        for res, myo in ascents:
            F, g2 = res.regularised, np.array(res.config["grad_norm"]) ** 2
            worst_step = min(worst_step, float(np.min(np.diff(F))))
            T = np.arange(1, F.size)
            bound = 2 * (F[1:] - F[0]) / (alpha * T)  # the ascent lemma's O(1/T), written out
            worst_rate = min(worst_rate, float(np.min(bound - np.minimum.accumulate(g2[:-1]))))
            decay.append(float(np.sqrt(g2[-1] / g2[0])))
            gaps.append(float(F[-1] - myo.regularised[-1]))
        rep.checks.extend(
            [
                Check(
                    "lower level: soft policy iteration = soft value iteration",
                    max(lower_errors) <= 1e-10,
                    f"max |pi_theta difference| = {max(lower_errors):.2e} (tolerance 1e-10)",
                    {"max_error": max(lower_errors)},
                ),
                Check(
                    "hypergradient = central finite differences of F",
                    max(fd_errors) <= tol,
                    f"max relative error {max(fd_errors):.2e} over {len(fd_errors)} problems "
                    f"(step {h:g}; tolerance {tol:g})",
                    {"errors": fd_errors},
                ),
                Check(
                    "gradient ascent increases F on every step",
                    worst_step >= -1e-12,
                    f"min F(theta_t+1) - F(theta_t) = {worst_step:.2e}",
                    {"min_increment": worst_step},
                ),
                Check(
                    "min_{t<T} ||grad F||^2 <= 2 (F_T - F_0) / (alpha T) for every T",
                    worst_rate >= -1e-12,
                    f"min slack {worst_rate:.2e} over T = 1..{cfg['iterations']}",
                    {"min_slack": worst_rate},
                ),
                Check(
                    "gradient norm decays: ||grad F(theta_K)|| <= 1e-2 ||grad F(theta_0)||",
                    max(decay) <= 1e-2,
                    f"ratios {np.round(decay, 6).tolist()} at K = {cfg['iterations']}",
                    {"ratios": decay},
                ),
                Check(
                    "the myopic gradient ends at a worse point (F lower)",
                    min(gaps) > 1e-3,
                    f"F_PARL(K) - F_myopic(K) per MDP: {np.round(gaps, 4).tolist()}",
                    {"gaps": gaps},
                ),
                _control(
                    "myopic gradient (trajectory distribution held fixed) through the FD test",
                    min(myopic_errors) > tol,
                    f"min relative error {min(myopic_errors):.2e}",
                ),
            ]
        )
        if plot:
            from theorylab.plotting import plot_policy_path

            res, myo = ascents[0]
            ax = plot_policy_path(
                {
                    "PARL: ||grad F(theta_t)||": np.array(res.config["grad_norm"]),
                    "myopic ascent: ||grad F(theta_t)||": np.array(myo.config["grad_norm"]),
                    "2 (F_t - F_0) / (alpha t) (sqrt)": np.sqrt(
                        np.r_[np.nan, 2 * (res.regularised[1:] - res.regularised[0])]
                        / (alpha * np.maximum(np.arange(res.regularised.size), 1))
                    ),
                },
                ylabel="exact hypergradient norm",
                title="PARL: bilevel gradient ascent with the implicit hypergradient",
                logy=True,
            )
            save_claim_figure(ax, plot)


register_validation(
    PARLHypergradient(
        name="parl-hypergradient-exact",
        statement=(
            "PARL (Chakraborty et al. 2024; parl through tl.run): on random discounted MDPs "
            "(S = 5, A = 3, gamma = 0.9) with the upper objective the BTL log-likelihood of "
            "comparisons drawn from the soft-optimal (tau = 0.5) lower-level policy's own "
            "state-action distribution (ridge 0.01), the hypergradient by implicit "
            "differentiation of the soft Bellman fixed point equals central finite differences "
            "of the exact bilevel objective (relative error <= 1e-5; tabular and 4 random "
            "features), gradient ascent (alpha = 1) increases F on every step and satisfies "
            "min_{t<T} ||grad F||^2 <= 2 (F_T - F_0) / (alpha T) at every T (the O(1/T) "
            "stationarity rate), its gradient norm falls below 1e-2 of the start, and the "
            "myopic gradient (the trajectory distribution held fixed) ends at a lower F. "
            "Quick: 2 MDPs, K = 400; full: 8 MDPs, K = 800."
        ),
        scales={
            "quick": {
                "mdps": 2,
                "S": 5,
                "A": 3,
                "features": 4,
                "fd_step": 1e-4,
                "fd_tol": 1e-5,
                "alpha": 1.0,
                "iterations": 400,
            },
            "full": {
                "mdps": 8,
                "S": 5,
                "A": 3,
                "features": 4,
                "fd_step": 1e-4,
                "fd_tol": 1e-5,
                "alpha": 1.0,
                "iterations": 800,
            },
        },
    ),
    controls=("parl-myopic-gradient",),
    papers=("000#70", "002-004#E13"),
)
