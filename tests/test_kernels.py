"""The compiled Bellman kernels equal their numpy/scipy references (correctness only, no timing).

theorylab.kernels.bellman: the fused numba CSR sweep is compared bit for bit with
``R + gamma * (P @ V)`` then max/argmax, on random CSR matrices with rows of different lengths
(empty rows included), int32 and int64 indices, one thread and all threads; the float32 variant
stays inside its documented error bound; the dense sweep, value iteration and backward induction
drivers agree with the reference planners. theorylab.kernels.csr.row_cumsum is exact per row.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.algorithms.planning import backward_induction, value_iteration
from theorylab.kernels import bellman as kb
from theorylab.kernels.csr import row_cumsum
from theorylab.mdps import TabularMDP, make

# --------------------------------------------------------------------------------- strategies


@st.composite
def csr_models(draw, max_S: int = 30, max_A: int = 5):
    """A random CSR ``(S*A, S)``, rewards ``(S, A)`` and a value vector ``(S,)``.

    Row lengths vary from 0 to S (empty rows included); weights are arbitrary non-negative
    floats (the kernel does not need stochastic rows); values span several magnitudes.
    """
    S = draw(st.integers(1, max_S))
    A = draw(st.integers(1, max_A))
    seed = draw(st.integers(0, 2**32 - 1))
    density = draw(st.sampled_from([0.0, 0.05, 0.3, 1.0]))
    rng = np.random.default_rng(seed)
    n = S * A
    lengths = rng.binomial(S, density, size=n)  # (S*A,) row lengths in 0..S
    lengths[rng.random(n) < 0.1] = 0  # some empty rows whatever the density
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = np.concatenate(
        [np.sort(rng.choice(S, size=k, replace=False)) for k in lengths] or [np.empty(0)]
    ).astype(np.int32)
    data = rng.random(indptr[-1]) * draw(st.sampled_from([1.0, 1e-3, 1e3]))
    P = sp.csr_array((data, indices, indptr.astype(np.int32)), shape=(n, S))
    R = rng.random((S, A))
    V = rng.standard_normal(S) * draw(st.sampled_from([1.0, 100.0]))
    gamma = draw(st.sampled_from([0.0, 0.5, 0.99, 1.0]))
    return P, R, V, gamma


def _assert_same_sweep(got: kb.SweepResult, want: kb.SweepResult) -> None:
    np.testing.assert_array_equal(got.V, want.V)
    np.testing.assert_array_equal(got.policy, want.policy)
    assert got.delta == want.delta


# --------------------------------------------------------------------------------- CSR sweep


@settings(max_examples=150)
@given(csr_models())
def test_fused_csr_sweep_equals_scipy_reference_bit_for_bit(model):
    P, R, V, gamma = model
    want = kb.csr_max_sweep_reference(P, R, V, gamma)
    _assert_same_sweep(kb.csr_max_sweep(P, R, V, gamma), want)
    _assert_same_sweep(kb.csr_max_sweep(P, R, V, gamma, kernel="simple"), want)
    # int64 indices / indptr compile a second specialisation; same numbers
    M64 = kb.csr_arrays(P, index_dtype=np.int64)
    assert M64.indices.dtype == np.int64
    _assert_same_sweep(kb.csr_max_sweep(M64, R, V, gamma), want)


@settings(max_examples=60)
@given(csr_models())
def test_fused_sweep_with_q_equals_reference(model):
    P, R, V, gamma = model
    Q, res = kb.csr_q_sweep(P, R, V, gamma)
    np.testing.assert_array_equal(Q, R + gamma * (P @ V).reshape(R.shape))
    _assert_same_sweep(res, kb.csr_max_sweep_reference(P, R, V, gamma))


@settings(max_examples=40)
@given(csr_models(max_S=60))
def test_fused_sweep_is_independent_of_the_thread_count(model):
    P, R, V, gamma = model
    n, cutoff = numba.get_num_threads(), kb.PARALLEL_MIN_NNZ
    try:
        kb.PARALLEL_MIN_NNZ = 0  # small models run serially by default: force the parallel path
        numba.set_num_threads(1)
        one = kb.csr_max_sweep(P, R, V, gamma)
        numba.set_num_threads(n)
        _assert_same_sweep(kb.csr_max_sweep(P, R, V, gamma), one)
    finally:
        numba.set_num_threads(n)
        kb.PARALLEL_MIN_NNZ = cutoff


@settings(max_examples=60)
@given(csr_models())
def test_float32_data_stays_within_the_documented_bound(model):
    P, R, V, gamma = model
    want = kb.csr_max_sweep_reference(P, R, V, gamma)
    got = kb.csr_max_sweep(kb.csr_arrays(P, dtype=np.float32), R, V, gamma)
    # |Q32 - Q64| <= gamma * 2**-24 * sum_j |P_j| |V_j| per row (float64 accumulation)
    row_bound = gamma * 2.0**-24 * (abs(P) @ np.abs(V)).reshape(R.shape).max(axis=1)
    assert np.all(np.abs(got.V - want.V) <= row_bound + 1e-12 * (1 + np.abs(want.V)))


def test_sweep_on_a_random_sparse_family_member():
    mdp = make("random-sparse:S=30000,A=4,b=10,gamma=0.99,seed=3")  # nnz above the cutoff
    assert mdp.nnz >= kb.PARALLEL_MIN_NNZ
    V = np.random.default_rng(0).random(mdp.S) * 100
    want = kb.csr_max_sweep_reference(mdp.P, mdp.R, V, 0.99)
    _assert_same_sweep(kb.csr_max_sweep(mdp.P, mdp.R, V, 0.99), want)
    # the planners' own path (mdp.expected_next) is the same reference
    Q = mdp.R + 0.99 * mdp.expected_next(V)
    np.testing.assert_array_equal(Q.max(axis=1), want.V)


def test_preallocated_outputs_are_filled_and_aliasing_is_refused():
    mdp = make("random-sparse:S=50,A=3,b=4")
    V = np.arange(50.0)
    V_out, pi_out = np.empty(50), np.empty(50, np.int64)
    res = kb.csr_max_sweep(mdp.P, mdp.R, V, 0.9, V_out=V_out, policy_out=pi_out)
    assert res.V is V_out and res.policy is pi_out
    with pytest.raises(ValueError, match="must not overlap V"):
        kb.csr_max_sweep(mdp.P, mdp.R, V, 0.9, V_out=V)
    with pytest.raises(ValueError, match=r"V must have shape \(50,\)"):
        kb.csr_max_sweep(mdp.P, mdp.R, np.zeros(49), 0.9)
    with pytest.raises(ValueError, match=r"P must have shape \(S\*A, S\)"):
        kb.csr_max_sweep(mdp.P, mdp.R[:, :2], V, 0.9)
    with pytest.raises(TypeError, match="CSR"):
        kb.csr_max_sweep(mdp.P.tocoo(), mdp.R, V, 0.9)
    with pytest.raises(ValueError, match="kernel must be"):
        kb.csr_max_sweep(mdp.P, mdp.R, V, 0.9, kernel="fast")


def test_csr_arrays_refuses_structures_the_kernels_cannot_trust():
    # the kernels index without bounds checks, so csr_arrays checks the structure once
    P = sp.csr_array(np.eye(3))
    bad = kb.CSRArrays(P.indptr, np.array([0, 1, 3], np.int32), P.data, (3, 3))
    with pytest.raises(ValueError, match=r"column indices must lie in \[0, 3\)"):
        kb.csr_arrays(bad)
    bad = kb.CSRArrays(np.array([0, 2, 1, 3], np.int32), P.indices, P.data, (3, 3))
    with pytest.raises(ValueError, match="non-decreasing"):
        kb.csr_arrays(bad)
    bad = kb.CSRArrays(np.array([0, 1, 2], np.int32), P.indices, P.data, (3, 3))
    with pytest.raises(ValueError, match="does not describe"):
        kb.csr_arrays(bad)
    assert kb.csr_arrays(P, index_dtype=np.int64).indptr.dtype == np.int64
    checked = kb.csr_arrays(P)
    assert checked.checked and kb.csr_arrays(checked) is checked  # no second O(nnz) check
    assert kb.csr_arrays(checked, dtype=np.float32).data.dtype == np.float32


# --------------------------------------------------------------------------------- dense sweep


@settings(max_examples=60)
@given(st.integers(1, 40), st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_dense_fused_sweep_matches_gemv_reference(S, A, seed):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(S, A))  # (S, A, S)
    R, V = rng.random((S, A)), rng.standard_normal(S) * 10
    want = kb.dense_max_sweep_reference(P, R, V, 0.9)
    got = kb.dense_max_sweep(P, R, V, 0.9)
    np.testing.assert_allclose(got.V, want.V, rtol=0, atol=1e-12)
    # BLAS ddot and gemv may round differently: the policy may differ only on near-ties
    Q = R + 0.9 * (P.reshape(S * A, S) @ V).reshape(S, A)
    np.testing.assert_allclose(Q[np.arange(S), got.policy], want.V, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------------- drivers


@pytest.mark.parametrize("stopping", ["sup", "span"])
@pytest.mark.parametrize("seed", [0, 1])
def test_value_iteration_csr_matches_the_planner(seed, stopping):
    mdp = make(f"random-sparse:S=300,A=3,b=5,gamma=0.95,seed={seed}")
    ref = value_iteration(mdp, tol=1e-8, stopping=stopping)
    got = kb.value_iteration_csr(mdp.P, mdp.R, 0.95, tol=1e-8, stopping=stopping)
    assert got.converged and got.iterations == ref.info["iterations"]
    # the planner returns T(V_k) = max_a Q(V_k): the same sweeps, the same arithmetic
    T = kb.csr_max_sweep_reference(mdp.P, mdp.R, got.V, 0.95)
    np.testing.assert_array_equal(T.V, ref.V)
    assert ref.info["error_bound"] == pytest.approx(0.95 * got.error_bound, rel=1e-12)
    stopped = kb.value_iteration_csr(mdp.P, mdp.R, 0.95, tol=1e-8, max_iter=3)
    assert stopped.iterations == 3 and not stopped.converged


@pytest.mark.parametrize("gamma", [0.0, 0.5, 0.99])
def test_span_stopping_is_certified_and_needs_fewer_sweeps(gamma):
    mdp = make(f"random-sparse:S=400,A=3,b=4,seed=2,gamma={max(gamma, 0.5)}")
    exact = kb.value_iteration_csr(mdp.P, mdp.R, gamma, tol=1e-13)  # V* to ~1e-13
    sup = kb.value_iteration_csr(mdp.P, mdp.R, gamma, tol=1e-6, stopping="sup")
    span = kb.value_iteration_csr(mdp.P, mdp.R, gamma, tol=1e-6, stopping="span")
    assert span.converged and span.error_bound <= 1e-6
    assert np.max(np.abs(span.V - exact.V)) <= span.error_bound + 1e-12
    assert np.max(np.abs(sup.V - exact.V)) <= sup.error_bound + 1e-12
    assert span.iterations <= sup.iterations
    if gamma == 0.99:
        assert span.iterations < sup.iterations / 10  # a well-mixing chain
    with pytest.raises(ValueError, match="stopping must be"):
        kb.value_iteration_csr(mdp.P, mdp.R, gamma, stopping="relative")


def test_backward_induction_csr_matches_the_planner_stationary_and_stage_dependent():
    mdp = make("random-sparse:S=200,A=3,b=6,H=7,seed=4")
    ref = backward_induction(mdp)
    got = kb.backward_induction_csr(mdp.P, mdp.R, 7, with_q=True)
    np.testing.assert_array_equal(got.V, ref.V)
    np.testing.assert_array_equal(got.Q, ref.Q)
    np.testing.assert_array_equal(got.policy, ref.policy)
    assert kb.backward_induction_csr(mdp.P, mdp.R, 7).Q is None

    # stage-dependent transitions (H*S*A, S) and rewards (H, S, A)
    S, A, H = 40, 2, 4
    stages = [make(f"random-sparse:S={S},A={A},b=3,seed={h}") for h in range(H)]
    P = sp.csr_array(sp.vstack([m.P for m in stages]))
    R = np.stack([m.R for m in stages])
    sd = TabularMDP(P, R, horizon=H)
    ref = backward_induction(sd)
    got = kb.backward_induction_csr([sd.P_flat(h) for h in range(H)], R, H, with_q=True)
    np.testing.assert_array_equal(got.V, ref.V)
    np.testing.assert_array_equal(got.Q, ref.Q)
    np.testing.assert_array_equal(got.policy, ref.policy)


# --------------------------------------------------------------------------------- row_cumsum


@settings(max_examples=60)
@given(csr_models())
def test_row_cumsum_restarts_at_every_row(model):
    P = model[0]
    got = row_cumsum(P.indptr, P.data)
    want = np.concatenate(
        [np.cumsum(P.data[a:b]) for a, b in zip(P.indptr[:-1], P.indptr[1:], strict=True)]
        or [np.empty(0)]
    )
    np.testing.assert_array_equal(got, want)


def test_row_cumsum_equal_row_lengths():
    indptr = np.arange(0, 31, 3)
    data = np.random.default_rng(0).random(30)
    want = np.cumsum(data.reshape(10, 3), axis=1).ravel()
    np.testing.assert_array_equal(row_cumsum(indptr, data), want)


# --------------------------------------------------------------------------------- benchmark


def test_bench_planning_runs_and_formats_without_timing_assertions():
    # a smoke test of the benchmark's plumbing (tiny size); the benchmark itself prints tables
    from theorylab.bench.planning import bench_planning, format_table, pymdptoolbox_memory

    rows = bench_planning(sizes=(300,), repeats=1, peers=False, read_gbs=10.0, tol=1e-3)
    (row,) = rows
    assert row["nnz"] == 300 * 4 * 10 and row["solve"]["converged"]
    methods = [sw["method"] for sw in row["sweeps"]]
    assert methods[0] == "scipy" and "numba-fused" in methods
    assert all(sw["ms"] > 0 and sw["speedup"] > 0 for sw in row["sweeps"])
    text = format_table(rows)
    assert "numba-fused" in text and "byte model" in text
    mem = pymdptoolbox_memory(10**5, 4)
    assert mem["dense_P_bytes"] == 8 * 4 * 10**10  # 320 GB, computed and never allocated


# ------------------------------------------------------------------- draws_per_row (sampling)


def test_draws_per_row_frequencies_match_the_rows_and_skip_zero_weights():
    """Each row's empirical frequencies over 200,000 draws are within 5 standard errors of its
    normalised weights (rows need not sum to 1); zero-weight entries, trailing ones included,
    are never drawn."""
    from theorylab.kernels.sampling import draws_per_row

    w = np.array([[0.5, 0.0, 0.5, 0.0], [1.0, 2.0, 1.0, 0.0], [0.0, 0.0, 0.0, 3.0]])
    n = 200_000
    idx = draws_per_row(np.random.default_rng(0), w, n)
    assert idx.shape == (3, n) and idx.dtype == np.int64
    p = w / w.sum(axis=1, keepdims=True)
    freq = np.stack([np.bincount(row, minlength=4) / n for row in idx])
    se = np.sqrt(p * (1 - p) / n)
    assert np.all(np.abs(freq - p) <= 5 * se + 1e-12)
    assert np.all(freq[p == 0] == 0)


def test_draws_per_row_clamps_a_rounded_cumsum_to_the_last_positive_entry():
    """A uniform at the row total (what a cumulative sum rounding below it can produce) maps to
    the last positive entry, never to a trailing zero."""
    from theorylab.kernels.sampling import draws_per_row

    class AtTotal:
        def random(self, shape):
            return np.full(shape, 1.0)

    w = np.array([[0.2, 0.8, 0.0, 0.0], [1.0, 0.0, 0.0, 2.0]])
    assert draws_per_row(AtTotal(), w, 3).tolist() == [[1, 1, 1], [3, 3, 3]]
