"""GP bandits on a finite grid (``kind="gp-bandit"``): the exact GP of ``theorylab/kernels/gp.py``
against independent formulas, CONFIG (seed row 000#39; ``algorithms/gp_bandit/config.py``)
against a second implementation written differently, its scoring against enumeration, its
constants as printed, input errors, and its claim with the controls failing it."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import theorylab as tl
from theorylab.kernels import gp
from theorylab.mdps import make


# --------------------------------------------------------------------------- exact GP
def test_kernels_match_their_closed_forms():
    X = np.array([[0.0], [0.3], [1.0]])
    r = np.abs(X - X.T)  # (3, 3) distances
    l, v = 0.4, 2.0
    np.testing.assert_allclose(
        gp.squared_exponential(X, X, length=l, variance=v), v * np.exp(-(r**2) / (2 * l**2))
    )
    np.testing.assert_allclose(gp.matern(X, X, nu=0.5, length=l, variance=v), v * np.exp(-r / l))
    s3 = math.sqrt(3) * r / l
    np.testing.assert_allclose(
        gp.matern(X, X, nu=1.5, length=l, variance=v), v * (1 + s3) * np.exp(-s3)
    )
    s5 = math.sqrt(5) * r / l
    np.testing.assert_allclose(
        gp.matern(X, X, nu=2.5, length=l, variance=v), v * (1 + s5 + s5**2 / 3) * np.exp(-s5)
    )
    with pytest.raises(ValueError, match="nu must be one of"):
        gp.matern(X, X, nu=1.0, length=l)
    with pytest.raises(ValueError, match="kernel must be one of"):
        gp.kernel_matrix("rbf", X, length=l)


@pytest.mark.parametrize("kernel", gp.KERNELS)
def test_posterior_cholesky_sequential_and_direct_inverse_agree(kernel):
    """Three ways to the same posterior: pooled Cholesky (numba), one-at-a-time rank-one
    updates, and the textbook formula with every observation kept (an explicit inverse)."""
    rng = np.random.default_rng(3)
    m, noise = 12, 0.3
    X = rng.uniform(size=(m, 2))
    K = gp.kernel_matrix(kernel, X, length=0.5)
    prior = rng.normal(size=m)
    idx = rng.integers(0, m, size=20)  # repeats included
    y = rng.normal(size=20)
    n, ysum = np.zeros(m), np.zeros(m)
    np.add.at(n, idx, 1.0)
    np.add.at(ysum, idx, y)
    mu, sd = gp.gp_posterior(prior, K, n, ysum, noise)
    mean, cov = prior[None].copy(), K[None].copy()
    for i, yi in zip(idx, y, strict=True):
        gp.condition(mean, cov, np.array([i]), np.array([yi]), noise)
    Kxo = K[:, idx]  # (m, 20)
    Ainv = np.linalg.inv(K[np.ix_(idx, idx)] + noise**2 * np.eye(20))
    mu_ref = prior + Kxo @ Ainv @ (y - prior[idx])
    var_ref = np.diag(K - Kxo @ Ainv @ Kxo.T)
    np.testing.assert_allclose(mu, mu_ref, atol=1e-9)
    np.testing.assert_allclose(sd, np.sqrt(np.maximum(var_ref, 0)), atol=1e-7)
    np.testing.assert_allclose(mean[0], mu_ref, atol=1e-9)
    np.testing.assert_allclose(gp.posterior_sd(cov)[0], sd, atol=1e-7)
    mu0, sd0 = gp.gp_posterior(prior, K, np.zeros(m), np.zeros(m), noise)
    np.testing.assert_array_equal(mu0, prior)
    np.testing.assert_allclose(sd0, np.sqrt(np.diag(K)))


def test_greedy_information_gain_brackets_the_brute_force_maximum():
    X = np.linspace(0, 1, 5)[:, None]
    K = gp.kernel_matrix("se", X, length=0.3)
    noise = 0.5
    G = gp.greedy_information_gain(K, noise, 3)
    for T in (1, 2, 3):
        best = max(
            0.5 * np.linalg.slogdet(np.eye(T) + K[np.ix_(A, A)] / noise**2)[1]
            for A in itertools.combinations_with_replacement(range(5), T)
        )
        assert G[T - 1] <= best + 1e-12 <= G[T - 1] / (1 - 1 / math.e) + 1e-12
    # the chain rule: G_T is 1/2 log det(I + K_A / noise^2) of the greedy points
    assert G[0] == pytest.approx(0.5 * math.log1p(1.0 / noise**2))


def test_neorl_uses_the_shared_posterior():
    from theorylab.algorithms.average_reward import neorl

    assert neorl.gp_posterior is gp.gp_posterior


# --------------------------------------------------------------------------- the problem
def test_gp_constrained_truth_by_enumeration():
    prob = make("gp-constrained:m=30,kernel=matern32,seed=4")
    feas = [i for i in range(prob.m) if prob.g[i] <= 0]
    assert prob.feasible == bool(feas)
    assert prob.optimum == min(prob.f[i] for i in feas)
    choices = np.array([[0, 5, -1], [feas[0], 29, 7]])
    sc = prob.score(choices)
    for b, t in itertools.product(range(2), range(3)):
        c = choices[b, t]
        r = 0.0 if c < 0 else max(prob.f[c] - prob.optimum, 0.0)
        v = 0.0 if c < 0 else max(prob.g[c], 0.0)
        assert sc["regret"][b, t] == pytest.approx(r)
        assert sc["violation"][b, t] == pytest.approx(v)
    bad = make("gp-constrained:m=30,offset=6.0,seed=4")
    assert not bad.feasible and np.isnan(bad.optimum)
    assert np.isnan(bad.score(choices)["regret"]).all()
    two = make("gp-constrained:m=5,d=2")
    assert two.X.shape == (25, 2)


@pytest.mark.parametrize(
    "spec, match",
    [
        ("gp-constrained:m=1", "m .grid points per axis. must be an integer >= 2"),
        ("gp-constrained:d=3", "d .grid dimension. must be 1 or 2"),
        ("gp-constrained:m=40,d=2", "grid points > 1000"),
        ("gp-constrained:kernel=rbf", "kernel must be one of"),
        ("gp-constrained:noise=0.0", "noise must be a finite number > 0"),
    ],
)
def test_gp_constrained_refuses_bad_parameters(spec, match):
    with pytest.raises(ValueError, match=match):
        make(spec)


# --------------------------------------------------------------------------- CONFIG
def test_beta_is_the_printed_formula():
    from theorylab.algorithms.gp_bandit.config import bayes_beta

    m, delta = 100, 0.1
    for t in (1, 2, 10, 1000):
        # beta_t = 2 log((N + 1) |D| t^2 pi^2 / (6 delta)), N = 1 constraint
        assert bayes_beta(np.array([t]), m, 1, delta)[0] == pytest.approx(
            2 * math.log(2 * m * t**2 * math.pi**2 / (6 * delta))
        )


def test_bound_card_is_the_printed_formula():
    from theorylab.bounds import get_bound

    card = get_bound("xu2023-config-regret")
    A, T, delta, gam, s = 200, 1000, 0.1, 150.0, 0.1
    beta = 2 * math.log(2 * A * T**2 * math.pi**2 / (6 * delta))
    expected = math.sqrt(8 / math.log(1 + s**-2) * T * beta * gam)
    assert card.evaluate(A=A, T=T, delta=delta, gamma_T=gam, sigma_n=s) == pytest.approx(expected)
    assert float(card.exponent("T")) == 0.5


def reference_config(prob, T, rngs, delta=0.1):
    """CONFIG written differently: per seed, pooled counts and the Cholesky posterior recomputed
    from scratch every round, and a Python scan over the grid for the constrained argmin."""
    B, m = len(rngs), prob.m
    out = np.full((B, T), -1)
    declared = np.zeros(B, dtype=int)
    for b in range(B):
        n, sf, sg = np.zeros(m), np.zeros(m), np.zeros(m)
        for t in range(1, T + 1):
            root = math.sqrt(2 * math.log(2 * m * t**2 * math.pi**2 / (6 * delta)))
            mf, df = gp.gp_posterior(prob.f_prior, prob.K, n, sf, prob.noise)
            mg, dg = gp.gp_posterior(prob.g_prior, prob.K, n, sg, prob.noise)
            best, arg = math.inf, -1
            for i in range(m):
                if mg[i] - root * dg[i] <= 0 and mf[i] - root * df[i] < best:
                    best, arg = mf[i] - root * df[i], i
            if arg < 0:
                declared[b] = t
                break
            out[b, t - 1] = arg
            yf, yg = prob.observe(np.array([arg]), [rngs[b]])
            n[arg] += 1
            sf[arg] += yf[0]
            sg[arg] += yg[0]
    return out, declared


@pytest.mark.parametrize("offset", [0.0, 3.5])
def test_config_matches_a_reference_implementation(offset):
    from theorylab.algorithms.gp_bandit.config import config

    prob = make(f"gp-constrained:m=25,kernel=matern12,length=0.1,offset={offset},seed=1")
    T = 40
    run = config(prob, T, [np.random.default_rng(s) for s in range(3)])
    ref, declared = reference_config(prob, T, [np.random.default_rng(s) for s in range(3)])
    np.testing.assert_array_equal(run.choices, ref)
    np.testing.assert_array_equal(run.declared, declared)
    assert (declared > 0).all() == (not prob.feasible)


def test_tl_run_scores_config_and_round_trips(tmp_path):
    res = tl.run("config", "gp-constrained:m=30,seed=2", iterations=50, seeds=3)
    prob = make("gp-constrained:m=30,seed=2")
    expected = prob.score(res.choices)
    np.testing.assert_allclose(res.regret, expected["regret"])
    np.testing.assert_allclose(res.violation, expected["violation"])
    assert res.optimum == prob.optimum and res.feasible
    assert res.summary()["T"] == 50 and res.to_frame() is not None
    res.plot(tmp_path / "r.png")
    assert (tmp_path / "r.png").stat().st_size > 0
    res.save(tmp_path / "r")
    back = tl.Result.load(tmp_path / "r")
    np.testing.assert_array_equal(back.choices, res.choices)
    np.testing.assert_array_equal(back.cumulative_regret(), res.cumulative_regret())
    alone = tl.run("config", "gp-constrained:m=30,seed=2", iterations=50, seeds=[1])
    np.testing.assert_array_equal(alone.choices[0], res.choices[1])  # seed 1 alone or batched


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"delta": 0.0}, "delta must lie in"),
        ({"scale": -1.0}, "scale must be a finite number >= 0"),
    ],
)
def test_config_refuses_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        tl.run("config", "gp-constrained:m=10", iterations=5, **kwargs)


def test_config_refuses_other_problems_and_budgets():
    with pytest.raises(ValueError, match="needs a grid problem"):
        tl.run("config", "riverswim:S=3", iterations=5)
    with pytest.raises(ValueError, match="iterations"):
        tl.run("config", "gp-constrained:m=10", episodes=5)


@pytest.mark.slow  # test_validations runs the claim and its controls at quick scale
def test_config_claim_passes_and_both_controls_fail():
    from theorylab.validations import validate

    rep = validate("config-gp-grid", "quick")
    assert rep.verdict == "PASS", rep.format()
    assert {c["control"]: c["verdict"] for c in rep.controls} == {
        "config-greedy-beta0": "FAIL",
        "config-ignore-constraint": "FAIL",
    }


# --------------------------------------------------------------------------- MBTL
def brute_best_coverage(prob, k):
    Jc = np.maximum(prob.J, 0.0)
    return max(Jc[list(S)].max(axis=0).mean() for S in itertools.combinations(range(prob.m), k))


@pytest.mark.parametrize("spec", ["transfer-grid:m=9,seed=0", "transfer-grid:m=10,slope=0.5,seed=3",
                                  "transfer-grid:m=8,slope=6.0,length=0.05,seed=1"])  # fmt: skip
def test_best_coverage_dynamic_programme_equals_brute_force(spec):
    prob = make(spec)
    dp = prob.best_coverage(prob.m)
    for k in range(1, prob.m + 1):
        assert dp[k - 1] == pytest.approx(brute_best_coverage(prob, k), abs=1e-12)
    assert np.all(np.diff(dp) >= -1e-15)


def test_transfer_grid_matrix_and_scoring():
    prob = make("transfer-grid:m=12,slope=1.5,seed=2")
    c = prob.contexts
    for i, j in [(0, 0), (3, 7), (11, 2)]:
        assert prob.J[i, j] == pytest.approx(prob.f[i] - 1.5 * abs(c[i] - c[j]))
    choices = np.array([[5, 1, 9], [5, 5, 0]])
    sc = prob.score(choices)
    best = [brute_best_coverage(prob, k) for k in (1, 2, 3)]
    for b in range(2):
        for k in range(1, 4):
            S = choices[b, :k]
            v = np.maximum(prob.J[S].max(axis=0), 0).mean()
            assert sc["regret"][b, k - 1] == pytest.approx(best[k - 1] - v)
    assert (sc["violation"] == 0).all()


def test_mbtl_first_round_and_acquisition_by_hand():
    from theorylab.algorithms.gp_bandit import mbtl

    prob = make("transfer-grid:m=7,seed=0")
    run = mbtl.mbtl(prob, 3, [np.random.default_rng(0)])
    assert run.choices[0, 0] == 3 and len(set(run.choices[0])) == 3
    # the acquisition written out: mean_j max(ucb(x) - s |x - c_j| - V_obs(j), 0)
    rng = np.random.default_rng(1)
    ucb, cov = rng.normal(size=(1, 7)), rng.normal(size=(1, 7))
    acq = mbtl.transfer_gain(ucb, np.array([2.0]), prob.distance, cov)
    for x in range(7):
        expected = np.mean(
            [max(ucb[0, x] - 2.0 * abs(prob.contexts[x] - prob.contexts[j]) - cov[0, j], 0.0)
             for j in range(7)]
        )  # fmt: skip
        assert acq[0, x] == pytest.approx(expected)
    for k in (1, 2, 5):  # beta_k = 2 log(m k^2 pi^2 / (6 delta))
        assert mbtl.ucb_beta(np.array([k]), 7, 0.1)[0] == pytest.approx(
            2 * math.log(7 * k**2 * math.pi**2 / 0.6)
        )


def test_mbtl_slope_estimate_recovers_the_slope_without_noise():
    from theorylab.algorithms.gp_bandit.mbtl import estimate_slope

    prob = make("transfer-grid:m=15,slope=2.5,seed=4")
    trained = np.zeros((1, 15), dtype=bool)
    trained[0, [2, 9]] = True
    assert estimate_slope(prob.J[None], trained, prob.distance)[0] == pytest.approx(2.5)


def test_mbtl_runs_through_tl_run_and_refuses_bad_input():
    res = tl.run("mbtl", "transfer-grid:m=15", iterations=6, seeds=2, slope="estimate")
    assert res.regret.shape == (2, 6) and (res.regret >= -1e-12).all()
    rnd = tl.run("mbtl", "transfer-grid:m=15", iterations=6, seeds=2, selection="random")
    assert all(len(set(row)) == 6 for row in rnd.choices.tolist())
    for kwargs, match in [
        ({"slope": "guess"}, "slope must be 'known', 'estimate' or a number"),
        ({"selection": "greedy"}, "selection must be 'ucb' or 'random'"),
        ({"delta": 1.5}, "delta must lie in"),
    ]:
        with pytest.raises(ValueError, match=match):
            tl.run("mbtl", "transfer-grid:m=15", iterations=3, **kwargs)
    with pytest.raises(ValueError, match="exceed the 15 contexts"):
        tl.run("mbtl", "transfer-grid:m=15", iterations=16)
    with pytest.raises(ValueError, match="transfer problem"):
        tl.run("mbtl", "gp-constrained:m=10", iterations=3)
    with pytest.raises(ValueError, match="m .contexts. must be an integer"):
        make("transfer-grid:m=1")


@pytest.mark.slow  # test_validations runs the claim and its controls at quick scale
def test_mbtl_claim_passes_and_both_controls_fail():
    from theorylab.validations import validate

    rep = validate("mbtl-transfer-grid", "quick")
    assert rep.verdict == "PASS", rep.format()
    assert {c["control"]: c["verdict"] for c in rep.controls} == {
        "mbtl-random-tasks": "FAIL",
        "mbtl-repeat-best": "FAIL",
    }
