r"""Submodular MDPs (SubRL; Prajapat, Mutny, Zeilinger & Krause, ICLR 2024, arXiv 2307.13372).

A deterministic tabular MDP whose return is *not* a sum of per-step rewards but a set function
``F`` of the states the trajectory visits: ``J(pi) = E_{tau ~ pi} F(tau)``. A trajectory is the
H states ``tau = (s_0, ..., s_{H-1})`` reached by H - 1 actions from the fixed start ``s_0``
(the convention of the authors' code: ``horizon`` counts states). Two utilities:

* :class:`CoverageUtility` -- weighted coverage ``F(S) = sum_j w_j [exists s in S: s covers
  target j]``: monotone and submodular (diminishing returns); revisits add nothing.
* :class:`ModularUtility` -- ``F(tau) = sum_h u[h, s_h]`` on the *time-indexed* ground set
  ``{(h, s_h)}`` (no pair repeats), so SubRL is exactly standard finite-horizon RL with the
  stage-dependent reward ``r_h(s, a) = u[h, s]`` (:meth:`SubmodularMDP.modular_tabular`).

Transitions are deterministic (``next_state (S, A)``), so the best history-dependent policy is
the best open-loop action sequence, found by enumeration for tiny H
(:mod:`theorylab.algorithms.planning.submodular`). Families: ``coverage-bandit`` (every state
reachable from every state in one step: the submodular-bandit special case), ``coverage-grid``,
``coverage-corridor``, ``modular-grid`` (:mod:`theorylab.mdps.families.submodular`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from theorylab.errors import InvalidMDPError


@dataclass(frozen=True)
class CoverageUtility:
    """Weighted coverage: cover (S, J) bool (state s covers target j), weights (J,) >= 0."""

    cover: np.ndarray
    weights: np.ndarray

    def __post_init__(self) -> None:
        cover, w = np.asarray(self.cover), np.asarray(self.weights, dtype=np.float64)
        if cover.ndim != 2 or cover.dtype != bool:
            raise InvalidMDPError(f"coverage: cover must be an (S, J) bool array, got {cover!r}")
        if w.shape != (cover.shape[1],) or np.any(w < 0) or not np.all(np.isfinite(w)):
            raise InvalidMDPError(
                f"coverage: weights must be {cover.shape[1]} finite numbers >= 0, got {w}"
            )

    def value(self, states: Sequence[int]) -> float:
        """F of the set of visited states (order and repeats ignored)."""
        if len(states) == 0:
            return 0.0
        covered = self.cover[np.asarray(states, dtype=np.int64)].any(axis=0)  # (J,)
        return float(np.asarray(self.weights, dtype=np.float64)[covered].sum())

    def singleton(self, h: int, s: int) -> float:
        """F({s}): the state's value on its own, ignoring what was visited before."""
        return self.value([s])

    def upper(self, horizon: int) -> float:
        """An upper bound on F over trajectories: every target covered."""
        return float(np.asarray(self.weights, dtype=np.float64).sum())


@dataclass(frozen=True)
class ModularUtility:
    """Additive over the time-indexed ground set: u (H, S), F(tau) = sum_h u[h, s_h]."""

    u: np.ndarray

    def __post_init__(self) -> None:
        u = np.asarray(self.u, dtype=np.float64)
        if u.ndim != 2 or not np.all(np.isfinite(u)):
            raise InvalidMDPError(f"modular utility: u must be a finite (H, S) array, got {u!r}")

    def value(self, states: Sequence[int]) -> float:
        u = np.asarray(self.u, dtype=np.float64)
        return float(sum(u[h, s] for h, s in enumerate(states)))

    def singleton(self, h: int, s: int) -> float:
        return float(self.u[h, s])

    def upper(self, horizon: int) -> float:
        return float(np.asarray(self.u, dtype=np.float64).max(axis=1)[:horizon].sum())


@dataclass(frozen=True)
class SubmodularMDP:
    """next_state (S, A) int (deterministic moves); s0 the start; horizon H >= 2 states per
    trajectory (H - 1 actions); utility a :class:`CoverageUtility` or :class:`ModularUtility`.
    ``info`` holds what a family records (its layout, the bandit flag)."""

    next_state: np.ndarray
    s0: int
    horizon: int
    utility: CoverageUtility | ModularUtility
    name: str = "submodular-mdp"
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        nxt = np.asarray(self.next_state)
        if nxt.ndim != 2 or not np.issubdtype(nxt.dtype, np.integer):
            raise InvalidMDPError(f"{self.name}: next_state must be an (S, A) int array")
        S = nxt.shape[0]
        if np.any(nxt < 0) or np.any(nxt >= S):
            raise InvalidMDPError(f"{self.name}: next_state entries must be states 0..{S - 1}")
        if isinstance(self.s0, bool) or not (0 <= int(self.s0) < S):
            raise InvalidMDPError(f"{self.name}: s0 must be a state 0..{S - 1}, got {self.s0!r}")
        H = self.horizon
        if isinstance(H, bool) or int(H) != H or H < 2:
            raise InvalidMDPError(f"{self.name}: horizon must be an integer >= 2, got {H!r}")
        if isinstance(self.utility, CoverageUtility) and self.utility.cover.shape[0] != S:
            raise InvalidMDPError(
                f"{self.name}: cover has {self.utility.cover.shape[0]} rows, S={S}"
            )
        if isinstance(self.utility, ModularUtility) and np.shape(self.utility.u) != (H, S):
            raise InvalidMDPError(f"{self.name}: u must have shape (H, S) = {(H, S)}")

    @property
    def S(self) -> int:
        return int(np.shape(self.next_state)[0])

    @property
    def A(self) -> int:
        return int(np.shape(self.next_state)[1])

    @property
    def H(self) -> int:
        return int(self.horizon)

    def rollout(self, actions: Sequence[int]) -> list[int]:
        """The states (s_0, ..., s_{len(actions)}) an action sequence visits."""
        states = [int(self.s0)]
        for a in actions:
            states.append(int(self.next_state[states[-1], a]))
        return states

    def value(self, states: Sequence[int]) -> float:
        """F(tau) of a trajectory's states."""
        return self.utility.value(states)

    def modular_tabular(self):
        """The standard finite-horizon MDP of a modular utility: P deterministic, reward
        ``r_h(s, a) = u[h, s]`` (H, S, A), horizon H, start s0 (rewards must lie in [0, 1])."""
        from theorylab.mdps.tabular import TabularMDP

        if not isinstance(self.utility, ModularUtility):
            raise ValueError(f"{self.name}: only a modular utility is a standard MDP reward")
        S, A, H = self.S, self.A, self.H
        P = np.zeros((S, A, S))  # (S, A, S)
        P[np.arange(S)[:, None], np.arange(A)[None, :], np.asarray(self.next_state)] = 1.0
        R = np.repeat(np.asarray(self.utility.u, dtype=np.float64)[:, :, None], A, axis=2)
        mu0 = np.zeros(S)
        mu0[int(self.s0)] = 1.0
        return TabularMDP(P, R, mu0, horizon=H, name=f"{self.name} (as a standard MDP)")
