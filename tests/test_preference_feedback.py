"""Feedback models (theorylab.mdps.preference): oracles, seeding, datasets, coverage, bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from theorylab.mdps import make
from theorylab.mdps.preference import (
    ComparisonBandit,
    LinearBTLOracle,
    PlackettLuceOracle,
    PreferenceError,
    PreferenceMatrixOracle,
    btl_matrix,
    coverage_term,
    cyclic_preference_matrix,
    plackett_luce_probability,
    sample_pairwise,
    sample_rankings,
    sigmoid,
    trajectory_features,
    validate_preference_matrix,
    zjj_thm39_dataset,
)
from theorylab.seeding import generators


def rngs(n, seed=0):
    return generators(seed, range(n), 0)


# ------------------------------------------------------------------------------ oracles
@settings(max_examples=15)
@given(
    r1=st.floats(-3, 3),
    r0=st.floats(-3, 3),
    seed=st.integers(0, 2**31),
)
def test_btl_win_rate_matches_sigmoid_within_ci(r1, r0, seed):
    """Empirical win rate of 4000 comparisons lies in the exact 99.99% binomial interval of
    sigma(r1 - r0)."""
    oracle = LinearBTLOracle([1.0], rngs(1, seed))
    n = 4000
    wins = oracle.compare(np.full((1, 1, 1), r1), np.full((1, 1, 1), r0), repeats=n)[0, 0]
    p = sigmoid(r1 - r0)
    lo, hi = binom.interval(0.9999, n, p)
    assert lo <= wins <= hi
    assert oracle.queries.tolist() == [n]


def test_matrix_oracle_win_rates_and_counts():
    P = cyclic_preference_matrix()
    oracle = PreferenceMatrixOracle(P, rngs(3, 5))
    i = np.tile(np.arange(4).repeat(4), (3, 1))
    j = np.tile(np.tile(np.arange(4), 4), (3, 1))
    wins = oracle.compare(i, j, repeats=3000)
    for b in range(3):
        lo, hi = binom.interval(0.9999, 3000, P[i[b], j[b]])
        assert np.all((lo <= wins[b]) & (wins[b] <= hi))
    assert oracle.queries.tolist() == [16 * 3000] * 3


def test_same_seed_same_answers_and_batch_independent():
    x1 = np.random.default_rng(0).normal(size=(4, 50, 3))
    x0 = np.random.default_rng(1).normal(size=(4, 50, 3))
    theta = [0.5, -0.2, 0.1]
    a = LinearBTLOracle(theta, generators(7, range(4), 0)).compare(x1, x0)
    b = LinearBTLOracle(theta, generators(7, range(4), 0)).compare(x1, x0)
    alone = LinearBTLOracle(theta, generators(7, [2], 0)).compare(x1[2:3], x0[2:3])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a[2:3], alone)
    c = LinearBTLOracle(theta, generators(8, range(4), 0)).compare(x1, x0)
    assert not np.array_equal(a, c)


def test_plackett_luce_probabilities_sum_to_one_and_k2_is_btl():
    r = np.array([0.3, -1.0, 0.7, 0.1])
    total = sum(plackett_luce_probability(r, p) for p in itertools.permutations(range(4)))
    assert total == pytest.approx(1.0, abs=1e-14)
    assert plackett_luce_probability([0.4, -0.3], [0, 1]) == pytest.approx(sigmoid(0.7), 1e-15)


def test_plackett_luce_sampler_matches_exact_probabilities():
    theta = np.array([0.8, -0.5, 0.2])
    x = np.eye(3)[None, None].repeat(20000, axis=1)  # (1, n, K=3, d=3): items are e_k
    oracle = PlackettLuceOracle(theta, rngs(1, 3))
    order = oracle.rank(x)[0]
    assert oracle.queries.tolist() == [20000]
    for perm in itertools.permutations(range(3)):
        count = int((order == np.array(perm)).all(axis=1).sum())
        lo, hi = binom.interval(0.9999, 20000, plackett_luce_probability(theta, perm))
        assert lo <= count <= hi, perm


def test_trajectory_features_sum_phi():
    phi = np.arange(2 * 3 * 2, dtype=float).reshape(2, 3, 2)
    s = np.array([[0, 1, 1]])
    a = np.array([[2, 0, 1]])
    want = [phi[0, 2] + phi[1, 0] + phi[1, 1]]
    np.testing.assert_array_equal(trajectory_features(s, a, phi), want)


# ------------------------------------------------------------------------------ datasets
def test_zjj_instance_and_dataset():
    bandit = make("zjj-thm39")
    np.testing.assert_allclose(bandit.rewards[0], [-0.9, -1.0, 0.0, 0.1])
    assert bandit.optimal_policy().tolist() == [3]
    assert bandit.suboptimality(np.array([2])) == pytest.approx(0.1)
    ds = zjj_thm39_dataset(10, seeds=3, seed=1)
    assert ds.a0.shape == (3, 10) and ds.queries.tolist() == [10] * 3
    x = ds.differences(bandit)
    np.testing.assert_array_equal(x[:, :9], np.broadcast_to([0.0, -1.0, 0.0], (3, 9, 3)))
    np.testing.assert_array_equal(x[:, 9], np.broadcast_to([-1.0, 0.0, 0.0], (3, 3)))


def test_pairwise_split_has_all_pairs():
    bandit = ComparisonBandit(np.eye(4)[None] - 0.25, [1.0], [0.3, -0.1, 0.2, -0.4], 2.0)
    ds = sample_rankings(bandit, 5, 4, seeds=2, seed=0)
    split = ds.pairwise_split()
    assert split.n == 5 * 6 and np.all(split.y == 1)
    # the first ranking's pairs: winner ranked j, loser ranked k > j
    first = ds.ranked[0, 0]
    got = {(int(w), int(lo)) for w, lo in zip(split.a1[0, :6], split.a0[0, :6], strict=True)}
    assert got == {(int(first[j]), int(first[k])) for j in range(4) for k in range(j + 1, 4)}


def test_coverage_term_matches_eigendecomposition():
    rng = np.random.default_rng(2)
    theta = rng.normal(size=4)
    theta -= theta.mean()
    bandit = ComparisonBandit(rng.normal(size=(3, 5, 4)), [0.2, 0.5, 0.3], theta, 10.0)
    ds = sample_pairwise(bandit, 40, seeds=2, seed=0)
    Sigma = ds.covariance(bandit)
    x = ds.differences(bandit)
    np.testing.assert_allclose(Sigma[1], x[1].T @ x[1] / 40, atol=1e-14)
    pi = bandit.optimal_policy()
    v = rng.normal(size=4)
    got = coverage_term(bandit, Sigma, pi, 0.1, v)
    u = bandit.feature_expectation(pi) - v
    for b in range(2):
        w, V = np.linalg.eigh(Sigma[b] + 0.1 * np.eye(4))
        want = np.linalg.norm(V @ np.diag(w**-0.5) @ V.T @ u)
        assert got[b] == pytest.approx(want, rel=1e-12)


# ------------------------------------------------------------------------------ bad input
def test_preference_matrix_errors_name_the_entry():
    P = cyclic_preference_matrix()
    P[1, 2] = 0.7  # P[1,2] + P[2,1] = 1.1
    with pytest.raises(PreferenceError, match=r"P\[1, 2\] \+ P\[2, 1\] = 1.1"):
        validate_preference_matrix(P)
    with pytest.raises(PreferenceError, match=r"P\[0, 1\] = 1.5 is not a probability"):
        validate_preference_matrix([[0.5, 1.5], [-0.5, 0.5]])
    with pytest.raises(PreferenceError, match="square"):
        validate_preference_matrix(np.full((2, 3), 0.5))
    assert validate_preference_matrix(btl_matrix([0.0, 1.0, -2.0])).shape == (3, 3)


def test_plackett_luce_needs_k_at_least_two():
    with pytest.raises(PreferenceError, match="K >= 2.*K = 1"):
        PlackettLuceOracle([1.0, 0.0], rngs(1)).rank(np.zeros((1, 3, 1, 2)))
    bandit = make("zjj-thm39")
    with pytest.raises(PreferenceError, match="K >= 2"):
        sample_rankings(bandit, 3, 1)
    with pytest.raises(PreferenceError, match="K = 5 exceeds"):
        sample_rankings(bandit, 3, 5)


def test_feature_shape_errors():
    with pytest.raises(PreferenceError, match="feature dimension d = 3"):
        LinearBTLOracle([1.0, 0.0, 0.0], rngs(1)).compare(np.zeros((1, 2, 2)), np.zeros((1, 2, 2)))
    with pytest.raises(PreferenceError, match="leading seed axis of length 2"):
        LinearBTLOracle([1.0], rngs(2)).compare(np.zeros((1, 2, 1)), np.zeros((1, 2, 1)))
    with pytest.raises(PreferenceError, match="theta must sum to 0"):
        ComparisonBandit(np.zeros((1, 2, 2)), [1.0], [1.0, 0.5], 2.0)
    with pytest.raises(PreferenceError, match="theta must have shape"):
        ComparisonBandit(np.zeros((1, 2, 2)), [1.0], [1.0, 0.0, -1.0], 2.0)
    with pytest.raises(PreferenceError, match=r"a0\[1\] = 4 is outside 0..3"):
        from theorylab.mdps.preference import label_pairs

        label_pairs(make("zjj-thm39"), [0, 0], [0, 4], [1, 1])
    with pytest.raises(PreferenceError, match=r"j\[0, 1\] = 7 is not an item index"):
        PreferenceMatrixOracle(np.full((2, 2), 0.5), rngs(1)).compare([[0, 1]], [[1, 7]])
