"""Bait lock: a combination lock of length k behind an immediate bait, for the effective horizon.

Built for the effective-horizon rows (``seed-catalogue-000.md#4``, Laidlaw, Russell and Dragan):
an instance family whose effective horizon k* is exactly the lock length ``k`` at any horizon
``H >= k`` and any number of actions ``A``, so that k and H can be varied separately.

* S = k + 2 states: path states 0 .. k-1, ``open`` (state k) and ``off`` (state k + 1), both
  absorbing with zero reward; start state 0.
* at path state h the good action ``code[h]`` moves h -> h + 1 (h < k - 1); at path state k - 1
  it pays 1 and moves to ``open``. Every other action moves to ``off`` with reward 0, except the
  bait action ``(code[0] + 1) mod A`` at path state 0, which pays ``bait`` and moves to ``off``.
* optimal value 1 (open the lock); the bait is worth ``bait`` < 1.

Exact effective horizon (closed form, checked against the DP in
:mod:`theorylab.algorithms.planning.effective_horizon`): with Q^1 = Q^{pi_rand} and
Q^{j+1} = T Q^j, the good first action has Q^j_0 = A^-(k-j) for j <= k and the bait has
Q^j_0 = bait; every later decision is already right at j = 1 (good action > 0 = wrong actions).
For 1/A < bait < 1 the greedy policy is first optimal at j = k: k* = k, whatever H >= k.
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.families.chain import combination_code, family_mdp, require_int
from theorylab.mdps.registry import register
from theorylab.mdps.tabular import TabularMDP


@register("bait-lock")
def bait_lock(
    H: int = 8,
    A: int = 2,
    k: int = 3,
    bait: float = 0.75,
    code_seed: int = -1,
    reward_model: str = "deterministic",
) -> TabularMDP:
    """A length-``k`` combination lock behind a first-step bait worth ``bait`` (see module)."""
    H = require_int("bait-lock", "H", H, 1)
    A = require_int("bait-lock", "A", A, 2)
    k = require_int("bait-lock", "k", k, 1)
    if k > H:
        raise InvalidMDPError(f"bait-lock: parameter k must be <= H={H}, got k={k}")
    try:
        b = float(bait)
    except (TypeError, ValueError):
        b = float("nan")
    if not (0.0 <= b < 1.0):
        raise InvalidMDPError(f"bait-lock: parameter bait must lie in [0, 1), got bait={bait!r}")
    if (
        isinstance(code_seed, bool)
        or not isinstance(code_seed, (int, np.integer))
        or code_seed < -1
    ):
        raise InvalidMDPError(
            "bait-lock: parameter code_seed must be -1 (action 0 everywhere) or a seed >= 0, "
            f"got code_seed={code_seed!r}"
        )
    code = combination_code(k, A, int(code_seed))  # (k,)
    S, opened, off = k + 2, k, k + 1
    P = np.zeros((S, A, S))  # (S, A, S)
    R = np.zeros((S, A))  # (S, A)
    P[:, :, off] = 1.0
    P[opened, :, off], P[opened, :, opened] = 0.0, 1.0
    for h in range(k):
        P[h, code[h], off] = 0.0
        P[h, code[h], h + 1 if h < k - 1 else opened] = 1.0
    R[k - 1, code[k - 1]] = 1.0
    R[0, (code[0] + 1) % A] = b
    names = [f"path{h}" for h in range(k)] + ["open", "off"]
    return family_mdp(
        "bait-lock",
        P,
        R,
        H=H,
        gamma=0.0,
        reward_model=reward_model,
        sparse=False,
        name=f"bait-lock:H={H},A={A},k={k},bait={b!r},code_seed={int(code_seed)}",
        state_names=names,
    )
