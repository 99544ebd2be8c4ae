"""The known-bug mutation of CPL (``validations/claims/preference_cpl.py``); appended to
``mutations.MUTATIONS``:

* ``cpl-reward-sum-preferences``: the user's preferences taken on summed rewards instead of the
  optimal advantage, i.e. the reward-based preference model CPL's derivation replaces
  (``cpl.segment_scores`` returns the reward).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def cpl_reward_sum_preferences(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import cpl

    original = cpl.segment_scores

    def reward_sums(mdp, alpha, preferences):
        return original(mdp, alpha, "reward")  # the bug: the reward model of preferences

    with _patched(cpl, "segment_scores", reward_sums):
        yield


MUTATIONS = (
    register_control(
        Control(
            "cpl-reward-sum-preferences",
            "mutation",
            "CPL trained on reward-sum preferences instead of regret preferences",
            cpl_reward_sum_preferences,
        )
    ),
)
