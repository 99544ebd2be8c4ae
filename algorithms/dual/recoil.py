r"""ReCOIL, tabular and exact: imitation from expert data plus arbitrary data by matching mixtures.

Reference: Sikchi, Zheng, Zhang, Niekum, "Dual RL: Unification and New Methods for Reinforcement
and Imitation Learning", ICLR 2024 (arXiv 2302.08560), the ReCOIL section (its number [M]),
eq. (10) and appendix eq. (140); theory-preference-dual-llm.md 6.4. What is verified and what is
not:

* the *idea* [A, and the reviews S]: match the mixture ``beta d + (1 - beta) d^S`` to
  ``beta d^E + (1 - beta) d^S`` instead of d to d^E (d^E expert, d^S the supplementary
  "arbitrary" data), so that no coverage ``d^E << d^S`` is needed and no discriminator is
  trained;
* the paper's dual (Theorem 1 / its Lemma "recoilq"; eq. (10) of the main text, whose proof
  assumes ``mu0 = d^E`` -- reviewer erratum, reference 6.2 -- and the general form, appendix
  eq. (140)): the PDF was not readable here, but a review of the paper's source quotes it [S] as

      max_pi min_Q  beta (1 - gamma) E_{mu0, pi}[Q] + E_{m}[f*(T_0 Q - Q)]
                    - (1 - beta) E_{d^S}[T_0 Q - Q],
      (T_0 Q)(s, a) = gamma sum_{s'} P(s'|s, a) sum_{a'} pi(a'|s') Q(s', a')   (zero reward),

  which :func:`recoil_dual_q_value` evaluates (min over Q for a fixed pi, by Newton). The tests
  check it against the primal below: for every pi, ``min_Q = -D_f(beta d^pi + (1 - beta) d^S ||
  m)`` (the policy-constrained flow pins d = d^pi >= 0, so the plain conjugate f* is exact
  there), and the max over pi is attained at ReCOIL's policy.

The primal (the mixture-matching problem, exact, over the discounted flow polytope):

    min_{d >= 0}  D_f( beta d + (1 - beta) d^S  ||  m ),     m = beta d^E + (1 - beta) d^S,
    s.t.  sum_a d(s, a) = (1 - gamma) mu(s) + gamma sum_{s', a'} P(s | s', a') d(s', a').

If d^E is an occupancy measure of the model, d = d^E is feasible with value 0, and it is the only
minimiser for strictly convex f (equal mixtures mean equal d): ReCOIL recovers the expert wherever
d^E lives, whatever d^S covers. Its dual-V form (our derivation, the state-multiplier counterpart
of the dual-Q form above; multiplier V(s) per flow row), which is what :func:`solve_recoil`
minimises:

    min_V  (1 - gamma) mu^T V + sum_{(s,a)} m(s, a) C_{t0(s,a)}(y(s, a))
                 + (1 - beta) / beta * sum_{(s,a)} d^S(s, a) (M V)(s, a),
    y = -(M V) / beta = (gamma P V - V) / beta,        M = E - gamma P,
    C_{t0}(y) = sup_{t >= t0} t y - f(t),               t0 = (1 - beta) d^S / m  (in [0, 1]),

with primal recovery ``beta d* = m max(t0, (f')^{-1}(y)) - (1 - beta) d^S`` (>= 0 by
construction) and ``min_V = -D_f(x* || m)`` at the optimum. In the scaled variable ``U = V /
beta`` it reads ``beta (1 - gamma) mu^T U + E_m[C(T_0 U - U)] - (1 - beta) E_{d^S}[T_0 U - U]``:
the quoted form with V(s) for Q(s, pi(s)) and ``C_{t0}``, the conjugate of f restricted to
``t >= t0``, for f*. The restriction is what keeps ``d >= 0`` once the policy is no longer fixed
(over the whole flow polytope the plain f* would allow d of any sign). The reward enters nowhere:
ReCOIL sees no rewards.

Tabular exact sub-problem on data (:func:`recoil`, the deviation from the paper, which fits Q, V
and the policy with networks and the surrogate losses of
:mod:`~theorylab.algorithms.dual.surrogate_losses`): the model is the empirical model of the
union of both datasets (:mod:`~theorylab.algorithms.dual.empirical_model`), ``d^E`` and ``d^S``
are the two datasets' empirical pair distributions, and the dual is solved to ``|grad| <= 1e-12``
by Newton (:mod:`~theorylab.algorithms.dual.smooth_dual_solver`; its gradient is the flow
residual). The policy is ``pi(a|s) = d*(s, a) / sum_a' d*(s, a')`` (the paper extracts it by
weighted behaviour cloning on the same ratio); where ``d*(s, .) = 0`` it falls back to the
union data's empirical behaviour (uniform where there is no data).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from theorylab.algorithms.dual.empirical_model import check_discounted, empirical_models
from theorylab.algorithms.dual.f_divergences import FDivergence, divergence
from theorylab.algorithms.dual.inputs import (
    DualInputError,
    check_distribution,
    check_flow_support,
)
from theorylab.algorithms.dual.smooth_dual_solver import Conjugate, minimize_smooth_dual
from theorylab.algorithms.offline.dataset import OfflineDataset
from theorylab.algorithms.offline.result import OfflineResult
from theorylab.algorithms.planning.lp import (
    OccupancyPolicy,
    _discount,
    _solve,
    _weights,
    discounted_lp_matrix,
    flow_residual,
)

GRAD_TOL = 1e-12


@dataclass
class MixtureMatchingSolution(OccupancyPolicy):
    """A solution of the ReCOIL primal or its dual.

    occupancy ``(S, A)`` the recovered d (>= 0, zero off the support of m); V ``(S,)`` the flow
    multipliers; ``divergence_value = D_f(beta d + (1 - beta) d^S || m)`` at occupancy;
    ``dual_value`` the dual objective at V (``= -divergence_value`` at the optimum);
    ``gap = dual_value + divergence_value``; ``flow_residual`` its max-norm at occupancy.
    ``policy``: read off the occupancy. Build one with :meth:`certify`.
    """

    occupancy: np.ndarray
    V: np.ndarray
    divergence_value: float
    dual_value: float
    gap: float
    flow_residual: float
    divergence: str
    beta: float
    gamma: float
    method: str
    seconds: float
    info: dict = field(default_factory=dict)

    @classmethod
    def certify(cls, mdp, d, V, dual_value, dS, m, beta, f, g, mu, method, started, info):
        """The one constructor: ``D_f(beta d + (1 - beta) d^S || m)`` and the flow residual
        computed at ``d (S, A)`` from the model, the gap from ``dual_value`` (NaN for the primal
        solve); d^S, m ``(S, A)``, V ``(S,)``; ``started``: the solve's ``time.perf_counter()``."""
        div = mixture_divergence(f, d, dS, m, beta)
        return cls(
            occupancy=d,
            V=V,
            divergence_value=div,
            dual_value=dual_value,
            gap=dual_value + div,
            flow_residual=float(np.max(np.abs(flow_residual(mdp, d, gamma=g, mu=mu)))),
            divergence=f.name,
            beta=beta,
            gamma=g,
            method=method,
            seconds=time.perf_counter() - started,
            info=info,
        )


def check_beta(beta) -> float:
    """The mixture weight beta as a float in (0, 1]; DualInputError otherwise."""
    try:
        b = float(beta)
    except (TypeError, ValueError):
        raise DualInputError(f"beta must be a number in (0, 1], got {beta!r}") from None
    if not 0.0 < b <= 1.0:
        raise DualInputError(
            f"beta must lie in (0, 1], got {beta!r} (beta = 0 makes both mixtures d^S: nothing "
            "is imitated; beta = 1 matches d to d^E alone)"
        )
    return b


def lower_bounded_conjugate(f: FDivergence, t0: np.ndarray) -> Conjugate:
    """``C(y) = sup_{t >= t0} t y - f(t)`` elementwise, with ``t0 (n,) >= 0`` fixed: maximiser
    ``t(y) = max(t0, (f')^{-1}(y)) = C'(y)``, ``C''(y) = (f*)''(y)`` where ``(f')^{-1}(y) > t0``
    and 0 elsewhere (the generalised Hessian of the semismooth Newton method)."""
    if not f.smooth:
        raise DualInputError(f"ReCOIL's dual needs a smooth f (kl, chi2, half-chi2), got {f.name}")
    t0 = np.asarray(t0, dtype=np.float64)

    def first(y):
        return np.maximum(t0, f.conjugate_derivative(y))

    def value(y):
        t = first(y)
        return t * y - f.f(t)

    def second(y):
        return np.where(f.conjugate_derivative(y) > t0, f.conjugate_second_derivative(y), 0.0)

    return Conjugate(value, first, second)


def _prepare(mdp, d_expert, d_supp, beta, f, gamma, mu):
    beta = check_beta(beta)
    f = divergence(f)
    g = _discount(mdp, gamma)
    mu = _weights(mdp, mu)
    shape = (mdp.S, mdp.A)
    dE = check_distribution(d_expert, shape, "d^E")
    dS = check_distribution(d_supp, shape, "d^S")
    m = beta * dE + (1.0 - beta) * dS
    check_flow_support(mdp, m, g, mu)
    return beta, f, g, mu, dE, dS, m


def mixture_divergence(f: FDivergence, d, d_supp, m, beta: float) -> float:
    """``D_f(beta d + (1 - beta) d^S || m)`` for ``(S, A)`` arrays."""
    return f.divergence(beta * np.asarray(d) + (1.0 - beta) * np.asarray(d_supp), m)


def recoil_dual_objective(mdp, V, d_supp, m, beta: float, f: FDivergence, gamma, mu) -> float:
    """The dual of the module docstring at ``V (S,)`` (recomputed from the model, not the solver's
    matrices; d_supp, m ``(S, A)``)."""
    V = np.asarray(V, dtype=np.float64)
    MV = V[:, None] - gamma * mdp.expected_next(V, 0)  # (S, A) = (M V)
    on = m > 0
    t0 = (1.0 - beta) * d_supp[on] / m[on]
    conj = lower_bounded_conjugate(f, t0)
    return float(
        (1.0 - gamma) * mu @ V
        + np.sum(m[on] * conj.value(-MV[on] / beta))
        + (1.0 - beta) / beta * np.sum(d_supp * MV)
    )


def solve_recoil(
    mdp,
    d_expert: np.ndarray,
    d_supp: np.ndarray,
    beta: float = 0.5,
    f: str | FDivergence = "kl",
    *,
    gamma: float | None = None,
    mu: np.ndarray | None = None,
    tol: float = GRAD_TOL,
    max_iter: int = 500,
) -> MixtureMatchingSolution:
    """Solve ReCOIL's mixture-matching problem through its dual (module docstring) by Newton.

    mdp: a stationary TabularMDP (its rewards are ignored); d_expert, d_supp ``(S, A)``
    distributions d^E and d^S; beta in (0, 1]; f: "kl", "chi2" or "half-chi2". Raises
    DualInputError (bad beta, f or distributions) and UncoveredFlowError (no occupancy lives on
    the support of m).
    """
    t_start = time.perf_counter()
    beta, f, g, mu, dE, dS, m = _prepare(mdp, d_expert, d_supp, beta, f, gamma, mu)
    on = np.flatnonzero(m.ravel() > 0)
    M = discounted_lp_matrix(mdp, g)[on].tocsr()  # (n, S)
    m_on, dS_on = m.ravel()[on], dS.ravel()[on]
    b = (1.0 - g) * mu + (1.0 - beta) / beta * (M.T @ dS_on)
    conj = lower_bounded_conjugate(f, (1.0 - beta) * dS_on / m_on)
    res = minimize_smooth_dual(
        M,
        b,
        np.zeros(on.size),
        m_on / beta,
        beta,
        conj,
        np.zeros(mdp.S),
        tol=tol,
        max_iter=max_iter,
        continuation=False,
    )
    V = res.x
    d = np.zeros(mdp.S * mdp.A)
    d[on] = (m_on * conj.first(-(M @ V) / beta) - (1.0 - beta) * dS_on) / beta
    d = np.maximum(d, 0.0).reshape(mdp.S, mdp.A)  # >= 0 by construction; clears -1e-17
    dual = recoil_dual_objective(mdp, V, dS, m, beta, f, g, mu)
    info = {"iterations": res.iterations, "grad_norm": res.grad_norm}
    return MixtureMatchingSolution.certify(
        mdp, d, V, dual, dS, m, beta, f, g, mu, "newton", t_start, info
    )


def solve_recoil_primal(
    mdp,
    d_expert: np.ndarray,
    d_supp: np.ndarray,
    beta: float = 0.5,
    f: str | FDivergence = "kl",
    *,
    gamma: float | None = None,
    mu: np.ndarray | None = None,
    solver: str = "CLARABEL",
    solver_options: dict | None = None,
) -> MixtureMatchingSolution:
    """The same problem solved on the primal side by cvxpy (the reference answer): ``d >= 0`` on
    the support of m, the flow rows as equalities, ``D_f`` as an exponential-cone (KL) or
    quadratic (chi^2) expression. V holds cvxpy's multipliers of the flow rows as returned (for
    KL they are not the dual's V: the exponential-cone reformulation moves them by a constant),
    so ``dual_value`` and ``gap`` are NaN: compare the divergence values and occupancies.
    solver_options: passed to cvxpy (e.g. CLARABEL's ``tol_gap_abs``)."""
    t_start = time.perf_counter()
    beta, f, g, mu, dE, dS, m = _prepare(mdp, d_expert, d_supp, beta, f, gamma, mu)
    on = np.flatnonzero(m.ravel() > 0)
    Mt = discounted_lp_matrix(mdp, g)[on].T.tocsr()  # (S, n)
    x = cp.Variable(on.size, nonneg=True)
    flow = Mt @ x == (1.0 - g) * mu
    mix = beta * x + (1.0 - beta) * dS.ravel()[on]
    problem = cp.Problem(cp.Minimize(f.cvxpy_divergence(mix, m.ravel()[on])), [flow])
    _solve(problem, solver, solver_options, f"ReCOIL ({f.name}) primal of {mdp!r}")
    d = np.zeros(mdp.S * mdp.A)
    d[on] = np.clip(np.asarray(x.value, dtype=np.float64), 0.0, None)
    d = d.reshape(mdp.S, mdp.A)
    V = np.asarray(flow.dual_value, dtype=np.float64)
    info = {"solver": solver, "status": problem.status}
    return MixtureMatchingSolution.certify(
        mdp, d, V, float("nan"), dS, m, beta, f, g, mu, "cvxpy-primal", t_start, info
    )


def recoil_dual_q_value(
    mdp,
    policy: np.ndarray,
    d_expert: np.ndarray,
    d_supp: np.ndarray,
    beta: float = 0.5,
    f: str | FDivergence = "kl",
    *,
    gamma: float | None = None,
    mu: np.ndarray | None = None,
    tol: float = GRAD_TOL,
) -> tuple[float, np.ndarray]:
    """The paper's dual-Q objective (module docstring) minimised over Q for a fixed policy
    ``(S, A)``: returns ``(min_Q value, Q (S, A))``. Each ``(s, a)`` row is a smooth convex term
    ``m f*((T_0 Q - Q)(s, a))`` on the support of m (the policy must play only actions in that
    support, or the minimum is -inf). By Newton on the shared smooth solver."""
    beta, f, g, mu, dE, dS, m = _prepare(mdp, d_expert, d_supp, beta, f, gamma, mu)
    if not f.smooth:
        raise DualInputError(
            f"the dual-Q form needs a smooth f (kl, chi2, half-chi2), got {f.name}"
        )
    pi = np.asarray(policy, dtype=np.float64)
    S, A = mdp.S, mdp.A
    outside = (pi > 0) & (m <= 0)
    if outside.any():
        s_, a_ = (int(i) for i in np.argwhere(outside)[0])
        raise DualInputError(
            f"the policy plays (s={s_}, a={a_}) where m = 0: D_f is infinite there and the "
            "dual-Q objective is unbounded below"
        )
    # (I - T_0) Q = M_pi Q, M_pi = I - gamma P Pi  (S*A, S*A), Pi[s', (s', a')] = pi(a'|s')
    Pi = sp.csr_array(
        (pi.ravel(), (np.repeat(np.arange(S), A), np.arange(S * A))), shape=(S, S * A)
    )
    M_pi = sp.csr_array(sp.eye(S * A) - g * sp.csr_array(mdp.P_flat(0)) @ Pi)
    on = np.flatnonzero(m.ravel() > 0)
    M_on = M_pi[on].tocsr()
    start = (mu[:, None] * pi).ravel()  # mu0 (x) pi
    b = beta * (1.0 - g) * start + (1.0 - beta) * (M_on.T @ dS.ravel()[on])
    conj = Conjugate(f.conjugate, f.conjugate_derivative, f.conjugate_second_derivative)
    res = minimize_smooth_dual(
        M_on,
        b,
        np.zeros(on.size),
        m.ravel()[on],
        1.0,
        conj,
        np.zeros(S * A),
        tol=tol,
        continuation=False,
    )
    return float(res.value), res.x.reshape(S, A)


# ------------------------------------------------------------------------------ on datasets
def pair_distributions(dataset: OfflineDataset) -> np.ndarray:
    """Each seed's empirical pair distribution ``n(s, a) / sum n`` ``(B, S, A)`` (weighted rows
    count their weight). Raises DualInputError for a seed with no data."""
    B, S, A = dataset.n_seeds, dataset.S, dataset.A
    w = np.ones(dataset.states.shape) if dataset.weights is None else dataset.weights
    flat = dataset.states * A + dataset.actions + (np.arange(B) * S * A)[:, None]
    counts = np.bincount(flat.ravel(), weights=w.ravel(), minlength=B * S * A).reshape(B, S, A)
    total = counts.sum(axis=(1, 2))
    if np.any(total <= 0):
        raise DualInputError(f"seed {int(np.argmin(total))} of the dataset has no data")
    return counts / total[:, None, None]


def check_same_source(expert: OfflineDataset, dataset: OfflineDataset, who: str) -> None:
    """Both datasets discounted, from the same model (S, A, gamma, mu0) and seeds; DualInputError
    naming what differs otherwise."""
    check_discounted(expert, who)
    check_discounted(dataset, who)
    same = (expert.n_seeds, expert.S, expert.A, expert.gamma, expert.horizon)
    other = (dataset.n_seeds, dataset.S, dataset.A, dataset.gamma, dataset.horizon)
    if same != other:
        raise DualInputError(
            f"{who}: the expert data (B, S, A, gamma, H) = {same} and the other data {other} "
            "must come from the same model and seeds"
        )
    if not np.allclose(expert.mu0, dataset.mu0):
        raise DualInputError(f"{who}: the two datasets have different initial distributions")


def union(expert: OfflineDataset, dataset: OfflineDataset, who: str) -> OfflineDataset:
    """Both datasets' rows side by side, per seed (the data the empirical model is built from).
    Both must be discounted, from the same model and seeds (DualInputError otherwise)."""
    check_same_source(expert, dataset, who)

    def cat(a, b, fill):
        if a is None and b is None:
            return None
        a = np.full(expert.states.shape, fill) if a is None else a
        b = np.full(dataset.states.shape, fill) if b is None else b
        return np.concatenate([a, b], axis=1)

    return replace(
        dataset,
        states=cat(expert.states, dataset.states, 0),
        actions=cat(expert.actions, dataset.actions, 0),
        rewards=cat(expert.rewards, dataset.rewards, 0.0),
        next_states=cat(expert.next_states, dataset.next_states, 0),
        stages=None,
        weights=cat(expert.weights, dataset.weights, 1.0),
        n_episodes=None,
        behaviour=None,
        data_distribution=None,
        info={"expert": expert.info, "other": dataset.info},
    )


def occupancy_policy(d: np.ndarray, d_data: np.ndarray) -> np.ndarray:
    """``d (S, A)`` normalised per state; where ``d(s, .) = 0`` the data's empirical behaviour
    ``d_data (S, A)`` (uniform where there is none)."""
    A = d.shape[1]
    mass = d.sum(axis=1, keepdims=True)
    seen = d_data.sum(axis=1, keepdims=True)
    behaviour = np.where(seen > 0, d_data / np.where(seen > 0, seen, 1.0), 1.0 / A)
    return np.where(mass > 0, d / np.where(mass > 0, mass, 1.0), behaviour)


def recoil(
    expert: OfflineDataset,
    dataset: OfflineDataset,
    *,
    beta: float = 0.5,
    f: str = "kl",
) -> OfflineResult:
    """Tabular ReCOIL from expert data plus arbitrary data (module docstring); one exact solve per
    seed. Both datasets discounted, same model and seeds. Returns an OfflineResult with
    ``policy (B, S, A)``, ``value_estimate`` NaN (imitation estimates no value), ``V (B, S)``.
    """
    t0 = time.perf_counter()
    both = union(expert, dataset, "recoil")
    models = empirical_models(both, "recoil")
    dE, dS = pair_distributions(expert), pair_distributions(dataset)
    B, S, A = dataset.n_seeds, dataset.S, dataset.A
    policy, V = np.empty((B, S, A)), np.empty((B, S))
    gaps, residuals, divs = [], [], []
    for b, (mdp, d_all) in enumerate(models):
        sol = solve_recoil(mdp, dE[b], dS[b], beta, f)
        policy[b] = occupancy_policy(sol.occupancy, d_all)
        V[b] = sol.V
        gaps.append(sol.gap)
        residuals.append(sol.flow_residual)
        divs.append(sol.divergence_value)
    return OfflineResult(
        algorithm="recoil",
        policy=policy,
        value_estimate=np.full(B, np.nan),
        V=V,
        Q=None,
        pessimistic=False,
        params={"beta": beta, "f": f},
        info={
            "seconds": time.perf_counter() - t0,
            "duality_gap": np.array(gaps),
            "flow_residual": np.array(residuals),
            "mixture_divergence": np.array(divs),
        },
    )
