r"""Adversarial linear-Q MDP families (seed row 002-004#A1), registered by name.

``adversarial-linear``
    Fixed transitions and an oblivious Bernoulli loss sequence
    (:class:`theorylab.mdps.adversarial.AdversarialLinearMDP`). ``features=simplex``:
    ``phi(s, a) ~ U(simplex^{d-1})``; ``features=onehot``: ``phi(s, a) = e_{s*A + a}`` (d = S*A,
    the tabular special case; the name's d is ignored and printed as S*A);
    ``feature_concentration`` (default 1) draws the simplex rows from Dirichlet(that) instead
    (small values: nearly one-hot rows, a better-conditioned covariance). The d rows of each
    ``mu_h (d, S)`` are ``Dirichlet(concentration)`` distributions over S (a large concentration
    keeps every state reachable under every policy), the loss means ``m (H, d) ~ U[0, 1]``, and the
    start distribution is uniform over S. Stream ``default_rng(seed)``: phi (simplex features
    only), then mu, then m; the loss sequence itself is drawn from ``default_rng([seed, 3])``.
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.adversarial import AdversarialLinearMDP
from theorylab.mdps.families.chain import require_int
from theorylab.mdps.linear import one_hot_features
from theorylab.mdps.lowrank import random_simplex
from theorylab.mdps.registry import register

FEATURE_KINDS = ("simplex", "onehot")


@register("adversarial-linear")
def adversarial_linear(
    S: int = 4,
    A: int = 3,
    d: int = 4,
    H: int = 3,
    seed: int = 0,
    features: str = "simplex",
    concentration: float = 5.0,
    feature_concentration: float = 1.0,
) -> AdversarialLinearMDP:
    """Fixed linear transitions, oblivious Bernoulli losses l_k = phi theta_k (linear Q^pi)."""
    fam = "adversarial-linear"
    S, A, H = require_int(fam, "S", S, 1), require_int(fam, "A", A, 2), require_int(fam, "H", H, 1)
    if features not in FEATURE_KINDS:
        raise InvalidMDPError(
            f"{fam}: parameter features must be one of {FEATURE_KINDS}, got features={features!r}"
        )
    conc, fconc = float(concentration), float(feature_concentration)
    for key, value in (("concentration", conc), ("feature_concentration", fconc)):
        if not (value > 0 and np.isfinite(value)):
            raise InvalidMDPError(f"{fam}: parameter {key} must be > 0, got {key}={value!r}")
    rng = np.random.default_rng(seed)
    if features == "onehot":
        phi = one_hot_features(S, A)  # (S, A, S*A)
        d = S * A
    else:
        d = require_int(fam, "d", d, 1)
        phi = (
            random_simplex(rng, (S, A), d)
            if fconc == 1.0
            else rng.dirichlet(np.full(d, fconc), size=(S, A))
        )  # (S, A, d)
    mu = rng.dirichlet(np.full(S, conc), size=(H, d))  # (H, d, S)
    means = rng.uniform(size=(H, d))  # (H, d)
    name = f"{fam}:S={S},A={A},d={d},H={H},seed={seed},features={features}"
    if conc != 5.0:
        name += f",concentration={conc!r}"
    if fconc != 1.0 and features == "simplex":
        name += f",feature_concentration={fconc!r}"
    return AdversarialLinearMDP(
        phi, mu, np.full(S, 1.0 / S), means, horizon=H, seed=seed, name=name
    )
