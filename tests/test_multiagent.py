"""SUBSAMPLE-Q (``kind="local-agents"``; seed row 001#3, ``algorithms/multiagent/subsample_q.py``):
the count chain against the joint chain and a closed form, the deployed policy against subset
enumeration, the learner's independence of n, input errors, the control, the result."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import comb

import theorylab as tl
from theorylab.algorithms.multiagent import subsample_q as sq
from theorylab.algorithms.planning.evaluation import evaluate_discounted
from theorylab.algorithms.planning.value_iteration import policy_iteration
from theorylab.errors import InvalidMDPError
from theorylab.mdps import make
from theorylab.validations.claims.multiagent import oracle_errors, subset_policy_on_joint_chain


def test_count_transition_closed_form():
    # T[g, c, c'] written out: sum over the agents in state 1 that stay (i) of
    # C(c, i) p^i (1-p)^(c-i) * C(m-c, c'-i) q^(c'-i) (1-q)^(m-c-c'+i)
    from theorylab.mdps.local_agents import count_transition

    p_on = np.array([[0.3, 0.8]])  # q = 0.3 (switch on), p = 0.8 (stay on)
    m = 5
    T = count_transition(p_on, m)[0]
    q, p = 0.3, 0.8
    for c in range(m + 1):
        for d in range(m + 1):
            want = sum(
                comb(c, i) * p**i * (1 - p) ** (c - i)
                * comb(m - c, d - i) * q ** (d - i) * (1 - q) ** (m - c - d + i)
                for i in range(0, min(c, d) + 1) if d - i <= m - c
            )  # fmt: skip
            assert abs(T[c, d] - want) <= 1e-12
    np.testing.assert_allclose(T.sum(axis=1), 1.0, atol=1e-12)


def test_count_chain_equals_joint_chain_and_subset_enumeration():
    e_star, e_pi = oracle_errors()
    assert e_star <= 1e-8 and e_pi <= 1e-8


def test_random_instance_lumping_and_deployment_k_equals_n_is_optimal():
    p = make("local-agents:n=4,instance=random,G=2,A=3,seed=5")
    pop = np.array([bin(v).count("1") for v in range(2**p.n)])
    vc = policy_iteration(p.count_mdp()).V.reshape(p.G, -1)[:, pop]
    vj = policy_iteration(p.joint_mdp()).V.reshape(p.G, -1)
    np.testing.assert_allclose(vc, vj, atol=1e-9)
    # k = n: the sub-sample is the whole population, the deployed policy is greedy in Q* (gap 0)
    learned = sq.learn(p, p.n, None, np.random.default_rng(0))
    gap = policy_iteration(p.count_mdp()).V.reshape(p.G, -1) - sq.deployed_values(p, learned)
    assert np.abs(gap).max() <= 1e-3  # the learner's T iterations leave gamma^T/(1-gamma) <= 1e-4
    pi = subset_policy_on_joint_chain(p, learned.greedy(), 2)
    np.testing.assert_allclose(pi.sum(axis=1), 1.0)


def test_exact_learner_matches_planned_q_of_the_k_agent_chain():
    p = make("local-agents:n=32")
    learned = sq.learn(p, 8, None, np.random.default_rng(0))
    q = policy_iteration(p.count_mdp(8)).Q.reshape(learned.Q.shape)
    assert np.abs(learned.Q - q).max() <= sq.TOL


def test_learner_never_reads_n_and_counts_its_draws():
    qa = sq.subsample_q(make("local-agents:n=16"), 4, 7, np.random.default_rng(3))
    qb = sq.subsample_q(make("local-agents:n=500"), 4, 7, np.random.default_rng(3))
    np.testing.assert_array_equal(qa.Q, qb.Q)
    T = sq.iterations(0.9)
    assert qa.draws == T * 2 * 5 * 2 * 7 and qa.sweeps == T  # T G (k+1) A m


def test_gap_shrinks_with_k_and_fixed_subset_does_not():
    r = tl.run("subsample-q", "local-agents:n=128", k=[2, 8, 32], seeds=1)
    gap = r.sup_gap[0]
    assert np.all(np.diff(gap) < 0) and gap[-1] < 0.5 * gap[0]
    from theorylab.validations.multiagent_mutations import subsample_q_fixed_subset

    with subsample_q_fixed_subset():
        fixed = tl.run("subsample-q", "local-agents:n=128", k=[2, 8, 32], seeds=1).sup_gap[0]
    assert np.all(fixed > 5 * gap)


def test_fixed_subset_with_k_equal_n_is_the_resampling_policy():
    p = make("local-agents:n=6")
    learned = sq.learn(p, 6, None, np.random.default_rng(0))
    np.testing.assert_allclose(sq.fixed_subset_values(p, learned, tol=1e-12),
                               sq.deployed_values(p, learned), atol=1e-9)  # fmt: skip


@pytest.mark.parametrize(
    "spec, match",
    [
        ("local-agents:n=0", "n must be an integer"),
        ("local-agents:instance=queue", "instance must be one of demand, random"),
        ("local-agents:gamma=1.0", "gamma must be a number in"),
        ("local-agents:start_on=2", "start_on must be a probability"),
        ("local-agents:instance=random,G=0", "G must be an integer"),
    ],
)
def test_instance_input_errors(spec, match):
    with pytest.raises(InvalidMDPError, match=match):
        make(spec)


def test_learner_input_errors():
    with pytest.raises(ValueError, match="k must be <= n = 8"):
        tl.run("subsample-q", "local-agents:n=8", k=[2, 9])
    with pytest.raises(ValueError, match="k must be an integer >= 1 or an increasing list"):
        tl.run("subsample-q", "local-agents:n=8", k=[4, 2])
    with pytest.raises(ValueError, match="samples must be a positive integer"):
        tl.run("subsample-q", "local-agents:n=8", k=2, samples=0)
    with pytest.raises(ValueError, match="needs a global agent with n local agents"):
        tl.run("subsample-q", "riverswim:S=4,H=5", k=2)
    with pytest.raises(ValueError, match="k must be an integer in"):
        sq.subsample_q(make("local-agents:n=4"), 5, None, np.random.default_rng(0))
    with pytest.raises(InvalidMDPError, match="joint chain is built for n <= 8"):
        make("local-agents:n=9").joint_mdp()


@pytest.mark.slow  # test_validations runs the claim and its control at quick scale
def test_claim_passes_and_control_fails():
    from theorylab.validations import validate

    rep = validate("subsample-q-gap-vs-k", "quick")
    assert rep.verdict == "PASS", rep.format()
    assert {c["control"]: c["verdict"] for c in rep.controls} == {
        "subsample-q-fixed-subset": "FAIL"
    }


def test_result_summarises_frames_plots_and_round_trips(tmp_path):
    from theorylab.results import LocalAgentsResult, load_result

    r = tl.run("subsample-q", "local-agents:n=16", k=[2, 4], samples=5, seeds=2)
    assert isinstance(r, LocalAgentsResult)
    s = r.summary()
    assert s["k"] == [2, 4] and s["samples"] == 5 and len(s["sup_gap"]) == 2
    assert np.all(r.sup_gap >= r.mu0_gap - 1e-12) and np.all(r.bellman_noise > 0)
    assert set(r.table_row()) == {"algorithm", "n", "m", "seeds", "sup gap per k"}
    assert len(r.to_frame()["sup_gap"]) == 4
    r.plot(tmp_path / "gap.png")
    r.save(tmp_path / "res")
    back = load_result(tmp_path / "res")
    np.testing.assert_array_equal(back.sup_gap, r.sup_gap)
    assert back.samples == 5 and back.n == 16


def test_deployed_policy_rows_are_hypergeometric_mixtures():
    p = make("local-agents:n=10")
    learned = sq.learn(p, 4, None, np.random.default_rng(0))
    pi = sq.deployed_policy(p, learned).reshape(p.G, 11, p.A)
    np.testing.assert_allclose(pi.sum(axis=-1), 1.0, atol=1e-12)
    # c = 0 or c = n: every subset has count 0 or k, the action is the greedy one there
    act = learned.greedy()
    for g in range(p.G):
        assert pi[g, 0, act[g, 0]] == pytest.approx(1.0)
        assert pi[g, 10, act[g, 4]] == pytest.approx(1.0)
    # a direct check of one row: Pr(j | c = 5) = C(5, j) C(5, 4 - j) / C(10, 4)
    w = np.array([comb(5, j) * comb(5, 4 - j) / comb(10, 4) for j in range(5)])
    want = np.zeros(p.A)
    for j in range(5):
        want[act[0, j]] += w[j]
    np.testing.assert_allclose(pi[0, 5], want, atol=1e-12)
    v = evaluate_discounted(p.count_mdp(), pi.reshape(-1, p.A))
    np.testing.assert_allclose(v.reshape(p.G, -1), sq.deployed_values(p, learned), atol=1e-12)
