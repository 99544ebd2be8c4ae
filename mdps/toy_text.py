"""Gymnasium toy-text models (FrozenLake, Taxi, CliffWalking) as exact :class:`TabularMDP` s.

A toy-text env exposes its model as ``env.unwrapped.P[s][a] = [(prob, next_state, reward,
terminated), ...]`` (gymnasium's toy-text documentation). :func:`from_toy_text` turns that list
model into arrays:

* **States**: the env's ``nS`` states keep their indices; one state is *added*, index ``nS``, the
  explicit terminal state. Every transition flagged ``terminated`` goes there instead of to its
  listed ``next_state`` (whose own outgoing transitions gymnasium never uses after termination);
  the terminal state is absorbing. So ``S = nS + 1``.
* **Transitions**: ``P[s, a, s'] = sum of prob`` over the listed transitions landing in ``s'``
  (duplicates, e.g. slippery FrozenLake at a border, are summed).
* **Rewards**: gymnasium's reward is a function of ``(s, a, s')``; a :class:`TabularMDP` holds mean
  rewards per ``(s, a)``, so the reward collapses to its expectation
  ``r(s, a) = sum_i prob_i * reward_i``. Expected returns, values and optimal policies are exact;
  the *realised* reward of a step no longer depends on where it landed (deterministic model: the
  mean is paid; ``reward_model="bernoulli"``: a Bernoulli draw with the rescaled mean).
* **Rescaling**: mean rewards must lie in [0, 1], so rewards are mapped affinely,

      r'(s, a) = (r(s, a) - offset) / scale,
      offset = min(0, min_i reward_i),   scale = max(0, max_i reward_i) - offset   (1 if that is 0),

  (:func:`theorylab.mdps.reward_map.reward_map_of`; rewards already in [0, 1] are left as they
  are) over every reward value the model lists (a mean is a convex combination of those, so it lands
  in [0, 1]). FrozenLake keeps its rewards (offset 0, scale 1); Taxi (-10, -1, +20) gets offset
  -10, scale 30; CliffWalking (-100, -1) offset -100, scale 100.
  and the terminal state pays ``r' = (0 - offset) / scale``, the image of the raw reward 0 (it is 0
  only when ``offset = 0``, e.g. FrozenLake). Including the raw 0 in the range is what makes the
  map exact for *every* policy: a return over T steps maps as ``sum r = scale * sum r' + T *
  offset`` whether or not the episode terminated, so

      V_raw_h = scale * V'_h + (H - h) * offset          (finite horizon H),
      V_raw   = scale * V'   + offset / (1 - gamma)       (discounted),

  (:meth:`ToyTextConversion.raw_value`, and ``mdp.user_value``: the map is recorded on the
  model as ``mdp.reward_map``), and the raw and rescaled MDPs have the same optimal policies.
  Paying the terminal state 0 instead would be wrong whenever offset < 0: in CliffWalking
  (raw rewards -1 and -100) the goal would then be the worst place to be.
* **Initial distribution**: ``mu0`` when given, else the env's ``initial_state_distrib``
  (FrozenLake, Taxi and CliffWalking have one), else state 0. The terminal state gets
  probability 0.
* **Objective**: ``horizon`` (default: the env spec's ``max_episode_steps``, e.g. 100 for
  FrozenLake 4x4, 200 for Taxi; CliffWalking has none) and/or ``gamma``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from theorylab.errors import InvalidMDPError
from theorylab.mdps.reward_map import reward_map_of
from theorylab.mdps.tabular import RewardModel, TabularMDP


@dataclass(frozen=True)
class ToyTextConversion:
    """A converted toy-text model and the affine map back to its raw rewards.

    ``mdp``: the :class:`TabularMDP` (S = nS + 1); ``terminal_state``: the added terminal state
    (``nS``); raw mean reward ``r = scale * r' + offset``.
    """

    mdp: TabularMDP
    scale: float
    offset: float
    terminal_state: int

    def raw_reward(self, r):
        """Raw mean reward(s) of rescaled mean reward(s) ``r``: ``scale * r + offset``."""
        return self.mdp.reward_map.user_reward(r)

    def raw_value(self, V, h: int = 0):
        """Raw value(s) of rescaled value(s) ``V`` at stage ``h`` (any shape).

        Finite horizon: ``scale * V + (H - h) * offset``; discounted (no horizon):
        ``scale * V + offset / (1 - gamma)``.
        """
        return self.mdp.user_value(V, h)


def _model_of(env_or_P):
    """(P dict, initial distribution or None, max_episode_steps or None, a name)."""
    if isinstance(env_or_P, Mapping):
        return env_or_P, None, None, "toy-text"
    unwrapped = getattr(env_or_P, "unwrapped", env_or_P)
    P = getattr(unwrapped, "P", None)
    if not isinstance(P, Mapping):
        raise TypeError(
            "from_toy_text needs a gymnasium toy-text env (with env.unwrapped.P) or its P dict "
            f"P[s][a] = [(prob, next_state, reward, terminated), ...]; got {type(env_or_P)}"
        )
    spec = getattr(env_or_P, "spec", None) or getattr(unwrapped, "spec", None)
    steps = getattr(spec, "max_episode_steps", None)
    name = getattr(spec, "id", None) or type(unwrapped).__name__
    mu0 = getattr(unwrapped, "initial_state_distrib", None)
    return P, mu0, steps, name


def from_toy_text(
    env_or_P,
    *,
    horizon: int | None = None,
    gamma: float | None = None,
    mu0=None,
    reward_model: RewardModel = "deterministic",
    sparse: bool = False,
    name: str | None = None,
) -> ToyTextConversion:
    """Convert a toy-text env (or its ``P[s][a]`` dict) into a :class:`TabularMDP`.

    env_or_P: a gymnasium toy-text env (``FrozenLake``, ``Taxi``, ``CliffWalking``, wrapped or
        not) or the dict ``P[s][a] = [(prob, next_state, reward, terminated), ...]`` with states
        ``0..nS-1`` and the same actions ``0..nA-1`` in every state.
    horizon, gamma: the objective; with neither, the env spec's ``max_episode_steps`` is the
        horizon (an error if there is none).
    mu0: initial distribution ``(nS,)`` when the env has no ``initial_state_distrib`` (or to
        override it); state 0 when neither is there.
    reward_model, sparse: passed on (``sparse=True`` builds CSR transitions).

    Returns a :class:`ToyTextConversion` (the MDP with ``S = nS + 1``, ``scale``, ``offset``,
    ``terminal_state = nS``); see the module docstring for the exact construction.
    """
    P_dict, env_mu0, env_steps, default_name = _model_of(env_or_P)
    if horizon is None and gamma is None:
        if env_steps is None:
            raise ValueError(
                f"{default_name} has no max_episode_steps: "
                "pass horizon=H or gamma= to from_toy_text"
            )
        horizon = int(env_steps)

    nS = len(P_dict)
    if nS < 1:
        raise InvalidMDPError("the toy-text model P is empty")
    if set(P_dict) != set(range(nS)):
        missing = sorted(set(range(nS)) - set(P_dict))[:5]
        raise InvalidMDPError(
            f"the toy-text model's states must be 0..{nS - 1}; missing {missing}"
            f" (keys {sorted(P_dict)[:5]}...)"
        )
    nA = len(P_dict[0])
    if nA < 1:
        raise InvalidMDPError("the toy-text model has no actions in state 0")
    S, terminal = nS + 1, nS

    rows: list[int] = []  # flat row s*nA + a
    cols: list[int] = []
    probs: list[float] = []
    R = np.zeros((S, nA))  # raw mean rewards (S, A); the terminal row stays 0
    lo, hi = 0.0, 0.0  # range of the listed raw rewards, with the terminal state's 0
    for s in range(nS):
        actions = P_dict[s]
        if set(actions) != set(range(nA)):
            raise InvalidMDPError(
                f"the toy-text model's state {s} has actions {sorted(actions)}, "
                f"expected 0..{nA - 1} (as in state 0)"
            )
        for a in range(nA):
            transitions = actions[a]
            if len(transitions) == 0:
                raise InvalidMDPError(f"the toy-text model lists no transition at (s={s}, a={a})")
            for i, item in enumerate(transitions):
                try:
                    prob, s_next, reward, done = item[:4]
                except (TypeError, ValueError):
                    raise InvalidMDPError(
                        f"transition {i} at (s={s}, a={a}) is {item!r}, expected "
                        "(prob, next_state, reward, terminated)"
                    ) from None
                is_index = isinstance(s_next, (int, np.integer)) and not isinstance(s_next, bool)
                if not is_index or not (0 <= s_next < nS):
                    raise InvalidMDPError(
                        f"transition {i} at (s={s}, a={a}) goes to state {s_next!r}, "
                        f"states are 0..{nS - 1}"
                    )
                if not np.isfinite(reward):
                    raise InvalidMDPError(
                        f"transition {i} at (s={s}, a={a}) has reward {reward!r}, expected finite"
                    )
                rows.append(s * nA + a)
                cols.append(terminal if bool(done) else int(s_next))
                probs.append(float(prob))
                R[s, a] += float(prob) * float(reward)
                lo, hi = min(lo, float(reward)), max(hi, float(reward))
    # The terminal state: absorbing.
    rows.extend(terminal * nA + a for a in range(nA))
    cols.extend([terminal] * nA)
    probs.extend([1.0] * nA)
    # COO -> CSR sums duplicate (row, column) entries: duplicate transitions are added up.
    flat = sp.coo_array((probs, (rows, cols)), shape=(S * nA, S)).tocsr()
    flat.sum_duplicates()

    rmap = reward_map_of(lo, hi)
    offset, scale = rmap.offset, rmap.scale
    # (S, A); the terminal row becomes (0 - offset) / scale. Rounding is monotone, so means inside
    # [lo, hi] map inside [0, 1]; a mean that rounding pushed a hair past lo or hi is caught by
    # TabularMDP's range check rather than clipped.
    R_scaled = (R - offset) / scale

    if mu0 is None:
        mu0_full = np.zeros(S)
        if env_mu0 is not None:
            env_mu0 = np.asarray(env_mu0, dtype=np.float64)
            if env_mu0.shape != (nS,):
                raise InvalidMDPError(
                    f"the env's initial_state_distrib has shape {env_mu0.shape}, expected ({nS},)"
                )
            mu0_full[:nS] = env_mu0
        else:
            mu0_full[0] = 1.0
    else:
        mu0 = np.asarray(mu0, dtype=np.float64)
        if mu0.shape not in ((nS,), (S,)):
            raise InvalidMDPError(f"mu0 must have shape ({nS},) or ({S},), got {mu0.shape}")
        mu0_full = np.zeros(S)
        mu0_full[: mu0.shape[0]] = mu0

    P_arg = flat if sparse else flat.toarray().reshape(S, nA, S)
    mdp = TabularMDP(
        P_arg,
        R_scaled,
        mu0_full,
        horizon=horizon,
        gamma=gamma,
        reward_model=reward_model,
        name=name or default_name,
        state_names=[str(s) for s in range(nS)] + ["terminal"],
        reward_map=rmap,
    )
    return ToyTextConversion(mdp=mdp, scale=float(scale), offset=float(offset), terminal_state=nS)


def from_gymnasium(env_or_P, **keywords) -> TabularMDP:
    """The :class:`TabularMDP` of any env that exposes its model as ``env.unwrapped.P[s][a] =
    [(prob, next_state, reward, terminated), ...]`` (gymnasium's toy-text envs, and any custom
    env written the same way), with the exact reward map back to the env's units recorded as
    ``mdp.reward_map`` (``mdp.user_value(V)`` gives values in the env's units). The keywords
    and the construction are :func:`from_toy_text`'s (one added terminal state, index ``nS``)."""
    return from_toy_text(env_or_P, **keywords).mdp
