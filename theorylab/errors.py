"""Exception types shared by every part of theorylab (ground floor: imports nothing else)."""

from __future__ import annotations


class TheorylabError(Exception):
    """Base class of every error theorylab raises on purpose."""


class InvalidMDPError(TheorylabError, ValueError):
    """An MDP's arrays are not a valid model.

    The message names the offending index and value, e.g.
    ``P row (s=3, a=1) sums to 0.97, expected 1 (tolerance 1e-09)``.
    """


class InvalidPolicyError(TheorylabError, ValueError):
    """A policy array does not fit the MDP it is evaluated on (shape, action range, simplex)."""


class UnknownNameError(TheorylabError, KeyError):
    """A registry lookup (MDP family, algorithm, bound, validation) found no such name."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""
