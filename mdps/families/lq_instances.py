"""``lq-game:n=3,m=1,q=1,rho=1.05,seed=0``: a random discrete-time linear-quadratic game
(:mod:`theorylab.mdps.lq_game`), the testbed of the H-infinity controller (seed row 002-004#D4)."""

from __future__ import annotations

from theorylab.mdps.lq_game import random_lq_game
from theorylab.mdps.registry import register

register("lq-game")(random_lq_game)
