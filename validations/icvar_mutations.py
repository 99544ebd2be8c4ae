"""Known-bug mutation of ICVaR-L / ICVaR-HF (seed 001#48, issue 30), the control of the claims in
``validations/claims/risk_icvar_fa.py``; appended to ``mutations.MUTATIONS``:

* ``icvar-l-risk-neutral-backup``: the learner's optimistic backup computes the expectation
  (the dual form at alpha = 1) whatever alpha is asked
  (``theorylab.algorithms.online.icvar_l.optimistic_cvar_backup``): it learns the risk-neutral
  optimum, whose iterated-CVaR regret is linear on the claims' instance.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def icvar_l_risk_neutral_backup(claim=None) -> Iterator[None]:
    from theorylab.algorithms.online import icvar_l

    original = icvar_l.optimistic_cvar_backup

    def neutral(basis, theta_hat, inv, V, alpha, width):  # the bug: alpha ignored (= 1)
        return original(basis, theta_hat, inv, V, 1.0, width)

    with _patched(icvar_l, "optimistic_cvar_backup", neutral):
        yield


MUTATIONS = (
    register_control(
        Control(
            "icvar-l-risk-neutral-backup",
            "mutation",
            "ICVaR-L backs up the expectation (alpha = 1) in place of CVaR_alpha",
            icvar_l_risk_neutral_backup,
        )
    ),
)
