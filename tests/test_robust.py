"""Robust Bellman operators (algorithms/planning/robust.py) against independent inner minima:
an LP for total variation, cvxpy for KL and chi-square, and the robust planners built on them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from theorylab.algorithms.planning import robust as R
from theorylab.mdps import make


def lp_tv(p: np.ndarray, V: np.ndarray, rho: float) -> float:
    """min q.V s.t. q >= 0, sum q = 1, (1/2) sum |q - p| <= rho; an LP in (q, t >= |q - p|)."""
    S = p.size
    I, Z = np.eye(S), np.zeros((1, S))
    A_ub = np.block([[I, -I], [-I, -I], [Z, 0.5 * np.ones((1, S))]])
    b_ub = np.r_[p, -p, rho]
    res = linprog(
        np.r_[V, np.zeros(S)],
        A_ub=A_ub,
        b_ub=b_ub,
        A_eq=np.r_[np.ones(S), np.zeros(S)][None],
        b_eq=[1.0],
        bounds=[(0, None)] * (2 * S),
        method="highs",
    )
    return float(res.fun)


def cvxpy_inner(p: np.ndarray, V: np.ndarray, rho: float, divergence: str) -> float:
    """min q.V over the KL or chi-square ball, as a generic conic programme (no dual)."""
    import cvxpy as cp

    s = p > 0
    ps, Vs = p[s], V[s]
    q = cp.Variable(ps.size, nonneg=True)
    if divergence == "kl":
        ball = cp.sum(cp.kl_div(q, ps)) <= rho
    else:
        y = cp.multiply(1.0 / np.sqrt(ps), q - ps)
        ball = cp.sum_squares(y) <= rho
    prob = cp.Problem(cp.Minimize(Vs @ q), [ball, cp.sum(q) == 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prob.solve(solver="CLARABEL", tol_gap_abs=1e-13, tol_gap_rel=1e-13, tol_feas=1e-13)
    return float(prob.value)


def divergence_of(q: np.ndarray, p: np.ndarray, divergence: str) -> float:
    if divergence == "tv":
        return 0.5 * float(np.abs(q - p).sum())
    s = p > 0
    assert np.all(q[~s] == 0)
    if divergence == "kl":
        qs = q[s]
        return float(np.sum(np.where(qs > 0, qs * np.log(np.where(qs > 0, qs, 1) / p[s]), 0.0)))
    return float(np.sum((q[s] - p[s]) ** 2 / p[s]))


@st.composite
def rows(draw):
    S = draw(st.integers(2, 6))
    w = np.array(draw(st.lists(st.floats(0.02, 1.0), min_size=S, max_size=S)))
    drop = draw(st.integers(-1, S - 1))
    if drop >= 0:
        w[drop] = 0.0  # a zero outside the support (only tv may move mass there)
    V = np.array(draw(st.lists(st.floats(0.0, 10.0), min_size=S, max_size=S)))
    if draw(st.booleans()):
        V = np.round(V)  # ties
    rho = draw(st.sampled_from([0.01, 0.05, 0.2, 0.7, 2.0, 6.0]))
    return w / w.sum(), V, rho


@settings(max_examples=60, deadline=None)
@given(rows())
def test_tv_inner_equals_lp_and_its_dual(row):
    p, V, rho = row
    v, q = R.inner(p, V, "tv", rho)
    assert abs(v[0] - lp_tv(p, V, rho)) <= 1e-8
    assert abs(v[0] - R.tv_dual_value(p, V, rho)[0]) <= 1e-10
    assert abs(q[0] @ V - v[0]) <= 1e-10 and divergence_of(q[0], p, "tv") <= rho + 1e-12


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
@settings(max_examples=25, deadline=None)
@given(row=rows())
def test_kl_chi2_inner_equals_cvxpy(divergence, row):
    p, V, rho = row
    v, q = R.inner(p, V, divergence, rho)
    assert abs(v[0] - cvxpy_inner(p, V, rho, divergence)) <= 1e-8
    # the dual's value is attained by a feasible q (a certificate: dual <= min <= q.V)
    assert abs(q[0] @ V - v[0]) <= 1e-10
    assert abs(q.sum() - 1) <= 1e-12 and divergence_of(q[0], p, divergence) <= rho + 1e-10


def test_kl_dual_without_its_lambda_rho_term_is_caught():
    """The mutation that drops -lambda rho from the KL dual: its sup is the nominal mean (lambda
    -> infinity), no longer the cvxpy minimum."""
    p, V, rho = np.array([0.3, 0.5, 0.2]), np.array([1.0, 4.0, 9.0]), 0.3
    right = cvxpy_inner(p, V, rho, "kl")
    lam = np.geomspace(1e-3, 1e6, 4001)
    dropped = max(R.kl_dual(x, p, V, 0.0) for x in lam)  # rho = 0 inside the dual
    assert abs(R.inner(p, V, "kl", rho)[0][0] - right) <= 1e-8
    assert dropped - right > 0.5


@pytest.mark.parametrize("divergence", R.DIVERGENCES)
def test_radius_zero_is_the_nominal_expectation_exactly(divergence):
    rng = np.random.default_rng(3)
    p, V = rng.dirichlet(np.ones(5), size=4), rng.uniform(0, 1, 5)
    v, q = R.inner(p, V, divergence, 0.0)
    assert np.array_equal(v, p @ V) and np.array_equal(q, p)


def test_large_radius_is_the_worst_case():
    p = np.array([0.0, 0.4, 0.6])
    V = np.array([-1.0, 2.0, 5.0])
    assert R.inner(p, V, "tv", 1.0)[0][0] == -1.0  # tv reaches every state
    for d in ("kl", "chi2"):  # the others stay on supp p: min over it
        assert abs(R.inner(p, V, d, 1e3)[0][0] - 2.0) <= 1e-12


def test_monotone_in_the_radius():
    p, V = np.array([0.2, 0.3, 0.5]), np.array([3.0, 1.0, 7.0])
    for d in R.DIVERGENCES:
        vals = [R.inner(p, V, d, r)[0][0] for r in (0.0, 0.01, 0.1, 0.5, 2.0)]
        assert all(a >= b - 1e-12 for a, b in zip(vals, vals[1:], strict=False))
        assert vals[0] > vals[-1]


@pytest.mark.parametrize(
    "divergence, rho, message",
    [
        ("wasserstein", 0.1, "divergence must be one of tv, kl, chi2, got 'wasserstein'"),
        ("tv", -0.1, "rho (the radius) must be a finite number >= 0, got -0.1"),
        ("kl", float("nan"), "rho (the radius) must be a finite number >= 0, got nan"),
        ("chi2", "big", "rho (the radius) must be a finite number >= 0, got 'big'"),
    ],
)
def test_input_errors_are_one_line(divergence, rho, message):
    with pytest.raises(ValueError) as err:
        R.inner(np.array([0.5, 0.5]), np.zeros(2), divergence, rho)
    assert str(err.value) == message and "\n" not in str(err.value)


def bellman_residual_lp(mdp, V: np.ndarray, rho: float) -> float:
    """|T V - V| with the tv inner minimum of every (s, a) by the LP (not the water-filling)."""
    P = mdp.dense_P()
    sig = np.array([[lp_tv(P[s, a], V, rho) for a in range(mdp.A)] for s in range(mdp.S)])
    return float(np.max(np.abs((mdp.reward(0) + mdp.gamma * sig).max(axis=1) - V)))


@pytest.mark.parametrize("divergence", R.DIVERGENCES)
def test_robust_vi_fixed_point_and_worst_kernel(divergence):
    mdp = make("random:S=5,A=3,gamma=0.9,seed=4").with_objective(gamma=0.9, horizon=None)
    sol = R.robust_value_iteration(mdp, divergence, 0.1)
    # the robust policy's value under the returned worst kernel is the robust value (exact solve)
    assert np.max(np.abs(R.kernel_value(mdp, sol.worst, sol.policy) - sol.V)) <= 1e-8
    # robust policy evaluation of the robust policy reproduces it
    ev = R.robust_value_iteration(mdp, divergence, 0.1, policy=sol.policy)
    assert np.max(np.abs(ev.V - sol.V)) <= 1e-9
    nominal = R.robust_value_iteration(mdp, divergence, 0.0)
    assert np.all(sol.V <= nominal.V + 1e-12) and np.any(sol.V < nominal.V - 1e-3)
    if divergence == "tv":
        assert bellman_residual_lp(mdp, sol.V, 0.1) <= 1e-8


def test_robust_vi_beats_the_nominal_policy_under_its_worst_kernel():
    mdp = make("random:S=6,A=3,gamma=0.9,seed=7").with_objective(gamma=0.9, horizon=None)
    rob = R.robust_value_iteration(mdp, "tv", 0.2)
    nom = R.robust_value_iteration(mdp, "tv", 0.0)
    nom_robust = R.robust_value_iteration(mdp, "tv", 0.2, policy=nom.policy)
    assert np.all(rob.V >= nom_robust.V - 1e-9)
    # and no kernel in the ball does worse to the robust policy than its worst kernel
    rng = np.random.default_rng(0)
    P = mdp.dense_P()
    for _ in range(20):
        Q = rng.dirichlet(np.ones(mdp.S), size=(mdp.S, mdp.A))
        t = np.minimum(1.0, 0.2 / np.maximum(0.5 * np.abs(Q - P).sum(-1, keepdims=True), 1e-12))
        inside = P + t * (Q - P)  # a kernel inside every (s, a) ball
        assert np.all(R.kernel_value(mdp, inside, rob.policy) >= rob.V - 1e-9)


def test_finite_horizon_robust_vi_against_enumeration():
    """H = 3, S = 2, A = 2, tv: the adversary's best response is a deterministic choice of a
    vertex per (h, s, a); enumerate the vertices of each small ball (by the LP at many costs)
    and the policies, and compare max_pi min_P with the backward recursion."""
    mdp = make("random:S=2,A=2,H=3,seed=5")
    rho = 0.15
    sol = R.robust_value_iteration(mdp, "tv", rho)
    P = mdp.dense_P()
    # with S = 2 a tv ball is a segment: q(0) in [p0 - rho, p0 + rho] clipped to [0, 1]
    V = np.zeros((mdp.horizon + 1, mdp.S))
    for h in range(mdp.horizon - 1, -1, -1):
        P_h = P[h] if P.ndim == 4 else P
        lo = np.clip(P_h[..., 0] - rho, 0, 1)
        hi = np.clip(P_h[..., 0] + rho, 0, 1)
        ends = [np.stack([x, 1 - x], -1) @ V[h + 1] for x in (lo, hi)]
        V[h] = (mdp.reward(h) + np.minimum(*ends)).max(axis=1)
    assert np.max(np.abs(V - sol.V)) <= 1e-12
