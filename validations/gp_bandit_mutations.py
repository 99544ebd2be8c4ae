"""Negative controls of the GP-bandit claims (issue 31; ``validations/claims/gp_bandit.py``);
appended to ``mutations.MUTATIONS``:

* ``config-greedy-beta0``: CONFIG with beta_t = 0 (the greedy mean-only learner: LCB = posterior
  mean; ``theorylab.algorithms.gp_bandit.config.beta_scale`` patched to 0). It stops exploring
  once a point's mean looks best: linear regret;
* ``config-ignore-constraint``: the optimistic feasible set taken to be the whole grid (GP-UCB
  on f alone; ``config.optimistic_feasible``): linear violation wherever the unconstrained
  minimiser is infeasible, and an infeasible problem is never declared infeasible.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def config_greedy_beta0(claim=None) -> Iterator[None]:
    from theorylab.algorithms.gp_bandit import config

    with _patched(config, "beta_scale", lambda: 0.0):  # LCB = mean: no exploration
        yield


@contextlib.contextmanager
def config_ignore_constraint(claim=None) -> Iterator[None]:
    from theorylab.algorithms.gp_bandit import config

    with _patched(config, "optimistic_feasible", lambda lcb_g: np.ones(lcb_g.shape, dtype=bool)):
        yield


MUTATIONS = (
    register_control(
        Control(
            "config-greedy-beta0",
            "mutation",
            "CONFIG with beta_t = 0: the greedy mean-only learner (no exploration, linear regret)",
            config_greedy_beta0,
        )
    ),
    register_control(
        Control(
            "config-ignore-constraint",
            "baseline",
            "the constraint ignored: GP-UCB on the objective alone (linear violation, never "
            "declares infeasibility)",
            config_ignore_constraint,
        )
    ),
)
