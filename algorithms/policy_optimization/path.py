"""What an exact policy-optimisation run returns: the exact metrics of every iterate.

Every algorithm of kind ``"policy-optimization"`` (:mod:`theorylab.algorithms.policy_optimization`)
runs a deterministic iteration pi_0, pi_1, ..., pi_K on a model it solves exactly and scores each
iterate without sampling; the runner (``theorylab.runners.policy_optimization``) turns a
:class:`PolicyPath` into a ``PolicyOptimizationResult``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class PolicyPath:
    """Exact metrics of the iterates k = 0..K (each ``(K+1,)``, prompts or start states averaged).

    objective: the unregularised objective (E r, or J(pi));
    regularised: the objective the algorithm maximises (E r - beta KL(pi || ref), ...);
    entropy: the policy's entropy (sequence entropy on a token tree), nats;
    target_gap: KL(pi_k || the algorithm's stated limit) (NaN where it states none);
    target_value: the regularised objective of that limit (NaN where none);
    policies: the iterates themselves (``(K+1, ...)``: conditional log-probabilities);
    config: the algorithm's settings, recorded with the result.
    """

    objective: np.ndarray
    regularised: np.ndarray
    entropy: np.ndarray
    target_gap: np.ndarray
    target_value: float
    policies: np.ndarray
    config: dict[str, Any] = field(default_factory=dict)


def check_iterations(who: str, iterations) -> int:
    """K as an int, or a one-line error naming the algorithm (``who``) and the value."""
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)):
        raise ValueError(f"{who}: iterations must be a positive integer, got {iterations!r}")
    if iterations < 1:
        raise ValueError(f"{who}: iterations must be a positive integer, got {iterations!r}")
    return int(iterations)


def check_number(who: str, name: str, value, *, positive: bool = True) -> float:
    """A finite number > 0 (``positive``) or >= 0, or a one-line error naming it."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value)
    if not ok or (value <= 0 if positive else value < 0):
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f"{who}: {name} must be a finite number {bound}, got {value!r}")
    return float(value)
