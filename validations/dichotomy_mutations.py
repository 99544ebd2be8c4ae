"""Known-bug mutations of the RLHF / DPO dichotomy (seed 000#66) and IPL (000#21), the controls
of the claims in ``validations/claims/preference_dichotomy.py`` and ``preference_ipl.py``;
appended to ``mutations.MUTATIONS``:

* ``rlhf-kl-anchor-dropped``: RLHF's policy step maximises E_pi r_hat with the KL anchor to the
  reference cut by 1000 (``dichotomy.best_in_class`` at beta / 1000): it no longer reaches the
  class optimum of the regularised objective V*;
* ``rlhf-sparsity-dropped``: RLHF's reward model loses its sparse class (``dichotomy.
  REWARD_PENALTY = "l2"``: a ridge MLE on every feature, the dense class DPO's log-linear policy
  class implies), so its sample advantage over DPO must vanish;
* ``ipl-bellman-term-dropped`` (seed 000#21, ``validations/claims/preference_ipl.py``): IPL's
  implied reward r_Q = Q - gamma E[V_Q] loses its gamma E[V_Q] term (``ipl.bellman_discount``
  returns 0), so the fitted Q is the reward itself and its softmax the myopic policy.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def rlhf_kl_anchor_dropped(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import dichotomy

    original = dichotomy.best_in_class

    def unanchored(r, ref, G, beta):
        return original(r, ref, G, beta / 1000.0)  # the bug: the KL anchor all but dropped

    with _patched(dichotomy, "best_in_class", unanchored):
        yield


@contextlib.contextmanager
def rlhf_sparsity_dropped(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import dichotomy

    with _patched(dichotomy, "REWARD_PENALTY", "l2"):  # the bug: the dense reward class
        yield


MUTATIONS = (
    register_control(
        Control(
            "rlhf-kl-anchor-dropped",
            "mutation",
            "RLHF's policy step with its KL anchor to the reference cut by 1000",
            rlhf_kl_anchor_dropped,
        )
    ),
    register_control(
        Control(
            "rlhf-sparsity-dropped",
            "mutation",
            "RLHF's reward model fitted in the dense (ridge) class instead of the sparse one",
            rlhf_sparsity_dropped,
        )
    ),
)


@contextlib.contextmanager
def ipl_bellman_term_dropped(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import ipl

    with _patched(ipl, "bellman_discount", lambda mdp: 0.0):  # the bug: r_Q = Q
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "ipl-bellman-term-dropped",
            "mutation",
            "IPL's implied reward without its gamma E[V] term (r_Q = Q, seed 000#21)",
            ipl_bellman_term_dropped,
        )
    ),
)
