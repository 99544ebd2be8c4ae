"""Top floor: sweep grids written as TOML files (``theorylab sweep GRID.toml --store DIR``).

A grid file lists algorithms x MDP specs x parameter values x seeds::

    # grid.toml
    episodes = 2000          # K, every cell
    seeds = 8                # B (or a list of seed indices)
    seed = 0                 # root seed (optional, default 0)
    algorithms = ["ucbvi-bernstein", "ucbvi-hoeffding"]
    mdps = ["riverswim:S=4,H=4", "chain:S=5,H=5"]

    [params]                 # optional: every combination, for every algorithm
    delta = [0.1, 0.05]

Offline algorithms (and other kinds) take their budget from a ``[budget]`` table instead of
``episodes`` (the keywords of ``theorylab.run`` for that kind)::

    seeds = 16
    algorithms = ["vi-lcb", "naive-vi"]
    mdps = ["random:S=8,A=3,gamma=0.9,seed=31"]
    [budget]
    dataset_size = 4000
    coverage = 0.3

A file may instead (or as well) hold several ``[[grid]]`` tables, each a grid of its own with
the same keys; a key missing from a table is taken from the top level. Use this to vary a
parameter that only one algorithm takes::

    episodes = 3000
    seeds = 8
    mdps = ["linear-simplex:S=5,A=3,d=3,H=5"]

    [[grid]]
    algorithms = ["lsvi-ucb"]
    params = { c = [0.03, 0.1, 1.0] }

    [[grid]]
    algorithms = ["lsvi"]

The cells of all the grids are concatenated (a cell listed twice is an error, as in
:func:`theorylab.sweeps.sweep`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from theorylab.sweeps import Cell, Grid, check_cells

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

GRID_KEYS = (
    "algorithms",
    "mdps",
    "episodes",
    "seeds",
    "seed",
    "params",
    "known_rewards",
    "budget",
)
INHERITED = GRID_KEYS


class GridFileError(ValueError):
    """A grid file that cannot be read as a sweep (the message names the file and the key)."""


def _grid(where: str, table: Mapping[str, Any]) -> Grid:
    unknown = sorted(set(table) - set(GRID_KEYS) - {"grid"})
    if unknown:
        raise GridFileError(f"{where}: unknown keys {unknown}; a grid has keys {list(GRID_KEYS)}")
    missing = [k for k in ("algorithms", "mdps") if k not in table]
    if "episodes" not in table and "budget" not in table:
        missing.append("episodes (online) or [budget] (other kinds)")
    if missing:
        raise GridFileError(
            f"{where}: missing {missing} (every grid needs algorithms, mdps and a budget: "
            "episodes, or a [budget] table such as dataset_size for offline algorithms)"
        )
    budget = table.get("budget", {})
    if not isinstance(budget, dict):
        raise GridFileError(f"{where}: budget must be a table, got {budget!r}")
    for key in ("algorithms", "mdps"):
        value = table[key]
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise GridFileError(
                f"{where}: {key} must be a non-empty list of strings, got {value!r}"
            )
    params = table.get("params", {})
    if not isinstance(params, dict):
        raise GridFileError(f"{where}: params must be a table of lists, got {params!r}")
    for name, values in params.items():
        if not isinstance(values, list) or not values:
            raise GridFileError(
                f"{where}: params.{name} must be a non-empty list of values, got {values!r}"
            )
    try:
        grid = Grid(
            algorithms=list(table["algorithms"]),
            mdps=list(table["mdps"]),
            episodes=table.get("episodes"),
            budget=budget,
            seeds=table.get("seeds", 1),
            params=params,
            seed=table.get("seed", 0),
            known_rewards=table.get("known_rewards", True),
        )
        check_cells(grid.cells())  # every cell's fields, names, keys and types, before any run
    except (TypeError, ValueError) as exc:
        raise GridFileError(f"{where}: {exc}") from exc
    return grid


def grids_from_mapping(data: Mapping[str, Any], where: str = "grid") -> list[Grid]:
    """The grids a parsed grid file describes (see the module docstring)."""
    tables = data.get("grid")
    if tables is None:
        return [_grid(where, data)]
    if not isinstance(tables, list) or not tables:
        raise GridFileError(f"{where}: [[grid]] must be a list of tables")
    defaults = {k: data[k] for k in INHERITED if k in data}
    extra = sorted(set(data) - set(GRID_KEYS) - {"grid"})
    if extra:
        raise GridFileError(f"{where}: unknown keys {extra}; a grid has keys {list(GRID_KEYS)}")
    return [
        _grid(f"{where} [[grid]] #{i + 1}", {**defaults, **table}) for i, table in enumerate(tables)
    ]


def load_grid_file(path: str | os.PathLike) -> list[Cell]:
    """Every cell of the grid file ``path`` (TOML), in file order."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise FileNotFoundError(f"grid file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise GridFileError(f"{path} is not valid TOML: {exc}") from exc
    cells: list[Cell] = []
    for grid in grids_from_mapping(data, str(path)):
        cells.extend(grid.cells())
    ids = [c.id for c in cells]
    if len(set(ids)) != len(ids):
        raise GridFileError(f"{path}: the grids list the same cell more than once")
    return cells
