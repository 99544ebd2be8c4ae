"""Known-bug mutations of WSRL, GORL and H2O (issue 31, offline31b), the controls of the claims
in ``validations/claims/offline_wsrl.py``, ``offline_gorl.py`` and ``offline_h2o.py``; appended
to ``mutations.MUTATIONS``:

* ``wsrl-uniform-warmup``: WSRL's warm-up rollouts drawn from the uniform policy instead of the
  pre-trained offline policy;
* ``gorl-weights-inverted``: GORL's per-sample constraint weights w_i replaced by 1 - w_i;
* ``h2o-gap-ignored``: H2O's dynamics gap set to 0 and its ratio weights to 1 (naive mixing).
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


@contextlib.contextmanager
def h2o_gap_ignored(claim=None) -> Iterator[None]:
    """H2O without its dynamics awareness: u = 0 (no penalty on simulated pairs), w = 1."""
    import numpy as np

    from theorylab.algorithms.offline import h2o

    def zero_gap(n, P_hat, P_sim):
        return np.zeros(n.shape)

    def unit_ratio(n, P_hat, P_sim, w_max):
        return np.ones(P_hat.shape)

    with (
        _patched(h2o, "dynamics_gap", zero_gap),
        _patched(h2o, "action_gap", zero_gap),
        _patched(h2o, "ratio_weights", unit_ratio),
    ):
        yield


MUTATIONS = (
    register_control(
        Control(
            "h2o-gap-ignored",
            "mutation",
            "H2O's dynamics gap ignored (u = 0, ratio weights 1): real and simulated data mixed",
            h2o_gap_ignored,
        )
    ),
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
