"""Benchmark: the dual-V solve against S, closed-form gradient + Newton / L-BFGS vs cvxpy on the
primal (``theorylab bench dual``).

Problem: ``random-sparse:S=...,A=2,b=5`` with gamma = 0.9, KL-regularised (alpha = 0.1) towards the
uniform d^O = 1/(S A). Methods: ``dual-v newton`` (damped Newton, dense below 200 states,
matrix-free Jacobi-CG above, tangent predictor between alpha stages; target |grad| <= 1e-13),
``dual-v lbfgs`` (scipy L-BFGS-B on the closed-form gradient, target |grad| <= 1e-10, at most
5000 iterations per alpha stage) and ``cvxpy primal`` (CLARABEL, exponential cone). Every row
reports wall and CPU seconds (the machine is shared: CPU time is the steadier figure), the
iterations, its primal objective, its own duality gap and flow residual, and ``diff_vs_newton`` =
|primal - Newton's primal| (the "same answer" check: <= 1e-6 expected); a solver that stops short
is a "did not converge" row. One run each (no repeats: the solves are long). Quick: S in
{100, 1000}, all three methods. Full: S up to 10^5 for Newton, up to 10^4 for L-BFGS and cvxpy
(:data:`MAX_S`: at 10^4 L-BFGS already does not converge and cvxpy takes minutes).
"""

from __future__ import annotations

import time

import numpy as np

from theorylab.table import left, render, right

METHODS = ("dual-v newton", "dual-v lbfgs", "cvxpy primal")
#: the largest S each method is run at in the full benchmark
MAX_S = {"dual-v newton": 100_000, "dual-v lbfgs": 10_000, "cvxpy primal": 10_000}


def _solve(method: str, mdp, d_ref, alpha: float):
    from theorylab.algorithms.dual import solve_dual_v, solve_regularized_primal

    if method == "cvxpy primal":
        return solve_regularized_primal(mdp, d_ref, alpha, "kl")
    m = method.split()[-1]
    opts = {"tol": 1e-10, "max_iter": 5000} if m == "lbfgs" else {}
    return solve_dual_v(mdp, d_ref, alpha, "kl", method=m, **opts)


def bench_dual(
    quick: bool = False,
    *,
    alpha: float = 0.1,
    sizes: tuple[int, ...] | None = None,
    methods: tuple[str, ...] = METHODS,
) -> list[dict]:
    """The rows of the table (module docstring). sizes / methods: a subset (the first method
    listed is the reference of ``diff_vs_newton``); :data:`MAX_S` applies to the default sizes
    only."""
    from theorylab.algorithms.dual.smooth_dual_solver import DualSolverError
    from theorylab.mdps import make

    capped = sizes is None
    if sizes is None:
        sizes = (100, 1000) if quick else (100, 1000, 10_000, 100_000)
    warm = make("random-sparse:S=20,A=2,b=5,gamma=0.9").with_objective(gamma=0.9)
    for method in methods:  # imports, first calls
        _solve(method, warm, np.full((20, 2), 1.0 / 40), alpha)
    rows = []
    for S in sizes:
        mdp = make(f"random-sparse:S={S},A=2,b=5,gamma=0.9").with_objective(gamma=0.9)
        d_ref = np.full((S, 2), 1.0 / (2 * S))
        ref = None
        for method in methods:
            if capped and S > MAX_S[method]:
                continue
            t0, c0 = time.perf_counter(), time.process_time()
            base = {"S": S, "A": 2, "nnz": int(mdp.P_flat(0).nnz), "method": method}
            try:
                sol = _solve(method, mdp, d_ref, alpha)
            except DualSolverError as exc:  # reported as a row, not hidden
                sec, cpu = time.perf_counter() - t0, time.process_time() - c0
                rows.append(base | {"seconds": sec, "cpu_seconds": cpu, "failed": str(exc)})
                continue
            sec, cpu = time.perf_counter() - t0, time.process_time() - c0
            ref = sol.primal_value if ref is None else ref
            rows.append(
                base
                | {
                    "seconds": sec,
                    "cpu_seconds": cpu,
                    "iterations": sol.info.get("iterations"),
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
        *map(
            right,
            (
                "seconds",
                "CPU s",
                "iterations",
                "primal",
                "gap",
                "flow residual",
                "|primal - newton|",
            ),
        ),
    ]
    body = [
        [str(r["S"]), r["method"], f"{r['seconds']:.3f}", f"{r['cpu_seconds']:.3f}"]
        + (
            ["", "did not converge", "", "", ""]
            if "failed" in r
            else [
                "" if r["iterations"] is None else str(r["iterations"]),
                f"{r['primal']:.10f}",
                f"{r['gap']:.1e}",
                f"{r['flow_residual']:.1e}",
                f"{r['diff_vs_newton']:.1e}",
            ]
        )
        for r in rows
    ]
    return render(columns, body, markdown=True)
