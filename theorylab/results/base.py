"""The one result family: what every run of every kind of algorithm returns (ground floor).

A :class:`Result` carries the run's ``config`` (algorithm, problem, parameters, seeds, root seed,
package versions) and ``wall_seconds``, and offers the same verbs whatever the kind:

* ``summary()`` -- plain numbers for a table (means with confidence intervals over seeds);
* ``to_frame(resolution="full")`` -- a tidy long table, one row per seed x step (a pandas
  DataFrame when pandas is installed, else a dict of equal-length numpy columns);
  ``to_csv(path)``, ``to_parquet(path)``. ``resolution="grid"`` keeps only the steps summaries
  carry (a long online run: a log-spaced grid of episodes, :meth:`Result.thinning`);
* ``plot(path=None, ax=None)`` -- its figure, drawn by :mod:`theorylab.plotting`;
* ``save(directory)`` / ``Result.load(directory)`` -- atomic storage through
  :mod:`theorylab.store` (arrays in ``result.npz``, metadata and a checksum in ``result.json``).

A kind of result is a subclass registered with :func:`register_result` that says which arrays it
holds (``arrays()``), which extra metadata (``metadata()``), how to rebuild itself
(``from_stored``), its summary, its long-table columns (``frame_columns()``) and its figure. The
store needs no import of the experiment layer to load any of them: ``result.json`` names the
result kind. How a new kind plugs in: ``docs/architecture.md``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

RESULT_TYPES: dict[str, type[Result]] = {}
RESOLUTIONS = ("full", "grid")
"""Resolutions of a long table: every step, or the steps that summaries carry."""


def check_resolution(resolution: str) -> str:
    if resolution not in RESOLUTIONS:
        raise ValueError(f"resolution must be 'full' or 'grid', got {resolution!r}")
    return resolution


def register_result(name: str):
    """Class decorator: register a :class:`Result` subclass under ``name`` (stored in
    ``result.json`` as ``result_kind``)."""

    def deco(cls: type[Result]) -> type[Result]:
        if name in RESULT_TYPES and RESULT_TYPES[name] is not cls:
            raise ValueError(f"result kind {name!r} is registered twice")
        cls.result_kind = name
        RESULT_TYPES[name] = cls
        return cls

    return deco


class Result:
    """Base of every result. Subclasses are dataclasses with ``config`` and ``wall_seconds``."""

    result_kind: ClassVar[str] = ""
    config: dict[str, Any]
    wall_seconds: float

    # ---------------------------------------------------------------- what a kind defines
    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays stored in ``result.npz`` (leading seed axis)."""
        raise NotImplementedError

    def metadata(self) -> dict[str, Any]:
        """JSON-able scalars stored beside ``config`` in ``result.json``."""
        return {}

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> Result:
        raise NotImplementedError

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        raise NotImplementedError

    def table_row(self) -> dict[str, str]:
        """One line of ``theorylab run``'s table (formatted strings)."""
        return {
            k: f"{v:.4g}" if isinstance(v, float) else str(v) for k, v in self.summary().items()
        }

    def json_summary(self) -> dict[str, Any]:
        """The JSON object ``theorylab run --json`` writes (summary, config, per-seed values)."""
        return {**self.summary(), "config": self.config}

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        """The tidy long table as equal-length columns (one row per seed x step; ``"grid"``:
        only the steps that summaries carry, the same rows for kinds with few steps)."""
        raise NotImplementedError

    def thinning(self) -> str | None:
        """What ``resolution="grid"`` leaves out, in words, or None when it keeps every row."""
        return None

    def default_resolution(self) -> str:
        """The resolution ``theorylab run --csv`` uses unless told: "full", or "grid" for a run
        too long to write every step (it then prints :meth:`thinning`)."""
        return "full"

    def plot(self, path=None, *, ax=None, **kwargs):
        """Draw this result (and write it to ``path`` when given); returns the Axes."""
        raise NotImplementedError

    # ---------------------------------------------------------------- shared verbs
    @property
    def seeds(self) -> list[int]:
        """The seed indices of the run (rows of every array)."""
        return list(self.config.get("seeds", []))

    def long_index(self, B: int, steps: np.ndarray, step_name: str) -> dict[str, np.ndarray]:
        """The two index columns of a long table over a ``(B, len(steps))`` grid: the seed index
        (from ``config["seeds"]``, else 0..B-1) repeated per step, and the steps tiled per seed."""
        seeds = np.asarray(self.seeds if len(self.seeds) == B else range(B), dtype=np.int64)
        steps = np.asarray(steps, dtype=np.int64)
        return {"seed": np.repeat(seeds, len(steps)), step_name: np.tile(steps, B)}

    def to_frame(self, resolution: str = "full"):
        """The long table: a ``pandas.DataFrame`` when pandas is installed, else a dict of
        numpy columns of equal length. resolution: "full" (default: one row per seed x step,
        every step) or "grid" (the steps summaries carry; see :meth:`thinning`)."""
        cols = self.frame_columns(check_resolution(resolution))
        try:
            import pandas as pd
        except ImportError:
            return cols
        return pd.DataFrame(cols)

    def to_csv(self, path: str | os.PathLike, resolution: str = "full") -> Path:
        """Write the long table as CSV (atomically; no pandas needed)."""
        from theorylab.store import write_csv

        cols = self.frame_columns(check_resolution(resolution))
        return write_csv(path, {k: np.asarray(v).tolist() for k, v in cols.items()})

    def to_parquet(self, path: str | os.PathLike, resolution: str = "full") -> Path:
        """Write the long table as Parquet (needs pandas with pyarrow or fastparquet)."""
        frame = self.to_frame(resolution)
        if isinstance(frame, dict):
            raise ImportError(
                "writing Parquet needs pandas (and pyarrow): pip install pandas pyarrow"
            )
        from theorylab.store import atomic_writer

        with atomic_writer(path, "wb") as fh:
            frame.to_parquet(fh, index=False)
        return Path(path)

    def save(self, directory: str | os.PathLike) -> Path:
        """Store this result in ``directory`` (:func:`theorylab.store.save_result`)."""
        from theorylab.store import save_result

        return save_result(self, directory)

    @classmethod
    def load(cls, directory: str | os.PathLike) -> Result:
        """Load any stored result (the kind is read from ``result.json``); called on a subclass,
        also checks that the stored result is of that kind."""
        res = load_result(directory)
        if cls is not Result and not isinstance(res, cls):
            raise ValueError(
                f"{directory} holds a {type(res).__name__} ({res.result_kind!r}), "
                f"not a {cls.__name__}"
            )
        return res

    def _finish_plot(self, ax, path):
        if path is not None:
            from theorylab.plotting import save_figure

            save_figure(ax, path)
        return ax


def load_result(directory: str | os.PathLike) -> Result:
    """Load the result stored in ``directory`` by :meth:`Result.save`, whatever its kind.

    Raises FileNotFoundError when the directory holds no finished result, ValueError when the
    arrays do not match their metadata (checksum or shapes) or the result kind is unknown.
    """
    from theorylab.store import read_stored_result

    meta, arrays = read_stored_result(directory)
    kind = meta.get("result_kind", "regret")  # format 1 stored only regret results
    cls = RESULT_TYPES.get(kind)
    if cls is None:
        raise ValueError(
            f"{Path(directory)}: unknown result kind {kind!r}; known: {', '.join(RESULT_TYPES)}"
        )
    return cls.from_stored(meta, arrays)
