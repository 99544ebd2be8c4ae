"""Known-bug mutations, and the tool that checks which claims catch them.

Each mutation patches one realistic bug into the library for the duration of a ``with`` block.
They are negative controls (``theorylab.validations.controls``): a claim that lists a mutation
among its controls must FAIL under it. Registered mutations:

* ``ucbvi-ch-bonus-sqrt-l``: UCBVI-CH's bonus 7 H L sqrt(1/N) (Azar et al. 2017, Alg. 3) written
  as 7 H sqrt(L/N) -- smaller by sqrt(L), about 4 on the quick instances;
* ``score-next-policy``: the online runner scores episode k with the policy of episode k + 1
  (``theorylab.runners.online.run(score_policy="next")``);
* ``pevi-penalty-sign``: PEVI adds its penalty Gamma_h instead of subtracting it (an optimistic
  algorithm under a pessimistic name; ``theorylab.algorithms.offline.pevi.pessimistic_q``).

Run ``python -m theorylab.validations.mutants [--scale quick] [--json FILE]``: for every control
(null agents and mutations) it runs every claim that could see it at the scale and prints which
claims FAIL (catch it). The table is recorded in docs/validations.md.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from collections.abc import Iterator

from theorylab.validations.controls import CONTROLS, Control, register_control


@contextlib.contextmanager
def _patched(owner, attribute: str, value) -> Iterator[None]:
    had = attribute in vars(owner)
    old = vars(owner).get(attribute)
    setattr(owner, attribute, value)
    try:
        yield
    finally:
        if had:
            setattr(owner, attribute, old)
        else:
            delattr(owner, attribute)


@contextlib.contextmanager
def ucbvi_ch_bonus_sqrt_l(claim=None) -> Iterator[None]:
    from theorylab.algorithms.online.ucbvi import UCBVI, UCBVIHoeffding

    # UCBVI-CH reads L only in its bonus 7 H L sqrt(1/N); sqrt(L) there gives 7 H sqrt(L/N)
    with _patched(UCBVIHoeffding, "L", property(lambda self: math.sqrt(UCBVI.L.fget(self)))):
        yield


@contextlib.contextmanager
def score_next_policy(claim=None) -> Iterator[None]:
    import functools

    import theorylab.runners.online as online

    with _patched(online, "run", functools.partial(online.run, score_policy="next")):
        yield


@contextlib.contextmanager
def pevi_penalty_sign(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.offline import pevi

    def flipped(fit, gamma, cap):
        return np.clip(fit + gamma, 0.0, cap)

    with _patched(pevi, "pessimistic_q", flipped):
        yield


MUTATIONS = (
    register_control(
        Control(
            "ucbvi-ch-bonus-sqrt-l",
            "mutation",
            "UCBVI-CH bonus 7 H sqrt(L/N) instead of 7 H L / sqrt(N)",
            ucbvi_ch_bonus_sqrt_l,
        )
    ),
    register_control(
        Control(
            "score-next-policy",
            "mutation",
            "episode k scored with the policy of episode k + 1",
            score_next_policy,
        )
    ),
    register_control(
        Control(
            "pevi-penalty-sign",
            "mutation",
            "PEVI's penalty added instead of subtracted",
            pevi_penalty_sign,
        )
    ),
)


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
