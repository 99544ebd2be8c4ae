"""The result store: atomic files on disk (ground floor: imports no mdps/, algorithms/, ...).

Every file is written atomically: the bytes go to a temporary file in the *same directory*, which
is flushed, fsync'ed and then renamed over the target with :func:`os.replace` (atomic on POSIX
and on Windows within one volume). A crash or an exception at any point leaves either the old
file or the new one, never a half-written file, and the temporary file is removed on error.

A result of any kind (:mod:`theorylab.results`) is stored in one directory::

    result.npz    the result's arrays (e.g. regret, returns, value_estimates, (B, K) each)
                                                                     -- written first
    result.json   format, result_kind, config, wall_seconds, the kind's metadata, shapes,
                  sha256 of result.npz, sha256 of its own content    -- written last

``result.json`` is the completion marker: a directory is a finished result when ``result.json``
parses, matches its own checksum and ``result.npz`` has the size it records
(:func:`is_complete`); :func:`read_stored_result` (behind :func:`theorylab.results.load_result`)
also checks the SHA-256 of ``result.npz``. Every file of a result is thus checksummed: an edit of
either file, even one that keeps its size, is refused with :class:`CorruptResultError`. The
checksum of ``result.json`` (``metadata_sha256``) is that of its content without that key,
serialised canonically (``to_json(..., indent=None, sort_keys=True)``), so re-indenting the file
is not an edit but changing any value is. Overwriting a result first removes the old
``result.json``, so a crash in the middle never pairs new arrays with old metadata. This is what
makes sweeps resumable.

JSON: numpy scalars and arrays, tuples and paths are converted to plain JSON (tuples become
lists); NaN/inf are written as the ``NaN``/``Infinity`` tokens Python's json module reads back.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from theorylab.errors import TheorylabError

RESULT_JSON = "result.json"
RESULT_NPZ = "result.npz"
RESULT_FORMAT = "theorylab.Result/3"
# Format 1 (before the result family) stored regret results only; format 2 had no checksum of
# result.json itself. Both still load (without that check).
READABLE_FORMATS = (RESULT_FORMAT, "theorylab.Result/2", "theorylab.RunResult/1")
META_CHECKSUM = "metadata_sha256"

_umask: int | None = None


class CorruptResultError(TheorylabError, ValueError):
    """A stored result whose files do not read back (garbage metadata, wrong checksum)."""


def _file_mode() -> int:
    """Permissions an ordinary ``open(path, "w")`` would give (mkstemp creates files 0600)."""
    global _umask
    if _umask is None:
        try:  # Linux: read it without changing it (os.umask would race with other threads)
            with open("/proc/self/status", encoding="ascii") as fh:
                line = next(ln for ln in fh if ln.startswith("Umask:"))
            _umask = int(line.split()[1], 8)
        except (OSError, StopIteration, ValueError, IndexError):
            _umask = os.umask(0o022)
            os.umask(_umask)
    return 0o666 & ~_umask


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable (best effort; not possible on every platform)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, mode: str = "wb") -> Iterator[IO]:
    """Context manager yielding a file object whose content replaces ``path`` on success only.

    ``mode`` is ``"wb"`` or ``"w"`` (text, UTF-8). If the block raises, the temporary file is
    deleted and ``path`` is left as it was (absent or the old content).
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"mode must be 'wb' or 'w', got {mode!r}")
    target = Path(path)
    directory = target.parent
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with open(fd, mode, **({"encoding": "utf-8"} if mode == "w" else {})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _file_mode())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    _fsync_directory(directory)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; returns the path."""
    with atomic_writer(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def csv_cell(value: Any) -> str:
    """One CSV cell: floats in their shortest round-trip form, None as an empty cell."""
    if value is None:
        return ""
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, np.integer):
        return str(int(value))
    return str(value)


def write_csv(path: str | os.PathLike, columns: Mapping[str, Sequence[Any]]) -> Path:
    """Write equal-length ``columns`` (name -> values) as CSV, atomically; the one CSV writer of
    the library (results' long tables, sweep exports and summaries). Returns the path."""
    import csv

    names = list(columns)
    lengths = {name: len(columns[name]) for name in names}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"CSV columns of different lengths: {lengths}")
    with atomic_writer(path, "w") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(names)
        for row in zip(*(columns[name] for name in names), strict=True):
            writer.writerow([csv_cell(v) for v in row])
    return Path(path)


def rows_to_columns(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """Rows of dicts as columns, in the order the keys first appear; a missing key is None."""
    names: list[str] = []
    for row in rows:
        names += [k for k in row if k not in names]
    return {name: [row.get(name) for row in rows] for name in names}


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):  # np.int64, np.float32, np.bool_, ...
        return obj.item()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(
        f"cannot store {type(obj).__name__} {obj!r} as JSON; give plain numbers, strings, "
        "lists, dicts or numpy values"
    )


def to_json(obj: Any, *, indent: int | None = 2, sort_keys: bool = False) -> str:
    """``json.dumps`` that also understands numpy scalars/arrays, paths and sets."""
    return json.dumps(obj, default=_json_default, indent=indent, sort_keys=sort_keys)


def atomic_write_json(path: str | os.PathLike, obj: Any, *, indent: int | None = 2) -> Path:
    """Serialise ``obj`` (numpy values allowed) and write it to ``path`` atomically.

    The object is serialised completely before anything touches the disk, so an unserialisable
    value raises ``TypeError`` and leaves ``path`` untouched.
    """
    text = to_json(obj, indent=indent) + "\n"
    return atomic_write_bytes(path, text.encode("utf-8"))


def save_arrays(path: str | os.PathLike, **arrays: np.ndarray) -> Path:
    """Write ``arrays`` to the ``.npz`` file ``path`` atomically (uncompressed, no pickles)."""
    buf = io.BytesIO()
    np.savez(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    return atomic_write_bytes(path, buf.getvalue())


def load_arrays(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read every array of an ``.npz`` file (``allow_pickle=False``)."""
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _metadata_digest(meta: Mapping[str, Any]) -> str:
    """SHA-256 of ``meta`` without its own checksum, in canonical JSON (keys sorted, no
    indentation; parsed JSON and the values it was written from give the same text)."""
    plain = json.loads(to_json({k: v for k, v in meta.items() if k != META_CHECKSUM}, indent=None))
    return hashlib.sha256(to_json(plain, indent=None, sort_keys=True).encode("utf-8")).hexdigest()


def save_result(result, directory: str | os.PathLike) -> Path:
    """Store any :class:`~theorylab.results.Result` in ``directory``: ``result.npz`` first,
    ``result.json`` (the completion marker) last.

    ``result`` provides ``arrays()``, ``metadata()``, ``result_kind``, ``config`` and
    ``wall_seconds`` (duck-typed: this module imports no result class). Returns the directory.
    Any existing result there is replaced; until the new ``result.json`` lands the directory
    reads as incomplete.
    """
    d = Path(directory)
    arrays = {name: np.asarray(a) for name, a in result.arrays().items()}
    meta = {
        "format": RESULT_FORMAT,
        "result_kind": result.result_kind,
        **result.metadata(),
        "wall_seconds": float(result.wall_seconds),
        "shapes": {k: list(v.shape) for k, v in arrays.items()},
        "config": result.config,
    }
    to_json(meta)  # an unserialisable config raises TypeError before the disk is touched
    d.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        (d / RESULT_JSON).unlink()  # the directory reads as incomplete from here on
    save_arrays(d / RESULT_NPZ, **arrays)
    meta["npz_bytes"] = (d / RESULT_NPZ).stat().st_size
    meta["npz_sha256"] = _sha256(d / RESULT_NPZ)
    meta[META_CHECKSUM] = _metadata_digest(meta)
    atomic_write_json(d / RESULT_JSON, meta)
    return d


def read_result_metadata(directory: str | os.PathLike) -> dict[str, Any]:
    """The parsed ``result.json`` of a stored result (raises FileNotFoundError if absent,
    :class:`CorruptResultError`, a ValueError naming the file, if it is not a theorylab result
    or its content does not match its own checksum)."""
    path = Path(directory) / RESULT_JSON
    try:
        with open(path, encoding="utf-8") as fh:
            meta = json.load(fh)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptResultError(
            f"{path} is not a stored result's metadata (not valid JSON: {exc}); delete the "
            "directory to recompute it"
        ) from None
    if not isinstance(meta, dict) or meta.get("format") not in READABLE_FORMATS:
        found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise CorruptResultError(f"{path} has format {found!r}, expected {RESULT_FORMAT!r}")
    if meta["format"] == RESULT_FORMAT and meta.get(META_CHECKSUM) != _metadata_digest(meta):
        raise CorruptResultError(
            f"{path} was changed after it was stored: its content does not match its checksum "
            f"({META_CHECKSUM}); delete the directory to recompute it"
        )
    return meta


def is_complete(directory: str | os.PathLike, *, verify: bool = False) -> bool:
    """Whether ``directory`` holds a finished result: ``result.json`` parses and matches its
    checksum, and ``result.npz`` has the size it records (cheap: a resumed sweep checks every
    cell). ``verify=True`` also checks the SHA-256 of ``result.npz``, as
    :func:`read_stored_result` always does."""
    d = Path(directory)
    try:
        meta = read_result_metadata(d)
        if meta.get("npz_bytes") != (d / RESULT_NPZ).stat().st_size:
            return False
        return not verify or meta.get("npz_sha256") == _sha256(d / RESULT_NPZ)
    except (OSError, ValueError):
        return False


def read_stored_result(
    directory: str | os.PathLike,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The verified ``(metadata, arrays)`` of the result stored in ``directory``;
    :func:`theorylab.results.load_result` turns them into the result object.

    Raises FileNotFoundError when the directory holds no finished result, ValueError when the
    arrays do not match their metadata (checksum or shapes).
    """
    d = Path(directory)
    meta = read_result_metadata(d)
    if meta.get("npz_sha256") != _sha256(d / RESULT_NPZ):
        raise CorruptResultError(
            f"{d / RESULT_NPZ} was changed after it was stored: it does not match the checksum "
            f"in {d / RESULT_JSON}; delete the directory to recompute it"
        )
    arrays = load_arrays(d / RESULT_NPZ)
    for name, shape in meta["shapes"].items():
        if name not in arrays or list(arrays[name].shape) != shape:
            raise ValueError(f"{d / RESULT_NPZ}: array {name!r} missing or of the wrong shape")
    return meta, arrays
