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


# ------------------------------------------------------------------ IWOCS (002-004#D1)
def _discounted(spec):
    mdp = make(spec)
    return mdp.with_objective(gamma=mdp.gamma, horizon=None)


@pytest.mark.parametrize("seed", range(4))
def test_iwocs_terminates_and_equals_the_brute_force_maxmin(seed):
    from theorylab.algorithms.robust import finite_sets as F
    from theorylab.algorithms.robust import iwocs as I

    mdp = _discounted(f"random:S=4,A=2,gamma=0.9,seed={seed}")
    models = F.perturbed_models(mdp, 8, 0.9, seed)
    run = I.iwocs(mdp, models, 8)
    assert run.terminated and run.worst_case.size <= 8
    # brute force written out here: every deterministic policy against every kernel
    best = -np.inf
    for pol in F.all_deterministic_policies(mdp.S, mdp.A):
        vals = [R.kernel_value(mdp, P, pol) @ mdp.mu0 for P in models]
        best = max(best, min(vals))
    final = min(R.kernel_value(mdp, P, run.policies[-1]) @ mdp.mu0 for P in models)
    assert abs(final - best) <= 1e-10
    V_dyn, _ = F.dynamic_robust_vi(mdp, models)
    assert best >= V_dyn @ mdp.mu0 - 1e-10


def test_static_equals_dynamic_on_a_rectangular_product():
    from theorylab.algorithms.robust import finite_sets as F

    mdp = _discounted("random:S=3,A=2,gamma=0.9,seed=2")
    rect = F.rectangular_product(F.perturbed_models(mdp, 2, 0.7, 2))
    assert rect.shape[0] == 2**6
    static, _ = F.brute_force_maxmin(mdp, rect)
    V, _ = F.dynamic_robust_vi(mdp, rect)
    assert abs(static - V @ mdp.mu0) <= 1e-9


def test_iwocs_best_case_mutation_misses_the_maxmin():
    from theorylab.algorithms.robust import finite_sets as F
    from theorylab.algorithms.robust import iwocs as I
    from theorylab.validations.robust_mutations import iwocs_adds_best_case_model

    misses = 0
    for seed in range(8):
        mdp = _discounted(f"random:S=4,A=2,gamma=0.9,seed={seed}")
        models = F.perturbed_models(mdp, 8, 0.6, seed)
        best, _ = F.brute_force_maxmin(mdp, models)
        with iwocs_adds_best_case_model():
            run = I.iwocs(mdp, models, 8)
        final = F.static_values(mdp, models, run.policies[-1][None])[0].min()
        misses += best - final > 1e-6
    assert misses >= 1


def test_iwocs_through_tl_run_and_its_input_errors():
    import theorylab as tl

    res = tl.run("iwocs", "random:S=3,A=2,gamma=0.9,seed=1", iterations=4, models=4)
    assert res.config["terminated"] and abs(res.target_gap[-1]) <= 1e-10
    res = tl.run(
        "iwocs", "random:S=2,A=2,gamma=0.9,seed=1", iterations=20, uncertainty="rectangular"
    )
    assert res.config["models"] == 16 and abs(res.target_gap[-1]) <= 1e-10
    with pytest.raises(ValueError, match="iwocs: models must be a positive integer, got 0"):
        tl.run("iwocs", "random:S=3,A=2,gamma=0.9", iterations=3, models=0)
    with pytest.raises(ValueError, match="iwocs: spread must be a number in"):
        tl.run("iwocs", "random:S=3,A=2,gamma=0.9", iterations=3, spread=2.0)
    with pytest.raises(ValueError, match="policy_step must be maxmin or qmin"):
        tl.run("iwocs", "random:S=3,A=2,gamma=0.9", iterations=3, policy_step="x")


# ------------------------------------------------------------------ DR-RPO (000#22)
def test_factored_expectation_one_hot_is_the_rectangular_one():
    mdp = _discounted("random:S=4,A=3,gamma=0.9,seed=3")
    P = mdp.dense_P()
    V = np.random.default_rng(0).uniform(0, 5, 4)
    phi = np.eye(12).reshape(4, 3, 12)
    a, qa = R.factored_robust_expectation(phi, P.reshape(12, 4), V, "tv", 0.2)
    b, qb = R.robust_expectation(P, V, "tv", 0.2)
    assert np.array_equal(a, b) and np.array_equal(qa, qb)


def test_factored_expectation_against_an_lp_over_the_factors():
    """d = 2 factors on S = 3: the joint LP over (q_1, q_2) in their tv balls."""
    rng = np.random.default_rng(1)
    mu = rng.dirichlet(np.ones(3), size=2)
    phi = rng.dirichlet(np.ones(2), size=(2, 2))  # (S=2, A=2, d=2); rows of phi on the simplex
    V, rho = np.array([0.3, 2.0, 1.1]), 0.25
    vals, _ = R.factored_robust_expectation(phi, mu, V, "tv", rho)
    for s in range(2):
        for a in range(2):
            w = phi[s, a]
            lp = sum(w[i] * lp_tv(mu[i], V, rho) for i in range(2))
            assert abs(vals[s, a] - lp) <= 1e-10


@pytest.mark.parametrize("features", ["tabular", 4])
def test_drrpo_reaches_the_soft_optima(features):
    from theorylab.algorithms.planning.soft_value_iteration import soft_value_iteration
    from theorylab.algorithms.robust import drrpo as D
    from theorylab.mdps import TabularMDP

    mdp = _discounted("random:S=4,A=3,gamma=0.9,seed=5")
    model = D.d_rectangular(mdp, features, 1)
    nominal = TabularMDP(model.kernel(), model.R, model.mu0, gamma=0.9)
    run0 = D.drrpo(model, 12, beta=0.1, eta=100.0, rho=0.0)
    soft = soft_value_iteration(nominal, 0.1)
    assert D.state_kl(run0.policies[-1], soft.policy).max() <= 1e-10
    run = D.drrpo(model, 12, beta=0.1, eta=100.0, rho=0.2)
    assert abs(run.J[-1] - run.J_star) <= 1e-9 and run.J_star < run0.J_star - 1e-3


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"rho": -1.0}, "dr-rpo: rho must be a finite number >= 0, got -1.0"),
        ({"beta": 0.0}, "dr-rpo: beta must be a finite number > 0, got 0.0"),
        ({"features": "x"}, "dr-rpo: features must be 'tabular' or a positive int d, got 'x'"),
    ],
)
def test_drrpo_input_errors(kwargs, message):
    import theorylab as tl

    with pytest.raises(ValueError) as err:
        tl.run("dr-rpo", "random:S=3,A=2,gamma=0.9", iterations=2, **kwargs)
    assert message in str(err.value)


# ------------------------------------------------------------------ substates (000#73)
def test_split_at_alpha_by_hand():
    from theorylab.algorithms.robust.substates import split_at_alpha

    atoms = np.array([[0.0, 1.0, 3.0]])
    w = np.array([[0.5, 0.25, 0.25]])
    lo, hi = split_at_alpha(atoms, w, 0.25)
    assert lo[0] == 0.0 and abs(hi[0] - (0.25 * 0 + 0.25 * 1 + 0.25 * 3) / 0.75) <= 1e-15
    lo, hi = split_at_alpha(atoms, w, 0.75)  # all of 0 (0.5) and 0.25 of 1
    assert abs(lo[0] - 0.25 / 0.75) <= 1e-15 and hi[0] == 3.0


def test_substates_bracket_the_mean_and_are_its_split():
    from theorylab.algorithms.planning.evaluation import evaluate_discounted
    from theorylab.algorithms.robust import substates as Z

    mdp = _discounted("random:S=5,A=3,gamma=0.9,seed=9")
    pi = np.random.default_rng(2).dirichlet(np.ones(3), size=5)
    for alpha in (0.1, 0.5, 0.9):
        sol = Z.evaluate_substates(mdp, pi, alpha)
        V = evaluate_discounted(mdp, pi)
        assert np.max(np.abs(alpha * sol.Vm + (1 - alpha) * sol.Vp - V)) <= 1e-9
        assert np.all(sol.Vm < V) and np.all(V < sol.Vp)


def test_safe_and_risky_on_a_gamble():
    import theorylab as tl
    from theorylab.validations.claims.robust import gamble_mdp, return_variance

    g = gamble_mdp(0.3)
    safe = tl.run("substate-dp", g, iterations=300, mode="safe")
    risky = tl.run("substate-dp", g, iterations=300, mode="risky")
    a_safe = int(np.asarray(safe.policies[-1])[0].argmax())
    a_risky = int(np.asarray(risky.policies[-1])[0].argmax())
    assert (a_safe, a_risky) == (0, 1)
    # closed form of the risky variance: p (1 - p) (gamma / (1 - gamma))^2
    var = return_variance(g, np.array([a_risky, 0, 0, 0]))[0]
    assert abs(var - 0.3 * 0.7 * 81.0) <= 1e-9
    assert abs(safe.objective[-1] - safe.target_value) <= 1e-9


def test_substate_input_errors():
    import theorylab as tl

    with pytest.raises(ValueError, match=r"alpha \(the worst substate's mass\) must lie in"):
        tl.run("substate-dp", "random:S=3,A=2,gamma=0.9", iterations=3, alpha=1.0)
    with pytest.raises(ValueError, match="substate-dp: mode must be safe or risky, got 'bold'"):
        tl.run("substate-dp", "random:S=3,A=2,gamma=0.9", iterations=3, mode="bold")


# ------------------------------------------------------------------ time-constrained (000#50)
def test_tc_rmdp_limits_and_ordering():
    from theorylab.algorithms.planning.value_iteration import value_iteration
    from theorylab.algorithms.robust import finite_sets as F
    from theorylab.algorithms.robust import time_constrained as T

    mdp = _discounted("random:S=4,A=2,gamma=0.9,seed=6")
    fam = T.parameter_family(mdp, 5, 6)
    assert np.array_equal(fam[2], mdp.dense_P())  # the nominal kernel in the middle
    tcs = [float(T.tc_robust_vi(mdp, fam, L)[1] @ mdp.mu0) for L in range(5)]
    rect = float(F.dynamic_robust_vi(mdp, fam)[0] @ mdp.mu0)
    static = min(float(value_iteration(mdp._replace(P=P), tol=1e-13).V @ mdp.mu0) for P in fam)
    nominal = float(value_iteration(mdp, tol=1e-13).V @ mdp.mu0)
    assert abs(tcs[-1] - rect) <= 1e-9 and abs(tcs[0] - static) <= 1e-9
    assert all(b <= a + 1e-12 for a, b in zip(tcs, tcs[1:], strict=False))
    assert rect - 1e-9 <= tcs[1] <= tcs[0] <= nominal + 1e-9


def test_tc_rmdp_input_errors():
    import theorylab as tl

    with pytest.raises(ValueError, match="tc-rmdp: levels must be an odd integer >= 3, got 4"):
        tl.run("tc-rmdp", "random:S=3,A=2,gamma=0.9", iterations=3, levels=4)
    with pytest.raises(ValueError, match=r"tc-rmdp: step \(L, in grid steps\) must be an integer"):
        tl.run("tc-rmdp", "random:S=3,A=2,gamma=0.9", iterations=3, step=-1)


# ------------------------------------------------------------------ H-infinity LQ game (D4)
def _scalar_game(a=1.2, b=1.0, d=0.8, r=0.5):
    from theorylab.mdps.lq_game import LQGame

    return LQGame(
        np.array([[a]]), np.array([[b]]), np.array([[d]]), np.eye(1), np.array([[r]]),
        np.ones(1),
    )  # fmt: skip


@pytest.mark.parametrize("gamma", [2.0, 3.0, float("inf")])
def test_hinf_scalar_game_riccati_closed_form(gamma):
    """n = m = q = 1, Q = 1: 1/Pt = 1/P - d^2/gamma^2 turns the GARE into c P^2 + (1 - c - a^2) P
    - 1 = 0 with c = b^2/r - d^2/gamma^2, written out here (not imported)."""
    import theorylab as tl
    from theorylab.algorithms.robust import hinf_lq as H

    a, b, d, r = 1.2, 1.0, 0.8, 0.5
    game = _scalar_game(a, b, d, r)
    c = b**2 / r - d**2 / gamma**2
    P = (-(1 - c - a**2) + np.sqrt((1 - c - a**2) ** 2 + 4 * c)) / (2 * c)
    Pt = 1.0 / (1.0 / P - d**2 / gamma**2)
    K = b * Pt * a / (r + b**2 * Pt)
    res = tl.run("hinf-lq", game, iterations=300, gamma=gamma)
    assert res.config["solvable"]
    assert abs(res.config["value_matrix"][0][0] - P) <= 1e-10
    assert abs(float(res.policies[-1][0, 0]) - K) <= 1e-10
    star = H.analytic_game_riccati(game, gamma)
    assert abs(star[0][0, 0] - P) <= 1e-9 and abs(star[1][0, 0] - K) <= 1e-9
    # the scalar loop's H-infinity norm peaks at z = sign(a_K): sqrt(1 + r K^2) |d| / (1 - |a_K|)
    aK = a - b * K
    assert H.hinf_norm(game, np.array([[K]])) == pytest.approx(
        np.sqrt(1 + r * K**2) * abs(d) / (1 - abs(aK)), rel=1e-9
    )


def test_hinf_matches_scipy_and_reports_no_solution_below_gamma_star():
    import theorylab as tl
    from theorylab.algorithms.robust import hinf_lq as H

    game = make("lq-game:n=3,m=1,q=1,seed=1")
    g_star = H.critical_gamma(game)
    res = tl.run("hinf-lq", game.name, iterations=400, gamma=1.2 * g_star)
    star = H.analytic_game_riccati(game, 1.2 * g_star)
    assert res.config["solvable"] and np.abs(res.policies[-1] - star[1]).max() <= 1e-9
    assert H.hinf_norm(game, res.policies[-1]) < 1.2 * g_star
    below = tl.run("hinf-lq", game.name, iterations=400, gamma=0.9 * g_star)  # no error
    assert not below.config["solvable"] and np.isnan(below.target_value)
    assert H.analytic_game_riccati(game, 0.9 * g_star) is None


def test_hinf_sign_mutation_misses_the_analytic_gain():
    import theorylab as tl
    from theorylab.validations.robust_mutations import hinf_disturber_sign_flipped

    game = make("lq-game:n=3,m=1,q=1,seed=0")
    with hinf_disturber_sign_flipped():
        res = tl.run("hinf-lq", game, iterations=400, gamma=4.0)
    assert float(res.target_gap[-1]) > 1e-3


def test_hinf_input_errors():
    import theorylab as tl

    with pytest.raises(ValueError, match=r"hinf-lq: gamma must be a number > 0 \(inf for LQR\)"):
        tl.run("hinf-lq", "lq-game:n=2", iterations=3, gamma=-1.0)
    with pytest.raises(ValueError, match="hinf-lq: problem must be an LQ game"):
        tl.run("hinf-lq", "random:S=3,A=2,gamma=0.9", iterations=3)
    with pytest.raises(ValueError, match="need n, m, q >= 1 and rho > 0"):
        tl.run("hinf-lq", "lq-game:n=0", iterations=3)


# ------------------------------------------------------------------ non-dominated + EXP3 (D3)
def test_exp3_constants_are_auer_et_al_corollary_3_2():
    """The printed bound 2 sqrt(e - 1) sqrt(T K ln K) and rate min(1, sqrt(K ln K/((e-1) T))),
    written out here, against the library and the bound card."""
    import math

    from theorylab.algorithms.robust import nondominated as N
    from theorylab.bounds import get_bound

    for K, T in ((2, 100), (5, 20_000), (11, 10**6)):
        printed = 2.0 * math.sqrt(math.e - 1.0) * math.sqrt(T * K * math.log(K))
        assert N.exp3_bound(K, T) == pytest.approx(printed, rel=1e-15)
        assert float(get_bound("auer2002-exp3-cor3.2").evaluate(K=T, A=K)) == pytest.approx(
            printed, rel=1e-12
        )
        assert N.exp3_gamma(K, T) == pytest.approx(
            min(1.0, math.sqrt(K * math.log(K) / ((math.e - 1.0) * T))), rel=1e-15
        )
    c = 2.0 * math.sqrt(math.e - 1.0)
    assert c == pytest.approx(2.6217, abs=1e-4) and c <= 2.63  # the paper rounds it to 2.63


def _upper_hull_2d(points: np.ndarray) -> set[int]:
    """Indices of the points that are unique maximisers of w . x for some w in the 2-simplex:
    an independent sweep over a fine grid of w (two attacks)."""
    out = set()
    for lam in np.linspace(0.0, 1.0, 20_001):
        v = points @ np.array([lam, 1.0 - lam])
        order = np.argsort(-v)
        if v[order[0]] - v[order[1]] > 1e-9:
            out.add(int(order[0]))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_nondominated_filter_is_the_upper_hull_with_two_attacks(seed):
    from theorylab.algorithms.robust import nondominated as N
    from theorylab.algorithms.robust.finite_sets import all_deterministic_policies

    mdp = _discounted(f"random:S=4,A=2,gamma=0.9,seed={seed}")
    pols = all_deterministic_policies(4, 2)
    J = N.attack_values(mdp, pols, N.observation_attacks(4, 2, 0.7, seed))
    kept = set(N.nondominated(J).tolist())
    _, first = np.unique(np.round(J, 12), axis=0, return_index=True)
    assert kept == _upper_hull_2d(J) & set(first.tolist())


def test_attack_values_are_the_composed_policies_values():
    from theorylab.algorithms.planning.evaluation import evaluate_discounted
    from theorylab.algorithms.robust import nondominated as N
    from theorylab.algorithms.robust.finite_sets import all_deterministic_policies

    mdp = _discounted("random:S=4,A=3,gamma=0.8,seed=5")
    pols = all_deterministic_policies(4, 3)[::7]
    nus = N.observation_attacks(4, 3, 0.8, 1)
    J = N.attack_values(mdp, pols, nus)
    for b in range(pols.shape[0]):
        for j in range(3):
            onehot = np.eye(3)[pols[b][nus[j]]]  # (S, A): pi(nu(s)) in state s
            assert J[b, j] == pytest.approx(evaluate_discounted(mdp, onehot) @ mdp.mu0, abs=1e-10)


def test_exp3_regret_is_below_the_bound_and_uniform_play_is_not():
    import theorylab as tl
    from theorylab.validations.robust_mutations import exp3_plays_uniform

    spec = "random:S=5,A=2,gamma=0.9,seed=2"
    res = tl.run("nondominated-exp3", spec, iterations=19_999, attacks=5, attack_seed=2)
    assert res.config["best_fixed_kept"] and len(res.config["kept"]) >= 3
    assert res.regularised[-1] <= res.config["exp3_bound"] < res.config["rounds"]
    with exp3_plays_uniform():
        bad = tl.run("nondominated-exp3", spec, iterations=19_999, attacks=5, attack_seed=2)
    assert bad.regularised[-1] > bad.config["exp3_bound"]


def test_dropping_a_vertex_loses_an_attacks_best_policy():
    from theorylab.algorithms.robust import nondominated as N
    from theorylab.algorithms.robust.finite_sets import all_deterministic_policies
    from theorylab.validations.robust_mutations import nondominated_drops_a_vertex

    mdp = _discounted("random:S=5,A=2,gamma=0.9,seed=2")
    pols = all_deterministic_policies(5, 2)
    J = N.attack_values(mdp, pols, N.observation_attacks(5, 5, 0.5, 2))
    full = N.nondominated(J)
    W = np.random.default_rng(0).dirichlet(np.ones(5), 500)
    assert np.max((J @ W.T).max(0) - (J[full] @ W.T).max(0)) <= 1e-12
    with nondominated_drops_a_vertex():
        kept = N.nondominated(J)
    (lost,) = set(full.tolist()) - set(kept.tolist())
    _, w = N.unique_best_response_margin(J, lost)  # the attack mixture only it answers best
    assert (J @ w).max() - (J[kept] @ w).max() > 1e-9


def test_nondominated_exp3_input_errors():
    import theorylab as tl

    spec = "random:S=3,A=2,gamma=0.9"
    with pytest.raises(ValueError, match="nondominated-exp3: attacks must be an integer >= 1"):
        tl.run("nondominated-exp3", spec, iterations=3, attacks=0)
    with pytest.raises(ValueError, match="nondominated-exp3: strength must be a number in"):
        tl.run("nondominated-exp3", spec, iterations=3, strength=1.5)
    with pytest.raises(ValueError, match="schedule must be random or blocks, got 'x'"):
        tl.run("nondominated-exp3", spec, iterations=3, schedule="x")
    with pytest.raises(ValueError, match="A\\^S <= 16384"):
        tl.run("nondominated-exp3", "random:S=15,A=2,gamma=0.9", iterations=3)


# ------------------------------------------------------------------ policy smoothing (D2)
def test_smoothing_certificate_is_the_gaussian_formula():
    """Phi(Phi^{-1}(p) - B / sigma), written out here with scipy, and the one-sided
    Clopper-Pearson bound as the Beta(alpha; k, n - k + 1) quantile."""
    from scipy.stats import beta, norm

    from theorylab.algorithms.robust import policy_smoothing as P

    for p, B, sigma, H in ((0.9, 0.5, 1.0, 10), (0.99, 2.0, 0.25, 3), (0.6, 0.0, 3.0, 1)):
        want = norm.cdf(norm.ppf(p) - B / sigma)
        assert P.certified_probability(p, B, sigma, H) == pytest.approx(want, rel=1e-14)
    assert P.certified_probability(0.0, 1.0, 1.0, 5) == 0.0
    assert P.clopper_pearson_lower(9_000, 10_000, 0.01) == pytest.approx(
        beta.ppf(0.01, 9_000, 1_001), rel=1e-14
    )
    assert P.certified_percentile(np.array([1.0]), [0.6], 0.5, 0.0) == 1.0
    assert P.certified_percentile(np.array([1.0]), [0.4], 0.5, 0.0) == 0.0


def test_smoothed_lock_values_agree_with_policy_evaluation():
    """The attacked success probability prod_h Phi((m_h + delta_h) / sigma) equals the value of
    the corresponding stochastic policy on the combination-lock MDP (the library's evaluator),
    and the Monte-Carlo clean success rate is within 4 standard errors of the exact one."""
    from theorylab.algorithms.planning.evaluation import policy_values
    from theorylab.algorithms.robust import policy_smoothing as P

    mdp = make("combination-lock:H=6,A=2")
    m = P.margins(6, 2.0, 0.5, 2)
    for B, attack in ((0.0, "critical"), (1.0, "critical"), (1.5, "spread")):
        q = P.success_probabilities(m, P.attack_shifts(m, B, attack, 2), 0.8)  # (H,)
        pol = np.zeros((6, mdp.S, 2))
        pol[:, :, 0], pol[:, :, 1] = q[:, None], 1.0 - q[:, None]  # action 0 opens the lock
        assert float(policy_values(mdp, pol)) == pytest.approx(q.prod(), abs=1e-12)
    exact = P.success_probabilities(m, np.zeros(6), 0.8).prod()
    k = P.clean_successes(m, 0.8, 40_000, np.random.default_rng(3))
    assert abs(k / 40_000 - exact) <= 4 * np.sqrt(exact * (1 - exact) / 40_000)


def test_smoothing_wrong_scaling_is_above_the_attacked_probability():
    import theorylab as tl
    from theorylab.validations.robust_mutations import smoothing_budget_over_sqrt_horizon

    spec = "combination-lock:H=10,A=2"
    res = tl.run("policy-smoothing", spec, iterations=4, budget=2.0)
    assert np.all(res.target_gap >= 0) and np.all(np.diff(res.regularised) < 0)
    with smoothing_budget_over_sqrt_horizon():
        bad = tl.run("policy-smoothing", spec, iterations=4, budget=2.0)
    assert np.all(bad.target_gap[1:] < -0.05)


def test_policy_smoothing_input_errors():
    import theorylab as tl

    spec = "combination-lock:H=4,A=2"
    with pytest.raises(ValueError, match="policy-smoothing: sigma must be a finite number > 0"):
        tl.run("policy-smoothing", spec, iterations=2, sigma=0.0)
    with pytest.raises(ValueError, match="attack must be critical or spread, got 'x'"):
        tl.run("policy-smoothing", spec, iterations=2, attack="x")
    with pytest.raises(ValueError, match="critical_step must be an integer in \\[0, 4\\)"):
        tl.run("policy-smoothing", spec, iterations=2, critical_step=4)
    with pytest.raises(ValueError, match="two-action combination lock"):
        tl.run("policy-smoothing", "random:S=3,A=2,H=3", iterations=2)
    with pytest.raises(ValueError, match="alpha must be a float in \\(0, 1\\)"):
        tl.run("policy-smoothing", spec, iterations=2, alpha=2)
