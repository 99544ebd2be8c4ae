"""``reasoning-steps``: the step MDP of seed row 002-004#G6 (:mod:`theorylab.mdps.reasoning_steps`)
with PRM rewards drawn uniformly per (step, stage, action): ``lo..hi`` for ADVANCE and ANSWER and
``repeat_lo..hi`` for REPEAT (the PRM rates a restated correct step highly: the exploit)."""

from __future__ import annotations

import numpy as np

from theorylab.mdps.reasoning_steps import REPEAT, ReasoningSteps
from theorylab.mdps.registry import register


@register("reasoning-steps")
def reasoning_steps(
    H: int = 3,
    T: int = 10,
    lo: float = 0.2,
    hi: float = 0.95,
    repeat_lo: float = 0.6,
    seed: int = 0,
) -> ReasoningSteps:
    """H needed steps, a budget of T steps, PRM rewards U(lo, hi) (REPEAT: U(repeat_lo, hi))."""
    if H < 1 or T < H + 1 or not 0 < lo < hi < 1 or not lo <= repeat_lo < hi:
        raise ValueError(
            f"need H >= 1, T >= H + 1, 0 < lo <= repeat_lo < hi < 1; got H={H}, T={T}, lo={lo}, "
            f"hi={hi}, repeat_lo={repeat_lo}"
        )
    rng = np.random.default_rng(seed)
    prm = rng.uniform(lo, hi, size=(T, H + 1, 3))
    prm[:, :, REPEAT] = rng.uniform(repeat_lo, hi, size=(T, H + 1))
    return ReasoningSteps(
        prm, 1.0, name=f"reasoning-steps:H={H},T={T},lo={lo:g},hi={hi:g},repeat_lo="
        f"{repeat_lo:g},seed={seed}"
    )  # fmt: skip
