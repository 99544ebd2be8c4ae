"""The ``theorylab`` command line: list, solve, run, validate, bench, demo.

Output is plain and parseable: aligned tables on stdout, ``--json`` for machines. Long work shows
a progress bar on stderr (tqdm). Errors in user input exit with status 2 and a one-line message.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from theorylab.errors import TheorylabError
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
    elif what == "bounds":
        from theorylab.bounds import get_bound, list_bounds

        rows = [{"name": n, "summary": get_bound(n).summary()} for n in list_bounds()]
    else:
        from theorylab.validations import VALIDATIONS, list_validations

        rows = [{"name": n, "summary": VALIDATIONS.get(n).statement} for n in list_validations()]
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
    else:
        for r in rows:
            if "parameters" in r:
                r["parameters"] = ",".join(f"{k}={v}" for k, v in r["parameters"].items())
            if len(r["summary"]) > 90:  # the full text: --json
                r["summary"] = r["summary"][:87].rstrip() + "..."
        print(_table(rows))
    return 0


# --------------------------------------------------------------------------- solve
def cmd_solve(args) -> int:
    import numpy as np

    from theorylab.algorithms import planning
    from theorylab.mdps import make

    t0 = time.perf_counter()
    mdp = make(args.mdp)
    build = time.perf_counter() - t0
    if args.gamma is not None:
        mdp = mdp.with_objective(gamma=args.gamma, horizon=None)
    if args.cvar is not None or args.iterated_cvar is not None:
        return _solve_risk(args, mdp, build)
    method = args.method
    if method == "auto":
        method = "backward_induction" if mdp.horizon is not None else "value_iteration"
    t0 = time.perf_counter()
    if method == "backward_induction":
        sol = planning.backward_induction(mdp)
    elif method == "value_iteration":
        sol = planning.value_iteration(mdp, tol=args.tol, stopping=args.stopping)
    elif method == "policy_iteration":
        sol = planning.policy_iteration(mdp)
    else:
        from theorylab.algorithms.planning.lp import lp_solve

        sol = lp_solve(mdp, kind="dual")
    seconds = time.perf_counter() - t0
    pol = np.asarray(sol.policy)
    if not np.issubdtype(pol.dtype, np.integer):  # the LP's pi(a|s) = d(s,a) / sum_a d(s,a)
        pol = pol.argmax(axis=-1)
    first = pol[0] if pol.ndim == 2 else pol  # stage h = 0, or the stationary policy
    out = {
        "mdp": mdp.name,
        "S": mdp.S,
        "A": mdp.A,
        "H": mdp.horizon,
        "gamma": mdp.gamma,
        "method": method,
        "value": float(sol.value),
        "solve_seconds": seconds,
        "build_seconds": build,
        "policy_first_stage": first.tolist() if mdp.S <= 64 else None,
        "policy_action_counts": np.bincount(first, minlength=mdp.A).tolist(),
        "error_bound": getattr(sol, "info", {}).get("error_bound", 0.0),
    }
    if method == "value_iteration":
        out["iterations"] = sol.info["iterations"]
        out["stopping"] = sol.info["stopping"]
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"MDP      {mdp!r}")
    sweeps = f" ({out['iterations']} sweeps, {out['stopping']} rule)" if "iterations" in out else ""
    print(f"method   {method}{sweeps}")
    print(
        f"V*(mu0)  {out['value']:.10g}"
        + (f"   (certified error <= {out['error_bound']:.2g})" if out["error_bound"] else "")
    )
    stage = "h=0 " if mdp.horizon is not None else ""
    if out["policy_first_stage"] is not None:
        print(f"policy   {stage}{' '.join(map(str, out['policy_first_stage']))}")
    counts = ", ".join(f"a={a}: {c}" for a, c in enumerate(out["policy_action_counts"]))
    print(f"actions  {stage}{counts}")
    print(f"time     {seconds * 1e3:.3f} ms solve, {build * 1e3:.3f} ms build")
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
    "coverage": "coverage",
    "other": "other",
    "sampling": "sampling",
    "backend": "backend",
    "device": "device",
    "feedback": "feedback",
    "design": "design",
}


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
    result = run(
        args.algorithm,
        args.mdp,
        seeds=args.seeds,
        seed=args.seed,
        progress=not args.no_progress,
        **budget,
        **params,
    )
    print(_table([result.table_row()]))
    if args.json:
        from theorylab.store import atomic_write_json

        atomic_write_json(args.json, result.json_summary())
        print(f"wrote {args.json}")
    for path, write in ((args.csv, result.to_csv), (args.parquet, result.to_parquet)):
        if path:
            write(path)
            print(f"wrote {path}")
    if args.save:
        result.save(args.save)
        print(f"saved {args.save}")
    if args.plot:
        from theorylab.validations.claim import carried_bound_curves

        bounds, notes = carried_bound_curves(result, params.get("delta", 0.1))
        drawn = {"bound_curves": bounds, "rescale_bound": True} if bounds else {}
        result.plot(args.plot, **drawn)
        for line in notes:
            print(line)
        print(f"wrote {args.plot}")
    return 0


# --------------------------------------------------------------------------- validate
def cmd_validate(args) -> int:
    from theorylab.validations import list_validations, validate

    if args.all == (args.name is not None):
        raise ValueError("give one validation NAME or --all (see: theorylab list validations)")
    names = list_validations() if args.all else [args.name]
    reports = []
    for name in names:
        plot = args.plot if not args.all else None
        rep = validate(name, scale=args.scale, plot=plot, progress=not args.no_progress)
        reports.append(rep)
        print(rep.format())
        print()
    rows = [
        {
            "validation": r.name,
            "scale": r.scale,
            "passed": "PASS" if r.passed else "FAIL",
            "seconds": f"{r.seconds:.1f}",
        }
        for r in reports
    ]
    print(_table(rows))
    if args.json:
        from theorylab.store import atomic_write_json

        payload = reports[0].to_dict() if len(reports) == 1 else [r.to_dict() for r in reports]
        atomic_write_json(args.json, payload)
        print(f"wrote {args.json}")
    return 0 if all(r.passed for r in reports) else 1


# --------------------------------------------------------------------------- bench
def cmd_bench(args) -> int:
    from theorylab.bench.suite import run_benchmarks

    payload = run_benchmarks(args.which, quick=args.quick, backend=args.backend, device=args.device)
    if args.json:
        from theorylab.store import atomic_write_json

        atomic_write_json(args.json, payload)
        print(f"wrote {args.json}")
    return 0


# --------------------------------------------------------------------------- demo
def cmd_demo(args) -> int:
    from theorylab.demo import demo

    return demo(
        out=args.out, episodes=args.episodes, seeds=args.seeds, progress=not args.no_progress
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="theorylab",
        description="Provable RL algorithms checked against their theorems.",
    )
    sub = p.add_subparsers(dest="command", required=True)

    q = sub.add_parser("list", help="list MDP families, algorithms, bounds or validations")
    q.add_argument("what", choices=["mdps", "algorithms", "bounds", "validations"])
    q.add_argument("--json", action="store_true", help="print JSON")
    q.set_defaults(func=cmd_list)

    q = sub.add_parser("solve", help="solve an MDP exactly and print V* and the optimal policy")
    q.add_argument("mdp", help="MDP spec, e.g. riverswim:S=6,H=20")
    q.add_argument("--json", action="store_true", help="print a JSON object")
    q.add_argument("--gamma", type=float, help="solve the discounted problem with this gamma")
    q.add_argument(
        "--method",
        default="auto",
        choices=["auto", "backward_induction", "value_iteration", "policy_iteration", "lp"],
    )
    q.add_argument("--tol", type=float, default=1e-10, help="value-iteration tolerance")
    q.add_argument(
        "--stopping",
        choices=["sup", "span"],
        default="sup",
        help="value iteration's certified stopping rule: sup (contraction) or span (MacQueen's "
        "bounds: same certificate, usually far fewer sweeps)",
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
    q.set_defaults(func=cmd_solve)

    q = sub.add_parser(
        "run",
        help="run any registered algorithm: online (exact regret), offline (exact "
        "sub-optimality), ...",
    )
    q.add_argument("algorithm", help="algorithm name, e.g. ucbvi-bernstein")
    q.add_argument("mdp", help="MDP spec, e.g. riverswim:S=6,H=20")
    q.add_argument("--episodes", "-K", type=int, help="online: episodes K per seed")
    q.add_argument("--seeds", "-B", type=int, default=8)
    q.add_argument("--seed", type=int, default=0, help="root seed")
    q.add_argument(
        "--param",
        "-p",
        action="append",
        metavar="KEY=VALUE",
        help="algorithm parameter (repeatable), e.g. -p delta=0.05",
    )
    q.add_argument("--plot", help="write the regret plot (PNG or SVG by suffix)")
    q.add_argument("--json", help="write a JSON summary (per-seed values, config)")
    q.add_argument("--csv", help="write the long table (one row per seed x step) as CSV")
    q.add_argument("--parquet", help="write the long table as Parquet (needs pandas, pyarrow)")
    q.add_argument("--save", help="save the full result (arrays + metadata) to this directory")
    q.add_argument(
        "--backend",
        choices=["numpy", "numba", "torch", "auto"],
        help="online: kernel backend (default numpy: the bit-reproducible reference)",
    )
    q.add_argument("--device", help="online: cpu (default) or cuda (torch backend)")
    q.add_argument("--tau", type=float, help="CVaR level of cvar-ucbvi (same as -p tau=...)")
    q.add_argument("--alpha", type=float, help="risk level of icvar-rm (same as -p alpha=...)")
    q.add_argument("--dataset-size", "-N", type=int, help="offline: samples N per seed")
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
        choices=["btl"],
        help="preference: the comparison oracle answering the learner (default btl)",
    )
    q.add_argument(
        "--design",
        choices=["uniform", "zjj-thm39"],
        help="preference-offline: which pairs are compared (default uniform)",
    )
    q.add_argument("--no-progress", action="store_true")
    q.set_defaults(func=cmd_run)

    q = sub.add_parser("validate", help="check a claim: algorithm x MDP x bound")
    q.add_argument("name", nargs="?", help="validation name (theorylab list validations)")
    q.add_argument("--all", action="store_true", help="run every validation")
    q.add_argument("--scale", choices=["quick", "full"], default="quick")
    q.add_argument("--json", help="write the report as JSON")
    q.add_argument("--plot", help="write the figure (single validation)")
    q.add_argument("--no-progress", action="store_true")
    q.set_defaults(func=cmd_validate)

    from theorylab.bench.suite import BENCHMARKS

    q = sub.add_parser("bench", help="benchmarks (tables, not timed tests)")
    q.add_argument("which", nargs="?", default="all", choices=[*BENCHMARKS, "all"])
    q.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    q.add_argument(
        "--backend",
        choices=["numpy", "numba", "torch", "auto"],
        help="ucbvi, lsvi: the backend the agent runs on (default numpy); backends: measure "
        "only this one (default all available); the other tables time fixed implementations",
    )
    q.add_argument("--device", default="cpu", help="cpu or cuda (ucbvi, lsvi with --backend torch)")
    q.add_argument("--json", help="write all measurements as JSON")
    q.set_defaults(func=cmd_bench)

    q = sub.add_parser("demo", help="UCBVI against greedy on RiverSwim: table + regret.png")
    q.add_argument("--out", default="regret.png", help="figure path (PNG or SVG)")
    q.add_argument("--episodes", type=int, default=None)
    q.add_argument("--seeds", type=int, default=None)
    q.add_argument("--no-progress", action="store_true")
    q.set_defaults(func=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # the reader went away (``theorylab list mdps | head``): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (TheorylabError, ValueError, KeyError, FileNotFoundError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"theorylab {args.command}: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
