"""The exact affine map between a user's reward scale and the [0, 1] rewards theorylab computes on.

Every model, regret and bound in theorylab assumes mean rewards in [0, 1] (the bound cards state
their theorems under that convention). A model whose rewards live on another finite scale (raw
gymnasium rewards, pymdptoolbox's ``forest`` with ``r1 = 4``) is computed on its image under

    r'(s, a) = (r(s, a) - offset) / scale,         r = scale * r' + offset,

with (the rule of :func:`reward_map_of`, used by the toy-text importer and by
``TabularMDP.from_arrays(..., reward_range="auto")``)

    rewards already in [0, 1]:  offset = 0, scale = 1 (nothing changes);
    otherwise:                  offset = min(0, min r),  scale = max(0, max r) - offset.

Including the raw reward 0 in the range is what the toy-text importer needs (its added terminal
state pays the image of 0). The map is affine with ``scale > 0``, so the mapped model has the
same optimal policies, and for *every* policy a return over T steps maps as
``sum r = scale * sum r' + T * offset``. Hence (:meth:`RewardMap.user_value`)

    V_user_h = scale * V'_h + (H - h) * offset          (finite horizon H, undiscounted),
    V_user   = scale * V'   + offset / (1 - gamma)       (discounted),

and a difference of two values (a regret, a sub-optimality, a certified error) maps as
``scale * difference`` (:meth:`RewardMap.user_gap`). A regret bound evaluated on the mapped
problem is a bound on the mapped regret; times ``scale`` it bounds the user's regret.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.errors import InvalidMDPError


@dataclass(frozen=True)
class RewardMap:
    """``r_user = scale * r + offset`` for the [0, 1] reward ``r`` the model holds."""

    offset: float = 0.0
    scale: float = 1.0

    def __post_init__(self) -> None:
        if not (np.isfinite(self.offset) and np.isfinite(self.scale) and self.scale > 0):
            raise InvalidMDPError(
                f"a reward map needs a finite offset and a finite scale > 0, got offset="
                f"{self.offset!r}, scale={self.scale!r}"
            )

    @property
    def identity(self) -> bool:
        return self.offset == 0.0 and self.scale == 1.0

    def to_unit(self, r):
        """User reward(s) -> the [0, 1] reward(s) the model holds: ``(r - offset) / scale``."""
        return (np.asarray(r, dtype=np.float64) - self.offset) / self.scale

    def user_reward(self, r):
        """Model reward(s) -> user reward(s): ``scale * r + offset``."""
        return self.scale * np.asarray(r, dtype=np.float64) + self.offset

    def user_value(self, V, *, horizon: int | None, gamma: float | None, h: int = 0):
        """Model value(s) ``V`` at stage ``h`` -> user value(s) (any shape).

        Finite horizon (``horizon`` given; undiscounted, as every finite-horizon planner here):
        ``scale * V + (H - h) * offset``; discounted: ``scale * V + offset / (1 - gamma)``.
        """
        V = np.asarray(V, dtype=np.float64)
        if horizon is not None:
            if not (0 <= h <= horizon):
                raise ValueError(f"h must lie in 0..H = 0..{horizon}, got h={h}")
            return self.scale * V + (horizon - h) * self.offset
        if gamma is None:
            raise ValueError("a value needs a horizon or a discount to be mapped")
        return self.scale * V + self.offset / (1.0 - gamma)

    def model_value(self, V_user, *, horizon: int | None, gamma: float | None, h: int = 0):
        """The inverse of :meth:`user_value`."""
        shift = self.user_value(0.0, horizon=horizon, gamma=gamma, h=h)
        return (np.asarray(V_user, dtype=np.float64) - shift) / self.scale

    def user_gap(self, x):
        """A difference of model values (regret, sub-optimality, an error bound) -> user units:
        ``scale * x``."""
        return self.scale * np.asarray(x, dtype=np.float64)

    def describe(self) -> str:
        return f"r_user = {self.scale:.6g} * r + {self.offset:.6g}"


IDENTITY = RewardMap()


def reward_map_of(lo: float, hi: float) -> RewardMap:
    """The map of every reward value in ``[lo, hi]`` into [0, 1] (the rule in the module
    docstring): the identity when ``0 <= lo <= hi <= 1``, else ``offset = min(0, lo)``,
    ``scale = max(0, hi) - offset`` (1 when that is 0)."""
    lo, hi = float(lo), float(hi)
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo > hi:
        raise InvalidMDPError(f"rewards range over [{lo!r}, {hi!r}], expected finite lo <= hi")
    if lo >= 0.0 and hi <= 1.0:
        return IDENTITY
    offset = min(0.0, lo)
    span = max(0.0, hi) - offset
    return RewardMap(offset=offset, scale=span if span > 0 else 1.0)


def declared_reward_map(reward_range) -> RewardMap:
    """The map of a declared range ``(lo, hi)`` onto [0, 1] exactly: ``offset = lo``,
    ``scale = hi - lo`` (the user says which raw rewards are possible)."""
    try:
        lo, hi = (float(x) for x in reward_range)
    except (TypeError, ValueError):
        raise InvalidMDPError(
            f"reward_range must be None, 'auto' or a pair (lo, hi), got {reward_range!r}"
        ) from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise InvalidMDPError(f"reward_range must be finite with lo < hi, got {reward_range!r}")
    return RewardMap(offset=lo, scale=hi - lo)
