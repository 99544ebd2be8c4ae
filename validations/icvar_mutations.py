"""Known-bug mutation of ICVaR-L / ICVaR-HF (seed 001#48, issue 30), the control of the claims in
``validations/claims/risk_icvar_fa.py``; appended to ``mutations.MUTATIONS``:

* ``icvar-l-risk-neutral-backup``: the learner's optimistic backup computes the expectation
  (the dual form at alpha = 1) whatever alpha is asked
  (``theorylab.algorithms.online.icvar_l.optimistic_cvar_backup``): it learns the risk-neutral
  optimum, whose iterated-CVaR regret is linear on the claims' instance.
* ``icvar-hf-labels-ignored``: the preference labels ICVaR-HF learns its reward from are fair coin
  flips, independent of the two trajectories' returns
  (``theorylab.algorithms.online.icvar_l.btl_oracle``; the same one uniform draw per seed as the
  oracle, so the streams stay aligned): the reward MLE learns nothing and the regret is linear.
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


@contextlib.contextmanager
def icvar_hf_labels_ignored(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.online import icvar_l

    def coin(new_returns, old_returns, rngs):  # the bug: the label ignores the returns
        return np.array([float(g.random() < 0.5) for g in rngs])

    with _patched(icvar_l, "btl_oracle", coin):
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
    register_control(
        Control(
            "icvar-hf-labels-ignored",
            "mutation",
            "ICVaR-HF's preference labels are fair coin flips (the returns ignored)",
            icvar_hf_labels_ignored,
        )
    ),
)
