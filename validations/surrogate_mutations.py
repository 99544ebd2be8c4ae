"""Known-bug mutations of the tier-B policy-optimisation rows of issue 27 (the controls of the
claims in the klpoB block of ``validations/claims/policy_optimization.py``); appended to
``mutations.MUTATIONS``:

* ``rpg-urkl-grpo-k3``: RPG's unnormalised reverse-KL surrogate with GRPO's form of the k3 term,
  ``beta k3(pi_theta, ref)`` averaged over pi_old samples without the importance weight (the
  mismatch Zhang et al. 2025 identify): on-policy its gradient is the forward KL's
  (``theorylab.algorithms.policy_optimization.rpg.surrogate_coefficients``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def rpg_urkl_grpo_k3(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import rpg

    original = rpg.surrogate_coefficients

    def grpo_k3(name, beta, logp, old_logp, ref_logp, reward):
        if name != "urkl":
            return original(name, beta, logp, old_logp, ref_logp, reward)
        w = np.exp(logp - old_logp)
        # the bug: grad of beta (ref/pi - 1 - log(ref/pi)) on pi_old samples, no weight w
        return -w * reward + beta * (1.0 - np.exp(ref_logp - logp))

    with _patched(rpg, "surrogate_coefficients", grpo_k3):
        yield


MUTATIONS = (
    register_control(
        Control(
            "rpg-urkl-grpo-k3",
            "mutation",
            "RPG's k3 (unnormalised reverse KL) term without its importance weight (GRPO's form)",
            rpg_urkl_grpo_k3,
        )
    ),
)
