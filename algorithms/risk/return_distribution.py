"""Exact return distribution of a policy by distributional dynamic programming on a reward lattice.

For a finite-horizon TabularMDP whose reward outcomes lie on a lattice of width eta
(:mod:`.reward_lattice`), the joint law of (state, return so far) is pushed forward stage by stage:

    d_0(s, 0)            = mu0(s),
    d_{h+1}(s', j + i)  += d_h(s, j) * pi_h(a | s, j) * q_h(k | s, a) * P_h(s' | s, a),

for every action a and reward outcome k with increment ``i = increments[h, s, a, k]`` and
probability ``q_h(k | s, a) = probs[h, s, a, k]``. The return distribution is
``Pr(Z = j * eta) = sum_s d_H(s, j)``. Probabilities are float64 and exact up to round-off (no
sampling); the mean equals :func:`theorylab.algorithms.planning.evaluate_policies` (tested).

Policies: deterministic Markov ``([B,] H, S)`` int, stochastic Markov ``([B,] H, S, A)`` float, or
:class:`~theorylab.algorithms.risk.augmented_policy.AugmentedPolicy`. An augmented policy reads
its remaining budget ``j_1 - (budget spent)``. When its own lattice is the evaluation lattice the
budget spent *is* the return index, so the state stays ``(s, j)``. When it differs (a policy planned
on a coarser, rounded lattice), both are tracked, packed into one index
``c = j_return * (M_policy + 1) + j_spent`` whose increments are
``i_return * (M_policy + 1) + i_policy`` -- the same push-forward on a larger lattice.

Cost per stage: O(B * nnz(P_h) * C) with C lattice indices (C = M + 1, or (M + 1)(M_policy + 1)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.algorithms.risk.augmented_policy import AugmentedPolicy
from theorylab.algorithms.risk.reward_lattice import RewardLattice, reward_lattice
from theorylab.risk_measures import cvar, var


@dataclass(frozen=True)
class ReturnDistribution:
    """The law of the return ``Z``: ``Pr(Z = values[j]) = probs[..., j]``.

    values: ``(J,)`` lattice returns ``j * eta``; probs: ``(J,)`` or ``(B, J)`` (a row per policy).
    lattice: the evaluation lattice (its ``rounding_error`` bounds ``Z_lattice - Z_true``).
    """

    values: np.ndarray
    probs: np.ndarray
    lattice: RewardLattice

    def mean(self) -> np.ndarray | float:
        out = self.probs @ self.values
        return float(out) if np.ndim(out) == 0 else out

    def cvar(self, tau: float) -> np.ndarray | float:
        """``CVaR_tau(Z)`` (lower tail), ``(B,)`` or a float."""
        return cvar(self.values, self.probs, tau)

    def var(self, tau: float) -> np.ndarray | float:
        """``VaR_tau(Z) = min{z : Pr(Z <= z) >= tau}``, ``(B,)`` or a float."""
        return var(self.values, self.probs, tau)

    def cdf(self) -> np.ndarray:
        return np.cumsum(self.probs, axis=-1)


def _markov_weights(pol: np.ndarray, h: int, C: int, A: int) -> np.ndarray:
    """Action probabilities ``(B, S, C, A)`` of a Markov policy at stage h (same for every c)."""
    if pol.ndim == 3:  # deterministic (B, H, S)
        w = np.eye(A)[pol[:, h]]  # (B, S, A)
    else:
        w = pol[:, h]  # (B, S, A)
    return np.broadcast_to(w[:, :, None, :], (w.shape[0], w.shape[1], C, A))


def _augmented_weights(pol: AugmentedPolicy, h: int, spent: np.ndarray, A: int) -> np.ndarray:
    """One-hot actions ``(B, S, C, A)`` of an augmented policy; ``spent`` ``(C,)`` budget spent."""
    j = np.maximum(pol.initial_budget[:, None] - spent[None, :], 0)  # (B, C)
    B, S = pol.actions.shape[0], pol.actions.shape[2]
    acts = pol.actions[np.arange(B)[:, None, None], h, np.arange(S)[None, :, None], j[:, None, :]]
    return np.eye(A)[acts]  # (B, S, C, A)


def _push_forward(
    d: np.ndarray, w: np.ndarray, inc: np.ndarray, q: np.ndarray, P_h, A: int
) -> np.ndarray:
    """One stage of the distributional recursion on a 1-D lattice index.

    d: ``(B, S, C)`` mass on (state, index); w: ``(B, S, C, A)`` action probabilities;
    inc: ``(S, A, K)`` index increments; q: ``(S, A, K)`` outcome probabilities;
    P_h: ``(S*A, S)`` transitions (dense or CSR). Returns ``(B, S, C)``.
    """
    B, S, C = d.shape
    out = np.zeros_like(d)
    for a in range(A):
        da = d * w[..., a]  # (B, S, C)
        if not da.any():
            continue
        for k in range(inc.shape[-1]):
            mass = da * q[:, a, k][None, :, None]
            for u in np.unique(inc[:, a, k]):
                u = int(u)
                sel = np.flatnonzero(inc[:, a, k] == u)
                m = mass[:, sel, : C - u]  # (B, n_sel, C - u); the top u indices are unreachable
                if not m.any():
                    continue
                Psel = P_h[sel * A + a]  # (n_sel, S')
                flat = m.transpose(1, 0, 2).reshape(len(sel), -1)  # (n_sel, B * (C - u))
                nxt = np.asarray(Psel.T @ flat).reshape(S, B, C - u)
                out[:, :, u:] += nxt.transpose(1, 0, 2)
    return out


def joint_index(
    policy_lattice: RewardLattice, E: RewardLattice
) -> tuple[int, np.ndarray, int, np.ndarray]:
    """The evaluation index of a budget-augmented policy: the return so far on the evaluation
    lattice ``E`` and the budget spent on the policy's lattice, as one integer
    ``c = e * stride + spent``. Returns ``(stride, inc, C, spent)``: inc ``(.., A, K)`` the
    index increment of each reward outcome, C the number of indices, spent ``(C,)`` the budget
    index of each (stride = 1 and inc = E's own when the two lattices are the same)."""
    if policy_lattice.same_as(E):
        stride, inc = 1, E.increments
    else:
        if policy_lattice.K != E.K:
            raise ValueError("policy lattice and evaluation lattice have different outcomes")
        stride = policy_lattice.max_index + 1
        inc = E.increments * stride + policy_lattice.increments
    C = (E.max_index + 1) * stride
    spent = np.arange(C) % stride if stride > 1 else np.arange(C)
    return stride, inc, C, spent


def return_distribution(
    mdp, policy, *, lattice: RewardLattice | None = None, batched: bool | None = None
) -> ReturnDistribution:
    """The exact distribution of the undiscounted return of one or many policies.

    mdp: a finite-horizon TabularMDP. policy: deterministic ``(H, S)`` / ``(B, H, S)`` int,
    stochastic ``(H, S, A)`` / ``(B, H, S, A)`` float, or an :class:`AugmentedPolicy`.
    lattice: the evaluation lattice; defaults to the MDP's exact lattice (raises
    :class:`~.reward_lattice.RewardGridError` when the rewards are on no grid 1/m, m <= 1000).
    batched: whether a Markov policy array has a leading seed axis (inferred from ndim if None).
    Returns :class:`ReturnDistribution` with ``probs`` ``(J,)`` or ``(B, J)``.
    """
    if mdp.horizon is None:
        raise ValueError(f"{mdp!r} has no finite horizon")
    E = lattice if lattice is not None else reward_lattice(mdp)
    if E.reward_model != mdp.reward_model or E.H != mdp.horizon:
        raise ValueError("the evaluation lattice was built for another reward model or horizon")
    H, S, A = mdp.horizon, mdp.S, mdp.A
    M = E.max_index

    if isinstance(policy, AugmentedPolicy):
        policy.check_for(mdp)
        single = not policy.batched
        pol = policy.as_batch()
        stride, inc, C, spent = joint_index(pol.lattice, E)
        B = pol.n_seeds

        def weights(h: int) -> np.ndarray:
            return _augmented_weights(pol, h, spent, A)
    else:
        arr = np.asarray(policy)
        if batched is None:
            batched = arr.ndim == (3 if np.issubdtype(arr.dtype, np.integer) else 4)
        pol_arr = mdp.check_policy(arr, batched=batched)
        single = not batched
        if single:
            pol_arr = pol_arr[None]
        B, stride, inc, C = pol_arr.shape[0], 1, E.increments, M + 1

        def weights(h: int) -> np.ndarray:
            return _markov_weights(pol_arr, h, C, A)

    d = np.zeros((B, S, C))
    d[:, :, 0] = mdp.mu0[None, :]
    for h in range(H):
        d = _push_forward(d, weights(h), inc[h], E.probs[h], mdp.P_flat(h), A)
    probs = d.sum(axis=1).reshape(B, M + 1, stride).sum(axis=2)  # (B, M + 1): marginal of j_return
    values = E.levels
    return ReturnDistribution(values, probs[0] if single else probs, E)
