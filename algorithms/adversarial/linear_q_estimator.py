r"""Loss estimators for adversarial linear-Q MDPs from one bandit-feedback trajectory.

Episode k plays pi_k once and observes the losses of the pairs it visits; the loss-to-go from
step h is ``L_{k,h} = sum_{h' >= h} l_{k,h'}(s_{h'}, a_{h'})``. Given the feature covariance
``Sigma_{k,h} = E_{pi_k}[phi(s_h, a_h) phi(s_h, a_h)^T]`` (from the simulator), the least-squares
estimator of the Q-function's parameter (Luo, Wei & Lee 2021 [M]; the abstract of Dai et al.
2023 names it only as a loss estimator that may be arbitrarily negative) is

    theta_hat_{k,h} = Sigma_{k,h}^+ phi(s_h, a_h) L_{k,h},
    Q_hat_{k,h}(s, a) = <phi(s, a), theta_hat_{k,h}>.

Unbiased: ``E[phi(s_h, a_h) L_{k,h}] = E[phi phi^T] theta^{pi_k}_{k,h} = Sigma theta`` because
``E[L_{k,h} | s_h, a_h] = Q^{pi_k}_{k,h}(s_h, a_h) = <phi, theta>`` (linear Q), so
``E[Q_hat(s, a)] = Q^{pi_k}_{k,h}(s, a)`` for every pair in the span of the visited features.
It can be arbitrarily negative (``Sigma^+`` has no sign), which is what the log-barrier's refined
analysis tolerates.

:func:`importance_weighted_q` is the tabular estimator written directly (``1{s_h = s, a_h = a}
L_{k,h} / q_{k,h}(s, a)`` with the occupancy q): with one-hot features it equals
:func:`linear_q_estimate` (``Sigma = diag(q)``), which is the tabular-agreement check.
"""

from __future__ import annotations

import numpy as np

PINV_RCOND = 1e-10
"""Relative cut-off of the pseudo-inverse of Sigma (directions no policy visits are dropped)."""


def symmetric_pinv(covariance: np.ndarray) -> np.ndarray:
    """Moore-Penrose inverse ``(..., d, d)`` of symmetric matrices by one batched ``eigh``:
    eigenvalues with ``|w| <= PINV_RCOND max|w|`` are dropped (numpy's ``pinv(hermitian=True)``
    rule, without its sorting and re-indexing, which cost more than the decomposition at d <= 8)."""
    w, V = np.linalg.eigh(covariance)  # (..., d), (..., d, d)
    cutoff = PINV_RCOND * np.abs(w).max(axis=-1, keepdims=True)
    inv_w = np.divide(1.0, w, out=np.zeros_like(w), where=np.abs(w) > cutoff)
    return np.einsum("...ik,...k,...jk->...ij", V, inv_w, V)


def loss_to_go(losses: np.ndarray) -> np.ndarray:
    """``L (B, H)``: ``L[:, h] = sum_{h' >= h} losses[:, h']``."""
    return np.cumsum(losses[:, ::-1], axis=1)[:, ::-1]


def linear_q_estimate(
    phi: np.ndarray, covariance: np.ndarray, states: np.ndarray, actions: np.ndarray, losses
) -> np.ndarray:
    """``Q_hat (B, H, S, A)`` from features ``phi (S, A, d)``, ``Sigma (B, H, d, d)`` and one
    trajectory per seed: ``states, actions, losses (B, H)``."""
    L = loss_to_go(np.asarray(losses, dtype=np.float64))  # (B, H)
    x = phi[states, actions]  # (B, H, d)
    inv = symmetric_pinv(covariance)  # (B, H, d, d)
    theta = np.einsum("bhij,bhj->bhi", inv, x) * L[..., None]  # (B, H, d)
    return np.einsum("sad,bhd->bhsa", phi, theta)


def importance_weighted_q(
    occupancy: np.ndarray, states: np.ndarray, actions: np.ndarray, losses
) -> np.ndarray:
    """Tabular ``Q_hat (B, H, S, A) = 1{s_h = s, a_h = a} L_h / q_h(s, a)`` (q: ``(B, H, S, A)``
    occupancy of the policy played)."""
    B, H = states.shape
    L = loss_to_go(np.asarray(losses, dtype=np.float64))
    out = np.zeros(occupancy.shape)
    b, h = np.meshgrid(np.arange(B), np.arange(H), indexing="ij")
    out[b, h, states, actions] = L / occupancy[b, h, states, actions]
    return out
