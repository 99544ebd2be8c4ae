"""Reproducible per-seed randomness from ``numpy.random.SeedSequence``.

Seed index ``i`` of a run with root ``seed`` owns the streams
``SeedSequence(seed, spawn_key=(i, j))``:
``j = 0`` drives the environment, ``j = 1`` the agent. They do not depend on how many other seeds
run beside it, so seed ``i`` gives the same result alone or inside a batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

ENV_STREAM, AGENT_STREAM = 0, 1


def check_root_seed(seed) -> int:
    """The root seed of a run as an int; refuses anything but an integer >= 0 (what
    ``numpy.random.SeedSequence`` takes), naming it."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed (the root seed) must be an integer >= 0, got {seed!r}")
    return int(seed)


def seed_indices(seeds: int | Sequence[int]) -> list[int]:
    """``seeds=B`` means indices ``0..B-1``; a sequence gives the indices explicitly."""
    if isinstance(seeds, (bool, np.bool_, str, bytes, float)):
        raise ValueError(
            f"seeds must be a number of seeds B >= 1 or a list of seed indices, got {seeds!r}"
        )
    if isinstance(seeds, (int, np.integer)):
        if seeds < 1:
            raise ValueError(f"seeds must be >= 1, got {seeds}")
        return list(range(int(seeds)))
    if any(isinstance(i, (bool, str, float)) for i in seeds):
        raise ValueError(f"seed indices must be integers >= 0, got {list(seeds)!r}")
    idx = [int(i) for i in seeds]
    if not idx:
        raise ValueError("seeds must name at least one seed index")
    if min(idx) < 0:
        raise ValueError(f"seed indices must be >= 0, got {min(idx)}")
    if len(set(idx)) != len(idx):
        raise ValueError(f"seed indices repeat: {idx}")
    return idx


def generators(seed: int, indices: Sequence[int], stream: int) -> list[np.random.Generator]:
    """One independent ``Generator`` per seed index for the given stream."""
    return [
        np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i, stream))) for i in indices
    ]
