"""Claims of the average-reward family (seed-coverage family 8).

1. ``ucrl2-regret-riverswim`` -- UCRL2 (Jaksch, Ortner & Auer 2010; the family's anchor) on
   RiverSwim, one trajectory of T steps per seed, through ``tl.run(kind="average-reward")``:
   (i) coverage: the true model lies in every epoch's confidence set M_k (both radii, every pair)
   on at least 1 - delta of the seeds; (ii) optimism: EVI's upper gain estimate
   max_s(u_(i+1) - u_i) >= g* at every epoch on at least 1 - delta of the seeds (g* by the
   average-reward LP, the independent answer); (iii) sublinear: the log-log slope of the mean
   regret over the last two decades [T/100, T] is at most 0.75 (the mean regret clipped at 1:
   a regret that stopped growing is sublinear); (iv) at most S A log2(8 T / (S A)) epochs
   (Proposition 18: the doubling rule); (v) UCRL2's mean regret at T plus two standard
   errors is below the uniform agent's exact regret rate ``T (g* - g_uniform)``; (vi) the bound
   card ``jaksch2010-ucrl2-thm2`` (34 D S sqrt(A T log(T/delta))) on at least 1 - delta of the
   seeds: VACUOUS while it is at or above the trivial bound T g* (it is informative from
   T ~ 5e7 on S = 3), a real check at full scale (T = 1e8). Full scale adds, for information, the
   regret at T = 1e7 on RiverSwim S = 3..6 against the diameter D and the span sp(h*).
   Controls: ``ucrl2-uniform-null`` (the uniform agent in UCRL2's place: no epochs, linear
   regret) and ``ucrl2-radius-over-n`` (both radii divided by N instead of sqrt(N): the true
   model leaves the confidence sets once counts pass ~10^3), each of which FAILs the claim.
2. ``plugin-average-tmix-linear`` -- seed row 001#1 (Wang, Blanchet & Glynn 2023), the estimator
   reconstructed as the perturbed plug-in of the discounted reduction
   (``algorithms/average_reward/generative.py``): on lazy versions of a two-state hub MDP
   (t_mix doubled by each halving of 1 - stay), the samples per pair from which 90% of the seeds
   return an eps-optimal policy grow linearly in t_mix (log-log slope in [0.6, 1.4], bootstrap
   interval below 2, the slope of the earlier t_mix^2 bound). Controls:
   ``plugin-average-null`` (a fixed policy whatever the samples) and
   ``plugin-average-no-tmix-discount`` (gamma = 1 - eps: t_mix dropped from the reduction's
   horizon), each of which FAILs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.average_reward import samples_to_eps
from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.reference import informative_from
from theorylab.validations.registry import register_validation

UCRL2_BOUND = "jaksch2010-ucrl2-thm2"


def seeds_all(diag: dict[str, np.ndarray], name: str, test) -> np.ndarray:
    """Per seed: every recorded epoch satisfies ``test``; a seed with no epoch recorded fails
    (an algorithm without epochs has no confidence set to cover)."""
    if name not in diag:
        return np.zeros(0, dtype=bool)
    arr = np.asarray(diag[name], dtype=np.float64)  # (B, K) padded with NaN
    out = []
    for row in arr:
        row = row[np.isfinite(row)]
        out.append(row.size > 0 and bool(np.all(test(row))))
    return np.asarray(out, dtype=bool)


def last_decades_slope(steps: np.ndarray, regret: np.ndarray, decades: float = 2.0) -> float:
    """The log-log slope of the mean regret (clipped at 1) between T / 10^decades and T."""
    m = np.maximum(regret.mean(axis=0), 1.0)
    T = steps[-1]
    i = int(np.searchsorted(steps, T / 10**decades))
    return float(np.log10(m[-1] / m[i]) / np.log10(T / steps[i]))


@dataclass(frozen=True)
class UCRL2Regret(ScaledClaim):
    name: str = "ucrl2-regret-riverswim"
    statement: str = (
        "UCRL2 (Jaksch, Ortner & Auer 2010) on RiverSwim, one trajectory of T steps per seed "
        "(delta = 0.05): the true model lies in every epoch's L1/reward confidence set and EVI's "
        "upper gain estimate is >= g* (LP) at every epoch, each on >= 1 - delta of the seeds; "
        "the log-log slope of the mean regret over [T/100, T] is <= 0.75; at most "
        "S A log2(8T/(SA)) epochs (Proposition 18); the mean regret at T "
        "(+ 2 s.e.) is below the uniform agent's exact T (g* - g_unif); regret <= 34 D S "
        "sqrt(A T log(T/delta)) (Theorem 2) on >= 1 - delta of the seeds, VACUOUS while that is "
        ">= T g* (informative from T ~ 5e7 on S = 3). Quick: S = 3, T = 1e6, 6 seeds (bound "
        "vacuous); full: S = 3, T = 1e8, 4 seeds (bound informative), and regret at T = 1e7 on "
        "S = 3..6 against D and sp(h*) for information."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {"S": 3, "T": 1_000_000, "seeds": 6, "sweep": ()},
            "full": {"S": 3, "T": 100_000_000, "seeds": 4, "sweep": (3, 4, 5, 6)},
        }
    )
    bound: str | None = UCRL2_BOUND
    delta: float = 0.05
    max_slope: float = 0.75

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        import theorylab as tl
        from theorylab.algorithms.planning.average_reward import (
            diameter,
            optimal_gain_bias_lp,
            policy_gain_bias,
        )
        from theorylab.bounds import get_bound
        from theorylab.mdps import make

        mdp = make(f"riverswim:S={cfg['S']}")
        S, A, T, delta = mdp.S, mdp.A, cfg["T"], self.delta
        res = tl.run("ucrl2", mdp, steps=T, seeds=cfg["seeds"], seed=seed, delta=delta)
        g_star = optimal_gain_bias_lp(mdp).gain
        g_unif = policy_gain_bias(mdp, np.full((S, A), 1.0 / A)).gain
        D = diameter(mdp)
        diag = res.diagnostics
        covered = seeds_all(diag, "covered", lambda r: r == 1.0)
        optimistic = seeds_all(diag, "gain_upper", lambda r: r >= g_star - 1e-12)
        need = 1.0 - delta
        slope = last_decades_slope(res.steps, res.regret)
        final = res.final()
        mean = float(final.mean())
        se = float(final.std(ddof=1) / np.sqrt(final.size))
        unif = T * (g_star - g_unif)
        card = get_bound(self.bound)
        bound_T = float(card.evaluate(D=D, S=S, A=A, T=T, delta=delta))
        t_inf = informative_from(  # the least T with bound(T) < T g* (the trivial bound)
            lambda t: card.evaluate(D=D, S=S, A=A, T=np.maximum(t, 2.0), delta=delta), g_star
        )
        t_inf = float("inf") if t_inf is None else float(t_inf)
        viol = float(np.mean(final > bound_T))
        epochs = int(np.isfinite(diag.get("epoch_start", np.zeros((1, 0)))).sum(axis=1).max())
        epoch_cap = S * A * np.log2(8 * T / (S * A))  # Proposition 18 [M]: m <= S A log2(8T/SA)
        checks = [
            Check(
                "the true model lies in every epoch's confidence set",
                covered.size > 0 and covered.mean() >= need,
                f"{int(covered.sum())}/{covered.size} seeds covered at every epoch (need "
                f">= {need:g}); up to {epochs} epochs per seed",
                {"covered_fraction": float(covered.mean()) if covered.size else 0.0},
            ),
            Check(
                "optimism: EVI's upper gain estimate >= g* at every epoch",
                optimistic.size > 0 and optimistic.mean() >= need,
                f"{int(optimistic.sum())}/{optimistic.size} seeds optimistic at every epoch "
                f"(g* = {g_star:.6f} by the LP)",
                {"optimistic_fraction": float(optimistic.mean()) if optimistic.size else 0.0},
            ),
            Check(
                f"sublinear regret: log-log slope over [T/100, T] <= {self.max_slope:g}",
                slope <= self.max_slope,
                f"slope {slope:.3f} (mean regret {mean:.1f} at T = {T:.3g})",
                {"slope": slope},
            ),
            Check(
                "doubling epochs: at most S A log2(8 T / (S A)) of them",
                0 < epochs <= epoch_cap,
                f"{epochs} epochs at most over the seeds (cap {epoch_cap:.0f}; T = {T:.3g})",
                {"epochs": epochs, "cap": float(epoch_cap)},
            ),
            Check(
                "UCRL2 beats the uniform agent",
                mean + 2 * se < unif,
                f"mean regret {mean:.1f} +- {se:.1f} (s.e.) vs uniform's exact T (g* - g_unif) "
                f"= {unif:.1f} (g_unif = {g_unif:.6f})",
                {"regret": mean, "uniform_regret": unif},
            ),
        ]
        if bound_T >= T * g_star:
            checks.append(
                Check(
                    f"regret <= Theorem 2's bound ({self.bound})",
                    True,
                    f"VACUOUS at T = {T:.3g}: 34 D S sqrt(A T log(T/delta)) = {bound_T:.4g} >= "
                    f"the trivial bound T g* = {T * g_star:.4g} (D = {D:.4f}); informative from "
                    f"T = {t_inf:.3g}",
                    {"bound": bound_T, "informative_from_T": t_inf},
                    status="VACUOUS",
                )
            )
        else:
            checks.append(
                Check(
                    f"regret <= Theorem 2's bound ({self.bound})",
                    viol <= delta,
                    f"violation rate {viol:.3f} (<= delta = {delta:g}); bound {bound_T:.4g} < "
                    f"trivial T g* = {T * g_star:.4g}; max regret {final.max():.1f} (informative "
                    f"from T = {t_inf:.3g})",
                    {"bound": bound_T, "violation_rate": viol, "informative_from_T": t_inf},
                )
            )
        rep.violation_rate = viol
        if cfg["sweep"]:
            checks.append(self._sweep(cfg, seed))
        rep.checks.extend(checks)
        if plot:
            from theorylab.plotting import plot_regret

            uniform = tl.run("uniform-average", mdp, steps=T, seeds=cfg["seeds"], seed=seed)
            steps = res.steps.astype(float)
            ax = plot_regret(
                {"UCRL2": res.regret, "uniform agent": uniform.regret},
                {
                    "Thm 2: 34 D S sqrt(A T log(T/delta))": card.evaluate(
                        D=D, S=S, A=A, T=np.maximum(steps, 2.0), delta=delta
                    ),
                    "trivial bound T g*": steps * g_star,
                },
                x=res.steps,
                xlabel="step t",
                title=f"UCRL2 on {mdp.name.split(',')[0]} (D = {D:.2f}, sp(h*) = {res.span:.2f})",
                loglog=True,
            )
            save_claim_figure(ax, plot)

    def _sweep(self, cfg: dict, seed: int) -> Check:
        import theorylab as tl
        from theorylab.algorithms.planning.average_reward import diameter
        from theorylab.mdps import make

        T = 10_000_000
        rows, Ds, regrets = [], [], []
        for S in cfg["sweep"]:
            mdp = make(f"riverswim:S={S}")
            res = tl.run("ucrl2", mdp, steps=T, seeds=2, seed=seed, delta=self.delta)
            D = diameter(mdp)
            Ds.append(D)
            regrets.append(max(float(res.final().mean()), 1.0))
            rows.append(f"S={S}: D={D:.2f}, sp(h*)={res.span:.2f}, regret={regrets[-1]:.0f}")
        slope = float(np.polyfit(np.log(Ds), np.log(regrets), 1)[0])
        # along RiverSwim D grows with S, so Theorem 2's D S grows faster than D
        ds = np.asarray(Ds) * np.asarray(cfg["sweep"], dtype=float)
        bound_slope = float(np.polyfit(np.log(Ds), np.log(ds), 1)[0])
        return Check(
            "regret at T = 1e7 against the diameter (information)",
            True,
            "; ".join(rows)
            + f"; log-log slope in D {slope:.2f} (Theorem 2's D S along this family: "
            f"{bound_slope:.2f}; at T = 1e7 the larger chains are still in their burn-in)",
            {"diameter": Ds, "regret": regrets, "slope_in_D": slope, "bound_slope": bound_slope},
            status="INFO",
        )


register_validation(
    UCRL2Regret(),
    controls=("ucrl2-uniform-null", "ucrl2-radius-over-n"),
)


# ----------------------------------------------------------------------------- 001#1
def hub_mdp():
    """Two states, two actions: at the hub (state 0) action 0 moves on with probability 0.6
    and pays 0.05, action 1 moves on with 0.5 and pays 0.1; state 1 returns with 0.5 and pays 1
    (action 0) or 0.9 (action 1). Gains 0.5682 (optimal, action 0 at the hub) and 0.55: an
    eps = 0.01-optimal policy must tell the hub actions apart, and the myopic choice (action 1
    pays more now) is the wrong one: a discounted reduction needs a horizon of ~2 t_mix."""
    from theorylab.mdps.tabular import TabularMDP

    P = np.zeros((2, 2, 2))  # (S, A, S)
    P[0, 0], P[0, 1], P[1, 0], P[1, 1] = [0.4, 0.6], [0.5, 0.5], [0.5, 0.5], [0.5, 0.5]
    R = np.array([[0.05, 0.1], [1.0, 0.9]])  # (S, A)
    return TabularMDP(P, R, horizon=20, name="hub")


@dataclass(frozen=True)
class PluginTmixLinear(ScaledClaim):
    name: str = "plugin-average-tmix-linear"
    statement: str = (
        "Optimal sample complexity for average reward (Wang, Blanchet & Glynn 2023; seed row "
        "001#1), the estimator reconstructed as the perturbed plug-in of the discounted "
        "reduction gamma = 1 - eps / t_mix: on lazy versions stay I + (1 - stay) P of a two-state "
        "hub MDP whose two hub actions differ by 0.018 in gain (eps = 0.01; the myopic action is "
        "the wrong one), the reduction returns a gain-optimal policy on the exact model for "
        "stay up to 0.992 (t_mix up to ~90), the samples per "
        "pair from which >= 90% of seeds return an eps-optimal policy (exact gain gap, g* by the "
        "LP) are finite at every laziness, and grow with t_mix (by enumeration of the "
        "deterministic policies) with log-log slope in [0.6, 1.4] whose bootstrap 95% interval "
        "lies below 2 (the earlier O~(S A t_mix^2 / eps^2) bound's slope). Quick: stay in "
        "{0.75, 0.9375, 0.984375} (t_mix 3, 11, 45), 40 seeds, 31 n from 100 to 4e5; full: stay "
        "in {0.75, 0.875, 0.9375, 0.96875, 0.984375}, 100 seeds, 73 n from 100 to 1e6."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {
                "stays": (0.75, 0.9375, 0.984375),
                "seeds": 40,
                "n_max": 400_000,
                "points": 31,
            },
            "full": {
                "stays": (0.75, 0.875, 0.9375, 0.96875, 0.984375),
                "seeds": 100,
                "n_max": 1_000_000,
                "points": 73,
            },
        }
    )
    eps: float = 0.01
    level: float = 0.9
    exact_stays: tuple[float, ...] = (0.0, 0.5, 0.75, 0.875, 0.9375, 0.96875, 0.984375, 0.9921875)
    slope_range: tuple[float, float] = (0.6, 1.4)

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        import theorylab as tl
        from theorylab.algorithms.average_reward.generative import discount_for, plugin_policy
        from theorylab.algorithms.planning.average_reward import (
            lazy,
            mixing_time,
            model_arrays,
            policy_gain_bias,
        )

        hub = hub_mdp()
        exact = []
        for stay in self.exact_stays:  # the reduction on the exact model (n = infinity)
            mdp = lazy(hub, stay)
            P, R = model_arrays(mdp)
            gamma = discount_for(self.eps, mixing_time(mdp))
            pi, _ = plugin_policy(P, R, gamma, 0.0, np.random.default_rng(0))
            gap = policy_gain_bias(hub, np.array([0, 0])).gain - policy_gain_bias(hub, pi).gain
            exact.append((stay, float(gap), 1.0 / (1.0 - gamma)))
        ns = [int(x) for x in np.unique(np.geomspace(100, cfg["n_max"], cfg["points"]).round())]
        rows, t_mixes, gaps = [], [], []
        for stay in cfg["stays"]:
            mdp = lazy(hub, stay)
            res = tl.run(
                "plugin-average", mdp, samples=ns, seeds=cfg["seeds"], seed=seed, eps=self.eps
            )
            t_mixes.append(float(mixing_time(mdp)))
            gaps.append(res.gain_gap)
            rows.append((stay, res))
        samples = np.asarray(ns, dtype=float)
        need = [samples_to_eps(g, samples, self.eps, self.level) for g in gaps]
        finite = all(np.isfinite(need))
        final_ok = [float((g[:, -1] <= self.eps).mean()) for g in gaps]
        checks = [
            Check(
                "the reduction returns a gain-optimal policy on the exact model",
                all(gap <= 1e-12 for _, gap, _ in exact),
                "; ".join(
                    f"stay {stay:g}: gap {gap:.3g} (horizon {h:.0f})" for stay, gap, h in exact
                ),
                {"exact_gaps": [gap for _, gap, _ in exact]},
            ),
            Check(
                f"an eps-optimal policy on >= {self.level:g} of seeds at the largest n",
                all(f >= self.level for f in final_ok),
                ", ".join(
                    f"stay {stay:g}: {f:.2f}" for (stay, _), f in zip(rows, final_ok, strict=True)
                )
                + f" at n = {ns[-1]}",
                {"final_fraction": final_ok},
            ),
            Check(
                "samples-to-eps is finite at every laziness",
                finite,
                ", ".join(f"t_mix {t:g}: n = {n:g}" for t, n in zip(t_mixes, need, strict=True)),
                {"t_mix": t_mixes, "samples_to_eps": need},
            ),
        ]
        if finite:
            x = np.log(t_mixes)
            slope = float(np.polyfit(x, np.log(need), 1)[0])
            rng = np.random.default_rng(seed + 1)
            boot = []
            for _ in range(400):
                idx = rng.integers(0, cfg["seeds"], size=cfg["seeds"])
                nb = [samples_to_eps(g[idx], samples, self.eps, self.level) for g in gaps]
                if all(np.isfinite(nb)):
                    boot.append(float(np.polyfit(x, np.log(nb), 1)[0]))
            lo, hi = np.percentile(boot, [2.5, 97.5]) if boot else (np.nan, np.nan)
            S, A = hub.S, hub.A
            ratio = [n / (S * A * t / self.eps**2) for n, t in zip(need, t_mixes, strict=True)]
            checks += [
                Check(
                    f"log-log slope of samples-to-eps in t_mix within {self.slope_range}, "
                    "its 95% interval below 2",
                    self.slope_range[0] <= slope <= self.slope_range[1] and hi < 2.0,
                    f"slope {slope:.3f}, bootstrap 95% [{lo:.3f}, {hi:.3f}] over seeds "
                    f"({len(boot)} resamples); the earlier t_mix^2 bound has slope 2",
                    {"slope": slope, "ci": [float(lo), float(hi)]},
                ),
                Check(
                    "samples-to-eps / (S A t_mix / eps^2) (information: the implied constant)",
                    True,
                    ", ".join(f"{r:.3g}" for r in ratio),
                    {"ratio": ratio},
                    status="INFO",
                ),
            ]
            rep.slope, rep.slope_ci = slope, (float(lo), float(hi))
        rep.checks.extend(checks)
        if plot and finite:
            from theorylab.plotting import plot_lines

            t = np.asarray(t_mixes)
            fit = np.polyfit(np.log(t), np.log(need), 1)
            ax = plot_lines(
                t,
                {
                    "samples per pair to eps-optimal (90% of seeds)": np.asarray(need),
                    f"fit: slope {slope:.2f}, bootstrap 95% [{lo:.2f}, {hi:.2f}]": np.exp(
                        np.polyval(fit, np.log(t))
                    ),
                    "earlier bound's rate t_mix^2 (from the first point)": need[0]
                    * (t / t[0]) ** 2,
                },
                xlabel="t_mix (enumerated)",
                ylabel="n per (s, a)",
                title="plug-in on the discounted reduction, lazy hub MDP (eps = 0.01)",
                logx=True,
                logy=True,
            )
            save_claim_figure(ax, plot)


register_validation(
    PluginTmixLinear(),
    controls=("plugin-average-null", "plugin-average-no-tmix-discount"),
    papers=("001#1",),
)


# ----------------------------------------------------------------------------- 000#37 LOOP
def log_slope(x: np.ndarray, y: np.ndarray, lo: float, hi: float) -> float:
    """The log-log slope of ``y`` (clipped at 1) between the grid points nearest ``lo`` and
    ``hi`` of ``x``."""
    y = np.maximum(np.asarray(y, dtype=np.float64), 1.0)
    i, j = int(np.searchsorted(x, lo)), int(np.searchsorted(x, hi)) - 1
    j = min(max(j, i + 1), x.size - 1)
    return float(np.log(y[j] / y[i]) / np.log(x[j] / x[i]))


@dataclass(frozen=True)
class LoopRegret(ScaledClaim):
    """LOOP (seed row 000#37) on a family of chains of growing bias span (module docstring)."""

    name: str = "loop-regret-span-switches"
    statement: str = (
        "LOOP (He, Zhong & Yang 2024; seed row 000#37), tabular instance reconstructed (L1 balls "
        "from the likelihood ball, span-truncated optimistic EVI with H = 2 sp(h*), re-planning "
        "when det diag(1 + N) doubles), on RiverSwim chains of growing length (sp(h*) 2.1 to 9.2), "
        "one trajectory of T steps per seed (delta = 0.05): on every chain the true model lies in "
        "every switch's confidence set and the optimistic gain is >= g* (LP) at every switch, "
        "each on >= 1 - delta of the seeds; the log-log slope of the mean regret over [T/100, T] "
        "is <= 0.75 (sublinear; sqrt(T) has 1/2) and the mean regret at T (+ 2 s.e.) is below the "
        "uniform agent's exact T (g* - g_unif); the policy switches stay below "
        "1 + S A log2(1 + T / (S A)) (determinant doubling) and grow logarithmically (log-log "
        "slope in t over [T/100, T] <= 0.25, a linear fit in ln t reported); the regret at T "
        "grows with sp(h*) (log-log slope over the chains > 0, bootstrap 95% lower end > 0). "
        "Quick: S = 3..6, T = 2e5, 6 seeds; full: S = 3..8, T = 1e6, 8 seeds."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {"sizes": (3, 4, 5, 6), "T": 200_000, "seeds": 6},
            "full": {"sizes": (3, 4, 5, 6, 7, 8), "T": 1_000_000, "seeds": 8},
        }
    )
    bound: str | None = "he2024-loop-regret"
    algorithm: str = "loop"
    family: str = "riverswim"
    delta: float = 0.05
    max_slope: float = 0.75
    max_switch_slope: float = 0.25
    span_factor: float = 2.0

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        import theorylab as tl
        from theorylab.algorithms.planning.average_reward import (
            optimal_gain_bias_lp,
            policy_gain_bias,
        )
        from theorylab.mdps import make

        T, delta, need = cfg["T"], self.delta, 1.0 - self.delta
        rows = []
        for S in cfg["sizes"]:
            mdp = make(f"{self.family}:S={S}")
            star = optimal_gain_bias_lp(mdp)
            res = tl.run(
                self.algorithm,
                mdp,
                steps=T,
                seeds=cfg["seeds"],
                seed=seed,
                delta=delta,
                span_bound=self.span_factor * star.span,
            )
            g_unif = policy_gain_bias(mdp, np.full((mdp.S, mdp.A), 1.0 / mdp.A)).gain
            rows.append((S, mdp, star, res, g_unif))
        steps = rows[0][3].steps.astype(np.float64)
        cov, opt, slopes, beats, sw_max, sw_slope, fits = [], [], [], [], [], [], []
        for S, _mdp, star, res, g_unif in rows:
            diag = res.diagnostics
            c = seeds_all(diag, "covered", lambda r: r == 1.0)
            o = seeds_all(diag, "gain_upper", lambda r, g=star.gain: r >= g - 1e-9)
            cov.append(float(c.mean()) if c.size else 0.0)
            opt.append(float(o.mean()) if o.size else 0.0)
            slopes.append(log_slope(steps, res.regret.mean(axis=0), T / 100, T))
            final = res.final()
            se = float(final.std(ddof=1) / np.sqrt(final.size))
            beats.append((float(final.mean()), se, T * (star.gain - g_unif)))
            sw = diag.get("switches", np.zeros_like(res.regret))  # (B, G); none: a null agent
            sw_max.append((float(sw[:, -1].max()), float(res.config.get("switch_cap", np.nan))))
            sw_slope.append(log_slope(steps, sw.mean(axis=0), T / 100, T))
            mask = steps >= T / 1000
            fit = np.polyfit(np.log(steps[mask]), sw.mean(axis=0)[mask], 1)
            pred = np.polyval(fit, np.log(steps[mask]))
            resid = sw.mean(axis=0)[mask] - pred
            tot = sw.mean(axis=0)[mask] - sw.mean(axis=0)[mask].mean()
            fits.append((float(fit[0]), float(1.0 - resid @ resid / max(tot @ tot, 1e-12))))
        label = [f"S={r[0]} (sp {r[2].span:.2f})" for r in rows]
        checks = [
            Check(
                "the true model lies in every switch's confidence set",
                min(cov) >= need,
                ", ".join(f"{lab}: {c:.2f}" for lab, c in zip(label, cov, strict=True))
                + f" of seeds (need >= {need:g})",
                {"covered_fraction": cov},
            ),
            Check(
                "optimism: the span-constrained optimistic gain >= g* at every switch",
                min(opt) >= need,
                ", ".join(f"{lab}: {o:.2f}" for lab, o in zip(label, opt, strict=True))
                + " of seeds (g* by the LP)",
                {"optimistic_fraction": opt},
            ),
            Check(
                f"sublinear regret: log-log slope over [T/100, T] <= {self.max_slope:g}",
                max(slopes) <= self.max_slope,
                ", ".join(f"{lab}: {s:.3f}" for lab, s in zip(label, slopes, strict=True))
                + f" (T = {T:.3g}; sqrt(T) has 0.5)",
                {"slope": slopes},
            ),
            Check(
                "LOOP beats the uniform agent on every chain",
                all(m + 2 * se < u for m, se, u in beats),
                ", ".join(
                    f"{lab}: {m:.0f} +- {se:.0f} vs {u:.0f}"
                    for lab, (m, se, u) in zip(label, beats, strict=True)
                ),
                {"regret": [b[0] for b in beats], "uniform_regret": [b[2] for b in beats]},
            ),
            Check(
                "switches <= 1 + dim log2(1 + T L / dim) (determinant doubling)",
                all(0 < m <= cap for m, cap in sw_max),
                ", ".join(
                    f"{lab}: {m:.0f} <= {cap:.0f}"
                    for lab, (m, cap) in zip(label, sw_max, strict=True)
                ),
                {"switches": [m for m, _ in sw_max], "cap": [c for _, c in sw_max]},
            ),
            Check(
                f"switches grow like log T: log-log slope in t over [T/100, T] <= "
                f"{self.max_switch_slope:g}",
                max(sw_slope) <= self.max_switch_slope,
                ", ".join(
                    f"{lab}: slope {s:.3f}, {b:.1f} per unit ln t (R^2 {r2:.3f})"
                    for lab, s, (b, r2) in zip(label, sw_slope, fits, strict=True)
                ),
                {"switch_slope": sw_slope, "per_ln_t": [f[0] for f in fits]},
            ),
        ]
        checks.append(
            Check(
                f"the card {self.bound}'s T exponent (information)",
                True,
                "C sqrt(T): exponent 1/2, C = poly(d, sp(V*)) sqrt(beta) not printed in the "
                f"abstract, so no violation rate; measured slopes {min(slopes):.2f} to "
                f"{max(slopes):.2f} (below 1/2: on these small chains the regret is still "
                "dominated by the gap-dependent, logarithmic regime)",
                {"card_exponent": 0.5},
                status="INFO",
            )
        )
        checks.append(self._span(rows, seed))
        rep.checks.extend(checks)
        if plot:
            from theorylab.plotting import plot_regret

            ax = plot_regret(
                {lab: r[3].regret for lab, r in zip(label, rows, strict=True)},
                {
                    "sqrt(T) (through the largest chain at T)": np.sqrt(steps)
                    * max(beats[-1][0], 1.0)
                    / np.sqrt(T)
                },  # fmt: skip
                x=rows[0][3].steps,
                xlabel="step t",
                title=f"{self.algorithm} on {self.family} chains",
                loglog=True,
            )
            save_claim_figure(ax, plot)

    def _span(self, rows, seed: int) -> Check:
        spans = np.array([r[2].span for r in rows])
        finals = np.stack([r[3].final() for r in rows])  # (chains, B)
        x = np.log(spans)
        slope = float(np.polyfit(x, np.log(np.maximum(finals.mean(axis=1), 1.0)), 1)[0])
        rng = np.random.default_rng(seed + 7)
        boot = []
        for _ in range(400):
            idx = rng.integers(0, finals.shape[1], size=finals.shape[1])
            m = np.maximum(finals[:, idx].mean(axis=1), 1.0)
            boot.append(float(np.polyfit(x, np.log(m), 1)[0]))
        lo, hi = np.percentile(boot, [2.5, 97.5])
        return Check(
            "regret at T grows with sp(h*) (log-log slope over the chains > 0)",
            slope > 0 and lo > 0,
            f"slope {slope:.2f} in sp(h*), bootstrap 95% [{lo:.2f}, {hi:.2f}]; regret "
            + ", ".join(
                f"{s:.2f}: {m:.0f}" for s, m in zip(spans, finals.mean(axis=1), strict=True)
            ),
            {
                "span": spans.tolist(),
                "regret": finals.mean(axis=1).tolist(),
                "slope": slope,
                "ci": [float(lo), float(hi)],
            },  # fmt: skip
        )


register_validation(
    LoopRegret(),
    controls=("loop-zero-radius", "loop-periodic-switch", "loop-uniform-null"),
    papers=("000#37",),
)
register_validation(
    LoopRegret(
        name="loop-mixture-regret",
        statement=(
            "LOOP (seed row 000#37), linear-mixture instance reconstructed (ridge on the one-hot "
            "next state, OFUL ellipsoid over theta in R^3, span-truncated optimistic EVI with "
            "H = 2 sp(h*), re-planning when det Lambda doubles) on riverswim-mixture chains "
            "(theta* = (0.6, 0.2, 0.2); sp(h*) 5.7 to 15.0): the same checks as "
            "loop-regret-span-switches with dim = d = 3 in the switch cap (at most "
            "1 + 3 log2(1 + T)); regret grows with sp(h*). Quick: S = 5..8, T = 2e5, 6 seeds; "
            "full: S = 5, 6, 7, 8, 10, T = 1e6, 8 seeds."
        ),
        scales={
            "quick": {"sizes": (5, 6, 7, 8), "T": 200_000, "seeds": 6},
            "full": {"sizes": (5, 6, 7, 8, 10), "T": 1_000_000, "seeds": 8},
        },
        algorithm="loop-mixture",
        family="riverswim-mixture",
    ),
    controls=("loop-mixture-zero-radius", "loop-periodic-switch", "loop-uniform-null"),
    papers=("000#37",),
)


# ----------------------------------------------------------------------------- 000#38 NeoRL
@dataclass(frozen=True)
class NeoRLAverageCost(ScaledClaim):
    name: str = "neorl-gp-average-cost"
    statement: str = (
        "NeoRL (Sukhija et al. 2024; seed row 000#38), reconstructed on the grid system "
        "gp-dynamics (1-D state, 21 x 5 grid, f = 0.7 x + 0.4 u + a GP draw, noise 0.1, cost "
        "(x - 0.5)^2 + 0.1 u^2): exact GP posterior, optimistic relative VI over the "
        "hallucinated controls eta in [-1, 1] (beta = 2), one trajectory per seed: the log-log "
        "slope of the mean regret over [T/100, T] is <= 0.75 (sublinear); the average cost over "
        "the last T/10 steps is within 0.01 (x c_max, reward units) of the optimal average cost "
        "(the LP on the true dynamics) on >= 90% of the seeds; the regret at T (+ 2 s.e.) is "
        "below the uniform agent's exact T (g* - g_unif). For information: the mean-only planner "
        "(beta = 0) and the posterior's calibration |f - mu| <= beta sigma. Quick: T = 2e4, 4 "
        "seeds; full: T = 2e5, 8 seeds, GP draws seed 0 and 1."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {"T": 20_000, "seeds": 4, "systems": (0,)},
            "full": {"T": 200_000, "seeds": 8, "systems": (0, 1)},
        }
    )
    bound: str | None = "sukhija2024-neorl-regret"
    tail_tolerance: float = 0.01
    level: float = 0.9
    max_slope: float = 0.75

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        import theorylab as tl
        from theorylab.algorithms.planning.average_reward import policy_gain_bias
        from theorylab.mdps import make

        T = cfg["T"]
        checks, curves = [], {}
        for system in cfg["systems"]:
            mdp = make(f"gp-dynamics:seed={system}")
            res = tl.run("neorl", mdp, steps=T, seeds=cfg["seeds"], seed=seed)
            mean_only = tl.run("neorl", mdp, steps=T, seeds=cfg["seeds"], seed=seed, beta=0.0,
                               n_eta=1)  # fmt: skip
            g_star = res.gain_star
            g_unif = policy_gain_bias(mdp, np.full((mdp.S, mdp.A), 1.0 / mdp.A)).gain
            steps = res.steps.astype(np.float64)
            slope = log_slope(steps, res.regret.mean(axis=0), T / 100, T)
            i = int(np.searchsorted(res.steps, 0.9 * T))
            rsum = res.regret  # t g* - sum of rewards: the tail's average gap in reward units
            tail = (rsum[:, -1] - rsum[:, i]) / (steps[-1] - steps[i])  # (B,)
            ok = float(np.mean(tail <= self.tail_tolerance))
            final = res.final()
            mean, se = float(final.mean()), float(final.std(ddof=1) / np.sqrt(final.size))
            unif = T * (g_star - g_unif)
            c_max = float(mdp.gp_cost_scale)
            cal = res.diagnostics.get("calibrated", np.full((1, 1), np.nan))
            cal_frac = float(np.nanmean(cal)) if np.isfinite(cal).any() else 0.0
            tag = f"system {system}"
            checks += [
                Check(
                    f"{tag}: sublinear regret (log-log slope over [T/100, T] <= "
                    f"{self.max_slope:g})",
                    slope <= self.max_slope,
                    f"slope {slope:.3f}; mean regret {mean:.1f} +- {se:.1f} at T = {T:.3g}",
                    {"slope": slope, "regret": mean},
                ),
                Check(
                    f"{tag}: average cost -> the optimum (last T/10 steps within "
                    f"{self.tail_tolerance:g} on >= {self.level:g} of seeds)",
                    ok >= self.level,
                    f"tail gap (reward units) {np.round(tail, 4).tolist()}; optimal average cost "
                    f"{(1 - g_star) * c_max:.4f}, learner's over the tail "
                    f"{np.round((1 - g_star + tail) * c_max, 4).tolist()}",
                    {"tail_gap": tail.tolist(), "fraction": ok},
                ),
                Check(
                    f"{tag}: NeoRL beats the uniform agent",
                    mean + 2 * se < unif,
                    f"{mean:.1f} +- {se:.1f} vs uniform's exact {unif:.1f}",
                    {"uniform_regret": unif},
                ),
                Check(
                    f"{tag}: the mean-only planner and calibration (information)",
                    True,
                    f"beta = 0, eta = 0: regret {float(mean_only.final().mean()):.1f} at T "
                    f"(NeoRL {mean:.1f}); |f - mu| <= beta sigma at every grid pair in "
                    f"{cal_frac:.2f} of the plans (beta = 2 is below the per-pair union bound)",
                    {
                        "mean_only_regret": float(mean_only.final().mean()),
                        "calibrated_fraction": cal_frac,
                    },  # fmt: skip
                    status="INFO",
                ),
            ]
            curves[f"NeoRL, {tag}"] = res.regret
            curves[f"mean-only, {tag}"] = mean_only.regret
        rep.checks.extend(checks)
        if plot:
            from theorylab.plotting import plot_regret

            ax = plot_regret(curves, x=res.steps, xlabel="step t", loglog=True,
                             title="NeoRL on gp-dynamics (exact GP posterior)")  # fmt: skip
            save_claim_figure(ax, plot)


register_validation(
    NeoRLAverageCost(),
    controls=("neorl-uniform-null",),
    papers=("000#38",),
)
