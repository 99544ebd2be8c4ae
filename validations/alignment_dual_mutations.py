"""Known-bug mutations of the constrained-alignment duals (issue 29), appended to
``mutations.MUTATIONS``:

* ``mocan-dual-without-beta``: MoCAN's dual derivatives computed with the Gibbs policy of
  ``r + lambda g`` at temperature 1 instead of beta (beta dropped from the closed-form dual
  ``beta log E_ref exp((r + lambda g) / beta)``): its lambda* is the multiplier of another
  problem -- the control of ``mocan-one-shot-dual``.
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
