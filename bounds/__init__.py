"""Bounds as symbolic objects: ``Bound``, the safe expression parser and the bound registry.

``bounds/`` is pure mathematics (sympy, numpy): it imports nothing from the rest of the project
except the ground-floor ``theorylab.registry``, ``theorylab.errors`` and ``theorylab.table`` (the
generated table of docs/bounds.md).

>>> from theorylab.bounds import get_bound
>>> b = get_bound("azar2017-thm1")
>>> b.exponent("K")
1/2
"""

from __future__ import annotations

from .bound import (
    KINDS,
    PROVENANCE,
    QUANTITIES,
    Bound,
    BoundEvaluationError,
    ExponentError,
    Source,
)
from .parse import BoundParseError, parse_bound_expression
from .registry import BOUNDS, LOWER_BOUNDS, all_bounds, get_bound, list_bounds
from .vocabulary import VOCABULARY

__all__ = [
    "BOUNDS",
    "KINDS",
    "LOWER_BOUNDS",
    "PROVENANCE",
    "QUANTITIES",
    "VOCABULARY",
    "Bound",
    "BoundEvaluationError",
    "BoundParseError",
    "ExponentError",
    "Source",
    "all_bounds",
    "get_bound",
    "list_bounds",
    "parse_bound_expression",
]
