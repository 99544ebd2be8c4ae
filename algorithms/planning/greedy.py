"""The greedy policy of a Q-function, with ties decided independently of floating-point noise."""

from __future__ import annotations

import numpy as np

TIE_RTOL = 1e-12  # actions within this relative distance of the max count as maximisers


def greedy_actions(Q: np.ndarray) -> np.ndarray:
    """``argmax_a Q[..., a]``: the smallest action whose value is within round-off of the max.

    Q: ``(..., A)``. Exact ties are common (symmetric MDPs, capped values); the dense (BLAS) and
    CSR products can round a tied entry one ulp apart, so an exact argmax would make the optimal
    policy depend on how P is stored. Returns ``(...)`` int64.
    """
    best = Q.max(axis=-1, keepdims=True)
    return np.argmax(Q >= best - TIE_RTOL * (1.0 + np.abs(best)), axis=-1)
