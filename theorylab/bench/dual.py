"""Benchmark: the dual-V solve against S, closed-form gradient + Newton / L-BFGS vs cvxpy on the
primal (``theorylab bench dual``).

Problem: ``random-sparse:S=...,A=2,b=5`` with gamma = 0.9, KL-regularised (alpha = 0.1) towards the
uniform d^O = 1/(S A). Methods: ``dual-v newton`` (damped Newton, dense below 200 states, Jacobi-CG
above), ``dual-v lbfgs`` (scipy L-BFGS-B on the closed-form gradient, target |grad| <= 1e-10) and
``cvxpy primal`` (CLARABEL, exponential cone). Every row reports its primal objective, its own
duality gap and flow residual, and ``diff_vs_newton`` = |primal - Newton's primal| (the "same
answer" check: <= 1e-6 expected); a solver that stops short (L-BFGS hitting its 5000 iterations
per alpha stage) is a "did not converge" row. One run each (no repeats: the solves are long);
quick runs S in {100, 1000}, full adds 10^4 (all three methods).
"""

from __future__ import annotations

import time

import numpy as np

from theorylab.table import left, render, right


def _solve(method: str, mdp, d_ref, alpha: float):
    from theorylab.algorithms.dual import solve_dual_v, solve_regularized_primal

    if method == "cvxpy primal":
        return solve_regularized_primal(mdp, d_ref, alpha, "kl")
    m = method.split()[-1]
    return solve_dual_v(
        mdp, d_ref, alpha, "kl", method=m, **({"tol": 1e-10} if m == "lbfgs" else {})
    )


def bench_dual(quick: bool = False, *, alpha: float = 0.1) -> list[dict]:
    from theorylab.algorithms.dual.smooth_dual_solver import DualSolverError
    from theorylab.mdps import make

    sizes = (100, 1000) if quick else (100, 1000, 10_000)
    warm = make("random-sparse:S=20,A=2,b=5,gamma=0.9").with_objective(gamma=0.9)
    for method in ("dual-v newton", "dual-v lbfgs", "cvxpy primal"):  # imports, first calls
        _solve(method, warm, np.full((20, 2), 1.0 / 40), alpha)
    rows = []
    for S in sizes:
        mdp = make(f"random-sparse:S={S},A=2,b=5,gamma=0.9").with_objective(gamma=0.9)
        d_ref = np.full((S, 2), 1.0 / (2 * S))
        ref = None
        for method in ("dual-v newton", "dual-v lbfgs", "cvxpy primal"):
            t0 = time.perf_counter()
            try:
                sol = _solve(method, mdp, d_ref, alpha)
            except DualSolverError as exc:  # reported as a row, not hidden
                sec = time.perf_counter() - t0
                rows.append({"S": S, "A": 2, "method": method, "seconds": sec, "failed": str(exc)})
                continue
            sec = time.perf_counter() - t0
            ref = sol.primal_value if ref is None else ref
            rows.append(
                {
                    "S": S,
                    "A": 2,
                    "method": method,
                    "seconds": sec,
                    "primal": sol.primal_value,
                    "gap": sol.gap,
                    "flow_residual": sol.flow_residual,
                    "diff_vs_newton": abs(sol.primal_value - ref),
                }
            )
    return rows


def format_table(rows: list[dict]) -> str:
    """A Markdown table: one row per (S, method)."""
    columns = [
        right("S"),
        left("method"),
        *map(right, ("seconds", "primal", "gap", "flow residual", "|primal - newton|")),
    ]
    body = [
        [str(r["S"]), r["method"], f"{r['seconds']:.3f}", "did not converge", "", "", ""]
        if "failed" in r
        else [
            str(r["S"]),
            r["method"],
            f"{r['seconds']:.3f}",
            f"{r['primal']:.10f}",
            f"{r['gap']:.1e}",
            f"{r['flow_residual']:.1e}",
            f"{r['diff_vs_newton']:.1e}",
        ]
        for r in rows
    ]
    return render(columns, body, markdown=True)
