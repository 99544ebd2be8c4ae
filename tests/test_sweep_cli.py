"""``theorylab sweep GRID.toml --store DIR``: grid files, resume (also over a corrupted result),
the summary table and the CSV / Parquet export; the store's errors on damaged files; progress
reports when stderr is not a terminal; ``tl.sweep`` is the function, not the module."""

from __future__ import annotations

import csv
import importlib
import io
import pkgutil
import types

import numpy as np
import pytest

import theorylab
from theorylab.cli import main
from theorylab.grid_file import GridFileError, load_grid_file
from theorylab.progress import LineProgress
from theorylab.results import load_result
from theorylab.store import CorruptResultError
from theorylab.sweeps import open_sweep

GRID = """
episodes = 30
seeds = 2
mdps = ["riverswim:S=3,H=3"]

[[grid]]
algorithms = ["greedy"]

[[grid]]
algorithms = ["ucbvi-hoeffding"]
params = { delta = [0.1, 0.05] }
"""


@pytest.fixture
def grid(tmp_path):
    path = tmp_path / "grid.toml"
    path.write_text(GRID)
    return path


def test_grid_file_cells(grid):
    cells = load_grid_file(grid)
    assert [(c.algorithm, dict(c.params)) for c in cells] == [
        ("greedy", {}),
        ("ucbvi-hoeffding", {"delta": 0.1}),
        ("ucbvi-hoeffding", {"delta": 0.05}),
    ]
    assert all(c.episodes == 30 and c.seeds == 2 for c in cells)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("episodes = 3\nmdps = ['riverswim']\n", r"missing \['algorithms'\]"),
        ("episodes = 3\nmdps = ['a']\nalgorithms = ['b']\nepsiodes = 4\n", "unknown keys"),
        ("episodes = 3\nmdps = 'riverswim'\nalgorithms = ['greedy']\n", "mdps must be a non"),
        ("episodes = 3\nmdps = ['a']\nalgorithms = ['b']\nparams = {c = 1}\n", "params.c"),
        ("episodes = 0\nmdps = ['a']\nalgorithms = ['b']\n", "positive integer"),
        ("episodes = [\n", "not valid TOML"),
    ],
)
def test_bad_grid_files_name_the_file_and_the_key(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(GridFileError, match=message) as info:
        load_grid_file(path)
    assert str(path) in str(info.value)


def test_sweep_command_runs_resumes_and_exports(grid, tmp_path, capsys):
    store = tmp_path / "store"
    out_csv = tmp_path / "long.csv"
    args = ["sweep", str(grid), "--store", str(store), "--executor", "serial"]
    assert main([*args, "--export", str(out_csv)]) == 0
    out = capsys.readouterr().out
    assert "3 computed, 0 already stored, 0 failed, of 3 cells" in out
    assert out.count("computed") >= 4  # the status column
    result = open_sweep(store)
    with open(out_csv, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 3 * 2 * 30  # cells x seeds x episodes
    first = result.result(0)
    mine = [r for r in rows if r["cell"] == result.cells[0].id and r["seed"] == "1"]
    np.testing.assert_array_equal([float(r["regret"]) for r in mine], first.regret[1])
    np.testing.assert_array_equal(
        [float(r["cumulative_regret"]) for r in mine], first.cumulative_regret[1]
    )
    assert {r["param.delta"] for r in rows} == {"", "0.1", "0.05"}
    summary = (store / "summary.csv").read_text()
    assert summary.splitlines()[0].startswith("cell,algorithm,mdp,params,budget,seeds,status")

    assert main(args) == 0
    assert "0 computed, 3 already stored" in capsys.readouterr().out


def test_parquet_export_matches_the_csv(grid, tmp_path, capsys):
    pq = pytest.importorskip("pyarrow.parquet")
    store = tmp_path / "store"
    base = ["sweep", str(grid), "--store", str(store), "--executor", "serial"]
    assert main([*base, "--export", str(tmp_path / "t.parquet")]) == 0
    assert main([*base, "--export", str(tmp_path / "t.csv")]) == 0
    table = pq.read_table(tmp_path / "t.parquet").to_pydict()
    with open(tmp_path / "t.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(table["regret"]) == len(rows)
    np.testing.assert_array_equal(table["regret"], [float(r["regret"]) for r in rows])
    assert table["cell"] == [r["cell"] for r in rows]


def test_export_to_an_unknown_format_is_refused_before_running(grid, tmp_path, capsys):
    code = main(["sweep", str(grid), "--store", str(tmp_path / "s"), "--export", "x.xlsx"])
    assert code == 2 and ".csv or .parquet" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_address_needs_the_ray_executor(grid, tmp_path, capsys):
    code = main(["sweep", str(grid), "--store", str(tmp_path), "--address", "auto"])
    assert code == 2 and "--executor ray" in capsys.readouterr().err


def test_resume_recomputes_a_corrupted_result_of_the_same_size(grid, tmp_path, capsys):
    store = tmp_path / "store"
    args = ["sweep", str(grid), "--store", str(store), "--executor", "serial"]
    assert main(args) == 0
    result = open_sweep(store)
    npz = result.path(0) / "result.npz"
    data = bytearray(npz.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, different bytes
    npz.write_bytes(bytes(data))
    capsys.readouterr()
    assert main(args) == 0
    assert "1 computed, 2 already stored" in capsys.readouterr().out
    load_result(result.path(0))  # checksum good again


def test_garbage_result_json_names_the_file(grid, tmp_path, capsys):
    store = tmp_path / "store"
    assert main(["sweep", str(grid), "--store", str(store), "--executor", "serial"]) == 0
    meta = open_sweep(store).path(1) / "result.json"
    meta.write_text("{not json")
    with pytest.raises(CorruptResultError, match="not valid JSON") as info:
        load_result(meta.parent)
    assert str(meta) in str(info.value)
    meta.write_text("[1, 2]")
    with pytest.raises(CorruptResultError, match="format"):
        load_result(meta.parent)


def test_progress_is_a_few_plain_lines_when_stderr_is_not_a_terminal(grid, tmp_path, capsys):
    # capsys's stderr is not a terminal, as in a pipe or a log file
    assert main(["sweep", str(grid), "--store", str(tmp_path / "s"), "--executor", "serial"]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err and "\x1b" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("sweep ")]
    assert lines and lines[-1].split(": ")[1].startswith("3/3 cells")


def test_line_progress_prints_at_most_a_dozen_lines():
    buf = io.StringIO()
    bar = LineProgress(100_000, "run", "ep", stream=buf, min_interval=0.0)
    for _ in range(100_000):
        bar.update(1)
    bar.close()
    lines = buf.getvalue().splitlines()
    assert 2 <= len(lines) <= 12
    assert lines[-1].startswith("run: 100k/100k ep (100%)")


def _import_every_submodule() -> None:
    for info in pkgutil.walk_packages(theorylab.__path__, "theorylab."):
        if ".bench" in info.name or info.name.endswith("torch_backend"):
            continue
        importlib.import_module(info.name)


def test_every_public_name_is_the_documented_object_after_importing_every_submodule():
    _import_every_submodule()
    for name in theorylab.__all__:
        source = importlib.import_module(theorylab._EXPORTS[name])
        value = getattr(theorylab, name)
        assert not isinstance(value, types.ModuleType), f"theorylab.{name} is a module"
        assert value is getattr(source, name), name
    assert callable(theorylab.sweep)
    from theorylab import Grid, sweep

    assert sweep is theorylab.sweeps.sweep and Grid is theorylab.sweeps.Grid


OFFLINE_GRID = """
seeds = 3
mdps = ["random:S=5,A=2,gamma=0.9,seed=4"]
algorithms = ["vi-lcb", "naive-vi"]

[budget]
dataset_size = 1500
coverage = 0.3
"""


def test_a_sweep_runs_offline_cells_from_a_budget_table(tmp_path, capsys):
    """Sweeps are not online-only: a [budget] table gives offline cells their dataset size,
    and each stored cell equals tl.run with the same budget."""
    path = tmp_path / "off.toml"
    path.write_text(OFFLINE_GRID)
    store = tmp_path / "store"
    args = ["sweep", str(path), "--store", str(store), "--executor", "serial", "--no-progress"]
    assert main([*args, "--export", str(tmp_path / "long.csv")]) == 0
    out = capsys.readouterr().out
    assert "2 computed, 0 already stored, 0 failed, of 2 cells" in out
    assert "dataset_size=1500" in out and "sub-optimality (mean)" in out
    result = open_sweep(store)
    for cell, res in result:
        again = theorylab.run(cell.algorithm, cell.mdp, seeds=3, dataset_size=1500, coverage=0.3)
        np.testing.assert_array_equal(res.suboptimality, again.suboptimality)
    with open(tmp_path / "long.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * 3 and {r["dataset_size"] for r in rows} == {"1500"}
    assert main(args) == 0
    assert "0 computed, 2 already stored" in capsys.readouterr().out


def test_online_cell_ids_do_not_change_with_the_budget_field():
    """An online cell's id hashes the same configuration as before cells took other budgets
    (stored sweeps resume instead of recomputing)."""
    from theorylab.sweeps import Cell

    cell = Cell("ucbvi-hoeffding", "riverswim:S=3,H=3", episodes=30, seeds=2)
    assert set(cell.config()) == {
        "algorithm",
        "mdp",
        "episodes",
        "seeds",
        "seed",
        "params",
        "known_rewards",
    }
    with pytest.raises(ValueError, match="episodes= .* or a budget="):
        Cell("vi-lcb", "riverswim", seeds=2)
    with pytest.raises(ValueError, match="not both"):
        Cell("vi-lcb", "riverswim", episodes=3, budget={"dataset_size": 4})
