"""PrefixRL (seed row 002-004#G4): prefix success against enumeration of the responses written
out, rollouts to the first non-zero gradient against its formula and Monte Carlo, consistency
(the root-optimal policy maximises every prefix problem), the resampled-prefix mutation failing
the claim, the registered run, input errors."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.algorithms.deep import prefixrl as pr
from theorylab.algorithms.deep import rover as rv


@pytest.fixture(scope="module")
def hard():
    task = rv.random_binary_tree(3, 4, 2, 0.02, 3)
    return task, pr.longest_correct(task)


def test_prefix_success_by_walking_each_correct_response(hard):
    task, trace = hard
    rng = np.random.default_rng(0)
    cond = rng.dirichlet(np.ones(task.V), size=task.ref_cond.shape[:2])  # (P, N, V)
    lengths = task.token_mask.sum(axis=1).astype(int)
    for ell in range(int(lengths[trace].min())):
        got = pr.prefix_success(task, cond, trace, ell)
        for x in range(task.n_prompts):
            want = 0.0
            for y in np.flatnonzero(task.correct[x]):
                t = trace[x]
                if lengths[y] <= ell or task.token_nodes[y, ell] != task.token_nodes[t, ell]:
                    continue
                want += np.prod([cond[x, task.token_nodes[y, i], task.tokens[y, i]]
                                 for i in range(ell, lengths[y])])  # fmt: skip
            assert got[x] == pytest.approx(want, abs=1e-15)
    # uniform reference: s_l = 3^-(tokens left) on the trace alone when it is the only correct
    # response through the prefix node


def test_rollouts_to_signal_formula_and_monte_carlo(hard):
    task, trace = hard
    s = np.array([0.0, 0.1, 0.5, 1.0])
    want = [np.inf, 4 / (1 - 0.1**4 - 0.9**4), 4 / (1 - 2 * 0.5**4), np.inf]
    assert np.allclose(pr.rollouts_to_signal(s, 4), want, rtol=1e-15)
    lt = int(task.token_mask.sum(axis=1)[trace].min())
    ell = lt - 1
    exact = pr.rollouts_to_signal(pr.prefix_success(task, task.ref_cond, trace, ell), 4)
    mc = pr.sampled_rollouts_to_signal(
        task, task.ref_cond, trace, ell, 4, 400, np.random.default_rng(1)
    )
    se = mc.std(axis=1) / np.sqrt(mc.shape[1])
    assert (np.abs(mc.mean(axis=1) - exact) <= 4 * se).all()


def test_signal_falls_with_the_prefix_and_the_root_optimum_solves_every_prefix(hard):
    task, trace = hard
    lt = int(task.token_mask.sum(axis=1)[trace].min())
    e = np.array([pr.rollouts_to_signal(pr.prefix_success(task, task.ref_cond, trace, ell), 4)
                  for ell in range(lt)])  # fmt: skip
    assert (np.diff(e, axis=0) < 0).all()
    greedy = rv.greedy_policy(rv.optimal_q_by_enumeration(task))
    for ell in range(lt):
        assert np.allclose(pr.prefix_success(task, greedy, trace, ell), 1.0, atol=1e-15)
    final = pr.train(task, trace, np.full(lt, 1.0 / lt), 100, 50.0)[-1]
    assert pr.prefix_success(task, final, trace, 0).min() > 0.99


def test_the_control_fails_the_claim():
    from theorylab.validations.claims.rlvr_twins import PrefixrlSignal
    from theorylab.validations.rlvr_mutations import prefixrl_prefix_resampled

    claim = PrefixrlSignal()
    assert claim.run("quick").passed
    with prefixrl_prefix_resampled():
        report = claim.run("quick")
    failed = [c.name for c in report.checks if not c.passed]
    assert "rollouts to the first non-zero gradient fall with the prefix length" in failed


def test_registered_run_reaches_the_root_optimal_set():
    pytest.importorskip("torch")
    import theorylab as tl
    from theorylab.algorithms.registry import get_algorithm

    entry = get_algorithm("prefixrl-twin")
    assert (entry.kind, entry.problem, entry.papers) == ("deep", "token-tree", ("002-004#G4",))
    res = tl.run("prefixrl-twin", "tokentree-eos:V=3,L=3,prompts=2,reward=binary", steps=60)
    assert res.summary()["tv_predicted"] < 0.01
    assert res.tv_predicted[0, -1] == pytest.approx(1 - res.accuracy[0, -1], abs=1e-12)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda t, y: pr.prefix_success(t, t.ref_cond, y, 9), "prefix length must be in"),
        (lambda t, y: pr.rollouts_to_signal(0.5, 1), "group"),
        (lambda t, y: pr.train(t, y, [-1.0, 2.0], 1, 1.0), "weights"),
    ],
)
def test_input_errors(hard, call, message):
    with pytest.raises(ValueError, match=message):
        call(*hard)
