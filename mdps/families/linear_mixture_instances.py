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


@register("icvar-linear-hypercube")
def icvar_linear_hypercube(
    m: int = 2, alpha: float = 0.25, gap: float = 0.02, H: int = 2, seed: int = 0
) -> LinearMixtureMDP:
    r"""The hypercube linear-mixture instance of the d-sweep (constructed here, [A]; the
    linear-bandit hypercube of Zhou, Gu, Szepesvari 2021's linear-mixture lower bound, Thm 5.6,
    with the gap read through the iterated CVaR at level alpha). d = 2m, A = 2^m.

    States 0 (start, reward 0), 1 (good, absorbing, reward 1), 2 (bad, absorbing, reward 0).
    Action a in {-1, +1}^m (index bit i set <=> a_i = +1). Basis kernel (i, +) at the start sends
    to bad with ``p0 - m gap a_i``, (i, -) with ``p0 + m gap a_i`` (else good), p0 = alpha / 2;
    theta_(i,+) = (1 + sigma_i) / (2m), theta_(i,-) = (1 - sigma_i) / (2m) for hidden signs
    sigma ~ U{-1, +1}^m (from ``seed``), so ``P(bad | a) = p0 - gap <sigma, a>``. Needs
    ``m gap < p0``: then P(bad | a) < alpha for every a and the iterated CVaR at the start is
    ``(H - 1) (1 - P(bad | a) / alpha)``: every wrong coordinate costs ``2 gap (H - 1) / alpha``
    (the 1/alpha of the CVaR), the same for every m and sigma (the fixed gap structure)."""
    m = require_int("icvar-linear-hypercube", "m", m, 1)
    H = require_int("icvar-linear-hypercube", "H", H, 2)
    seed = require_int("icvar-linear-hypercube", "seed", seed, 0)
    alpha, gap = float(alpha), float(gap)
    if not (np.isfinite(alpha) and 0.0 < alpha <= 1.0):
        raise InvalidMDPError(
            f"icvar-linear-hypercube: parameter alpha must be in (0, 1], got {alpha!r}"
        )
    if not (np.isfinite(gap) and 0.0 < gap and m * gap < alpha / 2):
        raise InvalidMDPError(
            f"icvar-linear-hypercube: parameter gap must satisfy 0 < m gap < alpha / 2 "
            f"(m = {m}, alpha = {alpha!r}), got gap={gap!r}"
        )
    if m > 10:
        raise InvalidMDPError(f"icvar-linear-hypercube: parameter m must be <= 10, got m={m}")
    A, p0 = 2**m, alpha / 2
    signs = 2.0 * ((np.arange(A)[:, None] >> np.arange(m)[None]) & 1) - 1.0  # (A, m): a_i
    sigma = np.random.default_rng([seed, 4830]).choice([-1.0, 1.0], size=m)  # (m,)
    basis = np.zeros((2 * m, 3, A, 3))  # (d, S, A, S'); rows (i, +) = 2i, (i, -) = 2i + 1
    basis[:, 1, :, 1] = 1.0
    basis[:, 2, :, 2] = 1.0
    for i in range(m):
        for k, sign in ((2 * i, -1.0), (2 * i + 1, 1.0)):
            bad = p0 + sign * m * gap * signs[:, i]  # (A,)
            basis[k, 0, :, 2], basis[k, 0, :, 1] = bad, 1.0 - bad
    theta = np.stack([(1 + sigma) / (2 * m), (1 - sigma) / (2 * m)], axis=1).ravel()  # (2m,)
    R = np.zeros((3, A))
    R[1] = 1.0
    mu0 = np.array([1.0, 0.0, 0.0])
    name = f"icvar-linear-hypercube:m={m},alpha={alpha!r},gap={gap!r},H={H},seed={seed}"
    return LinearMixtureMDP(basis, theta, R, mu0, horizon=H, name=name)
