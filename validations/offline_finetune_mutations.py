"""Known-bug mutations of WSRL and GORL (issue 31, offline31b), the controls of the claims in
``validations/claims/offline_wsrl.py`` and ``offline_gorl.py``; appended to
``mutations.MUTATIONS``:

* ``wsrl-uniform-warmup``: WSRL's warm-up rollouts drawn from the uniform policy instead of the
  pre-trained offline policy;
* ``gorl-weights-inverted``: GORL's per-sample constraint weights w_i replaced by 1 - w_i.
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


@contextlib.contextmanager
def gorl_weights_inverted(claim=None) -> Iterator[None]:
    """GORL's per-sample weights inverted: expert-agreeing samples left to Q-maximisation."""
    from theorylab.algorithms.offline import gorl

    with _patched(gorl, "transform_weights", lambda wi: 1.0 - wi):
        yield


MUTATIONS = (
    register_control(
        Control(
            "gorl-weights-inverted",
            "mutation",
            "GORL's per-sample constraint weights w_i replaced by 1 - w_i",
            gorl_weights_inverted,
        )
    ),
    register_control(
        Control(
            "wsrl-uniform-warmup",
            "mutation",
            "WSRL's warm-up rollouts from the uniform policy instead of the offline policy",
            wsrl_uniform_warmup,
        )
    ),
)
