"""Known-bug mutation of SQIRL (000#4; the control of ``sqirl-effective-horizon`` in
``validations/claims/exploration.py``); appended to ``mutations.MUTATIONS``:

* ``sqirl-short-lookahead``: SQIRL's fitted Q-iteration runs one backup too few (lookahead
  k - 1 instead of the k it was given; ``SQIRL._improve``): below the effective horizon the
  greedy policy of Q^{k-1} takes the bait, however many rollouts are drawn.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def sqirl_short_lookahead(claim=None) -> Iterator[None]:
    from theorylab.algorithms.online import sqirl

    original = sqirl.SQIRL._improve

    def short(self) -> None:
        k = self.k
        self.k = max(1, k - 1)  # the bug: one backup too few
        try:
            original(self)
        finally:
            self.k = k

    with _patched(sqirl.SQIRL, "_improve", short):
        yield


MUTATIONS = (
    register_control(
        Control(
            "sqirl-short-lookahead",
            "mutation",
            "SQIRL's fitted Q-iteration uses lookahead k - 1 instead of k",
            sqirl_short_lookahead,
        )
    ),
)
