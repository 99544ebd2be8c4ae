"""``curriculum``: K categories of a synthetic RLVR learner (``theorylab.mdps.curriculum``) with
initial logits evenly spaced on [low, high] (seed rows 002-004#B2 SEC, 002-004#B3 DUMP)."""

from __future__ import annotations

import numpy as np

from theorylab.mdps.curriculum import CurriculumBandit
from theorylab.mdps.registry import register


@register("curriculum")
def curriculum(
    K: int = 6,
    G: int = 8,
    eta: float = 1.0,
    low: float = -4.0,
    high: float = 3.0,
    hint: float = 0.0,
) -> CurriculumBandit:
    """theta0 = linspace(low, high, K): categories from hard (pass rate sigmoid(low)) to easy;
    ``hint``: the logit a full hint adds (SEELE's problems)."""
    if isinstance(K, bool) or not isinstance(K, int) or K < 2 or not low <= high:
        raise ValueError(f"curriculum: need an integer K >= 2 and low <= high; got K={K!r}, "
                         f"low={low!r}, high={high!r}")  # fmt: skip
    theta0 = np.linspace(float(low), float(high), K)
    name = f"curriculum:K={K},G={G},eta={eta},low={low},high={high}" + (
        f",hint={hint}" if hint else ""
    )
    return CurriculumBandit(theta0, int(G), float(eta), name=name, hint=float(hint))
