"""What a multi-task bandit learner returns (``kind="multitask-bandit"``); the runner
(``theorylab.runners.multitask_bandit``) scores it on the true task parameters (the learner never
grades itself)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class MultitaskBanditRun:
    """recommended ``(B, M)`` each task's recommended arm (identification; -1 for a regret
    learner); samples ``(B, M)`` pulls per task; stopped ``(B, M)`` whether the task stopped by
    its own rule (not by the budget); choices ``(B, T, M)`` the arm pulled per round and task
    (regret learners; ``(B, 0, M)`` for identification); selected ``(B,)`` the representation
    index the learner ends on (-1 when it has no class); diagnostics: per-seed arrays."""

    recommended: np.ndarray
    samples: np.ndarray
    stopped: np.ndarray
    choices: np.ndarray
    selected: np.ndarray
    diagnostics: dict[str, np.ndarray] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
