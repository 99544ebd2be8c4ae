"""Benchmarks: tables of measured speed and memory, not timed tests (``theorylab bench``).

Each table module exposes ``bench_<name>(quick=...) -> list[dict]`` and
``format_table(rows) -> str``; :mod:`theorylab.bench.machine` describes the machine and measures
its memory read bandwidth. Nothing is imported here, so ``import theorylab.bench`` is free; the
results and their method are written up in docs/benchmarks.md.
"""
