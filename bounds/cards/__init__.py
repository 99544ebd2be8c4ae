"""The registered bounds ("cards"), grouped by setting. ``CARDS`` lists them all, in order.

Each card is a ``Bound`` with its provenance tag from docs/reference ``theory.md``; the registry
(``theorylab.bounds.registry``) registers every card by name.
"""

from __future__ import annotations

from . import (
    average_reward,
    bandits,
    feasible_rewards,
    linear,
    lowrank,
    multiagent,
    offline,
    policy_optimization,
    preference,
    risk,
    robust,
    tabular,
)

CARDS = (
    *tabular.CARDS,
    *linear.CARDS,
    *offline.CARDS,
    *risk.CARDS,
    *robust.CARDS,
    *lowrank.CARDS,
    *preference.CARDS,
    *average_reward.CARDS,
    *feasible_rewards.CARDS,
    *policy_optimization.CARDS,
    *bandits.CARDS,
    *multiagent.CARDS,
)

__all__ = ["CARDS"]
