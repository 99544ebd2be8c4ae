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
* ``icvar-l-radius-without-d``: ICVaR-L's confidence radius is computed with d = 1 in place of the
  model dimension (``theorylab.algorithms.online.icvar_l.icvar_l_beta``): a smaller bonus that
  no longer grows with d (the one-sided bug that makes the learner look better). Caught by the
  pinned radius test; on the claim's d-sweep (bonus_scale 0.1, K = 1500, 3 x 4 runs per d) the
  exponent drops from 1.42 [1.30, 1.54] to 0.91 [0.71, 1.08] and its regret is lower at every
  d >= 4: the sweep's window fails it only by the CI's lower end (0.71 < 0.75), so it is no
  control of the claim (not power: docs/algorithms/icvar-l.md).
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
def icvar_l_radius_without_d(claim=None) -> Iterator[None]:
    from theorylab.algorithms.online import icvar_l

    original = icvar_l.icvar_l_beta

    def no_d(d, H, n, lam, delta, L, theta_norm):  # the bug: the dimension dropped
        return original(1, H, n, lam, delta, L, theta_norm)

    with _patched(icvar_l, "icvar_l_beta", no_d):
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
    register_control(
        Control(
            "icvar-l-radius-without-d",
            "mutation",
            "ICVaR-L's confidence radius computed with d = 1 (no growth with the dimension)",
            icvar_l_radius_without_d,
            family=("risk_icvar_fa",),
            tests=(("test_icvar_l", "test_radius_grows_with_d_on_the_hypercube", {}),),
        )
    ),
)
