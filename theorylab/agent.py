"""The episodic agent protocol (ground floor: no import of mdps/ or algorithms/).

An online algorithm is a class registered in ``theorylab.algorithms.ALGORITHMS`` with the
constructor ``Agent(env: EnvSpec, n_seeds: int, rngs: list[Generator], **params)`` and two methods:

* ``policy() -> (B, H, S) int`` (or ``(B, H, S, A)`` float): the policy every seed plays in the
  next episode, as an array the caller cannot corrupt: a read-only copy
  (:func:`read_only_copy`), so writing into it raises and a later update of the agent does not
  change a policy already handed out;
* ``update(traj)``: learn from one episode of every seed; ``traj`` is a
  :class:`theorylab.mdps.Trajectories` with ``(B, H)`` arrays.

Optionally ``value_estimate() -> (B,)``: the algorithm's own estimate of ``V_1(mu0)`` for the
policy it will play next (an optimistic upper bound for UCB-type algorithms, a pessimistic lower
bound for LCB-type ones). ``theorylab.run`` records it every episode so optimism can be checked.

State arrays carry a leading seed axis ``B``. All randomness an agent uses for seed ``i`` comes
from ``rngs[i]``, drawn in a fixed pattern per episode, so seed ``i`` behaves identically alone or
inside a batch.

The agent sees only an :class:`EnvSpec`: sizes, horizon, initial distribution and (when the
setting assumes known rewards, as Azar et al. 2017 do) the mean rewards -- never the transitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class EnvSpec:
    """What a learner is told about the MDP.

    S, A, H: sizes and horizon. reward: mean rewards ``(S, A)`` or ``(H, S, A)`` when rewards are
    known to the learner, else None (the learner estimates them from observed rewards).
    mu0: initial distribution ``(S,)`` (used only to report ``value_estimate``).
    reward_model: "deterministic" or "bernoulli" -- the form of the reward noise (not its means).
    features: the known feature map ``phi (S, A, d)`` of a linear MDP (None for other MDPs; a
    low-rank MDP hides its features, so it has none here).
    """

    S: int
    A: int
    H: int
    reward: np.ndarray | None
    mu0: np.ndarray
    stage_dependent: bool = False
    reward_model: str = "deterministic"
    features: np.ndarray | None = None

    def reward_at(self, h: int) -> np.ndarray:
        """Known mean rewards of stage h, ``(S, A)`` (raises if rewards are unknown)."""
        if self.reward is None:
            raise ValueError("rewards are unknown to this learner")
        return self.reward[h] if self.reward.ndim == 3 else self.reward


@runtime_checkable
class EpisodicAgent(Protocol):
    n_seeds: int

    def policy(self) -> np.ndarray: ...

    def update(self, traj) -> None: ...


def read_only_copy(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` that raises on writes: what ``policy()`` hands out (module docstring).

    A copy, not a view: agents update their policy tables in place (UCBVI's sparse plan stage
    rewrites only the rows that changed), and a caller keeping episode k's policy must not see
    episode k + 1's. O(size) per call, negligible beside planning.
    """
    out = np.array(a, copy=True)
    out.flags.writeable = False
    return out


def env_spec(mdp, *, known_rewards: bool = True) -> EnvSpec:
    """The learner's view of ``mdp``: sizes, horizon, mu0 and (optionally) the mean rewards.

    ``mdp`` is any model with the TabularMDP interface (duck-typed: this module imports no MDP).
    """
    if mdp.horizon is None:
        raise ValueError(f"{mdp!r} has no finite horizon; online episodic runs need one")
    return EnvSpec(
        S=mdp.S,
        A=mdp.A,
        H=mdp.horizon,
        reward=np.asarray(mdp.R) if known_rewards else None,
        mu0=np.asarray(mdp.mu0),
        stage_dependent=mdp.stage_dependent,
        reward_model=mdp.reward_model,
        features=getattr(mdp, "features", None),
    )
