"""Finite uncertainty sets of whole kernels {P_1, ..., P_m} and their exact robust values.

A finite set is a ``models (m, S, A, S)`` array sharing the nominal model's rewards, discount
and initial distribution. Two robust problems over it (Iyengar 2005; Wiesemann, Kuhn & Rustem
2013 [M]):

* static: the adversary fixes one kernel for the whole run,
  ``max_pi min_i V^pi_{P_i}(mu0)`` (:func:`static_values` scores every policy against every
  model; :func:`brute_force_maxmin` enumerates the A^S deterministic stationary policies);
* dynamic: the adversary picks a row among {P_i(.|s, a)} at every visit, the robust Bellman
  equation of the (s, a)-rectangular hull, ``V(s) = max_a r(s, a) + gamma min_i P_i(.|s,a) . V``
  (:func:`dynamic_robust_vi`).

Static >= dynamic always (the dynamic adversary has more choices); they are equal when the set
is (s, a)-rectangular, i.e. the product of its rows (:func:`rectangular_product`).
"""

from __future__ import annotations

import itertools

import numpy as np

from theorylab.algorithms.planning.robust import iterate_to_fixed_point

MAX_POLICIES = 1 << 14  # brute force over A^S deterministic policies up to this many


def perturbed_models(mdp, m: int, spread: float, seed: int) -> np.ndarray:
    """(m, S, A, S): the nominal kernel and m - 1 others, each (1 - spread) P + spread Q with
    Q a kernel of Dirichlet(1) rows (a non-rectangular set: whole kernels)."""
    rng = np.random.default_rng(seed)
    P = mdp.dense_P()
    out = [P]
    for _ in range(m - 1):
        Q = rng.dirichlet(np.ones(mdp.S), size=(mdp.S, mdp.A))
        out.append((1.0 - spread) * P + spread * Q)
    return np.stack(out)


def rectangular_product(rows: np.ndarray) -> np.ndarray:
    """The (s, a)-rectangular set of every combination of candidate rows: rows (k, S, A, S) ->
    models (k^(S A), S, A, S) (small S A only)."""
    k, S, A, _ = rows.shape
    if k ** (S * A) > 1 << 16:
        raise ValueError(f"a rectangular product of {k}^{S * A} kernels is too large to list")
    out = []
    for choice in itertools.product(range(k), repeat=S * A):
        idx = np.array(choice).reshape(S, A)
        out.append(np.take_along_axis(rows, idx[None, :, :, None], axis=0)[0])
    return np.stack(out)


def all_deterministic_policies(S: int, A: int) -> np.ndarray:
    """(A^S, S) every deterministic stationary policy."""
    if A**S > MAX_POLICIES:
        raise ValueError(f"A^S = {A}^{S} policies is more than the {MAX_POLICIES} enumerated")
    return np.array(list(itertools.product(range(A), repeat=S)), dtype=np.int64)


def static_values(mdp, models: np.ndarray, policies: np.ndarray) -> np.ndarray:
    """V^pi_{P_i}(mu0) for every deterministic policy (B, S) and model (m, S, A, S): (B, m),
    by exact linear solves (I - gamma P_pi) V = r_pi."""
    S = mdp.S
    g, R, mu0 = mdp.gamma, mdp.reward(0), mdp.mu0
    rows = np.arange(S)
    P_pi = models[:, rows[None, :], policies]  # (m, B, S, S)
    P_pi = np.moveaxis(P_pi, 0, 1)  # (B, m, S, S)
    r_pi = R[rows[None, :], policies]  # (B, S)
    M = np.eye(S) - g * P_pi
    rhs = np.broadcast_to(r_pi[:, None, :, None], M.shape[:-1] + (1,))
    V = np.linalg.solve(M, rhs)[..., 0]  # (B, m, S)
    return V @ mu0


def brute_force_maxmin(mdp, models: np.ndarray) -> tuple[float, np.ndarray]:
    """The static robust value max_pi min_i V^pi_{P_i}(mu0) over deterministic stationary
    policies, by enumeration, and a maximiser (S,)."""
    pols = all_deterministic_policies(mdp.S, mdp.A)
    worst = static_values(mdp, models, pols).min(axis=1)
    b = int(np.argmax(worst))
    return float(worst[b]), pols[b]


def dynamic_robust_vi(mdp, models: np.ndarray, tol: float = 1e-13, max_iter: int = 1_000_000):
    """The dynamic robust value of the rectangular hull: (V (S,), policy (S,)), iterated until
    the sup-norm step is below tol (1 - gamma) / gamma."""
    g, R = mdp.gamma, mdp.reward(0)

    def backup(V):
        return (R + g * (models @ V).min(axis=0)).max(axis=1)

    V, _ = iterate_to_fixed_point(backup, np.zeros(mdp.S), g, tol, max_iter)
    Q = R + g * (models @ V).min(axis=0)
    return Q.max(axis=1), Q.argmax(axis=1)
