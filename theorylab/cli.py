"""The ``theorylab`` command line: list, solve, run, validate, bench, train, demo, papers.

Output is plain and parseable: aligned tables on stdout, ``--json`` for machines. Long work shows
a progress bar on stderr. Errors in user input exit with status 2 and a one-line message.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from theorylab.errors import RunInterrupted, TheorylabError
from theorylab.table import from_dicts as _table


def _params(pairs: list[str] | None) -> dict:
    """``--param delta=0.05 --param bonus_scale=0.5`` -> typed dict (numbers parsed, no eval)."""
    out: dict = {}
    for item in pairs or []:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ValueError(f"--param expects key=value, got {item!r}")
        for kind in (int, float):
            try:
                out[key] = kind(value)
                break
            except ValueError:
                continue
        else:
            out[key] = {"true": True, "false": False}.get(value.lower(), value)
    return out


def _positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _nonnegative_float(text: str) -> float:
    """argparse type: a finite number >= 0."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {value}")
    return value


def _integer_at_least(minimum: int):
    """argparse type: an integer >= ``minimum`` (the error names the flag, the value and this)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {value}")
        return value

    return parse


# --------------------------------------------------------------------------- list
def cmd_list(args) -> int:
    what = args.what
    if what == "mdps":
        from theorylab.mdps import MDP_FAMILIES, list_families

        rows = [
            {
                "name": n,
                "parameters": MDP_FAMILIES.parameters(n),
                "summary": MDP_FAMILIES.summary(n),
            }
            for n in list_families()
        ]
    elif what == "algorithms":
        from theorylab.algorithms.registry import get_algorithm, list_algorithms

        rows = []
        for n in list_algorithms():
            e = get_algorithm(n)
            rows.append(
                {
                    "name": n,
                    "kind": e.kind,
                    "problem": e.problem,
                    "bounds": ",".join(e.bounds) or "-",
                    "parameters": e.parameters(),
                    "summary": e.summary,
                }
            )
    elif what == "losses":
        from theorylab.algorithms.deep import LOSSES, list_losses, loss_parameters

        rows = [
            {"name": n, "parameters": loss_parameters(n), "summary": LOSSES.summary(n)}
            for n in list_losses()
        ]
    elif what == "bounds":
        from theorylab.bounds import get_bound, list_bounds

        rows = [{"name": n, "summary": get_bound(n).summary()} for n in list_bounds()]
    else:
        from theorylab.validations import VALIDATIONS, list_validations

        rows = [{"name": n, "summary": VALIDATIONS.get(n).statement} for n in list_validations()]
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
    else:
        print(_listing(rows))
    return 0


def _listing(rows: list[dict]) -> str:
    """``theorylab list``'s plain output: the short columns as a table and, beside them, each
    entry's summary in full, wrapped to the terminal's width (``COLUMNS``, else the terminal,
    else 100 when piped); its bounds and parameters follow as labelled lines. When the short
    columns leave under 40 characters, the text goes under each entry, indented by 4; when they
    do not fit at all, each entry is a block: its name, then its other columns labelled."""
    import shutil
    import textwrap

    if not rows:
        return "(empty)"
    long = ("summary", "bounds", "parameters")
    short = [c for c in rows[0] if c not in long]
    width = max(40, shutil.get_terminal_size((100, 24)).columns)
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in short}
    beside = sum(widths.values()) + 2 * len(short)
    stacked = beside - 2 > width  # the short columns alone overflow: a labelled block per entry
    below = stacked or width - beside < 40
    indent = 4 if below else beside
    room = width - indent

    def text(r: dict) -> list[str]:
        parts = [str(r.get("summary") or "")]
        if r.get("bounds") not in (None, "-", ""):
            parts.append("bounds: " + str(r["bounds"]).replace(",", ", "))
        if r.get("parameters"):
            params = ", ".join(f"{k}={v}" for k, v in r["parameters"].items())
            parts.append(f"parameters: {params}")
        wrap = dict(width=room, break_on_hyphens=False, break_long_words=False)
        return [line for p in parts if p for line in textwrap.wrap(p, **wrap)] or [""]

    if stacked:
        out = []
        for r in rows:
            out.append(str(r[short[0]]))
            meta = ", ".join(f"{c}: {r[c]}" for c in short[1:])
            wrap = dict(width=room, break_on_hyphens=False, break_long_words=False)
            out += [" " * indent + line for line in textwrap.wrap(meta, **wrap)]
            out += [" " * indent + line for line in text(r)]
        return "\n".join(out)
    head = "  ".join(c.ljust(widths[c]) for c in short)
    rule = "  ".join("-" * widths[c] for c in short)
    if not below:
        head, rule = f"{head}  summary", f"{rule}  {'-' * room}"
    out = [head.rstrip(), rule]
    for r in rows:
        cells = "  ".join(str(r[c]).ljust(widths[c]) for c in short)
        lines = text(r)
        if below:
            out.append(cells.rstrip())
            out += [" " * indent + line for line in lines]
        else:
            out.append(f"{cells}  {lines[0]}".rstrip())
            out += [" " * indent + line for line in lines[1:]]
    return "\n".join(out)


# --------------------------------------------------------------------------- solve
def cmd_solve(args) -> int:
    import numpy as np

    from theorylab.algorithms import planning
    from theorylab.mdps import make

    t0 = time.perf_counter()
    mdp = make(args.mdp)
    build = time.perf_counter() - t0
    if not hasattr(mdp, "horizon"):  # a comparison bandit or a preference game: no MDP to solve
        raise ValueError(
            f"{args.mdp} is a {type(mdp).__name__}, not an MDP: solve plans on MDPs (its optimum "
            "is computed exactly by the runs of the algorithms that take it)"
        )
    if args.gamma is not None:
        mdp = mdp.with_objective(gamma=args.gamma, horizon=None)
    rmap = getattr(mdp, "reward_map", None)
    mapped = rmap is not None and not rmap.identity
    if mapped and (args.cvar is not None or args.iterated_cvar is not None or args.dual):
        print(
            f"(rewards mapped to [0, 1]: {rmap.describe()}; the values below are the mapped "
            "problem's)"
        )
    if args.cvar is not None or args.iterated_cvar is not None:
        return _solve_risk(args, mdp, build)
    if args.dual is not None:
        return _solve_dual(args, mdp)
    mdp, dropped_horizon = _discounted_if_asked(mdp, args.method)
    method = args.method
    if method == "auto":
        method = "backward_induction" if mdp.horizon is not None else "value_iteration"
    vi_options = {"tol": args.tol, "stopping": args.stopping}
    given = [f"--{k}" for k, v in vi_options.items() if v is not None]
    if given and method != "value_iteration":
        raise ValueError(
            f"{' and '.join(given)} set value iteration's stopping rule; the method here is "
            f"{method} (a discounted MDP, --gamma, or --method value_iteration uses them)"
        )
    options = {k: v for k, v in vi_options.items() if v is not None}
    if method == "lp":
        options["kind"] = "dual"
    t0 = time.perf_counter()
    sol = planning.solve(mdp, method, **options)
    seconds = time.perf_counter() - t0
    pol = np.asarray(sol.policy)
    undetermined = None
    if not np.issubdtype(pol.dtype, np.integer):  # the LP's pi(a|s) = d(s,a) / sum_a d(s,a)
        # The LP's policy is defined where the optimal occupancy d(s, .) has mass (states an
        # optimal policy reaches from mu0); elsewhere every action is LP-optimal, so those
        # states are marked undetermined instead of showing an arbitrary action.
        undetermined = np.asarray(sol.occupancy).sum(axis=-1) <= 0  # (H, S) or (S,)
        pol = pol.argmax(axis=-1)
    first = pol[0] if pol.ndim == 2 else pol  # stage h = 0, or the stationary policy
    first_undetermined = None
    if undetermined is not None:
        first_undetermined = undetermined[0] if undetermined.ndim == 2 else undetermined
    out = {
        "mdp": mdp.name,
        "S": mdp.S,
        "A": mdp.A,
        "H": mdp.horizon,
        "gamma": mdp.gamma,
        "method": method,
        "value": float(mdp.user_value(sol.value)) if mapped else float(sol.value),
        "solve_seconds": seconds,
        "build_seconds": build,
        "policy_first_stage": (
            [
                None if first_undetermined is not None and first_undetermined[s] else int(a)
                for s, a in enumerate(first)
            ]
            if mdp.S <= 64
            else None
        ),
        "policy_action_counts": np.bincount(
            first if first_undetermined is None else first[~first_undetermined],
            minlength=mdp.A,
        ).tolist(),
        "policy_undetermined_states": (
            int(first_undetermined.sum()) if first_undetermined is not None else 0
        ),
        "error_bound": getattr(sol, "info", {}).get("error_bound", 0.0),
    }
    if mapped:  # the user's units: values by the affine map, the error bound times scale
        out["error_bound"] = float(rmap.user_gap(out["error_bound"]))
        out["reward_map"] = {"offset": rmap.offset, "scale": rmap.scale}
        out["value_unit_rewards"] = float(sol.value)
    if method == "value_iteration":
        out["iterations"] = sol.info["iterations"]
        out["stopping"] = sol.info["stopping"]
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"MDP      {mdp!r}")
    if mapped:
        print(
            f"rewards  {rmap.describe()} (solved on the [0, 1] rewards r; V* and the error "
            "below are in your units)"
        )
    if dropped_horizon is not None:
        print(
            f"         (the discounted problem of {args.mdp}: a model with a discount is solved "
            f"as such, as in run; its H = {dropped_horizon} is not used)"
        )
    sweeps = f" ({out['iterations']} sweeps, {out['stopping']} rule)" if "iterations" in out else ""
    print(f"method   {method}{sweeps}")
    print(
        f"V*(mu0)  {out['value']:.10g}"
        + (f"   (certified error <= {out['error_bound']:.2g})" if out["error_bound"] else "")
    )
    stage = "h=0 " if mdp.horizon is not None else ""
    if out["policy_first_stage"] is not None:
        shown = ("-" if a is None else str(a) for a in out["policy_first_stage"])
        print(f"policy   {stage}{' '.join(shown)}")
    counts = ", ".join(f"a={a}: {c}" for a, c in enumerate(out["policy_action_counts"]))
    print(f"actions  {stage}{counts}")
    if out["policy_undetermined_states"]:
        print(
            f"         ('-': {out['policy_undetermined_states']} state(s) no optimal policy "
            "reaches from mu0 at this stage;\n          the LP leaves their action undetermined)"
        )
    print(f"time     {seconds * 1e3:.3f} ms solve, {build * 1e3:.3f} ms build")
    return 0


def _fit_to_terminal(rows: list[dict], flexible: tuple[str, ...]) -> list[dict]:
    """Shorten the ``flexible`` columns (with "...") so that the table fits the terminal's
    width (``COLUMNS``, else the terminal, else 100 columns when output is piped)."""
    import shutil

    width = max(60, shutil.get_terminal_size((100, 24)).columns)
    if not rows:
        return rows
    columns = list(rows[0])
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
    fixed = sum(w for c, w in widths.items() if c not in flexible) + 2 * (len(columns) - 1)
    room = max(len(flexible) * 12, width - fixed)
    present = [c for c in flexible if c in widths]
    # share the room: a column that needs less than its share gives the rest to the others
    limits: dict[str, int] = {}
    for i, c in enumerate(sorted(present, key=lambda c: widths[c])):
        share = room // (len(present) - i)
        limits[c] = max(len(c), min(widths[c], share))
        room -= limits[c]
    out = []
    for r in rows:
        r = dict(r)
        for c, limit in limits.items():
            text = str(r.get(c, ""))
            if len(text) > limit:
                r[c] = text[: limit - 3].rstrip() + "..."
        out.append(r)
    return out


def _discounted_if_asked(mdp, method: str):
    """``(model, dropped H)``: a model whose spec gives a discount (``riverswim:S=6,gamma=0.9``,
    the family's H beside it) is solved as the discounted problem, as the discounted algorithms
    of ``run`` solve it; backward induction asked for by name refuses the discount instead."""
    if mdp.gamma is None or mdp.horizon is None or method == "backward_induction":
        return mdp, None
    return mdp.with_objective(gamma=mdp.gamma, horizon=None), mdp.horizon


def _solve_dual(args, mdp) -> int:
    """``solve MDP --dual F --alpha A``: the f-regularised occupancy problem (Sikchi et al. 2024)
    through ``tl.run`` (kind "dual"): primal, dual, their gap and the flow residual."""
    from theorylab.experiment import run

    if args.alpha is None:
        raise ValueError("--dual needs --alpha (the regulariser weight, > 0)")
    name = "regularized-primal" if args.dual_method == "cvxpy" else "dual-v"
    params = {"f": args.dual} | ({"method": args.dual_method} if name == "dual-v" else {})
    res = run(name, mdp, alpha=args.alpha, coverage=args.coverage, **params)
    s = res.summary()
    out = {
        "mdp": mdp.name,
        "S": mdp.S,
        "A": mdp.A,
        "gamma": res.config["gamma"],
        "divergence": s["divergence"],
        "alpha": s["alpha"],
        "method": args.dual_method,
        "reference": f"occupancy of {args.coverage} pi* + {1 - args.coverage} uniform",
        "primal": s["primal"],
        "dual": s["dual"],
        "gap": s["gap"],
        "flow_residual": s["flow_residual"],
        "lp_value": s["lp_value"],
        "solve_seconds": float(res.seconds[0]),
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"MDP            {mdp!r}")
    print(f"problem        max_d E_d[r] - {out['alpha']:g} D_{out['divergence']}(d || d^O)")
    print(f"d^O            {out['reference']} (discounted, gamma = {out['gamma']:g})")
    print(f"method         {name} ({args.dual_method})")
    print(f"primal         {out['primal']:.12g}")
    print(f"dual           {out['dual']:.12g}")
    print(f"gap            {out['gap']:.3e}")
    print(f"flow residual  {out['flow_residual']:.3e}")
    print(f"LP (alpha=0)   {out['lp_value']:.12g}   ((1 - gamma) V*(mu0))")
    print(f"time           {out['solve_seconds'] * 1e3:.3f} ms")
    return 0


def _solve_risk(args, mdp, build: float) -> int:
    """``solve MDP --cvar TAU`` (static CVaR by budget augmentation, Bauerle and Ott) or
    ``--iterated-cvar ALPHA`` (nested CVaR dynamic programming, Du et al. 2023)."""
    import numpy as np

    from theorylab.algorithms import planning
    from theorylab.algorithms.risk import iterated_cvar_planning, static_cvar_planning

    if mdp.horizon is None:
        raise ValueError(f"{mdp!r} has no finite horizon: risk-sensitive planning needs one")
    t0 = time.perf_counter()
    neutral = planning.backward_induction(mdp).value
    if args.cvar is not None:
        sol = static_cvar_planning(mdp, args.cvar)
        seconds = time.perf_counter() - t0
        out = {
            "objective": f"static CVaR_{args.cvar}",
            "value": float(sol.value),
            "initial_budget": float(sol.budget),
            "discretisation_error": float(sol.discretisation_error),
        }
    else:
        sol = iterated_cvar_planning(mdp, args.iterated_cvar)
        seconds = time.perf_counter() - t0
        first = np.asarray(sol.policy)[0]
        out = {
            "objective": f"iterated CVaR_{args.iterated_cvar}",
            "value": float(sol.value),
            "policy_first_stage": first.tolist() if mdp.S <= 64 else None,
        }
    out.update(
        {
            "mdp": mdp.name,
            "S": mdp.S,
            "A": mdp.A,
            "H": mdp.horizon,
            "risk_neutral_value": float(neutral),
            "solve_seconds": seconds,
            "build_seconds": build,
        }
    )
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"MDP        {mdp!r}")
    print(f"objective  {out['objective']}")
    print(f"optimum    {out['value']:.10g}   (risk-neutral V*: {neutral:.10g})")
    if "initial_budget" in out:
        print(
            f"budget     b_1 = {out['initial_budget']:.6g} (the tau-quantile of the optimal "
            f"return); discretisation error <= {out['discretisation_error']:.3g}"
        )
    if out.get("policy_first_stage") is not None:
        print(f"policy     h=0 {' '.join(map(str, out['policy_first_stage']))}")
    print(f"time       {seconds * 1e3:.3f} ms solve")
    return 0


# --------------------------------------------------------------------------- run
# The budget flags of ``theorylab run``: flag attribute -> tl.run keyword (``Kind.budget``).
RUN_BUDGET_FLAGS = {
    "episodes": "episodes",
    "dataset_size": "dataset_size",
    "expert_size": "expert_size",
    "coverage": "coverage",
    "other": "other",
    "sampling": "sampling",
    "backend": "backend",
    "device": "device",
    "steps": "steps",
    "mode": "mode",
    "batch": "batch",
    "loop": "loop",
    "segment": "segment",
    "checkpoint": "checkpoint",
    "feedback": "feedback",
    "design": "design",
    "target": "target",
    "ranking_size": "ranking_size",
    "iterations": "iterations",
    "transitions": "transitions",
}


def _transitions_flag(value: str):
    """``--transitions``: ``all`` or a positive integer."""
    import argparse

    if value == "all":
        return value
    if value.isdigit() and int(value) > 0:
        return int(value)
    raise argparse.ArgumentTypeError(f"expected 'all' or a positive integer, got {value!r}")


def cmd_run(args) -> int:
    """``theorylab run ALGO PROBLEM [budget] [-p k=v]``: a thin layer over :func:`theorylab.run`
    (the algorithm's kind decides which budget flags apply; tl.run says which when one is
    missing or does not apply)."""
    from theorylab.experiment import run

    params = _params(args.param)
    for flag in ("tau", "alpha"):  # risk levels of cvar-ucbvi / icvar-rm
        if getattr(args, flag) is not None:
            params[flag] = getattr(args, flag)
    budget = {
        key: getattr(args, flag)
        for flag, key in RUN_BUDGET_FLAGS.items()
        if getattr(args, flag) is not None
    }
    _check_output_paths(args, files=("plot", "json", "csv", "parquet"), folders=("save",))
    if args.checkpoint:
        _check_folder(args.checkpoint, "--checkpoint")
    try:
        result = run(
            args.algorithm,
            args.mdp,
            seeds=args.seeds,
            seed=args.seed,
            progress=not args.no_progress,
            **budget,
            **params,
        )
    except RunInterrupted as stop:  # Ctrl-C after some episodes: keep them with --save
        if args.save:
            stop.result.save(args.save)
            print(
                f"\ntheorylab run: interrupted after {stop.completed} episodes; saved those "
                f"to {args.save}",
                file=sys.stderr,
            )
            return 130
        raise
    print(_table([result.table_row()]))
    compile_s = result.config.get("compile_seconds")
    if compile_s:  # (a whole-run loop: its rate above leaves the compile out)
        print(f"compile: {compile_s:.1f} s before the first episode (numba compiles or loads "
              "its cache; not in the rate)")  # fmt: skip
    null = _null_regret(result, args.mdp)
    if null is not None and not args.plot:  # (the plot's lines say it too)
        for line in _burn_in_lines(result, null):
            print(line)
    if args.json:
        from theorylab.store import atomic_write_json
        from theorylab.validations.reference import burn_in_end

        payload = result.json_summary()
        if null is not None:
            payload["null_regret_per_episode"] = null
            payload["burn_in_end"] = burn_in_end(result.regret, null)
        atomic_write_json(args.json, payload)
        print(f"wrote {args.json}")
    resolution = args.resolution or result.default_resolution()
    for path, write in ((args.csv, result.to_csv), (args.parquet, result.to_parquet)):
        if path:
            write(path, resolution)
            print(f"wrote {path}")
    if (args.csv or args.parquet) and resolution == "grid" and result.thinning():
        print(_thinning_notice(result.thinning(), "--save DIR"), file=sys.stderr)
    if args.save:
        result.save(args.save)
        print(f"saved {args.save}")
    if args.plot:
        for line in _write_run_plot(result, args.plot, params.get("delta", 0.1), args.loglog):
            print(line)
        print(f"wrote {args.plot}")
    return 0


def _thinning_notice(what: str, store: str) -> str:
    """The line saying that a long table was thinned, and where the full curves are."""
    return (
        f"note: the long table holds {what} (--resolution grid, the default above "
        f"{_full_curve_episodes():,} episodes); --resolution full writes every episode, and "
        f"{store} keeps the full curves (Result.load(DIR).to_frame(resolution='full'))"
    )


def _full_curve_episodes() -> int:
    from theorylab.results.regret import FULL_CURVE_EPISODES

    return FULL_CURVE_EPISODES


def _write_run_plot(result, path: str, delta: float, loglog: bool) -> list[str]:
    """Draw ``result`` to ``path``; return the lines to print. A regret run (expected return)
    is drawn with the null agent's exact regret, and its theorem as printed where it is
    informative (log-log axes: always, beside the trivial bound); the lines say, from the run's
    numbers, whether the theorem is informative and whether the run left its burn-in."""
    from theorylab.validations.reference import plot_keywords, regret_reference

    if result.result_kind != "regret" or result.config.get("objective") != "expected return":
        result.plot(path)
        return [f"(drawn without reference lines: {result.result_kind} result)"]
    ref = regret_reference(result, delta=delta)
    result.plot(path, **plot_keywords(ref, loglog=loglog))
    lines = [*ref.notes, *_burn_in_lines(result, ref.null_per_episode)]
    if ref.bound_name is not None:
        lines.append(ref.bound_status())
    return lines


def _null_regret(result, mdp_spec) -> float | None:
    """The null agent's exact per-episode regret for a regret run of the expected return on a
    tabular MDP (None otherwise: other kinds, risk objectives, MDPs without one)."""
    if result.result_kind != "regret" or result.config.get("objective") != "expected return":
        return None
    from theorylab.mdps import make
    from theorylab.validations.reference import null_regret_per_episode

    mdp = make(mdp_spec) if isinstance(mdp_spec, str) else mdp_spec
    if getattr(mdp, "horizon", None) is None or not hasattr(mdp, "expected_next"):
        return None
    return null_regret_per_episode(mdp, result.optimal_value)


def _burn_in_lines(result, null: float) -> list[str]:
    """The null agent's regret beside the run's, and where the run left its burn-in
    (``theorylab.validations.reference.burn_in_end``)."""
    from theorylab.validations.reference import burn_in_end

    end = burn_in_end(result.regret, null)
    tail = float(result.regret[:, -max(1, result.episodes // 10) :].mean())
    lines = [
        f"null agent (uniform random policy): {null:.4g} regret per episode; "
        f"this run, last 10% of episodes: {tail:.4g}"
    ]
    if end is None:
        lines.append(
            f"the run is still in its burn-in at K = {result.episodes} (per-episode regret not "
            "below half the null agent's): run more episodes"
        )
    else:
        lines.append(f"the run left its burn-in at about episode {end}")
    return lines


# --------------------------------------------------------------------------- validate
def _validate_mutations(args) -> int:
    """``validate --mutations``: every registered mutation against every claim of its family and
    its pinned-constant tests; prints the caught/missed table (theorylab.validations.mutants)."""
    from theorylab.validations.controls import CONTROLS
    from theorylab.validations.mutants import format_table, mutation_table, summarise

    if args.name is not None or args.all or args.plot or args.no_controls:
        raise ValueError(
            "--mutations takes no validation NAME, --all, --plot or --no-controls "
            "(choose mutations with --control NAME)"
        )
    import theorylab.validations.mutations  # noqa: F401  (registers the mutations)

    known = sorted(n for n, c in CONTROLS.items() if c.kind == "mutation")
    for name in args.control or ():
        if name not in known:
            raise ValueError(f"--control {name!r}: not a registered mutation; known: {known}")
    rows = mutation_table(
        args.scale,
        args.control,
        claims=not args.no_claims,
        tests=not args.no_tests,
        progress=None
        if args.no_progress
        else lambda r: print(
            f"{r['control']:34s} {r['claim']:60s} {r['verdict']}", file=sys.stderr, flush=True
        ),
    )
    print(format_table([{k: r[k] for k in ("control", "check", "claim", "verdict")} for r in rows]))
    print()
    summary = summarise(rows)
    print(format_table(summary))
    if args.json:
        from theorylab.store import atomic_write_json

        atomic_write_json(args.json, {"rows": rows, "summary": summary, "scale": args.scale})
    missed = [s["mutation"] for s in summary if s["caught by"] == "NOTHING"]
    if missed:
        print(f"\nMISSED by every claim and test: {', '.join(missed)}")
    return 1 if missed else 0


def cmd_validate(args) -> int:
    from theorylab.validations import list_validations, validate

    if args.mutations:
        return _validate_mutations(args)
    if args.control or args.no_tests or args.no_claims:
        raise ValueError("--control, --no-tests and --no-claims go with --mutations")
    if args.all == (args.name is not None):
        raise ValueError("give one validation NAME or --all (see: theorylab list validations)")
    names = list_validations() if args.all else [args.name]
    if args.all and args.scale != "quick":  # every claim has a quick scale, not every one more
        from theorylab.validations import VALIDATIONS

        names = [n for n in names if args.scale in VALIDATIONS.get(n).scales]
    if args.plot and args.all:  # a folder: one figure per claim, named after it
        from pathlib import Path

        Path(args.plot).mkdir(parents=True, exist_ok=True)
        _check_writable(str(Path(args.plot) / "x.png"))
    elif args.plot:
        _check_writable(args.plot, "--plot")
    if args.json:
        _check_writable(args.json, "--json")  # before the claims run, not after them
    reports = []
    for name in names:
        plot = args.plot
        if args.plot and args.all:
            plot = os.path.join(args.plot, f"{name}.png")
        skip = {"controls": False} if args.no_controls else {}
        rep = validate(name, scale=args.scale, plot=plot, progress=not args.no_progress, **skip)
        reports.append(rep)
        print(rep.format())
        if plot and rep.figure:
            print(f"wrote {rep.figure}")
        elif plot:
            print(f"(no figure: {name} checks exact identities or values and draws none)")
        print()
    rows = [
        {
            "validation": r.name,
            "scale": r.scale,
            "verdict": _verdict(r),
            "power": _power_cell(r),
            "informative from": _informative_cell(r),
            "seconds": f"{r.seconds:.1f}",
        }
        for r in reports
    ]
    print(_table(rows))
    for line in verdict_legend(r["verdict"] for r in rows):
        print(line)
    if args.json:
        from theorylab.store import atomic_write_json

        payload = reports[0].to_dict() if len(reports) == 1 else [r.to_dict() for r in reports]
        atomic_write_json(args.json, payload)
        print(f"wrote {args.json}")
    return 0 if all(_verdict(r) in ("PASS", "SMOKE") for r in reports) else 1


VERDICT_MEANINGS = {
    "VACUOUS": "no tested check could fail at this scale (e.g. the bound is at or above the "
    "trivial bound K x the largest per-episode regret): the report says from which K it can",
    "UNPOWERED": "the checks passed, but a negative control passed them too (or none is "
    "registered): the claim cannot tell a right learner from a wrong one at this scale",
    "SMOKE": "a scale labelled a smoke test (too short to leave the burn-in) ran and nothing "
    "failed, which proves nothing; the report's 'smoke test at this scale' line says where the "
    "real check runs",
}


def verdict_legend(verdicts) -> list[str]:
    """One line for each verdict in ``verdicts`` that PASS / FAIL do not explain themselves."""
    present = set(verdicts)
    return [f"{v}: {text}" for v, text in VERDICT_MEANINGS.items() if v in present]


def _verdict(report) -> str:
    return getattr(report, "verdict", None) or ("PASS" if report.passed else "FAIL")


def _power_cell(report) -> str:
    p = getattr(report, "power", None)
    return f"{p['failing']}/{p['controls']}" if p else "not run"


def _informative_cell(report) -> str:
    inf = getattr(report, "informative_from", None)
    if not inf:
        return "-"
    if inf["value"] is None and inf.get("from_sweep"):
        return f"not at {inf['variable']} <= {inf['at']:,}"
    if inf["value"] is None:
        return f"never ({inf['variable']} <= 1e15)"
    return f"{inf['variable']} >= {inf['value']:,}"


# --------------------------------------------------------------------------- sweep
def cmd_sweep(args) -> int:
    from theorylab.grid_file import load_grid_file
    from theorylab.sweep_tables import check_export_path, export, summary_rows, thinned_cells
    from theorylab.sweeps import sweep

    if args.address is not None and args.executor != "ray":
        raise ValueError(f"--address is for --executor ray, not {args.executor}")
    _check_folder(args.store, "--store")
    cells = load_grid_file(args.grid)
    if args.export:
        check_export_path(args.export)
        _check_writable(args.export, "--export")
    print(f"{len(cells)} cells from {args.grid}; results under {args.store}", file=sys.stderr)
    result = sweep(
        cells,
        directory=args.store,
        executor=args.executor,
        max_workers=args.workers,
        progress=not args.no_progress,
        on_error="collect",
        address=args.address,
    )
    rows = summary_rows(result)
    print(_table(rows))
    print(
        f"{len(result.computed)} computed, {len(result.skipped)} already stored, "
        f"{len(result.failures)} failed, of {len(result.cells)} cells"
    )
    from theorylab.store import rows_to_columns, write_csv

    summary_csv = os.path.join(args.store, "summary.csv")
    write_csv(summary_csv, rows_to_columns(rows))
    print(f"wrote {summary_csv}")
    if args.export:
        export(result, args.export, args.resolution)
        print(f"wrote {args.export}")
        thinned = [] if args.resolution == "full" else thinned_cells(result, args.resolution)
        if thinned:
            more = f" (and {len(thinned) - 1} more cells)" if len(thinned) > 1 else ""
            print(_thinning_notice(f"cell {thinned[0]}{more}", args.store), file=sys.stderr)
    for cell_id, text in result.failures.items():
        last = text.strip().splitlines()[-1] if text.strip() else "(no message)"
        print(f"cell {cell_id} failed: {last} (traceback in its error.txt)", file=sys.stderr)
    return 1 if result.failures else 0


def _check_output_paths(args, files: tuple[str, ...], folders: tuple[str, ...]) -> None:
    """Check the output flags of a command before any work: ``--X FILE`` flags (``files``) and
    ``--X DIR`` flags (``folders``), by their argparse attribute names."""
    for name in files:
        if getattr(args, name, None):
            _check_writable(getattr(args, name), f"--{name}")
    for name in folders:
        if getattr(args, name, None):
            _check_folder(getattr(args, name), f"--{name}")


def _check_folder(path: str, flag: str) -> None:
    """A directory flag (``--save DIR``): refuse, before any work, a path that is an existing
    file, or whose nearest existing parent is not a writable directory."""
    from pathlib import Path

    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ValueError(
            f"{flag} {path}: is a file, expected a directory (an existing one, or one to create)"
        )
    parent = next((q for q in [p, *p.resolve().parents] if q.exists()), None)
    if parent is None or not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {path}: cannot create or write this directory ({parent})")


def _check_writable(path: str, flag: str | None = None) -> None:
    """Fail before a long computation, not after it, when ``path`` cannot be written: it must
    not be a directory, and its folder must exist (or be creatable) and accept a new file."""
    import tempfile
    from pathlib import Path

    if Path(path).is_dir():
        raise ValueError(
            f"{flag or 'cannot write'} {path}: is a directory, expected a file name "
            "(checked before running)"
        )
    folder = Path(path).resolve().parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise ValueError(
            f"{flag + ' ' if flag else ''}cannot write {path}: {exc.strerror or exc} "
            "(checked before running)"
        ) from None


# --------------------------------------------------------------------------- bench
def cmd_bench(args) -> int:
    from theorylab.bench.suite import run_benchmarks

    payload = run_benchmarks(
        args.which, quick=args.quick, backend=args.backend, device=args.device, runs=args.runs,
        allocator=args.allocator,
    )  # fmt: skip
    if args.json:
        from theorylab.store import atomic_write_json

        atomic_write_json(args.json, payload)
        print(f"wrote {args.json}")
    return 0


# --------------------------------------------------------------------------- train
def cmd_train(args) -> int:
    """Train a transformer with a registered loss: on a token-tree task (exact metrics per step)
    or on a prompt dataset with a reward (``arithmetic``, JSONL, Parquet, a datasets folder)."""
    try:
        from theorylab.algorithms.deep.prompt_data import is_prompt_spec
        from theorylab.algorithms.deep.trainer import train
    except ModuleNotFoundError as exc:
        raise ValueError(f"theorylab train needs torch: {exc}") from None
    if args.task and args.task_flag and args.task != args.task_flag:
        raise ValueError(f"the task is given twice: {args.task!r} and --task {args.task_flag!r}")
    task = args.task or args.task_flag
    if not task:
        raise ValueError("no task: give one, e.g. tokentree:V=4,L=3 or --task arithmetic")
    prompts = is_prompt_spec(task)
    only = PROMPT_ONLY if not prompts else TREE_ONLY
    used = [flag for flag, dest in only if getattr(args, dest) is not None]
    if used:
        where = "prompt datasets" if not prompts else "token-tree tasks"
        raise ValueError(f"{used[0]} applies to {where}, not to {task!r}")
    _check_output_paths(args, files=("plot", "json", "csv"),
                        folders=("save", "checkpoint", "tensorboard"))  # fmt: skip
    if prompts and args.parallel != "ddp":
        raise ValueError(f"--parallel {args.parallel} applies to token-tree tasks; the prompt "
                         f"trainer runs data-parallel with ddp on {task!r}")  # fmt: skip
    if args.nproc > 1 and "WORLD_SIZE" not in os.environ:  # launch the processes (distributed.py)
        return _launch_train(args, task, prompts)
    scale = dict(
        precision=args.precision, micro_batches=args.micro_batches,
        warmup_steps=args.warmup_steps, schedule=args.schedule, lora=args.lora,
        checkpoint=args.checkpoint, checkpoint_every=args.checkpoint_every,
        stop_after=args.stop_after, tensorboard=args.tensorboard, seeds=args.seeds,
        seed=args.seed, device=args.device, progress=not args.no_progress,
        max_grad_norm=args.max_grad_norm, steps=args.steps, eval_every=args.eval_every,
    )  # fmt: skip
    try:
        if prompts:
            from theorylab.algorithms.deep.prompt_trainer import train_prompts

            res = train_prompts(
                args.model if args.model != "tiny" else PROMPT_MODEL, task, args.loss,
                tokenizer=args.tokenizer, reward=args.reward or "exact-match",
                lr=1e-4 if args.lr is None else args.lr,
                group_size=8 if args.group_size is None else args.group_size,
                prompts_per_step=args.prompts_per_step or 8,
                max_new_tokens=args.max_new_tokens, eval_prompts=args.eval_prompts or 64,
                temperature=1.0 if args.temperature is None else args.temperature,
                gradient_checkpointing=bool(args.gradient_checkpointing),
                prompt_key=args.prompt_key or "prompt", answer_key=args.answer_key or "answer",
                **scale,
            )  # fmt: skip
        else:
            res = train(
                args.model, task, args.loss,
                lr=1e-3 if args.lr is None else args.lr,
                group_size=8 if args.group_size is None else args.group_size,
                pass_k=args.pass_k or 4, target_beta=args.target_beta,
                preference=args.preference or "exact",
                pairs_per_prompt=args.pairs_per_prompt or 16,
                value_samples=args.value_samples or 16, offline_data=args.offline_data,
                parallel=args.parallel, **scale,
            )  # fmt: skip
    except ModuleNotFoundError as exc:  # e.g. a gpt2-config model without transformers
        raise ValueError(str(exc)) from None
    if os.environ.get("RANK", "0") != "0":  # data-parallel (torchrun): rank 0 prints and writes
        return 0
    print(_table([res.table_row()]))
    if args.plot:
        from theorylab.plotting import plot_training_panels, save_figure

        fig = plot_training_panels(res) if not prompts else res.plot().figure
        save_figure(fig, args.plot)
        print(f"wrote {args.plot}")
    if args.json:
        from theorylab.store import atomic_write_json

        atomic_write_json(args.json, res.json_summary())
        print(f"wrote {args.json}")
    if args.csv:
        res.to_csv(args.csv)
        print(f"wrote {args.csv}")
    if args.save:
        res.save(args.save)
        print(f"saved {args.save}")
    return 0


# the model of ``theorylab train LOSS arithmetic`` when --model is left at its default
PROMPT_MODEL = "gpt2-config:n_layer=2,n_embd=64"  # = prompt_data.DEFAULT_PROMPT_MODEL (no torch)
PROMPT_ONLY = (("--tokenizer", "tokenizer"), ("--reward", "reward"),
               ("--prompts-per-step", "prompts_per_step"), ("--max-new-tokens", "max_new_tokens"),
               ("--eval-prompts", "eval_prompts"), ("--temperature", "temperature"),
               ("--gradient-checkpointing", "gradient_checkpointing"),
               ("--prompt-key", "prompt_key"), ("--answer-key", "answer_key"))  # fmt: skip
TREE_ONLY = (("--pass-k", "pass_k"), ("--target-beta", "target_beta"),
             ("--preference", "preference"),
             ("--pairs-per-prompt", "pairs_per_prompt"),
             ("--value-samples", "value_samples"),
             ("--offline-data", "offline_data"))  # fmt: skip


def _launch_train(args, task_spec: str, prompts: bool) -> int:
    """``theorylab train ... --nproc N``: check that the batch splits (one line, before any
    process starts), then run the same command in N processes under torchrun."""
    from theorylab.algorithms.deep import distributed
    from theorylab.algorithms.deep.trainer import loss_family
    from theorylab.mdps.registry import make as make_task
    from theorylab.registry import parse_spec

    if prompts:  # the prompt trainer: whole prompt groups of each micro-batch per process
        from theorylab.algorithms.deep.prompt_trainer import check_prompt_loss, check_prompt_shards

        check_prompt_loss(args.loss)
        check_prompt_shards(args.nproc, args.prompts_per_step or 8, args.micro_batches or 1)
    else:
        task = make_task(task_spec)
        family = loss_family(parse_spec(args.loss)[0], args.offline_data)
        n_prompts = getattr(task, "n_prompts", 1)
        preference, pairs = args.preference or "exact", args.pairs_per_prompt or 16
        distributed.check_batch(args.nproc, family, preference, n_prompts, pairs)
    return distributed.launch(distributed.without_flag(args.argv, "--nproc"), args.nproc)


# --------------------------------------------------------------------------- demo
def cmd_demo(args) -> int:
    from theorylab.demo import demo

    return demo(
        out=args.out, episodes=args.episodes, seeds=args.seeds, progress=not args.no_progress
    )


# --------------------------------------------------------------------------- papers
def cmd_papers(args) -> int:
    from theorylab.validations.papers import STATUSES, papers

    query = " ".join(args.query)
    rows = papers(query or None, status=args.status, family=args.family)
    if args.json:
        print(json.dumps([r.to_dict() for r in rows], indent=2))
        return 0
    if not rows:
        what = f" for {query!r}" if query else ""
        print(f"no tier-A/B row of the seed catalogue matches{what} (theorylab papers: all rows)")
        return 0
    if len(rows) == 1:  # one paper: everything the index knows of it
        r = rows[0]
        print(f"{r.ref}  {r.title}")
        print(f"  tier {r.tier}; family {r.family} ({r.family_name}); {r.setting}")
        print(f"  status: {r.status}")
        print(f"  algorithms: {', '.join(r.algorithms) or '-'}")
        for c in r.claims:
            when = f" ({c.scale}, {c.date})" if c.scale else ""
            print(f"  claim: {c.name}: {c.verdict}{when}")
        if r.same_paper:
            print(f"  same paper: {', '.join(r.same_paper)}")
        return 0
    table = [
        {
            "ref": r.ref,
            "tier": r.tier.replace(" (assigned)", "*"),
            "family": r.family,
            "status": r.status,
            "title": r.title,
            "algorithms": ",".join(r.algorithms) or "-",
            "claims (last verdict)": ", ".join(c.cell() for c in r.claims) or "-",
        }
        for r in rows
    ]
    print(_table(_fit_to_terminal(table, ("title", "algorithms", "claims (last verdict)"))))
    counts = ", ".join(f"{sum(r.status == s for r in rows)} {s}" for s in STATUSES)
    print(f"{len(rows)} rows: {counts} (tier *: assigned by the coverage table; all: --json)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="theorylab",
        description="Provable RL algorithms checked against their theorems.",
    )
    from theorylab import __version__

    p.add_argument("--version", action="version", version=f"theorylab {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    q = sub.add_parser(
        "list", help="list MDP families, algorithms, deep losses, bounds or validations"
    )
    q.add_argument("what", choices=["mdps", "algorithms", "losses", "bounds", "validations"])
    q.add_argument("--json", action="store_true", help="print JSON")
    q.set_defaults(func=cmd_list)

    q = sub.add_parser("solve", help="solve an MDP exactly and print V* and the optimal policy")
    q.add_argument(
        "mdp", help="MDP spec, e.g. riverswim:S=6,H=20, or a file of TabularMDP.save (my_mdp.npz)"
    )
    q.add_argument("--json", action="store_true", help="print a JSON object")
    q.add_argument("--gamma", type=float, help="solve the discounted problem with this gamma")
    q.add_argument(
        "--method",
        default="auto",
        choices=["auto", "backward_induction", "value_iteration", "policy_iteration", "lp"],
    )
    q.add_argument(
        "--tol",
        type=_positive_float,
        help="value iteration: the certified error ||V - V*|| it stops at (default 1e-10)",
    )
    q.add_argument(
        "--stopping",
        choices=["sup", "span"],
        help="value iteration's certified stopping rule: span (MacQueen's bounds, default: "
        "same certificate as sup, never more sweeps, usually far fewer) or sup (contraction)",
    )
    q.add_argument(
        "--cvar",
        type=float,
        metavar="TAU",
        help="maximise the static CVaR_TAU of the return (budget augmentation)",
    )
    q.add_argument(
        "--iterated-cvar",
        type=float,
        metavar="ALPHA",
        help="maximise the iterated (nested) CVaR_ALPHA objective",
    )
    q.add_argument(
        "--dual",
        choices=["kl", "chi2", "half-chi2", "tv"],
        help="solve the f-regularised occupancy problem max_d E_d[r] - alpha D_f(d || d^O) "
        "(d^O: the uniform policy's occupancy, or --coverage) and print primal, dual, gap and "
        "flow residual",
    )
    q.add_argument("--alpha", type=float, help="regulariser weight of --dual (> 0)")
    q.add_argument(
        "--coverage",
        type=float,
        default=0.0,
        help="--dual: d^O is the occupancy of coverage pi* + (1 - coverage) uniform (default 0)",
    )
    q.add_argument(
        "--dual-method",
        choices=["newton", "lbfgs", "cvxpy"],
        default="newton",
        help="--dual: dual-V by Newton (default) or L-BFGS, or the primal by cvxpy",
    )
    q.set_defaults(func=cmd_solve)

    q = sub.add_parser(
        "run",
        help="run any registered algorithm: online (exact regret), offline (exact "
        "sub-optimality), ...",
    )
    q.add_argument("algorithm", help="algorithm name, e.g. ucbvi-bernstein")
    q.add_argument(
        "mdp", help="MDP spec, e.g. riverswim:S=6,H=20, or a file of TabularMDP.save (my_mdp.npz)"
    )
    q.add_argument("--episodes", "-K", type=int, help="online: episodes K per seed")
    q.add_argument(
        "--steps", type=int, help="deep: gradient steps of a tabular twin; average-reward: steps T"
    )
    q.add_argument(
        "--mode", choices=["exact", "sampled"], help="deep: exact expected loss or sampled batches"
    )
    q.add_argument("--batch", type=int, help="deep, sampled mode: pairs/responses per prompt")
    q.add_argument(
        "--seeds",
        "-B",
        type=int,
        default=8,
        help="number of seeds B, run batched (default 8); seed i is reproducible alone",
    )
    q.add_argument("--seed", type=_integer_at_least(0), default=0, help="root seed (>= 0)")
    q.add_argument(
        "--param",
        "-p",
        action="append",
        metavar="KEY=VALUE",
        help="algorithm parameter (repeatable), e.g. -p delta=0.05",
    )
    q.add_argument(
        "--plot",
        help="write the figure (PNG, SVG or PDF by suffix): regret runs are drawn with the null "
        "agent's exact regret and the theorem where it is informative",
    )
    q.add_argument(
        "--loglog",
        action="store_true",
        help="with --plot: log-log axes, the theorem drawn as printed beside the trivial bound",
    )
    q.add_argument("--json", help="write a JSON summary (per-seed values, config)")
    q.add_argument("--csv", help="write the long table (one row per seed x step) as CSV")
    q.add_argument("--parquet", help="write the long table as Parquet (needs pandas, pyarrow)")
    q.add_argument(
        "--resolution",
        choices=["full", "grid"],
        help="--csv/--parquet: every episode (full) or a log-spaced grid of about 20 per decade "
        "(grid); default full up to 10,000 episodes, grid above (with a note on stderr)",
    )
    q.add_argument("--save", help="save the full result (arrays + metadata) to this directory")
    q.add_argument(
        "--backend",
        choices=["numpy", "numba", "torch", "auto"],
        help="online: kernel backend (default numpy: the bit-reproducible reference)",
    )
    q.add_argument("--device", help="online: cpu (default) or cuda (torch backend, --loop torch)")
    q.add_argument(
        "--loop",
        choices=["auto", "python", "compiled", "torch"],
        help="online: the episode loop (python), the whole-run compiled kernel (compiled: "
        "ucbvi-*, greedy, epsilon-greedy, optimistic-q-*, maxwp, icvar-rm, linucb, lsvi-ucb, "
        "cvar-ucbvi), the same loop in torch on --device (ucbvi-*, greedy, optimistic-q-*; "
        "torch: its own random stream) or auto (default: compiled for runs of 20,000 "
        "seed-episodes and more when the algorithm has a kernel); offline: make_dataset + fit "
        "per N (python) or the compiled N-sweep (compiled: pessimistic-vi-*, pevi-tabular, "
        "vi-lcb; the same numbers), auto from 10^6 seed-samples",
    )
    q.add_argument(
        "--segment",
        type=int,
        help="online, compiled and torch loops: episodes per kernel call (compiled 100000, "
        "torch 2000); python loop: episodes between checkpoints (10000; needs --checkpoint)",
    )
    q.add_argument(
        "--checkpoint",
        help="online, every loop: directory keeping finished segments and the state; rerun "
        "the same command with it to resume an interrupted run (bit for bit)",
    )
    q.add_argument("--tau", type=float, help="CVaR level of cvar-ucbvi (same as -p tau=...)")
    q.add_argument("--alpha", type=float, help="risk level of icvar-rm (same as -p alpha=...)")
    q.add_argument("--dataset-size", "-N", type=int, help="offline: samples N per seed")
    q.add_argument(
        "--expert-size", type=int, help="imitation: expert transitions per seed (default N)"
    )
    q.add_argument(
        "--coverage",
        type=float,
        help="offline: weight w of pi* in the behaviour mixture w pi* + (1 - w) other, in [0, 1] "
        "(default 0: the --other policy alone, uniform by default)",
    )
    q.add_argument(
        "--other",
        choices=["uniform", "adversarial"],
        help="offline: the rest of the behaviour mixture (default uniform)",
    )
    q.add_argument(
        "--sampling",
        "--kind",
        dest="sampling",
        choices=["trajectories", "samples"],
        help="offline: trajectories (finite horizon default) or independent samples "
        "(--kind is the former name)",
    )
    q.add_argument(
        "--feedback",
        choices=["btl", "plackett-luce", "matrix"],
        help="preference kinds: the feedback model (btl: pairwise BTL; plackett-luce: K-wise "
        "rankings, --ranking-size; matrix: a preference game's matrix); default: the "
        "algorithm's first",
    )
    q.add_argument(
        "--ranking-size", type=int, help="plackett-luce feedback: K items per ranking (default 3)"
    )
    q.add_argument(
        "--iterations",
        type=int,
        help="preference-game: self-play iterations T; policy-optimization: iterations K; ssp: "
        "sweeps n",
    )
    q.add_argument(
        "--transitions",
        type=_transitions_flag,
        help="goal-reaching: 'all' (default: every support transition) or n sampled per seed",
    )
    q.add_argument(
        "--design",
        choices=["uniform", "zjj-thm39", "reference", "groups"],
        help="preference-offline: which pairs are compared (default uniform)",
    )
    q.add_argument(
        "--target",
        choices=["optimal", "uniform"],
        help="ope: the policy evaluated (default optimal: pi*)",
    )
    q.add_argument("--no-progress", action="store_true", help="no progress report on stderr")
    q.set_defaults(func=cmd_run)

    q = sub.add_parser("validate", help="check a claim: algorithm x MDP x bound")
    q.add_argument("name", nargs="?", help="validation name (theorylab list validations)")
    q.add_argument("--all", action="store_true", help="run every validation")
    q.add_argument(
        "--scale",
        choices=["quick", "full", "paper"],
        default="quick",
        help="quick: seconds, what CI runs (default); full: the claim's real check (minutes); "
        "paper: the papers' constants at a K where the bound is informative (only some claims "
        "have it; most need the compiled loops of issue 15)",
    )
    q.add_argument("--json", help="write the report as JSON")
    q.add_argument(
        "--plot",
        help="write the claim's figure to this file; with --all, a folder that gets one "
        "NAME.png per claim that draws one (the others say that they draw none)",
    )
    q.add_argument(
        "--no-controls",
        action="store_true",
        help="skip the negative controls (faster; the verdict is then at most PASS before power)",
    )
    q.add_argument(
        "--mutations",
        action="store_true",
        help="run every registered mutation against every claim of its family and its "
        "pinned-constant tests; print the caught/missed table (exit 1 if one is missed)",
    )
    q.add_argument(
        "--control",
        action="append",
        metavar="NAME",
        help="with --mutations: only this mutation (repeatable)",
    )
    q.add_argument(
        "--no-tests",
        action="store_true",
        help="with --mutations: claims only, not the pinned-constant tests",
    )
    q.add_argument(
        "--no-claims",
        action="store_true",
        help="with --mutations: the pinned-constant tests only, not the claims",
    )
    q.add_argument("--no-progress", action="store_true", help="no progress report on stderr")
    q.set_defaults(func=cmd_validate)

    q = sub.add_parser(
        "sweep",
        help="run a grid of experiments (TOML file), resumable, locally or on a Ray cluster",
        description="Run every cell of GRID.toml (algorithms x MDP specs x parameters x seeds; "
        "see docs/tutorials/sweeps.md) not already stored under --store, then print a summary "
        "table. Re-running the same command resumes: finished cells are skipped.",
    )
    q.add_argument("grid", help="grid file (TOML): algorithms, mdps, episodes, seeds, params")
    q.add_argument("--store", required=True, help="result directory (one folder per cell)")
    q.add_argument(
        "--executor",
        default="process",
        choices=["process", "serial", "ray"],
        help="process: a local process pool (default); serial: one cell after another in this "
        "process; ray: one Ray task per cell",
    )
    q.add_argument(
        "--address",
        help="with --executor ray: the cluster to join, HOST:PORT of a head started with "
        "'ray start --head', 'auto', or ray://HOST:10001 (Ray Client); default: a local Ray",
    )
    q.add_argument(
        "--workers",
        type=_integer_at_least(1),
        help="process executor: pool size, >= 1 (default: CPU count)",
    )
    q.add_argument(
        "--export",
        metavar="FILE",
        help="write one row per cell x seed x episode to FILE.csv or FILE.parquet",
    )
    q.add_argument(
        "--resolution",
        choices=["full", "grid"],
        help="--export: every episode (full) or a log-spaced grid (grid); default: full for "
        "cells up to 10,000 episodes, grid above (with a note on stderr)",
    )
    q.add_argument("--no-progress", action="store_true", help="no progress report on stderr")
    q.set_defaults(func=cmd_sweep)

    from theorylab.bench.suite import BENCHMARKS

    q = sub.add_parser("bench", help="benchmarks (tables, not timed tests)")
    q.add_argument(
        "which",
        nargs="?",
        default="all",
        choices=[*BENCHMARKS, "all"],
        help="which benchmark table to produce (default: all of them)",
    )
    q.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    q.add_argument(
        "--backend",
        choices=["numpy", "numba", "torch", "auto"],
        help="ucbvi, lsvi: the backend the agent runs on (default numpy); backends: measure "
        "only this one (default all available); the other tables time fixed implementations",
    )
    q.add_argument("--device", default="cpu", help="cpu or cuda (ucbvi, lsvi with --backend torch)")
    q.add_argument(
        "--runs",
        type=int,
        default=1,
        help="llm: run the bench N times in one sitting and print each row's ratios across the "
        "runs with their spread (max/min - 1), flagging rows over 10%% (default 1)",
    )
    q.add_argument(
        "--allocator",
        choices=["heap", "system"],
        help="llm on CPU: heap (default) keeps freed memory in the C heap, so that no step pays "
        "page faults for memory the last step freed; system leaves glibc's defaults (dynamic mmap "
        "threshold). Every row records the setting and its page faults per step",
    )
    q.add_argument("--json", help="write all measurements as JSON")
    q.set_defaults(func=cmd_bench)

    q = sub.add_parser(
        "train",
        help="train a transformer on a token-tree task with a registered loss (exact metrics)",
    )
    q.add_argument("loss", help="loss spec, e.g. grpo, dpo:beta=0.1 (theorylab list losses)")
    q.add_argument(
        "task",
        nargs="?",
        help="token-tree task (tokentree:V=4,L=3) or prompt dataset: arithmetic[:n=..,digits=..], "
        "FILE.jsonl, FILE.parquet, a datasets folder, hf-dataset:NAME",
    )
    q.add_argument("--task", dest="task_flag", help="the task, as a flag (same as the positional)")
    q.add_argument(
        "--model",
        default="tiny",
        help="tiny[:d_model=..], gpt2-config:n_layer=2,n_embd=64, llama-config:..., hf:PATH "
        f"(prompt datasets: default {PROMPT_MODEL})",
    )
    q.add_argument("--steps", type=_integer_at_least(1), default=300)
    q.add_argument("--lr", type=_nonnegative_float, help="Adam learning rate (1e-3; prompts 1e-4)")
    q.add_argument(
        "--group-size", "-G", type=_integer_at_least(2), help="online: responses per prompt (8)"
    )
    q.add_argument(
        "--eval-every", type=_integer_at_least(1), default=10, help="evaluation period (steps)"
    )
    q.add_argument("--max-grad-norm", type=_nonnegative_float, default=1.0, help="0: no clipping")
    g = q.add_argument_group("scale (both kinds of task; docs/tutorials/llm-training.md)")
    g.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32",
                   help="autocast precision (fp16: CUDA only)")  # fmt: skip
    g.add_argument("--micro-batches", type=_integer_at_least(1), default=1,
                   help="gradient accumulation: micro-batches per optimiser step")  # fmt: skip
    g.add_argument("--warmup-steps", type=_integer_at_least(0), default=0,
                   help="linear learning-rate warm-up")  # fmt: skip
    g.add_argument("--schedule", choices=["constant", "linear", "cosine"], default="constant",
                   help="learning-rate schedule after the warm-up")  # fmt: skip
    g.add_argument("--lora", help="LoRA adapters through peft, e.g. r=8,alpha=16")
    g.add_argument("--checkpoint", help="folder: save the training state; resume from it")
    g.add_argument("--checkpoint-every", type=_integer_at_least(1), default=10,
                   help="steps between checkpoints")  # fmt: skip
    g.add_argument("--stop-after", type=_integer_at_least(1),
                   help="stop after this many steps of this call (needs --checkpoint)")  # fmt: skip
    g.add_argument("--tensorboard", help="folder for TensorBoard event files")
    g = q.add_argument_group("prompt datasets")
    g.add_argument("--tokenizer", help="char (default: built from the data) or a saved folder")
    g.add_argument("--reward", help="exact-match (default) or reward-model:PATH.json")
    g.add_argument("--prompts-per-step", type=_integer_at_least(1), help="prompts per step (8)")
    g.add_argument("--max-new-tokens", type=_integer_at_least(1),
                   help="completion length limit (default: longest answer + 1)")  # fmt: skip
    g.add_argument("--eval-prompts", type=_integer_at_least(1), help="held-out prompts (64)")
    g.add_argument("--temperature", type=_positive_float, help="sampling temperature (1)")
    g.add_argument("--gradient-checkpointing", action="store_const", const=True,
                   help="recompute activations in the backward pass")  # fmt: skip
    g.add_argument("--prompt-key", help="prompt column (prompt)")
    g.add_argument("--answer-key", help="answer column (answer)")
    g = q.add_argument_group("token-tree tasks")
    g.add_argument("--pass-k", type=_integer_at_least(1), help="k of the exact pass@k (4)")
    g.add_argument(
        "--target-beta", type=_positive_float, help="beta of pi*_beta (default: the loss's)"
    )
    g.add_argument(
        "--preference",
        choices=["exact", "sampled"],
        help="preference losses: exact expected loss over all pairs (default), or sampled pairs",
    )
    g.add_argument(
        "--pairs-per-prompt", type=_integer_at_least(1), help="sampled preference pairs (16)"
    )
    g.add_argument(
        "--value-samples", type=_integer_at_least(1), help="astar-po: stage-1 samples (16)"
    )
    g.add_argument(
        "--offline-data",
        help="c-rlft: the offline class-tagged dataset drawn from the tree: mixed-quality"
        "[:expert_share=0.25,alpha=0.1,expert_beta=0.2,seed=0] (an expert and a sub-optimal "
        "source, a class token each)",
    )
    q.add_argument("--seeds", "-B", type=_integer_at_least(1), default=1)
    q.add_argument("--seed", type=_integer_at_least(0), default=0, help="root seed (>= 0)")
    q.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    q.add_argument(
        "--nproc",
        type=_integer_at_least(1),
        default=1,
        help="data-parallel processes (DDP under torchrun, gloo on CPU / nccl on CUDA); the "
        "batch flags give the global batch, split across them (default 1)",
    )
    q.add_argument(
        "--parallel",
        choices=["ddp", "fsdp"],
        default="ddp",
        help="with --nproc > 1: DDP (replicated weights) or FSDP2 (sharded weights)",
    )
    q.add_argument("--plot", help="write the training curves (PNG or SVG)")
    q.add_argument("--json", help="write a JSON summary")
    q.add_argument("--csv", help="write the long table (one row per seed x evaluation)")
    q.add_argument("--save", help="save the full result to this directory")
    q.add_argument("--no-progress", action="store_true")
    q.set_defaults(func=cmd_train)

    q = sub.add_parser(  # names theorylab.demo.DEMO_ALGORITHMS (a test checks; no import here)
        "demo",
        help="ucbvi-bernstein, ucbvi-hoeffding and psrl against greedy on RiverSwim: "
        "table + regret.png",
    )
    q.add_argument("--out", default="regret.png", help="figure path (PNG or SVG)")
    q.add_argument("--episodes", type=int, default=None)
    q.add_argument("--seeds", type=int, default=None, help="seeds per algorithm (default 8)")
    q.add_argument("--no-progress", action="store_true", help="no progress report on stderr")
    q.set_defaults(func=cmd_demo)

    q = sub.add_parser(
        "papers",
        help="the seed corpus' tier-A/B papers: implemented with a claim, implemented or missing",
        description="List the tier-A/B rows of the seed catalogue (docs/papers.md) with what "
        "theorylab has of each: the algorithms and claims that name the row (register(..., "
        "papers=...)) and each claim's last verdict in the gallery.",
    )
    q.add_argument(
        "query",
        nargs="*",
        help="a row (000#30, 002-004#F1) or words that must all occur in the row's title, "
        "setting, algorithm or claim names (mirror descent)",
    )
    q.add_argument(
        "--status",
        help="only rows of this status: implemented-with-a-claim, implemented (an algorithm, "
        "no claim), claim-only (a claim, no registered algorithm) or missing",
    )
    q.add_argument("--family", type=int, help="only rows of this family, 1-9 (docs/papers.md)")
    q.add_argument("--json", action="store_true", help="print JSON (every field of every row)")
    q.set_defaults(func=cmd_papers)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # to relaunch (train --nproc)
    try:
        return args.func(args)
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's code for SIGINT
        kept = " (finished cells are stored: run the same command to resume)"
        print(
            f"\ntheorylab {args.command}: interrupted{kept if args.command == 'sweep' else ''}",
            file=sys.stderr,
        )
        return 130
    except BrokenPipeError:  # the reader went away (``theorylab list mdps | head``): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (TheorylabError, ValueError, KeyError, FileNotFoundError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"theorylab {args.command}: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
