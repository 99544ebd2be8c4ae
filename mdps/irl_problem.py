"""An inverse-RL problem: a finite-horizon MDP without reward, a deterministic expert, and the
(hidden) reward the expert is optimal for (seed row 001#2, Metelli, Lazzati & Restelli 2023;
the algorithm and the feasible set live in ``theorylab.algorithms.feasible_rewards``).

:class:`IRLProblem` holds time-inhomogeneous transitions ``p (H, S, A, S)``, the expert's
actions ``expert (H, S)`` and the true reward ``reward (H, S, A)`` in ``[-1, 1]``. A learner gets
the expert and a generative model (:meth:`IRLProblem.sample`: n next states per triple
``(h, s, a)``); the reward is the ground truth a claim scores the learner against.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class IRLProblem:
    """p ``(H, S, A, S)`` transitions per stage; expert ``(H, S)`` the expert's action per stage
    and state; reward ``(H, S, A)`` the true reward (the expert is optimal for it)."""

    p: np.ndarray
    expert: np.ndarray
    reward: np.ndarray
    name: str = "irl"

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(H, S, A)``."""
        H, S, A, _ = self.p.shape
        return H, S, A

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``(H, S, A, S)`` next-state counts of n generative-model draws per triple (h, s, a)."""
        return rng.multinomial(n, self.p)
