"""Known-bug mutation of OptiDICE (issue 26), the control of ``optidice-regularised-optimum``
(``validations/claims/dual_exact.py``); appended to ``mutations.MUTATIONS``:

* ``optidice-alpha-inverted``: OptiDICE's dual-V solve run at 1/alpha where alpha belongs (the
  regularisation weight inverted: at alpha = 0.1 the answer is pulled to the data).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def optidice_alpha_inverted(claim=None) -> Iterator[None]:
    from theorylab.algorithms.dual import optidice

    original = optidice.solve_dual_v

    def inverted(mdp, d_ref, alpha, f="kl", **kwargs):
        return original(mdp, d_ref, 1.0 / alpha, f, **kwargs)  # the bug: 1/alpha

    with _patched(optidice, "solve_dual_v", inverted):
        yield


MUTATIONS = (
    register_control(
        Control(
            "optidice-alpha-inverted",
            "mutation",
            "OptiDICE's regularisation weight inverted (the dual-V solve at 1/alpha)",
            optidice_alpha_inverted,
        )
    ),
)
