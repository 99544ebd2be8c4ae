"""Budget-augmented policies (Bauerle and Ott 2011) and their rollouts.

A static-CVaR optimal policy is history dependent, but only through the *remaining budget*
``b_h = b_1 - (r_1 + ... + r_{h-1})`` (Bauerle and Ott 2011, Theorem 3.1; Wang, Kallus, Sun 2023,
section 5). On a reward lattice of width eta (see :mod:`.reward_lattice`) the budget is an index
``j = b / eta`` clipped at 0 (a budget ``b <= 0`` can no longer be short of anything), and the
policy is an action table ``actions[h, s, j]`` plus the initial budget index ``j_1``. The budget
moves with the *realised* reward outcome: ``j_{h+1} = max(j_h - increments[h, s_h, a_h, k_h], 0)``.

``AugmentedPolicy`` carries its lattice, so the budget dynamics it was planned with travel with it
(an agent planning on a rounded lattice keeps rounding when it acts).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.agent import read_only_copy
from theorylab.algorithms.risk.reward_lattice import RewardLattice
from theorylab.errors import InvalidPolicyError
from theorylab.mdps.tabular import Trajectories


@dataclass(frozen=True)
class AugmentedPolicy:
    """A deterministic budget-augmented policy, single or batched over seeds.

    actions: ``(H, S, J)`` int64, or ``(B, H, S, J)`` batched: the action at stage h, state s and
        remaining-budget index j (budget ``j * eta``).
    initial_budget: ``()`` or ``(B,)`` int64: the index ``j_1`` of the budget ``b_1``.
    lattice: the :class:`RewardLattice` whose increments move the budget (``J`` must equal
        ``lattice.n_levels``).
    """

    actions: np.ndarray
    initial_budget: np.ndarray
    lattice: RewardLattice

    def __post_init__(self) -> None:
        acts = np.asarray(self.actions)
        j1 = np.asarray(self.initial_budget)
        if not np.issubdtype(acts.dtype, np.integer):
            raise InvalidPolicyError(f"augmented actions must be integers, got {acts.dtype}")
        if acts.ndim not in (3, 4):
            raise InvalidPolicyError(
                f"augmented actions must have shape (H, S, J) or (B, H, S, J), got {acts.shape}"
            )
        if acts.shape[-1] != self.lattice.n_levels:
            raise InvalidPolicyError(
                f"augmented actions have {acts.shape[-1]} budget levels, the lattice has "
                f"{self.lattice.n_levels}"
            )
        if acts.shape[-3] != self.lattice.H:
            raise InvalidPolicyError(
                f"augmented actions have {acts.shape[-3]} stages, the lattice has {self.lattice.H}"
            )
        if j1.shape != acts.shape[:-3]:
            raise InvalidPolicyError(
                f"initial_budget must have shape {acts.shape[:-3]}, got {j1.shape}"
            )
        if ((j1 < 0) | (j1 >= self.lattice.n_levels)).any():
            raise InvalidPolicyError(
                f"initial budget index out of range 0..{self.lattice.n_levels - 1}: {j1}"
            )
        # read-only copies: an agent's tables are updated in place, and a policy handed out must
        # neither change under its holder nor be writable by it (theorylab.agent, policy())
        object.__setattr__(self, "actions", read_only_copy(acts.astype(np.int64, copy=False)))
        object.__setattr__(self, "initial_budget", read_only_copy(j1.astype(np.int64, copy=False)))

    @property
    def batched(self) -> bool:
        return self.actions.ndim == 4

    @property
    def n_seeds(self) -> int:
        return self.actions.shape[0] if self.batched else 1

    @property
    def initial_budget_value(self) -> np.ndarray | float:
        """``b_1 = eta * j_1`` (float, or ``(B,)``)."""
        b = self.lattice.eta * self.initial_budget
        return float(b) if np.ndim(b) == 0 else b

    def as_batch(self) -> AugmentedPolicy:
        """The same policy with a seed axis of length 1 (no copy when already batched)."""
        if self.batched:
            return self
        return AugmentedPolicy(self.actions[None], self.initial_budget[None], self.lattice)

    def seed(self, i: int) -> AugmentedPolicy:
        """Seed ``i`` of a batched policy, keeping a seed axis of length 1."""
        if not self.batched:
            raise ValueError("not a batched policy")
        sl = slice(i, i + 1)
        return AugmentedPolicy(self.actions[sl], self.initial_budget[sl], self.lattice)

    def check_for(self, mdp) -> None:
        """Raise :class:`InvalidPolicyError` when the policy does not fit ``mdp``."""
        H, S = self.actions.shape[-3], self.actions.shape[-2]
        if (H, S) != (mdp.horizon, mdp.S):
            raise InvalidPolicyError(
                f"augmented policy is for (H, S) = ({H}, {S}), the MDP has ({mdp.horizon}, {mdp.S})"
            )
        if self.lattice.reward_model != mdp.reward_model:
            raise InvalidPolicyError(
                f"the policy's budget follows {self.lattice.reward_model!r} rewards but the MDP "
                f"pays {mdp.reward_model!r} rewards (give the agent reward_model="
                f"{mdp.reward_model!r})"
            )
        bad = (self.actions < 0) | (self.actions >= mdp.A)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise InvalidPolicyError(f"augmented policy picks action out of range at {idx}")


@dataclass(frozen=True)
class BudgetTrajectories(Trajectories):
    """:class:`Trajectories` plus the budget index each seed held at every step.

    budgets: ``(B, T + 1)`` int64, ``budgets[:, t]`` before step t (``budgets[:, 0] = j_1``).
    """

    budgets: np.ndarray | None = None


def budget_rollout(mdp, policy: AugmentedPolicy, rng) -> BudgetTrajectories:
    """Roll a budget-augmented policy out for every seed at once.

    rng: a sequence of B generators (seed i draws the same numbers alone or in a batch), a
    ``Generator`` (spawned per seed) or an int. The random numbers are drawn in the same pattern as
    :meth:`TabularMDP.rollout` (``1 + 3T`` uniforms per seed: initial state, then action, transition
    and reward per step), so a budget-independent policy gives exactly the trajectories of the
    equivalent Markov policy.
    """
    from theorylab.mdps.tabular import per_seed_generators

    pol = policy.as_batch()
    pol.check_for(mdp)
    rngs = per_seed_generators(rng, pol.n_seeds, None)
    B, T, S, A = pol.n_seeds, mdp.horizon, mdp.S, mdp.A
    if len(rngs) != B:
        raise InvalidPolicyError(f"policy has {B} seeds, rollout has {len(rngs)} generators")
    lat = pol.lattice
    U = np.stack([g.random(1 + 3 * T) for g in rngs])  # (B, 1 + 3T)
    seeds = np.arange(B)
    s = np.minimum((np.cumsum(mdp.mu0)[None, :] <= U[:, :1]).sum(axis=1), S - 1).astype(np.int64)
    j = pol.initial_budget.copy()  # (B,)
    states = np.empty((B, T), np.int64)
    actions = np.empty((B, T), np.int64)
    rewards = np.empty((B, T), np.float64)
    nexts = np.empty((B, T), np.int64)
    budgets = np.empty((B, T + 1), np.int64)
    budgets[:, 0] = j
    for t in range(T):
        # U[:, 1 + 3t] is the action uniform: drawn to keep the pattern, unused (deterministic pi)
        ut, ur = U[:, 2 + 3 * t], U[:, 3 + 3 * t]
        a = pol.actions[seeds, t, s, j]
        mean = mdp.reward(t)[s, a]
        r = mean if mdp.reward_model == "deterministic" else (ur < mean).astype(np.float64)
        rows = mdp.P_flat(t)[s * A + a]
        rows = rows.toarray() if hasattr(rows, "toarray") else np.asarray(rows)
        cdf = np.cumsum(rows, axis=1)
        s_next = np.minimum((cdf <= ut[:, None]).sum(axis=1), S - 1)
        k = lat.outcome_index(r)
        j = np.maximum(j - lat.increments[t, s, a, k], 0)
        states[:, t], actions[:, t], rewards[:, t], nexts[:, t] = s, a, r, s_next
        budgets[:, t + 1] = j
        s = s_next
    return BudgetTrajectories(states, actions, rewards, nexts, budgets)
