"""A step-level reasoning MDP where a learned process reward model (PRM) can be exploited by
repeating correct steps (seed row 002-004#G6; :mod:`theorylab.algorithms.policy_optimization.
reward_refinement`).

A solution needs H correct steps. The state is the stage k = 0..H (correct steps so far); the
actions are ``ADVANCE`` (a new correct step, k -> k + 1, only while k < H), ``REPEAT`` (a correct
but unnecessary step: k stays) and ``ANSWER`` (ends the episode; correct iff k = H, success reward
``success``). An episode that has not answered after T steps ends without success. The PRM gives
every step a reward in (0, 1) that depends on the step index, the stage and the action:
``prm[t, k, a]`` (T, H + 1, 3), the "stage-dependent (H, S, A)" rewards of a finite-horizon MDP.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ADVANCE, REPEAT, ANSWER = 0, 1, 2


@dataclass(frozen=True)
class ReasoningSteps:
    """prm: (T, H + 1, 3) per-step PRM rewards; success: the outcome reward of a correct answer."""

    prm: np.ndarray
    success: float = 1.0
    name: str = "reasoning-steps"

    def __post_init__(self) -> None:
        p = np.asarray(self.prm, dtype=np.float64)
        if p.ndim != 3 or p.shape[2] != 3 or p.shape[1] < 2 or p.shape[0] < 1:
            raise ValueError(f"prm must be a (T >= 1, H + 1 >= 2, 3) table, got shape {p.shape}")
        if not np.all(np.isfinite(p)):
            raise ValueError("prm must be finite")
        p.setflags(write=False)
        object.__setattr__(self, "prm", p)

    @property
    def T(self) -> int:
        return int(self.prm.shape[0])

    @property
    def H(self) -> int:
        return int(self.prm.shape[1] - 1)

    def truncated(self, T: int) -> ReasoningSteps:
        """The same task with a step budget T (<= self.T)."""
        if not 1 <= T <= self.T:
            raise ValueError(f"T must be in 1..{self.T}, got {T}")
        return ReasoningSteps(self.prm[:T], self.success, f"{self.name} (T={T})")
