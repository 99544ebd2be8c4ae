"""Known-bug mutation of the action-grouping row 001#8 (the control of the claim
``action-grouping-tradeoff`` in ``validations/claims/action_grouping.py``); appended to
``mutations.MUTATIONS``:

* ``action-grouping-random``: the groups ignore the similarity structure -- ``nested_groups``
  returns ``g`` equal groups of a fixed random permutation of the actions, so a group mixes
  actions of different clusters and coarse groupings pay the approximation error without the
  structure that makes them cheap.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def action_grouping_random(claim=None) -> Iterator[None]:
    from theorylab.algorithms.offline import action_grouping as ag

    original = ag.nested_groups

    def shuffled(A: int, g: int) -> np.ndarray:
        perm = np.random.default_rng(12345).permutation(A)  # the bug: similarity ignored
        return original(A, g)[perm]

    with _patched(ag, "nested_groups", shuffled):
        yield


MUTATIONS = (
    register_control(
        Control(
            "action-grouping-random",
            "mutation",
            "action groups drawn at random instead of by similarity",
            action_grouping_random,
            tests=(
                (
                    "test_action_grouping",
                    "test_nested_groups_are_contiguous_blocks_written_out",
                    {},
                ),
            ),
        )
    ),
)
