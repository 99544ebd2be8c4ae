"""Tests of the f-regularised occupancy problem and its duals (algorithms/dual; Sikchi et al.
ICLR 2024 section 4; theory-preference-dual-llm.md 6.2).

Oracles: the conjugates against a brute-force supremum on a grid and Fenchel-Young; the dual-V
solution against its own certificate (duality gap computed exactly from V and the recovered d,
flow residual) and against cvxpy on the primal (to the interior-point solver's tolerance, 1e-6);
the plain occupancy LP (planning/lp.py) for alpha -> 0; exact policy occupancies (linear solve) for
dual-Q.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import discounted_mdps, probability_vectors, stochastic_policies

from theorylab.algorithms.dual import (
    DIVERGENCES,
    DualInputError,
    UncoveredFlowError,
    divergence,
    solve_dual_v,
    solve_regularized_primal,
)
from theorylab.algorithms.dual.dual_q import maximize_dual_q, solve_dual_q
from theorylab.algorithms.dual.regularized_objectives import dual_v_objective, primal_objective
from theorylab.algorithms.planning.lp import discounted_lp, occupancy_measure
from theorylab.mdps import TabularMDP

SMOOTH = ("kl", "chi2", "half-chi2")
GAP_TOL = 1e-8
FLOW_TOL = 1e-8
CVXPY_TOL = 1e-6  # interior-point (CLARABEL) accuracy on the primal


def random_mdp(seed: int, S: int = 4, A: int = 3, gamma: float = 0.9) -> TabularMDP:
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(S, A))
    return TabularMDP(P, rng.uniform(size=(S, A)), np.ones(S) / S, gamma=gamma)


def full_support(seed: int, S: int, A: int) -> np.ndarray:
    return np.random.default_rng(seed + 1000).dirichlet(np.ones(S * A)).reshape(S, A)


# ------------------------------------------------------------------------------ conjugates
def brute_conjugate(f, y: float, nonneg: bool) -> float:
    """sup_x x y - f(x) on a fine grid (x in [0, 60] or [-60, 60]), refined around the best x."""
    lo = 0.0 if nonneg else -60.0
    x = np.linspace(lo, 60.0, 600_001)
    vals = x * y - f.f(x)
    i = int(np.argmax(vals))
    xs = np.linspace(x[max(i - 1, 0)], x[min(i + 1, x.size - 1)], 20_001)
    return float(np.max(xs * y - f.f(xs)))


@settings(max_examples=40)
@given(name=st.sampled_from(list(DIVERGENCES)), y=st.floats(-4.0, 2.5))
def test_conjugates_equal_brute_force_supremum(name, y):
    f = divergence(name)
    exact_p = float(f.conjugate_nonneg(y))
    if np.isfinite(exact_p):  # KL's sup grows past the grid only for y > log(60) + 1
        assert exact_p == pytest.approx(brute_conjugate(f, y, True), abs=1e-6)
    else:
        # TV, y > 1/2: the grid supremum grows with the grid, (y - 1/2) 60 + 1/2 on [0, 60]
        assert brute_conjugate(f, y, True) >= 60.0 * (y - 0.5) + 0.5 - 1e-6
    if name != "kl":
        exact = float(f.conjugate(y))
        if np.isfinite(exact):
            assert exact == pytest.approx(brute_conjugate(f, y, False), abs=1e-6)
        else:
            # TV, |y| > 1/2: (|y| - 1/2) 60 -/+ 1/2 at the end of [-60, 60] the sup runs to
            assert brute_conjugate(f, y, False) >= 60.0 * (abs(y) - 0.5) - 0.5 - 1e-6


@settings(max_examples=60)
@given(name=st.sampled_from(SMOOTH), y=st.floats(-5.0, 3.0))
def test_fenchel_young_and_derivatives(name, y):
    f = divergence(name)
    w = float(f.ratio(y))
    # the maximiser attains the supremum: f(w) + f*_p(y) = y w
    assert float(f.f(w)) + float(f.conjugate_nonneg(y)) == pytest.approx(y * w, abs=1e-12)
    h = 1e-6
    fd = (float(f.conjugate_nonneg(y + h)) - float(f.conjugate_nonneg(y - h))) / (2 * h)
    assert fd == pytest.approx(w, abs=1e-6)
    fd2 = (float(f.conjugate(y + h)) - float(f.conjugate(y - h))) / (2 * h)
    assert fd2 == pytest.approx(float(f.conjugate_derivative(y)), abs=1e-6)
    # (f*)' inverts f'
    x = float(f.conjugate_derivative(y))
    if x > 0:
        assert float(f.f_prime(x)) == pytest.approx(y, abs=1e-9)


def test_tv_has_no_pointwise_recovery():
    with pytest.raises(ValueError, match="set-valued"):
        divergence("tv").ratio(0.0)


# ------------------------------------------------------------------------------ strong duality
@st.composite
def regularised_instances(draw):
    mdp = draw(discounted_mdps(S=(1, 5), A=(1, 3), gamma=st.sampled_from([0.0, 0.5, 0.9, 0.99])))
    d_ref = draw(probability_vectors(mdp.S * mdp.A, min_support=mdp.S * mdp.A)).reshape(
        mdp.S, mdp.A
    )
    alpha = draw(st.sampled_from([1e-2, 0.1, 0.5, 2.0]))
    return mdp, d_ref, alpha


@settings(max_examples=30)
@given(inst=regularised_instances(), name=st.sampled_from(SMOOTH))
def test_dual_v_strong_duality_and_flow(inst, name):
    mdp, d_ref, alpha = inst
    sol = solve_dual_v(mdp, d_ref, alpha, name)
    assert abs(sol.gap) <= GAP_TOL
    assert sol.flow_residual <= FLOW_TOL
    assert abs(sol.occupancy.sum() - 1.0) <= FLOW_TOL
    assert sol.occupancy.min() >= 0.0
    # the certificate is computed, not copied: recompute both objectives independently
    f = divergence(name)
    assert sol.primal_value == pytest.approx(
        primal_objective(mdp, sol.occupancy, d_ref, alpha, f), abs=1e-14
    )
    assert sol.dual_value == pytest.approx(
        dual_v_objective(mdp, sol.V, d_ref, alpha, f, mdp.gamma, mdp.mu0), abs=1e-14
    )


@settings(max_examples=12)
@given(inst=regularised_instances(), name=st.sampled_from(list(DIVERGENCES)))
def test_dual_v_agrees_with_cvxpy_primal(inst, name):
    mdp, d_ref, alpha = inst
    sol = solve_dual_v(mdp, d_ref, alpha, name)
    ref = solve_regularized_primal(mdp, d_ref, alpha, name)
    assert sol.primal_value == pytest.approx(ref.primal_value, abs=CVXPY_TOL)
    assert np.max(np.abs(sol.occupancy - ref.occupancy)) <= 1e-4 or name == "tv"
    if name == "tv":  # an LP: the gap of its multipliers is exact to HiGHS's tolerance
        assert abs(ref.gap) <= GAP_TOL
        assert ref.flow_residual <= FLOW_TOL


@pytest.mark.parametrize("name", SMOOTH)
def test_weak_duality_at_random_points(name):
    """dual(V) >= E_d r - alpha D_f(d) for any V and any feasible d (Fenchel-Young): the gap is
    a certificate, not a tautology."""
    rng = np.random.default_rng(3)
    mdp = random_mdp(3)
    d_ref = full_support(3, mdp.S, mdp.A)
    f = divergence(name)
    opt = solve_dual_v(mdp, d_ref, 0.2, name)
    for _ in range(20):
        V = rng.normal(size=mdp.S) * 3
        pi = rng.dirichlet(np.ones(mdp.A), size=mdp.S)
        d = occupancy_measure(mdp, pi)
        dual = dual_v_objective(mdp, V, d_ref, 0.2, f, mdp.gamma, mdp.mu0)
        primal = primal_objective(mdp, d, d_ref, 0.2, f)
        assert dual >= primal - 1e-12
        assert dual >= opt.dual_value - 1e-12
        assert primal <= opt.primal_value + 1e-12


@pytest.mark.parametrize("name", SMOOTH)
def test_partial_support_reference_that_covers_the_flow(name):
    """d^O = the occupancy of a behaviour policy with zeros: the flow is covered exactly."""
    mdp = random_mdp(5, S=5, A=3)
    rng = np.random.default_rng(5)
    pi_b = rng.dirichlet(np.ones(mdp.A), size=mdp.S)
    pi_b[:, 0] = 0.0
    pi_b /= pi_b.sum(1, keepdims=True)
    d_ref = occupancy_measure(mdp, pi_b)
    sol = solve_dual_v(mdp, d_ref, 0.1, name)
    assert abs(sol.gap) <= GAP_TOL and sol.flow_residual <= FLOW_TOL
    assert np.all(sol.occupancy[:, 0] == 0.0)  # never outside the support
    ref = solve_regularized_primal(mdp, d_ref, 0.1, name)
    assert sol.primal_value == pytest.approx(ref.primal_value, abs=CVXPY_TOL)


@pytest.mark.parametrize("name", SMOOTH)
def test_lbfgs_and_newton_agree(name):
    mdp = random_mdp(7)
    d_ref = full_support(7, mdp.S, mdp.A)
    a = solve_dual_v(mdp, d_ref, 0.1, name, method="newton")
    b = solve_dual_v(mdp, d_ref, 0.1, name, method="lbfgs", tol=1e-9)
    assert np.max(np.abs(a.V - b.V)) <= 1e-6
    assert abs(b.gap) <= 1e-6 and b.flow_residual <= 1e-8


def test_sparse_and_dense_models_give_the_same_solution():
    mdp = random_mdp(11, S=6, A=2)
    d_ref = full_support(11, mdp.S, mdp.A)
    a = solve_dual_v(mdp, d_ref, 0.1, "kl")
    b = solve_dual_v(mdp.to_sparse(), d_ref, 0.1, "kl")
    np.testing.assert_allclose(a.V, b.V, atol=1e-10)


# ------------------------------------------------------------------------------ alpha -> 0
@pytest.mark.parametrize("name", list(DIVERGENCES))
def test_alpha_to_zero_tends_to_lp_at_rate_alpha(name):
    """0 <= J_LP - J(alpha) <= alpha D_f(d_LP || d^O) (regularized_objectives docstring)."""
    mdp = random_mdp(13)
    d_ref = full_support(13, mdp.S, mdp.A)
    lp = discounted_lp(mdp)
    J_lp = (1.0 - mdp.gamma) * lp.value  # normalised occupancy: E_d r = (1 - gamma) V
    D_lp = divergence(name).divergence(lp.occupancy, d_ref)
    gaps = []
    for alpha in (1.0, 0.1, 0.01, 1e-3, 1e-4):
        J = solve_dual_v(mdp, d_ref, alpha, name).primal_value
        gap = J_lp - J
        assert -1e-8 <= gap <= alpha * D_lp + 1e-8
        gaps.append(gap)
    assert np.all(np.diff(gaps) <= 1e-10)  # J(alpha) rises as alpha falls


# ------------------------------------------------------------------------------ dual-Q
@settings(max_examples=15)
@given(inst=regularised_instances(), name=st.sampled_from(SMOOTH), data=st.data())
def test_dual_q_strong_duality_for_a_fixed_policy(inst, name, data):
    mdp, d_ref, alpha = inst
    pi = data.draw(stochastic_policies(mdp.S, mdp.A))
    sol = solve_dual_q(mdp, pi, d_ref, alpha, name)
    d_pi = occupancy_measure(mdp, pi)
    assert abs(sol.gap) <= GAP_TOL
    assert np.max(np.abs(sol.occupancy - d_pi)) <= FLOW_TOL
    # delta_Q = alpha f'(d^pi / d^O) where d^pi > 0
    f = divergence(name)
    P_pi_Q = mdp.expected_next(np.sum(pi * sol.Q, axis=1))
    delta = mdp.reward(0) + mdp.gamma * P_pi_Q - sol.Q
    on = d_pi > 1e-12
    np.testing.assert_allclose(
        delta[on], alpha * f.f_prime(d_pi[on] / d_ref[on]), atol=1e-7 * max(1.0, alpha)
    )


@pytest.mark.parametrize("name", SMOOTH)
def test_dual_q_at_the_dual_v_policy_equals_the_regularised_optimum(name):
    mdp = random_mdp(17)
    d_ref = full_support(17, mdp.S, mdp.A)
    v = solve_dual_v(mdp, d_ref, 0.1, name)
    q = solve_dual_q(mdp, v.policy, d_ref, 0.1, name)
    assert q.dual_value == pytest.approx(v.dual_value, abs=1e-8)
    # and any other policy does no better (max over pi of dual-Q is J(alpha))
    rng = np.random.default_rng(0)
    for _ in range(5):
        other = solve_dual_q(mdp, rng.dirichlet(np.ones(mdp.A), size=mdp.S), d_ref, 0.1, name)
        assert other.dual_value <= v.dual_value + 1e-10


@pytest.mark.parametrize("seed", [0, 2])
@pytest.mark.parametrize("name", SMOOTH)
def test_dual_q_maximised_over_policies_equals_the_dual_v_optimum(name, seed):
    """max_pi min_Q L(Q; pi) = J(alpha): the outer max (L-BFGS on the policy, exact inner
    dual-Q) reaches the dual-V / primal optimum to 1e-8 without being shown it, never exceeds it
    (weak duality), and its policy is the dual-V policy. Seed 2, half chi^2 is the instance on
    which softmax logits stalled 1.4e-3 short (an action of the optimum squeezed to pi ~ 0)."""
    rng = np.random.default_rng(seed)
    S, A = 4, 3
    mdp = TabularMDP(
        rng.dirichlet(np.ones(S), size=(S, A)), rng.uniform(size=(S, A)), np.ones(S) / S, gamma=0.9
    )
    d_ref = rng.dirichlet(np.ones(S * A)).reshape(S, A)
    v = solve_dual_v(mdp, d_ref, 0.1, name)
    best = maximize_dual_q(mdp, d_ref, 0.1, name)
    assert best.value <= v.dual_value + 1e-10
    assert v.dual_value - best.value <= GAP_TOL
    assert abs(best.inner.gap) <= GAP_TOL
    assert np.max(np.abs(best.policy - v.policy)) <= 1e-6


# ------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("alpha", [0.0, -0.1, float("nan"), float("inf"), "x"])
def test_alpha_must_be_positive(alpha):
    mdp = random_mdp(1)
    with pytest.raises(DualInputError, match="alpha"):
        solve_dual_v(mdp, full_support(1, mdp.S, mdp.A), alpha)


def test_uncovered_reference_names_the_state_actions():
    P = np.zeros((3, 2, 3))
    P[0, :, 1] = 1.0  # state 0 -> state 1 whatever the action
    P[1, :, 2] = 1.0
    P[2, :, 2] = 1.0
    mdp = TabularMDP(P, np.full((3, 2), 0.5), gamma=0.9)
    d_ref = np.array([[0.5, 0.0], [0.0, 0.0], [0.25, 0.25]])  # nothing at state 1
    with pytest.raises(UncoveredFlowError, match=r"\(s=1, a=0\.\.1\)"):
        solve_dual_v(mdp, d_ref, 0.1, "kl")
    with pytest.raises(UncoveredFlowError, match=r"\(s=1, a=0\)"):
        solve_dual_q(mdp, np.zeros(3, dtype=int), d_ref, 0.1, "kl")


def test_reference_must_be_a_distribution():
    mdp = random_mdp(2)
    bad = full_support(2, mdp.S, mdp.A)
    bad[1, 2] = -0.1
    with pytest.raises(DualInputError, match=r"\(1, 2\)"):
        solve_dual_v(mdp, bad, 0.1)
    with pytest.raises(DualInputError, match="shape"):
        solve_dual_v(mdp, np.ones((2, 2)) / 4, 0.1)


def test_dual_q_refuses_tv():
    mdp = random_mdp(2)
    with pytest.raises(DualInputError, match="smooth"):
        solve_dual_q(mdp, np.zeros(mdp.S, dtype=int), full_support(2, mdp.S, mdp.A), 0.1, "tv")


def test_dual_q_outer_max_needs_mass_in_every_state():
    mdp = random_mdp(19)
    d_ref = full_support(19, mdp.S, mdp.A)
    d_ref[2] = 0.0
    d_ref /= d_ref.sum()
    with pytest.raises(UncoveredFlowError, match="no mass at state s=2"):
        maximize_dual_q(mdp, d_ref, 0.1, "kl")


@pytest.mark.parametrize("name", ["kl", "half-chi2"])
def test_matrix_free_cg_newton_on_a_sparse_model(name):
    """Above 200 states Newton solves its system by matrix-free CG and warm-starts the alpha
    stages with the tangent predictor: still certified (gap, flow) and equal to cvxpy's primal."""
    from theorylab.mdps import make

    S = 400
    mdp = make(f"random-sparse:S={S},A=2,b=5,gamma=0.9").with_objective(gamma=0.9)
    d_ref = np.full((S, 2), 1.0 / (2 * S))
    sol = solve_dual_v(mdp, d_ref, 0.05, name)
    assert sol.info["stages"] > 1
    assert abs(sol.gap) <= GAP_TOL and sol.flow_residual <= FLOW_TOL
    ref = solve_regularized_primal(mdp, d_ref, 0.05, name)
    assert sol.primal_value == pytest.approx(ref.primal_value, abs=CVXPY_TOL)
