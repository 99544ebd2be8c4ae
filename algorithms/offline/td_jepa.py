r"""TD-JEPA, idealised and tabular: latent-predictive successor features from reward-free data.

Seed reference: ``seed-catalogue-002-004.md#A4``. Paper: Marco Bagatella, Matteo Pirotta, Ahmed
Touati, Alessandro Lazaric, Andrea Tirinzoni, "TD-JEPA: Latent-predictive Representations for
Zero-Shot Reinforcement Learning", arXiv:2510.00739 (2025). Read [V]: the abstract and the
catalogue row (explicit state and task encoders, a policy-conditioned multi-step predictor trained
by temporal-difference learning on latent targets from offline reward-free transitions; "an
idealized variant of TD-JEPA avoids collapse with proper initialization, and learns encoders that
capture a low-rank factorization of long-term policy dynamics, while the predictor recovers their
successor features in latent space"), and a summary saying the analysis assumes a symmetric
transition kernel and isotropic covariance, relaxed in an appendix by a forward-backward-in-time
variant that needs the adjoint kernel. The equations below are reconstructed [A] (in the manner
of Tang et al. 2023's analysis of self-predictive learning); the paper's theorems, numbering and
constants were not read.

Idealised variant (one policy pi, tabular states, linear maps, expected updates):

* state encoder Phi ``(S, d)``, task encoder Psi ``(S, d)``, predictors T and T' ``(d, d)``;
  successor features of the task encoder F = Phi T, targets at the current state: the TD target of
  F(s) is ``psi(s) + gamma E_{s' ~ P^pi(s)} F(s')`` (its fixed point is F = M Psi with the
  successor matrix ``M = (I - gamma P^pi)^{-1}``), with the bootstrapped term under a stop-gradient;
* the task encoder is trained by the mirror loss, Psi T' toward ``phi(s) + gamma (P^pi* Psi T')(s)``
  with the adjoint ``P^pi* = P^pi^T`` under the uniform state law (the forward-backward variant;
  on a symmetric P^pi it is the forward loss);
* state law: uniform, D = I / S (the isotropic assumption);
* predictors at the fixed point of their semi-gradient TD (the fast timescale): the LSTD solution
  ``T = (Phi^T (I - gamma P^pi) Phi)^+ Phi^T Psi``; at it the residual
  ``R = Phi T - Psi - gamma P^pi Phi T`` is orthogonal to span Phi, so the semi-gradient flow of the
  encoder, ``dPhi/dt = -R T^T``, conserves Phi^T Phi: from an orthonormal initialisation the
  encoder keeps rank d (no collapse), and from a rank-deficient one it stays rank-deficient;
* encoders by normalised semi-gradient steps: ``Phi <- Phi - lr R T^T / max(||T||_2^2, 1)`` (and
  the mirror for Psi); the normalisation by ||T||^2 ~ sigma_1(M)^2 is ours [A] (a fixed step
  diverges when 1/(1 - gamma) is large). The cross terms of a step vanish (R is orthogonal to
  span Phi), so Phi^T Phi grows by lr^2 G^T G per step and never shrinks;
* initialisation (:func:`initial_encoders`): Phi and Psi independent, orthonormal columns scaled by
  sqrt(S) (Phi^T D Phi = I). Orthogonal Phi and Psi (Phi^T Psi = 0) give T = 0, a fixed point
  that never moves (measured); independent draws are almost surely not orthogonal.

At its stationary points with T invertible, R = 0 for both losses: Phi T = M Psi and
Psi T' = M^T Phi, so span Phi and span Psi are invariant pairs of M; measured on the symmetric walk
(``symmetric-walk:seed=4``, lr = 1), they converge to the top-d singular subspaces of M (the
largest principal-angle sine to the exact SVD: 3e-7 after 2000 steps, 4e-10 after 3000, worst of
16 initialisations), while the no-stop-gradient variant neither reaches them (sine ~1) nor keeps
its scale (smallest singular value of Phi / sqrt(S) 0.03).

Zero-shot evaluation: given a reward at test time, the task vector is the least-squares fit
``w = argmin ||Psi w - r^pi||`` (uniform weights; r^pi(s) = sum_a pi(a|s) r(s, a)) and
``V_hat = Phi T w``, exactly V^pi = M r^pi whenever r^pi lies in span Psi and the encoders have
converged; ``Q_hat(s, a) = r(s, a) + gamma sum_s' P(s'|s, a) V_hat(s')`` (a one-step lookahead
on the given model: the state-level successor features give V, the paper's action-conditioned
predictor would give Q directly).

From data (the ``ope`` kind): P^pi is the empirical P_hat(s'|s, a) of the transitions averaged
with pi (``empirical_models``; pairs without data are self-loops there), r^pi from the empirical
mean rewards. Rewards are read only for the zero-shot step; the encoders see transitions only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from theorylab.algorithms.dual.empirical_model import empirical_models
from theorylab.algorithms.offline.dataset import OfflineDataset


class TDJEPAInputError(ValueError):
    """A TD-JEPA parameter is out of range (the message names it)."""


@dataclass
class TDJEPAFit:
    """The trained maps of B runs: ``Phi (B, S, d)``, ``Psi (B, S, d)``, ``T (B, d, d)``
    (Phi T ~ M Psi), ``T_task (B, d, d)`` (Psi T_task ~ M^T Phi); ``min_singular (B,)``: the
    smallest singular value of Phi / sqrt(S) over the run (initialisation included), the
    collapse diagnostic."""

    Phi: np.ndarray
    Psi: np.ndarray
    T: np.ndarray
    T_task: np.ndarray
    min_singular: np.ndarray
    info: dict = field(default_factory=dict)


def as_matrix(policy, A: int) -> np.ndarray:
    """A policy as ``(S, A)`` probabilities (from ``(S,)`` actions or ``(S, A)``)."""
    pi = np.asarray(policy)
    return np.eye(A)[pi.astype(np.int64)] if pi.ndim == 1 else pi.astype(np.float64)


def policy_transition(P: np.ndarray, policy: np.ndarray) -> np.ndarray:
    """P^pi ``(S, S)`` from P ``(S, A, S)`` and a policy ``(S, A)`` (or ``(S,)`` actions)."""
    return np.einsum("sa,sat->st", as_matrix(policy, P.shape[1]), P)


def successor_matrix(P_pi: np.ndarray, gamma: float) -> np.ndarray:
    """M^pi = (I - gamma P^pi)^{-1} ``(S, S)``, by a linear solve."""
    S = P_pi.shape[0]
    return np.linalg.solve(np.eye(S) - gamma * P_pi, np.eye(S))


def initial_encoders(
    B: int, S: int, d: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """The prescribed initialisation: independent orthonormal Phi, Psi ``(B, S, d)`` times
    sqrt(S), so that Phi^T D Phi = I with D = I / S."""
    Phi = np.linalg.qr(rng.normal(size=(B, S, d)))[0] * np.sqrt(S)
    Psi = np.linalg.qr(rng.normal(size=(B, S, d)))[0] * np.sqrt(S)
    return Phi, Psi


def lstd_predictor(Phi: np.ndarray, target: np.ndarray, P: np.ndarray, gamma: float) -> np.ndarray:
    """``(B, d, d)``: the fixed point of semi-gradient TD for Phi T toward target + gamma P Phi T
    (Phi, target ``(B, S, d)``, P ``(B, S, S)``); the pseudo-inverse serves a rank-deficient
    encoder."""
    lhs = _t(Phi) @ (Phi - gamma * (P @ Phi))  # (B, d, d)
    return np.linalg.pinv(lhs) @ (_t(Phi) @ target)


def semi_gradients(
    Phi: np.ndarray, Psi: np.ndarray, P: np.ndarray, gamma: float
) -> tuple[np.ndarray, np.ndarray]:
    """The normalised semi-gradients ``(G_Phi, G_Psi)`` ``(B, S, d)`` of both losses at the
    predictors' TD fixed points: ``R T^T / max(||T||_2^2, 1)``, the bootstrapped term and the other
    encoder held fixed (stop-gradient)."""
    T = lstd_predictor(Phi, Psi, P, gamma)  # (B, d, d)
    P_adj = _t(P)  # the adjoint of P under the uniform state law
    T_task = lstd_predictor(Psi, Phi, P_adj, gamma)
    R = Phi @ T - Psi - gamma * (P @ (Phi @ T))  # (B, S, d)
    R_task = Psi @ T_task - Phi - gamma * (P_adj @ (Psi @ T_task))
    return R @ _t(T) / _sq_norm(T), R_task @ _t(T_task) / _sq_norm(T_task)


def _t(X: np.ndarray) -> np.ndarray:
    return np.swapaxes(X, -1, -2)


def _sq_norm(T: np.ndarray) -> np.ndarray:
    """``(B, 1, 1)``: max(||T_b||_2^2, 1) (steps are only ever shrunk: a T near 0, as at
    orthogonal encoders, must not blow a step up)."""
    return np.maximum(np.linalg.norm(T, 2, axis=(-2, -1)) ** 2, 1.0)[:, None, None]


def smallest_singular(Phi: np.ndarray) -> np.ndarray:
    """``(B,)``: sigma_min(Phi_b / sqrt(S)), from the ``(d, d)`` Gram matrices (1 at the
    initialisation)."""
    gram = _t(Phi) @ Phi / Phi.shape[-2]
    return np.sqrt(np.maximum(np.linalg.eigvalsh(gram)[:, 0], 0.0))


def train(
    P_pi: np.ndarray,
    gamma: float,
    rank: int,
    iterations: int,
    lr: float,
    rng: np.random.Generator,
) -> TDJEPAFit:
    """Run the idealised dynamics on P^pi ``(B, S, S)`` (module docstring), B runs at once."""
    B, S, _ = P_pi.shape
    Phi, Psi = initial_encoders(B, S, rank, rng)
    min_sv = smallest_singular(Phi)
    for _ in range(iterations):
        G, G_task = semi_gradients(Phi, Psi, P_pi, gamma)
        Phi, Psi = Phi - lr * G, Psi - lr * G_task
        min_sv = np.minimum(min_sv, smallest_singular(Phi))
    T = lstd_predictor(Phi, Psi, P_pi, gamma)
    T_task = lstd_predictor(Psi, Phi, _t(P_pi), gamma)
    return TDJEPAFit(Phi, Psi, T, T_task, min_sv, {"iterations": iterations, "lr": lr})


def zero_shot_values(fit: TDJEPAFit, r_pi: np.ndarray) -> np.ndarray:
    """V_hat ``(B, S)`` = Phi T w with w the least-squares task vector of r^pi ``(B, S)`` on Psi."""
    w = np.linalg.pinv(fit.Psi) @ r_pi[..., None]  # (B, d, 1)
    return (fit.Phi @ (fit.T @ w))[..., 0]


def zero_shot_q(fit: TDJEPAFit, P: np.ndarray, R: np.ndarray, policy, gamma: float) -> np.ndarray:
    """Q_hat ``(B, S, A)`` = r(s, a) + gamma P(.|s, a) . V_hat, V_hat from the latent successor
    features for r^pi; P ``(S, A, S)``, R ``(S, A)`` (one model for the B runs)."""
    r_pi = np.sum(as_matrix(policy, R.shape[1]) * R, axis=1)  # (S,)
    V = zero_shot_values(fit, np.broadcast_to(r_pi, (fit.Phi.shape[0], r_pi.size)))  # (B, S)
    return R[None] + gamma * np.einsum("sat,bt->bsa", P, V)


def check_parameters(rank, iterations, lr, S: int | None = None) -> tuple[int, int, float]:
    """The parameters as (int, int, float), or a one-line error naming the bad one."""
    for key, val in (("rank", rank), ("iterations", iterations)):
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < 1:
            raise TDJEPAInputError(f"td-jepa: {key} must be a positive integer, got {val!r}")
    if S is not None and rank >= S:
        raise TDJEPAInputError(f"td-jepa: rank must be < S = {S}, got rank={rank}")
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not 0.0 < lr <= 1.0:
        raise TDJEPAInputError(f"td-jepa: lr must be a number in (0, 1], got {lr!r}")
    return int(rank), int(iterations), float(lr)


def td_jepa(
    dataset: OfflineDataset,
    policy: np.ndarray,
    rank: int = 3,
    iterations: int = 3000,
    lr: float = 1.0,
    init_seed: int = 0,
) -> tuple[np.ndarray, TDJEPAFit]:
    """Train on each seed's empirical P^pi (the B seeds at once) and evaluate V^pi(mu0)
    zero-shot. Returns ``(values (B,), fit)``."""
    rank, iterations, lr = check_parameters(rank, iterations, lr, dataset.S)
    models = empirical_models(dataset, "td-jepa")
    pi = as_matrix(policy, dataset.A)  # (S, A)
    P_pi = np.stack([policy_transition(mdp.dense_P(), pi) for mdp, _ in models])  # (B, S, S)
    r_pi = np.stack([np.sum(pi * mdp.reward(0), axis=1) for mdp, _ in models])  # (B, S)
    gamma = float(dataset.gamma)
    fit = train(P_pi, gamma, rank, iterations, lr, np.random.default_rng([init_seed, 4]))
    return zero_shot_values(fit, r_pi) @ dataset.mu0, fit
