r"""Maximum likelihood over a finite class of simplex feature maps (Rep-UCB's MLE oracle).

Model class (theory.md 7 and 7.1): ``P(s' | s, a) = <phi(s, a), mu(s')> = sum_i phi_i(s, a)
mu_i(s')`` with ``phi`` from a finite class Phi of *simplex* feature maps (every ``phi(s, a)`` a
probability vector) and ``mu`` any row-stochastic ``(d, S)`` matrix (row i a distribution over
next states). Every such pair is a valid transition model.

For one candidate phi and transition counts ``C(s, a, s')`` the log-likelihood

    l(mu) = sum_{s, a, s'} C(s, a, s') log sum_i phi_i(s, a) mu_i(s')

is concave in mu (log of a linear function), and its maximiser over row-stochastic mu is found by
EM for a mixture whose weights ``phi(s, a)`` are known (responsibilities
``gamma_i = phi_i mu_i(s') / P(s'|s,a)``)::

    G_i(s')   = sum_{s,a} phi_i(s, a) C(s, a, s') / P(s' | s, a)        (G = Phi^T (C / P))
    mu_i(s') <- mu_i(s') G_i(s') / sum_{s''} mu_i(s'') G_i(s'')

a multiplicative (Richardson-Lucy / Cover) update: monotone in l and convergent to the maximum
for this concave problem. Zero is absorbing for a multiplicative update (a next state not yet
observed gets mu_i(s') -> 0, and a later first observation of it would have likelihood 0), so
every entry is floored at ``MU_FLOOR = 1e-12`` after each update and renormalised: an MLE over
{mu >= 1e-12}, which changes the log-likelihood by O(1e-12 n). The MLE over the
class picks ``argmax_j max_mu l_j(mu)`` (ties -> the smallest index).

Everything is batched: seeds B, steps H (one mu_h per step, a stage-dependent model) and the M
candidates are stacked axes; one EM iteration costs O(B H M S A d S).
"""

from __future__ import annotations

import numpy as np

MU_FLOOR = 1e-12
"""Every entry of mu is kept >= MU_FLOOR (then renormalised): see :func:`em_steps`."""


def check_simplex_class(candidates: np.ndarray, *, tol: float = 1e-9) -> None:
    """Raise ``ValueError`` unless every candidate row ``phi(s, a)`` is a probability vector."""
    if candidates.min() < -tol:
        j, s, a, i = (int(x) for x in np.argwhere(candidates < -tol)[0])
        raise ValueError(
            f"candidate {j} has a negative feature at (s={s}, a={a}, i={i}): the MLE oracle "
            "needs simplex-valued features (rows that are probability vectors)"
        )
    sums = candidates.sum(axis=-1)
    if np.abs(sums - 1.0).max() > tol:
        j, s, a = (int(x) for x in np.argwhere(np.abs(sums - 1.0) > tol)[0])
        raise ValueError(
            f"candidate {j} at (s={s}, a={a}) sums to {sums[j, s, a]:.12g}: the MLE oracle needs "
            "simplex-valued features"
        )


def em_steps(
    Phi: np.ndarray, mu: np.ndarray, counts: np.ndarray, n_iter: int
) -> tuple[np.ndarray, np.ndarray]:
    """``n_iter`` EM updates of mu for every candidate; returns ``(mu, loglik)``.

    Phi: ``(M, SA, d)`` candidate feature tables (flat pairs); mu: ``(B, H, M, d, S)``
    row-stochastic; counts: ``(B, H, SA, S)`` transition counts C_h(s, a, s').
    Returns mu ``(B, H, M, d, S)`` and the log-likelihood of the returned mu ``(B, H, M)``.
    """
    C = counts[:, :, None]  # (B, H, 1, SA, S)
    PhiT = np.swapaxes(Phi, -1, -2)  # (M, d, SA)
    observed = C > 0
    for _ in range(n_iter):
        P = np.matmul(Phi, mu)  # P_j(s'|s,a): (B, H, M, SA, S)
        ratio = np.where(observed, C / np.maximum(P, MU_FLOOR), 0.0)  # C / P
        G = np.matmul(PhiT, ratio)  # (B, H, M, d, S)
        mu = np.maximum(mu * G, 0.0)
        mu /= np.maximum(mu.sum(axis=-1, keepdims=True), 1e-300)
        # a row with no responsibility at all (G = 0) gets the uniform distribution
        mu = np.where(mu.sum(axis=-1, keepdims=True) > 0, mu, 1.0 / mu.shape[-1])
        # floor: zero is absorbing for a multiplicative update, and a next state seen for the
        # first time later must be reachable (the log-likelihood changes by O(MU_FLOOR * n))
        mu = np.maximum(mu, MU_FLOOR)
        mu /= mu.sum(axis=-1, keepdims=True)
    P = np.matmul(Phi, mu)  # (B, H, M, SA, S)
    logP = np.log(np.where(observed, P, 1.0))
    loglik = (np.where(observed, C, 0.0) * logP).sum(axis=(-1, -2))  # (B, H, M)
    return mu, loglik
