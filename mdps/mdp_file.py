"""A tabular MDP in one ``.npz`` file: ``TabularMDP.save(path)`` / ``TabularMDP.load(path)``.

The file is a numpy ``.npz`` archive (read with ``allow_pickle=False``: loading never runs code)
holding

* ``P`` (dense ``(S, A, S)`` / ``(H, S, A, S)``), or for sparse transitions ``P_data``,
  ``P_indices``, ``P_indptr``, ``P_shape`` (the CSR ``(S*A, S)`` arrays: kept sparse, never
  densified);
* ``R`` (mean rewards in [0, 1], ``(S, A)`` or ``(H, S, A)``) and ``mu0`` ``(S,)``;
* ``__theorylab_mdp__``: a JSON string with ``format`` (:data:`FORMAT`), ``version``, the
  objective (``horizon``, ``gamma``), ``reward_model``, ``name``, ``state_names``, the reward map
  back to the user's units (``reward_offset``, ``reward_scale``) and ``sha256``, the checksum of
  every array (name, dtype, shape, bytes, in name order) and of the JSON without the checksum.

:func:`read_mdp_file` checks all of that before the model is built and raises one
:class:`~theorylab.errors.InvalidMDPError` line naming the file: not an ``.npz`` archive, an
archive that is not a theorylab MDP, a missing array, a checksum that does not match (a
corrupted or hand-edited file). The model's own validation then runs as for any arrays.
The file is written atomically (:func:`theorylab.store.atomic_writer`). A subclass of
:class:`TabularMDP` (a linear MDP, ...) is saved as its tabular model (features are dropped).
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from theorylab.errors import InvalidMDPError
from theorylab.store import atomic_writer

FORMAT = "theorylab-tabular-mdp"
VERSION = 1
META_KEY = "__theorylab_mdp__"


def _digest(arrays: dict[str, np.ndarray], meta: dict) -> str:
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    body = {k: v for k, v in meta.items() if k != "sha256"}
    h.update(json.dumps(body, sort_keys=True).encode())
    return h.hexdigest()


def write_mdp_file(mdp, path: str | os.PathLike) -> Path:
    """Write ``mdp`` (a :class:`TabularMDP`) to ``path`` (``.npz``) atomically; returns the
    path."""
    path = Path(path)
    if path.suffix.lower() != ".npz":
        raise ValueError(f"an MDP file's name ends in .npz, got {str(path)!r}")
    if mdp.sparse:
        P = sp.csr_array(mdp.P)
        arrays = {
            "P_data": P.data,
            "P_indices": P.indices,
            "P_indptr": P.indptr,
            "P_shape": np.asarray(P.shape, dtype=np.int64),
        }
    else:
        arrays = {"P": np.asarray(mdp.P)}
    arrays["R"] = np.asarray(mdp.R)
    arrays["mu0"] = np.asarray(mdp.mu0)
    rmap = mdp.reward_map
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "horizon": mdp.horizon,
        "gamma": mdp.gamma,
        "reward_model": mdp.reward_model,
        "name": mdp.name,
        "state_names": mdp.state_names,
        "reward_offset": rmap.offset,
        "reward_scale": rmap.scale,
        "sparse": bool(mdp.sparse),
    }
    meta["sha256"] = _digest(arrays, meta)
    with atomic_writer(path, "wb") as fh:
        np.savez_compressed(fh, **arrays, **{META_KEY: np.asarray(json.dumps(meta))})
    return path


def read_mdp_file(path: str | os.PathLike) -> tuple[object, np.ndarray, np.ndarray, dict]:
    """``(P, R, mu0, meta)`` of an MDP file, checked (format, arrays, checksum); raises
    :class:`InvalidMDPError` naming the file and what is wrong, ``FileNotFoundError`` when
    there is no such file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no MDP file {str(path)!r}")
    what = f"{str(path)!r} is not a theorylab MDP file (written by TabularMDP.save)"
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic != b"PK\x03\x04":  # every .npz is a zip archive
        raise InvalidMDPError(f"{what}: it is not an .npz (zip) archive")
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, KeyError) as exc:
        raise InvalidMDPError(f"{what}: cannot read it as .npz ({exc})") from None
    if META_KEY not in arrays:
        raise InvalidMDPError(f"{what}: it has no {META_KEY} entry (arrays {sorted(arrays)})")
    try:
        meta = json.loads(str(arrays.pop(META_KEY)))
    except (json.JSONDecodeError, TypeError) as exc:
        raise InvalidMDPError(f"{what}: its {META_KEY} entry is not JSON ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise InvalidMDPError(
            f"{what}: format {meta.get('format') if isinstance(meta, dict) else meta!r}"
        )
    if meta.get("version") != VERSION:
        raise InvalidMDPError(
            f"{str(path)!r} is MDP file version {meta.get('version')!r}; this theorylab reads "
            f"version {VERSION}"
        )
    needed = ["R", "mu0"] + (
        ["P_data", "P_indices", "P_indptr", "P_shape"] if meta.get("sparse") else ["P"]
    )
    missing = [k for k in needed if k not in arrays]
    if missing:
        raise InvalidMDPError(f"{str(path)!r} is corrupted: arrays {missing} are missing")
    if meta.get("sha256") != _digest(arrays, meta):
        raise InvalidMDPError(
            f"{str(path)!r} is corrupted: its arrays do not match the sha256 checksum stored "
            "in it (edited or damaged after TabularMDP.save)"
        )
    if meta["sparse"]:
        shape = tuple(int(x) for x in arrays["P_shape"])
        P = sp.csr_array((arrays["P_data"], arrays["P_indices"], arrays["P_indptr"]), shape=shape)
    else:
        P = arrays["P"]
    return P, arrays["R"], arrays["mu0"], meta
