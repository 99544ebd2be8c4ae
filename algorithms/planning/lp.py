"""Exact planning by linear programming: the value LP and its dual over occupancy measures.

Reference: Agarwal, Jiang, Kakade, Sun (AJKS), *Reinforcement Learning: Theory and Algorithms*,
section 1.3.4 (pp. 16-17) and Proposition 1.15; theory.md sections 6.1 and 9.5.

Discounted objective, gamma in [0, 1), weighting (initial) distribution mu ``(S,)``:

    primal (values)       min_V  sum_s mu(s) V(s)
                          s.t.   V(s) >= r(s, a) + gamma sum_{s'} P(s'|s, a) V(s')       all (s, a)

    dual (occupancies)    max_{d >= 0}  1/(1 - gamma) sum_{s,a} d(s, a) r(s, a)
                          s.t.   sum_a d(s, a) = (1 - gamma) mu(s)
                                                 + gamma sum_{s',a'} P(s|s', a') d(s', a')   all s

AJKS Prop. 1.15: the dual feasible set K_mu is exactly the set of normalised discounted occupancy
measures ``d^pi_mu(s, a) = (1 - gamma) sum_t gamma^t Pr^pi(s_t = s, a_t = a | s_0 ~ mu)`` of
stationary policies, and ``pi(a|s) = d(s, a) / sum_a' d(s, a')`` inverts the map. The dual objective
of ``d^pi_mu`` is ``V^pi(mu)``, so the dual LP is "maximise the value over occupancy measures" and
its solution d* yields an optimal policy. Both LPs have the value ``V*(mu)``. This occupancy LP is
the object that dual RL (theory.md 6.2) regularises.

Finite horizon (stages h = 0..H-1, papers write 1..H; ``V_H = 0``; stage-dependent P_h and r_h):

    primal   min  sum_s mu(s) V_0(s)
             s.t. V_h(s) >= r_h(s, a) + sum_{s'} P_h(s'|s, a) V_{h+1}(s')            all (h, s, a)
    dual     max_{d >= 0}  sum_h sum_{s,a} d_h(s, a) r_h(s, a)
             s.t. sum_a d_0(s, a) = mu(s)
                  sum_a d_{h+1}(s, a) = sum_{s',a'} P_h(s|s', a') d_h(s', a')        h = 0..H-2

with ``d_h(s, a) = Pr^pi(s_h = s, a_h = a)`` the stage occupancy (each stage sums to 1).

Matrix form. Let ``E (S*A, S)`` with ``E[s*A + a, s] = 1`` (``E @ V`` repeats V over actions) and
``P (S*A, S)`` the flat transition matrix (``mdp.P_flat(h)``, row ``s*A + a``). Both objectives are
one LP pair with the same sparse matrix M:

    discounted:      M = E - gamma P                                            (S*A, S)
    finite horizon:  M block-bidiagonal, block row h = [... E (col h), -P_h (col h+1) ...]
                                                                                (H*S*A, H*S)
    primal  min b^T V  s.t.  M V >= r            dual  max r^T x  s.t.  M^T x = b,  x >= 0

with ``(b, x) = (mu, d / (1 - gamma))`` discounted and ``(mu on stage 0, d)`` finite horizon. By
strong duality the Lagrange multipliers of one LP solve the other: a primal solve reads d off the
multipliers of ``M V >= r``, a dual solve reads V off those of the flow constraints, so both kinds
return V *and* d.

Sparse models stay sparse: M is assembled in scipy sparse form from the CSR ``P`` with
``nnz(M) <= nnz(P) + S*A`` per stage; P is never densified (a dense P is converted to sparse, which
drops its zeros), so the model handed to the solver has O(H * (nnz(P) + S*A)) entries.

Uniqueness (read before using V or the policy off the support of mu). Every primal-feasible V
satisfies ``V >= V*`` (``V >= T V`` and monotonicity of T), and complementary slackness with d*
gives ``V = V*`` on every state an optimal policy visits from mu. Elsewhere the solver may return
any feasible ``V >= V*``, and the extracted policy is arbitrary where ``d(s, .) = 0`` (we return the
uniform distribution there). Pass a full-support ``mu`` (e.g. uniform) to pin V* and an optimal
policy in every state of a discounted MDP.

Solver and accuracy: cvxpy, HiGHS by default (simplex, or IPM with crossover, so the answer is a
basic solution and the occupancy of a non-degenerate LP is a deterministic policy's), with primal
and dual feasibility tolerances tightened from HiGHS's 1e-7 to ``HIGHS_TOLERANCE = 1e-9``: a
Bellman constraint may be violated by at most that much, so ``V >= V* - tol / (1 - gamma)``
(``- H tol`` finite horizon), and a reward below the tolerance could otherwise be ignored. Any
installed cvxpy LP solver (``"CLARABEL"``, ...) is selectable, and ``solver_options`` go to it
unchanged (for HiGHS they override the tolerances above). A status other than ``"optimal"``
raises :class:`LPSolverError` naming the status. The V of a dual solve and the d of a primal solve
are the solver's multipliers, accurate to the same tolerances. Deviation from AJKS: none in the
formulation.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Literal

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from theorylab.errors import TheorylabError

LPKind = Literal["primal", "dual"]
DEFAULT_SOLVER = "HIGHS"
#: HiGHS primal and dual feasibility tolerance used unless ``solver_options`` overrides it
#: (HiGHS's own default, 1e-7, lets a constraint with a reward below 1e-7 go unenforced).
HIGHS_TOLERANCE = 1e-9


class LPSolverError(TheorylabError, RuntimeError):
    """The LP solver did not return an optimal solution (status other than ``"optimal"``)."""


@dataclass
class LPSolution:
    """An optimal solution of the planning LP pair (both the values and the occupancy measure).

    Discounted: ``V (S,)``, ``Q (S, A)``, ``occupancy (S, A)`` (sums to 1), ``policy (S, A)``.
    Finite horizon: ``V (H+1, S)`` with ``V[H] = 0``, ``Q (H, S, A)``, ``occupancy (H, S, A)``
    (each stage sums to 1), ``policy (H, S, A)``.
    ``value`` is the optimal objective ``V*(mu)`` as reported by the solver. ``Q`` is one exact
    Bellman backup of ``V``. ``kind`` is which LP was solved; ``status`` the cvxpy status;
    ``seconds`` the wall time of assembling and solving; ``info`` has ``solver``,
    ``solve_seconds`` (the solver's own time), ``iterations``, ``objective``, ``gamma`` /
    ``horizon``, ``n_variables``, ``n_constraints``, ``nnz`` (of M).
    """

    V: np.ndarray
    Q: np.ndarray
    occupancy: np.ndarray
    policy: np.ndarray
    value: float
    kind: str
    status: str
    seconds: float
    info: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------- the model
def action_repeat_matrix(S: int, A: int) -> sp.csr_array:
    """``E (S*A, S)`` with ``E[s*A + a, s] = 1``: ``(E @ V)[s*A + a] = V(s)``; ``E.T @ d`` sums
    ``d(s, .)`` over actions."""
    return sp.csr_array(
        (np.ones(S * A), np.repeat(np.arange(S), A), np.arange(S * A + 1)), shape=(S * A, S)
    )


def _sparse(M) -> sp.csr_array:
    """A stage transition matrix ``(S*A, S)`` as canonical CSR without stored zeros, so that the
    dense, CSR and CSR-with-stored-zeros forms of one model give the solver the same LP."""
    M = sp.csr_array(M, dtype=np.float64, copy=True)
    M.eliminate_zeros()
    M.sum_duplicates()
    return M


def _discount(mdp, gamma: float | None) -> float:
    g = gamma if gamma is not None else mdp.gamma
    if g is None:
        raise ValueError(f"{mdp!r} has no discount: pass gamma= (in [0, 1))")
    g = float(g)
    if not 0.0 <= g < 1.0:
        raise ValueError(f"gamma must lie in [0, 1), got {g}")
    if mdp.stage_dependent or mdp.reward_stage_dependent:
        raise ValueError(
            "the discounted LP needs a stationary MDP; this one is stage-dependent "
            "(use the finite-horizon LP)"
        )
    return g


def _horizon(mdp) -> int:
    if mdp.horizon is None:
        raise ValueError(f"{mdp!r} has no finite horizon: use the discounted LP (gamma=...)")
    if getattr(mdp, "gamma", None) is not None:  # never drop a discount silently
        raise ValueError(
            f"the finite-horizon LP solves the undiscounted H-step problem; {mdp!r} has the "
            f"discount gamma={mdp.gamma}, which it would ignore: use the discounted LP"
        )
    return int(mdp.horizon)


def _weights(mdp, mu) -> np.ndarray:
    mu = np.asarray(mdp.mu0 if mu is None else mu, dtype=np.float64)
    if mu.shape != (mdp.S,):
        raise ValueError(f"mu must have shape ({mdp.S},), got {mu.shape}")
    if not np.all(np.isfinite(mu)) or (mu < 0).any() or abs(mu.sum() - 1.0) > 1e-9:
        raise ValueError(f"mu must be a probability distribution over the {mdp.S} states")
    return mu


def discounted_lp_matrix(mdp, gamma: float) -> sp.csr_array:
    """``M = E - gamma P`` ``(S*A, S)``: the primal constraints read ``M V >= r``, the dual flow
    constraints ``M^T d = (1 - gamma) mu``. ``nnz(M) <= nnz(P) + S*A``."""
    E = action_repeat_matrix(mdp.S, mdp.A)
    M = sp.csr_array(E - gamma * _sparse(mdp.P_flat(0)))
    M.eliminate_zeros()  # gamma = 0 leaves explicit zeros where P had entries
    return M


def finite_horizon_lp_matrix(mdp) -> sp.csr_array:
    """Block-bidiagonal ``M (H*S*A, H*S)``: block row h is ``E`` in block column h and ``-P_h`` in
    block column h+1 (absent for h = H-1, where ``V_H = 0``). Row ``(h*S + s)*A + a`` is the
    constraint of ``(h, s, a)``, column ``h*S + s`` is ``V_h(s)``."""
    H, S, A = _horizon(mdp), mdp.S, mdp.A
    E = action_repeat_matrix(S, A)
    blocks: list[list] = [[None] * H for _ in range(H)]
    for h in range(H):
        blocks[h][h] = E
        if h + 1 < H:
            blocks[h][h + 1] = -_sparse(mdp.P_flat(h))
    return sp.csr_array(sp.bmat(blocks, format="csr"))


# ---------------------------------------------------------------------------------- solving
def _solve(problem: cp.Problem, solver: str, solver_options: dict | None, what: str) -> None:
    options = dict(solver_options or {})
    if solver.upper() == "HIGHS":
        # HiGHS options whose names clash with cvxpy's keywords (e.g. HiGHS's "solver") travel in
        # the nested dict "highs_options"; ours go there unless the caller set them either way.
        nested = dict(options.pop("highs_options", {}))
        for key in ("primal_feasibility_tolerance", "dual_feasibility_tolerance"):
            if key not in options and key not in nested:
                nested[key] = HIGHS_TOLERANCE
        if "output_flag" not in options and "output_flag" not in nested:
            nested["output_flag"] = bool(options.get("verbose"))  # HiGHS's log: only if verbose
        options["highs_options"] = nested
    try:
        with warnings.catch_warnings():  # an inaccurate solution is reported below, as an error
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            # HiGHS prints a banner from C when its first instance is created, before any
            # option applies: keep the process's stdout clean unless the caller asked for logs
            quiet = contextlib.nullcontext() if options.get("verbose") else _stdout_silenced()
            with quiet:
                problem.solve(solver=solver, **options)
    except cp.error.SolverError as exc:
        raise LPSolverError(f"{solver} failed on the {what}: {exc}") from exc
    if problem.status != cp.OPTIMAL:
        raise LPSolverError(
            f"{solver} returned status {problem.status!r} on the {what} (expected 'optimal'); "
            "a valid MDP's LP is always feasible and bounded, so this is a solver failure: "
            "try another solver (solver='CLARABEL') or looser solver_options"
        )


@contextlib.contextmanager
def _stdout_silenced():
    """File descriptor 1 points at /dev/null inside the block (C libraries write there
    directly, past ``sys.stdout``); Python's own stdout is flushed first and restored after."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError, AttributeError):  # no real fd 1 (an embedded interpreter)
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _stats(problem: cp.Problem, solver: str, M: sp.csr_array) -> dict:
    st = problem.solver_stats
    return {
        "solver": solver,
        "solve_seconds": st.solve_time,
        "iterations": st.num_iters,
        "n_variables": int(sum(v.size for v in problem.variables())),
        "n_constraints": int(sum(c.size for c in problem.constraints)),
        "nnz": int(M.nnz),
    }


def _value_lp(M: sp.csr_array, r: np.ndarray, b: np.ndarray, what: str, solver, solver_options):
    """Solve the value LP ``min b^T V s.t. M V >= r`` (M ``(n_pairs, n_states)``, r
    ``(n_pairs,)``, b ``(n_states,)``; "Matrix form" above). Returns the solved problem, V
    ``(n_states,)`` and the multipliers x ``(n_pairs,)`` of ``M V >= r`` (the dual's solution)."""
    V = cp.Variable(M.shape[1])
    bellman = M @ V >= r
    problem = cp.Problem(cp.Minimize(b @ V), [bellman])
    _solve(problem, solver, solver_options, what)
    x = np.asarray(bellman.dual_value, dtype=np.float64)
    return problem, np.asarray(V.value, dtype=np.float64), x


def _lp_solution(problem, kind, V, Q, occupancy, info: dict, t0: float) -> LPSolution:
    """The :class:`LPSolution` of a solved LP (policy read off the occupancy)."""
    return LPSolution(
        V=V,
        Q=Q,
        occupancy=occupancy,
        policy=policy_from_occupancy(occupancy),
        value=float(problem.value),
        kind=kind,
        status=problem.status,
        seconds=time.perf_counter() - t0,
        info=info,
    )


class OccupancyPolicy:
    """For solution records with an ``occupancy`` field ``(..., S, A)``: the policy it induces."""

    occupancy: np.ndarray

    @property
    def policy(self) -> np.ndarray:
        """``pi(a|s) = d(s, a) / sum_a' d(s, a')``, the shape of ``occupancy`` (uniform where
        ``d(s, .) = 0``; :func:`policy_from_occupancy`)."""
        return policy_from_occupancy(self.occupancy)


def policy_from_occupancy(occupancy: np.ndarray) -> np.ndarray:
    """``pi(a|s) = d(s, a) / sum_a' d(s, a')`` (uniform where ``d(s, .) = 0``).

    occupancy: ``(..., S, A)``; negative round-off from the solver is clipped to 0 first.
    Returns a stochastic policy of the same shape (AJKS Prop. 1.15's inverse map).
    """
    d = np.clip(np.asarray(occupancy, dtype=np.float64), 0.0, None)
    mass = d.sum(axis=-1, keepdims=True)
    uniform = np.full_like(d, 1.0 / d.shape[-1])
    return np.where(mass > 0, d / np.where(mass > 0, mass, 1.0), uniform)


def discounted_lp(
    mdp,
    kind: LPKind = "dual",
    *,
    gamma: float | None = None,
    mu: np.ndarray | None = None,
    solver: str = DEFAULT_SOLVER,
    solver_options: dict | None = None,
) -> LPSolution:
    """Solve the discounted primal (values) or dual (occupancy) LP; see the module docstring.

    mdp: a stationary :class:`~theorylab.mdps.TabularMDP` (dense or sparse).
    kind: ``"primal"`` (min over V) or ``"dual"`` (max over occupancy measures d).
    gamma: discount (defaults to ``mdp.gamma``). mu: ``(S,)`` weighting / initial distribution
        (defaults to ``mdp.mu0``; a full-support mu pins V* in every state).
    Returns an :class:`LPSolution` with ``V (S,)``, ``Q (S, A)``, ``occupancy (S, A)``,
    ``policy (S, A)``, ``value = V*(mu)``.
    """
    t0 = time.perf_counter()
    g = _discount(mdp, gamma)
    mu = _weights(mdp, mu)
    S, A = mdp.S, mdp.A
    E = action_repeat_matrix(S, A)  # (S*A, S)
    P = _sparse(mdp.P_flat(0))  # (S*A, S), P[s*A + a, s'] = P(s'|s, a)
    r = np.asarray(mdp.reward(0), dtype=np.float64).ravel()  # (S*A,)
    M = discounted_lp_matrix(mdp, g)  # E - gamma P
    if kind == "primal":
        # V(s) >= r(s, a) + gamma sum_s' P(s'|s, a) V(s'); the multipliers x = d / (1 - gamma)
        what = f"discounted primal LP of {mdp!r}"
        problem, V_opt, x = _value_lp(M, r, mu, what, solver, solver_options)
        d_opt = (1.0 - g) * x
    elif kind == "dual":
        d = cp.Variable(S * A, nonneg=True)
        # sum_a d(s, a) = (1 - gamma) mu(s) + gamma sum_{s',a'} P(s|s', a') d(s', a')
        flow = E.T @ d == (1.0 - g) * mu + g * (P.T @ d)
        problem = cp.Problem(cp.Maximize(r @ d / (1.0 - g)), [flow])
        _solve(problem, solver, solver_options, f"discounted dual LP of {mdp!r}")
        d_opt = np.asarray(d.value, dtype=np.float64)
        # multipliers y of the flow constraints solve min (1-gamma) mu^T y s.t. M y >= r/(1-gamma)
        V_opt = (1.0 - g) * np.asarray(flow.dual_value, dtype=np.float64)
    else:
        raise ValueError(f"kind must be 'primal' or 'dual', got {kind!r}")
    occupancy = d_opt.reshape(S, A)
    Q = mdp.reward(0) + g * mdp.expected_next(V_opt, 0)
    info = _stats(problem, solver, M) | {"objective": "discounted", "gamma": g}
    return _lp_solution(problem, kind, V_opt, Q, occupancy, info, t0)


def finite_horizon_lp(
    mdp,
    kind: LPKind = "dual",
    *,
    mu: np.ndarray | None = None,
    solver: str = DEFAULT_SOLVER,
    solver_options: dict | None = None,
) -> LPSolution:
    """Solve the finite-horizon primal (values ``V_h``) or dual (stage occupancies ``d_h``) LP.

    mdp: a :class:`~theorylab.mdps.TabularMDP` with a horizon H; P and R may be stage-dependent,
        dense or sparse. kind: ``"primal"`` or ``"dual"``. mu: ``(S,)`` initial distribution
        (defaults to ``mdp.mu0``).
    Returns an :class:`LPSolution` with ``V (H+1, S)`` (``V[H] = 0``), ``Q (H, S, A)``,
    ``occupancy (H, S, A)``, ``policy (H, S, A)``, ``value = V*_0(mu)``.
    """
    t0 = time.perf_counter()
    H, S, A = _horizon(mdp), mdp.S, mdp.A
    mu = _weights(mdp, mu)
    M = finite_horizon_lp_matrix(mdp)  # (H*S*A, H*S)
    r = np.concatenate([np.asarray(mdp.reward(h), np.float64).ravel() for h in range(H)])
    b = np.zeros(H * S)  # (H*S,): mu on stage 0, nothing enters later stages from outside
    b[:S] = mu
    if kind == "primal":
        # V[h*S + s] = V_h(s) >= r_h(s, a) + sum_s' P_h(s'|s, a) V_{h+1}(s'); multipliers x = d
        what = f"finite-horizon primal LP of {mdp!r}"
        problem, V_opt, d_opt = _value_lp(M, r, b, what, solver, solver_options)
    elif kind == "dual":
        d = cp.Variable(H * S * A, nonneg=True)  # d[(h*S + s)*A + a] = d_h(s, a)
        # block h of M^T d: sum_a d_h(s, a) - sum_{s',a'} P_{h-1}(s|s', a') d_{h-1}(s', a')
        flow = M.T @ d == b
        problem = cp.Problem(cp.Maximize(r @ d), [flow])
        _solve(problem, solver, solver_options, f"finite-horizon dual LP of {mdp!r}")
        d_opt = np.asarray(d.value, dtype=np.float64)
        V_opt = np.asarray(flow.dual_value, dtype=np.float64)
    else:
        raise ValueError(f"kind must be 'primal' or 'dual', got {kind!r}")
    V_full = np.zeros((H + 1, S))
    V_full[:H] = V_opt.reshape(H, S)
    Q = np.stack([mdp.reward(h) + mdp.expected_next(V_full[h + 1], h) for h in range(H)])
    occupancy = d_opt.reshape(H, S, A)
    info = _stats(problem, solver, M) | {"objective": "finite_horizon", "horizon": H}
    return _lp_solution(problem, kind, V_full, Q, occupancy, info, t0)


def lp_solve(
    mdp,
    kind: LPKind = "dual",
    *,
    gamma: float | None = None,
    mu: np.ndarray | None = None,
    solver: str = DEFAULT_SOLVER,
    solver_options: dict | None = None,
) -> LPSolution:
    """Solve an MDP exactly by LP: finite horizon when ``mdp`` has a horizon, no discount and no
    ``gamma`` is passed (as :func:`~theorylab.algorithms.planning.solve` does), discounted
    otherwise (a model with both a horizon and a discount: the discounted problem).

    kind: ``"primal"`` (values) or ``"dual"`` (occupancy measures, the default).
    solver: a cvxpy solver name (``"HIGHS"`` default, ``"CLARABEL"``, ...);
    solver_options: passed to ``cvxpy.Problem.solve``. Raises :class:`LPSolverError` unless optimal.
    """
    if mdp.horizon is not None and gamma is None and mdp.gamma is None:
        return finite_horizon_lp(mdp, kind, mu=mu, solver=solver, solver_options=solver_options)
    return discounted_lp(
        mdp, kind, gamma=gamma, mu=mu, solver=solver, solver_options=solver_options
    )


# ---------------------------------------------------------------------------------- occupancies
def _stationary_policy_matrix(mdp, policy) -> np.ndarray:
    """A stationary policy ``(S,)`` int or ``(S, A)`` as a stochastic ``(S, A)`` array."""
    S, A = mdp.S, mdp.A
    pol = np.asarray(policy)
    if np.issubdtype(pol.dtype, np.integer):
        if pol.shape != (S,) or (pol < 0).any() or (pol >= A).any():
            raise ValueError(f"deterministic stationary policy must be (S,) = ({S},) in 0..{A - 1}")
        pi = np.zeros((S, A))
        pi[np.arange(S), pol] = 1.0
        return pi
    if pol.shape != (S, A):
        raise ValueError(f"stochastic stationary policy must be ({S}, {A}), got {pol.shape}")
    return pol.astype(np.float64)


def occupancy_measure(
    mdp, policy: np.ndarray, *, gamma: float | None = None, mu: np.ndarray | None = None
) -> np.ndarray:
    """Exact occupancy measure of a policy, the point of the dual feasible set it corresponds to.

    Discounted (``gamma`` given, or ``mdp`` has no horizon): stationary policy ``(S,)`` int or
        ``(S, A)``; returns ``d^pi_mu (S, A)`` from the linear solve
        ``(I - gamma P_pi^T) d_S = (1 - gamma) mu``, ``d(s, a) = d_S(s) pi(a|s)`` (sparse LU for
        sparse models).
    Finite horizon: policy ``(H, S)`` / ``(H, S, A)`` (or stationary forms); returns ``(H, S, A)``
        from the forward recursion ``d_0(s) = mu(s)``, ``d_{h+1} = P_h^T d_h``.
    """
    mu = _weights(mdp, mu)
    S, A = mdp.S, mdp.A
    if mdp.horizon is not None and gamma is None and mdp.gamma is None:
        H = _horizon(mdp)
        pol = mdp.check_policy(policy)
        if pol.ndim == 2:  # deterministic (H, S) -> one-hot (H, S, A)
            pol = np.eye(A)[pol]
        d = np.empty((H, S, A))
        state = mu
        for h in range(H):
            d[h] = np.einsum("s,sa->sa", state, pol[h])
            state = mdp.P_flat(h).T @ d[h].ravel()  # d_{h+1}(s') = sum_{s,a} P_h(s'|s,a) d_h(s,a)
        return d
    g = _discount(mdp, gamma)
    pi = _stationary_policy_matrix(mdp, policy)
    M = mdp.P_flat(0)
    # P_pi[s, s'] = sum_a pi(a|s) P(s'|s, a) = Pi @ P_flat, Pi (S, S*A) block-diagonal in s
    Pi = sp.csr_array((pi.ravel(), np.arange(S * A), np.arange(0, S * A + 1, A)), shape=(S, S * A))
    if mdp.sparse:
        lhs = sp.csc_array(sp.eye(S, format="csc") - g * sp.csc_array(Pi @ M).T)
        d_state = spla.spsolve(lhs, (1.0 - g) * mu)
    else:
        d_state = np.linalg.solve(np.eye(S) - g * (Pi @ M).T, (1.0 - g) * mu)
    return np.einsum("s,sa->sa", np.atleast_1d(d_state), pi)


def flow_residual(
    mdp, occupancy: np.ndarray, *, gamma: float | None = None, mu: np.ndarray | None = None
) -> np.ndarray:
    """Residual of the dual (Bellman-flow) constraints; zero exactly on the occupancy polytope.

    Discounted, occupancy ``(S, A)``: returns ``(S,)``
        ``sum_a d(s, a) - (1 - gamma) mu(s) - gamma sum_{s',a'} P(s|s', a') d(s', a')``.
    Finite horizon, occupancy ``(H, S, A)``: returns ``(H, S)`` with row 0
        ``sum_a d_0(s, a) - mu(s)`` and row h+1 ``sum_a d_{h+1}(s, a) - (P_h^T d_h)(s)``.
    """
    mu = _weights(mdp, mu)
    d = np.asarray(occupancy, dtype=np.float64)
    if mdp.horizon is not None and gamma is None and mdp.gamma is None:
        H = _horizon(mdp)
        if d.shape != (H, mdp.S, mdp.A):
            raise ValueError(f"occupancy must have shape {(H, mdp.S, mdp.A)}, got {d.shape}")
        res = d.sum(axis=-1)
        res[0] -= mu
        for h in range(H - 1):
            res[h + 1] -= mdp.P_flat(h).T @ d[h].ravel()
        return res
    g = _discount(mdp, gamma)
    if d.shape != (mdp.S, mdp.A):
        raise ValueError(f"occupancy must have shape {(mdp.S, mdp.A)}, got {d.shape}")
    return d.sum(axis=-1) - (1.0 - g) * mu - g * (mdp.P_flat(0).T @ d.ravel())
