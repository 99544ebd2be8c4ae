"""Top floor: a sweep's results as tables -- one summary row per cell, and the tidy long table
(one row per cell x seed x episode) exported to CSV or Parquet.

Columns of the long table: ``cell`` (the cell id), ``algorithm``, ``mdp``, ``params`` (JSON,
keys sorted), one column ``param.NAME`` per parameter of any cell (empty where a cell does not
set it), ``seed`` (the seed index), ``episode`` (1..K), ``regret`` (exact, that episode),
``cumulative_regret``, ``return`` (realised) and ``value_estimate`` (NaN when the agent has none).
Parquet needs pyarrow (``pip install pyarrow``); CSV needs nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from theorylab.results.base import check_resolution
from theorylab.store import atomic_writer, write_csv
from theorylab.sweeps import SweepResult

LONG_COLUMNS = (
    "cell",
    "algorithm",
    "mdp",
    "params",
    "seed",
    "episode",
    "regret",
    "cumulative_regret",
    "return",
    "value_estimate",
)


def summary_rows(result: SweepResult, confidence: float = 0.95) -> list[dict[str, Any]]:
    """One row per cell of the sweep: its configuration, its status (``computed`` by this call,
    ``stored`` before it, ``failed`` or ``missing``) and, when finished, the final cumulative
    regret's mean with a Student t interval over seeds."""
    computed, failed = set(result.computed), set(result.failures)
    done = {c.id for c in result.completed}
    rows = []
    for cell in result.cells:
        cfg = cell.config()
        row: dict[str, Any] = {
            "cell": cell.id,
            "algorithm": cfg["algorithm"],
            "mdp": cfg["mdp"],
            "params": ",".join(f"{k}={v}" for k, v in cfg["params"].items()),
            "budget": _budget_text(cfg),
            "seeds": len(cfg["seeds"]),
        }
        if cell.id in failed:
            row["status"] = "failed"
        elif cell.id not in done:
            row["status"] = "missing"
        else:
            row["status"] = "computed" if cell.id in computed else "stored"
            res = result.result(cell)
            shown = {"algorithm", "mdp", "seeds", "K", "N", "coverage"}
            row.update({k: v for k, v in res.table_row().items() if k not in shown})
        rows.append(row)
    return rows


def _budget_text(cfg: dict[str, Any]) -> str:
    if "episodes" in cfg:
        return f"K={cfg['episodes']}"
    return ",".join(f"{k}={v}" for k, v in cfg["budget"].items())


def long_columns(result: SweepResult, resolution: str | None = "full") -> dict[str, np.ndarray]:
    """The tidy long table of every finished cell as columns (see the module docstring): the
    cell's own columns, then its result's :meth:`~theorylab.results.Result.frame_columns` at
    ``resolution`` ("full", "grid", or None: each result's ``default_resolution()``)."""
    param_names = sorted({k for c in result.completed for k in c.config()["params"]})
    parts: list[dict[str, np.ndarray]] = []
    for cell in result.completed:
        res = result.result(cell)
        frame = res.frame_columns(check_resolution(resolution or res.default_resolution()))
        cfg = cell.config()
        n = len(next(iter(frame.values())))

        def const(value: Any, n: int = n) -> np.ndarray:
            return np.full(n, value, dtype=object)

        cols = {
            "cell": const(cell.id),
            "algorithm": const(cfg["algorithm"]),
            "mdp": const(cfg["mdp"]),
            "params": const(json.dumps(cfg["params"], sort_keys=True)),
            **frame,
        }
        cols.update({f"param.{p}": const(cfg["params"].get(p)) for p in param_names})
        parts.append(cols)
    if not parts:
        return {name: np.empty(0, dtype=object) for name in LONG_COLUMNS}
    names = list(parts[0])
    for cols in parts[1:]:
        names += [c for c in cols if c not in names]
    return {
        name: np.concatenate(
            [c[name] if name in c else np.full(len(c["cell"]), None, dtype=object) for c in parts]
        )
        for name in names
    }


def check_export_path(path: str | os.PathLike) -> str:
    """The export format of ``path`` (``"csv"`` or ``"parquet"``); raises before any work when
    the suffix is neither or Parquet is asked for without pyarrow."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise ValueError(f"cannot tell the export format of {path}: use a .csv or .parquet name")
    if suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
            import pyarrow.parquet  # noqa: F401
        except ImportError:
            raise ValueError(
                f"writing {path} needs pyarrow, which is not installed: pip install pyarrow "
                "(or export to .csv)"
            ) from None
    return suffix[1:]


def thinned_cells(result: SweepResult, resolution: str | None) -> list[str]:
    """``"<cell id>: <what is left out>"`` for every finished cell whose long table at
    ``resolution`` (None: its default) is thinned."""
    out = []
    for cell in result.completed:
        res = result.result(cell)
        if (resolution or res.default_resolution()) == "grid" and res.thinning():
            out.append(f"{cell.id}: {res.thinning()}")
    return out


def export(result: SweepResult, path: str | os.PathLike, resolution: str | None = "full") -> Path:
    """Write the long table of every finished cell to ``path``: ``.csv`` or ``.parquet``
    (written atomically) at ``resolution`` (see :func:`long_columns`). Returns the path."""
    path = Path(path)
    suffix = "." + check_export_path(path)
    cols = long_columns(result, resolution)
    if suffix == ".csv":
        return write_csv(path, {k: v.tolist() for k, v in cols.items()})
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({k: _arrow_values(v) for k, v in cols.items()})
    with atomic_writer(path, "wb") as fh:
        pq.write_table(table, fh)
    return path


def _arrow_values(column: np.ndarray):
    if column.dtype != object:
        return column
    values = column.tolist()
    kinds = {type(v) for v in values if v is not None}
    if kinds <= {int, float} and kinds:
        return [None if v is None else float(v) for v in values]
    return [None if v is None else str(v) for v in values]
