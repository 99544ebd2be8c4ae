"""The machine a benchmark ran on, and how fast it reads memory (the roof of a Bellman sweep).

What
----
:func:`machine_info` returns a flat dict (printed by ``theorylab bench`` and stored with every
benchmark table): CPU model (``/proc/cpuinfo``), logical cores and the cores this process may use,
total memory, the GPU when torch with CUDA is installed, numba's thread count, the 1-minute load
average (the machines that run benchmarks are often shared: a load above the core count means
the timings are inflated), the thread-pool environment (``OMP_WAIT_POLICY``,
``NUMBA_THREADING_LAYER``), package versions under ``"versions"``, and the measured read
bandwidth.

How (read bandwidth)
--------------------
:func:`memory_read_bandwidth` sums a float64 array of ``nbytes`` (default 1 GiB, far larger than
any cache), touched once before timing, ``repeats`` times, and reports the median as
``nbytes / seconds`` in GB/s (1 GB = 1e9 bytes) two ways:

* ``numpy``: ``np.sum`` (one thread; numpy's pairwise sum is unrolled and SIMD, so it is
  memory-bound on one core);
* ``numba``: a ``prange`` sum over all numba threads with ``fastmath=True`` (reassociation lets
  it vectorise; the probe must be bound by memory, not by the latency of one add chain).

The all-threads figure is the roof used for "fraction of bandwidth" in docs/benchmarks.md.
Cost: one ``nbytes`` allocation and ``2 * (repeats + 1)`` passes over it (about 1-2 s for 1 GiB).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import platform
import time
from pathlib import Path

import numpy as np


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) * 1024 / 2**30, 1)
    except OSError:
        pass
    return None


def available_memory_bytes() -> int | None:
    """``MemAvailable`` from /proc/meminfo (what can be allocated without swapping), or None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _gpu() -> str | None:
    if importlib.util.find_spec("torch") is None:  # do not pay torch's import when absent
        return None
    try:
        import torch

        if torch.cuda.is_available():
            n = torch.cuda.device_count()
            return f"{n} x {torch.cuda.get_device_name(0)}"
    except Exception:  # a broken CUDA install must not break the benchmark
        return None
    return None


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in ("theorylab", "numpy", "scipy", "numba", "llvmlite", "torch", "mdptoolbox"):
        if importlib.util.find_spec(name) is None:
            continue
        try:
            from importlib.metadata import version

            dist = {"mdptoolbox": "pymdptoolbox"}.get(name, name)
            out[name] = version(dist)
        except Exception:
            out[name] = getattr(importlib.import_module(name), "__version__", "?")
    return out


_bw_kernel = None


def _numba_sum(x: np.ndarray) -> float:
    global _bw_kernel
    if _bw_kernel is None:
        from numba import njit, prange

        @njit(parallel=True, fastmath=True, cache=True)
        def parallel_sum(x):  # x (n,) float64
            acc = 0.0
            for i in prange(x.shape[0]):
                acc += x[i]
            return acc

        _bw_kernel = parallel_sum
    return _bw_kernel(x)


def memory_read_bandwidth(nbytes: int = 2**30, repeats: int = 5) -> dict:
    """Measured read bandwidth in GB/s (median over ``repeats``); see the module docstring.

    Returns ``{"numpy_gbs", "numba_gbs", "numba_threads", "nbytes", "repeats"}`` plus the
    min/max of each (``*_gbs_min``, ``*_gbs_max``).
    """
    import numba

    x = np.ones(max(1, nbytes // 8))  # (n,) float64, pages touched here, not in the timing
    out: dict = {"nbytes": int(x.nbytes), "repeats": repeats}
    for name, fn in (("numpy", np.sum), ("numba", _numba_sum)):
        fn(x)  # warm-up (and numba compile / cache load)
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn(x)
            ts.append(time.perf_counter() - t0)
        rates = x.nbytes / np.asarray(ts) / 1e9
        out[f"{name}_gbs"] = round(float(np.median(rates)), 2)
        out[f"{name}_gbs_min"] = round(float(rates.min()), 2)
        out[f"{name}_gbs_max"] = round(float(rates.max()), 2)
    out["numba_threads"] = numba.get_num_threads()
    return out


def last_level_cache_bytes() -> int | None:
    """The size of the largest CPU cache in bytes (Linux ``/sys``; None where unknown).

    A working set no larger than this is read from cache, not from memory: comparing its read
    rate with :func:`memory_read_bandwidth` would give more than 100% (``bench planning``).
    """
    sizes = {}
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            text = (index / "size").read_text().strip().upper()
        except (OSError, ValueError):
            continue
        if kind == "Instruction" or not text:
            continue
        unit = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1], 1)
        try:
            sizes[level] = int(text.rstrip("KMG")) * unit
        except ValueError:
            continue
    return sizes[max(sizes)] if sizes else None


def machine_info(*, measure_bandwidth: bool = True, nbytes: int = 2**30, repeats: int = 5) -> dict:
    """The machine, as a flat dict (package versions nested under ``"versions"``).

    measure_bandwidth: also run :func:`memory_read_bandwidth` (``nbytes``, ``repeats``) and add
    ``read_gbs`` (all numba threads) and ``read_gbs_1thread`` (numpy sum).
    """
    import numba

    info = {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_gib": _memory_gib(),
        "last_level_cache_mib": (llc / 2**20) if (llc := last_level_cache_bytes()) else None,
        "gpu": _gpu(),
        "numba_threads": numba.config.NUMBA_NUM_THREADS,
        "load_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "platform": platform.platform(terse=True),
        # thread-pool settings that change parallel timings (unset = the library default)
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "numba_threading_layer": os.environ.get("NUMBA_THREADING_LAYER"),
    }
    if measure_bandwidth:
        bw = memory_read_bandwidth(nbytes, repeats)
        info["read_gbs"] = bw["numba_gbs"]
        info["read_gbs_1thread"] = bw["numpy_gbs"]
    info["versions"] = _versions()
    return info
