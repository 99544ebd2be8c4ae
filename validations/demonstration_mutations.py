"""Known-bug mutations of ``demo-regularised-bpi`` (the controls of
``validations/claims/demonstrations.py``); appended to ``mutations.MUTATIONS``:

* ``demo-bpi-ignore-demos``: lambda forced to 0
  (``theorylab.algorithms.online.demo_regularised_bpi.regularisation_strength``): plain optimistic
  best-policy identification, so the demonstrations play no role and samples-to-eps is flat in N_E;
* ``demo-bpi-uniform-reference``: the KL reference is the uniform policy instead of pi_BC
  (``reference_policy``) while lambda still grows with N_E: the stopping time falls, but the
  regularisation bias lambda H ln A exceeds eps / 2 and the output is not eps-optimal;
* ``demo-bpi-bonus-halved``: the Hoeffding bonus halved (``hoeffding_bonus``). On the claim's
  deterministic lock the learner still outputs an eps-optimal policy (and stops sooner), so the
  claim cannot see it; the pinned test that writes the bonus out does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def ignore_demos(claim=None) -> Iterator[None]:
    from theorylab.algorithms.online import demo_regularised_bpi as m

    with _patched(m, "regularisation_strength", lambda eps, budget, lam: 0.0):
        yield


@contextlib.contextmanager
def uniform_reference(claim=None) -> Iterator[None]:
    from theorylab.algorithms.online import demo_regularised_bpi as m

    def uniform(bc: np.ndarray, reference: str) -> np.ndarray:
        return np.full_like(bc, 1.0 / bc.shape[-1])  # the bug: the clone is dropped

    with _patched(m, "reference_policy", uniform):
        yield


@contextlib.contextmanager
def bonus_halved(claim=None) -> Iterator[None]:
    from theorylab.algorithms.online import demo_regularised_bpi as m

    original = m.hoeffding_bonus
    with _patched(m, "hoeffding_bonus", lambda c, h, H, L, n: 0.5 * original(c, h, H, L, n)):
        yield


MUTATIONS = (
    register_control(
        Control(
            "demo-bpi-ignore-demos",
            "mutation",
            "demo-regularised-bpi with lambda forced to 0 (plain optimistic BPI)",
            ignore_demos,
        )
    ),
    register_control(
        Control(
            "demo-bpi-uniform-reference",
            "mutation",
            "demo-regularised-bpi regularised toward the uniform policy instead of pi_BC",
            uniform_reference,
        )
    ),
    register_control(
        Control(
            "demo-bpi-bonus-halved",
            "mutation",
            "demo-regularised-bpi with its Hoeffding bonus halved",
            bonus_halved,
            family=("demonstrations",),
            tests=(("test_demo_regularised_bpi", "test_bonus_is_the_written_hoeffding_term", {}),),
        )
    ),
)
