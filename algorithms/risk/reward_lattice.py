"""The reward lattice: every realised reward as an integer number of grid steps of width eta.

Static-CVaR planning (Bauerle and Ott 2011; Wang, Kallus, Sun 2023, section 6) and the exact
return distribution both run on a lattice: the return so far and the remaining budget are
``j * eta`` for an integer ``j``. A reward outcome ``k`` of the pair ``(h, s, a)`` moves the index
by ``increments[h, s, a, k]`` with probability ``probs[h, s, a, k]``:

* ``"deterministic"`` rewards: one outcome (K = 1), the mean ``r_h(s, a)``, which must be a
  multiple of eta (exact lattice) or is rounded *up* to one (``phi(r) = eta * ceil(r / eta)``,
  Wang et al. section 6);
* ``"bernoulli"`` rewards: two outcomes (K = 2), 0 with probability ``1 - r`` and 1 with
  probability ``r``; exact as soon as ``1 / eta`` is an integer (eta = 1 by default).

Rounding error (when ``eta`` is coarser than the rewards' own grid). Write ``Z`` for the true return
and ``Z_phi`` for the return paid in rounded rewards along the same path. Per step
``0 <= phi(r) - r < eta``, so pathwise ``Z <= Z_phi <= Z + Delta`` with

    Delta = sum_h max_{s, a} ( phi(r_h(s, a)) - r_h(s, a) )  <  H * eta,

which :attr:`RewardLattice.rounding_error` reports (0 on an exact lattice). CVaR_tau is monotone
and translation-equivariant, so for every policy ``CVaR(Z) <= CVaR(Z_phi) <= CVaR(Z) + Delta``;
consequences for planning are in :mod:`theorylab.algorithms.risk.static_cvar_planning`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from theorylab.errors import TheorylabError

GRID_TOL = 1e-9
MAX_DENOMINATOR = 1000


class RewardGridError(TheorylabError, ValueError):
    """Rewards do not lie on a lattice (or on the requested one) and cannot be made exact."""


@dataclass(frozen=True)
class RewardLattice:
    """Reward outcomes of every ``(h, s, a)`` as lattice increments.

    eta: grid width. increments: ``(H, S, A, K)`` int64 (outcome k pays ``increments * eta``).
    probs: ``(H, S, A, K)`` float64 (rows sum to 1). reward_model: "deterministic" (K = 1) or
    "bernoulli" (K = 2, outcomes 0 and 1). rounding_error: ``Delta`` of the module docstring
    (0.0 when every reward is exactly on the grid).
    """

    eta: float
    increments: np.ndarray
    probs: np.ndarray
    reward_model: str
    rounding_error: float

    @property
    def H(self) -> int:
        return self.increments.shape[0]

    @property
    def K(self) -> int:
        return self.increments.shape[-1]

    @property
    def exact(self) -> bool:
        return self.rounding_error == 0.0

    @property
    def max_index(self) -> int:
        """``M``: the largest reachable return index, ``sum_h max_{s,a,k} increments[h,s,a,k]``."""
        return int(self.increments.reshape(self.H, -1).max(axis=1).sum())

    @property
    def n_levels(self) -> int:
        """``J = M + 1`` lattice points ``0, eta, ..., M * eta``."""
        return self.max_index + 1

    @property
    def levels(self) -> np.ndarray:
        """Lattice points ``eta * arange(J)``, ``(J,)``."""
        return self.eta * np.arange(self.n_levels, dtype=np.float64)

    def same_as(self, other: RewardLattice) -> bool:
        """Same grid, same increments and outcome probabilities (so budgets and returns agree)."""
        return (
            self.reward_model == other.reward_model
            and self.eta == other.eta
            and self.increments.shape == other.increments.shape
            and bool(np.array_equal(self.increments, other.increments))
            and bool(np.array_equal(self.probs, other.probs))
        )

    def outcome_index(self, rewards: np.ndarray) -> np.ndarray:
        """Map realised rewards ``(B,)`` to outcome indices k (0 for deterministic rewards)."""
        r = np.asarray(rewards, dtype=np.float64)
        if self.reward_model == "deterministic":
            return np.zeros(r.shape, dtype=np.int64)
        return (r > 0.5).astype(np.int64)


def infer_eta(R: np.ndarray, *, max_denominator: int = MAX_DENOMINATOR) -> float:
    """The coarsest grid ``1/m`` (``m <= max_denominator``) holding every reward of ``R`` exactly.

    Raises :class:`RewardGridError` when no such ``m`` exists.
    """
    R = np.asarray(R, dtype=np.float64)
    for m in range(1, max_denominator + 1):
        x = R * m
        if np.all(np.abs(x - np.round(x)) <= GRID_TOL * max(m, 1)):
            return 1.0 / m
    raise RewardGridError(
        f"rewards are not multiples of 1/m for any m <= {max_denominator}; pass eta=... to round "
        f"them up to a grid (the CVaR error is then at most sum_h max(phi(r) - r) < H * eta)"
    )


def reward_lattice_from_means(
    R: np.ndarray,
    horizon: int,
    reward_model: Literal["deterministic", "bernoulli"] = "deterministic",
    eta: float | None = None,
) -> RewardLattice:
    """The reward lattice of mean rewards ``R`` ``(S, A)`` / ``(H, S, A)`` under a reward model.

    eta: grid width; ``None`` picks the coarsest exact grid (``1/m`` for deterministic rewards,
    1 for Bernoulli rewards). A deterministic reward off the given grid is rounded up
    (``rounding_error`` > 0); a Bernoulli model needs ``1/eta`` to be an integer.
    """
    R = np.asarray(R, dtype=np.float64)
    if R.ndim == 2:
        R = np.broadcast_to(R, (horizon, *R.shape))
    if R.ndim != 3 or R.shape[0] != horizon:
        raise ValueError(f"R must be (S, A) or (H, S, A) with H = {horizon}, got {R.shape}")
    if reward_model == "deterministic":
        if eta is None:
            eta = infer_eta(R)
        eta = float(eta)
        if eta <= 0:
            raise ValueError(f"eta must be positive, got {eta}")
        x = R / eta
        on_grid = np.abs(x - np.round(x)) <= GRID_TOL * max(1.0, float(np.max(np.abs(x))))
        if on_grid.all():
            inc = np.round(x).astype(np.int64)
            err = 0.0
        else:
            inc = np.where(on_grid, np.round(x), np.ceil(x - GRID_TOL)).astype(np.int64)
            err = float((inc * eta - R).reshape(horizon, -1).max(axis=1).clip(min=0).sum())
        return RewardLattice(eta, inc[..., None], np.ones((*inc.shape, 1)), reward_model, err)
    if reward_model == "bernoulli":
        eta = 1.0 if eta is None else float(eta)
        m = 1.0 / eta if eta > 0 else np.inf
        if not np.isfinite(m) or abs(m - round(m)) > GRID_TOL * max(m, 1.0):
            raise RewardGridError(
                f"Bernoulli rewards take the values 0 and 1: eta must be 1/m for an integer m, "
                f"got eta={eta!r}"
            )
        inc = np.zeros((*R.shape, 2), dtype=np.int64)
        inc[..., 1] = int(round(m))
        probs = np.stack([1.0 - R, R], axis=-1)
        return RewardLattice(eta, inc, probs, reward_model, 0.0)
    raise ValueError(f"reward_model must be 'deterministic' or 'bernoulli', got {reward_model!r}")


def reward_lattice(mdp, eta: float | None = None) -> RewardLattice:
    """The reward lattice of a finite-horizon :class:`~theorylab.mdps.TabularMDP`."""
    if mdp.horizon is None:
        raise ValueError(f"{mdp!r} has no finite horizon; the return lattice needs one")
    return reward_lattice_from_means(mdp.R, mdp.horizon, mdp.reward_model, eta)
