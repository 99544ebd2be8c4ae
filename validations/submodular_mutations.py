"""Negative control of the SubPO claims (seed rows 000#13, 001#14, 002-004#A5;
``validations/claims/submodular.py``); appended to ``mutations.MUTATIONS``:

* ``subpo-singleton-reward``: SubPO's step reward F({s'}) of the next state alone instead of the
  marginal gain F(tau + s') - F(tau) (``algorithms/policy_optimization/subpo.step_reward``) --
  the Markovian/modular reward that ignores the visited set. The gains no longer telescope to
  F(tau), the gradient is no longer that of J, and SubPO learns to revisit the best single state.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def subpo_singleton_reward(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import subpo

    def singleton(problem, states, value, s_next):  # the bug: F({s'}), the history ignored
        return problem.utility.singleton(len(states), int(s_next))

    with _patched(subpo, "step_reward", singleton):
        yield


MUTATIONS = (
    register_control(
        Control(
            "subpo-singleton-reward",
            "mutation",
            "SubPO's step reward F({s'}) of the next state alone, not the marginal gain",
            subpo_singleton_reward,
            tests=(
                (
                    "test_submodular",
                    "test_subpo_gradient_equals_the_enumerated_reinforce_gradient",
                    {"spec": "coverage-bandit:S=4,H=3"},
                ),
            ),
        )
    ),
)
