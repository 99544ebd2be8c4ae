r"""Expected trajectory features of every deterministic policy of a small tabular MDP.

Trajectory-preference learners (Dueling RL, docs/algorithms/dueling-rl.md; REGIME,
docs/algorithms/regime.md) compare whole trajectories through the features

    psi(tau) = sum_{h=1}^{H} e_{(s_h, a_h)} in R^{SA}      (visit counts of the state-action pairs)

so that a stationary reward r (S, A) gives the trajectory reward r(tau) = <r, psi(tau)>, and the
value of a policy under a model P is linear in its expected features:

    V^pi(r) = <r, F_pi>,   F_pi = E^P_pi[psi(tau)] = sum_h d^pi_h        (d^pi_h: occupancy at h)

Both algorithms optimise over the set of deterministic non-stationary policies (the vertices of
the occupancy polytope, where any convex function of F_pi, a norm included, attains its maximum),
which they enumerate: ``A ** (H S)`` policies, so only small MDPs qualify (the limit is a
parameter; exceeding it is an error that says how many there would be).

The forward recursion (exact):

    d_1(s) = mu0(s),   d_{h+1}(s') = sum_s d_h(s) P_h(s' | s, pi_h(s)),
    F_pi(s, a) = sum_h d_h(s) 1{a = pi_h(s)}.
"""

from __future__ import annotations

import itertools

import numpy as np

DEFAULT_LIMIT = 4096


class PolicyEnumerationError(ValueError):
    """Too many deterministic policies to enumerate, or a model of the wrong shape."""


def policy_count(S: int, A: int, H: int) -> int:
    """Number of deterministic non-stationary policies, ``A ** (H S)``."""
    return int(A) ** (int(H) * int(S))


def deterministic_policies(S: int, A: int, H: int, limit: int = DEFAULT_LIMIT) -> np.ndarray:
    """Every deterministic non-stationary policy: ``(N, H, S)`` int, N = A^(HS) <= ``limit``.

    Row 0 is the all-zeros policy; the order is lexicographic in the flattened (h, s) table."""
    n = policy_count(S, A, H)
    if n > limit:
        raise PolicyEnumerationError(
            f"{A}^({H}*{S}) = {n} deterministic policies exceed the enumeration limit {limit}: "
            "use a smaller MDP (S, A, H) or raise max_policies"
        )
    table = np.array(list(itertools.product(range(A), repeat=H * S)), dtype=np.int64)
    return table.reshape(n, H, S)


def expected_features(P: np.ndarray, mu0: np.ndarray, policies: np.ndarray) -> np.ndarray:
    """F_pi = E^P_pi[psi(tau)] for every policy and every model.

    P: ``(S, A, S)`` or a batch ``(B, S, A, S)`` of transition models (stationary);
    mu0: ``(S,)``; policies: ``(N, H, S)`` int.
    Returns ``(N, S*A)`` for one model, ``(B, N, S*A)`` for a batch (index s * A + a)."""
    P = np.asarray(P, dtype=np.float64)
    single = P.ndim == 3
    if single:
        P = P[None]
    if P.ndim != 4 or P.shape[1] != P.shape[3]:
        raise PolicyEnumerationError(f"P must be (S, A, S) or (B, S, A, S), got {P.shape}")
    Bm, S, A, _ = P.shape
    pol = np.asarray(policies)
    N, H, _ = pol.shape
    d = np.broadcast_to(np.asarray(mu0, dtype=np.float64), (Bm, N, S)).copy()  # (B, N, S)
    F = np.zeros((Bm, N, S, A))
    states = np.arange(S)
    onehot = np.eye(A)[pol]  # (N, H, S, A)
    for h in range(H):
        F += d[..., None] * onehot[None, :, h]
        P_pi = P[:, states[None, :], pol[:, h]]  # (B, N, S, S): P(. | s, pi_h(s))
        d = np.einsum("bns,bnst->bnt", d, P_pi)
    F = F.reshape(Bm, N, S * A)
    return F[0] if single else F


def trajectory_counts(states: np.ndarray, actions: np.ndarray, S: int, A: int) -> np.ndarray:
    """psi(tau) for a batch of trajectories: ``states, actions (B, H)`` -> ``(B, S*A)``."""
    idx = np.asarray(states) * A + np.asarray(actions)  # (B, H)
    out = np.zeros((idx.shape[0], S * A))
    np.add.at(out, (np.arange(idx.shape[0])[:, None], idx), 1.0)
    return out


def empirical_model(counts: np.ndarray) -> np.ndarray:
    """P_hat(s' | s, a) = n(s, a, s') / n(s, a), uniform where n(s, a) = 0: ``(B, S, A, S)``."""
    c = np.asarray(counts, dtype=np.float64)
    n = c.sum(axis=-1, keepdims=True)
    S = c.shape[-1]
    return np.where(n > 0, c / np.maximum(n, 1.0), 1.0 / S)
