"""Known-bug mutations of the DR-PO and PARL rows of issue 29 (drpo29); appended to
``mutations.MUTATIONS``:

* ``drpo-no-dataset-reset``: DR-PO's reset distribution ignores the offline data and rolls the
  current policy from rho_0 instead (``theorylab.algorithms.preference.drpo.reset_points``
  forced to ``"initial"``): the baseline the paper improves on, under DR-PO's name (control of
  ``drpo-matches-covered-policy``);
* ``parl-myopic-gradient``: PARL's hypergradient without its decision-dependent term (the
  trajectory distribution treated as fixed: ``theorylab.algorithms.preference.parl.decision_term``
  returns 0; control of ``parl-hypergradient-exact``);
* ``cal-no-augmentation``: CAL's augmented multiplier (lambda + rho g(d))_+ replaced by lambda
  (``theorylab.algorithms.dual.cal.effective_multiplier``): plain Lagrangian GDA under CAL's
  name (control of ``cal-augmented-lagrangian`` in ``validations/claims/dual.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def drpo_no_dataset_reset(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import drpo

    original = drpo.reset_points

    def from_initial(mdp, policy, data, n, reset, rng, cdf=None):
        return original(mdp, policy, data, n, "initial", rng, cdf)  # the bug: no dataset reset

    with _patched(drpo, "reset_points", from_initial):
        yield


@contextlib.contextmanager
def parl_myopic_gradient(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.preference import parl

    def dropped(prob, theta, pi, ell):
        return np.zeros_like(theta)  # the bug: the lower level's dependence on theta ignored

    with _patched(parl, "decision_term", dropped):
        yield


@contextlib.contextmanager
def cal_no_augmentation(claim=None) -> Iterator[None]:
    from theorylab.algorithms.dual import cal

    with _patched(cal, "effective_multiplier", lambda lam, gap, rho: lam):  # the bug: no rho
        yield


MUTATIONS = (
    register_control(
        Control(
            "drpo-no-dataset-reset",
            "mutation",
            "DR-PO's rollouts start from rho_0 (the dataset resets dropped)",
            drpo_no_dataset_reset,
        )
    ),
    register_control(
        Control(
            "parl-myopic-gradient",
            "mutation",
            "PARL's hypergradient without the term through the lower level (myopic gradient)",
            parl_myopic_gradient,
        )
    ),
    register_control(
        Control(
            "cal-no-augmentation",
            "mutation",
            "CAL's augmented-Lagrangian term dropped (plain Lagrangian GDA)",
            cal_no_augmentation,
        )
    ),
)
