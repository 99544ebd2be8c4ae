"""Benchmark ``long``: seed-episodes per second of long runs, the Python loop against the
whole-run compiled kernel, against K, the number of seeds B and the size S.

Every row runs UCBVI-CH (``ucbvi-hoeffding``, Azar et al.'s constants) through one loop:

* ``python/numpy`` and ``python/numba``: ``theorylab.run(..., loop="python")``, today's
  episode-by-episode loop, with its kernels on that backend;
* ``compiled 1 thread`` and ``compiled N threads``: the whole-run kernel
  (:mod:`theorylab.algorithms.online.whole_run`) through ``theorylab.run(..., loop="compiled")``,
  with numba's thread count set to 1 and to all cores.

Each row runs in a fresh process (``OMP_WAIT_POLICY=PASSIVE``, ``OPENBLAS_NUM_THREADS=1``: see
:func:`_row_in_child`) and
reports the wall seconds, the process CPU seconds (which time spent descheduled on a loaded
machine does not inflate), ``seed_episodes_per_s = B K / wall`` and ``per_cpu_s = B K / cpu``,
and the 1-minute load before and after. Compilation is excluded: one short run of each
configuration warms the kernel first (numba's on-disk cache makes later processes start fast).

Torch rows (:func:`bench_long_torch`): the whole-run torch loop
(:mod:`theorylab.algorithms.online.whole_run_torch`, ``loop="torch"``) on the CPU with torch's
thread count at 1 and at all cores (the loop itself keeps one thread while its largest tensor is
small), and on ``cuda`` where torch sees a CUDA device; without one the CUDA rows are reported as
skipped ("no CUDA on this machine"), with no figures.

Problems: ``random:S=5,A=3,H=5,seed=11`` (the issue's first target: 8 seeds, >= 10^6
seed-episodes/s) and ``riverswim:S=100,H=50`` (the second: 32 seeds, >= 5x the Python loop), at
the paper's constants and with ``bonus_scale=0.01``, where the plan changes every episode (the
kernel's incremental plan saves nothing there: its figure is the kernel's worst case).
``ratio`` is a row's seed-episodes per CPU-second over the Python loop's (numpy backend) on the
same problem and parameters; ``wall ratio`` the same with wall seconds. The full table runs in
about three minutes on an idle 2-core machine; ``quick`` runs tiny sizes (seconds) to check
the plumbing.
"""

from __future__ import annotations

import os
import time

from theorylab.table import left, render, right

KEYS = ("method", "problem", "params", "S", "seeds", "episodes", "threads", "seconds",
        "cpu_seconds", "seed_episodes_per_s", "per_cpu_s", "ratio", "wall_ratio",
        "load_before", "load_after")  # fmt: skip


def _load() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def _throughput(
    seeds: int, episodes: int, threads: int, wall: float, cpu: float, load0: float | None
) -> dict:
    """The measured fields of a row, from ``seeds`` on (``KEYS``): seed-episodes per wall second
    and per CPU second of the timed run, and the load average before and after it."""
    n = seeds * episodes
    return {
        "seeds": seeds,
        "episodes": episodes,
        "threads": threads,
        "seconds": wall,
        "cpu_seconds": cpu,
        "seed_episodes_per_s": n / wall,
        "per_cpu_s": n / max(cpu, 1e-9),
        "load_before": load0,
        "load_after": _load(),
    }


def time_run(
    method: str,
    problem: str,
    seeds: int,
    episodes: int,
    threads: int,
    params: dict | None = None,
    algorithm: str = "ucbvi-hoeffding",
) -> dict:
    """One timed ``theorylab.run`` of ``algorithm`` (default UCBVI-CH) with the given loop
    (module docstring); params: the algorithm's parameters (``bonus_scale``; numba loops
    only)."""
    if method.startswith("torch"):
        return time_torch_run(method, problem, seeds, episodes, threads)
    import numba

    from theorylab.experiment import run

    loop = "python" if method.startswith("python") else "compiled"
    backend = "numba" if method == "python/numba" else "numpy"
    saved = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        kw = {"loop": loop, "backend": backend, **(params or {})}
        run(algorithm, problem, episodes=min(episodes, 20), seeds=seeds, **kw)  # warm
        load0 = _load()
        c0, t0 = time.process_time(), time.perf_counter()
        res = run(algorithm, problem, episodes=episodes, seeds=seeds, **kw)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        numba.set_num_threads(saved)
    return {
        "method": method,
        "problem": problem,
        "params": dict(params or {}),
        "S": int(res.config["S"]),
        **_throughput(seeds, episodes, threads, wall, cpu, load0),
    }


def configs(quick: bool, cores: int) -> list[tuple[str, str, int, int, int, dict]]:
    """(method, problem, seeds, episodes, threads, params) of every row."""
    small, big = "random:S=5,A=3,H=5,seed=11", "riverswim:S=100,H=50"
    learning = {"bonus_scale": 0.01}
    if quick:
        return [
            ("python/numpy", small, 2, 50, 1, {}),
            ("compiled", small, 2, 2000, 1, {}),
            ("compiled", big, 2, 20, cores, {}),
        ]
    return [
        ("python/numpy", small, 8, 2000, 1, {}),
        ("python/numba", small, 8, 2000, 1, {}),
        ("compiled", small, 1, 1_000_000, 1, {}),
        ("compiled", small, 8, 10_000, 1, {}),
        ("compiled", small, 8, 100_000, 1, {}),
        ("compiled", small, 8, 1_000_000, 1, {}),
        ("compiled", small, 8, 1_000_000, cores, {}),
        ("compiled", small, 32, 300_000, 1, {}),
        ("compiled", small, 32, 300_000, cores, {}),
        ("python/numpy", big, 32, 100, 1, {}),
        ("compiled", big, 32, 20_000, 1, {}),
        ("compiled", big, 32, 20_000, cores, {}),
        ("python/numpy", big, 32, 100, 1, learning),
        ("compiled", big, 32, 2_000, 1, learning),
        ("compiled", big, 32, 2_000, cores, learning),
    ]


def _row_in_child(
    method: str,
    problem: str,
    seeds: int,
    episodes: int,
    threads: int,
    params: dict | None = None,
    algorithm: str = "ucbvi-hoeffding",
) -> dict:
    """:func:`time_run` in a fresh Python process with ``OMP_WAIT_POLICY=PASSIVE`` and
    ``OPENBLAS_NUM_THREADS=1``: numba's OpenMP workers spin-wait after a parallel region by
    default (in one process they slowed the Python loop timed after the compiled runs about 20x
    on the loaded 2-core machine), and OpenBLAS's threads do the same on the Python loop's tiny
    products (RiverSwim S = 100, 32 seeds: 81 seed-episodes/s with them, 1,023 with one thread,
    at load 9). The whole-run kernel calls no BLAS."""
    import json
    import subprocess
    import sys

    code = (
        "import json, sys\n"
        "from theorylab.bench.long import time_run\n"
        f"print(json.dumps(time_run({method!r}, {problem!r}, {seeds}, {episodes}, {threads}, "
        f"{params!r}, {algorithm!r})))\n"
    )
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"bench long row {method} {problem} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_long(quick: bool = False) -> list[dict]:
    """Rows of the table (module docstring), each timed in a fresh process."""
    import numba

    cores = numba.config.NUMBA_NUM_THREADS
    out = []
    for method, problem, seeds, episodes, threads, params in configs(quick, cores):
        row = _row_in_child(method, problem, seeds, episodes, threads, params)
        if method == "compiled":
            row["method"] = f"compiled {threads} thread{'s' if threads > 1 else ''}"
        out.append(row)
    out += bench_long_torch(quick)
    out += bench_long_icvar_hf(quick)
    out += bench_long_cvar_ela(quick)
    base = {  # the Python loop (numpy backend) of each problem and parameters
        (r["problem"], repr(r.get("params", {}))): r for r in out if r["method"] == "python/numpy"
    }
    for r in out:
        ref = base.get((r["problem"], repr(r.get("params", {}))))
        if ref is None or "skipped" in r:
            continue
        r["ratio"] = r["per_cpu_s"] / ref["per_cpu_s"]
        r["wall_ratio"] = r["seed_episodes_per_s"] / ref["seed_episodes_per_s"]
    return out


ICVAR_HF_PROBLEM = "linear-mixture:S=2,A=2,d=2,H=2,seed=212,concentration=0.3"
"""The small-gap instance of ``icvar-hf-preference-regret`` (gap 0.187), alpha = 0.25."""


def bench_long_icvar_hf(quick: bool = False, rounds: int = 3) -> list[dict]:
    """ICVaR-HF (paper-form radii, alpha = 0.25) on :data:`ICVAR_HF_PROBLEM`: the Python loop
    against the whole-run compiled loop (``whole_run_icvar_hf.py``, 1 thread; the reward MLE's
    refits run in Python in both), interleaved (:func:`interleaved_rows`). The run lengths
    differ (the Python loop's K is what it runs in seconds) but both cross the refit schedule's
    geometric phase (refits after 20, 22, 25, ... comparisons)."""
    plan = [("python/numpy", 100), ("compiled", 2_000)] if quick else [
        ("python/numpy", 1_000),
        ("compiled", 100_000),
    ]  # fmt: skip
    params = {"alpha": 0.25, "basis": ICVAR_HF_PROBLEM}
    return interleaved_rows("icvar-hf", ICVAR_HF_PROBLEM, params, {"alpha": 0.25}, 6, plan,
                            1 if quick else rounds)  # fmt: skip


CVAR_ELA_PROBLEM = "cvar-safe-risky:H=2"
"""The instance of ``cvar-ela-lowrank`` (tau = 0.25, c = 0.1, its 2-map candidate class)."""


def bench_long_cvar_ela(quick: bool = False, rounds: int = 3) -> list[dict]:
    """CVaR-ELA (tau = 0.25, c = 0.1) on :data:`CVAR_ELA_PROBLEM` with the 2-map class of
    ``cvar-ela-lowrank`` (phi* = P and a map whose RISKY row swaps good and bad): the Python loop
    against the whole-run compiled loop (``whole_run_cvar_ela.py``, 1 thread: EM, plan, exact
    static CVaR and rollout all compiled), 16 seeds as the claim, interleaved
    (:func:`interleaved_rows`)."""
    from theorylab.mdps import make

    P = make(CVAR_ELA_PROBLEM).dense_P()  # (S, A, S)
    wrong = P.copy()
    wrong[0, 0] = P[0, 0][[0, 1, 3, 2]]
    shown = {"tau": 0.25, "c": 0.1}
    params = {**shown, "feature_class": [P.tolist(), wrong.tolist()]}  # (2, S, A, d = S)
    plan = [("python/numpy", 50), ("compiled", 500)] if quick else [
        ("python/numpy", 1_000),
        ("compiled", 20_000),
    ]  # fmt: skip
    return interleaved_rows("cvar-ela", CVAR_ELA_PROBLEM, params, shown, 16, plan,
                            1 if quick else rounds)  # fmt: skip


def interleaved_rows(
    algorithm: str,
    problem: str,
    params: dict,
    shown: dict,
    seeds: int,
    plan: list[tuple[str, int]],
    rounds: int,
) -> list[dict]:
    """The Python loop against the compiled loop (1 thread), each row in a fresh process, the
    ``plan``'s (method, episodes) interleaved over ``rounds`` rounds; one row per method with the
    median (and in ``range`` the min and max) of each figure over the rounds, ``ratio`` the
    compiled median per CPU-second over the Python one. ``shown``: the parameters the table
    prints. The load columns hold the lowest and the highest 1-minute load seen."""
    import statistics

    samples: dict[str, list[dict]] = {m: [] for m, _ in plan}
    for _ in range(rounds):
        for method, episodes in plan:
            row = _row_in_child(method, problem, seeds, episodes, 1, params, algorithm)
            samples[method].append(row)
    out = []
    for method, _ in plan:
        rows = samples[method]
        row = dict(rows[0])
        for key in ("seconds", "cpu_seconds", "seed_episodes_per_s", "per_cpu_s"):
            vals = [r[key] for r in rows]
            row[key] = statistics.median(vals)
            row[f"{key}_range"] = (min(vals), max(vals))
        loads = [x for r in rows for x in (r["load_before"], r["load_after"]) if x is not None]
        row["load_before"], row["load_after"] = (min(loads), max(loads)) if loads else (None, None)
        row["method"] = f"{algorithm} {method}" + (" 1 thread" if method == "compiled" else "")
        row["params"] = dict(shown)
        row["rounds"] = len(rows)
        out.append(row)
    out[1]["ratio"] = out[1]["per_cpu_s"] / out[0]["per_cpu_s"]
    out[1]["wall_ratio"] = out[1]["seed_episodes_per_s"] / out[0]["seed_episodes_per_s"]
    return out


def time_torch_run(method: str, problem: str, seeds: int, episodes: int, threads: int) -> dict:
    """One timed ``theorylab.run(..., loop="torch")`` of UCBVI-CH; ``method`` is "torch cpu" or
    "torch cuda". The clock stops after the curves are on the host (the device's queue is
    drained)."""
    import torch

    from theorylab.experiment import run

    device = method.split()[-1]
    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        kw = {"loop": "torch", "device": device}
        run("ucbvi-hoeffding", problem, episodes=min(episodes, 5), seeds=seeds, **kw)  # warm
        load0 = _load()
        c0, t0 = time.process_time(), time.perf_counter()
        run("ucbvi-hoeffding", problem, episodes=episodes, seeds=seeds, **kw)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        torch.set_num_threads(saved)
    return {
        "method": method,
        "problem": problem,
        **_throughput(seeds, episodes, threads, wall, cpu, load0),
    }


def torch_configs(quick: bool, cores: int) -> list[tuple[str, str, int, int, int]]:
    """(method, problem, seeds, episodes, threads) of the torch rows."""
    small, big = "random:S=5,A=3,H=5,seed=11", "riverswim:S=100,H=50"
    if quick:
        return [("torch cpu", small, 8, 20, 1), ("torch cuda", small, 1024, 20, 1)]
    return [
        ("torch cpu", small, 8, 2000, 1),
        ("torch cpu", small, 1024, 300, 1),
        ("torch cpu", small, 1024, 300, cores),
        ("torch cpu", big, 32, 50, 1),
        ("torch cuda", small, 8, 2000, 1),
        ("torch cuda", small, 4096, 2000, 1),
        ("torch cuda", small, 16384, 1000, 1),
        ("torch cuda", big, 32, 200, 1),
        ("torch cuda", big, 1024, 100, 1),
    ]


def bench_long_torch(quick: bool = False) -> list[dict]:
    """The torch rows (module docstring), each timed in a fresh process; CUDA rows without a
    CUDA device carry ``skipped`` and no figures. Empty when torch is not installed."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return []
    import torch

    cuda = torch.cuda.is_available()
    out = []
    for method, problem, seeds, episodes, threads in torch_configs(quick, os.cpu_count() or 1):
        if method == "torch cuda" and not cuda:
            out.append({
                "method": method, "problem": problem, "seeds": seeds, "episodes": episodes,
                "threads": threads, "skipped": "no CUDA on this machine",
            })  # fmt: skip
            continue
        row = _row_in_child(method, problem, seeds, episodes, threads)
        if method == "torch cpu":
            row["method"] = f"torch cpu {threads} thread{'s' if threads > 1 else ''}"
        out.append(row)
    return out


def format_table(rows: list[dict]) -> str:
    """A markdown table, one row per run."""
    columns = [
        left("loop"), left("problem"), left("params"), right("S"), right("B"), right("K"),
        right("wall s"), right("CPU s"), right("seed-episodes / s"), right("per CPU-second"),
        right("ratio (CPU)"), right("ratio (wall)"), right("load"),
    ]  # fmt: skip

    def ratio(x) -> str:
        return "-" if x is None else f"{x:,.1f}x"

    body = [
        [
            r["method"],
            r["problem"],
            ", ".join(f"{k}={v}" for k, v in r.get("params", {}).items()) or "paper",
            str(r.get("S", "-")),
            str(r["seeds"]),
            f"{r['episodes']:,}",
            f"{r['seconds']:.2f}",
            f"{r['cpu_seconds']:.2f}",
            f"{r['seed_episodes_per_s']:,.0f}",
            f"{r['per_cpu_s']:,.0f}",
            ratio(r.get("ratio")),
            ratio(r.get("wall_ratio")),
            f"{r['load_before']} / {r['load_after']}",
        ]
        if "skipped" not in r
        else [r["method"], r["problem"], "paper", "-", str(r["seeds"]), f"{r['episodes']:,}"]
        + ["-"] * 6
        + [r["skipped"]]
        for r in rows
    ]
    return render(columns, body, markdown=True)
