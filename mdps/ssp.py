"""Stochastic shortest path (SSP) problems: an absorbing, cost-free goal, positive costs, and
improper policies (seed row 000#51; Bertsekas & Tsitsiklis, *Neuro-Dynamic Programming*, 2.1).

:class:`SSPProblem` holds ``S`` non-goal states ``0..S-1`` and the goal ``S``. From a non-goal
state ``s`` action ``a`` costs ``c(s, a) > 0`` and moves to ``s'`` with probability
``P[s, a, s']`` (``s' = S`` is the goal, absorbing and cost-free, left out of every value
vector). A stationary (randomised) policy ``pi (S, A)`` is *proper* when it reaches the goal
with probability one from every state; with positive costs an improper policy has infinite
cost from some state. The standard SSP assumptions hold for every instance built here: a proper
policy exists (:attr:`SSPProblem.proper_policy`) and every improper policy has infinite cost
from some state, so J* is finite, is the unique solution of Bellman's equation
``J(s) = min_a c(s, a) + sum_{s' < S} P[s, a, s'] J(s')``, and is attained by a deterministic
proper policy (Bertsekas & Tsitsiklis 1991, Prop. 2 / NDP Prop. 2.1).

Model checks (``properness``, ``policy_cost``) are exact: properness is graph reachability of
the goal under the policy's support; the cost of a proper policy is the solution of the linear
system ``(I - P_pi) J = c_pi``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.errors import InvalidMDPError


@dataclass(frozen=True, eq=False)
class SSPProblem:
    """P ``(S, A, S+1)`` transition probabilities from the non-goal states (column S: the goal);
    c ``(S, A)`` positive costs; proper_policy ``(S,)`` a deterministic proper policy the
    instance was built with (the start of value iteration); improper_policy ``(S,)`` a
    deterministic improper policy of the instance, or None; name: the family spec."""

    P: np.ndarray
    c: np.ndarray
    proper_policy: np.ndarray
    improper_policy: np.ndarray | None = None
    name: str = "ssp"

    def __post_init__(self) -> None:
        P, c = np.asarray(self.P, dtype=np.float64), np.asarray(self.c, dtype=np.float64)
        if P.ndim != 3 or P.shape[2] != P.shape[0] + 1:
            raise InvalidMDPError(f"ssp: P must have shape (S, A, S+1), got {P.shape}")
        if c.shape != P.shape[:2]:
            raise InvalidMDPError(f"ssp: c must have shape {P.shape[:2]}, got {c.shape}")
        if np.any(P < 0) or not np.allclose(P.sum(axis=2), 1.0, atol=1e-12):
            raise InvalidMDPError("ssp: every row P[s, a, :] must be a probability vector")
        if not (np.all(np.isfinite(c)) and np.all(c > 0)):
            raise InvalidMDPError("ssp: costs c(s, a) must be finite and > 0")
        object.__setattr__(self, "P", P)
        object.__setattr__(self, "c", c)
        if not self.is_proper(self.deterministic(self.proper_policy)):
            raise InvalidMDPError("ssp: the instance's proper_policy is not proper")

    @property
    def n_states(self) -> int:
        """S, the non-goal states (the goal is state S)."""
        return int(self.P.shape[0])

    @property
    def n_actions(self) -> int:
        return int(self.P.shape[1])

    @property
    def goal(self) -> int:
        return self.n_states

    def deterministic(self, actions) -> np.ndarray:
        """The ``(S, A)`` one-hot policy of an ``(S,)`` action array."""
        return np.eye(self.n_actions)[np.asarray(actions, dtype=np.int64)]

    def is_proper(self, policy: np.ndarray) -> bool:
        """Whether the ``(S, A)`` policy reaches the goal with probability one from every state
        (finite chain: iff the goal is reachable from every state along its support)."""
        support = np.einsum("sa,sat->st", np.asarray(policy) > 0, self.P > 0) > 0  # (S, S+1)
        reach = support[:, self.goal].copy()  # (S,) reaches the goal
        while True:
            new = reach | (support[:, : self.goal] & reach[None, :]).any(axis=1)
            if np.array_equal(new, reach):
                return bool(reach.all())
            reach = new

    def policy_cost(self, policy: np.ndarray) -> np.ndarray:
        """``J^pi (S,)``, the expected total cost to the goal of the ``(S, A)`` policy: the
        solution of ``(I - P_pi) J = c_pi``; +inf everywhere for an improper policy."""
        pi = np.asarray(policy, dtype=np.float64)
        if not self.is_proper(pi):
            return np.full(self.n_states, np.inf)
        P_pi = np.einsum("sa,sat->st", pi, self.P)[:, : self.goal]  # (S, S) substochastic
        c_pi = np.einsum("sa,sa->s", pi, self.c)  # (S,)
        return np.linalg.solve(np.eye(self.n_states) - P_pi, c_pi)

    def bellman(self, J: np.ndarray) -> np.ndarray:
        """``Q (..., S, A) = c + P[:, :, :S] J``: one Bellman backup of ``J (..., S)``."""
        return self.c + np.einsum("sat,...t->...sa", self.P[:, :, : self.goal], J)
