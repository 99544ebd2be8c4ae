"""The mutation-testing tool: which claims catch each negative control.

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

__all__ = ["MUTATIONS", "catch_table", "main"]


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


def _format(rows: list[dict]) -> str:
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
    print(_format(summary))
    if args.json:
        from theorylab.store import atomic_write_json

        atomic_write_json(args.json, rows)
    missed = [s["control"] for s in summary if s["caught by"] == "NOTHING"]
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
