"""Random Dirichlet MDP families (``random``, ``random-sparse``) and O(nnz) sparse validation.

Correctness only: valid models, exactly b distinct sorted successors, the successor subsets and
Dirichlet weights have the stated distributions (fixed seeds, so the statistical checks are
deterministic), reproducibility by seed, and TabularMDP's sparse validation keeps naming the
offending entry while using O(nnz) memory. Construction speed is measured by
``theorylab.bench.planning``, not here.
"""

from __future__ import annotations

import itertools
import re
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from theorylab.errors import InvalidMDPError
from theorylab.mdps import TabularMDP, list_families, make
from theorylab.mdps.families.random_mdps import dirichlet_rows, random_sparse_transitions


def test_families_are_registered():
    assert {"random", "random-sparse"} <= set(list_families())


# ------------------------------------------------------------------------------------- dense


def test_dense_random_mdp_is_valid_and_reproducible():
    mdp = make("random:S=7,A=3,H=5,alpha=0.5,seed=11")
    assert (mdp.S, mdp.A, mdp.H, mdp.gamma, mdp.sparse) == (7, 3, 5, None, False)
    np.testing.assert_allclose(mdp.P.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    assert mdp.R.min() >= 0 and mdp.R.max() <= 1
    again = make("random:S=7,A=3,H=5,alpha=0.5,seed=11")
    np.testing.assert_array_equal(mdp.P, again.P)
    np.testing.assert_array_equal(mdp.R, again.R)
    other = make("random:S=7,A=3,H=5,alpha=0.5,seed=12")
    assert not np.array_equal(mdp.P, other.P)
    assert make("random:S=3,gamma=0.9").gamma == 0.9


def test_dense_random_mdp_refuses_huge_models():
    with pytest.raises(InvalidMDPError, match="use 'random-sparse'"):
        make("random:S=100000,A=4")


@pytest.mark.parametrize(
    "spec, match",
    [
        ("random:S=0", "S >= 1"),
        ("random:alpha=0", "alpha > 0"),
        ("random:gamma=1.0", "gamma in"),
        ("random-sparse:S=5,b=6", "1 <= b <= S"),
        ("random-sparse:b=0", "1 <= b <= S"),
        ("random-sparse:H=0", "H >= 1"),
    ],
)
def test_bad_parameters_are_refused(spec, match):
    with pytest.raises(InvalidMDPError, match=re.escape(match)):
        make(spec)


# ------------------------------------------------------------------------------------- sparse


@pytest.mark.parametrize(
    "S, b, alpha",
    [(1000, 10, 1.0), (50, 3, 0.1), (12, 5, 2.0), (6, 6, 1.0), (1, 1, 1.0), (30, 29, 0.5)],
)
def test_sparse_rows_have_exactly_b_distinct_sorted_successors(S, b, alpha):
    mdp = make(f"random-sparse:S={S},A=3,b={b},alpha={alpha},gamma=0.9,seed=5")
    P = mdp.P
    assert P.shape == (S * 3, S) and P.nnz == S * 3 * b
    assert P.indices.dtype == np.int32 and P.indptr.dtype == np.int32
    np.testing.assert_array_equal(np.diff(P.indptr), b)
    idx = P.indices.reshape(S * 3, b)
    assert np.all(np.diff(idx, axis=1) > 0)  # sorted and distinct: canonical CSR
    assert P.has_canonical_format
    assert np.all(P.data > 0) and np.all(np.isfinite(P.data))
    np.testing.assert_allclose(P.data.reshape(-1, b).sum(1), 1.0, rtol=0, atol=1e-12)


def test_sparse_is_reproducible_by_seed():
    a = make("random-sparse:S=500,A=2,b=7,seed=1")
    b = make("random-sparse:S=500,A=2,b=7,seed=1")
    c = make("random-sparse:S=500,A=2,b=7,seed=2")
    for x, y in [(a.P.indices, b.P.indices), (a.P.data, b.P.data), (a.R, b.R)]:
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a.P.indices, c.P.indices)


@pytest.mark.parametrize("S, b", [(8, 2), (4, 3), (5, 4)])  # rejection, then argpartition keys
def test_successor_sets_are_uniform_over_b_subsets(S, b):
    n_rows = 20000
    P = random_sparse_transitions(S, n_rows, b, 1.0, np.random.default_rng(123))
    subsets = list(itertools.combinations(range(S), b))
    code = {s: i for i, s in enumerate(subsets)}
    rows = P.indices.reshape(-1, b)
    counts = np.bincount([code[tuple(r)] for r in rows.tolist()], minlength=len(subsets))
    assert stats.chisquare(counts).pvalue > 1e-3


@pytest.mark.parametrize("alpha", [0.05, 0.3, 1.0, 3.0])
def test_dirichlet_rows_have_the_dirichlet_mean_and_variance(alpha):
    k, n = 4, 200_000
    W = dirichlet_rows(np.random.default_rng(7), np.empty((n, k)), alpha)
    assert np.all(np.isfinite(W)) and W.min() >= 0
    np.testing.assert_allclose(W.sum(1), 1.0, rtol=0, atol=1e-12)
    var = (k - 1) / (k**2 * (k * alpha + 1))  # Var of one coordinate of Dirichlet(alpha 1_k)
    np.testing.assert_allclose(W.mean(0), 1 / k, atol=5 * np.sqrt(var / n))
    np.testing.assert_allclose(W.var(0), var, rtol=0.03)


def test_tiny_alpha_does_not_underflow_to_empty_rows():
    # Gamma(1e-3) draws are often 0 in float64; the log-space draw keeps every row a distribution
    mdp = make("random-sparse:S=200,A=2,b=50,alpha=0.001,seed=0")
    sums = mdp.P.data.reshape(-1, 50).sum(1)
    np.testing.assert_allclose(sums, 1.0, rtol=0, atol=1e-12)


def test_sparse_memory_is_linear_in_nnz():
    # construction + validation peak (tracemalloc) stays within a small multiple of the model:
    # data 8 B + indices 4 B per entry, indptr 4 B per row, R, and the rollout CDF (8 B per entry)
    S, A, b = 100_000, 4, 10
    nnz = S * A * b
    tracemalloc.start()
    try:
        mdp = make(f"random-sparse:S={S},A={A},b={b},gamma=0.99")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    final = nnz * (8 + 4 + 8) + (S * A + 1) * 4 + S * A * 8
    assert mdp.nnz == nnz
    assert peak < 1.25 * final, (peak, final)


# ----------------------------------------------------------------- sparse validation (tabular)


def _csr(data, indices, indptr, shape):
    return sp.csr_array(
        (np.asarray(data, float), np.asarray(indices), np.asarray(indptr)), shape=shape
    )


def test_validation_names_entries_after_empty_rows():
    # rows (s=0,a=0) and (s=0,a=1) empty in storage order before the bad entry: the row search
    # must skip them. S = 2, A = 2.
    P = _csr([1.0, 1.0, -0.5, 1.5], [0, 0, 0, 1], [0, 1, 2, 2, 4], (4, 2))
    with pytest.raises(
        InvalidMDPError, match=re.escape("negative probability at (s=1, a=1), s'=0: -0.5")
    ):
        TabularMDP(P, np.zeros((2, 2)), horizon=1)
    P = _csr([1.0, 1.0, np.inf, 1.0], [0, 0, 0, 1], [0, 1, 2, 2, 4], (4, 2))
    with pytest.raises(InvalidMDPError, match=re.escape("not finite at row (s=1, a=1), s'=0: inf")):
        TabularMDP(P, np.zeros((2, 2)), horizon=1)
    P = _csr([1.0, 1.0, 1.0], [0, 0, 0], [0, 1, 2, 2, 3], (4, 2))
    with pytest.raises(InvalidMDPError, match=re.escape("P row (s=1, a=0) sums to 0")):
        TabularMDP(P, np.zeros((2, 2)), horizon=1)


def test_validation_refuses_out_of_range_indices_and_bad_indptr():
    # scipy checks neither after construction; a kernel reading V[s'] must be able to trust both
    P = _csr([1.0, 1.0], [0, 1], [0, 1, 2], (2, 2))  # S = 2, A = 1
    P.indices[1] = 5
    with pytest.raises(
        InvalidMDPError, match=re.escape("next-state index s'=5 at row (s=1, a=0), expected 0 <=")
    ):
        TabularMDP(P, np.zeros((2, 1)), horizon=1)
    P = _csr([1.0, 1.0, 1.0], [0, 1, 2], [0, 1, 2, 3], (3, 3))  # S = 3, A = 1
    P.indptr[1] = 3
    with pytest.raises(InvalidMDPError, match=re.escape("decreasing indptr at row (s=1, a=0)")):
        TabularMDP(P, np.zeros((3, 1)), horizon=1)


def test_non_canonical_input_is_canonicalised_without_touching_the_callers_matrix():
    data, indices, indptr = np.array([0.25, 0.5, 0.25, 1.0]), np.array([1, 0, 1, 0]), [0, 3, 4]
    P = sp.csr_array((data, indices, np.array(indptr)), shape=(2, 2))
    mdp = TabularMDP(P, np.zeros((2, 1)), horizon=1)
    np.testing.assert_array_equal(mdp.dense_P()[:, 0], [[0.5, 0.5], [1.0, 0.0]])
    assert mdp.P.has_canonical_format
    np.testing.assert_array_equal(P.data, [0.25, 0.5, 0.25, 1.0])  # caller's arrays unchanged
    np.testing.assert_array_equal(P.indices, [1, 0, 1, 0])


def test_canonical_float64_csr_is_used_without_a_copy():
    mdp = make("random-sparse:S=100,A=2,b=5")
    again = TabularMDP(mdp.P, mdp.R, horizon=3)
    assert np.shares_memory(again.P.data, mdp.P.data)
    assert np.shares_memory(again.P.indices, mdp.P.indices)
