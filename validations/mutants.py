"""The mutation-testing tool: which claims (and pinned-constant tests) catch each control.

``theorylab validate --mutations [--scale quick] [--control NAME] [--json FILE]`` runs every
registered mutation against every claim of its family (:func:`family_claims`: the claims modules
of the claims that list it, or the modules its registration names) and against the pinned-constant
tests it names (``Control.tests``, functions of ``tests/test_paper_constants_*.py`` that write the
paper's formula out), and prints the caught/missed table (:func:`mutation_table`). CI runs each
mutation against its own claims and tests at quick scale (tests/test_mutation_table.py); the full
table runs under ``-m slow`` and its last result is in docs/validations.md.

The older, wider form:
``python -m theorylab.validations.mutants [--scale quick] [--control NAME] [--claim NAME]
[--json FILE]`` runs, for every control (the null agents of ``controls`` and the known-bug
mutations of ``mutations``), the claims that could see it at the scale -- null agents: the
claims that list them; mutations: every claim, since a bug may be caught by a claim that does not
list it -- and prints which claims FAIL under it (catch it). The table is recorded in
docs/validations.md.
"""

from __future__ import annotations

import argparse
import sys
import time

from theorylab.validations.controls import CONTROLS
from theorylab.validations.mutations import MUTATIONS

__all__ = [
    "MUTATIONS",
    "catch_table",
    "family_claims",
    "main",
    "mutation_table",
    "run_pinned_test",
]


def catch_table(scale: str = "quick", controls=None, claims=None, progress=None) -> list[dict]:
    """For every control (default: all registered) and every claim that registers it (null
    agents: every claim that registers them; mutations: every claim, since a bug may be caught
    by a claim that does not list it), the claim's verdict under the control."""
    from theorylab.validations.registry import VALIDATIONS, list_validations

    names = claims or list_validations()
    rows = []
    for cname in controls or sorted(CONTROLS):
        control = CONTROLS[cname]
        for name in names:
            claim = VALIDATIONS.get(name)
            listed = cname in VALIDATIONS.controls(name)
            if control.kind == "null agent" and not listed:
                continue
            t0 = time.perf_counter()
            try:
                with control.applied(claim):
                    rep = claim.run(scale)
                verdict = rep.finalize().verdict
            except Exception as exc:  # a bug that makes the claim crash is caught too
                verdict = f"ERROR ({type(exc).__name__})"
            rows.append(
                {
                    "control": cname,
                    "kind": control.kind,
                    "claim": name,
                    "listed": listed,
                    "verdict": verdict,
                    "caught": verdict == "FAIL" or verdict.startswith("ERROR"),
                    "seconds": round(time.perf_counter() - t0, 2),
                }
            )
            if progress:
                progress(rows[-1])
    return rows


def family_claims(control) -> list[str]:
    """Every claim of ``control``'s family: the claims registered by the claims modules of its
    ``family`` (default: the modules of the claims that list it among their controls)."""
    from theorylab.validations.registry import VALIDATIONS, list_validations

    names = list_validations()
    family = set(control.family) or {
        VALIDATIONS.module(n) for n in names if control.name in VALIDATIONS.controls(n)
    }
    return [n for n in names if VALIDATIONS.module(n) in family]


def tests_dir():
    """The repository's tests/ folder (pinned-constant tests live there), or None when theorylab
    runs from an installed copy without it."""
    from pathlib import Path

    import theorylab

    here = Path(theorylab.__file__).resolve().parent.parent / "tests"
    return here if (here / "conftest.py").exists() else None


def pinned_test_name(test: tuple[str, str, dict]) -> str:
    module, function, kwargs = test
    args = ",".join(f"{k}={v}" for k, v in kwargs.items())
    return f"{module}::{function}" + (f"[{args}]" if args else "")


def run_pinned_test(test: tuple[str, str, dict], control=None) -> str:
    """Run one pinned-constant test (module, function, kwargs) of tests/, under ``control`` when
    given: "PASS", "FAIL" (an AssertionError) or "ERROR (name)"."""
    import importlib

    where = tests_dir()
    if where is None:
        return "ERROR (tests/ not found)"
    if str(where) not in sys.path:
        sys.path.insert(0, str(where))
    module, function, kwargs = test
    fn = getattr(importlib.import_module(module), function)
    try:
        if control is None:
            fn(**kwargs)
        else:
            with control.applied(None):
                fn(**kwargs)
    except AssertionError:
        return "FAIL"
    except Exception as exc:  # a bug that makes the test crash is caught too
        return f"ERROR ({type(exc).__name__})"
    return "PASS"


def mutation_table(
    scale: str = "quick",
    controls=None,
    *,
    claims: bool = True,
    tests: bool = True,
    progress=None,
) -> list[dict]:
    """Every registered mutation (or ``controls``) against every claim of its family
    (:func:`family_claims`) at ``scale`` and against its pinned-constant tests: one row per
    (mutation, claim or test) with its verdict and whether it caught the bug (FAIL or ERROR)."""
    from theorylab.validations.controls import CONTROLS

    names = controls or sorted(n for n, c in CONTROLS.items() if c.kind == "mutation")
    rows = []
    for cname in names:
        control = CONTROLS[cname]
        if claims:
            for row in catch_table(scale, [cname], family_claims(control)):
                rows.append({**row, "check": "claim"})
                if progress:
                    progress(rows[-1])
        for test in control.tests if tests else ():
            t0 = time.perf_counter()
            verdict = run_pinned_test(test, control)
            rows.append(
                {
                    "control": cname,
                    "kind": control.kind,
                    "claim": pinned_test_name(test),
                    "listed": True,
                    "verdict": verdict,
                    "caught": verdict != "PASS",
                    "seconds": round(time.perf_counter() - t0, 2),
                    "check": "pinned test",
                }
            )
            if progress:
                progress(rows[-1])
    return rows


def summarise(rows: list[dict]) -> list[dict]:
    """One line per mutation: claims and tests run, and which of them caught it."""
    out = []
    for cname in dict.fromkeys(r["control"] for r in rows):
        mine = [r for r in rows if r["control"] == cname]
        caught_c = [r["claim"] for r in mine if r["check"] == "claim" and r["caught"]]
        caught_t = [r["claim"] for r in mine if r["check"] == "pinned test" and r["caught"]]
        out.append(
            {
                "mutation": cname,
                "claims": f"{len(caught_c)}/{sum(r['check'] == 'claim' for r in mine)}",
                "tests": f"{len(caught_t)}/{sum(r['check'] == 'pinned test' for r in mine)}",
                "caught by": ", ".join(caught_c + caught_t) or "NOTHING",
            }
        )
    return out


def format_table(rows: list[dict]) -> str:
    """Rows of dicts (the same keys) as an aligned text table."""
    cols = list(rows[0]) if rows else []
    width = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    lines = ["  ".join(c.ljust(width[c]) for c in cols), "  ".join("-" * width[c] for c in cols)]
    lines += ["  ".join(str(r[c]).ljust(width[c]) for c in cols) for r in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m theorylab.validations.mutants",
        description="run every negative control against the claims; print which claims catch it",
    )
    ap.add_argument("--scale", default="quick")
    ap.add_argument("--control", action="append", help="only these controls (repeatable)")
    ap.add_argument("--claim", action="append", help="only these claims (repeatable)")
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args(argv)
    rows = catch_table(
        args.scale,
        args.control,
        args.claim,
        progress=lambda r: print(
            f"{r['control']:24s} {r['claim']:40s} {r['verdict']}", file=sys.stderr, flush=True
        ),
    )
    summary = []
    for cname in args.control or sorted(CONTROLS):
        caught = [r["claim"] for r in rows if r["control"] == cname and r["caught"]]
        summary.append(
            {
                "control": cname,
                "kind": CONTROLS[cname].kind,
                "claims run": sum(r["control"] == cname for r in rows),
                "caught by": ", ".join(caught) if caught else "NOTHING",
            }
        )
    print(format_table(summary))
    if args.json:
        from theorylab.store import atomic_write_json

        atomic_write_json(args.json, rows)
    missed = [s["control"] for s in summary if s["caught by"] == "NOTHING"]
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
