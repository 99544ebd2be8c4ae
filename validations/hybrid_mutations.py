"""Known-bug mutations of the hybrid (offline + on-policy) policy-gradient claims
(``validations/claims/hybrid_policy_gradient.py``) and the dataset-constraint claim
(``validations/claims/dataset_constraint.py``); appended to ``mutations.MUTATIONS``:

* ``hnpg-drops-on-policy-fit``: HNPG's critic fit to the offline data alone (the on-policy Monte
  Carlo terms dropped from the least-squares problem: the naive offline-only critic;
  ``hnpg.hybrid_critic``);
* ``hnpg-drops-offline-data``: HNPG's critic fit to the on-policy data alone (the offline TD
  terms dropped: pure on-policy NPG under HNPG's name; ``hnpg.hybrid_critic``);
* ``prdc-constraint-dropped``: PRDC's dataset-constraint penalty replaced by zeros (the actor
  greedy in its critic over every control: the unregularised actor-critic;
  ``prdc.dataset_constraint_penalty``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def hnpg_drops_on_policy_fit(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import hnpg

    original = hnpg.hybrid_critic

    def offline_only(off, on, pi, gamma, lam):  # the bug: the on-policy returns never fitted
        return original(off, hnpg.empty_pairs(*pi.shape), pi, gamma, lam)

    with _patched(hnpg, "hybrid_critic", offline_only):
        yield


@contextlib.contextmanager
def hnpg_drops_offline_data(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import hnpg

    original = hnpg.hybrid_critic

    def on_policy_only(off, on, pi, gamma, lam):  # the bug: the offline data never fitted
        return original(hnpg.empty_pairs(*pi.shape), on, pi, gamma, lam)

    with _patched(hnpg, "hybrid_critic", on_policy_only):
        yield


@contextlib.contextmanager
def prdc_constraint_dropped(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.offline import prdc

    def no_penalty(states, actions, S, A, beta):  # the bug: the nearest sample never consulted
        return np.zeros((S, A))

    with _patched(prdc, "dataset_constraint_penalty", no_penalty):
        yield


MUTATIONS = (
    register_control(
        Control(
            "hnpg-drops-on-policy-fit",
            "mutation",
            "HNPG's critic fit to the offline data alone (the naive offline-only critic)",
            hnpg_drops_on_policy_fit,
        )
    ),
    register_control(
        Control(
            "hnpg-drops-offline-data",
            "mutation",
            "HNPG's critic fit to the on-policy data alone (pure NPG under HNPG's name)",
            hnpg_drops_offline_data,
        )
    ),
    register_control(
        Control(
            "prdc-constraint-dropped",
            "mutation",
            "PRDC's dataset-constraint penalty replaced by zeros (the unregularised actor)",
            prdc_constraint_dropped,
        )
    ),
)
