"""Negative controls of the average-reward claims (issue 30; ``validations/claims/
average_reward.py``); appended to ``mutations.MUTATIONS``:

* ``ucrl2-uniform-null`` (null agent): the uniform agent runs in UCRL2's place (no epochs, no
  confidence sets, linear regret; ``theorylab.algorithms.average_reward.ucrl2.run_seeds``);
* ``ucrl2-radius-over-n``: both of UCRL2's radii divided by N where sqrt(N) belongs
  (``sqrt(14 S log(2 A t / delta)) / N``): smaller than the paper's once N > 1, by sqrt(N), so
  the true model leaves the confidence sets once counts pass ~10^3
  (``theorylab.algorithms.average_reward.ucrl2.radius_constants``);
* ``plugin-average-null`` (null agent): the 001#1 estimator returns a fixed policy whatever the
  samples (``theorylab.algorithms.average_reward.generative.plugin_runs``);
* ``plugin-average-no-tmix-discount``: the reduction's discount ``1 - eps`` where
  ``1 - eps / t_mix`` belongs (``generative.discount_for``): the effective horizon no longer
  grows with the mixing time.
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


@contextlib.contextmanager
def plugin_average_null(claim=None) -> Iterator[None]:
    from theorylab.algorithms.average_reward import generative

    def fixed(mdp, samples, rngs, **_params):
        return generative.null_generative(mdp, samples, rngs)  # the samples never used

    with _patched(generative, "plugin_runs", fixed):
        yield


@contextlib.contextmanager
def plugin_average_no_tmix_discount(claim=None) -> Iterator[None]:
    from theorylab.algorithms.average_reward import generative

    def short(eps, t_mix, c_gamma=1.0):
        return 1.0 - eps / c_gamma  # the bug: t_mix dropped from the horizon t_mix / eps

    with _patched(generative, "discount_for", short):
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
    register_control(
        Control(
            "plugin-average-null",
            "null agent",
            "the 001#1 estimator returns a fixed policy whatever the samples",
            plugin_average_null,
        )
    ),
    register_control(
        Control(
            "plugin-average-no-tmix-discount",
            "mutation",
            "the discounted reduction at gamma = 1 - eps (t_mix dropped from the horizon)",
            plugin_average_no_tmix_discount,
            tests=(
                ("test_average_reward", "test_reduction_discount_is_one_minus_eps_over_tmix", {}),
            ),
        )
    ),
)


# ----------------------------------------------------------------------------- 000#37 LOOP
@contextlib.contextmanager
def loop_zero_radius(claim=None) -> Iterator[None]:
    from theorylab.algorithms.average_reward import loop

    with _patched(loop, "radius_scale", lambda: 0.0):  # certainty equivalence: no optimism
        yield


@contextlib.contextmanager
def loop_periodic_switch(claim=None) -> Iterator[None]:
    from theorylab.algorithms.average_reward import loop

    with _patched(loop, "switch_period", lambda: 100):  # re-plan every 100 steps as well
        yield


@contextlib.contextmanager
def loop_uniform_null(claim=None) -> Iterator[None]:
    from theorylab.algorithms.average_reward import loop, uniform

    with _patched(loop, "run_seeds", uniform.run_seeds):  # the null agent in LOOP's place
        yield


LOOP_MUTATIONS = (
    register_control(
        Control(
            "loop-zero-radius",
            "mutation",
            "LOOP's L1 radii set to zero (certainty-equivalent planning, no optimism)",
            loop_zero_radius,
            tests=(("test_loop", "test_tabular_radius_is_weissman", {}),),
        )
    ),
    register_control(
        Control(
            "loop-mixture-zero-radius",
            "mutation",
            "LOOP's ellipsoid radius set to zero (the ridge estimate planned as if exact)",
            loop_zero_radius,
            tests=(("test_loop", "test_mixture_radius_is_ofuls", {}),),
        )
    ),
    register_control(
        Control(
            "loop-periodic-switch",
            "mutation",
            "LOOP re-plans every 100 steps as well as at determinant doubling (not lazy)",
            loop_periodic_switch,
        )
    ),
    register_control(
        Control(
            "loop-uniform-null",
            "null agent",
            "the uniform agent in LOOP's place (no confidence sets, linear regret)",
            loop_uniform_null,
        )
    ),
)
MUTATIONS = (*MUTATIONS, *LOOP_MUTATIONS)


# ----------------------------------------------------------------------------- 000#38 NeoRL
@contextlib.contextmanager
def neorl_uniform_null(claim=None) -> Iterator[None]:
    from theorylab.algorithms.average_reward import neorl, uniform

    with _patched(neorl, "run_seeds", uniform.run_seeds):  # the null agent in NeoRL's place
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "neorl-uniform-null",
            "null agent",
            "the uniform agent in NeoRL's place (no model, linear regret)",
            neorl_uniform_null,
        )
    ),
)
