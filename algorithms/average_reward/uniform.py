"""The uniform agent: a null baseline of ``kind="average-reward"`` (every action with
probability 1/A at every step, no learning). Its regret grows linearly, at the rate
``g* - g(uniform)`` (the gain of the uniform policy, exact by
:func:`theorylab.algorithms.planning.average_reward.policy_gain_bias`): the negative control of
the average-reward regret claims.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from theorylab.algorithms.average_reward.run_record import StepRun, step_grid
from theorylab.algorithms.average_reward.ucrl2 import next_state, start_state
from theorylab.algorithms.online.segmented_loop import pcg64_states
from theorylab.algorithms.planning.average_reward import model_arrays
from theorylab.algorithms.registry import register
from theorylab.kernels.pcg64 import pcg64_random


@njit(cache=True)
def uniform_seed(cdf, R, T, s0, rng_state, grid):
    """One seed of the uniform agent: ``reward_sum (G,)`` of the mean rewards played."""
    A = R.shape[1]
    out = np.zeros(grid.shape[0])
    s, gi, cum = s0, 0, 0.0
    for t in range(1, T + 1):
        a = min(int(pcg64_random(rng_state) * A), A - 1)
        cum += R[s, a]
        s = next_state(cdf[s, a], pcg64_random(rng_state))
        while gi < grid.shape[0] and grid[gi] == t:
            out[gi] = cum
            gi += 1
    return out


def run_seeds(mdp, steps: int, rngs, **_ignored) -> StepRun:
    """The uniform agent on every seed; ``_ignored``: a learner's parameters (so that it can
    stand in for one as a null control)."""
    P, R = model_arrays(mdp)
    cdf = np.cumsum(P, axis=2)
    grid = step_grid(steps)
    s0 = start_state(mdp, R.shape[0])
    sums = []
    for rng in rngs:
        sums.append(uniform_seed(cdf, R, steps, s0, pcg64_states([rng])[0], grid))
    return StepRun(steps=grid, reward_sum=np.stack(sums), config={"policy": "uniform"})


@register(
    "uniform-average",
    kind="average-reward",
    problem="tabular",
    summary="null baseline: a uniformly random action at every step (linear regret)",
)
def uniform_average(mdp, steps, rngs):
    """Uniformly random actions for ``steps`` steps per seed."""
    return run_seeds(mdp, steps, rngs)
