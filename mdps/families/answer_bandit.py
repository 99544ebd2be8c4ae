"""``answer-bandit``: P prompts x A answers, base logits scale * N(0, 1), one uniformly drawn
correct answer per prompt (constructed here for the reasoning-boundary analysis, seed row
002-004#G3)."""

from __future__ import annotations

import numpy as np

from theorylab.mdps.answer_bandit import AnswerBandit
from theorylab.mdps.registry import register


@register("answer-bandit")
def answer_bandit(P: int = 8, A: int = 6, scale: float = 2.0, seed: int = 0) -> AnswerBandit:
    """Base logits scale * N(0, 1) (P, A); correct answers uniform on 0..A-1."""
    if P < 1 or A < 2 or not scale > 0:
        raise ValueError(f"need P >= 1, A >= 2, scale > 0; got P={P}, A={A}, scale={scale}")
    rng = np.random.default_rng(seed)
    return AnswerBandit(
        scale * rng.standard_normal((P, A)),
        rng.integers(0, A, size=P),
        name=f"answer-bandit:P={P},A={A},scale={scale:g},seed={seed}",
    )
