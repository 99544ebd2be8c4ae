"""The KL bandit with a mixture of judges (CGPO, ``theorylab.mdps.judged_bandit``) as a
registered family: ``judged-bandit:S=4,A=6,K=3,beta=0.2,eps=0.02,hack=1.5,seed=0``."""

from __future__ import annotations

from theorylab.mdps.judged_bandit import judged_bandit
from theorylab.mdps.registry import register

register("judged-bandit")(judged_bandit)
