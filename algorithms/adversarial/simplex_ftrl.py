r"""Follow-the-regularised-leader on the probability simplex, solved exactly, one state at a time.

Given cumulative loss estimates ``L (..., A)`` (any real numbers: loss estimators may be
arbitrarily negative) and a learning rate ``eta > 0``:

* **log-barrier** (Dai, Luo, Wei & Zimmert 2023, algorithm 1; seed row 002-004#A1)::

      p = argmin_{p in simplex} <p, L> + (1/eta) sum_a log(1 / p_a).

  Stationarity gives ``p_a = 1 / (eta (L_a + lambda))`` for the multiplier ``lambda >
  -min_a L_a`` with ``f(lambda) = sum_a 1 / (eta (L_a + lambda)) - 1 = 0``. f is strictly
  decreasing and convex on that interval, and ``f(-min L + 1/eta) >= 0`` (the minimising action
  alone contributes 1), so Newton's method started there increases monotonically to the root
  (no step overshoots a convex decreasing function's root from the left). Every p_a is > 0.
* **negative entropy** (exponential weights)::

      p = argmin_{p in simplex} <p, L> + (1/eta) sum_a p_a log p_a = softmax(-eta L).

Both are invariant to adding a per-state constant to L (the simplex constraint absorbs it;
checked in ``tests/test_adversarial_linear.py``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import softmax

NEWTON_TOL = 1e-13
"""Newton stops when ``|sum_a p_a - 1| <= NEWTON_TOL`` at every state."""
NEWTON_MAX_ITERATIONS = 200


def log_barrier_ftrl(L: np.ndarray, eta: float) -> np.ndarray:
    """``p (..., A)``: the log-barrier FTRL iterate of cumulative losses ``L (..., A)``."""
    L = np.asarray(L, dtype=np.float64)
    if not eta > 0:
        raise ValueError(f"log-barrier FTRL: eta must be > 0, got eta={eta!r}")
    if not np.all(np.isfinite(L)):
        raise ValueError("log-barrier FTRL: the cumulative losses must be finite")
    shifted = L - L.min(axis=-1, keepdims=True)  # (..., A) >= 0; the iterate is shift-invariant
    lam = np.full(L.shape[:-1] + (1,), 1.0 / eta)  # f(lam) >= 0 here
    for _ in range(NEWTON_MAX_ITERATIONS):
        inv = 1.0 / (eta * (shifted + lam))  # (..., A)  p at lam
        f = inv.sum(axis=-1, keepdims=True) - 1.0
        if np.all(np.abs(f) <= NEWTON_TOL):
            break
        df = -(eta * inv * inv).sum(axis=-1, keepdims=True)  # f'(lam) < 0
        lam = lam - f / df
    else:
        raise RuntimeError(
            f"log-barrier FTRL: Newton did not converge in {NEWTON_MAX_ITERATIONS} steps "
            f"(max |sum p - 1| = {np.abs(f).max():.2e})"
        )
    p = 1.0 / (eta * (shifted + lam))
    return p / p.sum(axis=-1, keepdims=True)  # the last 1e-13 of round-off


def entropy_ftrl(L: np.ndarray, eta: float) -> np.ndarray:
    """``p (..., A) = softmax(-eta L)``: the negative-entropy FTRL iterate (exponential weights)."""
    if not eta > 0:
        raise ValueError(f"entropy FTRL: eta must be > 0, got eta={eta!r}")
    return softmax(-eta * np.asarray(L, dtype=np.float64), axis=-1)
