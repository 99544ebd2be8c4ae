r"""Coverage of an offline dataset, computed exactly from the true model.

Occupancy measures (exact, by flow; the same quantities ``planning.lp.occupancy_measure`` returns):

* finite horizon: ``d^pi_h(s, a) = Pr^pi(s_h = s, a_h = a | s_0 ~ mu0)`` by the forward recursion
  ``d_0(s) = mu0(s)``, ``d_{h+1}(s') = sum_{s,a} P_h(s'|s, a) d_h(s, a)``; ``(H, S, A)``, each stage
  sums to 1;
* discounted: the normalised discounted occupancy
  ``d^pi(s, a) = (1 - gamma) sum_t gamma^t Pr^pi(s_t = s, a_t = a | s_0 ~ mu0)`` from the linear
  solve ``(I - gamma P_pi^T) d_S = (1 - gamma) mu0``, ``d(s, a) = d_S(s) pi(a|s)``; ``(S, A)``.

Coverage coefficients of a data distribution mu (``OfflineDataset.data_distribution``):

* single-policy concentrability (Rashidinejad, Zhu, Ma, Jiao, Russell 2021; theory.md 3.2 [A]):

      C* = max_{s,a} d^{pi*}(s, a) / mu(s, a)        (finite horizon: max over (h, s, a) of the
                                                      stage ratios d^{pi*}_h / mu_h)

  with the conventions 0/0 = 0 (pairs pi* never visits do not count) and x/0 = +inf for x > 0
  (pi* visits a pair the data never shows: no finite C*). C* >= 1 whenever it is finite, since
  both are distributions;
* its clipped variant (Li, Shi, Chen, Chi, Wei 2022, theory.md 3.2; the exact clipping is [M]):

      C*_clipped = max_{s,a} min{d^{pi*}(s, a), 1/S} / mu(s, a);

* PEVI's data-dependent coverage term (Jin, Yang, Wang 2021, theory.md 3.1 [M]):

      sum_h E_{pi*}[ ||phi(s_h, a_h)||_{Lambda_h^{-1}} ]
          = sum_h sum_{s,a} d^{pi*}_h(s, a) sqrt(phi(s, a)^T Lambda_h^{-1} phi(s, a)),
      Lambda_h = sum_{tau} phi(s^tau_h, a^tau_h) phi(s^tau_h, a^tau_h)^T + lambda I,

  computed per seed from the dataset (weighted counts) and the exact d^{pi*}, batched ``(B,)``.
  Because phi depends on (h, s, a) only, ``Lambda_h = Phi_h^T diag(n_h) Phi_h + lambda I`` with the
  (weighted) counts n_h(s, a): exact, and O(S A d^2) per stage instead of O(N d^2).

pi* is the planner's deterministic optimal policy (ties to the smallest action index), the same one
the behaviour mixture uses; with ties in the MDP, C* refers to that pi*.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla


# ------------------------------------------------------------------------------ policies
def as_stochastic(mdp, policy: np.ndarray) -> np.ndarray:
    """A single policy as a stochastic array: ``(H, S, A)`` finite horizon, ``(S, A)`` discounted.

    Accepts deterministic ``(H, S)`` / ``(S,)`` int and stochastic ``(H, S, A)`` / ``(S, A)``.
    """
    pol = np.asarray(policy)
    A = mdp.A
    if np.issubdtype(pol.dtype, np.integer):
        return np.eye(A)[pol]
    return pol.astype(np.float64, copy=False)


def optimal_solution(mdp):
    """The exact planner's Solution: backward induction (finite horizon) or policy iteration."""
    from theorylab.algorithms.planning import backward_induction, policy_iteration

    if mdp.horizon is not None:
        return backward_induction(mdp)
    return policy_iteration(mdp)


# ------------------------------------------------------------------------------ occupancies
def occupancy(mdp, policy: np.ndarray) -> np.ndarray:
    """Exact occupancy measure of one policy (module docstring).

    Finite horizon (``mdp.horizon`` set): policy ``(H, S)`` int or ``(H, S, A)`` (stationary
    ``(S,)`` / ``(S, A)`` broadcast); returns ``(H, S, A)``. Discounted: stationary policy ``(S,)``
    or ``(S, A)``; returns ``(S, A)``.
    """
    S, A = mdp.S, mdp.A
    if mdp.horizon is not None:
        H = mdp.horizon
        pol = as_stochastic(mdp, policy)
        if pol.shape == (S, A):
            pol = np.broadcast_to(pol, (H, S, A))
        if pol.shape != (H, S, A):
            raise ValueError(f"policy must be (H, S[, A]) = ({H}, {S}[, {A}]), got {pol.shape}")
        d = np.empty((H, S, A))
        state = np.asarray(mdp.mu0, dtype=np.float64)
        for h in range(H):
            d[h] = state[:, None] * pol[h]
            if h + 1 < H:
                state = mdp.P_flat(h).T @ d[h].ravel()  # (S,)
        return d
    if mdp.gamma is None:
        raise ValueError(f"{mdp!r} has neither a horizon nor a discount")
    g = float(mdp.gamma)
    pi = as_stochastic(mdp, policy)
    if pi.shape != (S, A):
        raise ValueError(
            f"a discounted occupancy needs a stationary policy (S[, A]), got {pi.shape}"
        )
    # P_pi (S, S) = Pi (S, S*A) @ P_flat (S*A, S), Pi block-diagonal in s
    Pi = sp.csr_array((pi.ravel(), np.arange(S * A), np.arange(0, S * A + 1, A)), shape=(S, S * A))
    M = mdp.P_flat(0)
    rhs = (1.0 - g) * np.asarray(mdp.mu0, dtype=np.float64)
    if sp.issparse(M):
        lhs = sp.csc_array(sp.eye(S, format="csc") - g * sp.csc_array(Pi @ M).T)
        d_state = np.atleast_1d(spla.spsolve(lhs, rhs))
    else:
        d_state = np.linalg.solve(np.eye(S) - g * np.asarray(Pi @ M).T, rhs)
    d_state = np.maximum(d_state, 0.0)  # round-off below zero on unreachable states
    return d_state[:, None] * pi


def optimal_occupancy(mdp, optimal_policy: np.ndarray | None = None) -> np.ndarray:
    """d^{pi*} of the planner's optimal policy (or of ``optimal_policy`` when given)."""
    pol = optimal_solution(mdp).policy if optimal_policy is None else optimal_policy
    return occupancy(mdp, pol)


# ------------------------------------------------------------------------------ concentrability
def density_ratio(target: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Elementwise ``target / mu`` with 0/0 = 0 and x/0 = +inf (x > 0)."""
    target = np.asarray(target, dtype=np.float64)
    mu = np.asarray(mu, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(mu > 0, target / np.where(mu > 0, mu, 1.0), np.inf)
    return np.where(target > 0, ratio, 0.0)


def concentrability(d_star: np.ndarray, mu: np.ndarray) -> float:
    """``C* = max d^{pi*} / mu`` over all (h,) s, a with 0/0 = 0 and x/0 = inf."""
    return float(density_ratio(d_star, mu).max())


def clipped_concentrability(d_star: np.ndarray, mu: np.ndarray, S: int) -> float:
    """``C*_clipped = max min{d^{pi*}, 1/S} / mu`` (Li et al. 2022; the clipping is [M])."""
    return float(density_ratio(np.minimum(d_star, 1.0 / S), mu).max())


def single_policy_concentrability(mdp, mu: np.ndarray, *, clipped: bool = False) -> float:
    """C* (or C*_clipped) of the data distribution ``mu`` against the planner's pi*."""
    d_star = optimal_occupancy(mdp)
    if clipped:
        return clipped_concentrability(d_star, mu, mdp.S)
    return concentrability(d_star, mu)


# ------------------------------------------------------------------------------ PEVI coverage
def stage_features(phi: np.ndarray, H: int) -> np.ndarray:
    """Features as ``(H, S, A, d)`` (a stationary ``(S, A, d)`` map is broadcast over h)."""
    phi = np.asarray(phi, dtype=np.float64)
    if phi.ndim == 3:
        return np.broadcast_to(phi, (H, *phi.shape))
    if phi.ndim != 4 or phi.shape[0] != H:
        raise ValueError(f"phi must be (S, A, d) or (H, S, A, d) with H = {H}, got {phi.shape}")
    return phi


def gram_matrices(counts: np.ndarray, phi_h: np.ndarray, lam: float) -> np.ndarray:
    """``Lambda = Phi^T diag(n) Phi + lam I`` per seed: counts ``(B, S, A)``, phi_h ``(S, A, d)``
    -> ``(B, d, d)``."""
    d = phi_h.shape[-1]
    F = phi_h.reshape(-1, d)  # (SA, d)
    w = counts.reshape(counts.shape[0], -1)  # (B, SA)
    # one GEMM per seed, the same call whatever B: a batched einsum picks its contraction path
    # by shape, so with fractional weights (vw-pevi) seed i differed alone and in a batch
    gram = np.stack([(F.T * w_b) @ F for w_b in w])  # (B, d, d)
    return gram + lam * np.eye(d)


def elliptical_norms(gram: np.ndarray, phi_h: np.ndarray) -> np.ndarray:
    """``||phi(s, a)||_{Lambda^{-1}} = sqrt(phi^T Lambda^{-1} phi)`` for every pair:
    gram ``(B, d, d)``, phi_h ``(S, A, d)`` -> ``(B, S, A)``."""
    B, d = gram.shape[0], gram.shape[-1]
    S, A = phi_h.shape[:2]
    F = phi_h.reshape(S * A, d)  # (SA, d)
    sol = np.linalg.solve(gram, np.broadcast_to(F.T, (B, d, S * A)))  # (B, d, SA) = Lambda^-1 F^T
    quad = np.einsum("kd,bdk->bk", F, sol)  # (B, SA)
    return np.sqrt(np.maximum(quad, 0.0)).reshape(B, S, A)
