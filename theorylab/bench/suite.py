"""``theorylab bench [planning|ucbvi|lsvi|offline|risk|backends|long|dual|preference|forest|llm|
all]``: run the benchmark tables and collect them as JSON (``all`` leaves out ``llm``, which
needs TRL: run it by name).

Benchmarks print tables; they are not timed tests. Each table module exposes
``bench_<name>(quick=...) -> list[dict]`` and ``format_table(rows) -> str``. ``--runs N``
reaches the benchmarks whose ``bench_<name>`` takes ``runs`` (``llm``: N runs in one sitting and a
table of how far each row's ratios spread); any other is refused before any work. A module whose
``bench_<name>`` takes ``backend`` (and ``device``) honours ``--backend`` / ``--device``:

* ``ucbvi``: the backend of UCBVI's empirical model, exact regret and rollouts (default numpy,
  ``theorylab.run``'s default);
* ``lsvi``: the backend of LSVI-UCB's Sherman-Morrison and width kernels, exact regret and
  rollouts (default numpy);
* ``backends``: measure only that backend (default: every backend available here).

The others time fixed implementations side by side (planning: scipy, pymdptoolbox and the fused
numba kernel) and say so when a backend is asked of them.
"""

from __future__ import annotations

import importlib
import inspect
import time
from typing import Any

BENCHMARKS = (
    "planning",
    "ucbvi",
    "lsvi",
    "offline",
    "risk",
    "backends",
    "long",
    "dual",
    "preference",
    "forest",
    "llm",
)
# Run by name only (not by ``all``): llm needs TRL, the [bench] extra.
BY_NAME_ONLY = ("llm",)


def _accepts(fn, name: str) -> bool:
    return name in inspect.signature(fn).parameters


def _bench_fn(name: str):
    """``bench_<name>`` of ``theorylab.bench.<name>`` (imports the module, not its heavy deps)."""
    return getattr(importlib.import_module(f"theorylab.bench.{name}"), f"bench_{name}")


def run_benchmarks(
    which: str = "all",
    *,
    quick: bool = False,
    backend: str | None = None,
    device: str = "cpu",
    runs: int = 1,
    allocator: str | None = None,
) -> dict:
    """Run the named benchmark (or all), print each table, return everything as a dict.

    backend / device: passed to the benchmarks that take them (module docstring); None leaves
    each benchmark at its default. runs: run the benchmark this many times in one sitting and
    report how far its figures spread (only benchmarks that take ``runs``: ``llm``). allocator:
    the C allocator's setting for the benchmarks that take it (``llm``:
    :mod:`theorylab.bench.allocator`); None leaves their default."""
    from theorylab.bench.machine import machine_info

    names = tuple(n for n in BENCHMARKS if n not in BY_NAME_ONLY) if which == "all" else (which,)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        raise ValueError(f"unknown benchmark {unknown[0]!r}; available: {', '.join(BENCHMARKS)}")
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"--runs must be a positive integer, got {runs!r}")
    if runs != 1:
        takes = [n for n in names if _accepts(_bench_fn(n), "runs")]
        if takes != list(names):
            raise ValueError(
                f"--runs applies to theorylab bench llm only, got bench {which} (--runs {runs})"
            )
    if allocator is not None:
        from theorylab.bench.allocator import check_allocator

        check_allocator(allocator)
        if not all(_accepts(_bench_fn(n), "allocator") for n in names):
            raise ValueError(
                f"--allocator applies to theorylab bench llm only, got bench {which} "
                f"(--allocator {allocator})"
            )
    if backend is not None:
        from theorylab.backends import get_backend

        get_backend(backend, device)  # an unknown or unavailable backend fails before any timing
    info = machine_info()
    print("machine: " + ", ".join(f"{k}={v}" for k, v in info.items() if k != "versions"))
    out: dict[str, Any] = {
        "machine": info,
        "quick": quick,
        "backend": backend,
        "device": device,
        "tables": {},
    }
    for name in names:
        module = importlib.import_module(f"theorylab.bench.{name}")
        fn = getattr(module, f"bench_{name}")
        kwargs: dict[str, Any] = {"quick": quick}
        if runs != 1:
            kwargs["runs"] = runs
        if allocator is not None:
            kwargs["allocator"] = allocator
        if backend is not None:
            if _accepts(fn, "backend"):
                kwargs["backend"] = backend
            else:
                print(f"\n({name}: times fixed implementations side by side; --backend ignored)")
        if device != "cpu" and _accepts(fn, "device"):
            kwargs["device"] = device
        if info.get("read_gbs") and _accepts(fn, "read_gbs"):
            kwargs["read_gbs"] = info["read_gbs"]  # the machine line's figure, not a second one
        t0 = time.perf_counter()
        rows = fn(**kwargs)
        print(f"\n== {name} ({time.perf_counter() - t0:.1f} s) ==")
        print(module.format_table(rows))
        out["tables"][name] = rows
    return out
