"""Known-bug mutations of PAMC (``algorithms/offline/pamc.py``, seed row 001#32), held against
``pamc-completion-phase-transition``; appended to ``mutations.MUTATIONS``:

* ``pamc-conformal-uncorrected``: the plain empirical (1 - alpha)-quantile of the calibration
  scores (``np.quantile``, interpolated) instead of the ``ceil((n + 1)(1 - alpha))``-th order
  statistic: coverage falls below 1 - alpha (about 0.87 at n = 24, alpha = 0.1);
* ``pamc-rank-misspecified``: ALS at rank r - 1 (at least 1): a rank-r matrix is never recovered.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def pamc_conformal_uncorrected(claim=None) -> Iterator[None]:
    from theorylab.algorithms.offline import pamc

    def uncorrected(scores, alpha):
        return float(np.quantile(np.asarray(scores, dtype=float), 1.0 - alpha))  # the bug

    with _patched(pamc, "conformal_quantile", uncorrected):
        yield


@contextlib.contextmanager
def pamc_rank_misspecified(claim=None) -> Iterator[None]:
    from theorylab.algorithms.offline import pamc

    original = pamc.complete_als

    def lower_rank(Y, weights, rank, **kwargs):
        return original(Y, weights, max(1, rank - 1), **kwargs)  # the bug: one rank short

    with _patched(pamc, "complete_als", lower_rank):
        yield


MUTATIONS = (
    register_control(
        Control(
            "pamc-conformal-uncorrected",
            "mutation",
            "PAMC's conformal radius as the plain (1 - alpha)-quantile (no finite-sample "
            "correction)",
            pamc_conformal_uncorrected,
        )
    ),
    register_control(
        Control(
            "pamc-rank-misspecified",
            "mutation",
            "PAMC's ALS completion at rank r - 1 (the rank misspecified)",
            pamc_rank_misspecified,
        )
    ),
)
