"""Benchmark: one Bellman-optimality sweep and a full solve on random sparse MDPs up to 10^6 states.

What
----
For each S in ``sizes`` the ``random-sparse`` family (A actions, b successors per pair, so
nnz = S*A*b) is built and measured:

* construction: seconds (median of ``min(repeats, 3)`` builds) and memory (tracemalloc: the
  peak during one build, and what the finished model holds);
* one sweep ``V'(s) = max_a R(s, a) + gamma sum_s' P(s'|s,a) V(s')`` in ms (median, min, max over
  ``repeats`` timed calls after one warm-up; the methods are timed round-robin, one call each in
  turn, so that load from a neighbour spreads over all of them), by

  - ``scipy`` (the peer, what a user writes): ``(R + gamma * P @ V).reshape(S, A).max(1)``,
    R flattened ``(S*A,)``;
  - ``theorylab-numpy``: the planners' path, ``(mdp.R + gamma * mdp.expected_next(V)).max(1)``;
  - ``pymdptoolbox``: pymdptoolbox's own ``MDP._bellmanOperator`` on its sparse input form (a
    tuple of A CSR ``(S, S)`` matrices), when the package is installed;
  - ``numba-fused``: :func:`theorylab.kernels.bellman.csr_max_sweep`, with 1 thread and with all
    numba threads, plus the float32-data variant (all threads; a different MDP, see the kernel's
    docstring for its error bound) and ``numba-simple``, the plain fused loop without the
    four-row lockstep and the prefetch (all threads; what those two buy);

  with the effective bandwidth (see "Byte model"), the fraction of the machine's measured read
  bandwidth (:func:`theorylab.bench.machine.memory_read_bandwidth`, all threads; not given, and
  shown as ``cache``, when the bytes a sweep reads fit in the last-level cache: they are then
  read from cache, faster than memory, and the fraction came out at 113-196%), the speed-up
  over the scipy peer, and the extra memory one call allocates (tracemalloc peak);
* a full discounted solve with the fused kernel (:func:`value_iteration_csr`, gamma = 0.99,
  certified ``||V - V*||_inf <= tol = 1e-6``): iterations and seconds, with the planners'
  sup-norm stopping rule and with MacQueen's bounds (``stopping="span"``);
* pymdptoolbox's memory wall, computed, never allocated: its dense input is ``(A, S, S)``
  float64 (``8 A S^2`` bytes: 320 GB at S = 10^5); its sparse input passes through
  ``mdptoolbox.util.check``, whose ``matrix >= 0`` on a CSR matrix builds a dense ``(S, S)``
  array of True and stores it as CSR (at least ``S^2 (2 + index bytes)`` per action: 100 GB at
  S = 10^5), and ``ValueIteration``'s iteration bound slices every column of every matrix
  (O(S * nnz) time). :func:`bench_pymdptoolbox_small` measures that
  growth at small S.

Byte model
----------
The bytes a sweep must read at least once: ``nnz * (data + index bytes) + (S*A + 1) * indptr
bytes + S*A * 8 (R) + S * 8 (V)`` (data 8 B or 4 B for float32; int32 indices and indptr). The
same model divides every implementation's time, so GB/s compares implementations, and the
ratio to the measured read bandwidth says how close a sweep is to the memory roof. Writes (V',
pi: 16 B per state) and re-reads of V through the gather are not counted.

Noise
-----
Benchmarks often run on shared machines: every row records the 1-minute load average before and
after. Medians are reported with min and max; a load above the core count inflates all figures.
One-thread rows also report ``cpu_ms``, the median on-CPU time of the thread (``thread_time``):
time spent descheduled does not count, so it is the steadier figure on a loaded machine (memory
bandwidth and caches shared with neighbours still slow it).

``quick=True`` runs S = 10^4 only with 3 repeats, no pymdptoolbox sweep (CI smoke test).
"""

from __future__ import annotations

import gc
import os
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from types import SimpleNamespace

import numpy as np

from theorylab.table import left, render, right


def sweep_bytes(S: int, A: int, nnz: int, *, data_bytes: int = 8, index_bytes: int = 4) -> int:
    """The byte model (module docstring): bytes one CSR sweep must read."""
    return nnz * (data_bytes + index_bytes) + (S * A + 1) * index_bytes + S * A * 8 + S * 8


def _load() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def _time_round_robin(
    calls: Sequence[tuple[int, Callable[[], object]]], repeats: int
) -> list[tuple[float, float, float, float]]:
    """Time each ``(numba threads, call)`` ``repeats`` times, interleaved round-robin after one
    warm-up of each, so that a burst of load from a neighbour hits every method alike.

    Returns, per call: median, min and max wall milliseconds, and the median on-CPU milliseconds
    of the calling thread (``time.thread_time``).
    """
    import numba

    wall: list[list[float]] = [[] for _ in calls]
    cpu: list[list[float]] = [[] for _ in calls]
    saved = numba.get_num_threads()
    try:
        for threads, fn in calls:  # warm-up: compile / load caches, touch the pages
            numba.set_num_threads(threads)
            fn()
        for _ in range(repeats):
            for i, (threads, fn) in enumerate(calls):
                numba.set_num_threads(threads)
                c0 = time.thread_time()
                t0 = time.perf_counter()
                fn()
                wall[i].append(time.perf_counter() - t0)
                cpu[i].append(time.thread_time() - c0)
    finally:
        numba.set_num_threads(saved)
    out = []
    for w, c in zip(wall, cpu, strict=True):
        ms = np.asarray(w) * 1e3
        out.append((float(np.median(ms)), float(ms.min()), float(ms.max()), 1e3 * np.median(c)))
    return out


def _traced_peak_mb(fn: Callable[[], object]) -> float:
    """Peak memory (MB) traced by tracemalloc during one call, above what was held before."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return (peak - base) / 1e6


def _build(S: int, A: int, b: int, gamma: float, seed: int):
    from theorylab.mdps import make

    return make(f"random-sparse:S={S},A={A},b={b},gamma={gamma},seed={seed}")


def _pymdptoolbox_sweep(mdp, gamma: float):
    """pymdptoolbox's Bellman operator on its sparse input form, or None if not installed."""
    try:
        import scipy.sparse as sp
        from mdptoolbox.mdp import MDP
    except ImportError:
        return None
    S, A = mdp.S, mdp.A
    P = tuple(sp.csr_matrix(mdp.P[a::A]) for a in range(A))  # A x (S, S): rows s*A + a
    R = tuple(np.ascontiguousarray(mdp.R[:, a]) for a in range(A))
    # MDP.__init__ would run util.check, whose `matrix >= 0` stores S^2 entries per action
    # (see the module docstring), so the operator is called on the attributes it reads.
    state = SimpleNamespace(S=S, A=A, P=P, R=R, discount=gamma, V=None)
    return lambda V: MDP._bellmanOperator(state, V)


def pymdptoolbox_memory(S: int, A: int) -> dict:
    """Bytes pymdptoolbox would allocate at this size (computed, not allocated)."""
    from theorylab.bench.machine import available_memory_bytes

    # util.check's `P[a] >= 0` on a CSR matrix (scipy _base._inequality): a dense (S, S) bool
    # array of ones (1 B per entry), converted to CSR (1 B data + 4 or 8 B index per entry), one
    # action at a time; so at least S^2 (2 + index bytes) alive at once.
    index_bytes = 4 if S * S < 2**31 else 8
    return {
        "dense_P_bytes": 8 * A * S * S,  # (A, S, S) float64 input
        "sparse_check_bytes": S * S * (2 + index_bytes),
        "available_bytes": available_memory_bytes(),
    }


def bench_planning(
    sizes: Sequence[int] = (10**5, 10**6),
    A: int = 4,
    b: int = 10,
    repeats: int = 5,
    *,
    quick: bool = False,
    gamma: float = 0.99,
    tol: float = 1e-6,
    seed: int = 0,
    solve: bool = True,
    float32: bool = True,
    peers: bool = True,
    read_gbs: float | None = None,
) -> list[dict]:
    """Measure construction, one sweep per implementation, and a full solve, for each S.

    quick: S = 10^4 only, at most 3 repeats, no pymdptoolbox (CI smoke).
    read_gbs: the machine's read bandwidth in GB/s for ``bw_fraction``; measured (all numba
        threads, 1 GiB) when None.
    Returns one dict per size; ``format_table(rows)`` prints them. Keys: ``S, A, b, nnz,
    model_mb, sweep_mb`` (the byte model), ``construct_s`` (median), ``construct_s_min``,
    ``construct_peak_mb``/``model_held_mb`` (tracemalloc), ``sweeps`` (list of dicts: ``method,
    threads, ms, ms_min, ms_max, cpu_ms, gbs, bw_fraction, speedup, extra_mb``), ``solve`` /
    ``solve_span`` (dicts or None), ``pymdptoolbox`` (dict), ``read_gbs``, ``load_before``,
    ``load_after``.
    """
    from theorylab.bench.machine import last_level_cache_bytes, memory_read_bandwidth

    if quick:
        sizes, repeats, peers = (10**4,), min(repeats, 3), False
    if read_gbs is None:
        read_gbs = memory_read_bandwidth(nbytes=2**28 if quick else 2**30)["numba_gbs"]
    llc = last_level_cache_bytes()
    rows = []
    sizes = [int(S) for S in sizes]
    _say(
        f"planning: {len(sizes)} size(s) S = {', '.join(f'{S:.0e}' for S in sizes)} "
        f"({A} actions, {b} successors, {repeats} repeats{', pymdptoolbox' if peers else ''})"
    )
    t_start = time.perf_counter()
    if max(sizes) > CALIBRATION_S:
        # Say up front how long the whole run will take: time the same measurement at a small S
        # and scale it linearly (every step of the bench reads the model a fixed number of times).
        gc.collect()
        t0 = time.perf_counter()
        _bench_size(
            CALIBRATION_S, A, b, repeats, gamma, tol, seed, solve, float32, False, read_gbs, llc
        )
        took = time.perf_counter() - t0
        _say(f"planning: {estimate_line(sizes, CALIBRATION_S, took)}")
    for i, S in enumerate(sizes):
        t0 = time.perf_counter()
        _say(f"planning: S = {S:.0e} ({i + 1} of {len(sizes)}) ...")
        gc.collect()
        rows.append(
            _bench_size(S, A, b, repeats, gamma, tol, seed, solve, float32, peers, read_gbs, llc)
        )
        gc.collect()
        took = time.perf_counter() - t0
        rest = sum(sizes[i + 1 :]) / S * took
        more = f"; the remaining sizes: about {rest:.0f} s" if i + 1 < len(sizes) else ""
        _say(f"planning: S = {S:.0e} took {took:.1f} s{more}")
    _say(f"planning: done in {time.perf_counter() - t_start:.1f} s")
    return rows


CALIBRATION_S = 10**4


def estimate_line(sizes: Sequence[int], calibration_s: int, calibration_seconds: float) -> str:
    """The up-front estimate of a planning bench: the calibration's time scaled linearly in S."""
    total = sum(sizes) / calibration_s * calibration_seconds
    return (
        f"estimated total: about {_duration(total)} (a calibration at S = {calibration_s:.0e} took "
        f"{calibration_seconds:.1f} s; the work grows linearly in S; pymdptoolbox not included)"
    )


def _duration(seconds: float) -> str:
    """'45 s', '12 min', '1.5 h'."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _say(line: str) -> None:
    """A progress line on stderr (the tables go to stdout)."""
    print(line, file=sys.stderr, flush=True)


def _bench_size(
    S: int,
    A: int,
    b: int,
    repeats: int,
    gamma: float,
    tol: float,
    seed: int,
    solve: bool,
    float32: bool,
    peers: bool,
    read_gbs: float,
    llc: int | None = None,
) -> dict:
    """One row of :func:`bench_planning`; ``llc``: the last-level cache's bytes (None: unknown)."""
    import numba

    from theorylab.kernels.bellman import (
        PARALLEL_MIN_NNZ,
        csr_arrays,
        csr_max_sweep,
        value_iteration_csr,
    )

    # the kernels run small models on one thread whatever numba's setting (PARALLEL_MIN_NNZ)
    all_threads = numba.config.NUMBA_NUM_THREADS if S * A * b >= PARALLEL_MIN_NNZ else 1
    row: dict = {"S": S, "A": A, "b": b, "load_before": _load()}
    times = []
    for _ in range(max(1, min(repeats, 3))):
        t0 = time.perf_counter()
        mdp = _build(S, A, b, gamma, seed)
        times.append(time.perf_counter() - t0)
        del mdp
        gc.collect()
    tracemalloc.start()
    mdp = _build(S, A, b, gamma, seed)
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    P, R, nnz = mdp.P, mdp.R, mdp.nnz
    M = csr_arrays(P)
    idx_bytes = M.indices.itemsize
    row.update(
        nnz=nnz,
        model_mb=(M.nbytes + R.nbytes) / 1e6,
        sweep_mb=sweep_bytes(S, A, nnz, index_bytes=idx_bytes) / 1e6,
        construct_s=float(np.median(times)),
        construct_s_min=float(min(times)),
        construct_peak_mb=peak / 1e6,
        model_held_mb=held / 1e6,
        read_gbs=read_gbs,
        llc_mb=llc / 1e6 if llc else None,
    )

    V = np.random.default_rng(seed + 1).random(S) / (1 - gamma)  # (S,) a plausible V
    R_flat = np.ascontiguousarray(R).reshape(S * A)  # (S*A,)
    V_out, pi_out = np.empty(S), np.empty(S, np.int64)

    def fused(M=M, kernel="fused"):
        return csr_max_sweep(M, R, V, gamma, V_out=V_out, policy_out=pi_out, kernel=kernel)

    # (name, numba threads, call, data bytes per entry)
    methods: list[tuple[str, int, Callable, int]] = [
        ("scipy", 1, lambda: (R_flat + gamma * (P @ V)).reshape(S, A).max(1), 8),
        ("theorylab-numpy", 1, lambda: (mdp.R + gamma * mdp.expected_next(V)).max(1), 8),
    ]
    if peers:
        op = _pymdptoolbox_sweep(mdp, gamma)
        if op is not None:
            methods.append(("pymdptoolbox", 1, lambda: op(V), 8))
    methods += [
        ("numba-simple", all_threads, lambda: fused(kernel="simple"), 8),
        ("numba-fused", 1, fused, 8),
    ]
    if all_threads > 1:
        methods.append(("numba-fused", all_threads, fused, 8))
    if float32:
        M32 = csr_arrays(P, dtype=np.float32)
        methods.append(("numba-fused-f32", all_threads, lambda: fused(M32), 4))

    timings = _time_round_robin([(threads, fn) for _, threads, fn, _ in methods], repeats)
    saved = numba.get_num_threads()
    sweeps = []
    for (name, threads, fn, data_bytes), (ms, lo, hi, cpu_ms) in zip(methods, timings, strict=True):
        nb = sweep_bytes(S, A, nnz, data_bytes=data_bytes, index_bytes=idx_bytes)
        gbs = nb / (ms * 1e-3) / 1e9
        # read from cache, not memory: a fraction of the memory bandwidth would exceed 100%
        in_cache = llc is not None and nb <= llc
        numba.set_num_threads(threads)
        extra = _traced_peak_mb(fn)
        sweeps.append(
            dict(
                method=name,
                threads=threads,
                ms=ms,
                ms_min=lo,
                ms_max=hi,
                # one thread: on-CPU time, which a descheduling neighbour does not inflate
                cpu_ms=float(cpu_ms) if threads == 1 else None,
                gbs=gbs,
                in_cache=in_cache,
                bw_fraction=gbs / read_gbs if read_gbs and not in_cache else None,
                extra_mb=extra,
            )
        )
    numba.set_num_threads(saved)
    for sw in sweeps:
        sw["speedup"] = sweeps[0]["ms"] / sw["ms"]
    row["sweeps"] = sweeps

    row["solve"] = row["solve_span"] = None
    if solve:
        for key, stopping in (("solve", "sup"), ("solve_span", "span")):
            t0 = time.perf_counter()
            res = value_iteration_csr(M, R, gamma, tol=tol, max_iter=100_000, stopping=stopping)
            sec = time.perf_counter() - t0
            row[key] = dict(
                method="numba-fused",
                stopping=stopping,
                threads=min(numba.get_num_threads(), all_threads),
                gamma=gamma,
                tol=tol,
                iterations=res.iterations,
                seconds=sec,
                ms_per_iteration=sec / res.iterations * 1e3,
                converged=res.converged,
                error_bound=res.error_bound,
            )
    row["pymdptoolbox"] = pymdptoolbox_memory(S, A)
    row["load_after"] = _load()
    return row


def bench_pymdptoolbox_small(
    sizes: Sequence[int] = (1000, 2000, 4000), A: int = 4, b: int = 10, gamma: float = 0.99
) -> list[dict]:
    """pymdptoolbox's ``ValueIteration`` on its sparse input at small S: constructor seconds
    (``util.check`` and the O(S * nnz) iteration bound), run seconds and iterations (its span
    stopping rule, epsilon = 1e-6), beside theorylab's fused solve at the same size.
    Returns [] when pymdptoolbox is not installed."""
    try:
        import scipy.sparse as sp
        from mdptoolbox.mdp import ValueIteration
    except ImportError:
        return []
    import warnings

    from theorylab.kernels.bellman import value_iteration_csr

    rows = []
    for S in sizes:
        mdp = _build(S, A, b, gamma, 0)
        P = [sp.csr_matrix(mdp.P[a::A]) for a in range(A)]
        R = np.asarray(mdp.R)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scipy's SparseEfficiencyWarning on `P >= 0`
            t0 = time.perf_counter()
            vi = ValueIteration(P, R, gamma, epsilon=1e-6)
            ctor = time.perf_counter() - t0
            t0 = time.perf_counter()
            vi.run()
            run = time.perf_counter() - t0
        t0 = time.perf_counter()
        res = value_iteration_csr(mdp.P, mdp.R, gamma, tol=1e-6, stopping="sup")
        ours = time.perf_counter() - t0
        rows.append(
            dict(
                S=S,
                nnz=mdp.nnz,
                pymdptoolbox_ctor_s=ctor,
                pymdptoolbox_run_s=run,
                pymdptoolbox_iterations=vi.iter,
                theorylab_solve_s=ours,
                theorylab_iterations=res.iterations,
            )
        )
    return rows


# ------------------------------------------------------------------------------------ tables


def _fmt_bytes(n: float | None) -> str:
    if n is None:
        return "?"
    for unit, k in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= k:
            return f"{n / k:.3g} {unit}"
    return f"{n:.0f} B"


def format_table(rows: list[dict]) -> str:
    """Plain-text tables of :func:`bench_planning` rows: sweeps, then build/solve/memory."""
    if not rows:
        return "(no rows)"
    sweep_body = []
    for r in rows:
        for sw in r["sweeps"]:
            frac = sw["bw_fraction"]
            share = "cache" if sw.get("in_cache") else "?" if frac is None else f"{100 * frac:.0f}%"
            sweep_body.append(
                [
                    f"{r['S']:.0e}".replace("e+0", "e"),
                    sw["method"],
                    str(sw["threads"]),
                    f"{sw['ms']:.1f}",
                    f"{sw['ms_min']:.1f}-{sw['ms_max']:.1f}",
                    f"{sw['cpu_ms']:.1f}" if sw.get("cpu_ms") is not None else "-",
                    f"{sw['gbs']:.2f}",
                    share,
                    f"{sw['speedup']:.2f}x",
                    f"{sw['extra_mb']:.0f}",
                ]
            )
    sweeps = render(
        [
            right("S"),
            left("method"),
            *map(right, ("thr", "ms", "min-max", "cpu ms", "GB/s", "%bw", "vs scipy", "extra MB")),
        ],
        sweep_body,
    )
    size_body = []
    for r in rows:
        sv, sp_ = r.get("solve"), r.get("solve_span")
        pm = r.get("pymdptoolbox") or {}
        size_body.append(
            [
                f"{r['S']:.0e}".replace("e+0", "e"),
                f"{r['nnz']:.2e}",
                f"{r['model_mb']:.0f}",
                f"{r['construct_s']:.2f}",
                f"{r['construct_peak_mb']:.0f}",
                f"{r['model_held_mb']:.0f}",
                f"{sv['iterations']}" if sv else "-",
                f"{sv['seconds']:.1f}" if sv else "-",
                f"{sp_['iterations']}" if sp_ else "-",
                f"{sp_['seconds']:.2f}" if sp_ else "-",
                _fmt_bytes(pm.get("dense_P_bytes")),
                _fmt_bytes(pm.get("sparse_check_bytes")),
                f"{r['load_before']}/{r['load_after']}",
            ]
        )
    sizes = render(
        [
            right("S"),
            right("nnz"),
            right("model MB"),
            right("build s"),
            right("build peak MB"),
            right("held MB"),
            right("VI iters"),
            right("VI s"),
            right("span iters"),
            right("span s"),
            right("pymdptb dense"),
            right("pymdptb check"),
            right("load"),
        ],
        size_body,
    )
    r0 = rows[0]
    cached = any(sw.get("in_cache") for r in rows for sw in r["sweeps"])
    notes = (
        f"byte model: nnz*(8+4) + (S*A+1)*4 + S*A*8 + S*8 (f32: nnz*(4+4) + ...); "
        f"%bw = GB/s / {r0['read_gbs']:.1f} GB/s measured read bandwidth (all threads). "
        + (
            f"%bw 'cache': the sweep's bytes fit in the {r0['llc_mb']:.0f} MB last-level cache, "
            "so it reads from cache, faster than memory, and a share of the memory bandwidth "
            "would exceed 100%. "
            if cached
            else ""
        )
        + f"VI: gamma={r0['solve']['gamma'] if r0.get('solve') else '-'}, certified "
        f"||V-V*||_inf <= tol={r0['solve']['tol'] if r0.get('solve') else '-'} by the planners' "
        "sup-norm rule (VI) or by MacQueen's bounds (span). "
        "Memory: tracemalloc (build peak, model held, extra per sweep call). "
        "pymdptb: bytes pymdptoolbox would allocate (dense (A,S,S) input; util.check on sparse "
        "input), computed, not allocated."
    )
    return "\n\n".join([sweeps, sizes, notes])
