"""Finite-horizon regularised primal and dual-V (algorithms/dual/occupancy_flow.py, dual_v.py,
regularized_primal.py): the stage-wise flow, one d^O_h per stage.

Oracles: the solution's own certificate (gap and flow residual recomputed from V and d), cvxpy on
the primal (to CLARABEL's tolerance), backward induction and the finite-horizon occupancy LP for
alpha -> 0, weak duality at random (V, d), and the H = 1 problem, which is the discounted problem
at gamma = 0 (the same flow: sum_a d(s, a) = mu(s)).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import finite_horizon_mdps, probability_vectors

from theorylab.algorithms.dual import (
    DIVERGENCES,
    DualInputError,
    UncoveredFlowError,
    divergence,
    solve_dual_v,
    solve_regularized_primal,
)
from theorylab.algorithms.dual.regularized_objectives import (
    bellman_residual,
    dual_v_objective,
    primal_objective,
)
from theorylab.algorithms.planning import backward_induction
from theorylab.algorithms.planning.lp import finite_horizon_lp, flow_residual, occupancy_measure
from theorylab.mdps import TabularMDP

SMOOTH = ("kl", "chi2", "half-chi2")
GAP_TOL = 1e-8
FLOW_TOL = 1e-8
CVXPY_TOL = 1e-6


def random_fh_mdp(seed: int, S: int = 4, A: int = 3, H: int = 5) -> TabularMDP:
    """Stage-dependent transitions and rewards."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(H, S, A))
    R = rng.uniform(size=(H, S, A))
    return TabularMDP(P, R, rng.dirichlet(np.ones(S)), horizon=H)


def stage_reference(seed: int, H: int, S: int, A: int) -> np.ndarray:
    """A full-support d^O ``(H, S, A)``, one distribution per stage."""
    rng = np.random.default_rng(seed + 1000)
    return rng.dirichlet(np.ones(S * A), size=H).reshape(H, S, A)


@st.composite
def fh_instances(draw):
    mdp = draw(finite_horizon_mdps(S=(1, 4), A=(1, 3), H=(1, 4), stage_dependent=None))
    n = mdp.S * mdp.A
    d_ref = np.stack(
        [draw(probability_vectors(n, min_support=n)) for _ in range(mdp.horizon)]
    ).reshape(mdp.horizon, mdp.S, mdp.A)
    alpha = draw(st.sampled_from([1e-2, 0.1, 0.5, 2.0]))
    return mdp, d_ref, alpha


@settings(max_examples=30, deadline=None)
@given(inst=fh_instances(), name=st.sampled_from(SMOOTH))
def test_finite_horizon_dual_v_strong_duality_and_stage_flow(inst, name):
    mdp, d_ref, alpha = inst
    H = mdp.horizon
    sol = solve_dual_v(mdp, d_ref, alpha, name)
    assert sol.horizon == H and sol.gamma is None
    assert sol.occupancy.shape == (H, mdp.S, mdp.A) and sol.V.shape == (H + 1, mdp.S)
    assert np.all(sol.V[H] == 0.0)
    assert abs(sol.gap) <= GAP_TOL
    assert sol.flow_residual <= FLOW_TOL
    # the stage-wise flow, from planning/lp.py (independent of the dual package's matrix)
    assert np.max(np.abs(flow_residual(mdp, sol.occupancy))) <= FLOW_TOL
    np.testing.assert_allclose(sol.occupancy.sum(axis=(1, 2)), 1.0, atol=FLOW_TOL)
    assert sol.occupancy.min() >= 0.0
    f = divergence(name)
    assert sol.primal_value == pytest.approx(
        primal_objective(mdp, sol.occupancy, d_ref, alpha, f), abs=1e-13
    )
    assert sol.dual_value == pytest.approx(
        dual_v_objective(mdp, sol.V, d_ref, alpha, f, None, mdp.mu0), abs=1e-13
    )
    # delta_V from the model's own backups: r_h + P_h V_{h+1} - V_h
    delta = np.stack(
        [mdp.reward(h) + mdp.expected_next(sol.V[h + 1], h) - sol.V[h][:, None] for h in range(H)]
    )
    np.testing.assert_allclose(bellman_residual(mdp, sol.V, None), delta, atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(inst=fh_instances(), name=st.sampled_from(list(DIVERGENCES)))
def test_finite_horizon_dual_v_agrees_with_cvxpy_primal(inst, name):
    mdp, d_ref, alpha = inst
    sol = solve_dual_v(mdp, d_ref, alpha, name)
    ref = solve_regularized_primal(mdp, d_ref, alpha, name)
    assert sol.primal_value == pytest.approx(ref.primal_value, abs=CVXPY_TOL)
    assert ref.flow_residual <= 1e-7
    if name == "tv":  # an LP: HiGHS's multipliers certify themselves
        assert abs(ref.gap) <= GAP_TOL and ref.flow_residual <= FLOW_TOL
    else:
        assert np.max(np.abs(sol.occupancy - ref.occupancy)) <= 1e-4


@pytest.mark.parametrize("name", list(DIVERGENCES))
def test_finite_horizon_alpha_to_zero_tends_to_backward_induction(name):
    """0 <= V*_0(mu) - J(alpha) <= alpha sum_h D_f(d_LP,h || d^O_h), J(alpha) rising as alpha
    falls; V*_0(mu) from backward induction, d_LP from the finite-horizon occupancy LP."""
    mdp = random_fh_mdp(3)
    d_ref = stage_reference(3, mdp.horizon, mdp.S, mdp.A)
    J_star = backward_induction(mdp).value
    lp = finite_horizon_lp(mdp)
    assert lp.value == pytest.approx(J_star, abs=1e-8)
    D_lp = divergence(name).divergence(lp.occupancy, d_ref)
    gaps = []
    for alpha in (1.0, 0.1, 0.01, 1e-3, 1e-4, 1e-5):
        J = solve_dual_v(mdp, d_ref, alpha, name).primal_value
        gap = J_star - J
        assert -1e-8 <= gap <= alpha * D_lp + 1e-8
        gaps.append(gap)
    assert np.all(np.diff(gaps) <= 1e-10)
    assert gaps[-1] <= 1e-5 * D_lp + 1e-8


@pytest.mark.parametrize("name", SMOOTH)
def test_finite_horizon_weak_duality_at_random_points(name):
    rng = np.random.default_rng(5)
    mdp = random_fh_mdp(5, H=4)
    d_ref = stage_reference(5, 4, mdp.S, mdp.A)
    f = divergence(name)
    opt = solve_dual_v(mdp, d_ref, 0.3, name)
    for _ in range(20):
        V = np.vstack([rng.normal(size=(4, mdp.S)) * 3, np.zeros((1, mdp.S))])
        pi = rng.dirichlet(np.ones(mdp.A), size=(4, mdp.S))
        d = occupancy_measure(mdp, pi)
        dual = dual_v_objective(mdp, V, d_ref, 0.3, f, None, mdp.mu0)
        primal = primal_objective(mdp, d, d_ref, 0.3, f)
        assert dual >= primal - 1e-12
        assert dual >= opt.dual_value - 1e-12
        assert primal <= opt.primal_value + 1e-12


@pytest.mark.parametrize("name", SMOOTH)
def test_horizon_one_is_the_discounted_problem_at_gamma_zero(name):
    """H = 1 and gamma = 0 have the same flow, sum_a d(s, a) = mu(s): same optimum."""
    rng = np.random.default_rng(9)
    P = rng.dirichlet(np.ones(4), size=(4, 3))
    R = rng.uniform(size=(4, 3))
    mu = rng.dirichlet(np.ones(4))
    d_ref = rng.dirichlet(np.ones(12)).reshape(4, 3)
    fh = solve_dual_v(TabularMDP(P, R, mu, horizon=1), d_ref[None], 0.2, name)
    disc = solve_dual_v(TabularMDP(P, R, mu, gamma=0.0), d_ref, 0.2, name)
    assert fh.primal_value == pytest.approx(disc.primal_value, abs=1e-12)
    np.testing.assert_allclose(fh.occupancy[0], disc.occupancy, atol=1e-12)
    np.testing.assert_allclose(fh.V[0], disc.V, atol=1e-10)


def test_newton_lbfgs_and_sparse_agree_finite_horizon():
    mdp = random_fh_mdp(7)
    d_ref = stage_reference(7, mdp.horizon, mdp.S, mdp.A)
    a = solve_dual_v(mdp, d_ref, 0.1, "kl")
    b = solve_dual_v(mdp, d_ref, 0.1, "kl", method="lbfgs", tol=1e-9)
    c = solve_dual_v(mdp.to_sparse(), d_ref, 0.1, "kl")
    assert np.max(np.abs(a.V - b.V)) <= 1e-6
    np.testing.assert_allclose(a.V, c.V, atol=1e-10)


def test_a_horizon_model_with_gamma_given_is_discounted():
    mdp = random_fh_mdp(11, H=3)
    stationary = TabularMDP(mdp.dense_P()[0], mdp.R[0], mdp.mu0, horizon=3)
    d_ref = np.full((mdp.S, mdp.A), 1.0 / (mdp.S * mdp.A))
    sol = solve_dual_v(stationary, d_ref, 0.1, "kl", gamma=0.8)
    assert sol.gamma == 0.8 and sol.horizon is None and sol.V.shape == (mdp.S,)


# ------------------------------------------------------------------------------ bad input
def test_finite_horizon_reference_must_be_one_distribution_per_stage():
    mdp = random_fh_mdp(13, H=3)
    d_ref = stage_reference(13, 3, mdp.S, mdp.A)
    with pytest.raises(DualInputError, match=r"shape \(3, 4, 3\)"):
        solve_dual_v(mdp, d_ref[0], 0.1)
    bad = d_ref.copy()
    bad[2] *= 0.5
    with pytest.raises(DualInputError, match="stage h=2 sums to"):
        solve_dual_v(mdp, bad, 0.1)


def test_finite_horizon_uncovered_reference_names_stage_and_state():
    """Deterministic chain 0 -> 1 -> 2 under both actions; d^O_1 has no mass on state 1."""
    S, A, H = 3, 2, 3
    P = np.zeros((S, A, S))
    for s in range(S):
        P[s, :, min(s + 1, S - 1)] = 1.0
    mdp = TabularMDP(P, np.ones((S, A)), np.array([1.0, 0.0, 0.0]), horizon=H)
    d_ref = np.full((H, S, A), 1.0 / (S * A))
    d_ref[1, 1] = 0.0
    d_ref[1] /= d_ref[1].sum()
    for solve in (solve_dual_v, solve_regularized_primal):
        with pytest.raises(UncoveredFlowError, match=r"\(h=1, s=1, a=0\.\.1\)"):
            solve(mdp, d_ref, 0.1, "kl")
    d_ref[1, 1] = 0.1  # mass back on the state the flow reaches: solvable
    d_ref[1] /= d_ref[1].sum()
    sol = solve_dual_v(mdp, d_ref, 0.1, "kl")
    assert abs(sol.gap) <= GAP_TOL and sol.flow_residual <= FLOW_TOL
