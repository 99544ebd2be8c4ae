"""Known-bug mutations: negative controls that patch one realistic bug into the library.

Each mutation is a context manager that patches the bug in for the duration of a ``with`` block
and is registered in ``theorylab.validations.controls.CONTROLS``. A claim that lists a mutation
among its controls must FAIL under it (``theorylab.validations.validate`` checks this). Registered:

* ``ucbvi-ch-bonus-sqrt-l``: UCBVI-CH's bonus 7 H L sqrt(1/N) (Azar et al. 2017, Alg. 3) written
  as 7 H sqrt(L/N) -- smaller by sqrt(L), about 4 on the quick instances;
* ``score-next-policy``: the online runner scores episode k with the policy of episode k + 1
  (``theorylab.runners.online.run(score_policy="next")``);
* ``pevi-penalty-sign``: PEVI adds its penalty Gamma_h instead of subtracting it (an optimistic
  algorithm under a pessimistic name; ``theorylab.algorithms.offline.pevi.pessimistic_q``).

``python -m theorylab.validations.mutants`` reports which claims catch each of them.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control


@contextlib.contextmanager
def _patched(owner, attribute: str, value) -> Iterator[None]:
    had = attribute in vars(owner)
    old = vars(owner).get(attribute)
    setattr(owner, attribute, value)
    try:
        yield
    finally:
        if had:
            setattr(owner, attribute, old)
        else:
            delattr(owner, attribute)


@contextlib.contextmanager
def ucbvi_ch_bonus_sqrt_l(claim=None) -> Iterator[None]:
    from theorylab.algorithms.online.ucbvi import UCBVI, UCBVIHoeffding

    # UCBVI-CH reads L only in its bonus 7 H L sqrt(1/N); sqrt(L) there gives 7 H sqrt(L/N)
    with _patched(UCBVIHoeffding, "L", property(lambda self: math.sqrt(UCBVI.L.fget(self)))):
        yield


@contextlib.contextmanager
def score_next_policy(claim=None) -> Iterator[None]:
    import functools

    import theorylab.runners.online as online

    with _patched(online, "run", functools.partial(online.run, score_policy="next")):
        yield


@contextlib.contextmanager
def pevi_penalty_sign(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.offline import pevi

    def flipped(fit, gamma, cap):
        return np.clip(fit + gamma, 0.0, cap)

    with _patched(pevi, "pessimistic_q", flipped):
        yield


MUTATIONS = (
    register_control(
        Control(
            "ucbvi-ch-bonus-sqrt-l",
            "mutation",
            "UCBVI-CH bonus 7 H sqrt(L/N) instead of 7 H L / sqrt(N)",
            ucbvi_ch_bonus_sqrt_l,
        )
    ),
    register_control(
        Control(
            "score-next-policy",
            "mutation",
            "episode k scored with the policy of episode k + 1",
            score_next_policy,
        )
    ),
    register_control(
        Control(
            "pevi-penalty-sign",
            "mutation",
            "PEVI's penalty added instead of subtracted",
            pevi_penalty_sign,
        )
    ),
)
