"""``theorylab bench``'s options reach the benchmarks that use them (no timing is asserted).

The benchmarks themselves print tables (docs/benchmarks.md); these tests check the plumbing: every
benchmark module is offered by the CLI, ``--backend`` reaches the benchmarks that take it and is
reported as ignored by the others, an unknown backend fails before anything is timed, and the
backends table keeps only the asked backend's rows.
"""

from __future__ import annotations

import sys
import types

import pytest

from theorylab.bench import suite
from theorylab.bench.backends import _configs
from theorylab.cli import build_parser


def test_cli_offers_every_benchmark_module():
    parser = build_parser()
    for name in (*suite.BENCHMARKS, "all"):
        assert parser.parse_args(["bench", name]).which == name


def test_cli_rejects_an_unknown_backend(capsys):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["bench", "ucbvi", "--backend", "cupy"])
    assert exc.value.code == 2
    assert "invalid choice: 'cupy'" in capsys.readouterr().err


@pytest.fixture
def fake_benchmarks(monkeypatch):
    """Two benchmark modules, one taking ``backend``/``device`` and one not, recording calls."""
    calls: dict[str, dict] = {}

    def with_backend(quick=False, backend=None, device="cpu"):
        calls["takes"] = {"quick": quick, "backend": backend, "device": device}
        return [{"x": 1}]

    def without_backend(quick=False):
        calls["fixed"] = {"quick": quick}
        return [{"x": 2}]

    for name, fn in (("takes", with_backend), ("fixed", without_backend)):
        mod = types.ModuleType(f"theorylab.bench.{name}")
        setattr(mod, f"bench_{name}", fn)
        mod.format_table = lambda rows: f"{len(rows)} row(s)"
        monkeypatch.setitem(sys.modules, f"theorylab.bench.{name}", mod)
    monkeypatch.setattr(suite, "BENCHMARKS", ("takes", "fixed"))
    import theorylab.bench.machine as machine

    monkeypatch.setattr(machine, "machine_info", lambda: {"cpu": "test"})
    return calls


def test_backend_reaches_only_the_benchmarks_that_take_it(fake_benchmarks, capsys):
    out = suite.run_benchmarks("all", quick=True, backend="numba")
    assert fake_benchmarks["takes"] == {"quick": True, "backend": "numba", "device": "cpu"}
    assert fake_benchmarks["fixed"] == {"quick": True}
    assert out["backend"] == "numba" and out["tables"] == {"takes": [{"x": 1}], "fixed": [{"x": 2}]}
    assert "fixed: times fixed implementations side by side; --backend ignored" in (
        capsys.readouterr().out
    )


def test_no_backend_leaves_each_benchmark_at_its_default(fake_benchmarks):
    suite.run_benchmarks("takes")
    assert fake_benchmarks["takes"]["backend"] is None and "fixed" not in fake_benchmarks


def test_unknown_backend_or_benchmark_fails_before_any_timing(fake_benchmarks):
    with pytest.raises(ValueError, match="unknown backend 'cupy'"):
        suite.run_benchmarks("takes", backend="cupy")
    with pytest.raises(ValueError, match="unknown benchmark 'nope'; available: takes, fixed"):
        suite.run_benchmarks("nope")
    assert fake_benchmarks == {}


def test_backends_table_keeps_only_the_asked_backend():
    assert {c[0] for c in _configs("numba")} == {"numba"}
    assert {c[2] for c in _configs("numba")} == {None, 1}  # all threads and one
    assert {c[0] for c in _configs("numpy")} == {"numpy"}
    # auto: numba on the CPU (and torch on CUDA where a device is present)
    assert all(c[0] == "numba" or c[1] == "cuda" for c in _configs("auto"))
    assert {c[0] for c in _configs(None)} >= {"numpy", "numba"}
    with pytest.raises(ValueError, match="unknown backend 'jax'; available: auto, numpy"):
        _configs("jax")


def test_ucbvi_benchmark_runs_on_the_asked_backend():
    from theorylab.bench.ucbvi import bench_ucbvi, format_table

    rows = bench_ucbvi(
        configs=[("riverswim", 6, 5)], seeds=(3,), repeats=1, seconds_per_block=0.001,
        backend="numba",
    )  # fmt: skip
    assert [r["backend"] for r in rows] == ["numba"]
    assert rows[0]["seed_episodes_per_s"] > 0
    assert " numba " in format_table(rows).splitlines()[2]
    default = bench_ucbvi(configs=[("riverswim", 6, 5)], seeds=(1,), repeats=1,
                          seconds_per_block=0.001)  # fmt: skip
    assert default[0]["backend"] == "numpy"


def test_lsvi_benchmark_runs_on_the_asked_backend():
    from theorylab.bench.lsvi import bench_lsvi, format_table

    rows = bench_lsvi(dims=(20,), episodes=(4,), seeds=(2,), targets=("statistics",),
                      memory=False, backend="numba")  # fmt: skip
    assert [r["backend"] for r in rows] == ["numba"]
    assert " numba " in format_table(rows).splitlines()[2]


def test_runs_reaches_only_benchmarks_that_take_it(fake_benchmarks, monkeypatch):
    calls = {}

    def with_runs(quick=False, runs=1):
        calls["runs"] = runs
        return [{"x": 3}]

    mod = types.ModuleType("theorylab.bench.repeats")
    mod.bench_repeats = with_runs
    mod.format_table = lambda rows: f"{len(rows)} row(s)"
    monkeypatch.setitem(sys.modules, "theorylab.bench.repeats", mod)
    monkeypatch.setattr(suite, "BENCHMARKS", ("takes", "fixed", "repeats"))
    suite.run_benchmarks("repeats", quick=True, runs=3)
    assert calls == {"runs": 3}
    # refused before any work: a benchmark without runs, all, a count that is not positive
    with pytest.raises(ValueError, match=r"--runs applies to theorylab bench llm only, got bench"):
        suite.run_benchmarks("fixed", runs=2)
    with pytest.raises(ValueError, match=r"--runs applies"):
        suite.run_benchmarks("all", runs=2)
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match=r"--runs must be a positive integer, got"):
            suite.run_benchmarks("repeats", runs=bad)
    assert fake_benchmarks == {} and calls == {"runs": 3}
