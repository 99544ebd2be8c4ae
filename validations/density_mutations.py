"""Known-bug mutations of the density-feature occupancy recursion
(``algorithms/offline/density_features.py``, seed row 001#28), held against
``density-occupancy-no-blow-up``; appended to ``mutations.MUTATIONS``:

* ``density-projection-dropped``: the projection onto span mu_h replaced by the identity (the
  unstructured recursion, whose error compounds in h);
* ``density-ratio-unnormalised``: the weight d_hat_h(s) pi_h(a|s) without the division by the data
  distribution nu_h(s, a) (the recursion is then wrong even with infinite data).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def density_projection_dropped(claim=None) -> Iterator[None]:
    from theorylab.algorithms.offline import density_features

    def identity(mu_h):
        return np.eye(mu_h.shape[1])  # the bug: no projection onto span mu_h

    with _patched(density_features, "span_projector", identity):
        yield


@contextlib.contextmanager
def density_ratio_unnormalised(claim=None) -> Iterator[None]:
    from theorylab.algorithms.offline import density_features

    def unnormalised(d_s, pi_sa, nu_sa):
        return d_s * pi_sa  # the bug: nu_h(s, a) not divided out

    with _patched(density_features, "importance_weights", unnormalised):
        yield


MUTATIONS = (
    register_control(
        Control(
            "density-projection-dropped",
            "mutation",
            "density-feature recursion without the projection onto span mu_h (mu = I)",
            density_projection_dropped,
        )
    ),
    register_control(
        Control(
            "density-ratio-unnormalised",
            "mutation",
            "density-feature recursion weighting by d_hat_h pi_h without dividing by nu_h",
            density_ratio_unnormalised,
        )
    ),
)
