"""Negative controls of the average-reward claims (issue 30; ``validations/claims/
average_reward.py``); appended to ``mutations.MUTATIONS``:

* ``ucrl2-uniform-null`` (null agent): the uniform agent runs in UCRL2's place (no epochs, no
  confidence sets, linear regret; ``theorylab.algorithms.average_reward.ucrl2.run_seeds``);
* ``ucrl2-radius-over-n``: both of UCRL2's radii divided by N where sqrt(N) belongs
  (``sqrt(14 S log(2 A t / delta)) / N``): smaller than the paper's once N > 1, by sqrt(N), so
  the true model leaves the confidence sets once counts pass ~10^3
  (``theorylab.algorithms.average_reward.ucrl2.radius_constants``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def ucrl2_uniform_null(claim=None) -> Iterator[None]:
    from theorylab.algorithms.average_reward import ucrl2, uniform

    with _patched(ucrl2, "run_seeds", uniform.run_seeds):  # the null agent in UCRL2's place
        yield


@contextlib.contextmanager
def ucrl2_radius_over_n(claim=None) -> Iterator[None]:
    from theorylab.algorithms.average_reward import ucrl2

    c_p, c_r, _ = ucrl2.radius_constants()
    with _patched(ucrl2, "radius_constants", lambda: (c_p, c_r, 1.0)):  # the bug: N, not sqrt(N)
        yield


MUTATIONS = (
    register_control(
        Control(
            "ucrl2-uniform-null",
            "null agent",
            "the uniform agent in UCRL2's place (no confidence sets, linear regret)",
            ucrl2_uniform_null,
        )
    ),
    register_control(
        Control(
            "ucrl2-radius-over-n",
            "mutation",
            "UCRL2's L1 and reward radii divided by N instead of sqrt(N)",
            ucrl2_radius_over_n,
            tests=(("test_average_reward", "test_ucrl2_radii_are_the_papers", {}),),
        )
    ),
)
