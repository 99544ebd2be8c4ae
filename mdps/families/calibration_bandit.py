"""``calibration-bandit``: P prompts x A answers with correctness probabilities drawn uniformly in
[lo, 1 - lo], and M confidence levels (constructed here for RLCR, seed row 002-004#B6)."""

from __future__ import annotations

import numpy as np

from theorylab.mdps.calibration_bandit import CalibrationBandit
from theorylab.mdps.registry import register


@register("calibration-bandit")
def calibration_bandit(
    P: int = 4, A: int = 3, M: int = 11, lo: float = 0.05, seed: int = 0
) -> CalibrationBandit:
    """p[x, y] ~ Uniform(lo, 1 - lo) (P, A), M confidence levels."""
    if P < 1 or A < 2 or not 0 <= lo < 0.5:
        raise ValueError(f"need P >= 1, A >= 2, 0 <= lo < 0.5; got P={P}, A={A}, lo={lo}")
    rng = np.random.default_rng(seed)
    p = rng.uniform(lo, 1 - lo, size=(P, A))
    return CalibrationBandit(p, int(M), name=f"calibration-bandit:P={P},A={A},M={M},seed={seed}")
