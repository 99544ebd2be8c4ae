"""Known-bug mutation of the C-PSRL row of issue 31 (the control of the claim
``c-psrl-known-edges`` in ``validations/claims/causal_psrl.py``); appended to
``mutations.MUTATIONS``:

* ``c-psrl-ignore-known-edges``: the candidate parent sets ignore the prior graph G_0 (every
  Z-subset stays a candidate whatever ``known_edges`` says), so the known edges change nothing:
  the posterior no longer matches the brute force restricted to G_0, and every known-edge level
  samples the same models with the same seeds (no drop in Bayesian regret).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def c_psrl_ignore_known_edges(claim=None) -> Iterator[None]:
    from theorylab.algorithms.online import c_psrl

    original = c_psrl.candidate_parent_sets

    def without_prior(n, Z, known):
        return original(n, Z, ())  # the bug: G_0 is dropped

    with _patched(c_psrl, "candidate_parent_sets", without_prior):
        yield


MUTATIONS = (
    register_control(
        Control(
            "c-psrl-ignore-known-edges",
            "mutation",
            "C-PSRL's candidate parent sets ignore the known edges of the prior graph",
            c_psrl_ignore_known_edges,
        )
    ),
)
