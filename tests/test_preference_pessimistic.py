"""Pessimistic MLE and greedy-on-MLE (theorylab.algorithms.preference.pessimistic)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from theorylab.algorithms.preference.pessimistic import (
    curvature,
    fit_pessimistic_mle,
    greedy_policy,
    mle_radius,
    pessimistic_policy,
    pessimistic_value,
    zjj_thm39_exact,
)
from theorylab.mdps.preference import ComparisonBandit, label_pairs, sample_pairwise, zjj_thm39


def test_radius_and_curvature_match_the_reference_numbers():
    """theory-preference reference 1.4 (computed independently there): gamma = 0.0527 at
    L = sqrt 2, B = 2; f = 13.8, 4.37, 1.38, 0.44 at n = 10..10^4 (C = 1, delta = 0.1,
    lambda = 1e-3)."""
    assert curvature(np.sqrt(2), 2.0) == pytest.approx(0.0527, abs=5e-5)
    for n, f in ((10, 13.8), (100, 4.37), (1000, 1.38), (10_000, 0.44)):
        assert mle_radius(n, 3, 0.1, 1e-3, 2.0, np.sqrt(2)) == pytest.approx(f, rel=6e-3)


def test_exact_enumeration_matches_the_reference_table():
    """Greedy's exact failure probability and mean sub-optimality on the Theorem 3.9 data
    (reference 1.4 table, computed there by SLSQP enumeration); pessimism picks the safe a3."""
    e = zjj_thm39_exact(10)
    assert e.mass == pytest.approx(1.0, abs=1e-12)
    assert e.greedy_failure == pytest.approx(0.589, abs=5e-4)
    assert e.greedy_mean == pytest.approx(0.313, abs=5e-4)
    assert e.pessimistic_mean == pytest.approx(0.1, abs=1e-8)
    e = zjj_thm39_exact(100, pessimism=False)
    assert e.greedy_failure == pytest.approx(0.495, abs=5e-4)
    assert e.greedy_mean == pytest.approx(0.300, abs=5e-4)


def test_inner_minimum_closed_form_against_the_ellipsoid():
    """min over ||theta - theta_hat||_M <= f of <theta, u> equals <theta_hat, u> - f ||u||_{M^-1},
    attained at theta_hat - f M^-1 u / ||u||_{M^-1}; no boundary point does better."""
    rng = np.random.default_rng(0)
    bandit = ComparisonBandit(rng.normal(size=(2, 3, 3)), [0.4, 0.6], [0.5, -0.2, -0.3], 2.0)
    A = rng.normal(size=(3, 3))
    M = A @ A.T + 0.1 * np.eye(3)
    th, f = rng.normal(size=3), 0.7
    pi = rng.dirichlet(np.ones(3), size=2)
    u = bandit.feature_expectation(pi)
    val = pessimistic_value(bandit, pi, th, M, f)
    norm = np.sqrt(u @ np.linalg.solve(M, u))
    arg = th - f * np.linalg.solve(M, u) / norm
    assert arg @ u == pytest.approx(val, abs=1e-12)
    Lc = np.linalg.cholesky(np.linalg.inv(M))  # theta = th + f Lc w, ||w|| = 1: the boundary
    w = rng.normal(size=(5000, 3))
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    assert ((th + f * w @ Lc.T) @ u >= val - 1e-12).all()


def test_pessimistic_policy_is_the_maximiser():
    """The SOCP's policy beats every deterministic policy (enumerated) and 300 random stochastic
    ones in J_hat."""
    rng = np.random.default_rng(4)
    theta = rng.normal(size=4)
    theta -= theta.mean()
    bandit = ComparisonBandit(rng.normal(size=(2, 3, 4)), [0.3, 0.7], theta, 5.0)
    th_hat = theta + 0.3 * rng.normal(size=4)
    A = rng.normal(size=(4, 4))
    M = A @ A.T / 4 + 0.05 * np.eye(4)
    v = rng.normal(size=4)
    pol, best = pessimistic_policy(bandit, th_hat, M, 0.8, v)
    assert pessimistic_value(bandit, pol, th_hat, M, 0.8, v) == pytest.approx(best, abs=1e-12)
    for det in itertools.product(range(3), repeat=2):
        assert pessimistic_value(bandit, np.array(det), th_hat, M, 0.8, v) <= best + 1e-7
    for _ in range(300):
        pi = rng.dirichlet(np.ones(3), size=2)
        assert pessimistic_value(bandit, pi, th_hat, M, 0.8, v) <= best + 1e-7


def test_greedy_fails_on_the_bad_label_and_pessimism_is_safe():
    """With the single (a2, a3) comparison won by a2, the MLE puts theta_1 = r(a2) - r(a3) > 0 and
    greedy picks a1 or a2 (by the sign of theta_2; sub-optimality 1.0 or 1.1); pessimism at
    C = 1 plays the safe a3 (0.1)."""
    bandit = zjj_thm39()
    data = label_pairs(bandit, np.zeros(20, int), [0] * 19 + [1], [1] * 19 + [2], seeds=64)
    res = fit_pessimistic_mle(bandit, data)
    bad = data.y[:, -1] == 0
    assert bad.any() and (~bad).any()
    assert (res.theta_hat[bad, 0] > 0).all() and np.isin(res.greedy[bad, 0], [0, 1]).all()
    assert (res.greedy_suboptimality[bad] >= 1.0 - 1e-12).all()
    np.testing.assert_allclose(res.suboptimality, 0.1, atol=1e-7)
    assert (res.suboptimality <= res.bound).all()
    assert res.queries.tolist() == [20] * 64


def test_pessimism_and_greedy_agree_with_plenty_of_uniform_data():
    """Full coverage and many comparisons: both policies are optimal (the contrast to 3.9)."""
    bandit = ComparisonBandit(np.eye(3)[None] - 1 / 3, [1.0], [0.6, -0.1, -0.5], 2.0)
    data = sample_pairwise(bandit, 20_000, seeds=3, seed=0)
    res = fit_pessimistic_mle(bandit, data)
    np.testing.assert_allclose(res.greedy_suboptimality, 0.0)
    np.testing.assert_allclose(res.suboptimality, 0.0, atol=1e-6)
    assert (greedy_policy(bandit, bandit.theta) == bandit.optimal_policy()).all()
