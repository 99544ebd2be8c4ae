"""``linear-mixture``: random linear mixture MDPs (a simplex mixture of d random kernels).

Constructed here (no paper instance): ``d`` base kernels ``P_i(. | s, a) ~ Dirichlet(concentration
* 1_S)`` drawn independently for every (i, s, a), mixing weights ``theta ~ Dirichlet(1_d)``,
deterministic rewards ``R(s, a) ~ U[0, 1]``, start state 0, stationary (the setting of ICVaR-L,
Chen et al. ICLR 2024; theory.md 4.4). A small concentration makes next-state distributions
spread over few states, where the iterated-CVaR and risk-neutral optima tend to differ.
Reproducible from ``seed`` (numpy ``default_rng([seed, 48])``).
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.families.chain import require_int
from theorylab.mdps.linear_mixture import LinearMixtureMDP
from theorylab.mdps.registry import register


@register("linear-mixture")
def linear_mixture(
    S: int = 6, A: int = 2, d: int = 4, H: int = 3, seed: int = 0, concentration: float = 0.3
) -> LinearMixtureMDP:
    """A random simplex mixture of d Dirichlet kernels (module docstring)."""
    S = require_int("linear-mixture", "S", S, 2)
    A = require_int("linear-mixture", "A", A, 1)
    d = require_int("linear-mixture", "d", d, 1)
    H = require_int("linear-mixture", "H", H, 1)
    seed = require_int("linear-mixture", "seed", seed, 0)
    conc = float(concentration)
    if not (np.isfinite(conc) and conc > 0):
        raise InvalidMDPError(
            f"linear-mixture: parameter concentration must be positive, got {concentration!r}"
        )
    rng = np.random.default_rng([seed, 48])
    basis = rng.dirichlet(np.full(S, conc), size=(d, S, A))  # (d, S, A, S')
    theta = rng.dirichlet(np.ones(d))  # (d,)
    R = rng.uniform(0.0, 1.0, size=(S, A))
    mu0 = np.zeros(S)
    mu0[0] = 1.0
    name = f"linear-mixture:S={S},A={A},d={d},H={H},seed={seed},concentration={conc!r}"
    return LinearMixtureMDP(basis, theta, R, mu0, horizon=H, name=name)
