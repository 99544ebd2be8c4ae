"""Negative control of the SUBSAMPLE-Q claim (``validations/claims/multiagent.py``, seed row
001#3), appended to ``mutations.MUTATIONS``:

* ``subsample-q-fixed-subset``: no re-sampling at deployment -- the global agent observes the
  same k agents at every step (``theorylab.algorithms.multiagent.subsample_q.deployed_values``
  replaced by ``fixed_subset_values``), so a state whose observed agents are unrepresentative of
  the n stays misread; the worst-case gap does not shrink with k.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def subsample_q_fixed_subset(claim=None) -> Iterator[None]:
    from theorylab.algorithms.multiagent import subsample_q

    with _patched(subsample_q, "deployed_values", subsample_q.fixed_subset_values):
        yield


MUTATIONS = (
    register_control(
        Control(
            "subsample-q-fixed-subset",
            "mutation",
            "SUBSAMPLE-Q deployed without re-sampling: the same k agents observed at every step",
            subsample_q_fixed_subset,
        )
    ),
)
