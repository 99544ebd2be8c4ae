"""Known-bug mutations of the curriculum bandits (``validations/claims/curriculum.py``); appended
to ``mutations.MUTATIONS``:

* ``sec-mean-reward-value``: SEC's TD(0) target is the group's mean reward (pass rate) instead of
  its mean absolute advantage, so the curriculum chases the easiest categories
  (``sec.sec_reward``);
* ``dump-bonus-dropped``: DUMP's UCB index without its exploration term (greedy on the mean
  absolute advantage after one pull each) (``dump.ucb_scores`` at bonus 0).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def sec_mean_reward_value(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import sec

    def mean_reward(abs_adv, mean_reward):
        return mean_reward  # the bug: the pass rate, not the learning gain

    with _patched(sec, "sec_reward", mean_reward):
        yield


@contextlib.contextmanager
def dump_bonus_dropped(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import dump

    original = dump.ucb_scores

    def greedy(total, counts, t, bonus):
        return original(total, counts, t, 0.0)  # the bug: no exploration term

    with _patched(dump, "ucb_scores", greedy):
        yield


MUTATIONS = (
    register_control(
        Control(
            "sec-mean-reward-value",
            "mutation",
            "SEC's arm value tracks the mean reward instead of the absolute advantage",
            sec_mean_reward_value,
        )
    ),
    register_control(
        Control(
            "dump-bonus-dropped",
            "mutation",
            "DUMP's UCB index without its exploration bonus (greedy)",
            dump_bonus_dropped,
        )
    ),
)
