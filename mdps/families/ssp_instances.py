"""``ssp-trap``: stochastic shortest path instances whose cheapest one-step action is improper
(:class:`theorylab.mdps.ssp.SSPProblem`; seed row 000#51, reconstructed: the paper's own
instances were not read).

``ssp-trap:S=8,A=3,trap=0.2,exit=0.5,seed=0``: S non-goal states, goal S.

* action 0 ("trap") at state s moves deterministically to ``(s + 1) mod S`` at cost ``trap``:
  the all-trap policy cycles through the non-goal states forever -- improper, infinite cost --
  although its one-step cost is the cheapest of the instance;
* action 1 at the exit state ``S - 1`` reaches the goal with probability one at cost ``exit``;
* every other (s, a), a >= 1, reaches the goal with probability drawn uniformly from
  [0.1, 0.5], spreads the rest over the non-goal states (a Dirichlet(1) draw) and costs
  uniform [0.5, 1.5]; all draws from ``numpy.random.default_rng([seed, 51])``.

The instance's proper policy is "action 1 everywhere". Where ``trap`` is cheap the optimal
policy walks the trap cycle to the exit and leaves there: optimal, proper, and one action away
from the improper all-trap policy at the exit state.
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.families.chain import require_int
from theorylab.mdps.registry import register
from theorylab.mdps.ssp import SSPProblem

MAX_S = 200


def _positive(name: str, value) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = float("nan")
    if not (np.isfinite(x) and x > 0):
        raise InvalidMDPError(
            f"ssp-trap: parameter {name} must be a finite cost > 0, got {name}={value!r}"
        )
    return x


@register("ssp-trap")
def ssp_trap(S: int = 8, A: int = 3, trap: float = 0.2, exit: float = 0.5, seed: int = 0):
    """The instance (module docstring)."""
    S = require_int("ssp-trap", "S", S, 2)
    A = require_int("ssp-trap", "A", A, 2)
    if S > MAX_S:
        raise InvalidMDPError(f"ssp-trap: parameter S must be <= {MAX_S}, got S={S}")
    trap, exit = _positive("trap", trap), _positive("exit", exit)
    rng = np.random.default_rng([int(seed), 51])
    P = np.zeros((S, A, S + 1))  # (S, A, S+1), column S: the goal
    c = rng.uniform(0.5, 1.5, size=(S, A))  # (S, A)
    p_goal = rng.uniform(0.1, 0.5, size=(S, A))  # (S, A)
    spread = rng.dirichlet(np.ones(S), size=(S, A))  # (S, A, S)
    P[:, :, :S] = (1.0 - p_goal)[..., None] * spread
    P[:, :, S] = p_goal
    states = np.arange(S)
    P[:, 0, :] = 0.0
    P[states, 0, (states + 1) % S] = 1.0
    c[:, 0] = trap
    P[S - 1, 1, :] = 0.0
    P[S - 1, 1, S] = 1.0
    c[S - 1, 1] = exit
    name = f"ssp-trap:S={S},A={A},trap={trap},exit={exit},seed={seed}"
    return SSPProblem(P=P, c=c, proper_policy=np.ones(S, dtype=np.int64),
                      improper_policy=np.zeros(S, dtype=np.int64), name=name)  # fmt: skip
