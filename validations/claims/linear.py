r"""Claims about linear and low-rank MDPs, linear bandits and their algorithms.

Registered (``theorylab validate NAME --scale quick|full``):

``lsvi-ucb-onehot-count-bonus`` (exact identity)
    With one-hot features phi(s, a) = e_{s*A+a}, LSVI-UCB's Gram matrix is diagonal:
    (Lambda^k_h)^{-1} = diag(1 / (N^k_h(s, a) + lambda)), its bonus is beta / sqrt(N^k_h(s, a) +
    lambda), and its Q is the tabular recursion Q_h = min{(R_h(s,a) + sum_{s'} N_h(s,a,s')
    V_{h+1}(s')) / (N_h(s,a) + lambda) + beta / sqrt(N_h(s,a) + lambda), H} computed from counts --
    at every episode, for every seed, to round-off (1e-12 relative on the inverse, 1e-9 on Q).
``lsvi-covering-converges-to-vi``
    LSVI without bonus on uniformly covering data (every step h: (s, a) uniform, s' ~ P_h) of a
    linear MDP converges to the value-iteration Q*: the error max |Q_hat - Q*| falls like
    n^(-1/2) in the number n of samples per step (log-log slope in [-0.75, -0.25]); and with
    one-hot features on a deterministic MDP, one sample of every pair and lambda = 1e-9, LSVI *is*
    backward induction (error <= 1e-6).
``lsvi-ucb-sqrt-k-tuned-c``
    LSVI-UCB (Jin et al. 2020, bound ``jin2020-lsvi-ucb``) on a random simplex-feature linear MDP
    (theory.md 7.1) with c = 0.1: regret grows like K^(1/2) (log-log slope CI inside [0.3, 0.7]
    at full scale), stays below C sqrt(d^3 H^3 T iota^2) with C = 1 on >= 1 - delta of the seeds,
    and V^k_1(mu0) >= V*_1(mu0) on every episode (Lemma B.5) on >= 1 - delta of the seeds.
``lsvi-ucb-regret-vs-d``
    LSVI-UCB's regret at fixed K on random simplex linear MDPs grows with d no faster than the
    bound's exponent d^(3/2) (log-log slope of mean final regret against d, over several instances
    per d: CI upper end <= 3/2).
``rep-ucb-recovers-features``
    Rep-UCB (Uehara et al. 2022; bound cited: ``rep-ucb-arxiv``) on a low-rank MDP with hidden
    simplex features and a class of 7 candidates: the MLE selects the true map on >= 1 - delta of
    the seeds at the end, and regret is sublinear (slope CI upper end <= 0.8).
``linucb-sqrt-t``
    LinUCB / OFUL on a linear bandit (d = 5, 20 arms): regret grows like sqrt(T) up to logs (slope
    CI inside [0.3, 0.7]), stays below the ``oful-abbasi2011`` bound on >= 1 - delta of the seeds,
    and the UCB of the played arm's context is optimistic.

Constants, and what failed at the paper's constants (see each claim's ``notes``):

* Jin et al.'s beta = c d H sqrt(iota) has an unspecified absolute c. At c = 1 the bonus exceeds
  H for the first ~(c d H)^2 iota samples in each direction, so on the claim's MDP (d = 3, H = 5)
  the regret is still in its linear burn-in at K = 10^4 (slope 0.97). LSVI-UCB's whole-run
  compiled loop (about 7e5 seed-episodes per CPU-second here) runs it past that:
  ``lsvi-ucb-paper-constant`` at K = 4e6 x 8 seeds (full) finds the burn-in ending near
  K = 1.9e5, a log-log slope of 0.59 and the regret 1.85% of the bound (then informative:
  bound / trivial 0.69); at K = 1e7 (paper) the slope is 0.49. Below c ~ 0.05 optimism fails
  (V^k_1 < V*_1) and LSVI-UCB locks onto a suboptimal policy (linear regret, slope ~0.95).
  c = 0.1 is optimistic at the start state (V^k_1(mu0) >= V*_1(mu0)) on every seed and shows
  the K^(1/2) regime; Lemma B.5's full statement (Q^k_h >= Q*_h at every (h, s, a)) needs
  c >= 0.2 on this MDP (at c = 0.1 it fails somewhere, by up to 0.38, on every seed). The full
  scale records the whole c sweep.
* A fixed instance has a positive gap, so its regret eventually grows like log K: the fitted
  slope drifts down with K (0.67 at K = 3000, 0.44 at 10^4, 0.34 at 2 10^4 with c = 0.1). K^(1/2)
  is the worst-case rate; the claim reads it at K = 10^4, in the instance's sqrt regime.
* One instance's regret curve is piecewise linear: LSVI-UCB plays one policy until the bonus of
  an alternative falls below its gap, then switches (kinks at k ~ 550 and ~1300 on the claim's
  MDP); the slope summarises these plateaus, whose per-episode regret keeps decreasing.
* The bound with C = 1 is far above the regret (regret / bound ~ 1e-2): "below the bound" is a
  weak check; the report gives the implied constant max_seeds Regret / sqrt(d^3 H^3 T iota^2).
* On the hard linear MDP (theory.md 2.4) the d-sweep slope is above 3/2: 2.0 at K = 2000 and
  2.43 (CI [2.38, 2.48]) at the full scale's K = 3000, feature dims 3..7 -- because the larger d
  are still in the burn-in (the per-d slope in K rises from 0.48 at d + 1 = 3 to 0.98 at 7: the
  regret is still linear, and the number of actions 2^(d-1) grows too), so the sweep measures the
  burn-in's growth in d, not the asymptotic exponent. The full scale records it as information;
  the gating test uses the simplex family. The same trap held there (issue 13): at K = 1000 the
  d = 8 runs were still in burn-in (regret ~ K x the null agent's, flat in d), so the frozen and
  random agents passed the one-sided test. The quick scale is a SMOKE test; the full scale
  (K = 6000, d in {2, 3, 4, 6}, 4 instances, 16 seeds) tests `learns` at every (d, instance)
  (ratios to the null agent 0.008-0.405) and measured slope 1.414, CI [1.357, 1.473] (8 seeds:
  [1.340, 1.508], which fails): in the learning regime regret grows with d nearly like d^(3/2).
"""

from __future__ import annotations

import inspect
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.validations.claim import (
    Check,
    Report,
    bound_inputs,
    regret_report,
)
from theorylab.validations.registry import register_validation

# ---------------------------------------------------------------------------- shared helpers


@dataclass(frozen=True)
class LinearScale:
    """Size of one scale: episodes K, seeds B, the slope range the rate test accepts, and
    optionally another instance of the family (``mdp``) or extra parameters."""

    episodes: int
    seeds: int
    slope_range: tuple[float, float] | None = None
    mdp: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    smoke: str | None = None  # this scale is a smoke test; the text says where the real check is
    tests: tuple[str, ...] | None = None  # the tests run at this scale (default: the claim's)


def _recording(cls):
    """A subclass of agent class ``cls`` that keeps its instances (to inspect after ``run``)."""
    instances: list = []

    class Recording(cls):  # type: ignore[misc, valid-type]
        name = cls.name

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            instances.append(self)

    Recording.instances = instances
    Recording.__signature__ = inspect.signature(cls)  # theorylab.run reads it (episodes=K)
    return Recording


def generative_data(mdp, n: int, rngs, *, exhaustive: bool = False):
    """Uniformly covering data: ``n`` samples per step h and seed, ``(B, n, H)`` arrays
    ``(states, actions, rewards, next_states)``.

    Each sample at step h draws (s, a) uniformly (``exhaustive=True`` enumerates every pair once
    instead, n = S*A), s' ~ P_h(.|s, a) and r from the reward model. Steps are independent (they
    are not chained into trajectories: LSVI regresses each step on its own samples). Seed b draws
    from ``rngs[b]`` only.
    """
    S, A, H = mdp.S, mdp.A, mdp.horizon
    P = np.broadcast_to(mdp.dense_P(), (H, S, A, S))
    R = np.broadcast_to(np.asarray(mdp.R), (H, S, A))
    cdf = np.cumsum(P, axis=-1)  # (H, S, A, S)
    out = []
    for g in rngs:
        if exhaustive:
            n = S * A
            s = np.repeat(np.arange(S), A)[:, None].repeat(H, axis=1)  # (n, H)
            a = np.tile(np.arange(A), S)[:, None].repeat(H, axis=1)
        else:
            s = g.integers(0, S, size=(n, H))
            a = g.integers(0, A, size=(n, H))
        u = g.random((n, H))
        ur = g.random((n, H))
        h = np.arange(H)[None, :]
        nxt = np.minimum((cdf[h, s, a] <= u[..., None]).sum(axis=-1), S - 1)  # (n, H)
        mean = R[h, s, a]
        r = mean if mdp.reward_model == "deterministic" else (ur < mean).astype(float)
        out.append((s, a, r, nxt))
    return tuple(np.stack([o[i] for o in out]) for i in range(4))


def _slope_check(name, x, y, lo, hi, *, fit_range=(0.5, 1.0), what="log-log slope") -> Check:
    from theorylab.stats import loglog_slope

    fit = loglog_slope(x, y, fit_range=fit_range)
    passed = lo <= fit.ci_low and fit.ci_high <= hi
    return Check(
        name,
        passed,
        f"{what} {fit.slope:.3f}, 95% CI [{fit.ci_low:.3f}, {fit.ci_high:.3f}] "
        f"(must lie inside [{lo}, {hi}])",
        {"slope": fit.slope, "slope_ci": [fit.ci_low, fit.ci_high]},
    )


def _optimism_check(result, delta: float, mdp) -> Check:
    """Optimism at mu0 on every episode for >= 1 - delta of the seeds; VACUOUS when every
    estimate is at the cap H r_max (``theorylab.validations.claim.check_optimism``)."""
    from theorylab.validations.claim import check_optimism

    tab = mdp.to_tabular() if hasattr(mdp, "to_tabular") else mdp
    return check_optimism(result, delta, cap=float(tab.horizon * np.max(tab.R)))


def _plot_regret(path, curves, bound_curve, bound_label, title) -> None:
    from theorylab.plotting import plot_regret, save_figure

    bounds = {bound_label: bound_curve} if bound_curve is not None else None
    # the raw bound is orders of magnitude above the regret (the report gives the ratio): draw
    # its rate, rescaled to meet the curve at the last episode
    ax = plot_regret(curves, bound_curves=bounds, rescale_bound=bounds is not None, title=title)
    save_figure(ax, path)


def _features_param(mdp, kind: str | None) -> dict[str, Any]:
    if kind == "features":
        return {"features": mdp.features}
    if kind == "feature_class":
        return {"feature_class": mdp.candidates}
    return {}


# ---------------------------------------------------------------------------- regret claims


@dataclass(frozen=True)
class LinearRegretClaim:
    """An online regret claim for an agent that needs features (which ``Validation`` cannot pass).

    tests: ``"rate"`` (slope CI inside the scale's range), ``"sublinear"`` (slope CI upper end
    <= ``sublinear_max``), ``"below-bound"`` (violation rate <= delta against ``bound`` evaluated
    with ``bound_constants``), ``"optimism"``, ``"recovers-features"`` (Rep-UCB: the MLE's choice
    at the end is the true map on >= 1 - delta of the seeds), ``"learns"``
    (:func:`theorylab.validations.claim.check_learns` against the uniform policy's exact regret).
    """

    name: str
    statement: str
    algorithm: str
    mdp: str
    scales: dict[str, LinearScale]
    tests: tuple[str, ...]
    params: dict[str, Any] = field(default_factory=dict)
    bound: str | None = None
    bound_constants: dict[str, float] = field(default_factory=dict)
    feature_param: str | None = "features"
    delta: float = 0.1
    sublinear_max: float = 0.8
    bandit: bool = False  # T = K rounds (a bandit bound), not T = K H
    notes: str = ""

    def run(self, scale: str = "quick", *, plot=None, progress=False, seed: int = 0) -> Report:
        from theorylab.algorithms.registry import ALGORITHMS, load_algorithms
        from theorylab.experiment import run
        from theorylab.mdps import make

        if scale not in self.scales:
            raise ValueError(f"validation {self.name!r} has scales {sorted(self.scales)}")
        sc = self.scales[scale]
        t0 = time.perf_counter()
        mdp = make(sc.mdp or self.mdp)
        load_algorithms()
        cls = _recording(ALGORITHMS.get(self.algorithm))
        params = {**self.params, **sc.extra}
        result = run(
            cls,
            mdp,
            episodes=sc.episodes,
            seeds=sc.seeds,
            seed=seed,
            progress=progress,
            **params,
            **_features_param(mdp, self.feature_param),
        )
        agent = cls.instances[-1]
        cum = result.cumulative_regret  # (B, K)
        K = cum.shape[1]
        report = regret_report(
            self,
            scale,
            mdp,
            sc.episodes,
            sc.seeds,
            params,
            seed,
            features=self.feature_param,
            notes=self.notes,
            final_regret_mean=float(cum[:, -1].mean()),
            optimal_value=result.optimal_value,
        )
        checks = report.checks
        bound_curve, bound_at = None, None
        if self.bound is not None:
            from theorylab.bounds import get_bound

            bound = get_bound(self.bound)
            ks = np.arange(1, K + 1, dtype=float)
            values = {
                "S": mdp.S,
                "A": mdp.A,
                "H": mdp.horizon,
                "K": ks,
                "d": mdp.d,
                "delta": self.delta,
                "T": ks if self.bandit else ks * mdp.horizon,
                **self.bound_constants,
            }
            bound_curve = np.broadcast_to(
                np.asarray(bound.evaluate(**bound_inputs(bound, values)), dtype=float), ks.shape
            )

            def bound_at(k, values=values, bound=bound):
                at = {**values, "K": k, "T": k if self.bandit else k * mdp.horizon}
                out = np.asarray(bound.evaluate(**bound_inputs(bound, at)), dtype=float)
                return np.broadcast_to(out, np.shape(k))

            report.bound_exponent = float(bound.exponent(bound.rate_variable))
        report.smoke = sc.smoke
        x = np.arange(1, K + 1)
        for test in sc.tests if sc.tests is not None else self.tests:
            if test == "rate":
                lo, hi = sc.slope_range or (0.3, 0.7)
                checks.append(_slope_check("rate", x, cum, lo, hi))
                report.slope = checks[-1].values["slope"]
                report.slope_ci = tuple(checks[-1].values["slope_ci"])
            elif test == "sublinear":
                checks.append(_slope_check("sublinear", x, cum, -np.inf, self.sublinear_max))
                report.slope = checks[-1].values["slope"]
                report.slope_ci = tuple(checks[-1].values["slope_ci"])
            elif test == "below-bound":
                checks.append(self._below_bound(cum, bound_curve, report, mdp, bound_at))
            elif test == "optimism":
                checks.append(_optimism_check(result, self.delta, mdp))
            elif test == "recovers-features":
                checks.append(self._recovery(agent, mdp))
            elif test == "learns":
                from theorylab.validations.claim import check_learns
                from theorylab.validations.reference import null_regret_per_episode

                tab = mdp.to_tabular() if hasattr(mdp, "to_tabular") else mdp
                null = null_regret_per_episode(tab, result.optimal_value)
                checks.append(check_learns(result.regret, null))
            else:
                raise ValueError(f"unknown test {test!r} in {self.name!r}")
        report.passed = all(c.passed for c in checks)
        report.seconds = time.perf_counter() - t0
        if plot:
            label = (
                f"{self.bound} ({', '.join(f'{k}={v}' for k, v in self.bound_constants.items())})"
            )
            _plot_regret(
                plot,
                {self.algorithm: cum},
                bound_curve,
                label,
                f"{self.name} [{scale}]",
            )
            report.figure = plot
        return report

    def _below_bound(self, cum, bound_curve, report: Report, mdp=None, bound_at=None) -> Check:
        """Violation rate at K <= delta; VACUOUS when the bound at K is at or above the trivial
        bound K Delta_max (docs/validations.md, "Three verdicts")."""
        tab = None
        if mdp is not None:
            tab = mdp.to_tabular() if hasattr(mdp, "to_tabular") else mdp
        return self._below_bound_final(
            cum[:, -1], float(bound_curve[-1]), cum.shape[1], report, tab, bound_at
        )

    def _below_bound_final(self, final, b: float, K: int, report: Report, tab, bound_at) -> Check:
        """:meth:`_below_bound` from the final regrets ``final (B,)`` and the bound ``b`` at K;
        ``tab`` (the tabular MDP, for the trivial bound) and ``bound_at`` may be None."""
        from theorylab.validations.claim import below_bound_check
        from theorylab.validations.reference import informative_from
        from theorylab.validations.vacuity import max_episode_regret

        trivial = None
        if tab is not None:
            dmax = max_episode_regret(tab)
            trivial = K * dmax
            report.informative_from = {
                "variable": "K",
                "value": informative_from(bound_at, dmax) if bound_at is not None else None,
                "at": K,
                "bound": self.bound,
                "max_episode_regret": dmax,
            }
        implied = float(final.max() / (b / self.bound_constants.get("C", 1.0)))
        return below_bound_check(
            final,
            b,
            self.delta,
            report,
            trivial=trivial,
            where=f"K = {K}",
            extra=f", implied constant {implied:.3g}",
        )

    def _recovery(self, agent, mdp) -> Check:
        truth = mdp.reveal().index
        chosen = np.asarray(agent.selected)  # (B,)
        ok = chosen == truth
        history = np.stack(agent.selection_history, axis=1)  # (B, K)
        wrong = history != truth
        # first episode after which the choice stays on the truth, per seed (K if never)
        last_wrong = np.where(wrong.any(axis=1), wrong.shape[1] - np.argmax(wrong[:, ::-1], 1), 0)
        rate = float((~ok).mean())
        return Check(
            "recovers-features",
            rate <= self.delta,
            f"the MLE selects the true map (candidate {truth} of {mdp.n_candidates}) at the end on "
            f"{int(ok.sum())}/{ok.size} seeds (allowed failure rate {self.delta}); it settles on "
            f"the truth after {float(np.median(last_wrong)):.0f} episodes (median over seeds)",
            {"failure_rate": rate, "settle_episode_median": float(np.median(last_wrong))},
        )


@dataclass(frozen=True)
class StreamedLinearRegretClaim(LinearRegretClaim):
    """A :class:`LinearRegretClaim` whose scales named in ``streamed`` run through the whole-run
    compiled loop segment by segment (:func:`theorylab.validations.streamed.streamed_run`) and
    read their checks from the run's :class:`~theorylab.validations.streamed.RegretSummary`
    (cumulative regret on a log grid of K, optimism and last-tenth statistics), not from
    ``(B, K)`` curves: a paper-constant run of millions of episodes stays small in memory. The
    same tests as the in-memory path (below-bound, optimism, rate / sublinear fitted on the
    grid, learns; tests/test_streamed.py checks that they give the same verdicts and numbers at
    small K), plus the burn-in measurement as information; the figure is drawn on the grid,
    on log-log axes with the bound as printed and the trivial bound."""

    streamed: tuple[str, ...] = ()

    def run(self, scale: str = "quick", *, plot=None, progress=False, seed: int = 0) -> Report:
        if scale not in self.streamed:
            return super().run(scale, plot=plot, progress=progress, seed=seed)
        from theorylab.mdps import make
        from theorylab.validations.claim import check_learns_summary, check_optimism_summary
        from theorylab.validations.reference import null_regret_per_episode
        from theorylab.validations.streamed import streamed_run
        from theorylab.validations.vacuity import max_episode_regret

        if scale not in self.scales:
            raise ValueError(f"validation {self.name!r} has scales {sorted(self.scales)}")
        sc = self.scales[scale]
        t0 = time.perf_counter()
        mdp = make(sc.mdp or self.mdp)
        params = {**self.params, **sc.extra}
        summary = streamed_run(
            self.algorithm,
            mdp,
            sc.episodes,
            sc.seeds,
            seed=seed,
            **params,
            **_features_param(mdp, self.feature_param),
        )
        K = summary.episodes
        report = regret_report(
            self,
            scale,
            mdp,
            sc.episodes,
            sc.seeds,
            params,
            seed,
            features=self.feature_param,
            notes=self.notes,
            final_regret_mean=float(summary.final.mean()),
            optimal_value=summary.optimal_value,
            loop=summary.config["loop"],
            grid_points=summary.config["grid_points"],
            run_seconds=summary.wall_seconds,
        )
        checks = report.checks
        report.smoke = sc.smoke
        tab = mdp.to_tabular() if hasattr(mdp, "to_tabular") else mdp
        null = null_regret_per_episode(tab, summary.optimal_value)
        x = summary.grid.astype(float)
        bound_grid, bound_at = None, None
        if self.bound is not None:
            from theorylab.bounds import get_bound

            bound = get_bound(self.bound)
            values = {"S": mdp.S, "A": mdp.A, "H": mdp.horizon, "d": mdp.d, "delta": self.delta}
            values.update(self.bound_constants)

            def bound_at(k, values=values, bound=bound):
                at = {**values, "K": k, "T": k if self.bandit else k * mdp.horizon}
                out = np.asarray(bound.evaluate(**bound_inputs(bound, at)), dtype=float)
                return np.broadcast_to(out, np.shape(k))

            bound_grid = np.asarray(bound_at(x), dtype=float)
            report.bound_exponent = float(bound.exponent(bound.rate_variable))
        tests = sc.tests if sc.tests is not None else self.tests
        for test in tests:
            if test in ("rate", "sublinear"):
                rate = test == "rate"
                lo, hi = (sc.slope_range or (0.3, 0.7)) if rate else (-np.inf, self.sublinear_max)
                checks.append(_slope_check(test, x, summary.cum, lo, hi))
                report.slope = checks[-1].values["slope"]
                report.slope_ci = tuple(checks[-1].values["slope_ci"])
            elif test == "below-bound":
                b = float(np.asarray(bound_at(np.array([float(K)])))[0])
                checks.append(self._below_bound_final(summary.final, b, K, report, tab, bound_at))
            elif test == "optimism":
                cap = float(tab.horizon * np.max(tab.R))
                checks.append(check_optimism_summary(summary, self.delta, cap))
            elif test == "learns":
                checks.append(check_learns_summary(summary, null))
            else:
                raise ValueError(f"test {test!r} of {self.name!r} has no streamed form")
        if "learns" not in tests:  # the burn-in, reported
            c = check_learns_summary(summary, null)
            c.name, c.status, c.passed = "learns (information, not tested)", "INFO", True
            checks.append(c)
        report.passed = all(c.passed for c in checks)
        report.seconds = time.perf_counter() - t0
        if plot:
            from theorylab.plotting import plot_regret, save_figure

            label = f"{self.bound} (C = {self.bound_constants.get('C', 1.0)})"
            info = (report.informative_from or {}).get("value")
            ax = plot_regret(
                {self.algorithm: summary.cum},
                {label: bound_grid} if bound_grid is not None else None,
                x=x,
                references={
                    "trivial bound K x max per-episode regret": x * max_episode_regret(tab),
                    "null agent (uniform policy)": x * null,
                },
                informative_from={label: info} if bound_grid is not None else None,
                loglog=True,
                title=f"{self.name} [{scale}]",
            )
            save_figure(ax, plot)
            report.figure = plot
        return report


LSVI_UCB_MDP = "linear-simplex:S=5,A=3,d=3,H=5,seed=0,rewards=cube"
LSVI_UCB_C = 0.1
"""Bonus constant of the regret claims: optimistic at mu0 (V^k_1 >= V*_1) on every seed, and
small enough to leave the burn-in within K = 2 10^4 on LSVI_UCB_MDP."""
LSVI_UCB_OPTIMISM_C = 0.2
"""Smallest c of the grid {0.1, 0.2, 0.3, 0.5, 1} for which Lemma B.5 holds *entrywise*
(Q^k_h >= Q*_h at every (h, s, a), every episode) on LSVI_UCB_MDP for 8 seeds x 1000 episodes;
at c = 0.1 it fails somewhere on every seed (by up to 0.38) although V^k_1(mu0) >= V*_1(mu0)."""


@dataclass(frozen=True)
class LSVIUCBSqrtK(LinearRegretClaim):
    """The LSVI-UCB regret claim; the full scale also records a sweep of the bonus constant c."""

    c_sweep: tuple[float, ...] = (0.01, 0.03, 0.1, 0.3, 1.0)

    def run(self, scale: str = "quick", *, plot=None, progress=False, seed: int = 0) -> Report:
        report = super().run(scale, plot=plot, progress=progress, seed=seed)
        if scale != "full":
            return report
        from theorylab.experiment import run
        from theorylab.mdps import make
        from theorylab.stats import loglog_slope

        sc = self.scales[scale]
        mdp = make(sc.mdp or self.mdp)
        sweep = []
        for c in self.c_sweep:
            res = run(
                "lsvi-ucb",
                mdp,
                sc.episodes,
                sc.seeds,
                seed=seed,
                features=mdp.features,
                **{**self.params, "c": c},
            )
            cum = res.cumulative_regret
            fit = loglog_slope(np.arange(1, cum.shape[1] + 1), cum)
            est = res.value_estimates
            opt = float(np.any(est < res.optimal_value - 1e-9, axis=1).mean())
            sweep.append(
                {
                    "c": c,
                    "final_regret_mean": float(cum[:, -1].mean()),
                    "slope": fit.slope,
                    "slope_ci": [fit.ci_low, fit.ci_high],
                    "optimism_failure_rate": opt,
                }
            )
        report.config["c_sweep"] = sweep
        return report


register_validation(
    LinearRegretClaim(
        name="lmc-lsvi-sublinear-tuned-c",
        statement=(
            "TUNED CONSTANTS (c = 0.3 and delta = 0.15 chosen so that the run leaves its burn-in "
            "within the window; the paper-constant version is lmc-lsvi-paper-constant). "
            "LMC-LSVI (Ishfaq et al. 2024; one Langevin sample per step, the exact Gaussian law "
            "of the chain, 1/sqrt(beta) = c H sqrt(d), c = 0.3) on the random simplex-feature "
            "linear MDP of lsvi-ucb-sqrt-k-tuned-c (d = 3, H = 5): regret is sublinear -- the "
            "slope CI over the last half of log K lies in [0.3, 0.7] -- and stays below "
            "C d^(3/2) H^(3/2) sqrt(T) with C = 1 (the abstract's unspecified constant) on at "
            "least 1 - delta of the seeds, delta = 0.15 (Theorem 4.2's single-sample bound holds "
            "only for delta > 0.121 [S])"
        ),
        algorithm="lmc-lsvi",
        mdp=LSVI_UCB_MDP,
        scales={
            "quick": LinearScale(episodes=3000, seeds=8, slope_range=(0.3, 0.7)),
            "full": LinearScale(episodes=20000, seeds=16, slope_range=(0.3, 0.7)),
        },
        tests=("rate", "below-bound"),
        params={"c": 0.3},
        bound="lmc-lsvi",
        bound_constants={"C": 1.0},
        delta=0.15,
        notes=(
            "c from a sweep at K = 3000, 8 seeds (slope over the last half of log K): c = 0.03: "
            "0.87 [0.66, 0.94], c = 0.1: 0.81 [0.30, 0.91] (some seeds lock onto a suboptimal "
            "policy), c = 0.3: 0.53 [0.51, 0.54], c = 1: 0.79 [0.78, 0.81] (still exploring). At "
            "c = 0.3, K = 20000, 16 seeds, the per-eighth slopes of the last half are 0.56, "
            "0.47, 0.39, 0.27: like UCBVI on a fixed MDP, the slope passes 1/2 and keeps falling "
            "towards the gap-dependent log regime; the range is a property of this window."
        ),
    ),
    controls=("frozen", "random"),
    papers=("001#23",),
)

register_validation(
    LinearRegretClaim(
        name="lmc-lsvi-paper-constant",
        statement=(
            "LMC-LSVI at c = 1 (1/sqrt(beta_k) = H sqrt(d): Ishfaq et al. 2024 take "
            "1/sqrt(beta_k) = O~(H sqrt(d)) with an unspecified constant [M], so c = 1 is the "
            "unscaled choice; J_k, eta_k and lambda = 1 as in the module, one sample M = 1) on "
            "the instance of lmc-lsvi-sublinear-tuned-c (d = 3, H = 5): regret stays below "
            "C d^(3/2) H^(3/2) sqrt(T) with C = 1 (the abstract's unspecified constant; log "
            "factors not carried) on at least 1 - delta of the seeds, delta = 0.15 (Theorem 4.2's "
            "single-sample bound holds only for delta > 0.121 [S]), and the run has left its "
            "burn-in (test 'learns'). With C = 1 the bound is informative from K = 4,369 (the "
            "report prints it), so the check is real at both scales: quick K = 6000 (bound / "
            "trivial 0.85), full K = 20000 (0.47, with sublinearity)."
        ),
        algorithm="lmc-lsvi",
        mdp=LSVI_UCB_MDP,
        scales={
            "quick": LinearScale(episodes=6000, seeds=4, tests=("below-bound", "learns")),
            "full": LinearScale(
                episodes=20000, seeds=8, tests=("below-bound", "learns", "sublinear")
            ),
        },
        tests=("below-bound", "learns", "sublinear"),
        params={"c": 1.0},
        bound="lmc-lsvi",
        bound_constants={"C": 1.0},
        delta=0.15,
        notes=(
            "C = 1 and c = 1 are the unscaled unspecified constants: neither is confirmed from "
            "the paper's body (not readable here; theory.md has no LMC-LSVI section). Measured at "
            "K = 1e4, 4 seeds: final regret 2053-2073 against the bound 1.3e4 (trivial bound "
            "1.97e4); last-tenth per-episode regret 0.100 against the null agent's 0.882; "
            "burn-in ends at K = 776."
        ),
    ),
    controls=("frozen", "random"),
    papers=("001#23",),
)

register_validation(
    LSVIUCBSqrtK(
        name="lsvi-ucb-sqrt-k-tuned-c",
        statement=(
            "TUNED CONSTANT (rate at c = 0.1; at c = 1 the run is still in its linear burn-in at "
            "K = 1e4, see lsvi-ucb-paper-constant). LSVI-UCB (Jin et al. 2020, Alg. 1, lambda = "
            "1, beta = c d H sqrt(iota), c = 0.1) on a random simplex-feature linear MDP (d = 3, "
            "H = 5): regret grows like K^(1/2), stays below C sqrt(d^3 H^3 T iota^2) with C = 1 "
            "and is optimistic (Lemma B.5). The below-bound test is VACUOUS at both scales (the "
            "bound is informative from K of about 1.8e6)."
        ),
        algorithm="lsvi-ucb",
        mdp=LSVI_UCB_MDP,
        scales={
            # quick: K = 3000 is still in the transition (slope ~0.65); the range is the claim's
            "quick": LinearScale(episodes=3000, seeds=8, slope_range=(0.3, 0.8)),
            "full": LinearScale(episodes=10000, seeds=16, slope_range=(0.3, 0.7)),
        },
        tests=("rate", "below-bound", "optimism"),
        params={"c": LSVI_UCB_C, "delta": 0.1},
        bound="jin2020-lsvi-ucb",
        bound_constants={"C": 1.0},
        notes=(
            "c = 0.1 chosen by the sweep recorded at full scale; c = 1 stays in its linear burn-in "
            "(slope ~0.97 at K = 1e4); c <= 0.03 loses optimism and locks onto a suboptimal policy."
        ),
    ),
    controls=("frozen", "random"),
)

register_validation(
    StreamedLinearRegretClaim(
        name="lsvi-ucb-paper-constant",
        statement=(
            "LSVI-UCB at c = 1 (beta = d H sqrt(iota); Jin et al. 2020 leave c an absolute "
            "constant [M], so c = 1 is the unscaled bonus) on the instance of "
            "lsvi-ucb-sqrt-k-tuned-c: stays below C sqrt(d^3 H^3 T iota^2) with C = 1, is "
            "optimistic, and regret is sublinear (slope CI <= 0.8). The bound is informative "
            "from K of about 1.8e6 (the report prints it) and the run is linear (burn-in) at "
            "K = 1e4, so the quick scale is a SMOKE test; the full scale (K = 4e6, 8 seeds) and "
            "the paper scale (K = 1e7, 8 seeds) run LSVI-UCB's whole-run compiled loop, "
            "streamed (the checks read the cumulative regret on a log grid of K)."
        ),
        algorithm="lsvi-ucb",
        mdp=LSVI_UCB_MDP,
        scales={
            "quick": LinearScale(
                episodes=2000,
                seeds=4,
                smoke="in burn-in at c = 1 (slope ~0.97 at K = 1e4): real check at 'full'",
                tests=("below-bound", "optimism"),
            ),
            "full": LinearScale(episodes=4_000_000, seeds=8),
            "paper": LinearScale(episodes=10_000_000, seeds=8),
        },
        streamed=("full", "paper"),
        tests=("below-bound", "optimism", "sublinear"),
        params={"c": 1.0, "delta": 0.1},
        bound="jin2020-lsvi-ucb",
        bound_constants={"C": 1.0},
    ),
    controls=("frozen", "random"),
)

register_validation(
    LinearRegretClaim(
        name="linucb-sqrt-t",
        statement=(
            "LinUCB / OFUL (Abbasi-Yadkori et al. 2011) on a linear bandit with d = 5 and 20 arms: "
            "regret grows like sqrt(T) up to logs, stays below the oful-abbasi2011 bound and the "
            "UCB index is optimistic. The bound is above the trivial bound (T times the largest "
            "gap) up to T = 76,980, so below-bound is VACUOUS at quick and full scale; the "
            "'paper' scale (T = 160,000) tests it for real, with sublinearity."
        ),
        algorithm="linucb",
        mdp="linear-bandit:d=5,A=20,seed=0",
        scales={
            "quick": LinearScale(episodes=3000, seeds=8, slope_range=(0.3, 0.7)),
            "full": LinearScale(episodes=50000, seeds=16, slope_range=(0.3, 0.7)),
            # the bound is informative from T = 76,980 rounds: below-bound at T = 160,000 is a
            # real test (measured: bound / trivial = 0.74, max regret / bound = 0.003; 63 s on
            # the 2-core machine); the slope is then 0.29 (the log T regime), so the rate is
            # not tested here, sublinearity is
            "paper": LinearScale(
                episodes=160_000, seeds=8, tests=("below-bound", "optimism", "sublinear")
            ),
        },
        tests=("rate", "below-bound", "optimism"),
        bound="oful-abbasi2011",
        bandit=True,
        notes=(
            "The card's constants are [M] (from memory); a fixed instance has a gap, so the slope "
            "eventually falls towards 0 (log T regret): the rate is read while the instance is "
            "still in its sqrt(T) regime."
        ),
    ),
    controls=("frozen", "random"),
)

register_validation(
    LinearRegretClaim(
        name="rep-ucb-recovers-features",
        statement=(
            "Rep-UCB (Uehara, Zhang, Sun 2022; sample-complexity bound rep-ucb-arxiv, discounted) "
            "in its episodic form on a low-rank MDP with hidden simplex features (S = 10, A = 3, "
            "d = 3, H = 5) and 7 candidate maps: the MLE selects the true map and regret is "
            "sublinear (c = 0.1)"
        ),
        algorithm="rep-ucb",
        mdp="lowrank-simplex:S=10,A=3,d=3,H=5,seed=0",
        scales={
            "quick": LinearScale(episodes=800, seeds=4),
            "full": LinearScale(episodes=5000, seeds=16),
        },
        tests=("recovers-features", "sublinear"),
        params={"c": 0.1},
        feature_param="feature_class",
        sublinear_max=0.8,
        notes=(
            "rep-ucb-arxiv is a discounted PAC bound, not an episodic regret bound: the claim "
            "tests its consequences (recovery, sublinear regret), not the bound's value."
        ),
    ),
    controls=("frozen", "random"),
)


# ---------------------------------------------------------------------------- identity claims


@dataclass(frozen=True)
class OneHotCountBonus:
    """Claim 1: one-hot LSVI-UCB is the tabular count-bonus recursion (see the module docstring)."""

    name: str = "lsvi-ucb-onehot-count-bonus"
    statement: str = (
        "With one-hot features, LSVI-UCB's Gram inverse is diag(1/(N_h(s,a) + lambda)), its bonus "
        "is beta / sqrt(N_h(s,a) + lambda) and its Q is the tabular count recursion, exactly "
        "(round-off: 1e-12 relative on the inverse, 1e-9 absolute on Q), every episode and seed"
    )
    mdp: str = "onehot:base=riverswim;S=6;H=10"
    scales: dict = field(
        default_factory=lambda: {
            "quick": LinearScale(episodes=60, seeds=4),
            "full": LinearScale(episodes=1000, seeds=16),
        }
    )
    c: float = 0.05
    lam: float = 1.0

    def run(self, scale: str = "quick", *, plot=None, progress=False, seed: int = 0) -> Report:
        from theorylab.algorithms.online.lsvi_ucb import LSVIUCB
        from theorylab.experiment import run
        from theorylab.mdps import make

        sc = self.scales[scale]
        t0 = time.perf_counter()
        mdp = make(sc.mdp or self.mdp)
        S, A, H, lam = mdp.S, mdp.A, mdp.horizon, self.lam
        errors = {"inverse_diagonal": 0.0, "inverse_offdiagonal": 0.0, "bonus": 0.0, "Q": 0.0}

        class Checked(LSVIUCB):
            name = "lsvi-ucb"

            def __init__(self, env, n_seeds, rngs, *, episodes, **kwargs):
                super().__init__(env, n_seeds, rngs, episodes=episodes, **kwargs)
                B = self.n_seeds
                self.counts = np.zeros((B, H, S * A, S))  # N_h(s, a, s'), counted here
                self.rsum = np.zeros((B, H, S * A))
                self.check()

            def update(self, traj):
                B = self.n_seeds
                sa = traj.states * A + traj.actions  # (B, H)
                bi, hi = np.arange(B)[:, None], np.arange(H)[None, :]
                self.counts[bi, hi, sa, traj.next_states] += 1.0
                self.rsum[bi, hi, sa] += traj.rewards
                super().update(traj)
                self.check()

            def check(self):
                N = self.counts.sum(axis=-1)  # (B, H, SA)
                inv = self.Lambda_inv  # (B, H, SA, SA)
                diag = np.diagonal(inv, axis1=-2, axis2=-1)  # (B, H, SA)
                want = 1.0 / (N + lam)
                errors["inverse_diagonal"] = max(
                    errors["inverse_diagonal"], float(np.abs(diag / want - 1.0).max())
                )
                off = inv - diag[..., None] * np.eye(S * A)
                errors["inverse_offdiagonal"] = max(
                    errors["inverse_offdiagonal"], float(np.abs(off).max())
                )
                beta = self.beta
                Vt = np.zeros((self.n_seeds, H + 1, S))  # the tabular recursion from counts
                for h in range(H - 1, -1, -1):
                    b = self.bonus(h)  # (B, SA)
                    errors["bonus"] = max(
                        errors["bonus"],
                        float(np.abs(b / (beta / np.sqrt(N[:, h] + lam)) - 1.0).max()),
                    )
                    backup = (
                        self.rsum[:, h]
                        + np.matmul(self.counts[:, h], Vt[:, h + 1, :, None])[..., 0]
                    )  # R_h + sum_s' N_h(s,a,s') V_{h+1}(s'): (B, SA)
                    Qt = np.minimum(backup / (N[:, h] + lam) + beta / np.sqrt(N[:, h] + lam), H)
                    errors["Q"] = max(
                        errors["Q"], float(np.abs(Qt - self.Q[:, h].reshape(-1, S * A)).max())
                    )
                    Vt[:, h] = Qt.reshape(-1, S, A).max(axis=-1)

        run(Checked, mdp, sc.episodes, sc.seeds, seed=seed, progress=progress, c=self.c, lam=lam)
        checks = [
            Check(
                "inverse-diagonal",
                errors["inverse_diagonal"] <= 1e-12 and errors["inverse_offdiagonal"] <= 1e-12,
                f"max |diag(Lambda^-1) (N + lambda) - 1| = {errors['inverse_diagonal']:.2e}, max "
                f"|off-diagonal| = {errors['inverse_offdiagonal']:.2e} (<= 1e-12)",
                {k: errors[k] for k in ("inverse_diagonal", "inverse_offdiagonal")},
            ),
            Check(
                "count-bonus",
                errors["bonus"] <= 1e-12,
                f"max |bonus sqrt(N + lambda) / beta - 1| = {errors['bonus']:.2e} (<= 1e-12)",
                {"bonus": errors["bonus"]},
            ),
            Check(
                "tabular-Q",
                errors["Q"] <= 1e-9,
                f"max |Q_LSVI-UCB - Q_tabular| = {errors['Q']:.2e} (<= 1e-9)",
                {"Q": errors["Q"]},
            ),
        ]
        return Report(
            self.name,
            self.statement,
            scale,
            all(c.passed for c in checks),
            checks,
            time.perf_counter() - t0,
            config={
                "mdp": mdp.name,
                "episodes": sc.episodes,
                "seeds": sc.seeds,
                "c": self.c,
                "lam": lam,
                "seed": seed,
            },
        )


register_validation(OneHotCountBonus(), controls=("lsvi-bonus-no-sqrt",))


@dataclass(frozen=True)
class CoveringLSVI:
    """Claim 2: LSVI without bonus on covering data converges to the value-iteration Q*."""

    name: str = "lsvi-covering-converges-to-vi"
    statement: str = (
        "LSVI without bonus on uniformly covering data of a linear MDP converges to the value-"
        "iteration Q* at the parametric rate n^(-1/2); with one-hot features on a deterministic "
        "MDP, one sample per pair and lambda = 1e-9, it equals backward induction"
    )
    mdp: str = "linear-simplex:S=5,A=3,d=3,H=5,seed=0,rewards=cube,reward_model=bernoulli"
    exact_mdp: str = "onehot:base=chain;S=6;H=8"
    scales: dict = field(
        default_factory=lambda: {
            "quick": LinearScale(
                episodes=3000, seeds=4, extra={"grid": (30, 100, 300, 1000, 3000)}
            ),
            "full": LinearScale(
                episodes=100000,
                seeds=16,
                extra={"grid": (30, 100, 300, 1000, 3000, 10000, 30000, 100000)},
            ),
        }
    )
    slope_range: tuple[float, float] = (-0.75, -0.25)

    def run(self, scale: str = "quick", *, plot=None, progress=False, seed: int = 0) -> Report:
        from theorylab.agent import EnvSpec
        from theorylab.algorithms.linear.lsvi import LeastSquaresValueIteration
        from theorylab.algorithms.planning import backward_induction
        from theorylab.experiment import env_spec
        from theorylab.mdps import make
        from theorylab.seeding import generators

        sc = self.scales[scale]
        t0 = time.perf_counter()
        mdp = make(self.mdp)
        env: EnvSpec = env_spec(mdp)
        Q_star = backward_induction(mdp).Q  # (H, S, A)
        grid = tuple(sc.extra["grid"])
        errors = np.empty((sc.seeds, len(grid)))  # (B, n points)
        for j, n in enumerate(grid):
            rngs = generators(seed, range(sc.seeds), 2)
            data = generative_data(mdp, n, rngs)
            lsvi = LeastSquaresValueIteration(
                env, sc.seeds, rngs, episodes=n, features=mdp.features
            )
            lsvi.add_many(*data)
            lsvi.plan()
            errors[:, j] = np.abs(lsvi.Q - Q_star).max(axis=(1, 2, 3))
        rate = _slope_check(
            "rate",
            np.array(grid, float),
            errors,
            *self.slope_range,
            fit_range=(0.0, 1.0),
            what="log-log slope of max|Q - Q*| in n",
        )
        # exactness: one-hot features, deterministic MDP, every pair once, lambda -> 0
        ex = make(self.exact_mdp)
        ex_env = env_spec(ex)
        rngs = generators(seed, [0], 2)
        lsvi = LeastSquaresValueIteration(ex_env, 1, rngs, episodes=ex.S * ex.A, lam=1e-9)
        lsvi.add_many(*generative_data(ex, 0, rngs, exhaustive=True))
        lsvi.plan()
        exact_err = float(np.abs(lsvi.Q[0] - backward_induction(ex).Q).max())
        checks = [
            rate,
            Check(
                "exact-one-hot",
                exact_err <= 1e-6,
                f"one-hot LSVI on {ex.name} (each pair once, lambda = 1e-9): max|Q - Q*| = "
                f"{exact_err:.2e} (<= 1e-6)",
                {"error": exact_err},
            ),
        ]
        if plot:
            from theorylab.plotting import plot_loglog, save_figure
            from theorylab.stats import loglog_slope

            ax = plot_loglog(
                np.array(grid, float),
                {"max|Q_LSVI - Q*|": errors},
                fits={
                    "max|Q_LSVI - Q*|": loglog_slope(
                        np.array(grid, float), errors, fit_range=(0.0, 1.0)
                    )
                },
                bound_exponent=-0.5,
                x_name="n",
                xlabel="samples per step n",
                ylabel="max |Q - Q*|",
                title=f"{self.name} [{scale}]",
            )
            save_figure(ax, plot)
        return Report(
            self.name,
            self.statement,
            scale,
            all(c.passed for c in checks),
            checks,
            time.perf_counter() - t0,
            slope=rate.values["slope"],
            slope_ci=tuple(rate.values["slope_ci"]),
            figure=plot,
            config={
                "mdp": mdp.name,
                "grid": list(grid),
                "seeds": sc.seeds,
                "mean_error": errors.mean(axis=0).tolist(),
                "seed": seed,
            },
        )


register_validation(CoveringLSVI(), controls=("lsvi-no-bootstrap",))


# ---------------------------------------------------------------------------- dimension sweep


@dataclass(frozen=True)
class RegretVersusD:
    """Claim 4: regret at fixed K against d, compared with the bound's exponent in d."""

    name: str = "lsvi-ucb-regret-vs-d"
    statement: str = (
        "LSVI-UCB's regret at fixed K on random simplex-feature linear MDPs (S = 5, A = 3, H = 5, "
        "c = 0.1) grows with d no faster than the jin2020-lsvi-ucb exponent d^(3/2), at a K where "
        "it has learned at every d of the sweep (per-episode regret over the last tenth at most "
        "half the null agent's on every instance: test 'learns'). A d whose run is still in its "
        "burn-in has regret about K x the null agent's, flat in d, which any non-learner matches"
    )
    family: str = "linear-simplex:S=5,A=3,d={d},H=5,seed={instance},rewards=cube"
    hard_family: str = "hard-linear:d={d},H=5,sign_seed={instance}"
    bound: str = "jin2020-lsvi-ucb"
    c: float = LSVI_UCB_C
    scales: dict = field(
        default_factory=lambda: {
            # Issue 13: at K = 1000 LSVI-UCB (c = 0.1) has not learned at d = 8 (last-tenth
            # regret 0.75-1.0 x the null agent's), and a d in burn-in has regret ~ K x null,
            # flat in d: the frozen and random agents passed the one-sided slope test. Learning
            # at every d of a sweep needs K of several thousand (d = 6: 0.26-0.41 x null at
            # K = 6000), about 2 minutes of runs: the quick scale is a smoke test.
            "quick": LinearScale(
                episodes=1000,
                seeds=4,
                extra={"ds": (2, 4, 8), "instances": 2, "hard": False},
                smoke="d = 8 is still in its burn-in at K = 1000 (regret ~ K x the null agent's, "
                "which a non-learner matches): the real check is 'full' (K = 6000, d <= 6, "
                "test 'learns' at every d)",
                tests=(),
            ),
            "full": LinearScale(
                episodes=6000,
                seeds=16,
                extra={"ds": (2, 3, 4, 6), "instances": 4, "hard": True},
                tests=("learns",),
            ),
        }
    )

    def _sweep(self, family, ds, sc, seed, instances):
        from theorylab.experiment import run
        from theorylab.mdps import make
        from theorylab.stats import loglog_slope
        from theorylab.validations.claim import check_learns
        from theorylab.validations.reference import null_regret_per_episode

        finals, dims, k_slopes, learned = [], [], [], []
        for d in ds:
            per_d = []
            curves = []
            for inst in range(instances):
                mdp = make(family.format(d=d, instance=inst))
                res = run(
                    "lsvi-ucb",
                    mdp,
                    sc.episodes,
                    sc.seeds,
                    seed=seed,
                    features=mdp.features,
                    c=self.c,
                )
                per_d.append(res.cumulative_regret[:, -1])
                curves.append(res.cumulative_regret)
                tab = mdp.to_tabular() if hasattr(mdp, "to_tabular") else mdp
                null = null_regret_per_episode(tab, res.optimal_value)
                c = check_learns(res.regret, null)
                ratio = c.values.get("tail_regret_ci_high", np.nan) / null
                learned.append((int(mdp.d), inst, c.status == "PASS", float(ratio)))
            dims.append(mdp.d)
            finals.append(np.concatenate(per_d))
            cum = np.concatenate(curves)
            k_slopes.append(loglog_slope(np.arange(1, cum.shape[1] + 1), cum).slope)
        return np.array(dims, float), np.stack(finals, axis=1), k_slopes, learned

    def run(self, scale: str = "quick", *, plot=None, progress=False, seed: int = 0) -> Report:
        from theorylab.bounds import get_bound

        sc = self.scales[scale]
        t0 = time.perf_counter()
        exponent = float(get_bound(self.bound).exponent("d"))
        dims, finals, k_slopes, learned = self._sweep(
            self.family, sc.extra["ds"], sc, seed, sc.extra["instances"]
        )
        tested = sc.tests if sc.tests is not None else ("learns",)
        ok = all(p for _, _, p, _ in learned)
        learns = Check(
            "learns (at every d and instance)",
            ok,
            "upper end of the 95% CI of the last-tenth per-episode regret / the null agent's "
            "(must be <= 0.5) per (d, instance): "
            + ", ".join(f"d={d}#{i}: {r:.2f}" for d, i, _, r in learned),
            {"ratios": [[d, i, r] for d, i, _, r in learned]},
            status=None if "learns" in tested else "INFO",
        )
        check = _slope_check(
            "rate-in-d",
            dims,
            finals,
            -math.inf,
            exponent,
            fit_range=(0.0, 1.0),
            what="log-log slope of final regret in d",
        )
        check.detail += f"; bound exponent in d: {exponent:g}"
        config: dict[str, Any] = {
            "family": self.family,
            "ds": dims.tolist(),
            "episodes": sc.episodes,
            "seeds_per_instance": sc.seeds,
            "instances": sc.extra["instances"],
            "c": self.c,
            "final_regret_mean": finals.mean(axis=0).tolist(),
            "slope_in_K_per_d": k_slopes,
        }
        if sc.extra.get("hard"):
            from theorylab.stats import loglog_slope

            hd, hf, hk, _ = self._sweep(self.hard_family, (2, 3, 4, 5, 6), sc, seed, 2)
            fit = loglog_slope(hd, hf, fit_range=(0.0, 1.0))
            config["hard_instance"] = {
                "family": self.hard_family,
                "feature_dims": hd.tolist(),
                "final_regret_mean": hf.mean(axis=0).tolist(),
                "slope_in_d": fit.slope,
                "slope_ci": [fit.ci_low, fit.ci_high],
                "slope_in_K_per_d": hk,
                "note": "information only (not gating): see the module docstring",
            }
        if plot:
            from theorylab.plotting import plot_loglog, save_figure
            from theorylab.stats import loglog_slope

            ax = plot_loglog(
                dims,
                {"final regret": finals},
                fits={"final regret": loglog_slope(dims, finals, fit_range=(0.0, 1.0))},
                bound_exponent=exponent,
                x_name="d",
                xlabel="feature dimension d",
                ylabel=f"regret at K = {sc.episodes}",
                title=f"{self.name} [{scale}]",
            )
            save_figure(ax, plot)
        rep = Report(
            self.name,
            self.statement,
            scale,
            check.passed and learns.passed,
            [learns, check],
            time.perf_counter() - t0,
            slope=check.values["slope"],
            slope_ci=tuple(check.values["slope_ci"]),
            bound=self.bound,
            bound_exponent=exponent,
            figure=plot,
            config=config,
        )
        rep.smoke = sc.smoke
        return rep


register_validation(
    RegretVersusD(), controls=("frozen", "random"), targets={"online": ("lsvi-ucb",)}
)
