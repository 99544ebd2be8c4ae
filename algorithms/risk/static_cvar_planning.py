"""Exact static-CVaR planning by state augmentation (Bauerle and Ott 2011; theory.md section 4.1).

Objective: ``CVaR*_tau = max over history-dependent policies pi of CVaR_tau(Z^pi)`` with
``Z = r_1 + ... + r_H`` the undiscounted return and CVaR the lower tail (:mod:`.cvar`).

Structure (Bauerle and Ott 2011, Theorem 3.1; Wang, Kallus, Sun 2023, section 5, the
"augmented MDP"). Exchange the two suprema in ``sup_pi sup_b { b - E[(b - Z^pi)^+] / tau }``:

    CVaR*_tau = max_b { b - U_1(mu0, b) / tau },   U_1(mu0, b) = min_pi E[(b - Z^pi)^+].

The inner problem is a Markov MDP on the augmented state (s, b) with budget dynamics
``b_{h+1} = b_h - r_h`` and a terminal cost ``(b_{H+1})^+``. On a reward lattice of width eta
(:mod:`.reward_lattice`) with budget index j (``b = j * eta``, clipped at 0 because a budget
``b <= 0`` has zero shortfall for every continuation, since ``Z >= 0``):

    U_H(s, j)    = j * eta                                   (0-based stages h = 0..H-1),
    Q_h(s, a, j) = sum_k q_h(k|s,a) sum_{s'} P_h(s'|s,a) U_{h+1}(s', max(j - i_h(s,a,k), 0)),
    U_h(s, j)    = min_a Q_h(s, a, j),     pi_h(s, j) = argmin_a Q_h(s, a, j),
    CVaR*_tau    = max_{j in 0..M} { j * eta - sum_s mu0(s) U_0(s, j) / tau },   j_1 = argmax.

The budget is chosen once, before s_1 is drawn (one b for the mixture over mu0). Each stage costs
O(nnz(P_h) * J) (one product ``P_h @ U_{h+1}`` for all J budgets) plus a gather over the K reward
outcomes; J = M + 1 lattice levels, M <= H / eta.

Exactness. When every reward outcome is on the lattice, the budget grid loses nothing: the
return Z then lives on the lattice, ``f(b) = b - E[(b - Z)^+] / tau`` is concave and piecewise
linear with kinks at the atoms of Z, so the sup over b in R is attained at an atom (the
tau-quantile VaR_tau(Z) of the optimal policy), which is a lattice point in ``[0, M * eta]``.

Discretisation error (a lattice coarser than the rewards' own grid). Deterministic rewards off the
grid are rounded up, ``phi(r) = eta * ceil(r / eta)`` (Wang et al. section 6). Let ``Z_phi`` be the
rounded return on the same path and ``Delta = sum_h max_{s,a} (phi(r_h(s,a)) - r_h(s,a)) < H * eta``
(``lattice.rounding_error``). Pathwise ``Z <= Z_phi <= Z + Delta``; CVaR is monotone and
``CVaR(X + c) = CVaR(X) + c``, so for every policy ``CVaR(Z) <= CVaR(Z_phi) <= CVaR(Z) + Delta``.
Taking maxima and using that the planned policy pi_phi is optimal for the rounded problem:

    CVaR*_tau  <=  value  <=  CVaR*_tau + Delta,       CVaR_tau(Z^{pi_phi}) >= value - Delta
                                                                        >= CVaR*_tau - Delta,

where ``value`` is the returned optimum of the rounded problem and pi_phi acts with its budget
decreased by the rounded rewards (a valid history-dependent policy of the true MDP). So the
returned policy is Delta-optimal and the returned value overestimates by at most Delta; both are
reported (``value``, ``discretisation_error``). Bernoulli rewards (outcomes 0 and 1) are exact on
every grid ``1 / m``.

Ties (actions or budgets whose values agree to 1e-12 relative) go to the smallest index.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from theorylab.algorithms.risk.augmented_policy import AugmentedPolicy
from theorylab.algorithms.risk.reward_lattice import RewardLattice, reward_lattice
from theorylab.risk_measures import _check_tau

TIE_TOL = 1e-12


@dataclass
class StaticCVaRSolution:
    """Result of :func:`static_cvar_planning`.

    value: ``CVaR*_tau`` (of the lattice returns; exact when ``discretisation_error == 0``).
    policy: the optimal :class:`AugmentedPolicy` (actions ``(H, S, J)``, initial budget index).
    budget: ``b_1 = eta * j_1``, the tau-quantile of the optimal return.
    U: ``(H + 1, S, J)`` inner values ``min_pi E[(b - Z_h)^+]``; Q: ``(H, S, A, J)``.
    objective: ``(J,)`` ``b - mu0 . U_0(., b) / tau`` for every lattice budget.
    discretisation_error: ``Delta`` (0 on an exact lattice): ``CVaR* <= value <= CVaR* + Delta``.
    """

    value: float
    policy: AugmentedPolicy
    budget: float
    U: np.ndarray
    Q: np.ndarray
    objective: np.ndarray
    lattice: RewardLattice
    discretisation_error: float
    info: dict = field(default_factory=dict)


def first_argmin(x: np.ndarray, axis: int) -> np.ndarray:
    """Smallest index whose value is within ``TIE_TOL`` (relative) of the minimum along ``axis``."""
    lo = x.min(axis=axis, keepdims=True)
    return np.argmax(x <= lo + TIE_TOL * (1.0 + np.abs(lo)), axis=axis)


def first_argmax(x: np.ndarray, axis: int) -> np.ndarray:
    """Smallest index whose value is within ``TIE_TOL`` (relative) of the maximum along ``axis``."""
    hi = x.max(axis=axis, keepdims=True)
    return np.argmax(x >= hi - TIE_TOL * (1.0 + np.abs(hi)), axis=axis)


def shortfall_backup(PU: np.ndarray, inc: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``Q(s, a, j) = sum_k q(k|s,a) PU(s, a, max(j - inc(s,a,k), 0))``.

    PU: ``([B,] S, A, J)`` expected next inner value ``sum_{s'} P(s'|s,a) U(s', j')`` for every j';
    inc, q: ``(S, A, K)``. Returns ``([B,] S, A, J)``.
    """
    J = PU.shape[-1]
    out = np.zeros(PU.shape)
    jj = np.arange(J)
    for k in range(inc.shape[-1]):
        idx = np.maximum(jj[None, None, :] - inc[:, :, k, None], 0)  # (S, A, J)
        idx = np.broadcast_to(idx, PU.shape)
        out += q[..., k, None] * np.take_along_axis(PU, idx, axis=-1)
    return out


def static_cvar_planning(
    mdp, tau: float, *, eta: float | None = None, lattice: RewardLattice | None = None
) -> StaticCVaRSolution:
    """Optimal static CVaR_tau and a Bauerle-Ott optimal augmented policy of a finite-horizon MDP.

    mdp: a TabularMDP with a horizon (dense or sparse, stationary or stage-dependent,
        deterministic or Bernoulli rewards).
    tau: risk level in (0, 1]; tau = 1 is the risk-neutral optimum.
    eta: lattice width; ``None`` uses the rewards' own exact grid. A coarser eta rounds
        deterministic rewards up and reports the error bound (module docstring).
    lattice: a prebuilt lattice (overrides eta).
    """
    tau = _check_tau(tau)
    if mdp.horizon is None:
        raise ValueError(f"{mdp!r} has no finite horizon; static CVaR planning needs one")
    t0 = time.perf_counter()
    lat = lattice if lattice is not None else reward_lattice(mdp, eta)
    H, S, A, J = mdp.horizon, mdp.S, mdp.A, lat.n_levels
    levels = lat.levels  # (J,)
    U = np.empty((H + 1, S, J))
    Q = np.empty((H, S, A, J))
    actions = np.empty((H, S, J), dtype=np.int64)
    U[H] = levels[None, :]  # terminal shortfall (b)^+ with b = j * eta >= 0
    for h in range(H - 1, -1, -1):
        PU = np.asarray(mdp.P_flat(h) @ U[h + 1]).reshape(S, A, J)
        Q[h] = shortfall_backup(PU, lat.increments[h], lat.probs[h])
        actions[h] = first_argmin(Q[h], axis=1)
        U[h] = np.take_along_axis(Q[h], actions[h][:, None, :], axis=1)[:, 0]
    objective = levels - (mdp.mu0 @ U[0]) / tau  # (J,)
    j1 = int(first_argmax(objective, axis=0))
    policy = AugmentedPolicy(actions, np.asarray(j1), lat)
    return StaticCVaRSolution(
        value=float(objective[j1]),
        policy=policy,
        budget=float(levels[j1]),
        U=U,
        Q=Q,
        objective=objective,
        lattice=lat,
        discretisation_error=lat.rounding_error,
        info={
            "method": "bauerle-ott augmentation",
            "tau": tau,
            "eta": lat.eta,
            "n_budgets": J,
            "seconds": time.perf_counter() - t0,
        },
    )
