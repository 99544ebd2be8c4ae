"""Negative control of the multi-batch claim (issue 31; ``validations/claims/multi_batch.py``),
appended to ``mutations.MUTATIONS``:

* ``multi-batch-frozen-frontier``: adaptivity removed -- every batch is chosen without the
  previous batches' answers (``theorylab.algorithms.linear.multi_batch.next_frontier`` keeps the
  frontier at chain[0]), so K batches know no more of the chain than one batch does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def multi_batch_frozen_frontier(claim=None) -> Iterator[None]:
    from theorylab.algorithms.linear import multi_batch

    with _patched(multi_batch, "next_frontier", lambda stage, state, successor, H: (stage, state)):
        yield


MUTATIONS = (
    register_control(
        Control(
            "multi-batch-frozen-frontier",
            "mutation",
            "K batches without adaptivity: each batch ignores the previous answers (the frontier "
            "stays at the start state)",
            multi_batch_frozen_frontier,
        )
    ),
)
