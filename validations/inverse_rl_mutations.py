"""Known-bug mutations of ``irl-expert-resets`` (seed row 000#43; the controls of
``validations/claims/inverse_rl.py``); appended to ``mutations.MUTATIONS``:

* ``irl-resets-from-start``: PSDP's reset distribution is the start state's roll-in whatever
  ``resets`` says (``expert_resets.reset_sampler`` called with ``"start"``): the paper's idea
  removed, standard RL in the inner loop;
* ``irl-frozen-reward-player``: the reward player never moves (``expert_resets.reward_step``
  returns f unchanged): f stays 0, the policy player has nothing to match.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def irl_resets_from_start(claim=None) -> Iterator[None]:
    from theorylab.algorithms.inverse_rl import expert_resets

    original = expert_resets.reset_sampler

    def from_start(resets, sim, demo_states):
        return original("start", sim, demo_states)  # the bug: ignore the expert's states

    with _patched(expert_resets, "reset_sampler", from_start):
        yield


@contextlib.contextmanager
def irl_frozen_reward_player(claim=None) -> Iterator[None]:
    from theorylab.algorithms.inverse_rl import expert_resets

    with _patched(expert_resets, "reward_step", lambda f, g, eta: f):
        yield


MUTATIONS = (
    register_control(
        Control(
            "irl-resets-from-start",
            "mutation",
            "IRL's policy search resets to the start state, not the expert's states",
            irl_resets_from_start,
        )
    ),
    register_control(
        Control(
            "irl-frozen-reward-player",
            "mutation",
            "IRL's reward player never updates its reward",
            irl_frozen_reward_player,
        )
    ),
)
