"""Known-bug mutations of the tier-B policy-optimisation rows of issue 27 (the controls of the
claims in the klpoB block of ``validations/claims/policy_optimization.py``); appended to
``mutations.MUTATIONS``:

* ``rpg-urkl-grpo-k3``: RPG's unnormalised reverse-KL surrogate with GRPO's form of the k3 term,
  ``beta k3(pi_theta, ref)`` averaged over pi_old samples without the importance weight (the
  mismatch Zhang et al. 2025 identify): on-policy its gradient is the forward KL's
  (``theorylab.algorithms.policy_optimization.rpg.surrogate_coefficients``);
* ``max-at-k-plugin-weights``: the max@k estimator's order weights taken from the empirical
  distribution, ``(i/n)^k - ((i-1)/n)^k`` (the best of k draws with replacement from the n
  samples: the plug-in estimator) instead of ``C(i-1, k-1) / C(n, k)``
  (``theorylab.algorithms.policy_optimization.max_at_k.order_weights``);
* ``rlvr-exploration-mass``: the RLVR mirror-descent step mixes 1e-3 of the uniform distribution
  over all responses into every iterate (an exploration floor the analysed update does not have;
  ``theorylab.algorithms.policy_optimization.rlvr_support.md_step``);
* ``boundary-tabular-features``: the reasoning-boundary testbed's shared answer features
  replaced by tabular ones (one parameter per (prompt, answer): no interference to measure;
  ``theorylab.algorithms.policy_optimization.reasoning_boundary.features``);
* ``forward-kl-direction-swapped``: the forward-KL optimum computed for KL(pi || ref) (the
  direction swapped: the reverse tilt returned;
  ``theorylab.algorithms.planning.divergence_optima.forward_kl_optimum``);
* ``mirror-drift-sign-flipped``: mirror learning's KL drift added with the wrong sign (a bonus
  for moving away from pi_k: negative, so not a drift;
  ``theorylab.algorithms.policy_optimization.mirror_learning.DRIFTS["kl"]``).
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


@contextlib.contextmanager
def max_at_k_plugin_weights(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import max_at_k

    def plugin(n, k):
        i = np.arange(1, n + 1)
        return (i / n) ** k - ((i - 1) / n) ** k  # the bug: draws with replacement

    with _patched(max_at_k, "order_weights", plugin):
        yield


@contextlib.contextmanager
def rlvr_exploration_mass(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import rlvr_support

    original = rlvr_support.md_step

    def exploring(logp, base, reward, eta, beta):
        p = np.exp(original(logp, base, reward, eta, beta))
        return np.log(0.999 * p + 1e-3 / p.shape[1])  # the bug: mass outside supp(pi_0)

    with _patched(rlvr_support, "md_step", exploring):
        yield


@contextlib.contextmanager
def boundary_tabular_features(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import reasoning_boundary

    original = reasoning_boundary.features

    def tabular(P, A, shared):
        return original(P, A, False)  # the bug: the sharing dropped

    with _patched(reasoning_boundary, "features", tabular):
        yield


@contextlib.contextmanager
def forward_kl_direction_swapped(claim=None) -> Iterator[None]:
    from theorylab.algorithms.planning import divergence_optima

    with _patched(divergence_optima, "forward_kl_optimum", divergence_optima.reverse_kl_optimum):
        yield


@contextlib.contextmanager
def mirror_drift_sign_flipped(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import mirror_learning

    original = mirror_learning.DRIFTS["kl"]
    mirror_learning.DRIFTS["kl"] = lambda r, A: -original(r, A)  # the bug: the sign
    try:
        yield
    finally:
        mirror_learning.DRIFTS["kl"] = original


MUTATIONS = (
    register_control(
        Control(
            "rpg-urkl-grpo-k3",
            "mutation",
            "RPG's k3 (unnormalised reverse KL) term without its importance weight (GRPO's form)",
            rpg_urkl_grpo_k3,
        )
    ),
    register_control(
        Control(
            "max-at-k-plugin-weights",
            "mutation",
            "the max@k estimator with plug-in weights (best of k draws with replacement)",
            max_at_k_plugin_weights,
        )
    ),
    register_control(
        Control(
            "rlvr-exploration-mass",
            "mutation",
            "the RLVR mirror-descent step mixes 1e-3 uniform mass into every iterate",
            rlvr_exploration_mass,
        )
    ),
    register_control(
        Control(
            "boundary-tabular-features",
            "mutation",
            "the answer bandit's shared features replaced by tabular ones (no interference)",
            boundary_tabular_features,
        )
    ),
    register_control(
        Control(
            "forward-kl-direction-swapped",
            "mutation",
            "the forward-KL optimum solved for KL(pi || ref) (the reverse tilt)",
            forward_kl_direction_swapped,
        )
    ),
    register_control(
        Control(
            "mirror-drift-sign-flipped",
            "mutation",
            "mirror learning's KL drift with its sign flipped (a bonus, not a penalty)",
            mirror_drift_sign_flipped,
        )
    ),
)
