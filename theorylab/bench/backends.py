"""Benchmark: the backend kernels (numpy, numba, torch) and what they buy end to end.

What
----
Three tables, each row one (measurement, backend, thread count):

* ``kernel``: every kernel of :mod:`theorylab.backends` on a fixed problem: CSR product,
  Bellman backup on a CSR and on a dense model (B seeds), exact deterministic policy evaluation,
  rollouts, count scatter-add, Sherman-Morrison update, quadratic form, UCBVI's fused plan stage
  and the greedy argmax. Median, min and max milliseconds over ``repeats`` timed calls after one
  warm-up call.
* ``sweep``: one batched Bellman backup ``Q = R + P V`` on ``random-sparse:S=10^6,A=4,b=10``
  (nnz = 4e7; the planning table's problem) for B = 1 seed, with the effective bandwidth
  ``backup_bytes / time`` (byte model below).
* ``ucbvi``: UCBVI-CH, K episodes of ``theorylab.run``'s loop (exact regret, rollout, count
  update, plan) on ``riverswim:S=100,H=20,sparse=true`` for B = 1024 seeds in one process, and on
  ``random-sparse:S=10^5,A=4,b=10,H=20`` for B = 1 seed with the sparse empirical model: seed-
  episodes per second, the time of each phase, and the peak resident memory of the process.
  Each configuration runs in a fresh subprocess (``python -c``), so the peak memory is its own
  and one backend's threads cannot disturb another's.

Threads: the numba and torch rows are measured with all threads of the machine and with one
(``threads`` column). On a machine shared with other work, a parallel region waits for its
slowest thread; with a load above the core count, one thread is often faster (the table
records the 1-minute load average before and after each row: read the figures with it). With
OpenMP (numba's ``omp`` threading layer, torch), the default wait policy cost 8-16 ms of wake-up
stall per parallel region on a loaded 2-core VM; ``OMP_WAIT_POLICY=PASSIVE`` removed it. Every
row records the policy and numba's threading layer under ``environment``.

Byte model (``sweep``)
----------------------
The bytes a backup must move at least once: ``nnz * (8 + 4)`` (float64 data, int32 indices) +
``(S*A + 1) * 4`` (indptr) + ``S*A * 8`` (R) + ``S * 8`` (V) read, ``S*A * 8`` (Q) written:
the planning table's ``sweep_bytes`` plus the Q write (a backup returns Q; the fused max-sweep of
theorylab.kernels.bellman writes only V and pi). Re-reads of V through the gather are not
counted, so the figure is a lower bound on traffic and comparable across implementations.

GPU: the torch rows run on the CPU unless a CUDA device is present (``cuda_available`` in the
rows; docs/benchmarks.md marks the GPU figures "not measured" when it was not).

``quick=True``: small sizes only (S = 10^4 sweep, B = 32 UCBVI on S = 10, kernels at small
sizes), 3 repeats: a smoke test that finishes in well under a minute.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np

from theorylab.table import Row, Span, left, render, right

BACKENDS = ("numpy", "numba", "torch")


def backup_bytes(S: int, A: int, nnz: int, *, B: int = 1, index_bytes: int = 4) -> int:
    """The byte model (module docstring): bytes one batched CSR backup must move."""
    return nnz * (8 + index_bytes) + (S * A + 1) * index_bytes + S * A * 8 + B * (S + S * A) * 8


def _load() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def _time_ms(fn: Callable[[], object], repeats: int) -> tuple[float, float, float]:
    """(median, min, max) milliseconds of ``repeats`` calls after one warm-up call."""
    fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    ms = np.asarray(ts) * 1e3
    return float(np.median(ms)), float(ms.min()), float(ms.max())


def _has(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def _cuda() -> bool:
    if not _has("torch"):
        return False
    import torch

    return bool(torch.cuda.is_available())


def _configs(only: str | None = None) -> list[tuple[str, str, int | None]]:
    """(backend, device, threads): None = all threads. ``only``: keep that backend's rows
    ("auto" keeps numba, and torch on CUDA when a device is present); None keeps all."""
    out: list[tuple[str, str, int | None]] = [("numpy", "cpu", None)]
    out += [("numba", "cpu", None), ("numba", "cpu", 1)]
    if _has("torch"):
        out += [("torch", "cpu", None), ("torch", "cpu", 1)]
        if _cuda():
            out.append(("torch", "cuda", None))
    if only is None:
        return out
    if only not in (*BACKENDS, "auto"):
        raise ValueError(f"unknown backend {only!r}; available: auto, {', '.join(BACKENDS)}")
    if only == "auto":
        return [c for c in out if c[0] == "numba" or c[1] == "cuda"]
    kept = [c for c in out if c[0] == only]
    if not kept:
        raise ValueError(f"backend {only!r} cannot run here (is {only} installed?)")
    return kept


class _Threads:
    """Set numba's and torch's thread counts for a block (None: leave them)."""

    def __init__(self, n: int | None) -> None:
        self.n = n

    def __enter__(self):
        self.saved = []
        if self.n is None:
            return self
        import numba

        self.saved.append((numba.set_num_threads, numba.get_num_threads()))
        numba.set_num_threads(self.n)
        if _has("torch"):
            import torch

            self.saved.append((torch.set_num_threads, torch.get_num_threads()))
            torch.set_num_threads(self.n)
        return self

    def __exit__(self, *exc) -> None:
        for setter, value in self.saved:
            setter(value)


def _thread_count(backend: str, n: int | None) -> int:
    if backend == "numpy":
        return 1
    if n is not None:
        return n
    if backend == "numba":
        import numba

        return numba.get_num_threads()
    import torch

    return torch.get_num_threads()


def _timed(call: Callable[[], object], repeats: int, backend: str, device: str, threads) -> dict:
    """The timing fields of a ``kernel`` or ``sweep`` row: the configuration and the median, min
    and max milliseconds of ``repeats`` calls (:func:`_time_ms`)."""
    med, lo, hi = _time_ms(call, repeats)
    return {
        "backend": backend,
        "device": device,
        "threads": _thread_count(backend, threads),
        "median_ms": med,
        "min_ms": lo,
        "max_ms": hi,
        "repeats": repeats,
    }


def _sync(bk) -> None:
    if bk.name == "torch" and bk.device.startswith("cuda"):
        bk.torch.cuda.synchronize()


# ------------------------------------------------------------------------------ kernels
def _kernel_cases(quick: bool):
    """(name, size description, setup(bk) -> thunk) for every kernel."""
    from theorylab.mdps import make
    from theorylab.seeding import generators

    S = 10_000 if quick else 100_000
    sparse = make(f"random-sparse:S={S},A=4,b=10,H=20")
    dense = make("random:S=64,A=4,H=20" if quick else "random:S=200,A=4,H=20")
    rng = np.random.default_rng(0)
    B8 = rng.uniform(0, 20, size=(8, S))
    Bd = rng.uniform(0, 20, size=(64, dense.S))
    S_eval = 1_000 if quick else 10_000
    ev = make(f"random-sparse:S={S_eval},A=4,b=10,H=20")
    pol = rng.integers(0, 4, size=(64, 20, S_eval))
    pol_roll = rng.integers(0, 4, size=(256, 20, S_eval))
    idx = rng.integers(0, 10**5, size=10**5 if quick else 10**6)
    d = 32
    G = rng.normal(size=(256, d, d))
    inv0 = np.linalg.inv(G @ np.swapaxes(G, 1, 2) + np.eye(d))
    xs = rng.normal(size=(256, d))
    Phi = rng.normal(size=(1000, d))

    def csr_matmul(bk):
        M = sparse.P
        H = bk.csr(M.indptr, M.indices, M.data, M.shape)
        X = rng.uniform(size=(S, 4))
        return lambda: bk.csr_matmul(H, X)

    def bellman_csr(bk):
        m = bk.model(sparse)
        return lambda: bk.bellman(m, B8)

    def bellman_dense(bk):
        m = bk.model(dense)
        return lambda: bk.bellman(m, Bd)

    def evaluate(bk):
        m = bk.model(ev)
        checked = ev.check_policy(pol, batched=True)
        return lambda: bk.evaluate_policies(m, checked)

    def rollout(bk):
        m = bk.model(ev)
        checked = ev.check_policy(pol_roll, batched=True)
        U = np.stack([g.random(1 + 3 * 20) for g in generators(0, range(256), 0)])
        return lambda: bk.rollout(m, checked, U, 20)

    def scatter(bk):
        target = np.zeros(10**5)
        return lambda: bk.scatter_add(target, idx, 1.0)

    def sherman(bk):
        work = inv0.copy()
        return lambda: bk.sherman_morrison(work, xs)

    def quadratic(bk):
        inv = inv0[:64]
        return lambda: bk.quadratic_form(inv, Phi)

    Bq = 256 if quick else 1024  # UCBVI's plan: 1024 seeds of RiverSwim-sized tables
    Q_plan = rng.uniform(0, 20, size=(Bq, 20, 100, 2))  # (B, H, S, A)
    terms = [rng.uniform(size=(100, 2)), *rng.uniform(size=(2, Bq, 100, 2))]  # R, X, Y
    visited = rng.random((Bq, 100, 2)) < 0.9

    def stage(bk):
        return lambda: bk.optimistic_stage(Q_plan[:, 7], *terms, visited, 20.0, True)

    def argmax(bk):
        return lambda: bk.argmax_last(Q_plan)

    nnz = sparse.nnz
    return [
        ("csr_matmul", f"({S * 4}, {S}) nnz={nnz:.0e}, k=4", csr_matmul),
        ("bellman (CSR)", f"S={S}, A=4, b=10, B=8", bellman_csr),
        ("bellman (dense)", f"S={dense.S}, A=4, B=64", bellman_dense),
        ("evaluate_policies", f"S={S_eval}, A=4, b=10, H=20, B=64", evaluate),
        ("rollout", f"S={S_eval}, A=4, b=10, T=20, B=256", rollout),
        ("scatter_add", f"{idx.size:.0e} adds into 1e5", scatter),
        ("sherman_morrison", "B=256, d=32", sherman),
        ("quadratic_form", "B=64, n=1000, d=32", quadratic),
        ("optimistic_stage", f"B={Bq}, S=100, A=2 (one h)", stage),
        ("argmax_last", f"B={Bq}, H=20, S=100, A=2", argmax),
    ]


def bench_kernels(quick: bool = False, repeats: int = 7, only: str | None = None) -> list[dict]:
    from theorylab.backends import get_backend

    rows = []
    cases = _kernel_cases(quick)
    for backend, device, threads in _configs(only):
        bk = get_backend(backend, device)
        with _Threads(threads):
            for name, size, setup in cases:
                fn = setup(bk)

                def call(fn=fn, bk=bk):
                    fn()
                    _sync(bk)

                load0 = _load()
                timed = _timed(call, repeats, backend, device, threads)
                rows.append(
                    {
                        "table": "kernel",
                        "kernel": name,
                        "size": size,
                        **timed,
                        "load": (load0, _load()),
                    }
                )
    return rows


# ------------------------------------------------------------------------------ sweep
def bench_sweep(quick: bool = False, repeats: int = 5, only: str | None = None) -> list[dict]:
    """One batched backup Q = R + P V (B = 1) on random-sparse S = 10^6 (10^4 when quick)."""
    from theorylab.backends import get_backend
    from theorylab.mdps import make

    S, A, b = (10_000 if quick else 1_000_000), 4, 10
    t0 = time.perf_counter()
    mdp = make(f"random-sparse:S={S},A={A},b={b},H=1")
    build_s = time.perf_counter() - t0
    V = np.random.default_rng(0).uniform(size=(1, S))
    index_bytes = mdp.P.indices.dtype.itemsize
    nbytes = backup_bytes(S, A, mdp.nnz, index_bytes=index_bytes)
    ref = get_backend("numpy").bellman(get_backend("numpy").model(mdp), V)
    rows = []
    for backend, device, threads in _configs(only):
        bk = get_backend(backend, device)
        with _Threads(threads):
            model = bk.model(mdp)

            def call(bk=bk, model=model):
                out = bk.bellman(model, V)
                _sync(bk)
                return out

            load0 = _load()
            timed = _timed(call, repeats, backend, device, threads)
            err = float(np.abs(bk.to_numpy(call()) - ref).max())
        rows.append(
            {
                "table": "sweep",
                "mdp": f"random-sparse:S={S},A={A},b={b}",
                "nnz": int(mdp.nnz),
                **timed,
                "bytes": nbytes,
                "GBs": nbytes / (timed["median_ms"] * 1e-3) / 1e9,
                "GBs_best": nbytes / (timed["min_ms"] * 1e-3) / 1e9,
                "max_abs_diff_vs_numpy": err,
                "build_s": build_s,
                "load": (load0, _load()),
            }
        )
    return rows


# ------------------------------------------------------------------------------ UCBVI
def _ucbvi_child(cfg: dict) -> dict:
    """Run in a fresh process: time UCBVI episodes phase by phase; peak RSS of the process."""
    from theorylab.algorithms.registry import make_agent
    from theorylab.backends import get_backend
    from theorylab.bench.ucbvi import time_episodes
    from theorylab.experiment import BackendRiskNeutral, env_spec
    from theorylab.mdps import make
    from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators

    threads = cfg.get("threads")
    with _Threads(threads):
        mdp = make(cfg["mdp"])
        B = cfg["B"]
        bk = get_backend(cfg["backend"], cfg["device"])
        objective = BackendRiskNeutral(bk)
        rss0 = _peak_rss_mib()
        agent = make_agent(
            cfg["algorithm"],
            env_spec(mdp),
            B,
            generators(0, range(B), AGENT_STREAM),
            episodes=10_000,
            backend=bk,
        )
        env = generators(0, range(B), ENV_STREAM)
        time_episodes(agent, mdp, env, cfg["warmup"], objective)  # warm-up, not counted
        phases = time_episodes(agent, mdp, env, cfg["episodes"], objective)  # totals, seconds
        n = cfg["episodes"]
        total = sum(phases.values()) / n
        return {
            "table": "ucbvi",
            "algorithm": cfg["algorithm"],
            "mdp": cfg["mdp"],
            "B": B,
            "backend": cfg["backend"],
            "device": cfg["device"],
            "threads": _thread_count(cfg["backend"], threads),
            "storage": agent.model.storage,
            "episodes_timed": n,
            "episode_s": total,
            "seed_episodes_per_s": B / total,
            **{f"{p}_s": v / n for p, v in phases.items()},
            "observed_cells": int(agent.model._observed.size) if agent.model.sparse else None,
            "model_MiB": agent.model.nbytes() / 2**20,
            "peak_rss_MiB": _peak_rss_mib(),
            "rss_before_agent_MiB": rss0,
        }


def _peak_rss_mib() -> float:
    """This process's peak resident memory (``VmHWM``; unlike ``ru_maxrss`` it is reset by
    exec, so a child started by ``subprocess`` does not report its parent's peak)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def environment() -> dict:
    """What decides how the threads behave: numba's threading layer and thread count, torch's
    thread count, OMP_WAIT_POLICY (see the module docstring)."""
    import numba

    out = {
        "numba_threading_layer": numba.config.THREADING_LAYER,
        "numba_threads": numba.get_num_threads(),
        "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"),
    }
    try:
        out["numba_threading_layer"] = numba.threading_layer()
    except ValueError:  # no parallel region has run yet
        pass
    if _has("torch"):
        import torch

        out["torch_threads"] = torch.get_num_threads()
    return out


def _run_child(cfg: dict, timeout: float = 1800.0) -> dict:
    code = (
        "import json, sys\n"
        "from theorylab.bench.backends import _ucbvi_child\n"
        "print('RESULT ' + json.dumps(_ucbvi_child(json.loads(sys.argv[1]))))\n"
    )
    load0 = _load()
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(cfg)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            row = json.loads(line[len("RESULT ") :])
            row["load"] = (load0, _load())
            return row
    return {**cfg, "table": "ucbvi", "error": (proc.stderr or proc.stdout)[-2000:]}


def bench_ucbvi_backends(quick: bool = False, only: str | None = None) -> list[dict]:
    """UCBVI-CH end to end per backend: 1024 seeds on RiverSwim S = 100, one seed on a
    sparse S = 10^5 MDP (B = 32 on RiverSwim S = 10 and S = 10^4 when quick)."""
    problems = (
        [("riverswim:S=10,H=20,sparse=true", 32, 5), ("random-sparse:S=10000,A=4,b=10,H=20", 1, 5)]
        if quick
        else [
            ("riverswim:S=100,H=20,sparse=true", 1024, 10),
            ("random-sparse:S=100000,A=4,b=10,H=20", 1, 20),
        ]
    )
    rows = []
    for mdp, B, episodes in problems:
        for backend, device, threads in _configs(only):
            cfg = {
                "algorithm": "ucbvi-hoeffding",
                "mdp": mdp,
                "B": B,
                "backend": backend,
                "device": device,
                "threads": threads,
                "episodes": episodes,
                "warmup": 2,
            }
            rows.append(_run_child(cfg))
    return rows


def bench_backends(quick: bool = False, backend: str | None = None) -> list[dict]:
    """All three tables (see the module docstring); ``quick``: small sizes only; ``backend``:
    measure only that backend (``_configs``), every available one when None."""
    _configs(backend)  # an unknown or missing backend fails before anything is timed
    rows = bench_kernels(quick, repeats=3 if quick else 7, only=backend)
    rows += bench_sweep(quick, repeats=3 if quick else 5, only=backend)
    rows += bench_ucbvi_backends(quick, only=backend)
    cuda = _cuda()
    env = environment()
    for r in rows:
        r["cuda_available"] = cuda
        r["environment"] = env
    return rows


# ------------------------------------------------------------------------------ table
def _name(r: dict) -> str:
    dev = "" if r["device"] == "cpu" else f"[{r['device']}]"
    return f"{r['backend']}{dev}"


def _load_cell(r: dict) -> str:
    return f"{r['load'][0]}->{r['load'][1]}"


TIMING_COLUMNS = ("thr", "median ms", "min", "max")


def _timing_cells(r: dict, digits: int) -> list[str]:
    """The cells under :data:`TIMING_COLUMNS`: threads, then median, min and max milliseconds."""
    return [str(r["threads"]), *(f"{r[k]:.{digits}f}" for k in ("median_ms", "min_ms", "max_ms"))]


def format_table(rows: list[dict]) -> str:
    """Plain, parseable tables: kernels, the 10^6-state sweep, UCBVI end to end."""
    out = []
    kern = [r for r in rows if r.get("table") == "kernel"]
    if kern:
        columns = [
            left("kernel"),
            left("size"),
            left("backend"),
            *map(right, TIMING_COLUMNS),
            left("load"),
        ]
        body = [
            [r["kernel"], r["size"], _name(r), *_timing_cells(r, 3), _load_cell(r)] for r in kern
        ]
        out.append(render(columns, body))
    sweep = [r for r in rows if r.get("table") == "sweep"]
    if sweep:
        columns = [
            left("sweep (B=1 backup)"),
            left("backend"),
            *map(right, (*TIMING_COLUMNS, "GB/s", "best", "|dQ|")),
            left("load"),
        ]
        body = [
            [
                r["mdp"],
                _name(r),
                *_timing_cells(r, 2),
                f"{r['GBs']:.2f}",
                f"{r['GBs_best']:.2f}",
                f"{r['max_abs_diff_vs_numpy']:.1e}",
                _load_cell(r),
            ]
            for r in sweep
        ]
        out.append(render(columns, body))
    uc = [r for r in rows if r.get("table") == "ucbvi"]
    if uc:
        columns = [
            left("UCBVI-CH on"),
            right("B"),
            left("backend"),
            *map(right, ("thr", "seed-ep/s", "ms/ep", "regret", "roll", "count", "plan")),
            right("peak MiB"),
        ]
        body: list[Row] = []
        for r in uc:
            prefix = [r["mdp"], str(r["B"]), _name(r)]
            if "error" in r:
                body.append(Span(prefix, f"failed: {r['error']!r}"))
                continue
            body.append(
                [
                    *prefix,
                    str(r["threads"]),
                    f"{r['seed_episodes_per_s']:.0f}",
                    f"{r['episode_s'] * 1e3:.1f}",
                    f"{r['regret_s'] * 1e3:.1f}",
                    f"{r['rollout_s'] * 1e3:.1f}",
                    f"{r['counts_s'] * 1e3:.1f}",
                    f"{r['plan_s'] * 1e3:.1f}",
                    f"{r['peak_rss_MiB']:.0f}",
                ]
            )
        note = "(phases in ms per episode of all B seeds; peak MiB: resident memory of the process)"
        out.append(render(columns, body, notes=[note]))
    return "\n\n".join(out)
