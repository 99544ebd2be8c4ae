"""Top floor: run a grid of experiments (algorithm x MDP x parameters), resumable, in parallel.

A *cell* is one call of :func:`theorylab.experiment.run`: an algorithm, an MDP spec, a number of
episodes, the seeds (all B seeds of a cell run batched in one process) and the algorithm's
parameters. Each cell has a stable id -- the first 16 hex digits of the SHA-256 of its canonical
configuration ``json.dumps(cell.config(), sort_keys=True)`` (spec strings normalised: name
lower-cased, parameters sorted; seeds as the list of indices) -- and its own
directory ``<directory>/<readable-slug>-<id>``. A cell is finished when its result was stored by
:func:`theorylab.store.save_result`, whose ``result.json`` is written last and atomically; a
restarted sweep skips finished cells and recomputes only the rest (unfinished or failed).

The id depends only on what the cell computes, not on the package versions (those are recorded
in each result's ``config["versions"]``): delete a cell's directory to force a recomputation.
It hashes spec strings as written, so ``"riverswim:S=6"`` and ``"riverswim:S=6,H=20"`` are two
cells even when 20 is the default horizon.

Executors (results always come back to this process, which is the only one writing the store,
so no shared filesystem is needed):

* ``"process"`` (default): a local :class:`concurrent.futures.ProcessPoolExecutor`. Its start
  method defaults to ``"spawn"``: forking a parent that already runs threads (BLAS pools, numba's
  threading layer, torch) can deadlock the child, and spawn behaves the same on Linux, macOS and
  Windows. ``mp_context="forkserver"`` starts faster on Linux. Workers import the algorithm by
  reference, so an agent *class* must live in an importable module (not ``__main__`` of a
  notebook); registered algorithm names always work. A script that sweeps with processes needs
  the usual ``if __name__ == "__main__":`` guard (spawn re-imports the main module).
* ``"serial"``: in this process, one cell after the other (debugging, tests).
* ``"ray"``: one ``ray.remote`` task per cell (``ray.init(address=...)`` beforehand for a
  cluster; otherwise Ray starts a local one). Needs ``pip install 'theorylab[ray]'``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import itertools
import json
import multiprocessing
import numbers
import os
import re
import traceback
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from theorylab.errors import TheorylabError
from theorylab.experiment import run
from theorylab.registry import parse_spec
from theorylab.results import Result, load_result
from theorylab.seeding import check_root_seed, seed_indices
from theorylab.store import (
    atomic_write_bytes,
    atomic_write_json,
    is_complete,
    save_result,
    to_json,
)

SWEEP_MANIFEST = "sweep.json"
ERROR_FILE = "error.txt"
CELL_KEYS = ("algorithm", "mdp", "episodes", "seeds", "seed", "params", "known_rewards", "budget")


class SweepError(TheorylabError, RuntimeError):
    """Some cells of a sweep raised. The others are stored; ``.result`` is the SweepResult
    (``.result.failures`` maps cell id -> traceback). Re-running the sweep retries only those."""

    def __init__(self, message: str, result: SweepResult) -> None:
        super().__init__(message)
        self.result = result


def _canonical_spec(spec: str) -> str:
    name, raw = parse_spec(spec)
    if not raw:
        return name
    return name + ":" + ",".join(f"{k}={raw[k]}" for k in sorted(raw))


def algorithm_label(algorithm: str | type) -> str:
    """Canonical name of an algorithm: its normalised spec, or ``module:QualName`` for a class."""
    if isinstance(algorithm, str):
        return _canonical_spec(algorithm)
    if isinstance(algorithm, type):
        return f"{algorithm.__module__}:{algorithm.__qualname__}"
    raise TypeError(f"algorithm must be a registered name or an agent class, got {algorithm!r}")


@dataclass(frozen=True)
class Cell:
    """One experiment of a sweep: ``run(algorithm, mdp, episodes, seeds, seed=seed,
    known_rewards=known_rewards, **budget, **params)``.

    episodes: the budget of online algorithms; budget: the budget keywords of any other kind
    (``{"dataset_size": 4000, "coverage": 0.3}`` for offline algorithms; see
    ``theorylab.algorithms.registry.KINDS``). A cell has one or the other.
    known_rewards: online cells only (the learner is given the mean rewards).
    """

    algorithm: str | type
    mdp: str
    episodes: int | None = None
    seeds: int | Sequence[int] = 1
    seed: int = 0
    params: Mapping[str, Any] = field(default_factory=dict)
    known_rewards: bool = True
    budget: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.mdp, str):
            raise TypeError(f"a sweep cell names its MDP by a spec string, got {self.mdp!r}")
        if (self.episodes is None) == (not self.budget):
            raise ValueError(
                "a sweep cell needs episodes= (online algorithms) or a budget= such as "
                "{'dataset_size': N} (other kinds), not both"
            )
        if self.episodes is not None:
            if (
                isinstance(self.episodes, bool)
                or not isinstance(self.episodes, numbers.Real)
                or int(self.episodes) != self.episodes
                or self.episodes < 1
            ):
                raise ValueError(f"episodes must be a positive integer, got {self.episodes!r}")
        check_root_seed(self.seed)
        if not isinstance(self.known_rewards, bool):
            raise ValueError(f"known_rewards must be true or false, got {self.known_rewards!r}")
        clash = set(self.params) & {"seed", "known_rewards", "progress", "episodes"}
        clash |= set(self.params) & set(self.budget)
        if clash:
            raise ValueError(f"params may not set run() arguments {sorted(clash)}")
        if "episodes" in self.budget:
            raise ValueError("give episodes as the cell's episodes=, not inside budget=")
        algorithm_label(self.algorithm)  # type check
        seed_indices(self.seeds)  # validation
        # private copies: a cell's id must not change when the caller's dict or list does
        object.__setattr__(self, "params", dict(self.params))
        object.__setattr__(self, "budget", dict(self.budget))
        if not isinstance(self.seeds, int):
            object.__setattr__(self, "seeds", tuple(int(i) for i in self.seeds))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Cell:
        unknown = set(d) - set(CELL_KEYS)
        if unknown:
            raise ValueError(f"unknown cell keys {sorted(unknown)}; cell keys: {CELL_KEYS}")
        missing = {"algorithm", "mdp"} - set(d)
        if missing or ("episodes" not in d and "budget" not in d):
            raise ValueError(f"cell {dict(d)!r} lacks {sorted(missing) or ['episodes or budget']}")
        return cls(**d)

    def config(self) -> dict[str, Any]:
        """The canonical, JSON-ready configuration the id is computed from (an online cell's is
        what it was before cells took other budgets, so stored sweeps keep their ids)."""
        cfg: dict[str, Any] = {
            "algorithm": algorithm_label(self.algorithm),
            "mdp": _canonical_spec(self.mdp),
        }
        if self.episodes is not None:
            cfg["episodes"] = int(self.episodes)
        else:
            cfg["budget"] = json.loads(to_json(dict(self.budget), indent=None, sort_keys=True))
        cfg.update(
            {
                "seeds": seed_indices(self.seeds),
                "seed": int(self.seed),
                "params": json.loads(to_json(dict(self.params), indent=None, sort_keys=True)),
            }
        )
        if self.episodes is not None:
            cfg["known_rewards"] = bool(self.known_rewards)
        return cfg

    @functools.cached_property
    def id(self) -> str:
        text = to_json(self.config(), indent=None, sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    @property
    def dirname(self) -> str:
        """``<slug>-<id>``: a readable prefix (algorithm, MDP, params) plus the id."""
        cfg = self.config()
        algo = cfg["algorithm"]
        if isinstance(self.algorithm, type):
            algo = self.algorithm.__qualname__
        parts = [algo, cfg["mdp"], *(f"{k}={v}" for k, v in cfg["params"].items())]
        slug = re.sub(r"[^A-Za-z0-9._=-]+", "_", "__".join(parts)).strip("_")[:80]
        return f"{slug}-{self.id}"

    def __hash__(self) -> int:
        return hash(self.id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cell) and self.id == other.id


@dataclass(frozen=True)
class Grid:
    """The product ``algorithms x mdps x params`` as a list of cells.

    params: ``{name: [values]}``; every algorithm receives every combination, so vary an
    algorithm-specific parameter in its own Grid and concatenate: ``[*grid_a, *grid_b]``.
    """

    algorithms: Sequence[str | type]
    mdps: Sequence[str]
    episodes: int | None = None
    seeds: int | Sequence[int] = 1
    params: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    seed: int = 0
    known_rewards: bool = True
    budget: Mapping[str, Any] = field(default_factory=dict)

    def cells(self) -> list[Cell]:
        for name, values in self.params.items():
            if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
                raise ValueError(f"Grid params[{name!r}] must be a list of values, got {values!r}")
        names = list(self.params)
        combos = list(itertools.product(*(list(self.params[n]) for n in names)))
        return [
            Cell(
                algorithm=algo,
                mdp=mdp,
                episodes=self.episodes,
                seeds=self.seeds,
                seed=self.seed,
                params=dict(zip(names, combo, strict=True)),
                known_rewards=self.known_rewards,
                budget=self.budget,
            )
            for algo in self.algorithms
            for mdp in self.mdps
            for combo in combos
        ]

    def __iter__(self) -> Iterator[Cell]:
        return iter(self.cells())

    def __len__(self) -> int:
        return len(self.cells())


@dataclass
class SweepResult:
    """The cells of a sweep and where their results are stored; results load on access.

    computed / skipped: ids of the cells run by this call / found finished on disk.
    failures: id -> traceback text of the cells that raised.
    """

    directory: Path
    cells: list[Cell]
    computed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)

    def _cell(self, key: Cell | str | int) -> Cell:
        if isinstance(key, Cell):
            return key
        if isinstance(key, int):
            return self.cells[key]
        for cell in self.cells:
            if cell.id == key:
                return cell
        raise KeyError(f"no cell with id {key!r} in this sweep")

    def path(self, key: Cell | str | int) -> Path:
        """Directory of a cell (given as Cell, id or position)."""
        return self.directory / self._cell(key).dirname

    def result(self, key: Cell | str | int) -> Result:
        """Load the stored result of a cell (of its kind: RegretResult, SuboptimalityResult...)."""
        return load_result(self.path(key))

    __getitem__ = result

    @property
    def completed(self) -> list[Cell]:
        """Cells whose result is stored and complete."""
        return [c for c in self.cells if is_complete(self.path(c))]

    def __len__(self) -> int:
        return len(self.cells)

    def __iter__(self) -> Iterator[tuple[Cell, Result]]:
        """``(cell, result)`` for every finished cell, loaded one at a time."""
        for cell in self.completed:
            yield cell, self.result(cell)

    def select(
        self, algorithm: str | type | None = None, mdp: str | None = None, **params: Any
    ) -> list[tuple[Cell, Result]]:
        """Finished cells matching the algorithm, MDP spec and parameter values given."""
        out = []
        for cell in self.completed:
            cfg = cell.config()
            if algorithm is not None and cfg["algorithm"] != algorithm_label(algorithm):
                continue
            if mdp is not None and cfg["mdp"] != _canonical_spec(mdp):
                continue
            if any(k not in cell.params or cell.params[k] != v for k, v in params.items()):
                continue
            out.append((cell, self.result(cell)))
        return out

    def get(
        self, algorithm: str | type | None = None, mdp: str | None = None, **params: Any
    ) -> Result:
        """The one finished result matching the criteria (LookupError if none or several)."""
        hits = self.select(algorithm, mdp, **params)
        if len(hits) != 1:
            raise LookupError(f"{len(hits)} finished cells match {algorithm=}, {mdp=}, {params}")
        return hits[0][1]


def _run_cell(cell: Cell) -> Result:
    """Worker: one cell, returned to the driver (which stores it)."""
    budget = dict(cell.budget)
    if cell.episodes is not None:
        budget.update(episodes=cell.episodes, known_rewards=cell.known_rewards)
    result = run(
        cell.algorithm, cell.mdp, seeds=cell.seeds, seed=cell.seed, **budget, **cell.params
    )
    result.config["cell_id"] = cell.id
    result.config["cell"] = cell.config()
    return result


def _manifest_entry(cell: Cell) -> dict[str, Any]:
    kind = "class" if isinstance(cell.algorithm, type) else "name"
    return {"id": cell.id, "dir": cell.dirname, "algorithm_kind": kind, **cell.config()}


def _import_class(ref: str) -> type:
    module, _, qualname = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def check_cells(cells: Sequence[Cell]) -> None:
    """Check every cell as :func:`theorylab.run` would before any work (algorithm, parameter
    names and types, budget, MDP family and keys; :func:`theorylab.experiment.check`), so that
    a mistake in one cell stops the sweep before the first cell runs, naming the cell."""
    from theorylab.experiment import check

    bad: list[str] = []
    for cell in cells:
        budget = dict(cell.budget)
        if cell.episodes is not None:
            budget.update(episodes=cell.episodes, known_rewards=cell.known_rewards)
        try:
            check(cell.algorithm, cell.mdp, **budget, **cell.params)
        except (TheorylabError, ValueError, TypeError, KeyError) as exc:
            text = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
            label = algorithm_label(cell.algorithm)
            bad.append(f"cell {label} on {cell.mdp} {dict(cell.params) or ''}: {text}".strip())
    if bad:
        shown = "; ".join(bad[:3]) + (f"; and {len(bad) - 3} more" if len(bad) > 3 else "")
        raise ValueError(f"{len(bad)} of {len(cells)} cells cannot run (none was run): {shown}")


def check_workers(max_workers: int | None) -> None:
    """``max_workers``: None (the CPU count) or an integer >= 1."""
    if max_workers is not None and (
        isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1
    ):
        raise ValueError(
            f"max_workers (the process pool's size) must be an integer >= 1, got {max_workers!r}"
        )


def _as_cells(grid: Grid | Iterable[Cell | Mapping[str, Any]]) -> list[Cell]:
    cells = [c if isinstance(c, Cell) else Cell.from_dict(c) for c in grid]
    seen: dict[str, Cell] = {}
    for c in cells:
        if c.id in seen:
            raise ValueError(f"the sweep lists the same cell twice: {c.config()}")
        seen[c.id] = c
    return cells


RAY_TASK_RETRIES = 3


def _execute(
    todo: list[Cell],
    executor: str,
    max_workers: int | None,
    mp_context: str,
    address: str | None = None,
) -> Iterator[tuple[Cell, Result | None, BaseException | None]]:
    """Yield ``(cell, result, None)`` or ``(cell, None, error)`` as cells finish."""
    if not todo:
        return
    if executor == "serial":
        for cell in todo:
            try:
                yield cell, _run_cell(cell), None
            except Exception as exc:
                yield cell, None, exc
    elif executor == "process":
        workers = max_workers or min(len(todo), os.cpu_count() or 1)
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(mp_context))
        try:
            futures = {pool.submit(_run_cell, cell): cell for cell in todo}
            for fut in as_completed(futures):
                exc = fut.exception()
                yield futures[fut], (None if exc else fut.result()), exc
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    elif executor == "ray":
        try:
            import ray
        except ImportError as exc:
            raise ImportError(
                "executor='ray' needs Ray, which is not installed: pip install 'theorylab[ray]'"
            ) from exc
        if address is not None:
            if not ray.is_initialized():
                ray.init(address=address, log_to_driver=False)
        elif not ray.is_initialized():
            ray.init(log_to_driver=False)
        # A worker process that dies (killed, out of memory, its node lost) has its task run
        # again, up to RAY_TASK_RETRIES times; an exception raised by the cell itself is not
        # retried (it would raise again) and is reported as the cell's failure.
        remote = ray.remote(max_retries=RAY_TASK_RETRIES, retry_exceptions=False)(_run_cell)
        refs = {remote.remote(cell): cell for cell in todo}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                try:
                    yield refs[ref], ray.get(ref), None
                except Exception as exc:
                    yield refs[ref], None, exc
    else:
        raise ValueError(f"executor must be 'process', 'serial' or 'ray', got {executor!r}")


def sweep(
    grid: Grid | Iterable[Cell | Mapping[str, Any]],
    *,
    directory: str | os.PathLike,
    executor: Literal["process", "serial", "ray"] = "process",
    max_workers: int | None = None,
    progress: bool = True,
    mp_context: str = "spawn",
    on_error: Literal["raise", "collect"] = "raise",
    address: str | None = None,
) -> SweepResult:
    """Run every cell of ``grid`` not already finished under ``directory``; store each result.

    grid: a :class:`Grid` or a list of cells / dicts with keys ``algorithm``, ``mdp``,
        ``episodes`` and optionally ``seeds``, ``seed``, ``params``, ``known_rewards``.
    directory: root of the store; cell results go to ``directory/<slug>-<id>/`` and the list of
        cells of this sweep to ``directory/sweep.json``.
    executor: ``"process"`` (local pool, ``max_workers`` defaults to the CPU count), ``"serial"``
        or ``"ray"`` (see the module docstring). progress: a report over cells (a bar on a
        terminal, a line per tenth otherwise: :func:`theorylab.progress.progress_bar`).
    address: ``executor="ray"`` only: the cluster to join (``"auto"``, ``"HOST:PORT"`` of a
        head started with ``ray start --head``, or ``"ray://HOST:10001"`` for Ray Client).
        None starts a local Ray instance unless this process is already connected.
    Before any cell runs, every cell is checked as :func:`theorylab.run` checks its input
    (:func:`check_cells`): one unknown algorithm, parameter or MDP key raises a ValueError naming
    the cell, and nothing runs.
    on_error: a failing cell never stops the others (they are stored, its traceback goes to
        ``<cell dir>/error.txt``); afterwards ``"raise"`` raises :class:`SweepError`, ``"collect"``
        returns the SweepResult with ``failures`` filled in.
    """
    if on_error not in ("raise", "collect"):
        raise ValueError(f"on_error must be 'raise' or 'collect', got {on_error!r}")
    if executor not in ("process", "serial", "ray"):
        raise ValueError(f"executor must be 'process', 'serial' or 'ray', got {executor!r}")
    if address is not None and executor != "ray":
        raise ValueError(f"address={address!r} is for executor='ray', not {executor!r}")
    check_workers(max_workers)
    cells = _as_cells(grid)
    check_cells(cells)  # every cell, before the first one runs
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise ValueError(f"directory={str(root)!r} is a file, expected a directory for the store")
    root.mkdir(parents=True, exist_ok=True)
    atomic_write_json(root / SWEEP_MANIFEST, {"cells": [_manifest_entry(c) for c in cells]})
    out = SweepResult(root, cells)
    # verify=True: a result.npz of the right size but the wrong bytes (a corrupted copy) is
    # recomputed here rather than found at load time
    todo = [cell for cell in cells if not is_complete(out.path(cell), verify=True)]
    todo_ids = {cell.id for cell in todo}
    out.skipped = [cell.id for cell in cells if cell.id not in todo_ids]

    from theorylab.progress import progress_bar

    bar = progress_bar(
        len(cells), f"sweep {root}", "cells", enabled=progress, initial=len(out.skipped)
    )
    finished = _execute(todo, executor, max_workers, mp_context, address)
    try:
        for cell, result, exc in finished:
            cell_dir = out.path(cell)
            if exc is not None:
                text = "".join(traceback.format_exception(exc))
                out.failures[cell.id] = text
                atomic_write_bytes(cell_dir / ERROR_FILE, text.encode("utf-8"))
            else:
                save_result(result, cell_dir)
                (cell_dir / ERROR_FILE).unlink(missing_ok=True)
                out.computed.append(cell.id)
            bar.update(1)
    finally:
        finished.close()  # shuts a pool down now, even when storing a result raised
        bar.close()
    if out.failures and on_error == "raise":
        first = next(iter(out.failures.values())).strip().splitlines()[-1]
        raise SweepError(
            f"{len(out.failures)} of {len(cells)} cells failed (the others are stored under "
            f"{root}; re-run the sweep to retry only the failed ones). First error: {first}",
            out,
        )
    return out


def open_sweep(directory: str | os.PathLike) -> SweepResult:
    """The SweepResult of the last sweep run in ``directory`` (from its ``sweep.json``).

    An algorithm given as a class is imported back from its ``module:QualName`` reference.
    """
    root = Path(directory)
    with open(root / SWEEP_MANIFEST, encoding="utf-8") as fh:
        manifest = json.load(fh)
    cells = []
    for entry in manifest["cells"]:
        fields = {k: entry[k] for k in CELL_KEYS if k in entry}
        if entry.get("algorithm_kind") == "class":
            fields["algorithm"] = _import_class(entry["algorithm"])
        cell = Cell.from_dict(fields)
        if cell.id != entry["id"]:
            raise ValueError(f"{root / SWEEP_MANIFEST}: cell {entry['id']} does not match its id")
        cells.append(cell)
    return SweepResult(root, cells)
