"""Claims a user can run: algorithm x MDP family x sweep x bound x test.

A :class:`Validation` is an executable statement such as "UCBVI-Hoeffding's regret on RiverSwim
stays under Azar et al.'s Theorem 1 on at least 1 - delta of the seeds and grows like K^(1/2)".
Running it (:func:`validate`) performs the runs at the requested scale and applies its tests:

* ``below-bound``: the fraction of seeds whose cumulative regret at K exceeds the bound evaluated
  at (S, A, H, K, delta) -- the *violation rate* -- is at most delta (a high-probability bound
  claims Pr[Regret(K) > bound] <= delta). A Clopper-Pearson interval of the rate is reported.
* ``rate``: the log-log slope of mean cumulative regret against k, with a bootstrap-over-seeds
  confidence interval, lies inside ``slope_range`` (e.g. [0.3, 0.7] for a K^(1/2) claim). The
  bound's own exponent in K is reported beside it.
* ``linear``: the slope's CI lies at or above ``linear_min`` (a linear-regret contrast).
* ``optimism``: the algorithm's own value estimate is >= V*_1(mu0) on every episode, for at least
  1 - delta of the seeds (the good event of the optimism lemmas).
* ``beats``: the algorithm's mean final regret is below the other algorithm's, with the 95%
  confidence interval of the difference (Welch) entirely below 0.

Scales: ``quick`` (seconds: runs in CI) and ``full`` (minutes: marked slow in the test suite).
Each scale can tighten or relax nothing silently: its own numbers are part of the claim and
printed in the report.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.validations.reference import algorithm_bound, bound_inputs  # noqa: F401

SLOPE_FIT_RANGE = (0.5, 1.0)  # fit on the second half of the run (log-spaced points)


@dataclass(frozen=True)
class Scale:
    """How big a run is: episodes K, seeds B, and what is tested at that size.

    tests: the tests run at this scale (default: all of the validation's tests). A rate can only
    be read once the run has left its burn-in, so a quick scale may test the bound and optimism
    and report the slope for information only; the claim's statement says so.
    fit_range: the part of the run (fractions of log K) the log-log slope is fitted on.
    mdp: a scale may use another instance of the family (the statement says why).
    """

    episodes: int
    seeds: int
    slope_range: tuple[float, float] | None = None
    mdp: str | None = None
    tests: tuple[str, ...] | None = None
    fit_range: tuple[float, float] = SLOPE_FIT_RANGE


@dataclass
class Check:
    name: str
    passed: bool
    detail: str
    values: dict[str, Any] = field(default_factory=dict)


@dataclass
class Report:
    name: str
    statement: str
    scale: str
    passed: bool
    checks: list[Check]
    seconds: float
    slope: float | None = None
    slope_ci: tuple[float, float] | None = None
    bound: str | None = None
    bound_exponent: float | None = None
    violation_rate: float | None = None
    figure: str | None = None
    config: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "statement": self.statement,
            "scale": self.scale,
            "passed": self.passed,
            "slope": self.slope,
            "slope_ci": list(self.slope_ci) if self.slope_ci is not None else None,
            "bound": self.bound,
            "bound_exponent": self.bound_exponent,
            "violation_rate": self.violation_rate,
            "seconds": self.seconds,
            "figure": self.figure,
            "checks": [
                {"name": c.name, "passed": c.passed, "detail": c.detail, **c.values}
                for c in self.checks
            ],
            "config": self.config,
        }

    def format(self) -> str:
        head = f"{'PASS' if self.passed else 'FAIL'}  {self.name} [{self.scale}]"
        lines = [head, f"      {self.statement}"]
        for c in self.checks:
            lines.append(f"  {'ok ' if c.passed else 'XX '} {c.name}: {c.detail}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Validation:
    """An executable claim. ``tests`` is a tuple of test names (see the module docstring);
    ``beats`` names the algorithm the ``beats`` test compares against."""

    name: str
    statement: str
    algorithm: str
    mdp: str
    scales: dict[str, Scale]
    tests: tuple[str, ...]
    bound: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    delta: float = 0.1
    beats: str | None = None
    linear_min: float = 0.9
    # Values the bound needs beyond (S, A, H, K, delta): e.g. alpha, tau, w_min, or C = 1 for an
    # unspecified absolute constant (the statement must say so). ``bound_factor="H"`` multiplies
    # the bound by H (papers whose returns are normalised to [0, 1]).
    bound_values: dict[str, Any] = field(default_factory=dict)
    bound_factor: str | None = None

    def run(
        self,
        scale: str = "quick",
        *,
        plot: str | None = None,
        progress: bool = False,
        seed: int = 0,
    ) -> Report:
        from theorylab.experiment import run

        if scale not in self.scales:
            raise ValueError(
                f"validation {self.name!r} has scales {sorted(self.scales)}, not {scale!r}"
            )
        sc = self.scales[scale]
        mdp = sc.mdp or self.mdp
        t0 = time.perf_counter()
        params = dict(self.params)
        if "below-bound" in self.tests or "optimism" in self.tests:
            params.setdefault("delta", self.delta)
        result = run(
            self.algorithm,
            mdp,
            episodes=sc.episodes,
            seeds=sc.seeds,
            seed=seed,
            progress=progress,
            **params,
        )
        other = None
        if self.beats is not None:
            other = run(
                self.beats,
                mdp,
                episodes=sc.episodes,
                seeds=sc.seeds,
                seed=seed,
                progress=progress,
                **params,
            )
        checks: list[Check] = []
        rep = Report(
            self.name,
            self.statement,
            scale,
            False,
            checks,
            0.0,
            bound=self.bound,
            config={
                "algorithm": self.algorithm,
                "mdp": mdp,
                "episodes": sc.episodes,
                "seeds": sc.seeds,
                "params": params,
                "seed": seed,
                "versions": result.config.get("versions"),
            },
        )
        cum = result.cumulative_regret  # (B, K)
        bound_curve = None
        if self.bound is not None:
            bound_curve, rep.bound_exponent = run_bound_curve(
                self.bound, result, self.delta, self.bound_values, self.bound_factor
            )
        tests = sc.tests if sc.tests is not None else self.tests
        for test in tests:
            if test == "below-bound":
                checks.append(check_below_bound(cum, bound_curve, self.delta, rep))
            elif test in ("rate", "linear"):
                checks.append(check_rate(test, cum, sc, self.linear_min, rep))
            elif test == "optimism":
                checks.append(check_optimism(result, self.delta))
            elif test == "beats":
                checks.append(check_beats(self.algorithm, cum, self.beats, other))
            else:
                raise ValueError(f"unknown test {test!r} in validation {self.name!r}")
        if rep.slope is None:  # the slope is always reported, tested only where listed
            fit = fit_slope(cum, sc)
            rep.slope, rep.slope_ci = fit.slope, (fit.ci_low, fit.ci_high)
            checks.append(
                Check(
                    "slope (information, not tested at this scale)",
                    True,
                    f"log-log slope {fit.slope:.3f}, 95% CI [{fit.ci_low:.3f}, "
                    f"{fit.ci_high:.3f}] over log-K fractions {sc.fit_range}",
                )
            )
        rep.passed = all(c.passed for c in checks)
        rep.seconds = time.perf_counter() - t0
        if plot:
            _plot(self, result, other, bound_curve, rep, plot)
            rep.figure = plot
        return rep


def carried_bound_curves(result, delta: float) -> tuple[dict[str, np.ndarray], list[str]]:
    """The theorem an online run's algorithm carries, evaluated at every episode when the run
    supplies every variable it needs: ``({label: (K,)}, notes)``. Results of other kinds, and
    algorithms without a drawable bound, give ``({}, [why])``."""
    from theorylab.bounds import get_bound

    if result.result_kind != "regret":
        return {}, [f"(no bound drawn: {result.result_kind} results are drawn without one)"]
    name = algorithm_bound(result.config.get("algorithm", ""))
    if not name:
        return {}, ["(no bound drawn: the algorithm carries no regret theorem)"]
    try:
        curve, _ = run_bound_curve(name, result, delta)
    except ValueError as exc:  # e.g. an unspecified absolute constant, or a variable we lack
        return {}, [f"(bound {name} not drawn: {exc})"]
    curve = np.asarray(curve, dtype=float)
    final = result.cumulative_regret[:, -1]
    note = (
        f"bound {name} at K: {curve[-1]:.4g} (max regret / bound = {final.max() / curve[-1]:.3g});"
        " drawn rescaled to show its rate"
    )
    return {f"{name}: {get_bound(name).source_short()}": curve}, [note]


def run_bound_curve(
    name: str, result, delta: float, extra: dict | None = None, factor: str | None = None
) -> tuple[np.ndarray, float]:
    """The bound ``name`` evaluated at every episode k = 1..K of ``result`` with the run's
    (S, A, H), the given delta and ``extra`` values: ``(curve (K,), exponent in the bound's rate
    variable)``. Raises ValueError when the bound needs a variable that is not supplied (e.g. an
    unspecified absolute constant C)."""
    from theorylab.bounds import get_bound

    bound = get_bound(name)
    K = np.arange(1, result.episodes + 1, dtype=float)
    cfg = result.config
    values = {"S": cfg["S"], "A": cfg["A"], "H": cfg["H"], "K": K, "delta": delta, **(extra or {})}
    curve = np.asarray(bound.evaluate(**bound_inputs(bound, values)), dtype=float)
    if factor == "H":
        curve = curve * cfg["H"]
    exponent = float(bound.exponent(bound.rate_variable))
    return np.broadcast_to(curve, K.shape), exponent


def check_below_bound(cum, bound_curve, delta, rep: Report) -> Check:
    from theorylab.stats import fraction_below

    final, b = cum[:, -1], float(bound_curve[-1])
    frac = fraction_below(final, b)
    violation = 1.0 - frac.fraction
    rep.violation_rate = violation
    passed = violation <= delta
    return Check(
        "below-bound",
        passed,
        f"{np.sum(final > b)}/{len(final)} seeds above the bound {b:.4g} at K={cum.shape[1]} "
        f"(violation rate {violation:.3f}, allowed {delta}); max regret {final.max():.4g}, "
        f"regret/bound = {final.max() / b:.3g}",
        {
            "violation_rate": violation,
            "bound_at_K": b,
            "max_final_regret": float(final.max()),
            "violation_rate_ci": [1.0 - frac.ci_high, 1.0 - frac.ci_low],
        },
    )


def check_rate(test, cum, sc: Scale, linear_min, rep: Report) -> Check:
    fit = fit_slope(cum, sc)
    rep.slope, rep.slope_ci = fit.slope, (fit.ci_low, fit.ci_high)
    if test == "rate":
        lo, hi = sc.slope_range or (0.3, 0.7)
        passed = lo <= fit.ci_low and fit.ci_high <= hi
        target = f"inside [{lo}, {hi}]"
    else:
        passed = fit.ci_low >= linear_min
        target = f">= {linear_min} (linear)"
    return Check(
        test,
        passed,
        f"log-log slope {fit.slope:.3f}, 95% CI [{fit.ci_low:.3f}, {fit.ci_high:.3f}] {target}"
        f" (fitted on log-K fractions {sc.fit_range})"
        + (f"; bound exponent in K: {rep.bound_exponent:g}" if rep.bound_exponent else ""),
        {"slope": fit.slope, "slope_ci": [fit.ci_low, fit.ci_high]},
    )


def fit_slope(cum, sc: Scale):
    """The log-log slope of mean cumulative regret ``cum (B, K)`` on the scale's fit window."""
    from theorylab.stats import loglog_slope

    return loglog_slope(np.arange(1, cum.shape[1] + 1), cum, fit_range=sc.fit_range)


def check_optimism(result, delta) -> Check:
    est = result.value_estimates
    if np.isnan(est).all():
        return Check("optimism", False, "the algorithm reports no value estimate")
    tol = 1e-9 * max(1.0, abs(result.optimal_value))
    bad_seeds = np.any(est < result.optimal_value - tol, axis=1)
    rate = float(bad_seeds.mean())
    worst = float((est - result.optimal_value).min())
    return Check(
        "optimism",
        rate <= delta,
        f"value estimate >= V* on every episode for {int((~bad_seeds).sum())}/{len(bad_seeds)} "
        f"seeds (allowed failure rate {delta}); min(estimate - V*) = {worst:.4g}",
        {"failure_rate": rate, "min_gap": worst},
    )


def check_beats(name, cum, other_name, other) -> Check:
    from scipy import stats as st

    a, b = cum[:, -1], other.cumulative_regret[:, -1]
    with warnings.catch_warnings():  # near-identical seeds: scipy warns about its moment estimate
        warnings.simplefilter("ignore", RuntimeWarning)
        res = st.ttest_ind(a, b, equal_var=False)
    ci = res.confidence_interval(0.95)
    passed = ci.high < 0
    return Check(
        "beats",
        passed,
        f"final regret {name} {a.mean():.2f} vs {other_name} {b.mean():.2f}; "
        f"difference 95% CI [{ci.low:.2f}, {ci.high:.2f}] (must be < 0)",
        {
            "mean": float(a.mean()),
            "other_mean": float(b.mean()),
            "difference_ci": [float(ci.low), float(ci.high)],
        },
    )


def _plot(v: Validation, result, other, bound_curve, rep: Report, path: str) -> None:
    from theorylab.plotting import plot_regret, save_figure

    curves = {v.algorithm: result.cumulative_regret}
    if other is not None:
        curves[v.beats] = other.cumulative_regret
    label = f"{v.bound} (as printed)"
    bounds = {label: bound_curve} if bound_curve is not None else None
    # Log-log axes: the bound as printed beside the null agent's exact regret and the trivial
    # bound (docs: validations.reference), the K from which it is informative marked.
    keywords: dict[str, Any] = {}
    if result.config.get("objective", "expected return") == "expected return":
        from theorylab.mdps import make
        from theorylab.validations.reference import (
            NULL_LABEL,
            TRIVIAL_LABEL,
            max_regret_per_episode,
            null_regret_per_episode,
        )

        mdp = make(result.config["mdp"])
        ks = np.arange(1, result.episodes + 1)
        worst = max_regret_per_episode(mdp, result.optimal_value)
        keywords["references"] = {
            NULL_LABEL: null_regret_per_episode(mdp, result.optimal_value) * ks,
            TRIVIAL_LABEL: worst * ks,
        }
        if bounds is not None:
            below = np.flatnonzero(np.asarray(bound_curve) < worst * ks)
            if below.size:
                keywords["informative_from"] = {label: int(ks[below[0]])}
            else:
                keywords["notes"] = [f"{v.bound} is vacuous over the plotted range"]
    fig = plot_regret(
        curves,
        bound_curves=bounds,
        loglog=True,
        title=f"{v.name} [{rep.scale}]: {'PASS' if rep.passed else 'FAIL'}",
        **keywords,
    )
    save_figure(fig, path)
