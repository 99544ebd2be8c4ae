r"""The flow constraint of the occupancy polytope, discounted or finite horizon, as one matrix.

Every regularised problem of this package (Sikchi et al., "Dual RL", ICLR 2024, section 4;
theory-preference-dual-llm.md 6.2) is stated over the occupancy polytope ``{d >= 0 : M^T d = b}``
of the planning LP (:mod:`theorylab.algorithms.planning.lp`, AJKS section 1.3.4), with one
multiplier V per flow row and Bellman residual ``delta_V = r - M V``:

* discounted: ``M = E - gamma P`` ``(S*A, S)``, ``b = (1 - gamma) mu``, ``d (S, A)`` sums to 1,
  ``V (S,)``, ``delta_V(s, a) = r(s, a) + gamma (P V)(s, a) - V(s)``;
* finite horizon H (stages h = 0..H-1, P_h and r_h may depend on h): ``M`` the block-bidiagonal
  ``(H*S*A, H*S)`` matrix of :func:`~theorylab.algorithms.planning.lp.finite_horizon_lp_matrix`,
  ``b = (mu, 0, ..., 0)``, ``d (H, S, A)`` with each stage summing to 1 (``d_h(s, a) =
  Pr(s_h = s, a_h = a)``), ``V (H+1, S)`` with ``V_H = 0`` and
  ``delta_V(h, s, a) = r_h(s, a) + (P_h V_{h+1})(s, a) - V_h(s)``.

The finite-horizon regularised problem regularises every stage towards its own data
distribution d^O_h, ``sum_h D_f(d_h || d^O_h)`` (= ``D_f`` of the stacked arrays), which is how the
stage-wise occupancy LP decomposes; its alpha -> 0 limit is the finite-horizon LP, whose value is
backward induction's ``V*_0(mu)``. Which one a model gets follows
:func:`~theorylab.algorithms.planning.lp.lp_solve`: finite horizon when the model has a horizon and
no ``gamma`` is passed, discounted otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from theorylab.algorithms.planning.lp import (
    _discount,
    _horizon,
    _weights,
    discounted_lp_matrix,
    finite_horizon_lp_matrix,
)


@dataclass(frozen=True)
class Flow:
    """``{d >= 0 : M^T d = b}`` and its multipliers for one model and objective.

    M ``(n, m)`` CSR (n = S*A or H*S*A pairs, m = S or H*S multipliers), b ``(m,)``, r ``(n,)``
    the rewards in M's row order; gamma (discounted) or horizon (finite horizon) -- exactly one is
    set; mu ``(S,)``.
    """

    M: sp.csr_array
    b: np.ndarray
    r: np.ndarray
    S: int
    A: int
    mu: np.ndarray
    gamma: float | None
    horizon: int | None

    @property
    def finite(self) -> bool:
        return self.horizon is not None

    @property
    def d_shape(self) -> tuple[int, ...]:
        """Shape of an occupancy: ``(S, A)`` or ``(H, S, A)``."""
        return (self.horizon, self.S, self.A) if self.finite else (self.S, self.A)

    def values(self, x: np.ndarray) -> np.ndarray:
        """The multipliers x ``(m,)`` as V: ``(S,)``, or ``(H+1, S)`` with ``V_H = 0``."""
        x = np.asarray(x, dtype=np.float64)
        if not self.finite:
            return x.copy()
        return np.vstack([x.reshape(self.horizon, self.S), np.zeros((1, self.S))])

    def multipliers(self, V: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`values`: V ``(S,)``, ``(H, S)`` or ``(H+1, S)`` -> x ``(m,)``."""
        V = np.asarray(V, dtype=np.float64)
        if not self.finite:
            if V.shape != (self.S,):
                raise ValueError(f"V must have shape ({self.S},), got {V.shape}")
            return V
        if V.shape not in ((self.horizon, self.S), (self.horizon + 1, self.S)):
            raise ValueError(
                f"V must have shape ({self.horizon} or {self.horizon + 1}, {self.S}), got {V.shape}"
            )
        return V[: self.horizon].ravel()

    def bellman_residual(self, V: np.ndarray) -> np.ndarray:
        """``delta_V = r - M V`` in the occupancy's shape (module docstring)."""
        return (self.r - self.M @ self.multipliers(V)).reshape(self.d_shape)

    def residual(self, occupancy: np.ndarray) -> np.ndarray:
        """``M^T d - b`` ``(m,)``: zero exactly on the flow polytope."""
        d = np.asarray(occupancy, dtype=np.float64)
        if d.shape != self.d_shape:
            raise ValueError(f"occupancy must have shape {self.d_shape}, got {d.shape}")
        return self.M.T @ d.ravel() - self.b

    def start(self) -> np.ndarray:
        """Multipliers x ``(m,)`` that bound V* from above, so every ``delta <= 0`` there (and
        exp(delta / alpha) cannot overflow): ``max r / (1 - gamma)`` discounted, ``(H - h) max r``
        at stage h finite horizon."""
        r_max = float(self.r.max()) if self.r.size else 0.0
        if not self.finite:
            return np.full(self.S, r_max / (1.0 - self.gamma))
        to_go = np.arange(self.horizon, 0, -1, dtype=np.float64)  # H - h
        return np.repeat(to_go * r_max, self.S)


def occupancy_flow(mdp, gamma: float | None = None, mu: np.ndarray | None = None) -> Flow:
    """The flow of ``mdp``: finite horizon when it has a horizon and ``gamma`` is None, else
    discounted (``gamma`` defaults to ``mdp.gamma``); mu ``(S,)`` defaults to ``mdp.mu0``."""
    mu = _weights(mdp, mu)
    S, A = mdp.S, mdp.A
    if mdp.horizon is not None and gamma is None:
        H = _horizon(mdp)
        b = np.zeros(H * S)
        b[:S] = mu
        r = np.concatenate([np.asarray(mdp.reward(h), np.float64).ravel() for h in range(H)])
        return Flow(finite_horizon_lp_matrix(mdp), b, r, S, A, mu, None, H)
    g = _discount(mdp, gamma)
    r = np.asarray(mdp.reward(0), dtype=np.float64).ravel()
    return Flow(discounted_lp_matrix(mdp, g), (1.0 - g) * mu, r, S, A, mu, g, None)
