"""Known-bug mutations of the exploration rows of issue 31 (the controls of
``validations/claims/exploration.py``); appended to ``mutations.MUTATIONS``:

* ``jsrl-random-guide``: JSRL's guide replaced by uniformly random actions (drawn once, seed 0)
  whatever guide was passed (``theorylab.algorithms.online.jsrl._check_guide``): the roll-in
  almost never reaches the goal, so the curriculum moves only by ``patience`` and JSRL falls back
  to the epsilon-greedy baseline;
* ``jsrl-frozen-switch``: the curriculum never moves the switch point
  (``theorylab.algorithms.online.jsrl.JumpStartQLearning._move_switch`` a no-op): the learner
  only ever acts on the last stage and never learns the first ones;
* ``multitask-data-unshared``: multitask epsilon-greedy (001#12) with each task planning on the
  model of its own episodes only: the diverse tasks no longer carry exploration to each other.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def jsrl_random_guide(claim=None) -> Iterator[None]:
    from theorylab.algorithms.online import jsrl

    def random_guide(guide, H: int, S: int, A: int) -> np.ndarray:
        jsrl.__dict__["_check_guide_original"](guide, H, S, A)  # the input checks still run
        return np.random.default_rng(0).integers(0, A, size=(H, S))  # the bug: ignore the guide

    with (
        _patched(jsrl, "_check_guide_original", jsrl._check_guide),
        _patched(jsrl, "_check_guide", random_guide),
    ):
        yield


@contextlib.contextmanager
def jsrl_frozen_switch(claim=None) -> Iterator[None]:
    from theorylab.algorithms.online import jsrl

    with _patched(jsrl.JumpStartQLearning, "_move_switch", lambda self, traj: None):
        yield


MUTATIONS = (
    register_control(
        Control(
            "jsrl-random-guide",
            "mutation",
            "JSRL's guide replaced by uniformly random actions",
            jsrl_random_guide,
        )
    ),
    register_control(
        Control(
            "jsrl-frozen-switch",
            "mutation",
            "JSRL's curriculum never moves the switch point",
            jsrl_frozen_switch,
        )
    ),
)


@contextlib.contextmanager
def multitask_data_unshared(claim=None) -> Iterator[None]:
    """Each task plans on the model of its own episodes only (no data sharing across tasks)."""
    from theorylab.algorithms.online import multitask_myopic

    with _patched(multitask_myopic.MultitaskEpsilonGreedy, "POOLED", False):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "multitask-data-unshared",
            "mutation",
            "multitask epsilon-greedy with each task's model from its own episodes only",
            multitask_data_unshared,
        )
    ),
)
