"""The store (atomic writes, RunResult round trip) and resumable sweeps."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from sweep_test_agents import RandomPolicyAgent  # tests/ is on sys.path (conftest.py)

import theorylab.store as store
import theorylab.sweeps as sweep_mod
from theorylab.experiment import RunResult, run
from theorylab.results import load_result
from theorylab.store import (
    CorruptResultError,
    atomic_write_bytes,
    atomic_write_json,
    atomic_writer,
    is_complete,
    load_arrays,
    save_arrays,
    save_result,
)
from theorylab.sweeps import Cell, Grid, SweepError, open_sweep, sweep

MDP = "riverswim:S=4,H=5"


def _leftovers(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# ---------------------------------------------------------------- atomic writes


def test_atomic_write_bytes_creates_and_replaces(tmp_path):
    path = tmp_path / "sub" / "file.bin"
    atomic_write_bytes(path, b"first")
    atomic_write_bytes(path, b"second")
    assert path.read_bytes() == b"second"
    assert _leftovers(path.parent) == []
    reference = tmp_path / "plain.bin"
    reference.write_bytes(b"")
    # the permissions of an ordinary open(), not mkstemp's 0600
    assert path.stat().st_mode & 0o777 == reference.stat().st_mode & 0o777


def test_exception_mid_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "file.txt"
    atomic_write_bytes(path, b"old content")
    with pytest.raises(RuntimeError, match="disk on fire"), atomic_writer(path) as fh:
        fh.write(b"half of the new")
        raise RuntimeError("disk on fire")
    assert path.read_bytes() == b"old content"
    assert _leftovers(tmp_path) == []


def test_exception_mid_write_leaves_no_file_when_there_was_none(tmp_path):
    path = tmp_path / "new.txt"
    with pytest.raises(KeyboardInterrupt), atomic_writer(path, "w") as fh:
        fh.write("partial")
        raise KeyboardInterrupt
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []


def test_failing_replace_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "data.json"
    atomic_write_json(path, {"v": 1})

    def broken_replace(src, dst):
        raise OSError("simulated crash at rename")

    monkeypatch.setattr(store.os, "replace", broken_replace)
    with pytest.raises(OSError, match="rename"):
        atomic_write_json(path, {"v": 2})
    with pytest.raises(OSError, match="rename"):
        save_arrays(tmp_path / "a.npz", x=np.ones(3))
    monkeypatch.undo()
    assert json.loads(path.read_text()) == {"v": 1}
    assert not (tmp_path / "a.npz").exists()
    assert _leftovers(tmp_path) == []


def test_atomic_write_json_handles_numpy_and_refuses_unknown_types(tmp_path):
    path = tmp_path / "x.json"
    obj = {
        "i": np.int64(3),
        "f": np.float32(0.5),
        "b": np.bool_(True),
        "a": np.arange(3),
        "m": np.eye(2),
        "t": (1, 2),
        "p": tmp_path,
    }
    atomic_write_json(path, obj)
    back = json.loads(path.read_text())
    assert back == {
        "i": 3,
        "f": 0.5,
        "b": True,
        "a": [0, 1, 2],
        "m": [[1.0, 0.0], [0.0, 1.0]],
        "t": [1, 2],
        "p": str(tmp_path),
    }
    with pytest.raises(TypeError, match="cannot store object"):
        atomic_write_json(path, {"bad": object()})
    assert json.loads(path.read_text())["i"] == 3  # untouched


def test_save_arrays_round_trip(tmp_path):
    arrays = {"a": np.arange(6.0).reshape(2, 3), "b": np.array([1, 2], dtype=np.int32)}
    save_arrays(tmp_path / "x.npz", **arrays)
    back = load_arrays(tmp_path / "x.npz")
    assert set(back) == {"a", "b"}
    for k, v in arrays.items():
        np.testing.assert_array_equal(back[k], v)
        assert back[k].dtype == v.dtype


# ---------------------------------------------------------------- RunResult store


@pytest.fixture(scope="module")
def small_result() -> RunResult:
    return run(RandomPolicyAgent, MDP, episodes=12, seeds=3, seed=4)


def _assert_same_result(a: RunResult, b: RunResult) -> None:
    np.testing.assert_array_equal(a.regret, b.regret)
    np.testing.assert_array_equal(a.returns, b.returns)
    np.testing.assert_array_equal(a.value_estimates, b.value_estimates)  # NaN == NaN here
    assert a.optimal_value == b.optimal_value


def test_result_round_trip(tmp_path, small_result):
    d = tmp_path / "res"
    small_result.save(d)
    assert sorted(p.name for p in d.iterdir()) == ["result.json", "result.npz"]
    assert is_complete(d)
    back = RunResult.load(d)
    _assert_same_result(small_result, back)
    assert back.wall_seconds == small_result.wall_seconds
    assert back.config["algorithm"] == "RandomPolicyAgent"
    assert back.config["seeds"] == [0, 1, 2]
    assert back.config["versions"]["numpy"] == np.__version__
    assert load_result(d).regret.shape == (3, 12)


def test_crash_between_arrays_and_metadata_leaves_an_incomplete_result(
    tmp_path, small_result, monkeypatch
):
    d = tmp_path / "res"
    save_result(small_result, d)

    def crash(*args, **kwargs):
        raise KeyboardInterrupt  # killed after result.npz, before result.json

    monkeypatch.setattr(store, "atomic_write_json", crash)
    with pytest.raises(KeyboardInterrupt):
        save_result(small_result, d)
    monkeypatch.undo()
    # the old result.json was removed first: new arrays are never paired with old metadata
    assert not is_complete(d)
    with pytest.raises(FileNotFoundError):
        load_result(d)
    assert _leftovers(d) == []


def test_tampered_arrays_are_detected(tmp_path, small_result):
    d = tmp_path / "res"
    save_result(small_result, d)
    save_arrays(d / "result.npz", regret=np.zeros((3, 12)))
    assert not is_complete(d)  # another size
    save_result(small_result, d)
    data = bytearray((d / "result.npz").read_bytes())
    data[-30] ^= 0xFF  # same size, one byte flipped
    (d / "result.npz").write_bytes(bytes(data))
    assert is_complete(d) and not is_complete(d, verify=True)
    with pytest.raises(ValueError, match="checksum"):
        load_result(d)


def test_same_size_edit_of_result_json_is_detected(tmp_path, small_result):
    """Every stored file is checksummed: an edit of result.json that keeps its size (a digit of
    the optimal value, of a config entry) is refused, not loaded as if intact."""
    d = tmp_path / "res"
    save_result(small_result, d)
    original = (d / "result.json").read_text()
    meta = json.loads(original)
    assert meta["format"] == "theorylab.Result/3" and len(meta["metadata_sha256"]) == 64
    reindented = json.dumps(meta, indent=4)  # a layout change is not an edit of the content
    (d / "result.json").write_text(reindented)
    assert is_complete(d, verify=True)
    load_result(d)
    value = repr(float(meta["optimal_value"]))
    last = "1" if value[-1] != "1" else "2"
    edited = original.replace(value, value[:-1] + last, 1)  # one digit, the same size
    assert len(edited) == len(original) and edited != original
    (d / "result.json").write_text(edited)
    assert not is_complete(d) and not is_complete(d, verify=True)
    with pytest.raises(CorruptResultError, match=r"result\.json was changed after it was stored"):
        load_result(d)
    dropped = {k: v for k, v in meta.items() if k != "metadata_sha256"}  # the checksum removed
    (d / "result.json").write_text(json.dumps(dropped))
    with pytest.raises(CorruptResultError, match="metadata_sha256"):
        load_result(d)


def test_format_2_results_without_a_metadata_checksum_still_load(tmp_path, small_result):
    d = tmp_path / "res"
    save_result(small_result, d)
    meta = json.loads((d / "result.json").read_text())
    del meta["metadata_sha256"]
    meta["format"] = "theorylab.Result/2"
    (d / "result.json").write_text(json.dumps(meta))
    assert load_result(d).optimal_value == small_result.optimal_value


def test_unserialisable_config_fails_before_touching_the_disk(tmp_path, small_result):
    d = tmp_path / "res"
    save_result(small_result, d)
    bad = RunResult(
        small_result.regret,
        small_result.returns,
        small_result.value_estimates,
        small_result.optimal_value,
        1.0,
        {**small_result.config, "params": {"f": lambda x: x}},
    )
    with pytest.raises(TypeError, match="function"):
        save_result(bad, d)
    assert is_complete(d)  # the earlier result is intact


def test_summary_has_final_regret_ci(small_result):
    s = small_result.summary()
    final = small_result.cumulative_regret[:, -1]
    assert s["final_regret_mean"] == pytest.approx(final.mean())
    assert s["final_regret_ci_low"] <= s["final_regret_mean"] <= s["final_regret_ci_high"]
    assert s["seeds"] == 3 and s["episodes"] == 12
    json.dumps(s)  # plain numbers only


# ---------------------------------------------------------------- cells and grids


def test_cell_id_is_stable_and_canonical():
    a = Cell("UCBVI:delta=0.1,c=2", "riverswim:S=6", 10, 4, params={"x": 1, "y": 2.5})
    b = Cell("ucbvi: c=2, delta=0.1", "RiverSwim:S=6", 10, [0, 1, 2, 3], params={"y": 2.5, "x": 1})
    assert a.id == b.id and a == b and len(a.id) == 16
    # pinned: changing the canonical form would orphan every stored sweep
    canonical = {
        "algorithm": "ucbvi:c=2,delta=0.1",
        "mdp": "riverswim:S=6",
        "episodes": 10,
        "seeds": [0, 1, 2, 3],
        "seed": 0,
        "known_rewards": True,
        "params": {"x": 1, "y": 2.5},
    }
    assert a.config() == canonical
    assert a.id == "fbf6d2df3e2a9906"  # sha256(json.dumps(canonical, sort_keys=True))[:16]
    assert a.id != Cell("ucbvi:delta=0.1,c=2", "riverswim:S=6", 10, 4, params={"x": 2}).id
    assert a.id != Cell("ucbvi:delta=0.1,c=2", "riverswim:S=6", 10, 4, seed=1).id
    assert a.dirname.endswith(a.id) and ":" not in a.dirname and "," not in a.dirname
    c = Cell(RandomPolicyAgent, MDP, 5)
    assert c.config()["algorithm"] == "sweep_test_agents:RandomPolicyAgent"


def test_cell_validation():
    with pytest.raises(ValueError, match="unknown cell keys"):
        Cell.from_dict({"algorithm": "a", "mdp": "m", "episodes": 3, "epsiodes": 3})
    with pytest.raises(ValueError, match="lacks"):
        Cell.from_dict({"algorithm": "a", "mdp": "m"})
    with pytest.raises(ValueError, match="episodes"):
        Cell("a", "m", 0)
    with pytest.raises(ValueError, match="seed"):
        Cell("a", "m", 3, params={"seed": 1})
    with pytest.raises(TypeError, match="algorithm"):
        Cell(3, "m", 3)


def test_grid_is_the_product():
    g = Grid(["a", "b"], ["m1", "m2", "m3"], episodes=5, seeds=2, params={"p": [1, 2]})
    cells = g.cells()
    assert len(g) == len(cells) == 12
    assert len({c.id for c in cells}) == 12
    assert {c.params["p"] for c in cells} == {1, 2}
    with pytest.raises(ValueError, match="list of values"):
        Grid(["a"], ["m"], episodes=5, params={"p": "abc"}).cells()


# ---------------------------------------------------------------- sweeps


def _mtimes(result) -> dict[str, int]:
    return {c.id: (result.path(c) / "result.json").stat().st_mtime_ns for c in result.completed}


def _count(path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_failed_sweep_resumes_without_recomputing_finished_cells(tmp_path):
    flag, counter = tmp_path / "fail.flag", tmp_path / "counter.txt"
    flag.touch()
    grid = Grid(
        [RandomPolicyAgent],
        ["riverswim:S=3,H=4", MDP],
        episodes=6,
        seeds=2,
        params={"fail_flag": [str(flag), ""], "counter": [str(counter)]},
    )
    store_dir = tmp_path / "store"
    with pytest.raises(SweepError, match="2 of 4 cells failed") as info:
        sweep(grid, directory=store_dir, executor="serial", progress=False)
    first = info.value.result
    assert len(first.computed) == 2 and len(first.failures) == 2
    assert "simulated failure" in next(iter(first.failures.values()))
    failed = [c for c in first.cells if c.id in first.failures]
    for c in failed:
        assert not is_complete(first.path(c))
        assert "simulated failure" in (first.path(c) / "error.txt").read_text()
    before = _mtimes(first)
    assert _count(counter) == 4

    flag.unlink()
    second = sweep(grid, directory=store_dir, executor="serial", progress=False)
    assert sorted(second.computed) == sorted(first.failures)
    assert sorted(second.skipped) == sorted(first.computed)
    assert _count(counter) == 6  # only the two failed cells were built again
    after = _mtimes(second)
    assert all(after[i] == t for i, t in before.items())  # finished cells untouched
    assert len(second.completed) == 4
    assert not any((second.path(c) / "error.txt").exists() for c in second.cells)

    third = sweep(grid, directory=store_dir, executor="serial", progress=False)
    assert third.computed == [] and len(third.skipped) == 4 and _count(counter) == 6


def test_sweep_killed_after_one_cell_resumes(tmp_path, monkeypatch):
    grid = Grid(
        [RandomPolicyAgent], [MDP], episodes=4, seeds=2, params={"fail_flag": ["a", "b", "c"]}
    )
    real_save, saved = sweep_mod.save_result, []

    def save_then_die(result, directory):
        if saved:
            raise KeyboardInterrupt  # killed while storing the second cell
        saved.append(directory)
        return real_save(result, directory)

    monkeypatch.setattr(sweep_mod, "save_result", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        sweep(grid, directory=tmp_path, executor="serial", progress=False)
    monkeypatch.undo()
    resumed = sweep(grid, directory=tmp_path, executor="serial", progress=False)
    assert len(resumed.skipped) == 1 and len(resumed.computed) == 2
    assert resumed.path(resumed.skipped[0]) == saved[0]


def test_sweep_results_match_direct_runs_and_lookups_work(tmp_path):
    cells = [
        {"algorithm": RandomPolicyAgent, "mdp": MDP, "episodes": 5, "seeds": 3, "seed": 1},
        {"algorithm": RandomPolicyAgent, "mdp": "riverswim:S=3,H=4", "episodes": 5, "seeds": [4]},
    ]
    out = sweep(cells, directory=tmp_path, executor="serial", progress=False)
    direct = run(RandomPolicyAgent, MDP, episodes=5, seeds=3, seed=1)
    _assert_same_result(out.get(mdp=MDP), direct)
    got = out.result(0)
    assert got.config["cell_id"] == out.cells[0].id
    assert got.config["cell"]["episodes"] == 5
    assert out[out.cells[1].id].regret.shape == (1, 5)
    assert len(list(out)) == 2
    assert len(out.select(algorithm=RandomPolicyAgent)) == 2
    with pytest.raises(LookupError):
        out.get(algorithm=RandomPolicyAgent)
    reopened = open_sweep(tmp_path)
    assert [c.id for c in reopened.cells] == [c.id for c in out.cells]
    _assert_same_result(reopened.get(mdp=MDP), direct)
    with pytest.raises(ValueError, match="twice"):
        sweep([cells[0], cells[0]], directory=tmp_path, executor="serial", progress=False)


def test_process_pool_sweep_matches_serial(tmp_path):
    grid = Grid([RandomPolicyAgent], [MDP, "riverswim:S=3,H=4"], episodes=5, seeds=2)
    pooled = sweep(
        grid, directory=tmp_path / "p", executor="process", max_workers=2, progress=False
    )
    serial = sweep(grid, directory=tmp_path / "s", executor="serial", progress=False)
    assert sorted(pooled.computed) == sorted(serial.computed)
    for cell in grid:
        _assert_same_result(pooled.result(cell), serial.result(cell))
    again = sweep(grid, directory=tmp_path / "p", executor="process", progress=False)
    assert again.computed == [] and len(again.skipped) == 2


def test_process_pool_reports_failures(tmp_path):
    flag = tmp_path / "flag"
    flag.touch()
    grid = Grid([RandomPolicyAgent], [MDP], episodes=3, params={"fail_flag": [str(flag)]})
    out = sweep(
        grid,
        directory=tmp_path / "s",
        executor="process",
        max_workers=1,
        progress=False,
        on_error="collect",
    )
    assert out.computed == [] and "simulated failure" in next(iter(out.failures.values()))


def test_ray_executor_without_ray_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    grid = Grid([RandomPolicyAgent], [MDP], episodes=3)
    with pytest.raises(ImportError, match=r"theorylab\[ray\]"):
        sweep(grid, directory=tmp_path, executor="ray", progress=False)


def test_unknown_executor(tmp_path):
    with pytest.raises(ValueError, match="executor"):
        sweep([], directory=tmp_path, executor="threads", progress=False)


def test_one_csv_writer_formats_cells_once(tmp_path):
    import csv

    import numpy as np

    from theorylab.store import rows_to_columns, write_csv

    cols = rows_to_columns([{"a": 0.1, "b": np.int64(3)}, {"a": None, "c": np.True_}])
    assert cols == {"a": [0.1, None], "b": [np.int64(3), None], "c": [None, np.True_]}
    path = write_csv(tmp_path / "x.csv", cols)
    assert list(csv.reader(path.open())) == [["a", "b", "c"], ["0.1", "3", ""], ["", "", "True"]]
    with pytest.raises(ValueError, match="different lengths"):
        write_csv(tmp_path / "y.csv", {"a": [1, 2], "b": [1]})
    assert not (tmp_path / "y.csv").exists()


def test_sweep_export_thins_long_cells_only_when_asked_or_by_default_and_says_so(tmp_path):
    from theorylab.sweep_tables import long_columns, thinned_cells
    from theorylab.sweeps import SweepResult

    B, K = 2, 12_000
    regret = np.full((B, K), 0.5)
    long = RunResult(regret, regret, regret, 1.0, 1.0, {"seeds": [0, 1]})
    short_cell = Cell(algorithm="psrl", mdp="riverswim:S=3,H=3", episodes=50, seeds=B)
    long_cell = Cell(algorithm="psrl", mdp="riverswim:S=3,H=3", episodes=K, seeds=B)
    result = SweepResult(tmp_path, [short_cell, long_cell])
    save_result(long, result.path(long_cell))
    save_result(
        RunResult(regret[:, :50], regret[:, :50], regret[:, :50], 1.0, 1.0, {}),
        result.path(short_cell),
    )
    n = len(long.episode_grid())
    assert len(long_columns(result)["episode"]) == B * 50 + B * K  # the library default: full
    assert len(long_columns(result, None)["episode"]) == B * 50 + B * n  # each cell's default
    assert thinned_cells(result, None) == [
        f"{long_cell.id}: {n} log-spaced episodes of 12,000 per seed"
    ]
    assert thinned_cells(result, "full") == []
