"""Benchmark: preference MLE fit time against n and d, cvxpy (Clarabel) vs the direct Newton solve.

For the constrained BTL MLE (pairwise data) and the Plackett-Luce MLE (K = 4 rankings) on a random
``comparison-bandit`` (S = 4 contexts, A = 8 actions, ||theta*|| = 1.5, B = 2), one seed, after
one warm-up solve of each (imports), the table reports each solver's wall time and the largest
difference between their estimates (``max |dtheta|``): the two solve the same convex program
(docs/algorithms/preference-mle.md). Sizes: n in {100, 1000, 10^4} (quick: 100, 1000),
d in {4, 16}.
"""

from __future__ import annotations

import time

import numpy as np

from theorylab.table import Row, left, render, right


def bench_preference(quick: bool = False, *, sizes=None, dims=(4, 16), K: int = 4) -> list[dict]:
    """One row per (estimator, n, d): Newton and cvxpy fit seconds and their difference."""
    from theorylab.algorithms.preference.mle import fit_btl, fit_plackett_luce
    from theorylab.mdps import make
    from theorylab.mdps.preference import sample_pairwise, sample_rankings

    sizes = sizes or ((100, 1000) if quick else (100, 1000, 10_000))
    warm = make("comparison-bandit:S=1,A=3,d=2,seed=0")  # cvxpy's first solve pays its imports
    for solver in ("newton", "cvxpy"):
        fit_btl(warm, sample_pairwise(warm, 5, seeds=1), solver=solver)
    rows: list[dict] = []
    for d in dims:
        bandit = make(f"comparison-bandit:S=4,A=8,d={d},norm=1.5,B=2,seed=0")
        for n in sizes:
            for name, data, fit in (
                ("btl", sample_pairwise(bandit, n, seeds=1), fit_btl),
                (f"plackett-luce K={K}", sample_rankings(bandit, n, K, seeds=1), fit_plackett_luce),
            ):
                times, est = {}, {}
                for solver in ("newton", "cvxpy"):
                    t0 = time.perf_counter()
                    est[solver] = fit(bandit, data, solver=solver)
                    times[solver] = time.perf_counter() - t0
                rows.append(
                    {
                        "estimator": name,
                        "n": n,
                        "d": d,
                        "newton_s": times["newton"],
                        "cvxpy_s": times["cvxpy"],
                        "max_abs_diff": float(np.abs(est["newton"] - est["cvxpy"]).max()),
                    }
                )
    return rows


def format_table(rows: list[dict]) -> str:
    columns = [
        left("estimator"),
        *map(right, ("n", "d", "newton s", "cvxpy s", "speed-up", "max |dtheta|")),
    ]
    body: list[Row] = [
        [
            r["estimator"],
            str(r["n"]),
            str(r["d"]),
            f"{r['newton_s']:.4f}",
            f"{r['cvxpy_s']:.3f}",
            f"{r['cvxpy_s'] / r['newton_s']:.2g}x",
            f"{r['max_abs_diff']:.1e}",
        ]
        for r in rows
    ]
    return render(columns, body)


if __name__ == "__main__":  # python -m theorylab.bench.preference [--quick]
    import sys

    print(format_table(bench_preference(quick="--quick" in sys.argv)))
