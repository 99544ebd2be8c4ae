"""Token-tree tasks: the KL-regularised optimum by enumeration and by soft-Bellman DP agree to
1e-12; exact KL, reward, accuracy, pass@k and CVaR against brute force."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from theorylab.errors import InvalidPolicyError
from theorylab.mdps import make


def random_policy(task, rng, scale=1.0):
    logits = scale * rng.standard_normal((task.n_prompts, task.n_nodes, task.V))
    cond = logits - logsumexp(logits, axis=-1, keepdims=True)
    return cond, task.sequence_logprobs(cond)


@settings(max_examples=30)
@given(
    st.integers(2, 4),
    st.integers(1, 3),
    st.sampled_from(["binary", "graded"]),
    st.sampled_from(["uniform", "random"]),
    st.floats(0.02, 5.0),
    st.integers(0, 1000),
)
def test_dp_equals_enumeration(V, L, reward, ref, beta, seed):
    task = make(f"tokentree:V={V},L={L},prompts=3,reward={reward},ref={ref},seed={seed}")
    dp = task.soft_optimum(beta)
    en = task.optimum_by_enumeration(beta)
    assert np.abs(dp.seq_logp - en).max() <= 1e-12
    assert np.abs(task.conditional_from_sequence(en) - dp.cond_logp).max() <= 1e-12
    # the optimal value is beta log Z, and no other policy does better
    v_star = task.regularised_value(dp.seq_logp, beta)
    assert np.abs(v_star - beta * dp.log_z).max() <= 1e-12
    rng = np.random.default_rng(seed)
    for _ in range(3):
        _, other = random_policy(task, rng)
        assert (task.regularised_value(other, beta) <= v_star + 1e-12).all()


def test_the_largest_size_solves_by_dp_in_well_under_a_second():
    task = make("tokentree:V=8,L=4,prompts=64,ref=random")
    assert (task.n_prompts, task.n_responses, task.n_nodes) == (64, 4096, 585)
    t0 = time.perf_counter()
    dp = task.soft_optimum(0.1)
    assert time.perf_counter() - t0 < 1.0
    assert np.abs(dp.seq_logp - task.optimum_by_enumeration(0.1)).max() <= 1e-12
    assert np.abs(logsumexp(dp.seq_logp, axis=1)).max() <= 1e-12


def test_sequence_tables_round_trip_and_normalise():
    task = make("tokentree:V=3,L=3,prompts=2,ref=random,seed=4")
    cond, seq = random_policy(task, np.random.default_rng(0))
    assert np.abs(logsumexp(seq, axis=1)).max() <= 1e-12
    assert np.abs(task.conditional_from_sequence(seq) - cond).max() <= 1e-12
    # the token nodes: the root, then the prefix (y_1), then (y_1, y_2)
    y = 2 * 9 + 1 * 3 + 0  # tokens (2, 1, 0)
    assert task.tokens[y].tolist() == [2, 1, 0]
    assert task.token_nodes[y].tolist() == [0, 1 + 2, 4 + 2 * 3 + 1]


def test_metrics_against_brute_force():
    task = make("tokentree:V=3,L=2,prompts=3,reward=graded,seed=2")
    _, seq = random_policy(task, np.random.default_rng(1))
    pi = np.exp(seq)
    Y = task.n_responses
    for x in range(task.n_prompts):
        r = task.mean_reward[x]
        assert task.expected_reward(seq)[x] == pytest.approx(sum(pi[x, y] * r[y] for y in range(Y)))
        acc = sum(pi[x, y] for y in range(Y) if task.correct[x, y])
        assert task.accuracy(seq)[x] == pytest.approx(acc)
        for k in (1, 2, 3):
            brute = sum(
                np.prod([pi[x, y] for y in ys])
                for ys in itertools.product(range(Y), repeat=k)
                if any(task.correct[x, y] for y in ys)
            )
            assert task.pass_at_k(seq, k)[x] == pytest.approx(brute, abs=1e-12)
    ref = task.ref_logprobs
    brute_kl = (pi * (seq - ref)).sum(axis=1)
    assert np.allclose(task.kl(seq, ref), brute_kl, atol=1e-14)
    assert np.allclose(task.kl(seq, seq), 0.0, atol=1e-15)
    assert np.allclose(task.tv(seq, ref), 0.5 * np.abs(pi - np.exp(ref)).sum(axis=1))


def test_cvar_of_mixtures_and_the_cvar_optimum():
    task = make("tokentree-risky:V=2,L=2")
    alpha = 0.25
    best, optimal = task.cvar_optimum(alpha)
    assert best[0] == pytest.approx(0.4)
    assert optimal[0].tolist() == [True, True, False, False]  # the SAFE responses
    uniform = task.ref_logprobs
    assert task.cvar(uniform, 1.0)[0] == pytest.approx(task.expected_reward(uniform)[0])
    # uniform: P(0) = 0.5 * 0.3 = 0.15 < 0.25; tail = 0.15 of 0 and 0.10 of 0.4
    assert task.cvar(uniform, alpha)[0] == pytest.approx(0.10 * 0.4 / 0.25)
    # brute force over mixtures on a grid: none beats the best point mass (CVaR is convex in pi)
    rng = np.random.default_rng(0)
    for _ in range(200):
        w = rng.dirichlet(np.full(4, 0.5))[None, :]
        assert task.cvar(np.log(w), alpha)[0] <= best[0] + 1e-12


def test_bad_input():
    task = make("tokentree:V=2,L=2,prompts=2")
    with pytest.raises(InvalidPolicyError, match=r"expected \(2, 4\)"):
        task.kl(np.zeros((2, 3)), np.zeros((2, 3)))
    with pytest.raises(InvalidPolicyError, match="prompt 0 sum to"):
        task.accuracy(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="beta must be > 0, got 0"):
        task.soft_optimum(0.0)
    with pytest.raises(ValueError, match="reward must be 'binary', 'graded' or 'random'"):
        make("tokentree:reward=fuzzy")
    with pytest.raises(ValueError, match="too many"):
        make("tokentree:V=16,L=6")
