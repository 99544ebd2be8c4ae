"""``theorylab bench [planning|ucbvi|all]``: run the benchmark tables and collect them as JSON.

Benchmarks print tables; they are not timed tests. Each table module exposes
``bench_<name>(quick=...) -> list[dict]`` and ``format_table(rows) -> str``.
"""

from __future__ import annotations

import importlib
import time
from typing import Any

BENCHMARKS = ("planning", "ucbvi", "lsvi", "offline", "risk", "backends")


def run_benchmarks(which: str = "all", *, quick: bool = False, backend: str = "auto") -> dict:
    """Run the named benchmark (or all), print each table, return everything as a dict."""
    from theorylab.bench.machine import machine_info

    names = BENCHMARKS if which == "all" else (which,)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        raise ValueError(f"unknown benchmark {unknown[0]!r}; available: {', '.join(BENCHMARKS)}")
    info = machine_info()
    print("machine: " + ", ".join(f"{k}={v}" for k, v in info.items() if k != "versions"))
    out: dict[str, Any] = {"machine": info, "quick": quick, "backend": backend, "tables": {}}
    for name in names:
        module = importlib.import_module(f"theorylab.bench.{name}")
        t0 = time.perf_counter()
        rows = getattr(module, f"bench_{name}")(quick=quick)
        print(f"\n== {name} ({time.perf_counter() - t0:.1f} s) ==")
        print(module.format_table(rows))
        out["tables"][name] = rows
    return out
