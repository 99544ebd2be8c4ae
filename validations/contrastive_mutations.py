"""Known-bug mutation of Contrastive UCB (000#12; the control of
``contrastive-ucb-recovers-subspace`` in ``validations/claims/representation.py``); appended to
``mutations.MUTATIONS``:

* ``contrastive-negatives-from-positives``: the negatives of the contrastive loss drawn from the
  positive law at the same (s, a) (the empirical next-state distribution of the data so far)
  instead of the fixed uniform law P^- (``contrastive_ucb.sample_negatives``). The population
  minimiser is then f = 1 everywhere: the loss says nothing about phi*, and the learned span stays
  where the initialisation put it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def contrastive_negatives_from_positives(claim=None) -> Iterator[None]:
    from theorylab.algorithms.online import contrastive_ucb

    def from_positives(new, counts, n_negatives, rng):
        n = new.sum(axis=-1).astype(np.int64) * n_negatives  # (..., SA)
        N = counts.sum(axis=-1, keepdims=True)  # (..., SA, 1)
        law = np.where(N > 0, counts / np.maximum(N, 1.0), 1.0 / counts.shape[-1])
        return rng.multinomial(n, law).astype(np.float64)  # the bug: P^- = P_hat(.|s, a)

    with _patched(contrastive_ucb, "sample_negatives", from_positives):
        yield


MUTATIONS = (
    register_control(
        Control(
            "contrastive-negatives-from-positives",
            "mutation",
            "Contrastive UCB's negatives drawn from the positive law at (s, a), not uniform",
            contrastive_negatives_from_positives,
        )
    ),
)
