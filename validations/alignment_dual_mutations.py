"""Known-bug mutations of the constrained-alignment duals (issue 29), appended to
``mutations.MUTATIONS``:

* ``mocan-dual-without-beta``: MoCAN's dual derivatives computed with the Gibbs policy of
  ``r + lambda g`` at temperature 1 instead of beta (beta dropped from the closed-form dual
  ``beta log E_ref exp((r + lambda g) / beta)``): its lambda* is the multiplier of another
  problem -- the control of ``mocan-one-shot-dual``;
* ``general-utility-frozen-reward``: the general-utility PG's pseudo-reward ``grad F(lambda)``
  computed once, at the first occupancy, and kept: PG on a fixed linear reward, which stops at a
  vertex, not at F* -- the control of ``general-utility-pg-global-optimum``;
* ``vrpg-same-sample-reward``: N-VR-PG's pseudo-reward grad F(lambda_t) taken from the
  occupancy estimate that already holds tau_t, and used in d_t on tau_t itself (not lagged): the
  correction term is correlated with its own reward, the recursion accumulates the bias, and the
  gap stalls or grows -- the control of ``nvr-pg-global-rate``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
from scipy.special import softmax

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def mocan_dual_without_beta(claim=None) -> Iterator[None]:
    from theorylab.algorithms.dual import safety_dualization

    def without_beta(bandit, lam):
        pi = softmax(np.log(bandit.ref) + bandit.reward + lam * bandit.safety, axis=-1)  # bug
        mean = np.einsum("sa,sa->s", pi, bandit.safety)
        var = np.einsum("sa,sa->s", pi, bandit.safety**2) - mean**2
        return float(bandit.rho @ mean) - bandit.threshold, float(bandit.rho @ var)

    with _patched(safety_dualization, "dual_derivatives", without_beta):
        yield


MUTATIONS = (
    register_control(
        Control(
            "mocan-dual-without-beta",
            "mutation",
            "MoCAN's dual derivatives with beta dropped (the Gibbs policy at temperature 1)",
            mocan_dual_without_beta,
        )
    ),
)


@contextlib.contextmanager
def general_utility_frozen_reward(claim=None) -> Iterator[None]:
    from theorylab.algorithms.dual import general_utilities

    original = general_utilities.pseudo_reward
    frozen: dict[int, np.ndarray] = {}

    def first_only(F, lam):
        # the bug: the chain rule's reward grad F(lambda) taken once, at the first occupancy
        return frozen.setdefault(id(F), original(F, lam))

    with _patched(general_utilities, "pseudo_reward", first_only):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "general-utility-frozen-reward",
            "mutation",
            "general-utility PG with its pseudo-reward grad F frozen at the first occupancy",
            general_utility_frozen_reward,
        )
    ),
)


@contextlib.contextmanager
def vrpg_same_sample_reward(claim=None) -> Iterator[None]:
    from theorylab.algorithms.dual import general_utilities_vr

    with _patched(general_utilities_vr, "LAGGED", False):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "vrpg-same-sample-reward",
            "mutation",
            "N-VR-PG with the pseudo-reward of d_t computed from the same trajectory (not lagged)",
            vrpg_same_sample_reward,
        )
    ),
)
