"""Goal chains: a parametric family of tabular goal-reaching tasks whose index is the goal's
distance (seed rows 000#7 and 001#11, Li, Zhai, Ma & Levine 2023, "Understanding the Complexity
Gains of Single-Task RL with a Curriculum").

One dynamics, N + 1 states 0..N in a line, A = 3 actions, start state 0 (``rho = delta_0``):

* ``RIGHT`` (0): s -> min(s + 1, N);
* ``STAY`` (1): s -> s;
* ``RESET`` (2): s -> 0.

Task k (k = 1..N) is the contextual MDP whose context is the goal: mean reward
``r_k(s, a) = 1[s = k]`` for every action, discount gamma. The tasks share P, rho and gamma and
differ only in the reward, as the paper's contextual MDPs do (context omega -> r_omega) [A: the
paper's experiments are robotic goal reaching; this tabular family is the catalogue's].

Closed forms (written out in the tests): the optimal policy of task k walks right to k and stays,
so ``V*_k(0) = gamma^k / (1 - gamma)``; its discounted visitation from 0 is
``d*_k(s) = (1 - gamma) gamma^s`` for s < k and ``gamma^k`` at k. The uniform policy advances
before it resets with probability 1/2 per move, so the goal's reward under it -- and the policy
gradient of the final task at the uniform start -- is of order 2^-k: from scratch, softmax policy
gradient needs a number of iterations exponential in the goal distance.

Arrays: P (S, A, S) with S = N + 1; R (S, A); rho (S,).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.sizes import check_dense_size
from theorylab.mdps.tabular import TabularMDP

RIGHT, STAY, RESET = 0, 1, 2


def goal_chain_task(N: int, goal: int, gamma: float) -> TabularMDP:
    """Task ``goal`` of the chain with N + 1 states (module docstring), discounted by gamma."""
    S = N + 1
    P = np.zeros((S, 3, S))  # (S, A, S)
    for s in range(S):
        P[s, RIGHT, min(s + 1, N)] = 1.0
        P[s, STAY, s] = 1.0
        P[s, RESET, 0] = 1.0
    R = np.zeros((S, 3))  # (S, A)
    R[goal, :] = 1.0
    return TabularMDP(P, R, gamma=gamma, name=f"goal-chain:N={N},gamma={gamma!r} (goal {goal})")


@dataclass(frozen=True)
class GoalCurriculum:
    """The tasks k = 1..N of a goal chain, easiest first; the last is the target task.

    A task sequence (what ``rollin`` takes): ``tasks`` (the TabularMDPs, one dynamics and one
    start distribution, goal distance 1..N) and ``name``.
    """

    N: int
    gamma: float
    name: str = "goal-chain"

    def __post_init__(self) -> None:
        if isinstance(self.N, bool) or not isinstance(self.N, (int, np.integer)) or self.N < 1:
            raise InvalidMDPError(
                f"goal-chain: N (the goal distance) must be an integer >= 1, got N={self.N!r}"
            )
        ok = isinstance(self.gamma, (int, float)) and not isinstance(self.gamma, bool)
        if not (ok and 0.0 < self.gamma < 1.0):
            raise InvalidMDPError(f"goal-chain: gamma must lie in (0, 1), got gamma={self.gamma!r}")
        check_dense_size("goal-chain", f"N={self.N}", self.N + 1, 3)

    @cached_property
    def tasks(self) -> tuple[TabularMDP, ...]:
        return tuple(goal_chain_task(self.N, k, self.gamma) for k in range(1, self.N + 1))

    @property
    def target(self) -> TabularMDP:
        return self.tasks[-1]

    def optimal_value(self, k: int) -> float:
        """V*_k(0) = gamma^k / (1 - gamma) (module docstring)."""
        return float(self.gamma**k / (1.0 - self.gamma))
