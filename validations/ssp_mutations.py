"""Negative controls of the SSP convergence claim (seed row 000#51;
``validations/claims/ssp.py``), appended to ``mutations.MUTATIONS``. Each patches one function of
:mod:`theorylab.algorithms.ssp.two_timescale`:

* ``ssp-frozen-actor`` (null agent): the actor never moves -- the critic is TD(0) of the uniform
  starting policy and converges to its cost, not to J*.
* ``ssp-actor-ascends-cost``: the actor's sign flipped -- it climbs the cost, towards the
  improper trap cycle; the box [-C, C] keeps its policies proper, with costs of order e^(2C).
* ``ssp-discounted-critic``: the critic's target discounted, ``c + 0.9 V(s')`` (an SSP solved
  as if it were a discounted problem): the critic converges to the wrong cost-to-go.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched

DISCOUNT = 0.9


def _module():
    from theorylab.algorithms.ssp import two_timescale

    return two_timescale


@contextlib.contextmanager
def ssp_frozen_actor(claim=None) -> Iterator[None]:
    with _patched(_module(), "actor_step", lambda theta, pi, onehot, delta, step, C: theta):
        yield


@contextlib.contextmanager
def ssp_actor_ascends_cost(claim=None) -> Iterator[None]:
    def ascend(theta, pi, onehot, delta, step, C):
        return np.clip(theta + step * delta[..., None] * (onehot - pi), -C, C)

    with _patched(_module(), "actor_step", ascend):
        yield


@contextlib.contextmanager
def ssp_discounted_critic(claim=None) -> Iterator[None]:
    with _patched(_module(), "critic_target", lambda cost, V_next: cost + DISCOUNT * V_next):
        yield


MUTATIONS = (
    register_control(Control(
        "ssp-frozen-actor", "null agent",
        "the SSP actor never moves: the critic evaluates the uniform starting policy",
        ssp_frozen_actor)),
    register_control(Control(
        "ssp-actor-ascends-cost", "mutation",
        "the SSP actor's sign flipped: it climbs the cost towards the improper trap cycle",
        ssp_actor_ascends_cost)),
    register_control(Control(
        "ssp-discounted-critic", "mutation",
        f"the SSP critic's target discounted (c + {DISCOUNT} V(s')): the SSP solved as a "
        "discounted problem",
        ssp_discounted_critic)),
)  # fmt: skip
