r"""Random cascading MDPs (seed row 001#13), registered by name.

``cascading``
    :class:`theorylab.mdps.cascading.CascadingMDP` with S states, N items, lists of m items and
    horizon H. Stream ``default_rng(seed)``: the attraction probabilities ``q (S, N) ~ U[q_low,
    q_high]``, the click rewards ``r (S, N) ~ U[0, 1]``, then the transition rows ``P(. | s, a)``
    for a in items and the no-click item, each ``Dirichlet(concentration)`` over S; the start
    distribution is uniform.
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.cascading import CascadingMDP
from theorylab.mdps.families.chain import require_int
from theorylab.mdps.registry import register


@register("cascading")
def cascading(
    S: int = 3,
    N: int = 5,
    m: int = 2,
    H: int = 3,
    seed: int = 0,
    q_low: float = 0.05,
    q_high: float = 0.6,
    concentration: float = 1.0,
) -> CascadingMDP:
    """Random attraction probabilities, rewards and transitions (lists of m out of N items)."""
    fam = "cascading"
    S, N, H = require_int(fam, "S", S, 1), require_int(fam, "N", N, 1), require_int(fam, "H", H, 1)
    m = require_int(fam, "m", m, 1)
    if m > N:
        raise InvalidMDPError(f"{fam}: parameter m must be <= N = {N}, got m={m}")
    lo, hi, conc = float(q_low), float(q_high), float(concentration)
    if not (0.0 <= lo <= hi <= 1.0):
        raise InvalidMDPError(
            f"{fam}: parameters q_low, q_high must satisfy 0 <= q_low <= q_high <= 1, got "
            f"q_low={q_low!r}, q_high={q_high!r}"
        )
    if not (conc > 0 and np.isfinite(conc)):
        raise InvalidMDPError(f"{fam}: parameter concentration must be > 0, got {conc!r}")
    rng = np.random.default_rng(seed)
    q = rng.uniform(lo, hi, size=(S, N))  # (S, N)
    r = rng.uniform(size=(S, N))  # (S, N)
    P = rng.dirichlet(np.full(S, conc), size=(S, N + 1))  # (S, N + 1, S)
    name = f"{fam}:S={S},N={N},m={m},H={H},seed={seed}"
    if (lo, hi, conc) != (0.05, 0.6, 1.0):
        name += f",q_low={lo!r},q_high={hi!r},concentration={conc!r}"
    return CascadingMDP(q, r, P, np.full(S, 1.0 / S), m=m, horizon=H, name=name)
