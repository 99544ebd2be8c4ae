"""Negative control of the offline Markov-game claim (issue 31;
``validations/claims/markov_game.py``), appended to ``mutations.MUTATIONS``:

* ``markov-game-no-bonus``: pessimistic-nash with its Hoeffding bonus dropped
  (``theorylab.algorithms.offline.markov_game_pessimism.bonus_scale`` patched to 0): certainty
  equivalence; the interval ``[V_lo, V_up]`` no longer brackets the best responses' values.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def markov_game_no_bonus(claim=None) -> Iterator[None]:
    from theorylab.algorithms.offline import markov_game_pessimism

    with _patched(markov_game_pessimism, "bonus_scale", lambda: 0.0):
        yield


MUTATIONS = (
    register_control(
        Control(
            "markov-game-no-bonus",
            "mutation",
            "pessimistic-nash without its bonus: certainty equivalence (the interval no longer "
            "covers the best responses' values)",
            markov_game_no_bonus,
        )
    ),
)
