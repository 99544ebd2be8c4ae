"""ROVER (seed row 000#17) on token trees with EOS: the uniform policy's Q against values written
out by hand and against enumeration, greedy optimality on random binary trees, the failure under
graded rewards, the registered run, the mutation control and input errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from theorylab.algorithms.deep import rover as rv
from theorylab.mdps.eos_tree import EosTokenTree, eos_tree_structure


def tree_with_rewards(V: int, L: int, rewards: dict[tuple[int, ...], float]) -> EosTokenTree:
    """One prompt; the reward of each response (a tuple of symbols, EOS = 0) from ``rewards``."""
    prefixes, responses = eos_tree_structure(V, L)
    r = np.array([[rewards.get(y, 0.0) for y in responses]])
    return EosTokenTree(
        V, L, r[..., None], np.ones_like(r)[..., None], r > 0.5,
        np.full((1, len(prefixes), V), 1.0 / V),
    )  # fmt: skip


def test_uniform_q_on_a_hand_tree():
    # V = 2 (EOS, 1), L = 3: responses (0), (1,0), (1,1,0), (1,1,1); only (1,1,0) is correct.
    # Uniform after (root, 1): (1,0) w.p. 1/2, (1,1,0) w.p. 1/4, (1,1,1) w.p. 1/4 -> Q = 1/4
    # (the fraction of correct responses below, 1/3, is not Q^unif).
    task = tree_with_rewards(2, 3, {(1, 1, 0): 1.0})
    q = rv.uniform_q(task)
    assert q[0, 0, 1] == pytest.approx(0.25, abs=1e-15)
    assert q[0, 0, 0] == 0.0  # (root, EOS) ends on the wrong response (0)
    node_1 = 1  # the prefix (1,)
    assert q[0, node_1, 1] == pytest.approx(0.5, abs=1e-15)  # (1,1,0) or (1,1,1), 1/2 each
    assert q[0, node_1, 0] == 0.0
    assert np.allclose(q, rv.uniform_q_by_enumeration(task), atol=1e-15)


def test_leaf_fraction_mutation_differs_on_the_hand_tree():
    from theorylab.validations.rlvr_mutations import rover_leaf_fraction

    task = tree_with_rewards(2, 3, {(1, 1, 0): 1.0})
    with rover_leaf_fraction():
        q = rv.uniform_q(task)
    assert q[0, 0, 1] == pytest.approx(1 / 3, abs=1e-15)  # the bug's value, not 1/4
    assert rv.uniform_q(task)[0, 0, 1] == pytest.approx(0.25, abs=1e-15)  # restored


def brute_force_optimal_value(task, x: int, node_prefix: tuple[int, ...], a: int) -> float:
    """max reward over the responses that start with node_prefix + (a,), by listing them."""
    _, responses = eos_tree_structure(task.V, task.L)
    start = (*node_prefix, a)
    vals = [task.mean_reward[x, i] for i, y in enumerate(responses) if y[: len(start)] == start]
    return max(vals)


@pytest.mark.parametrize("seed", range(6))
def test_greedy_on_uniform_q_is_optimal_on_random_binary_trees(seed):
    task = rv.random_binary_tree(3, 4, 2, 0.08, seed)
    q = rv.uniform_q(task)
    assert np.allclose(q, rv.uniform_q_by_enumeration(task), atol=1e-12)
    prefixes, _ = eos_tree_structure(3, 4)
    q_star = rv.optimal_q_by_enumeration(task)
    for x, (h, prefix), a in itertools.product(range(2), enumerate(prefixes), range(3)):
        assert q_star[x, h, a] == brute_force_optimal_value(task, x, prefix, a)
    assert rv.greedy_violations(task, q) == (0, 2 * len(prefixes))
    seq = rv.sequence_probs(task, rv.greedy_policy(q))
    assert np.allclose(seq.sum(1), 1.0) and np.allclose((seq * task.correct).sum(1), 1.0)


def test_graded_rewards_break_greedy_optimality():
    bad = sum(
        rv.greedy_violations(t, rv.uniform_q(t))[0]
        for t in (rv.random_binary_tree(3, 4, 2, 0.08, s, graded=True) for s in range(5))
    )
    assert bad > 0


def test_softmax_tends_to_optimal_and_sampled_q_converges():
    task = rv.random_binary_tree(4, 3, 2, 0.1, 3)
    q = rv.uniform_q(task)
    accs = [(rv.sequence_probs(task, rv.rover_policy(q, r)) * task.correct).sum(1).min()
            for r in (1.0, 0.1, 0.01, 1e-3)]  # fmt: skip
    assert all(b > a for a, b in zip(accs, accs[1:], strict=False)) and accs[-1] > 0.999
    rng = np.random.default_rng(0)
    err = [np.abs(rv.sampled_uniform_q(task, n, rng) - q).mean() for n in (16, 4096)]
    assert err[1] < err[0] / 8


def test_distinct_correct_written_out():
    task = tree_with_rewards(2, 2, {(0,): 1.0, (1, 0): 1.0})  # responses (0), (1,0), (1,1)
    seq = np.array([[0.5, 0.25, 0.25]])
    k = 3
    expected = (1 - 0.5**k) + (1 - 0.75**k)
    assert rv.expected_distinct_correct(task, seq, k)[0] == pytest.approx(expected, abs=1e-15)


def test_rover_run_matches_the_exact_softmax():
    pytest.importorskip("torch")
    import theorylab as tl
    from theorylab.algorithms.registry import get_algorithm
    from theorylab.mdps import make

    entry = get_algorithm("rover-twin")
    assert (entry.kind, entry.problem, entry.papers) == (
        "deep",
        "token-tree",
        ("000#17", "002-004#G1"),
    )
    spec = "tokentree-eos:V=3,L=3,prompts=2,reward=binary"
    res = tl.run("rover-twin:rho=0.1", spec, steps=1)
    task = make(spec)
    # softmax(Q^unif / rho) written out from the enumeration
    q = rv.uniform_q_by_enumeration(task) / 0.1
    cond = np.exp(q) / np.exp(q).sum(-1, keepdims=True)
    seq = np.log(rv.sequence_probs(task, cond))
    assert np.abs(res.final_seq_logp[0] - seq).max() < 1e-12
    sampled = tl.run("rover-twin:rho=0.1", spec, steps=40, mode="sampled", batch=64)
    assert sampled.summary()["tv_predicted"] < 0.05


def test_the_control_fails_the_claim_at_a_small_scale():
    pytest.importorskip("torch")
    from theorylab.validations.claims.rlvr_twins import RoverScale, RoverUniformQ
    from theorylab.validations.rlvr_mutations import rover_leaf_fraction

    small = {"quick": RoverScale(4, (3, 4, 2, 0.08), 2, 10.0)}
    claim = RoverUniformQ(scales=small)
    assert claim.run("quick").passed
    with rover_leaf_fraction():
        report = claim.run("quick")
    assert not report.passed
    failed = [c.name for c in report.checks if not c.passed]
    assert failed == ["Q^unif by the Bellman recursion equals its enumeration over responses"]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: rv.rover_policy(np.zeros((1, 1, 2)), 0.0), "rho"),
        (lambda: rv.random_binary_tree(3, 3, 1, 1.5, 0), r"p \(the probability"),
        (
            lambda: rv.sampled_uniform_q(rv.random_binary_tree(3, 2, 1, 0.5, 0), 0, None),
            r"n \(roll",
        ),
    ],
)
def test_input_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()
