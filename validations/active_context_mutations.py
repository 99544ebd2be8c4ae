"""Known-bug mutation of active context selection (seed 001#18), the control of claim
``active-contexts-worst-case`` (``validations/claims/preference_active.py``); appended to
``mutations.MUTATIONS``:

* ``active-contexts-euclidean-width``: the uncertainty ignored -- the width of a comparison taken
  as ||z||_2 instead of ||z||_{M^-1}, so the index never shrinks with the data and the context
  rule follows the features' size, not what is still unknown
  (``theorylab.algorithms.preference.active_contexts.context_indices``);
* ``cgpo-judges-ignored``: CGPO's judges' multipliers frozen at 0 (``cgpo.dual_step`` returns
  zeros), so the primal-dual iteration is plain KL-regularised RLHF (claim
  ``cgpo-judges-constrained-optimum``, ``validations/claims/dual_cgpo.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def active_contexts_euclidean_width(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.preference import active_contexts

    original = active_contexts.context_indices

    def euclidean(gap, zz, M_inv, radius):
        eye = np.broadcast_to(np.eye(M_inv.shape[-1]), M_inv.shape)
        return original(gap, zz, eye, radius)  # the bug: ||z||_2, the Gram matrix ignored

    with _patched(active_contexts, "context_indices", euclidean):
        yield


@contextlib.contextmanager
def cgpo_judges_ignored(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.dual import cgpo

    def frozen(lams, violation, eps, step):
        return np.zeros_like(lams)  # the bug: the judges never move their multipliers

    with _patched(cgpo, "dual_step", frozen):
        yield


MUTATIONS = (
    register_control(
        Control(
            "active-contexts-euclidean-width",
            "mutation",
            "active context selection with the width ||z||_2 in place of ||z||_{M^-1} "
            "(the uncertainty ignored)",
            active_contexts_euclidean_width,
        )
    ),
    register_control(
        Control(
            "cgpo-judges-ignored",
            "mutation",
            "CGPO with every judge's multiplier frozen at 0 (plain KL-regularised RLHF)",
            cgpo_judges_ignored,
        )
    ),
)
