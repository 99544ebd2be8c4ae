"""Negative controls of the US-IRL claim (``validations/claims/feasible_rewards.py``, seed row
001#2), appended to ``mutations.MUTATIONS``:

* ``us-irl-no-radius``: the plug-in feasible set ``R_{p_hat}`` taken as the answer, no
  confidence radius (``confidence_radius`` returns 0): the tight true reward is outside it.
* ``us-irl-no-horizon-factor``: the radius without the value range H - 1 (the transition error
  counted as if the successor values were in [-1, 1]): too small once H grows.
* ``us-irl-frozen-samples``: the estimator uses at most 64 draws per triple whatever n is (the
  budget ignored): the set error stops shrinking.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def us_irl_no_radius(claim=None) -> Iterator[None]:
    from theorylab.algorithms.feasible_rewards import us_irl

    with _patched(us_irl, "confidence_radius", lambda n, S, A, H, delta: 0.0):
        yield


@contextlib.contextmanager
def us_irl_no_horizon_factor(claim=None) -> Iterator[None]:
    from theorylab.algorithms.feasible_rewards import us_irl

    full = us_irl.confidence_radius
    with _patched(us_irl, "confidence_radius",
                  lambda n, S, A, H, delta: full(n, S, A, H, delta) / max(H - 1, 1)):  # fmt: skip
        yield


@contextlib.contextmanager
def us_irl_frozen_samples(claim=None) -> Iterator[None]:
    from theorylab.algorithms.feasible_rewards import us_irl

    def frozen(problem, n, rng):
        return problem.sample(min(n, 64), rng) / min(n, 64)

    with _patched(us_irl, "transition_estimate", frozen):
        yield


MUTATIONS = (
    register_control(
        Control(
            "us-irl-no-radius",
            "mutation",
            "the plug-in feasible set without a confidence radius (radius 0)",
            us_irl_no_radius,
        )  # fmt: skip
    ),
    register_control(
        Control(
            "us-irl-no-horizon-factor",
            "mutation",
            "the confidence radius without the value range H - 1",
            us_irl_no_horizon_factor,
        )  # fmt: skip
    ),
    register_control(
        Control(
            "us-irl-frozen-samples",
            "mutation",
            "at most 64 draws per triple used whatever the budget n",
            us_irl_frozen_samples,
        )  # fmt: skip
    ),
)
