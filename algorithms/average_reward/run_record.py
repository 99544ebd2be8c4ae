"""What an average-reward learner returns (``kind="average-reward"``): the mean reward it
collected, on a grid of steps, per seed, and its own per-epoch diagnostics.

The runner (``theorylab.runners.average_reward``) turns a :class:`StepRun` into an
``AverageRewardResult`` with the exact regret ``t g* - sum_{u <= t} r(s_u, a_u)`` (the mean
rewards of the pairs played: the pseudo-regret; the realised rewards only drive learning).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


def step_grid(T: int, points: int = 200) -> np.ndarray:
    """About ``points`` log-spaced step counts in 1..T, always ending at T, ``(G,)`` int64."""
    grid = np.unique(np.geomspace(1, T, points).round().astype(np.int64))
    return grid if grid[-1] == T else np.r_[grid, T]


@dataclass(frozen=True)
class StepRun:
    """steps: ``(G,)`` step counts t; reward_sum: ``(B, G)`` sum of the mean rewards r(s_u, a_u)
    of the pairs played up to t; diagnostics: per-seed arrays ``(B, K)`` (per epoch, padded
    with NaN), e.g. UCRL2's epoch start, optimistic gain and confidence-set coverage;
    config: the algorithm's settings."""

    steps: np.ndarray
    reward_sum: np.ndarray
    diagnostics: dict[str, np.ndarray] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)


def recorded_run(
    grid: np.ndarray,
    sums: list[np.ndarray],
    recs: list[np.ndarray],
    names: tuple[str, ...],
    on_grid: dict[str, list[np.ndarray]],
    config: dict[str, Any],
) -> StepRun:
    """A :class:`StepRun` from per-seed kernel outputs: ``sums`` ``(G,)`` each, ``recs``
    ``(len(names), K)`` each (per-event rows, NaN-padded) and ``on_grid`` counters ``(G,)``."""
    rec = np.stack(recs)  # (B, len(names), K)
    diagnostics = {name: rec[:, i] for i, name in enumerate(names)}
    diagnostics.update({name: np.stack(rows) for name, rows in on_grid.items()})  # (B, G)
    return StepRun(steps=grid, reward_sum=np.stack(sums), diagnostics=diagnostics, config=config)
