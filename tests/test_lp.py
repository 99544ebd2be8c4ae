"""Property tests of the planning LPs (algorithms/planning/lp.py; AJKS section 1.3.4, Prop. 1.15).

Oracles: policy iteration and backward induction (themselves checked in test_planning.py) for V*,
exact policy evaluation for the extracted policies, and the exact occupancy measure of a policy
(a linear solve / forward recursion) for Prop. 1.15.

Tolerances. HiGHS runs with primal and dual feasibility tolerance ``tol = HIGHS_TOLERANCE`` (1e-9):
each Bellman constraint may be violated by at most ``tol``, which moves a value by at most
``tol / (1 - gamma)`` (discounted) or ``H * tol`` (finite horizon), so ``lp_atol`` is that plus
round-off. Measured over 1500 random models per objective, the worst error is 0.25 of it (tiny
rewards of ~1e-9 that sit at the tolerance) and ~1e-14 otherwise. Flow constraints and sums of
occupancies are linear identities of the solver's basic solution: ``FLOW_ATOL = 1e-9`` (the same
tolerance on the unscaled constraint).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import (
    all_forms,
    discounted_mdps,
    finite_horizon_mdps,
    policies,
    probability_vectors,
)

from theorylab.algorithms.planning import (
    backward_induction,
    evaluate_discounted,
    evaluate_policies,
    policy_iteration,
    policy_values,
    value_iteration,
)
from theorylab.algorithms.planning.lp import (
    HIGHS_TOLERANCE,
    LPSolution,
    LPSolverError,
    action_repeat_matrix,
    discounted_lp,
    discounted_lp_matrix,
    finite_horizon_lp,
    finite_horizon_lp_matrix,
    flow_residual,
    lp_solve,
    occupancy_measure,
    policy_from_occupancy,
)
from theorylab.mdps import TabularMDP, make

EPS = np.finfo(np.float64).eps
FLOW_ATOL = 1e-9
KINDS = ("primal", "dual")


def reference_flow_residual(mdp: TabularMDP, d: np.ndarray) -> np.ndarray:
    """The dual constraints on dense arrays, independent of lp.flow_residual.

    Discounted ``d (S, A)`` -> ``(S,)``:
        sum_a d(s, a) - (1 - gamma) mu(s) - gamma sum_{s',a'} P(s|s', a') d(s', a').
    Finite horizon ``d (H, S, A)`` -> ``(H, S)``: stage 0 against mu, stage h+1 against
    P_h^T d_h.
    """
    P, mu = mdp.dense_P(), mdp.mu0
    if d.ndim == 2:
        g = mdp.gamma
        return d.sum(axis=1) - (1 - g) * mu - g * np.einsum("sat,sa->t", P, d)
    H = d.shape[0]
    P = P if mdp.stage_dependent else np.broadcast_to(P, (H, *P.shape))
    inflow = np.concatenate([mu[None], np.einsum("hsat,hsa->ht", P[:-1], d[:-1])])
    return d.sum(axis=2) - inflow


def lp_atol(mdp: TabularMDP, gamma: float | None = None) -> float:
    """Allowed LP error on a value: solver tolerance times the value scale, plus round-off."""
    scale = 1 / (1 - gamma) if gamma is not None else mdp.horizon
    return HIGHS_TOLERANCE * scale + 64 * EPS * scale**2


# ------------------------------------------------------------------------------- discounted
@settings(max_examples=30)
@given(discounted_mdps(form=None), st.data())
def test_discounted_lps_equal_v_star_with_full_support_weights(mdp, data):
    g = mdp.gamma
    mu = data.draw(probability_vectors(mdp.S, min_support=mdp.S), label="mu")
    star = policy_iteration(mdp)
    atol = lp_atol(mdp, g)
    for kind in KINDS:
        sol = lp_solve(mdp, kind, mu=mu)
        assert isinstance(sol, LPSolution) and sol.status == "optimal" and sol.kind == kind
        assert sol.V.shape == (mdp.S,) and sol.Q.shape == sol.occupancy.shape == (mdp.S, mdp.A)
        assert sol.value == pytest.approx(float(star.V @ mu), abs=atol)
        # full-support mu pins V* in every state (AJKS 1.3.4), for either LP
        np.testing.assert_allclose(sol.V, star.V, rtol=0, atol=atol, err_msg=kind)
        np.testing.assert_allclose(sol.Q, star.Q, rtol=0, atol=atol, err_msg=kind)
        # the policy read off d* is optimal in every state (exact evaluation)
        V_pi = evaluate_discounted(mdp, sol.policy)
        np.testing.assert_allclose(V_pi, star.V, rtol=0, atol=atol, err_msg=kind)


@settings(max_examples=30)
@given(discounted_mdps(form=None))
def test_discounted_occupancy_is_feasible_and_optimal_from_mu0(mdp):
    """mu = mdp.mu0, often a point mass: V is pinned only where d* puts mass."""
    g, mu = mdp.gamma, mdp.mu0
    star = policy_iteration(mdp)
    atol = lp_atol(mdp, g)
    for kind in KINDS:
        sol = discounted_lp(mdp, kind)
        d = sol.occupancy  # (S, A)
        assert d.min() >= -FLOW_ATOL
        assert abs(d.sum() - 1) <= FLOW_ATOL
        residual = reference_flow_residual(mdp, d)
        np.testing.assert_allclose(residual, 0, atol=FLOW_ATOL, err_msg=kind)
        np.testing.assert_allclose(flow_residual(mdp, d), residual, rtol=0, atol=1e-14)
        # dual objective of d* = LP value = V*(mu)
        assert (d * mdp.R).sum() / (1 - g) == pytest.approx(sol.value, abs=atol)
        assert sol.value == pytest.approx(float(star.V @ mu), abs=atol)
        # every primal-feasible V is >= V*; complementary slackness: = V* where d* has mass
        assert np.all(sol.V >= star.V - atol)
        visited = d.sum(axis=1) > FLOW_ATOL
        np.testing.assert_allclose(sol.V[visited], star.V[visited], rtol=0, atol=atol)
        # Q = r + gamma P V: >= Q* everywhere, = Q* on the pairs d* uses (successors visited)
        assert np.all(sol.Q >= star.Q - atol)
        active = d > FLOW_ATOL
        np.testing.assert_allclose(sol.Q[active], star.Q[active], rtol=0, atol=atol)
        # Prop. 1.15: d* is the occupancy of the policy read off it, which is optimal from mu
        np.testing.assert_allclose(
            occupancy_measure(mdp, sol.policy), d, rtol=0, atol=FLOW_ATOL, err_msg=kind
        )
        assert float(evaluate_discounted(mdp, sol.policy) @ mu) == pytest.approx(
            float(star.V @ mu), abs=atol
        )
        np.testing.assert_allclose(sol.policy.sum(axis=1), 1.0, rtol=0, atol=1e-12)


@settings(max_examples=40)
@given(discounted_mdps(form=None), st.data())
def test_occupancy_of_any_policy_is_dual_feasible_with_value_v_pi(mdp, data):
    """Prop. 1.15, the other direction: d^pi_mu lies in K_mu and its objective is V^pi(mu)."""
    g, mu = mdp.gamma, mdp.mu0
    pol = data.draw(policies(mdp.S, mdp.A), label="policy")  # (S,) int or (S, A)
    d = occupancy_measure(mdp, pol)
    roundoff = 64 * EPS / (1 - g)  # a linear solve with cond(I - gamma P_pi^T) <= 2 / (1 - g)
    assert d.min() >= -roundoff and abs(d.sum() - 1) <= roundoff * mdp.S
    np.testing.assert_allclose(reference_flow_residual(mdp, d), 0, atol=roundoff * mdp.S)
    V_pi = evaluate_discounted(mdp, pol)
    assert (d * mdp.R).sum() / (1 - g) == pytest.approx(float(V_pi @ mu), abs=roundoff / (1 - g))


# ------------------------------------------------------------------------------- finite horizon
@settings(max_examples=40)
@given(finite_horizon_mdps(form=None, stage_dependent=None))
def test_finite_horizon_lps_equal_backward_induction(mdp):
    H, S, A = mdp.horizon, mdp.S, mdp.A
    star = backward_induction(mdp)
    atol = lp_atol(mdp)
    for kind in KINDS:
        sol = finite_horizon_lp(mdp, kind)
        assert sol.status == "optimal"
        assert sol.V.shape == (H + 1, S) and np.all(sol.V[H] == 0)
        assert sol.occupancy.shape == sol.policy.shape == sol.Q.shape == (H, S, A)
        assert sol.value == pytest.approx(star.value, abs=atol)
        d = sol.occupancy
        # feasibility: non-negative, one unit of mass per stage, flow between stages
        assert d.min() >= -FLOW_ATOL
        np.testing.assert_allclose(d.sum(axis=(1, 2)), 1.0, rtol=0, atol=FLOW_ATOL)
        residual = reference_flow_residual(mdp, d)
        np.testing.assert_allclose(residual, 0, atol=FLOW_ATOL, err_msg=kind)
        np.testing.assert_allclose(flow_residual(mdp, d), residual, rtol=0, atol=1e-14)
        assert float(np.einsum("hsa,hsa->", d, np.broadcast_to(mdp.R, (H, S, A)))) == (
            pytest.approx(sol.value, abs=atol)
        )
        # V >= V* (feasible), = V* where the optimal occupancy has mass (complementary slackness)
        assert np.all(sol.V >= star.V - atol)
        visited = d.sum(axis=2) > FLOW_ATOL  # (H, S)
        np.testing.assert_allclose(sol.V[:H][visited], star.V[:H][visited], rtol=0, atol=atol)
        # Q_h = r_h + P_h V_{h+1}: >= Q*_h everywhere, = Q*_h on the pairs d* uses
        assert np.all(sol.Q >= star.Q - atol)
        active = d > FLOW_ATOL  # (H, S, A)
        np.testing.assert_allclose(sol.Q[active], star.Q[active], rtol=0, atol=atol)
        # the extracted (stage-dependent, stochastic) policy is optimal and d* is its occupancy
        assert float(policy_values(mdp, sol.policy, batched=False)) == pytest.approx(
            star.value, abs=atol
        )
        np.testing.assert_allclose(occupancy_measure(mdp, sol.policy), d, atol=FLOW_ATOL)


@settings(max_examples=40)
@given(finite_horizon_mdps(form=None, stage_dependent=None), st.data())
def test_finite_horizon_occupancy_of_any_policy(mdp, data):
    H = mdp.horizon
    pol = data.draw(policies(mdp.S, mdp.A, H), label="policy")
    d = occupancy_measure(mdp, pol)
    roundoff = 64 * EPS * H
    assert d.min() >= 0
    np.testing.assert_allclose(d.sum(axis=(1, 2)), 1.0, rtol=0, atol=roundoff)
    np.testing.assert_allclose(reference_flow_residual(mdp, d), 0, atol=roundoff)
    R = np.broadcast_to(mdp.R, d.shape)
    V = evaluate_policies(mdp, pol)
    assert float((d * R).sum()) == pytest.approx(float(V[0] @ mdp.mu0), abs=roundoff * H)


# ------------------------------------------------------------------------------- storage forms
@settings(max_examples=25)
@given(discounted_mdps(form="dense") | finite_horizon_mdps(form="dense", stage_dependent=None))
def test_every_storage_form_gives_the_solver_the_same_lp(mdp):
    """Dense, CSR and CSR-with-stored-zeros build the same canonical M, so the solver returns
    bit-identical V, occupancy and policy; Q (a backup through each form's own product) agrees
    to round-off."""
    g = mdp.gamma
    ref = {k: lp_solve(mdp, k) for k in KINDS}
    M_ref = discounted_lp_matrix(mdp, g) if g is not None else finite_horizon_lp_matrix(mdp)
    for form, m in all_forms(mdp).items():
        M = discounted_lp_matrix(m, g) if g is not None else finite_horizon_lp_matrix(m)
        assert M.nnz == M_ref.nnz and (M != M_ref).nnz == 0, form
        for kind in KINDS:
            sol = lp_solve(m, kind)
            np.testing.assert_array_equal(sol.V, ref[kind].V, err_msg=form)
            np.testing.assert_array_equal(sol.occupancy, ref[kind].occupancy, err_msg=form)
            np.testing.assert_array_equal(sol.policy, ref[kind].policy, err_msg=form)
            assert sol.value == ref[kind].value
            np.testing.assert_allclose(sol.Q, ref[kind].Q, rtol=0, atol=1e-12, err_msg=form)


# ------------------------------------------------------------------------------- matrices
@settings(max_examples=20)
@given(discounted_mdps(form=None) | finite_horizon_mdps(form=None, stage_dependent=True))
def test_lp_matrices_equal_their_dense_definition(mdp):
    S, A = mdp.S, mdp.A
    E = np.repeat(np.eye(S), A, axis=0)  # (S*A, S): E[s*A + a, s] = 1
    np.testing.assert_array_equal(action_repeat_matrix(S, A).toarray(), E)
    P = mdp.dense_P()
    if mdp.horizon is None:
        M = discounted_lp_matrix(mdp, mdp.gamma)
        np.testing.assert_array_equal(M.toarray(), E - mdp.gamma * P.reshape(S * A, S))
        assert M.nnz <= mdp.nnz + S * A
        return
    H = mdp.horizon
    ref = np.zeros((H * S * A, H * S))
    for h in range(H):
        ref[h * S * A : (h + 1) * S * A, h * S : (h + 1) * S] = E
        if h + 1 < H:
            ref[h * S * A : (h + 1) * S * A, (h + 1) * S : (h + 2) * S] = -P[h].reshape(S * A, S)
    M = finite_horizon_lp_matrix(mdp)
    np.testing.assert_array_equal(M.toarray(), ref)
    assert M.nnz <= H * S * A + sum(np.count_nonzero(P[h]) for h in range(H - 1))


def test_flow_residual_detects_infeasible_occupancies():
    mdp = make("riverswim:S=4,H=3,gamma=0.9")  # mu0 = point mass on state 0
    d = np.full((4, 2), 1 / 8)  # uniform: sums to 1, but not a discounted occupancy
    res = flow_residual(mdp, d, gamma=0.9)
    np.testing.assert_allclose(res, reference_flow_residual(mdp, d), rtol=0, atol=1e-15)
    assert np.abs(res).max() > 0.1
    d = np.full((3, 4, 2), 1 / 8)
    finite = mdp.with_objective(horizon=3)  # the H-step problem: a discount is never dropped
    res = flow_residual(finite, d)
    np.testing.assert_allclose(res, reference_flow_residual(finite, d), rtol=0, atol=1e-15)
    assert res.shape == (3, 4) and np.abs(res[0]).max() > 0.1


def test_policy_from_occupancy_normalises_and_is_uniform_on_zero_mass():
    d = np.array([[0.125, 0.375, 0.0], [0.0, 0.0, 0.0], [-1e-18, 0.1, 0.1]])
    np.testing.assert_array_equal(
        policy_from_occupancy(d), [[0.25, 0.75, 0.0], [1 / 3, 1 / 3, 1 / 3], [0.0, 0.5, 0.5]]
    )


def test_sparse_models_stay_sparse(monkeypatch):
    """RiverSwim with S = 2000 in CSR form: the LP model has O(nnz) entries and nothing
    densifies P (dense_P / to_dense and CSR toarray / todense raise during the solves)."""
    S, H = 2000, 10
    mdp = make(f"riverswim:S={S},H={H},gamma=0.9,sparse=True")
    finite = make(f"riverswim:S={S},H={H},sparse=True")  # the H-step problem: no discount
    mu = np.full(S, 1.0 / S)  # full support: V* pinned everywhere
    star_disc = value_iteration(mdp, gamma=0.9, tol=1e-11)
    star_fh = backward_induction(finite)

    def forbidden(*args, **kwargs):
        raise AssertionError("the LP densified a sparse model")

    monkeypatch.setattr(TabularMDP, "dense_P", forbidden)
    monkeypatch.setattr(TabularMDP, "to_dense", forbidden)
    monkeypatch.setattr(sp.csr_array, "toarray", forbidden)
    monkeypatch.setattr(sp.csr_array, "todense", forbidden)
    disc = lp_solve(mdp, "dual", gamma=0.9, mu=mu)
    fh = lp_solve(finite, "primal")
    residual = flow_residual(mdp, disc.occupancy, gamma=0.9, mu=mu)
    monkeypatch.undo()
    A = mdp.A
    assert disc.info["nnz"] <= mdp.nnz + S * A
    assert disc.info["n_variables"] == S * A and disc.info["n_constraints"] == S
    assert fh.info["nnz"] <= H * S * A + (H - 1) * mdp.nnz
    np.testing.assert_allclose(disc.V, star_disc.V, rtol=0, atol=lp_atol(mdp, 0.9) + 1e-11)
    np.testing.assert_allclose(residual, 0, atol=FLOW_ATOL)
    assert fh.value == pytest.approx(star_fh.value, abs=lp_atol(mdp))
    # a model with a discount is solved as the discounted problem, never with gamma dropped
    assert lp_solve(mdp, "primal").info["objective"] == "discounted"
    with pytest.raises(ValueError, match="gamma=0.9, which it would ignore"):
        finite_horizon_lp(mdp)


# ------------------------------------------------------------------------------- known values
@pytest.mark.parametrize("kind", KINDS)
def test_riverswim_lp_value_equals_backward_induction(kind):
    mdp = make("riverswim:S=6,H=20")
    star = backward_induction(mdp)
    sol = lp_solve(mdp, kind)
    assert sol.value == pytest.approx(star.value, abs=lp_atol(mdp))
    assert sol.info["objective"] == "finite_horizon" and sol.info["horizon"] == 20
    # swimming right from the start is optimal at H = 20 (value > 20 * 5/1000 of staying left)
    assert star.value > 0.1 and sol.policy[0, 0, 1] == 1.0


@pytest.mark.parametrize("solver", ["HIGHS", "CLARABEL"])
def test_riverswim_discounted_lp_equals_value_iteration(solver):
    mdp = make("riverswim:S=6,H=20,gamma=0.95")
    star = value_iteration(mdp, gamma=0.95, tol=1e-12)
    # CLARABEL is an interior-point method with default gap tolerances 1e-8 (relative)
    atol = lp_atol(mdp, 0.95) if solver == "HIGHS" else 1e-8 * 2 / (1 - 0.95)
    for kind in KINDS:
        sol = lp_solve(mdp, kind, gamma=0.95, mu=np.full(6, 1 / 6), solver=solver)
        assert sol.info["solver"] == solver and sol.info["objective"] == "discounted"
        np.testing.assert_allclose(sol.V, star.V, rtol=0, atol=atol + 1e-12)


def test_tiny_rewards_are_not_lost_to_the_solver_tolerance():
    """A reward of 2^-24 ~ 6e-8 is below HiGHS's default tolerance 1e-7: with it the LP
    returns V(2) = 0 (found by hypothesis); lp.py's tighter default keeps it."""
    P = np.zeros((3, 2, 3))
    P[:, :, 0] = 1.0
    R = np.zeros((3, 2))
    R[1, 1], R[2, 1] = 0.375, 2.0**-24
    mdp = TabularMDP(P, R, np.array([0.25, 0.25, 0.5]), gamma=0.0)
    for kind in KINDS:
        sol = lp_solve(mdp, kind)
        np.testing.assert_allclose(sol.V, [0.0, 0.375, 2.0**-24], rtol=0, atol=lp_atol(mdp, 0.0))
        np.testing.assert_array_equal(sol.policy[1:], [[0.0, 1.0], [0.0, 1.0]])


# ------------------------------------------------------------------------------- errors
def test_lp_errors_are_specific():
    mdp = make("riverswim:S=4,H=5")
    with pytest.raises(ValueError, match="kind"):
        lp_solve(mdp, "both")
    with pytest.raises(ValueError, match="no discount"):
        discounted_lp(mdp)
    with pytest.raises(ValueError, match="mu"):
        lp_solve(mdp, mu=np.ones(4))
    stage = TabularMDP(np.broadcast_to(mdp.P, (5, 4, 2, 4)), mdp.R, horizon=5)
    with pytest.raises(ValueError, match="stationary"):
        lp_solve(stage, gamma=0.9)
    discounted = mdp.with_objective(gamma=0.9)
    with pytest.raises(ValueError, match="no finite horizon"):
        finite_horizon_lp(discounted)
    # an iteration limit of 0 stops HiGHS before optimality: a clear error, not a wrong answer
    with pytest.raises(LPSolverError, match="status"):
        lp_solve(discounted, "dual", solver_options={"simplex_iteration_limit": 0})


def test_lp_exports_load_lazily():
    """The planning package re-exports the LP API without importing cvxpy (~1 s) up front."""
    code = (
        "import sys, theorylab.algorithms.planning as p; assert 'cvxpy' not in sys.modules; "
        "from theorylab.algorithms.planning import lp_solve, LPSolution; "
        "assert 'cvxpy' in sys.modules and lp_solve.__module__.endswith('.lp')"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
