"""Known-bug mutations of offline-to-online fine-tuning (issue 31), the controls of the claims in
``validations/claims/offline_wsrl.py``; appended to ``mutations.MUTATIONS``:

* ``wsrl-uniform-warmup``: WSRL's warm-up rollouts drawn from the uniform policy instead of the
  pre-trained offline policy.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def wsrl_uniform_warmup(claim=None) -> Iterator[None]:
    """The warm-up policy replaced by the uniform one, whatever ``warmup_policy`` says."""
    from theorylab.algorithms.online import wsrl

    original = wsrl.warmup_policy

    def mutated(which, offline_policy, A):
        return original("uniform", offline_policy, A)  # the bug: uniform warm-up rollouts

    with _patched(wsrl, "warmup_policy", mutated):
        yield


MUTATIONS = (
    register_control(
        Control(
            "wsrl-uniform-warmup",
            "mutation",
            "WSRL's warm-up rollouts from the uniform policy instead of the offline policy",
            wsrl_uniform_warmup,
        )
    ),
)
