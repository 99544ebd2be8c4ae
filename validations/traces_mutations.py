"""Negative controls of the off-policy trace and value-mapping claims (seed rows 001#6, 001#5;
``validations/claims/off_policy_traces.py``, ``validations/claims/value_mapping.py``), appended to
``mutations.MUTATIONS``:

* ``rbis-without-is``: RBIS's trace written as lambda^t alone (the IS ratios dropped: Q(lambda)
  of Harutyunyan et al. 2016), in ``trajectory_traces.trace_step``; M is no longer a
  gamma-contraction in the infinity norm;
* ``rbis-without-recency-bound``: RBIS's recency bound lambda^t removed (``recency_bound`` returns
  infinity), so beta_t = rho_t beta_{t-1}: untruncated IS whatever lambda;
* ``value-map-folded-inverse``: every mapping's inverse returns |f^{-1}(y)| (a map that is not
  injective on the values a channel takes: the paper's condition broken), in
  ``value_mapping.MAPPINGS``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def rbis_without_is(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import trajectory_traces as tt

    original = tt.trace_step

    def no_is(trace, t, z, rho, lam):
        if trace != "rbis":
            return original(trace, t, z, rho, lam)
        beta = lam**t * (0.0 * rho + 1.0)  # the bug: the IS ratios dropped
        return beta, beta

    with _patched(tt, "trace_step", no_is):
        yield


@contextlib.contextmanager
def rbis_without_recency_bound(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import trajectory_traces as tt

    with _patched(tt, "recency_bound", lambda lam: float("inf")):  # the bug: no lambda^t cap
        yield


@contextlib.contextmanager
def value_map_folded_inverse(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.policy_optimization import value_mapping as vm

    folded = {
        name: (f, lambda y, inv=inv: np.abs(inv(y)))  # the bug: f^{-1} folded onto [0, inf)
        for name, (f, inv) in vm.MAPPINGS.items()
    }
    with _patched(vm, "MAPPINGS", folded):
        yield


MUTATIONS = (
    register_control(
        Control(
            "rbis-without-is",
            "mutation",
            "RBIS's trace coefficient lambda^t with the importance-sampling ratios dropped",
            rbis_without_is,
        )
    ),
    register_control(
        Control(
            "rbis-without-recency-bound",
            "mutation",
            "RBIS without its recency bound: beta_t = rho_t beta_{t-1} (untruncated IS)",
            rbis_without_recency_bound,
        )
    ),
    register_control(
        Control(
            "value-map-folded-inverse",
            "mutation",
            "every value mapping's inverse folded to |f^{-1}(y)| (not injective)",
            value_map_folded_inverse,
        )
    ),
)
