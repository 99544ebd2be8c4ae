"""The budget and level arguments that several runners take, checked in one place.

``tl.run`` hands each runner its budget (``episodes``, ``iterations``) and, for the solver kinds, a
ladder of levels (``alpha`` for ``kind="dual"``, ``epsilon`` for ``kind="constrained"``); the
checks and their error messages (naming the argument and the value) live here, as does the
ladder of dataset sizes of the data-driven kinds (offline, ope, imitation).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def increasing_levels(value, name: str) -> list[float]:
    """A number or a non-empty, strictly increasing list of numbers -> the list of floats.

    name: the argument's name in the error messages (``"alpha"``, ``"epsilon"``).
    """
    levels = list(value) if isinstance(value, Sequence) and not isinstance(value, str) else [value]
    if not levels:
        raise ValueError(f"{name} must be a positive number or a non-empty list of them")
    out = [float(v) for v in levels]
    if sorted(out) != out or len(set(out)) != len(out):
        raise ValueError(f"{name} must be increasing, got {out}")
    return out


def positive_integer(value, name: str) -> int:
    """A positive integer (an int, or a float with an integer value; not a bool) -> the int."""
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def dataset_sizes(dataset_size) -> list[int]:
    """A positive integer or a non-empty, strictly increasing list of them -> the list of ints
    (the ``dataset_size`` ladder of an N-sweep)."""
    sizes = list(dataset_size) if isinstance(dataset_size, Sequence) else [dataset_size]
    if not sizes:
        raise ValueError("dataset_size must be a positive integer or a non-empty list of them")
    for n in sizes:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"dataset_size must be positive integers, got {n!r}")
    if sorted(sizes) != sizes or len(set(sizes)) != len(sizes):
        raise ValueError(f"dataset_size must be increasing, got {sizes}")
    return [int(n) for n in sizes]
