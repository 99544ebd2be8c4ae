"""Any :class:`TabularMDP` as a ``gymnasium.Env`` (gymnasium's ``Env`` API conventions:
terminated vs truncated, seeding through ``reset``).

``TabularEnv(mdp)`` (or ``to_gymnasium(mdp)``) samples episodes from the exact model:

* ``observation_space = Discrete(S)``, ``action_space = Discrete(A)``; observations are state
  indices (``int``).
* ``reset(seed=...)`` seeds ``self.np_random`` through ``gymnasium.Env.reset`` and draws the
  initial state from ``mu0``. ``step(a)`` draws the next state from ``P_h(. | s, a)`` and the
  reward from the MDP's reward model: the mean ``r_h(s, a)`` itself (``"deterministic"``) or a
  Bernoulli draw with that mean (``"bernoulli"``). ``h`` is the number of steps taken so far
  (stage-dependent models use stage h).
* **terminated** means the MDP entered a terminal state. By default the terminal states are the
  absorbing zero-reward states (``P_h(s | s, a) = 1`` and ``r_h(s, a) = 0`` for every action and
  stage), the convention of theorylab's MDPs; once there, every future reward is 0, so stopping
  changes no return. ``terminal_states=`` names them explicitly instead (``()`` for none).
* **truncated** is the time limit: a finite horizon H is implemented as truncation after H steps
  (the MDP has no terminal state at time H, bootstrapping past it is legitimate in the
  discounted view, as gymnasium's documentation of time limits says). ``max_episode_steps``
  may shorten it (1 <= it <= H). A purely discounted MDP (no horizon) is never truncated
  unless ``max_episode_steps`` is given.
* ``info`` holds ``stage`` (steps taken before this step), ``prob`` (probability of the sampled
  transition) and ``mean_reward`` (``r_h(s, a)``).
* Stepping after the episode ended raises ``RuntimeError`` (call ``reset()``).
* Importing this module registers the gymnasium id ``theorylab/TabularMDP-v0``:
  ``gymnasium.make("theorylab/TabularMDP-v0", mdp="riverswim:S=6")`` builds the env from a
  family name string (or a :class:`TabularMDP`); gymnasium then adds its usual wrappers.

Sampling is by inverse CDF on one uniform per draw from ``self.np_random`` (transition first, then
the reward); it is reproducible for a given seed but does not replay :meth:`TabularMDP.rollout`'s
stream.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from theorylab.mdps.registry import make
from theorylab.mdps.tabular import TabularMDP

GYMNASIUM_ID = "theorylab/TabularMDP-v0"


def absorbing_zero_reward_states(mdp: TabularMDP) -> np.ndarray:
    """Mask ``(S,)`` of the states with ``P_h(s | s, a) = 1`` and ``r_h(s, a) = 0`` for every
    action and stage."""
    S, A = mdp.S, mdp.A
    rows = np.arange(S * A)
    cols = np.repeat(np.arange(S), A)  # row s*A + a -> column s
    mask = np.ones(S, dtype=bool)
    for h in range(mdp.n_stages):
        M = mdp.P_flat(h)
        stay = np.asarray(M[rows, cols], dtype=np.float64).ravel().reshape(S, A)
        mask &= np.all(stay == 1.0, axis=1)
    n_reward_stages = mdp.horizon if mdp.reward_stage_dependent else 1
    for h in range(n_reward_stages):
        mask &= np.all(mdp.reward(h) == 0.0, axis=1)
    return mask


class TabularEnv(gym.Env):
    """A ``gymnasium.Env`` that samples from a :class:`TabularMDP` (see the module docstring)."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        mdp: TabularMDP | str,
        *,
        max_episode_steps: int | None = None,
        terminal_states: Iterable[int] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if isinstance(mdp, str):
            mdp = make(mdp)
        if not isinstance(mdp, TabularMDP):
            raise TypeError(
                f"TabularEnv needs a TabularMDP or a family name string, got {type(mdp).__name__}"
            )
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}, "
                f"got render_mode={render_mode!r}"
            )
        if max_episode_steps is not None:
            if isinstance(max_episode_steps, bool) or int(max_episode_steps) != max_episode_steps:
                raise ValueError(
                    f"max_episode_steps must be a positive integer, got {max_episode_steps!r}"
                )
            max_episode_steps = int(max_episode_steps)
            upper = mdp.horizon if mdp.horizon is not None else None
            if max_episode_steps < 1 or (upper is not None and max_episode_steps > upper):
                expected = f"1..H = 1..{upper}" if upper is not None else ">= 1"
                raise ValueError(
                    f"max_episode_steps must be in {expected} for {mdp.name!r}, "
                    f"got max_episode_steps={max_episode_steps}"
                )
        self.mdp = mdp
        self.render_mode = render_mode
        self.observation_space = spaces.Discrete(mdp.S)
        self.action_space = spaces.Discrete(mdp.A)
        self.max_episode_steps = max_episode_steps if max_episode_steps is not None else mdp.horizon
        if terminal_states is None:
            self.terminal = absorbing_zero_reward_states(mdp)  # (S,) bool
        else:
            self.terminal = np.zeros(mdp.S, dtype=bool)
            for s in terminal_states:
                if (
                    isinstance(s, bool)
                    or not isinstance(s, (int, np.integer))
                    or not (0 <= s < mdp.S)
                ):
                    raise ValueError(
                        f"terminal_states must be state indices in 0..{mdp.S - 1}, got {s!r}"
                    )
                self.terminal[s] = True
        self._mu0_cdf = np.cumsum(mdp.mu0)  # (S,)
        self._state: int | None = None
        self._t = 0
        self._done = True

    # ------------------------------------------------------------------ sampling helpers
    def _draw(self, probs: np.ndarray, support: np.ndarray) -> tuple[int, float]:
        """An element of ``support (k,)`` drawn with ``probs (k,)`` (inverse CDF, one uniform),
        and its probability."""
        cdf = np.cumsum(probs)
        u = self.np_random.random()
        j = min(int(np.searchsorted(cdf, u, side="right")), len(support) - 1)
        return int(support[j]), float(probs[j])

    def _transition_row(self, s: int, a: int, h: int) -> tuple[np.ndarray, np.ndarray]:
        """Support ``(k,)`` and probabilities ``(k,)`` of ``P_h(. | s, a)``."""
        M = self.mdp.P_flat(h)
        row = s * self.mdp.A + a
        if self.mdp.sparse:
            lo, hi = M.indptr[row], M.indptr[row + 1]
            return M.indices[lo:hi], M.data[lo:hi]
        probs = M[row]
        support = np.flatnonzero(probs)
        return support, probs[support]

    # ------------------------------------------------------------------ gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        u = self.np_random.random()
        s = min(int(np.searchsorted(self._mu0_cdf, u, side="right")), self.mdp.S - 1)
        self._state, self._t, self._done = s, 0, False
        return s, {"stage": 0}

    def step(self, action) -> tuple[int, float, bool, bool, dict[str, Any]]:
        if self._done or self._state is None:
            raise RuntimeError("the episode is over (terminated or truncated): call reset()")
        if not self.action_space.contains(action):
            raise ValueError(f"action must be an integer in 0..{self.mdp.A - 1}, got {action!r}")
        a = int(action)
        s, h = self._state, self._t
        stage = h if self.mdp.horizon is not None else 0
        mean = float(self.mdp.reward(stage)[s, a])
        support, probs = self._transition_row(s, a, stage)
        s_next, prob = self._draw(probs, support)
        if self.mdp.reward_model == "bernoulli":
            reward = float(self.np_random.random() < mean)
        else:
            reward = mean
        self._state, self._t = s_next, h + 1
        terminated = bool(self.terminal[s_next])
        truncated = self.max_episode_steps is not None and self._t >= self.max_episode_steps
        self._done = terminated or truncated
        info = {"stage": h, "prob": prob, "mean_reward": mean}
        return s_next, reward, terminated, bool(truncated), info

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        names = self.mdp.state_names
        s = self._state
        label = "-" if s is None else (names[s] if names is not None else str(s))
        return f"{self.mdp.name}: t={self._t} state={label}\n"


def to_gymnasium(mdp: TabularMDP, **kwargs) -> TabularEnv:
    """``TabularEnv(mdp, **kwargs)``: the MDP as a ``gymnasium.Env`` (see :class:`TabularEnv`)."""
    return TabularEnv(mdp, **kwargs)


if GYMNASIUM_ID not in gym.registry:
    gym.register(id=GYMNASIUM_ID, entry_point=TabularEnv)
