r"""Linear mixture MDPs: a known basis of transition kernels mixed by unknown weights.

A **linear mixture MDP** (Ayoub et al. 2020; Zhou, Gu, Szepesvari 2021; the setting of ICVaR-L,
Chen et al. ICLR 2024, theory.md 4.4) has known feature kernels ``phi(s' | s, a) in R^d`` and an
unknown parameter ``theta in R^d`` with

    P(s' | s, a) = < phi(s' | s, a), theta >.

Here the features are a **basis of d transition kernels** ``basis[i] = P_i (S, A, S')`` (every
row a distribution) and ``theta`` lies on the simplex, so that every mixture ``sum_i theta_i P_i``
is a transition kernel and ``||theta||_2 <= 1``. For any value function ``f (S')`` the expectation
is linear in theta through the *value features*

    phi_f(s, a) = sum_{s'} phi(s' | s, a) f(s')  in R^d,   E_{P(.|s,a)}[f] = <phi_f(s, a), theta>,

the identity every linear-mixture learner regresses on (:func:`value_features`).

Every tabular MDP with stationary transitions is one with ``d = S^2 A`` (the one-hot basis
``P_{(s,a,t)}(s'|s,a) = 1[s' = t]`` and ``theta = vec(P)``, :func:`tabular_basis`); there
``||theta||_2 <= sqrt(S A)``.

:class:`LinearMixtureMDP` **is** a :class:`TabularMDP` (stationary transitions and rewards, the
setting of the paper) so that exact planning, regret and rollouts work unchanged; ``basis`` and
``theta`` are public. Validation raises :class:`InvalidMDPError` naming the index and the value.
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.tabular import ROW_SUM_TOL, RewardModel, TabularMDP


def check_basis(basis, *, name: str = "basis") -> np.ndarray:
    """``basis`` as float64 ``(d, S, A, S')``: finite, nonnegative, every row summing to 1."""
    B = np.asarray(basis, dtype=np.float64)
    if B.ndim != 4 or B.shape[1] != B.shape[3] or min(B.shape) < 1:
        raise InvalidMDPError(f"{name} must have shape (d, S, A, S) with S' = S, got {B.shape}")
    if not np.all(np.isfinite(B)) or (B < 0).any():
        i, s, a, t = (int(j) for j in np.argwhere(~np.isfinite(B) | (B < 0))[0])
        raise InvalidMDPError(
            f"{name}[{i}, {s}, {a}, {t}] = {B[i, s, a, t]} is not a probability (finite, >= 0)"
        )
    rows = B.sum(axis=-1)  # (d, S, A)
    bad = np.abs(rows - 1.0) > ROW_SUM_TOL
    if bad.any():
        i, s, a = (int(j) for j in np.argwhere(bad)[0])
        raise InvalidMDPError(f"{name}[{i}, {s}, {a}] sums to {rows[i, s, a]:.12g}, not 1")
    return B


def value_features(basis: np.ndarray, f: np.ndarray) -> np.ndarray:
    """``phi_f(s, a) = sum_{s'} basis[:, s, a, s'] f(s')``.

    basis: ``(d, S, A, S')``; f: ``(..., S')`` value functions (any leading axes).
    Returns ``(..., S, A, d)``.
    """
    return np.einsum("isat,...t->...sai", basis, f)


def tabular_basis(S: int, A: int) -> np.ndarray:
    """The one-hot basis ``(S^2 A, S, A, S)`` of every stationary tabular model:
    ``phi(s' | s, a)_(s~, a~, t) = 1[s~ = s, a~ = a, s' = t]``, so ``theta = vec(P)``. A single
    kernel here is not a distribution (it has one nonzero row); the mixture with vec(P) is P."""
    d = S * A * S
    basis = np.zeros((d, S, A, S))
    s, a, t = np.meshgrid(np.arange(S), np.arange(A), np.arange(S), indexing="ij")
    basis[((s * A + a) * S + t).ravel(), s.ravel(), a.ravel(), t.ravel()] = 1.0
    return basis


class LinearMixtureMDP(TabularMDP):
    """``P = sum_i theta_i basis[i]`` with rewards ``R (S, A)`` in [0, 1] (module docstring)."""

    def __init__(
        self,
        basis,
        theta,
        R,
        mu0=None,
        *,
        horizon: int,
        reward_model: RewardModel = "deterministic",
        name: str = "linear-mixture",
    ) -> None:
        basis = check_basis(basis)
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (basis.shape[0],):
            raise InvalidMDPError(f"theta must have shape ({basis.shape[0]},), got {theta.shape}")
        if not np.all(np.isfinite(theta)) or (theta < 0).any() or abs(theta.sum() - 1) > 1e-12:
            raise InvalidMDPError(f"theta must lie on the simplex, got {theta.tolist()}")
        P = np.einsum("isat,i->sat", basis, theta)
        super().__init__(P, R, mu0, horizon=horizon, reward_model=reward_model, name=name)
        self.basis, self.theta = basis, theta
        for a in (self.basis, self.theta):
            a.setflags(write=False)

    @property
    def d(self) -> int:
        return int(self.basis.shape[0])
