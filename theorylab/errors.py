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


class TrainingConfigError(TheorylabError, ValueError):
    """A training option (precision, schedule, accumulation, checkpoint, LoRA) that cannot be used
    (``theorylab train``; raised by ``algorithms/deep/lm_training_state.py`` and ``lora.py``)."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during an online run, after some episodes finished.

    A ``KeyboardInterrupt`` (code that does not look for it stops as before) that carries
    ``result``: the run's result truncated to the ``completed`` episodes every seed finished,
    with ``config["interrupted_after"] = completed``; ``theorylab run --save`` stores it.
    """

    def __init__(self, result, completed: int) -> None:
        super().__init__(f"interrupted after {completed} complete episodes")
        self.result = result
        self.completed = completed
