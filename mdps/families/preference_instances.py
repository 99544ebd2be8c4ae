"""Preference problems as registered families (definitions in ``theorylab.mdps.preference``).

* ``zjj-thm39`` -- Zhu-Jordan-Jiao Theorem 3.9's 4-action bandit (greedy-on-MLE fails);
* ``cyclic-preferences:a=..,b=..,c=..`` -- an intransitive 3-cycle plus a dominated item;
* ``btl-preferences:rewards=r0|r1|...`` -- BTL preferences of a reward vector;
* ``comparison-bandit:S=3,A=6,d=5,B=2,norm=1,seed=0`` -- a random ZJJ contextual bandit.
"""

from __future__ import annotations

from theorylab.mdps.preference import (
    btl_preferences,
    cyclic_preferences,
    random_comparison_bandit,
    zjj_thm39,
)
from theorylab.mdps.registry import register

register("zjj-thm39")(zjj_thm39)
register("cyclic-preferences")(cyclic_preferences)
register("btl-preferences")(btl_preferences)
register("comparison-bandit")(random_comparison_bandit)
