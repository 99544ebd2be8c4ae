"""``goal-chain``: the goal-reaching curriculum of seed rows 000#7 / 001#11
(:mod:`theorylab.mdps.goal_chain`): N tasks on one chain, task k's goal at distance k."""

from __future__ import annotations

from theorylab.mdps.goal_chain import GoalCurriculum
from theorylab.mdps.registry import register


@register("goal-chain")
def goal_chain(N: int = 8, gamma: float = 0.9) -> GoalCurriculum:
    """N + 1 states, actions right / stay / reset; task k rewards standing on state k."""
    return GoalCurriculum(N, gamma, name=f"goal-chain:N={N},gamma={gamma!r}")
