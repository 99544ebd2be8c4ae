"""What a GP-bandit learner returns (``kind="gp-bandit"``): the grid points it chose, round by
round, per seed; the runner (``theorylab.runners.gp_bandit``) scores them on the true functions
(the learner never grades itself)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class GridBanditRun:
    """choices: ``(B, T)`` grid indices, ``-1`` where nothing was chosen (the learner stopped);
    declared: ``(B,)`` the round (1-based) at which the learner declared the problem infeasible,
    0 where it never did; diagnostics: per-seed ``(B, T)`` or per-round ``(T,)`` arrays; config:
    the learner's settings."""

    choices: np.ndarray
    declared: np.ndarray
    diagnostics: dict[str, np.ndarray] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
