"""Benchmark: time to fit each offline algorithm, batched over 32 seeds, on S = 1000.

For N in {10^4, 10^5, 10^6} transitions per seed (quick: 10^4 only) and B = 32 seeds, one dataset
is drawn per setting and every registered offline algorithm is fitted to it once; the table
reports the fit's wall time and the throughput ``B N / fit time`` (transitions per second).

* finite horizon (``pessimistic-vi-*``, ``pevi-tabular``, ``pevi``, ``vw-pevi``, ``naive-vi``,
  ``behaviour-cloning``): ``random-sparse:S=1000,A=4,b=10,H=10``, trajectory data (N / H
  episodes) from the mixture 0.5 pi* + 0.5 uniform; ``pevi`` and ``vw-pevi`` use d = 16 random
  simplex features (a fixed draw; the MDP is not linear in them -- this times the computation,
  which does not depend on it);
* discounted (``vi-lcb``, ``naive-vi``, ``behaviour-cloning``): the same model with gamma = 0.9
  and no horizon, i.i.d. samples from the behaviour's discounted occupancy.

Data generation and exact evaluation are not part of the fit time (``data_s`` is reported
beside it). Memory: the batch holds about 70 bytes per transition (B N of them: 2.2 GB at
N = 10^6); a configuration above ``max_bytes`` (default 6 GiB) is reported as skipped.

A second table times whole N-sweeps through ``theorylab.run`` (draw, fit at every N, exact
scoring) on the claims' workloads (:data:`SWEEPS`): ``loop="python"`` with make_dataset's numpy
draws (the loop before the compiled drawers; the reference), ``loop="python"`` (make_dataset's
compiled draws from 10^6 seed-samples) and ``loop="compiled"`` (``algorithms/offline/
compiled_sweep``), numba warmed up first so that compilation is not timed; with wall and CPU
seconds, seed-samples per second (B times the largest N over the wall time), the speed-up over
the reference, and whether the numbers equal the reference's (sub-optimality and value
estimates, bit for bit).
"""

from __future__ import annotations

import contextlib
import time

import numpy as np

from theorylab.table import Row, Span, left, render, right

FINITE_ALGORITHMS = (
    "pessimistic-vi-hoeffding",
    "pessimistic-vi-bernstein",
    "pevi-tabular",
    "pevi",
    "vw-pevi",
    "naive-vi",
    "behaviour-cloning",
)
DISCOUNTED_ALGORITHMS = ("vi-lcb", "naive-vi", "behaviour-cloning")
BYTES_PER_TRANSITION = 70


def _features(S: int, A: int, d: int, seed: int = 0) -> np.ndarray:
    g = np.random.default_rng(seed).gamma(0.5, size=(S, A, d)) + 1e-12
    return g / g.sum(axis=-1, keepdims=True)


def bench_offline(
    quick: bool = False,
    *,
    S: int = 1000,
    A: int = 4,
    H: int = 10,
    gamma: float = 0.9,
    seeds: int = 32,
    sizes: tuple[int, ...] | None = None,
    d: int = 16,
    max_bytes: int = 6 * 2**30,
    sweep: bool = True,
) -> list[dict]:
    """Fit time of every offline algorithm per (setting, N); one row per fit; then (``sweep``)
    the N-sweep rows of :func:`bench_offline_sweep`."""
    from theorylab.algorithms.offline import fit, make_dataset
    from theorylab.mdps import make

    sizes = sizes or ((10_000,) if quick else (10_000, 100_000, 1_000_000))
    finite = make(f"random-sparse:S={S},A={A},b=10,H={H}")
    discounted = finite.with_objective(gamma=gamma)
    phi = _features(S, A, d)
    rows: list[dict] = []
    for setting, mdp, algorithms, kind in (
        ("finite", finite, FINITE_ALGORITHMS, "trajectories"),
        ("discounted", discounted, DISCOUNTED_ALGORITHMS, "samples"),
    ):
        for N in sizes:
            base = {
                "setting": setting,
                "S": S,
                "A": A,
                "H": H if setting == "finite" else None,
                "gamma": gamma if setting == "discounted" else None,
                "N": N,
                "B": seeds,
            }
            need = BYTES_PER_TRANSITION * N * seeds
            if need > max_bytes:
                rows += [
                    base | {"algorithm": a, "skipped": f"needs {need / 2**30:.1f} GiB"}
                    for a in algorithms
                ]
                continue
            t0 = time.perf_counter()
            ds = make_dataset(mdp, N, coverage=0.5, other="uniform", kind=kind, seeds=seeds)
            data_s = time.perf_counter() - t0
            for a in algorithms:
                params = {"phi": phi} if a in ("pevi", "vw-pevi") else {}
                t0 = time.perf_counter()
                fit(a, ds, **params)
                fit_s = time.perf_counter() - t0
                rows.append(
                    base
                    | {
                        "algorithm": a,
                        "d": d
                        if a in ("pevi", "vw-pevi")
                        else (S * A if a == "pevi-tabular" else None),
                        "data_s": data_s,
                        "fit_s": fit_s,
                        "transitions_per_s": N * seeds / fit_s,
                    }
                )
            del ds
    if sweep:
        rows += bench_offline_sweep(quick)
    return rows


# (label, algorithm, problem, budget and parameters, sizes (full), sizes (quick), seeds)
SWEEPS = (
    (
        "offline-lcb-rates, VI-LCB",
        "vi-lcb",
        "multiscale-bandit:gamma=0.5",
        {"coverage": 0.25, "other": "adversarial", "c_L": 0.5, "initial_policy": "random"},
        [100_000, 300_000, 1_000_000, 3_000_000],
        [10_000, 30_000, 100_000],
    ),
    (
        "offline-lcb-rates, LCB",
        "pessimistic-vi-hoeffding",
        "multiscale-bandit",
        {"coverage": 0.25, "other": "adversarial", "sampling": "samples"},
        [1000, 10_000, 100_000, 1_000_000],
        [1000, 10_000, 100_000],
    ),
    (
        "pays-from-n, Bernstein",
        "pessimistic-vi-bernstein",
        "random:S=8,A=3,H=5,seed=0",
        {"coverage": 0.3},
        [1000, 10_000, 100_000, 1_000_000],
        [1000, 10_000, 100_000],
    ),
    (
        "pays-from-n, tabular PEVI",
        "pevi-tabular",
        "random:S=8,A=3,H=5,seed=0",
        {"coverage": 0.3},
        [1000, 10_000, 100_000, 1_000_000],
        [1000, 10_000, 100_000],
    ),
)


@contextlib.contextmanager
def _numpy_draws(on: bool):
    """Within the block, make_dataset draws with numpy at every size (the loop as it was before
    the compiled drawers: the reference row of the sweep table)."""
    from theorylab.algorithms.offline import dataset

    saved = dataset.COMPILED_DRAW_MIN
    if on:
        dataset.COMPILED_DRAW_MIN = float("inf")
    try:
        yield
    finally:
        dataset.COMPILED_DRAW_MIN = saved


def bench_offline_sweep(quick: bool = False, *, seeds: int | None = None) -> list[dict]:
    """One row per (workload, loop): a whole N-sweep through ``theorylab.run``."""
    from theorylab.experiment import run

    B = seeds or (4 if quick else 8)
    rows: list[dict] = []
    for label, algorithm, problem, kw, full_sizes, quick_sizes in SWEEPS:
        sizes = quick_sizes if quick else full_sizes
        run(algorithm, problem, seeds=1, dataset_size=[sizes[0]], loop="compiled", **kw)  # jit
        out = {}
        for label_loop, loop, numpy_draws in (
            ("python, numpy draws", "python", True),
            ("python", "python", False),
            ("compiled", "compiled", False),
        ):
            with _numpy_draws(numpy_draws):
                t0, c0 = time.perf_counter(), time.process_time()
                res = run(algorithm, problem, seeds=B, dataset_size=sizes, loop=loop, **kw)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            out[label_loop] = res
            rows.append(
                {
                    "setting": "N-sweep",
                    "workload": label,
                    "algorithm": algorithm,
                    "problem": problem,
                    "N": sizes,
                    "B": B,
                    "loop": label_loop,
                    "wall_s": wall,
                    "cpu_s": cpu,
                    "seed_samples_per_s": B * sizes[-1] / wall,
                }
            )
        ref = out["python, numpy draws"]
        for r in rows[-3:]:
            r["speedup"] = rows[-3]["wall_s"] / r["wall_s"]
            res = out[r["loop"]]
            r["same_numbers"] = bool(
                np.array_equal(ref.suboptimality, res.suboptimality)
                and np.array_equal(ref.value_estimate, res.value_estimate)
            )
    return rows


def format_table(rows: list[dict]) -> str:
    """The fit table, then (when present) the N-sweep table."""
    fits = [r for r in rows if r["setting"] != "N-sweep"]
    sweeps = [r for r in rows if r["setting"] == "N-sweep"]
    parts = [format_fit_table(fits)] if fits else []
    if sweeps:
        parts.append(format_sweep_table(sweeps))
    return "\n\n".join(parts)


def format_sweep_table(rows: list[dict]) -> str:
    """One line per (workload, loop): wall and CPU seconds, seed-samples/s, speed-up, same."""
    columns = [
        left("workload"),
        left("loop"),
        *map(right, ("max N", "B", "wall s", "cpu s", "seed-samples/s", "speed-up", "same")),
    ]
    body: list[Row] = [
        [
            r["workload"],
            r["loop"],
            f"{r['N'][-1]:.0e}".replace("+0", ""),
            str(r["B"]),
            f"{r['wall_s']:.2f}",
            f"{r['cpu_s']:.2f}",
            f"{r['seed_samples_per_s']:.3g}",
            f"{r['speedup']:.1f}x",
            "yes" if r["same_numbers"] else "NO",
        ]
        for r in rows
    ]
    return render(columns, body)


def format_fit_table(rows: list[dict]) -> str:
    """One line per fit: setting, algorithm, N, B, fit seconds, transitions/s, data seconds."""
    columns = [
        left("setting"),
        left("algorithm"),
        *map(right, ("S", "N", "B", "fit s", "transitions/s", "data s")),
    ]
    body: list[Row] = []
    for r in rows:
        prefix = [r["setting"], r["algorithm"], str(r["S"]), str(r["N"]), str(r["B"])]
        if "skipped" in r:
            body.append(Span(prefix, f"skipped: {r['skipped']}"))
            continue
        body.append(
            [
                *prefix,
                f"{r['fit_s']:.3f}",
                f"{r['transitions_per_s']:.3g}",
                f"{r['data_s']:.2f}",
            ]
        )
    return render(columns, body)


if __name__ == "__main__":  # python -m theorylab.bench.offline [--quick]
    import sys

    print(format_table(bench_offline(quick="--quick" in sys.argv)))
