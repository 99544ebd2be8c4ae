"""``answer-bandit``: P prompts x A answers, base logits scale * N(0, 1), ``correct`` uniformly
drawn correct answers per prompt (constructed here for the reasoning-boundary and
choice-of-divergence analyses, seed rows 002-004#G3 and #F6)."""

from __future__ import annotations

import numpy as np

from theorylab.mdps.answer_bandit import AnswerBandit
from theorylab.mdps.registry import register


@register("answer-bandit")
def answer_bandit(
    P: int = 8,
    A: int = 6,
    correct: int = 1,
    scale: float = 2.0,
    seed: int = 0,
    rare: float = 0.0,
) -> AnswerBandit:
    """Base logits scale * N(0, 1) (P, A); ``correct`` distinct correct answers per prompt,
    drawn uniformly from 0..A-1; ``rare`` is subtracted from the correct answers' logits (hard
    prompts whose groups mostly all fail: Guide, seed row 002-004#G7)."""
    if P < 1 or A < 2 or not 1 <= correct < A or not scale > 0 or not rare >= 0:
        raise ValueError(
            f"need P >= 1, A >= 2, 1 <= correct < A, scale > 0, rare >= 0; got P={P}, A={A}, "
            f"correct={correct}, scale={scale}, rare={rare}"
        )
    rng = np.random.default_rng(seed)
    logits = scale * rng.standard_normal((P, A))
    mask = np.zeros((P, A), dtype=bool)
    for x in range(P):
        mask[x, rng.choice(A, size=correct, replace=False)] = True
    name = f"answer-bandit:P={P},A={A},correct={correct},scale={scale:g},seed={seed}"
    if rare:
        logits = logits - rare * mask
        name += f",rare={rare:g}"
    return AnswerBandit(logits, mask, name=name)
