"""Checkpoints of the Python episode loop (``loop="python"`` of :mod:`theorylab.runners.online`).

Every ``segment`` episodes the loop writes, atomically, into the checkpoint directory:

* ``segments/NNNNNN.npz``: that segment's curves ``regret``, ``returns``, ``estimates``, each
  (B, n) (written first);
* ``state.pkl``: a pickle of the episode index, the agent object (its numpy arrays and numpy
  ``Generator`` objects pickle exactly), the environment's random streams (one ``Generator``
  per seed) and, for the ``score_policy="next"`` control, the policy already asked for
  (written second, so a state never names episodes whose curves are not on disk);
* ``run.json`` (once, before the first episode): the run's fingerprint: algorithm, parameters,
  problem, seed indices, root seed, K, the segment, the loop, the backend, ``known_rewards``,
  ``score_policy`` and ``checkpoint_format``.

A run given a directory that holds a different fingerprint is refused in one line naming the
keys that differ; one given the same fingerprint loads the state and the finished segments and
continues from the episode after the last state. The loop's numbers do not depend on where it
was cut: the agent and the streams restored are the ones saved, so a resumed run equals the
uninterrupted one bit for bit (``tests/test_resume_python_loop.py``). An interruption loses at
most the segment in flight (a segment file written after the last state, by a run stopped
between the two writes, is recomputed and rewritten).

``state.pkl`` is a pickle: loading it runs code named in it, so resume only from directories
this program wrote. An agent that cannot be pickled (an open file, a lambda) is refused before
any episode (:func:`check_picklable`).
"""

from __future__ import annotations

import hashlib
import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from theorylab.store import atomic_write_bytes, atomic_write_json, load_arrays, save_arrays

DEFAULT_SEGMENT = 10_000
"""Episodes between two checkpoints of the Python loop (capped at K). Smaller than the compiled
loop's 100,000: a Python-loop episode took 1.5 to 29 ms with 8 seeds (LSVI-UCB and PSRL at
S = 5, UCBVI-BF on RiverSwim S = 100, H = 50; docs/long-runs.md), so 10,000 episodes are 15 s
to 5 min of work, the most an interruption loses, while a checkpoint (one pickle of the agent,
one segment of curves) took 10 to 22 ms."""
CHECKPOINT_FORMAT = 1
CURVES = ("regret", "returns", "estimates")


def segment_length(segment: int | None, episodes: int) -> int:
    """Episodes per checkpoint: ``segment`` (default :data:`DEFAULT_SEGMENT`), at most K."""
    return min(DEFAULT_SEGMENT if segment is None else int(segment), episodes)


def check_picklable(name: str, agent: Any, checkpoint: str) -> None:
    """Refuse, in one line and before any episode, an agent whose state cannot be stored."""
    try:
        pickle.dumps(agent, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # PicklingError, TypeError, AttributeError: all mean "cannot"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(
            f"checkpoint={checkpoint!r} (--checkpoint): the state of {name}'s agent "
            f"({type(agent).__name__}) cannot be pickled ({first}), so its run cannot be "
            "resumed; expected no --checkpoint for it"
        ) from None


def _fingerprint(value: Any) -> str:
    """A JSON stand-in for a parameter JSON cannot hold: an array by its shape, dtype and a
    hash of its bytes (its ``str`` elides the middle of a large array), else its ``str``."""
    if isinstance(value, np.ndarray):
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()[:16]
        return f"array{value.shape} {value.dtype} sha256:{digest}"
    return str(value)


class PythonCheckpoint:
    """The checkpoint directory of one Python-loop run (see the module docstring).

    ident: the run's fingerprint (JSON-able); ``segment`` and the format are added here.
    """

    def __init__(self, directory: str | Path, ident: dict[str, Any], segment: int) -> None:
        self.dir = Path(directory)
        self.segment = int(segment)
        ident = json.loads(json.dumps(ident, default=_fingerprint))
        ident.update(segment=self.segment, checkpoint_format=CHECKPOINT_FORMAT)
        self.ident = ident
        self.parts = 0  # segment files in order that the state covers
        self.resumable = False  # set by open(): the directory holds a state to resume

    def open(self) -> None:
        """Check the stored fingerprint (a different run: ValueError) or write it."""
        meta = self.dir / "run.json"
        if not meta.exists():
            (self.dir / "segments").mkdir(parents=True, exist_ok=True)
            atomic_write_json(meta, self.ident)
            return
        stored = json.loads(meta.read_text())
        if stored != self.ident:
            keys = sorted(k for k in set(stored) | set(self.ident)
                          if stored.get(k) != self.ident.get(k))  # fmt: skip
            diff = "; ".join(
                f"{k}: {stored.get(k)!r} there, {self.ident.get(k)!r} here" for k in keys
            )
            raise ValueError(
                f"checkpoint {self.dir} (--checkpoint) holds a different run ({diff}); "
                "expected the same run's directory: use another directory or remove it"
            )
        self.resumable = (self.dir / "state.pkl").exists()

    def load(self, curves: dict[str, np.ndarray], episodes: int) -> dict[str, Any]:
        """The stored state (``done``, ``agent``, ``env_rngs``, ``pending``); fills
        ``curves[name][:, :done]`` (each (B, K)) from the finished segments."""
        state = pickle.loads((self.dir / "state.pkl").read_bytes())
        done = int(state["done"])
        if done > episodes:
            raise ValueError(
                f"checkpoint {self.dir}: it holds {done} episodes, more than the {episodes} "
                "asked for"
            )
        have = 0
        while have < done:  # a segment written after the last state is left to be redone
            path = self.dir / "segments" / f"{self.parts:06d}.npz"
            if not path.exists():
                break
            part = load_arrays(path)
            n = part["regret"].shape[1]
            if have + n > done:
                break
            for name in CURVES:
                curves[name][:, have : have + n] = part[name]
            have += n
            self.parts += 1
        if have != done:
            raise ValueError(
                f"checkpoint {self.dir}: the segments hold {have} episodes, the state {done}; "
                "remove the directory and rerun"
            )
        return state

    def write(
        self, curves: dict[str, np.ndarray], start: int, done: int, agent, env_rngs, pending
    ) -> None:
        """Store episodes ``start:done`` of ``curves`` then the state after episode ``done``."""
        seg = {name: curves[name][:, start:done] for name in CURVES}
        save_arrays(self.dir / "segments" / f"{self.parts:06d}.npz", **seg)
        state = {"done": done, "agent": agent, "env_rngs": list(env_rngs), "pending": pending}
        blob = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
        atomic_write_bytes(self.dir / "state.pkl", blob)
        self.parts += 1
