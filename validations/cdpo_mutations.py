"""Known-bug mutation of the CDPO row of issue 31 (the control of the claim
``cdpo-conservative-riverswim`` in ``validations/claims/tabular_regret.py``); appended to
``mutations.MUTATIONS``:

* ``cdpo-no-conservative``: the conservative update is skipped (its radius forced to 0 whatever
  ``eta`` was passed), so CDPO plays the referential policy -- exactly PSRL with the same
  posterior and the same random draws.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def cdpo_no_conservative(claim=None) -> Iterator[None]:
    from theorylab.algorithms.online import cdpo

    original = cdpo.conservative_update

    def referential_only(P_mean, R_mean, reference, eta):
        return original(P_mean, R_mean, reference, 0.0)  # the bug: no conservative step

    with _patched(cdpo, "conservative_update", referential_only):
        yield


MUTATIONS = (
    register_control(
        Control(
            "cdpo-no-conservative",
            "mutation",
            "CDPO's conservative update skipped (eta forced to 0: PSRL)",
            cdpo_no_conservative,
        )
    ),
)
