"""pymdptoolbox's ``forest`` (S = 2000, r1 = 4, r2 = 2, p = 0.1, gamma = 0.96) solved by theorylab
and by pymdptoolbox (``theorylab bench forest``; docs/benchmarks.md, "Your own MDP: the forest").

The model enters theorylab as a user's would: ``TabularMDP.from_arrays(P, R, layout="ASS",
reward_range="auto")`` (rewards mapped by ``r = 4 r'``, values mapped back). Methods, timed
round-robin (one call of each per round, ``repeats`` rounds; median and min-max of CPU time,
``time.process_time``, which time spent descheduled on a shared machine does not inflate):

* theorylab value iteration with its default stopping rule (span, MacQueen's bounds), with the
  contraction rule (``stopping="sup"``), and policy iteration, on dense ``(S, A, S)`` and on CSR
  transitions (pymdptoolbox's sparse layout, kept sparse);
* pymdptoolbox 4.0b3 ``ValueIteration`` (its default ``epsilon = 0.01``: it stops when its own
  span test says the greedy policy is epsilon-optimal, so its V is not V*) and
  ``PolicyIteration`` (exact evaluation by a linear solve), on its dense input.

Each row records the sweeps or iterations, ``||V - V*||_inf`` in the user's units against
policy iteration's V* (what each answer is worth, not only how fast it came), the certified
error theorylab reports, and the 1-minute load before and after. pymdptoolbox rows are left out
when it is not installed (it is not a dependency).
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

import numpy as np

GAMMA = 0.96


def forest_arrays(S: int, r1: float = 4.0, r2: float = 2.0, p: float = 0.1):
    """``mdptoolbox.example.forest`` as its docstring defines it: P ``(A, S, S)`` (action 0
    waits, 1 cuts), R ``(S, A)``."""
    P = np.zeros((2, S, S))
    P[0, :, 0] = p
    P[0, np.arange(S - 1), np.arange(1, S)] = 1 - p
    P[0, S - 1, S - 1] = 1 - p
    P[1, :, 0] = 1.0
    R = np.zeros((S, 2))
    R[S - 1, 0] = r1
    R[1 : S - 1, 1] = 1.0
    R[S - 1, 1] = r2
    return P, R


def _load() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def bench_forest(quick: bool = False, *, S: int | None = None, repeats: int = 5) -> list[dict]:
    """Time every method (module docstring) on the forest; one row per method."""
    import scipy.sparse as sp

    from theorylab.algorithms.planning import policy_iteration, value_iteration
    from theorylab.mdps import TabularMDP

    S = S if S is not None else (200 if quick else 2000)
    repeats = 2 if quick else repeats
    P, R = forest_arrays(S)
    dense = TabularMDP.from_arrays(P, R, layout="ASS", reward_range="auto", gamma=GAMMA)
    P_csr = [sp.csr_array(m) for m in P]
    sparse = TabularMDP.from_arrays(P_csr, R, layout="ASS", reward_range="auto", gamma=GAMMA)
    v_star = dense.user_value(policy_iteration(dense).V)

    methods: dict[str, Any] = {
        "theorylab VI, default (span), dense": lambda: value_iteration(dense),
        "theorylab VI, sup rule, dense": lambda: value_iteration(dense, stopping="sup"),
        "theorylab PI, dense": lambda: policy_iteration(dense),
        "theorylab VI, default (span), CSR": lambda: value_iteration(sparse),
        "theorylab PI, CSR": lambda: policy_iteration(sparse),
    }
    try:
        import warnings

        import mdptoolbox.mdp as toolbox

        def tb(cls):
            def call():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    solver = cls(P, R, GAMMA)
                    solver.verbose = False
                    solver.run()
                return solver

            return call

        methods["pymdptoolbox ValueIteration (epsilon 0.01)"] = tb(toolbox.ValueIteration)
        methods["pymdptoolbox PolicyIteration"] = tb(toolbox.PolicyIteration)
    except ImportError:
        pass

    outputs: dict[str, Any] = {name: fn() for name, fn in methods.items()}  # warm-up (numba)
    times: dict[str, list[float]] = {name: [] for name in methods}
    load_before = _load()
    for _ in range(repeats):
        for name, fn in methods.items():
            t0 = time.process_time()
            outputs[name] = fn()
            times[name].append(time.process_time() - t0)
    load_after = _load()

    rows = []
    for name, out in outputs.items():
        if name.startswith("pymdptoolbox"):
            V = np.asarray(out.V, dtype=float)
            steps, certified = int(out.iter), None
        else:
            mdp = sparse if name.endswith("CSR") else dense
            V = mdp.user_value(out.V)
            steps = int(out.info["iterations"])
            certified = float(mdp.reward_map.user_gap(out.info["error_bound"]))
        rows.append(
            {
                "method": name,
                "S": S,
                "cpu_ms_median": 1e3 * statistics.median(times[name]),
                "cpu_ms_min": 1e3 * min(times[name]),
                "cpu_ms_max": 1e3 * max(times[name]),
                "sweeps_or_iterations": steps,
                "error_vs_pi": float(np.max(np.abs(V - v_star))),
                "certified_error": certified,
                "repeats": repeats,
                "load_before": load_before,
                "load_after": load_after,
            }
        )
    return rows


def format_table(rows: list[dict]) -> str:
    head = (
        "| method | CPU ms (median) | min-max | sweeps / iterations | max abs(V - V*) | "
        "certified error |\n|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in rows:
        cert = "-" if r["certified_error"] is None else f"{r['certified_error']:.1e}"
        lines.append(
            f"| {r['method']} | {r['cpu_ms_median']:.0f} | {r['cpu_ms_min']:.0f}-"
            f"{r['cpu_ms_max']:.0f} | {r['sweeps_or_iterations']} | {r['error_vs_pi']:.1e} | "
            f"{cert} |"
        )
    if rows:
        r = rows[0]
        lines.append(
            f"\nS = {r['S']}, {r['repeats']} interleaved rounds; 1-minute load "
            f"{r['load_before']} before, {r['load_after']} after"
        )
    return "\n".join(lines)
