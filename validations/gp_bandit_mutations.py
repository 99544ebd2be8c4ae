"""Negative controls of the GP-bandit claims (issue 31; ``validations/claims/gp_bandit.py``);
appended to ``mutations.MUTATIONS``:

* ``config-greedy-beta0``: CONFIG with beta_t = 0 (the greedy mean-only learner: LCB = posterior
  mean; ``theorylab.algorithms.gp_bandit.config.beta_scale`` patched to 0). It stops exploring
  once a point's mean looks best: linear regret;
* ``config-ignore-constraint``: the optimistic feasible set taken to be the whole grid (GP-UCB
  on f alone; ``config.optimistic_feasible``): linear violation wherever the unconstrained
  minimiser is infeasible, and an infeasible problem is never declared infeasible;
* ``mbtl-random-tasks``: MBTL's argmax replaced by a uniformly random untrained context
  (``theorylab.algorithms.gp_bandit.mbtl.choose``): the random-selection baseline;
* ``mbtl-repeat-best``: the acquisition replaced by the UCB of the training performance alone
  and the trained contexts no longer excluded (``mbtl.transfer_gain``, ``mbtl.choose``): the
  learner retrains where it performs best instead of spreading its tasks.
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


@contextlib.contextmanager
def mbtl_random_tasks(claim=None) -> Iterator[None]:
    from theorylab.algorithms.gp_bandit import mbtl

    with _patched(mbtl, "choose", mbtl.random_choice):
        yield


@contextlib.contextmanager
def mbtl_repeat_best(claim=None) -> Iterator[None]:
    from theorylab.algorithms.gp_bandit import mbtl

    def own_ucb(ucb, slope, dist, covered):
        return ucb  # transfer ignored: the UCB of the training performance

    def anywhere(acq, trained, rngs):
        return acq.argmax(axis=1)  # trained contexts may be chosen again

    with _patched(mbtl, "transfer_gain", own_ucb), _patched(mbtl, "choose", anywhere):
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
    register_control(
        Control(
            "mbtl-random-tasks",
            "baseline",
            "MBTL's task choice replaced by a uniformly random untrained context",
            mbtl_random_tasks,
        )
    ),
    register_control(
        Control(
            "mbtl-repeat-best",
            "mutation",
            "MBTL retrains the context of the best optimistic training performance (transfer "
            "ignored, trained contexts not excluded)",
            mbtl_repeat_best,
        )
    ),
)
