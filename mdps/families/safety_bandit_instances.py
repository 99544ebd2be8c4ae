"""The safety-constrained KL bandit of constrained RLHF as a registered family
(``theorylab.mdps.safety_bandit``): ``safety-bandit:S=3,A=8,beta=0.5,slack=0.5,seed=0``."""

from __future__ import annotations

from theorylab.mdps.registry import register
from theorylab.mdps.safety_bandit import safety_bandit

register("safety-bandit")(safety_bandit)
