"""Known-bug mutation of CFGRL's guided policy (000#68), the control of
``validations/claims/offline_cfgrl.py``; appended to ``mutations.MUTATIONS``:

* ``cfgrl-guidance-sign-flipped``: the guidance exponent ``w -> -w``, so the product
  ``pi_beta * p(o = 1 | s, a)^{-w}`` guides away from optimality.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def cfgrl_guidance_sign_flipped(claim=None) -> Iterator[None]:
    """CFGRL's guidance exponent negated (``p^{-w}`` instead of ``p^w``)."""
    from theorylab.algorithms.offline import cfgrl

    with _patched(cfgrl, "guidance_exponent", lambda w: -w):
        yield


MUTATIONS = (
    register_control(
        Control(
            "cfgrl-guidance-sign-flipped",
            "mutation",
            "CFGRL's guidance exponent w replaced by -w (guidance away from optimality)",
            cfgrl_guidance_sign_flipped,
        )
    ),
)
