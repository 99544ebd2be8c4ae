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
    smoke: str | None = None  # set: this scale is a smoke test; the text says where the real
    # check runs (e.g. "the bound is informative from K >= 3e7: scale 'paper'")
    streamed: bool = False  # run through validations.streamed: the checks read a summary
    # (cumulative regret on a log grid, running statistics), not (B, K) curves (no figure)


STATUSES = ("PASS", "FAIL", "VACUOUS", "INFO")
"""A check's status: PASS (it could have failed and did not), FAIL, VACUOUS (it cannot fail at
this scale: e.g. a bound at or above the trivial bound, an optimistic estimate at the cap), INFO
(reported, not tested)."""

VERDICTS = ("PASS", "FAIL", "VACUOUS", "UNPOWERED", "SMOKE")
"""A claim's verdict: FAIL if a check fails; VACUOUS if no tested check could fail; UNPOWERED if it
passes but one of its negative controls passes too; SMOKE for a scale labelled a smoke test (it
ran and nothing failed, which proves nothing); PASS otherwise."""


@dataclass
class Check:
    """One test of a claim. ``status`` defaults to PASS/FAIL from ``passed``; a check that cannot
    fail at this scale is VACUOUS, one reported for information only is INFO (``passed`` is then
    True: neither counts as a failure)."""

    name: str
    passed: bool
    detail: str
    values: dict[str, Any] = field(default_factory=dict)
    status: str | None = None

    def __post_init__(self) -> None:
        if self.status is None:
            self.status = "PASS" if self.passed else "FAIL"
        if self.status not in STATUSES:
            raise ValueError(f"check status must be one of {STATUSES}, got {self.status!r}")
        self.passed = self.status != "FAIL"


def claim_verdict(checks: list[Check]) -> str:
    """FAIL if any check fails, else PASS if at least one tested check passed, else VACUOUS."""
    statuses = [c.status for c in checks]
    if "FAIL" in statuses:
        return "FAIL"
    return "PASS" if "PASS" in statuses else "VACUOUS"


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
    # Set by theorylab.validations.validate (finalize + the controls), see docs/validations.md
    verdict: str | None = None
    informative_from: dict[str, Any] | None = None  # {"variable", "value", "at", "bound"}
    power: dict[str, Any] | None = None  # {"controls": n, "failing": m, "required": bool}
    controls: list[dict[str, Any]] = field(default_factory=list)
    smoke: str | None = None  # why this scale is only a smoke test (the real check's scale)
    settings: str | None = None  # what this scale runs (scale_settings), set by validate

    def finalize(self) -> Report:
        """Verdict from the checks (before controls): FAIL / PASS / VACUOUS, SMOKE on a smoke
        scale; ``passed`` becomes ``verdict == "PASS"``."""
        verdict = claim_verdict(self.checks)
        if self.smoke and verdict != "FAIL":
            verdict = "SMOKE"
        self.verdict = verdict
        self.passed = verdict == "PASS"
        return self

    def informative_text(self) -> str:
        from theorylab.validations.vacuity import describe_informative

        inf = self.informative_from
        if not inf:
            return "no bound checked"
        if inf.get("from_sweep") and inf["value"] is None:
            text = f"not informative at any {inf['variable']} of the sweep (<= {inf['at']:,})"
        else:
            text = describe_informative(inf["variable"], inf["at"], inf["value"])
        return f"{inf.get('bound') or 'bound'}: {text}"

    def power_text(self) -> str:
        p = self.power
        if p is None:
            return "controls not run"
        if not p["controls"]:
            return "no controls registered"
        names = ", ".join(f"{c['control']}: {c['verdict']}" for c in self.controls)
        return f"{p['failing']}/{p['controls']} controls fail it ({names})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "statement": self.statement,
            "scale": self.scale,
            "passed": self.passed,
            "verdict": self.verdict,
            "informative_from": self.informative_from,
            "power": self.power,
            "controls": self.controls,
            "smoke": self.smoke,
            "settings": self.settings,
            "slope": self.slope,
            "slope_ci": list(self.slope_ci) if self.slope_ci is not None else None,
            "bound": self.bound,
            "bound_exponent": self.bound_exponent,
            "violation_rate": self.violation_rate,
            "seconds": self.seconds,
            "figure": self.figure,
            "checks": [
                {"name": c.name, "status": c.status, "passed": c.passed, "detail": c.detail,
                 **c.values}
                for c in self.checks
            ],
            "config": self.config,
        }  # fmt: skip

    def format(self) -> str:
        verdict = self.verdict or claim_verdict(self.checks)
        lines = [f"{verdict}  {self.name} [{self.scale}]", f"      {self.statement}"]
        if self.settings:  # the statement describes every scale; this is the one that ran
            lines.append(f"      this run, scale {self.scale}: {self.settings}")
        if self.smoke:
            lines.append(f"      smoke test at this scale: {self.smoke}")
        for c in self.checks:
            lines.append(f"  {c.status:8s} {c.name}: {c.detail}")
        lines.append(f"  informative: {self.informative_text()}")
        lines.append(f"  power: {self.power_text()}")
        return "\n".join(lines)


def scale_settings(claim, scale: str) -> str:
    """What ``claim`` runs at ``scale``, one line: its settings that are set (``episodes=2000,
    seeds=8, mdp=riverswim:S=2,H=2``), from the scale's dataclass or dict."""
    import dataclasses

    sc = claim.scales[scale]
    if dataclasses.is_dataclass(sc):
        items = {
            f.name: getattr(sc, f.name)
            for f in dataclasses.fields(sc)
            if getattr(sc, f.name) != f.default and f.name != "smoke"
        }
    elif isinstance(sc, dict):
        items = dict(sc)
    else:  # a bare number or tuple, read by the claim's own code
        return repr(sc)

    def text(value) -> str:
        if isinstance(value, bool) or not isinstance(value, (int, float, tuple, list)):
            return str(value)
        if isinstance(value, (tuple, list)):
            return "/".join(text(v) for v in value) if value else "none"
        return f"{value:,}" if isinstance(value, int) else f"{value:g}"

    shown = {
        k: v
        for k, v in items.items()
        if v is not None and not (hasattr(v, "__len__") and not len(v))
    }
    return ", ".join(f"{k}={text(v)}" for k, v in shown.items()) or "defaults"


@dataclass(frozen=True)
class ScaledClaim:
    """Base of the claims that are a name, a statement, per-scale settings and
    ``_run(cfg, seed, plot, rep)`` adding checks to the report (offline and preference claims).

    ``run`` checks the scale, times the run, passes the report when it has checks and every
    check passed, and records the figure when ``_run`` wrote one to ``plot``.
    """

    name: str
    statement: str
    scales: dict[str, dict[str, Any]] = field(default_factory=dict)
    bound: str | None = None

    def run(
        self,
        scale: str = "quick",
        *,
        plot: str | None = None,
        progress: bool = False,
        seed: int = 0,
    ) -> Report:
        from pathlib import Path

        if scale not in self.scales:
            raise ValueError(
                f"validation {self.name!r} has scales {sorted(self.scales)}, not {scale!r}"
            )
        t0, started = time.perf_counter(), time.time()
        rep = Report(self.name, self.statement, scale, False, [], 0.0, bound=self.bound)
        rep.config = {"scale": dict(self.scales[scale]), "seed": seed}
        self._run(self.scales[scale], seed, plot, rep)
        rep.passed = bool(rep.checks) and all(c.passed for c in rep.checks)
        rep.seconds = time.perf_counter() - t0
        if plot and Path(plot).exists() and Path(plot).stat().st_mtime >= started:
            rep.figure = plot  # claims without a figure (exact identities) leave it None
        return rep

    def _run(self, cfg: dict, seed: int, plot: str | None, rep: Report) -> None:
        raise NotImplementedError


def save_claim_figure(ax, path: str | None) -> None:
    """Write a claim's figure when a path was asked for."""
    if path:
        from theorylab.plotting import save_figure

        save_figure(ax, path)


def finished_report(
    name, statement, scale, checks, t0: float, config, figure=None, **extra
) -> Report:
    """The :class:`Report` of a claim whose checks are made: passed when every check passed,
    timed from ``t0`` (``time.perf_counter()`` at its start), with its ``figure`` path and
    ``extra`` Report fields. The exact claims' modules call it ``_report``."""
    return Report(
        name,
        statement,
        scale,
        all(c.passed for c in checks),
        checks,
        time.perf_counter() - t0,
        config=config,
        figure=figure,
        **extra,
    )


def regret_report(
    claim, scale: str, mdp, episodes: int, seeds: int, params: dict, seed: int, **config: Any
) -> Report:
    """The empty report of a regret claim run: its name, statement, scale and bound, and the run's
    configuration (algorithm, MDP, K, seeds, parameters, seed, then ``config``'s extra keys)."""
    return Report(
        claim.name,
        claim.statement,
        scale,
        False,
        [],
        0.0,
        bound=claim.bound,
        config={
            "algorithm": claim.algorithm,
            "mdp": mdp.name,
            "episodes": episodes,
            "seeds": seeds,
            "params": params,
            "seed": seed,
            **config,
        },
    )


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

    controls: tuple[str, ...] = ()  # names in theorylab.validations.controls.CONTROLS

    def run(
        self,
        scale: str = "quick",
        *,
        plot: str | None = None,
        progress: bool = False,
        seed: int = 0,
    ) -> Report:
        from theorylab.experiment import run
        from theorylab.mdps import make
        from theorylab.validations.reference import informative_from

        if scale not in self.scales:
            raise ValueError(
                f"validation {self.name!r} has scales {sorted(self.scales)}, not {scale!r}"
            )
        sc = self.scales[scale]
        mdp = make(sc.mdp or self.mdp)
        # A model whose rewards were mapped to [0, 1] (mdp.reward_map, e.g. a user's .npz): the
        # claim is checked on the mapped problem, in the [0, 1] units its bound card is stated
        # in, and the report says so (an INFO line) rather than mixing units.
        rmap = getattr(mdp, "reward_map", None)
        mapped = rmap is not None and not rmap.identity
        if mapped:
            mdp = mdp.on_unit_rewards()
        t0 = time.perf_counter()
        params = dict(self.params)
        if "below-bound" in self.tests or "optimism" in self.tests:
            params.setdefault("delta", self.delta)
        if sc.streamed:
            return self._run_streamed(scale, sc, mdp, params, seed, t0)
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
        rep = regret_report(
            self,
            scale,
            mdp,
            sc.episodes,
            sc.seeds,
            params,
            seed,
            versions=result.config.get("versions"),
        )
        checks = rep.checks
        cum = result.cumulative_regret  # (B, K)
        rep.smoke = sc.smoke
        yard = episode_yardstick(mdp, result.optimal_value, run_objective(self.algorithm, params))
        rep.config["max_episode_regret"] = yard.max_regret
        rep.config["null_episode_regret"] = yard.null_regret
        bound_curve = None
        if self.bound is not None:
            bound_curve, rep.bound_exponent = run_bound_curve(
                self.bound, result, self.delta, self.bound_values, self.bound_factor
            )
            first = informative_from(
                lambda k: bound_at_k(
                    self.bound, result.config, k, self.delta, self.bound_values, self.bound_factor
                ),
                yard.max_regret,
            )
            rep.informative_from = {
                "variable": "K",
                "value": first,
                "at": result.episodes,
                "bound": self.bound,
                "max_episode_regret": yard.max_regret,
            }
        tests = sc.tests if sc.tests is not None else self.tests
        for test in tests:
            if test == "below-bound":
                checks.append(check_below_bound(cum, bound_curve, self.delta, rep, yard.max_regret))
            elif test in ("rate", "linear"):
                checks.append(check_rate(test, cum, sc, self.linear_min, rep))
            elif test == "optimism":
                checks.append(check_optimism(result, self.delta, cap=yard.value_cap))
            elif test == "learns":
                checks.append(check_learns(result.regret, yard.null_regret))
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
                    status="INFO",
                )
            )
        if "learns" not in tests and yard.null_regret is not None:
            checks.append(burn_in_information(result.regret, yard.null_regret))
        if mapped:
            rep.config["reward_map"] = {"offset": rmap.offset, "scale": rmap.scale}
            checks.append(
                Check(
                    "units",
                    True,
                    f"rewards mapped to [0, 1] by {rmap.describe()}: every number above is the "
                    "mapped problem's, where the bound card (rewards in [0, 1]) applies; regret "
                    f"in your units is {rmap.scale:.6g} x these",
                    status="INFO",
                )
            )
        rep.finalize()
        rep.seconds = time.perf_counter() - t0
        if plot:
            _plot(self, result, other, bound_curve, rep, plot)
            rep.figure = plot
        return rep


def _run_streamed(self, scale, sc, mdp, params, seed, t0) -> Report:
    """:meth:`Validation.run` on a streamed scale (``Scale.streamed``): the same checks, read
    from a :class:`theorylab.validations.streamed.RegretSummary` (no (B, K) curves, no figure).
    Tests: below-bound, optimism, learns, rate / linear (fitted on the summary's grid)."""
    from theorylab.stats import loglog_slope
    from theorylab.validations.reference import informative_from
    from theorylab.validations.streamed import streamed_run

    if self.beats is not None:
        raise ValueError(f"{self.name}: a streamed scale cannot run the 'beats' test")
    summary = streamed_run(self.algorithm, mdp, sc.episodes, sc.seeds, seed=seed, **params)
    K = summary.episodes
    rep = regret_report(
        self,
        scale,
        mdp,
        K,
        sc.seeds,
        params,
        seed,
        loop=summary.config["loop"],
        grid_points=summary.config["grid_points"],
        run_seconds=summary.wall_seconds,
    )
    checks = rep.checks
    rep.smoke = sc.smoke
    yard = episode_yardstick(mdp, summary.optimal_value, run_objective(self.algorithm, params))
    dmax, null, cap = yard.max_regret, yard.null_regret, yard.value_cap
    rep.config["max_episode_regret"], rep.config["null_episode_regret"] = dmax, null
    bound_K = None
    if self.bound is not None:
        from theorylab.bounds import get_bound

        def at(k):
            return bound_at_k(
                self.bound, summary.config, k, self.delta, self.bound_values, self.bound_factor
            )

        bound_K = float(np.asarray(at(np.array([float(K)])))[0])
        b = get_bound(self.bound)
        rep.bound_exponent = float(b.exponent(b.rate_variable))
        rep.informative_from = {
            "variable": "K",
            "value": informative_from(at, dmax),
            "at": K,
            "bound": self.bound,
            "max_episode_regret": dmax,
        }
    tests = sc.tests if sc.tests is not None else self.tests
    x = summary.grid.astype(float)
    for test in tests:
        if test == "below-bound":
            checks.append(
                below_bound_check(
                    summary.final, bound_K, self.delta, rep, trivial=K * dmax, where=f"K={K}"
                )
            )
        elif test == "optimism":
            checks.append(check_optimism_summary(summary, self.delta, cap))
        elif test == "learns":
            checks.append(check_learns_summary(summary, null))
        elif test in ("rate", "linear"):
            checks.append(check_rate(test, summary.cum, sc, self.linear_min, rep, x=x))
        else:
            raise ValueError(f"test {test!r} of {self.name!r} has no streamed form")
    if rep.slope is None:
        fit = loglog_slope(x, summary.cum, fit_range=sc.fit_range)
        rep.slope, rep.slope_ci = fit.slope, (fit.ci_low, fit.ci_high)
        checks.append(
            Check(
                "slope (information, not tested at this scale)",
                True,
                f"log-log slope {fit.slope:.3f}, 95% CI [{fit.ci_low:.3f}, {fit.ci_high:.3f}] "
                f"over log-K fractions {sc.fit_range} (on the run's grid)",
                status="INFO",
            )
        )
    if "learns" not in tests:
        c = check_learns_summary(summary, null)
        c.name, c.status, c.passed = "learns (information, not tested)", "INFO", True
        checks.append(c)
    rep.finalize()
    rep.seconds = time.perf_counter() - t0
    return rep


Validation._run_streamed = _run_streamed


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


def bound_at_k(
    name: str,
    config: dict[str, Any],
    K: np.ndarray,
    delta: float,
    extra: dict | None = None,
    factor: str | None = None,
) -> np.ndarray:
    """The bound ``name`` at episodes ``K (n,)`` with the run's (S, A, H) from ``config``, the
    given delta and ``extra`` values (``factor="H"`` multiplies by H). Raises ValueError when the
    bound needs a variable that is not supplied (e.g. an unspecified absolute constant C)."""
    from theorylab.bounds import get_bound

    bound = get_bound(name)
    K = np.asarray(K, dtype=float)
    values = {
        "S": config["S"], "A": config["A"], "H": config["H"], "K": K, "delta": delta,
        **(extra or {}),
    }  # fmt: skip
    curve = np.asarray(bound.evaluate(**bound_inputs(bound, values)), dtype=float)
    if factor == "H":
        curve = curve * config["H"]
    return np.broadcast_to(curve, K.shape)


def run_bound_curve(
    name: str, result, delta: float, extra: dict | None = None, factor: str | None = None
) -> tuple[np.ndarray, float]:
    """The bound ``name`` evaluated at every episode k = 1..K of ``result`` with the run's
    (S, A, H), the given delta and ``extra`` values: ``(curve (K,), exponent in the bound's rate
    variable)``."""
    from theorylab.bounds import get_bound

    K = np.arange(1, result.episodes + 1, dtype=float)
    curve = bound_at_k(name, result.config, K, delta, extra, factor)
    exponent = float(get_bound(name).exponent(get_bound(name).rate_variable))
    return curve, exponent


@dataclass(frozen=True)
class Yardstick:
    """What a run's regret is measured against, all per episode, from the true MDP and the
    objective (never from the agent under test's estimates):

    max_regret: Delta_max, the largest regret one episode can have (K Delta_max is the trivial
        bound; exact for the expected return, ``V*_obj - H r_min`` for a risk measure);
    null_regret: the expected regret of the null agent (a uniformly random action at every step;
        exact for the expected return, the mean over 256 random deterministic policies for a risk
        measure, whose value is not linear in the policy); None when unavailable;
    value_cap: ``H r_max``, the a-priori largest value: an estimate at or above it is
        optimistic for any agent.
    """

    max_regret: float
    null_regret: float | None
    value_cap: float


NULL_DRAWS = 256


def episode_yardstick(mdp, optimal_value: float, objective=None) -> Yardstick:
    """The :class:`Yardstick` of a run on ``mdp`` (an MDP object) whose optimum is
    ``optimal_value``, for the in-memory and the streamed paths alike. ``objective``: the run's
    objective object when it is not the expected return (see :func:`run_objective`)."""
    from theorylab.algorithms.planning import evaluate_policies
    from theorylab.validations.vacuity import (
        max_episode_regret,
        max_episode_regret_for_objective,
    )

    H = mdp.horizon
    R = np.asarray(mdp.R, dtype=float)
    cap = float(H * R.max())
    v_star = float(optimal_value)
    if objective is None:
        uniform = np.full((1, H, mdp.S, mdp.A), 1.0 / mdp.A)
        v_null = float(evaluate_policies(mdp, uniform, batched=True)[0, 0] @ mdp.mu0)
        return Yardstick(max_episode_regret(mdp), v_star - v_null, cap)
    rng = np.random.default_rng(20261124)
    draws = rng.integers(0, mdp.A, size=(NULL_DRAWS, H, mdp.S))
    try:
        v_null = float(np.mean(objective.policy_values(mdp, draws)))
        null = v_star - v_null
    except Exception:  # an objective that cannot score plain Markov policies
        null = None
    return Yardstick(max_episode_regret_for_objective(mdp, v_star), null, cap)


def run_objective(algorithm: str, params: dict[str, Any]):
    """The objective a run of ``algorithm`` with ``params`` is scored by, from its registration
    (``theorylab.algorithms.objectives.objective_of``, never from the agent), or None for the
    expected return."""
    from theorylab.algorithms.objectives import RISK_NEUTRAL, objective_of
    from theorylab.algorithms.registry import get_algorithm
    from theorylab.registry import convert_parameters, parse_spec

    entry = get_algorithm(algorithm)
    raw = parse_spec(algorithm)[1]
    typed = {**convert_parameters(entry.name, "algorithm", raw, entry.parameters()), **params}
    obj = objective_of(entry, typed)
    return None if obj is RISK_NEUTRAL else obj


def check_below_bound(
    cum, bound_curve, delta, rep: Report, max_episode_regret: float | None = None
) -> Check:
    """Violation rate of the bound at K <= delta. VACUOUS when the bound at K is at or above the
    trivial bound K * max_episode_regret (no agent could exceed it)."""
    final, b = cum[:, -1], float(bound_curve[-1])
    K = cum.shape[1]
    trivial = None if max_episode_regret is None else K * max_episode_regret
    return below_bound_check(final, b, delta, rep, trivial=trivial, where=f"K={K}")


def below_bound_check(
    final,
    b: float,
    delta: float,
    rep: Report | None,
    *,
    trivial: float | None,
    where: str,
    name: str = "below-bound",
    extra: str = "",
) -> Check:
    """``final (B,)`` against the bound value ``b``: PASS when at most a fraction delta of the
    seeds exceed it, FAIL otherwise, VACUOUS when ``b >= trivial`` (the largest value ``final``
    can take), whatever the seeds did."""
    from theorylab.stats import fraction_below

    final = np.asarray(final, dtype=float)
    frac = fraction_below(final, b)
    violation = 1.0 - frac.fraction
    if rep is not None:
        rep.violation_rate = violation
    vacuous = trivial is not None and b >= trivial
    status = "VACUOUS" if vacuous else ("PASS" if violation <= delta else "FAIL")
    detail = (
        f"{int(np.sum(final > b))}/{len(final)} seeds above the bound {b:.4g} at {where} "
        f"(violation rate {violation:.3f}, allowed {delta}); max {final.max():.4g}, "
        f"ratio to the bound {final.max() / b:.3g}{extra}"
    )
    if trivial is not None:
        detail += (
            f"; trivial bound {trivial:.4g}: "
            + ("the bound is above it, so no agent can exceed it (vacuous)" if vacuous
               else f"bound/trivial = {b / trivial:.3g}")
        )  # fmt: skip
    return Check(
        name,
        violation <= delta,
        detail,
        {
            "violation_rate": violation,
            "bound_at_K": b,
            "trivial_bound": trivial,
            "max_final_regret": float(final.max()),
            "violation_rate_ci": [1.0 - frac.ci_high, 1.0 - frac.ci_low],
        },
        status=status,
    )


def check_learns(regret: np.ndarray, null_regret: float | None, *, status=None) -> Check:
    """Has the run left its burn-in? ``regret (B, K)`` per-episode regret.

    PASS when the upper end of the 95% Student t interval (over seeds) of the mean per-episode
    regret over the last tenth of the run is at most half the null agent's per-episode regret
    (the learner has removed at least half of what a uniformly random agent loses; a frozen or
    random agent cannot). Reported: the first K at which the per-episode regret, averaged over
    seeds and a window of max(10, k/10) episodes starting at k
    (:func:`theorylab.validations.reference.window_means`), falls below the null agent's; the
    burn-in K (:func:`theorylab.validations.reference.burn_in_end`: the first episode from which
    that mean stays below half the null agent's, the test's threshold, so a frozen agent that
    happens to beat the null slightly is still "in burn-in"); and the log-log slope of
    R(k) - R(k_burn) against k - k_burn after it.
    """
    from theorylab.stats import final_ci, loglog_slope
    from theorylab.validations.reference import burn_in_end
    from theorylab.validations.reference import first_below as first_below_null

    B, K = regret.shape
    if null_regret is None or not null_regret > 0:
        return Check("learns", True, "no null agent for this objective", status="INFO")
    tail = regret[:, K - max(1, K // 10) :].mean(axis=1)  # (B,)
    ci = final_ci(tail)
    passed = ci.ci_high <= 0.5 * null_regret
    k_burn = burn_in_end(regret, null_regret)  # stays below half the null's (one definition)
    first_below = first_below_null(regret, null_regret)  # the same windows
    slope_text = "no burn-in end within the run"
    values = {"burn_in_K": k_burn, "first_below_null_K": first_below}
    if k_burn is not None and K - k_burn >= 20:
        cum = np.cumsum(regret, axis=1)
        base = cum[:, k_burn - 2] if k_burn >= 2 else 0.0
        after = cum[:, k_burn - 1 :] - np.asarray(base).reshape(-1, 1)  # (B, K - k_burn + 1)
        n = after.shape[1]
        # 200 log-spaced points of the second half of log(k - k_burn) where the mean excess
        # regret is positive (a long run has millions of episodes)
        idx = np.unique(np.geomspace(max(1.0, np.sqrt(n)), n, 200).astype(np.int64)) - 1
        idx = idx[after[:, idx].mean(axis=0) > 0]
        if idx.size >= 5:
            with warnings.catch_warnings():  # seeds with no regret yet in a bootstrap draw
                warnings.simplefilter("ignore", RuntimeWarning)
                fit = loglog_slope(idx + 1.0, after[:, idx], fit_range=(0.0, 1.0))
            slope_text = (
                f"slope of R(k) - R(k_burn) after it {fit.slope:.3f} "
                f"[{fit.ci_low:.3f}, {fit.ci_high:.3f}]"
            )
            values["slope_after_burn_in"] = fit.slope
        else:
            slope_text = "no regret after it"
            values["slope_after_burn_in"] = None
    burn = (
        (f"first below the null's at K = {first_below:,}; " if first_below else "never below the "
         "null's; ")
        + (f"burn-in ends at K = {k_burn:,}" if k_burn else "still in burn-in at the end")
    )  # fmt: skip
    values.update(
        {"tail_regret_mean": ci.mean, "tail_regret_ci_high": ci.ci_high, "null": null_regret}
    )
    return Check(
        "learns",
        passed,
        f"per-episode regret over the last tenth {ci.mean:.4g} (95% CI upper {ci.ci_high:.4g}) "
        f"vs the null agent's {null_regret:.4g} (must be <= half of it); {burn} (the first K "
        f"from which the mean over a window of max(10, k/10) episodes starting at every later k "
        f"stays below half the null's); {slope_text}",
        values,
        status=status,
    )


def burn_in_information(regret, null_regret) -> Check:
    """:func:`check_learns` reported, not tested."""
    c = check_learns(regret, null_regret)
    c.name, c.status, c.passed = "learns (information, not tested)", "INFO", True
    return c


def check_optimism_summary(s, delta: float, cap: float) -> Check:
    """:func:`check_optimism` on a ``RegretSummary`` (``theorylab.validations.streamed``): the
    same statuses and thresholds."""
    if not np.isfinite(s.min_gap).any():
        return Check("optimism", False, "the algorithm reports no value estimate")
    return _optimism_check(s.min_gap, s.optimal_value, delta, cap if s.at_cap else None)


def _optimism_check(min_gap, optimal_value: float, delta, cap_reached: float | None) -> Check:
    """The optimism verdict from each seed's smallest ``estimate - V*`` (``min_gap (B,)``):
    VACUOUS when every estimate sat at the cap ``cap_reached`` (None: some did not), else PASS
    when at most a ``delta`` fraction of the seeds went below V* (beyond round-off)."""
    if cap_reached is not None:
        return Check(
            "optimism",
            True,
            f"every estimate is at the cap H r_max = {cap_reached:.4g} of the value range, which "
            "is >= V* for any agent: optimism is not tested at this scale (vacuous)",
            {"failure_rate": 0.0, "at_cap": True},
            status="VACUOUS",
        )
    tol = 1e-9 * max(1.0, abs(optimal_value))
    bad = min_gap < -tol
    rate = float(bad.mean())
    worst = float(min_gap.min())
    return Check(
        "optimism",
        rate <= delta,
        f"value estimate >= V* on every episode for {int((~bad).sum())}/{bad.size} seeds "
        f"(allowed failure rate {delta}); min(estimate - V*) = {worst:.4g}",
        {"failure_rate": rate, "min_gap": worst},
    )


def check_learns_summary(s, null_regret: float) -> Check:
    """:func:`check_learns` on a ``RegretSummary`` (``theorylab.validations.streamed``): the same
    test (upper end of the 95% t-interval of the
    last-tenth per-episode regret at most half the null agent's) and the same reported burn-in
    measurements, read off the grid (module docstring)."""
    from theorylab.stats import final_ci, loglog_slope

    ci = final_ci(s.tail_mean)
    passed = ci.ci_high <= 0.5 * null_regret
    starts, window = s.window_means()
    below_half = window < 0.5 * null_regret
    k_burn = None
    if below_half.size and below_half[-1]:
        above = np.flatnonzero(~below_half)
        k_burn = int(starts[0] if above.size == 0 else starts[above[-1] + 1])
    under = np.flatnonzero(window < null_regret * (1.0 - 1e-9))
    first = int(starts[under[0]]) if under.size else None
    values = {"burn_in_K": k_burn, "first_below_null_K": first}
    slope_text = "no burn-in end within the run"
    if k_burn is not None and s.episodes - k_burn >= 20:
        base = np.array([np.interp(k_burn - 1, np.r_[0, s.grid], np.r_[0.0, c]) for c in s.cum])
        keep = s.grid >= k_burn
        x = (s.grid[keep] - k_burn + 1).astype(float)
        after = s.cum[:, keep] - base[:, None]
        mean_pos = after.mean(axis=0) > 0
        half = x >= np.sqrt(x[-1])  # the second half of log(k - k_burn)
        pts = np.flatnonzero(mean_pos & half)
        if pts.size >= 5:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                fit = loglog_slope(x[pts], after[:, pts], fit_range=(0.0, 1.0))
            slope_text = (
                f"slope of R(k) - R(k_burn) after it {fit.slope:.3f} "
                f"[{fit.ci_low:.3f}, {fit.ci_high:.3f}]"
            )
            values["slope_after_burn_in"] = fit.slope
        else:
            slope_text = "no regret after it"
            values["slope_after_burn_in"] = None
    burn = (
        f"first below the null's at K = {first:,}; " if first else "never below the null's; "
    ) + (f"burn-in ends at K = {k_burn:,}" if k_burn else "still in burn-in at the end")
    values.update(
        {"tail_regret_mean": ci.mean, "tail_regret_ci_high": ci.ci_high, "null": null_regret}
    )
    return Check(
        "learns",
        passed,
        f"per-episode regret over the last tenth {ci.mean:.4g} (95% CI upper {ci.ci_high:.4g}) "
        f"vs the null agent's {null_regret:.4g} (must be <= half of it); {burn} (windows of "
        f"max(10, k/10) episodes read off the run's grid of {s.grid.size:,} episodes); "
        f"{slope_text}",
        values,
    )


def check_rate(test, cum, sc: Scale, linear_min, rep: Report, x=None) -> Check:
    """The rate / linear test on ``cum (B, n)`` at episodes ``x (n,)`` (default 1..n)."""
    fit = fit_slope(cum, sc, x)
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


def fit_slope(cum, sc: Scale, x=None):
    """The log-log slope of mean cumulative regret ``cum (B, n)`` on the scale's fit window, at
    episodes ``x (n,)`` (default 1..n)."""
    from theorylab.stats import loglog_slope

    x = np.arange(1, cum.shape[1] + 1) if x is None else x
    return loglog_slope(x, cum, fit_range=sc.fit_range)


def check_optimism(result, delta, cap: float | None = None) -> Check:
    """Optimism on every episode for >= 1 - delta of the seeds. VACUOUS when every estimate sits
    at or above ``cap`` (the a-priori largest value, H r_max): such an estimate is >= V* for
    any agent, a frozen one included."""
    from theorylab.validations.vacuity import estimate_at_cap

    est = result.value_estimates
    if np.isnan(est).all():
        return Check("optimism", False, "the algorithm reports no value estimate")
    at_cap = cap is not None and estimate_at_cap(est, cap)
    # a seed's smallest gap, NaN-free episodes only (a NaN estimate is never below V*)
    min_gap = np.fmin.reduce(est - result.optimal_value, axis=1)
    return _optimism_check(min_gap, result.optimal_value, delta, cap if at_cap else None)


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
        title=f"{v.name} [{rep.scale}]",
        **keywords,
    )
    save_figure(fig, path)
