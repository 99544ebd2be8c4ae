r"""A contextual comparison bandit whose worst context is rare: the instance of active context
selection (``algorithms/preference/active_contexts.py``, seed-catalogue-001.md#18).

Features live in d = 4 with the parameter in 1^perp (Zhu-Jordan-Jiao's identifiable set). With
u1, u2, u3 an orthonormal basis of 1^perp (the first three columns of
:func:`theorylab.algorithms.preference.mle.sum_zero_basis`, rebuilt here from the same QR) and
the A actions at the angles w_a = 2 pi a / A:

* common contexts s = 0..S-2: phi(s, a) = R (cos(w_a + s g) u1 + sin(w_a + s g) u2), with g
  the golden angle pi (3 - sqrt 5): a circle in the (u1, u2) plane (each context rotated, so
  their optima differ);
* the rare context s = S - 1: phi(S-1, a) = R_rare (cos w_a u3 + sin w_a u1), a smaller circle in
  the (u3, u1) plane -- the only context whose comparisons see u3.

theta* = norm (u1 + u2 + u3) / sqrt(3), B = 1, rho uniform. Every context has the same number of
actions on a circle, so the greedy error in each is an angle; the rare context alone informs the
u3 coordinate, so a learner that draws contexts from rho gives it 1/S of its comparisons while one
that picks contexts by uncertainty can give it most of them.

Registered as ``rare-context:S=8,A=64,R=1,R_rare=0.5,norm=0.8``
(``mdps/families/rare_context_instances.py``).
"""

from __future__ import annotations

import numpy as np

from theorylab.mdps.preference import ComparisonBandit, PreferenceError

GOLDEN = np.pi * (3.0 - np.sqrt(5.0))  # the golden angle, 2.39996 rad


def _sum_zero_frame() -> np.ndarray:
    """Orthonormal u1, u2, u3 of {x in R^4 : 1^T x = 0}: ``(3, 4)`` rows."""
    M = np.eye(4)[:, :3] - 0.25
    Q, _ = np.linalg.qr(M)
    return Q.T


def rare_context_bandit(
    S: int = 8, A: int = 64, R: float = 1.0, R_rare: float = 0.5, norm: float = 0.8
) -> ComparisonBandit:
    """S - 1 common contexts on (u1, u2) circles of radius R and one rare context on a (u3, u1)
    circle of radius R_rare; theta* = norm (u1 + u2 + u3) / sqrt(3), B = 1."""
    for key, v, lo in (("S", S, 2), ("A", A, 3)):
        if isinstance(v, bool) or int(v) != v or v < lo:
            raise PreferenceError(f"rare-context: {key} must be an integer >= {lo}, got {v!r}")
    for key, v in (("R", R), ("R_rare", R_rare), ("norm", norm)):
        if not (isinstance(v, int | float) and 0.0 < v <= 1.0):
            raise PreferenceError(f"rare-context: {key} must lie in (0, 1], got {v!r}")
    S, A = int(S), int(A)
    u1, u2, u3 = _sum_zero_frame()
    w = 2.0 * np.pi * np.arange(A) / A  # (A,)
    phi = np.empty((S, A, 4))
    for s in range(S - 1):
        ang = w + s * GOLDEN  # rotated by multiples of the golden angle: distinct optima
        phi[s] = R * (np.cos(ang)[:, None] * u1 + np.sin(ang)[:, None] * u2)
    phi[S - 1] = R_rare * (np.cos(w)[:, None] * u3 + np.sin(w)[:, None] * u1)
    theta = norm * (u1 + u2 + u3) / np.sqrt(3.0)
    return ComparisonBandit(phi, np.full(S, 1.0 / S), theta, 1.0, name="rare-context")
