"""P2R around UCBVI-BF, the preference runners and PreferenceResult."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.agent import EnvSpec
from theorylab.algorithms.preference.p2r import P2RUCBVI, repeats_for
from theorylab.cli import main
from theorylab.mdps import make
from theorylab.mdps.preference import PreferenceMatrixOracle, btl_matrix
from theorylab.mdps.tabular import Trajectories
from theorylab.results import PreferenceResult, load_result
from theorylab.seeding import generators

MDP = "riverswim:S=3,H=4"


def test_queries_bounded_and_every_step_answered_by_one_branch():
    """Tabular class: each pair is queried at most once (queries <= (SA - 1) m on every seed)
    and every visited step is answered by exactly one branch."""
    mdp = make(MDP)
    res = tl.run("p2r-ucbvi:delta=0.01", mdp, episodes=300, seeds=4, feedback="btl")
    assert isinstance(res, PreferenceResult) and res.measure == "regret"
    m = repeats_for(0.1, 0.01, mdp.S * mdp.A)
    assert (res.queries[:, -1] <= (mdp.S * mdp.A - 1) * m).all()
    assert (np.diff(res.queries, axis=1) >= 0).all()
    rounds = res.extra["query"][:, -1]
    assert (res.queries[:, -1] == rounds * m).all()
    total = res.extra["cache"][:, -1] + res.extra["confident"][:, -1] + rounds
    assert (total == 300 * mdp.horizon).all()  # every visited step is answered by one branch


def test_label_accuracy_on_the_agent():
    mdp = make(MDP)
    SA = mdp.S * mdp.A
    r = np.asarray(mdp.R).reshape(-1)
    oracle = PreferenceMatrixOracle(btl_matrix(r), generators(0, range(3), 5))
    env = EnvSpec(mdp.S, mdp.A, SA, None, mdp.mu0)  # H = SA: one step per pair
    agent = P2RUCBVI(env, 3, generators(0, range(3), 1), oracle, episodes=10, delta=0.01)
    states = np.tile(np.repeat(np.arange(mdp.S), mdp.A), (3, 1))
    actions = np.tile(np.tile(np.arange(mdp.A), mdp.S), (3, 1))
    traj = Trajectories(states, actions, np.zeros(states.shape), states)
    agent.update(traj)  # one "episode" visiting every pair once
    assert np.abs(agent.labels - (r - r[0])[None]).max() <= 0.1
    agent.update(traj)  # all cached now: no new queries
    assert agent.counts["query"].tolist() == [SA - 1] * 3
    assert agent.counts["cache"].tolist() == [1 + SA] * 3  # the reference, then every pair


def test_confident_branch_answers_without_a_query():
    """Linear reward class phi(s, a) = [1{(s, a) = (0, 0)}, 1{(s, a) = (S-1, 1)}]: once one
    zero-feature pair has been queried, every other zero-feature pair is answered confidently."""
    mdp = make(MDP)
    S, A = mdp.S, mdp.A
    phi = np.zeros((S, A, 2))
    phi[0, 0, 0] = 1.0
    phi[S - 1, 1, 1] = 1.0
    r = np.asarray(mdp.R).reshape(-1)
    oracle = PreferenceMatrixOracle(btl_matrix(r), generators(1, [0], 5))
    zero_pairs = [(s, a) for s in range(S) for a in range(A) if not phi[s, a].any()]
    env = EnvSpec(S, A, len(zero_pairs), None, mdp.mu0, features=phi)
    agent = P2RUCBVI(env, 1, generators(1, [0], 1), oracle, episodes=5, reward_class="env-features")
    st = np.array([[s for s, _ in zero_pairs]])
    ac = np.array([[a for _, a in zero_pairs]])
    agent.update(Trajectories(st, ac, np.zeros(st.shape), st))
    assert agent.counts["query"].tolist() == [1]
    assert agent.counts["confident"].tolist() == [len(zero_pairs) - 1]
    assert np.abs(agent.labels[0, st[0] * A + ac[0]] - (0.0 - r[0])).max() <= 0.1 + 1e-9


def test_seed_alone_equals_seed_in_batch_and_cache_false_queries_every_visit():
    a = tl.run("p2r-ucbvi", MDP, episodes=40, seeds=[0, 1, 2])
    b = tl.run("p2r-ucbvi", MDP, episodes=40, seeds=[1])
    np.testing.assert_array_equal(a.values[1], b.values[0])
    np.testing.assert_array_equal(a.queries[1], b.queries[0])
    c = tl.run("p2r-ucbvi:cache=false", MDP, episodes=40, seeds=2)
    m = repeats_for(0.1, 0.1, 6)
    assert c.queries[:, -1].tolist() == [40 * 4 * m] * 2


def test_result_roundtrip_frame_and_cli(tmp_path, capsys):
    res = tl.run("p2r-ucbvi", MDP, episodes=20, seeds=2)
    res.save(tmp_path / "r")
    back = load_result(tmp_path / "r")
    np.testing.assert_array_equal(back.queries, res.queries)
    np.testing.assert_array_equal(back.extra["cache"], res.extra["cache"])
    cols = res.frame_columns()
    assert {"seed", "episode", "regret", "queries", "cumulative_regret"} <= set(cols)
    assert len(cols["queries"]) == 40
    res.plot(tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 0
    argv = ["run", "p2r-ucbvi", MDP, "--episodes", "30", "--feedback", "btl", "--seeds", "2"]
    assert main([*argv, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "queries (mean)" in out and "p2r-ucbvi" in out


def test_offline_runner_reports_suboptimality_queries_and_bound():
    res = tl.run(
        "pessimistic-mle", "zjj-thm39", dataset_size=[10, 100], seeds=6, design="zjj-thm39"
    )
    assert res.measure == "suboptimality" and res.steps.tolist() == [10, 100]
    np.testing.assert_allclose(res.values, 0.1, atol=1e-7)
    assert res.queries.tolist() == [[10, 100]] * 6
    assert (res.values <= res.extra["bound"]).all()
    g = tl.run("greedy-mle", "zjj-thm39", dataset_size=50, seeds=6, design="zjj-thm39")
    assert g.values.shape == (6, 1) and (g.values >= 0).all()
    u = tl.run("greedy-mle", "comparison-bandit:seed=3", dataset_size=[20, 2000], seeds=4)
    assert u.values[:, 1].mean() <= u.values[:, 0].mean() + 1e-12


def test_runner_bad_input():
    with pytest.raises(ValueError, match="feedback must be one of"):
        tl.run("p2r-ucbvi", MDP, episodes=5, feedback="thurstone")
    with pytest.raises(ValueError, match="needs a budget: episodes"):
        tl.run("p2r-ucbvi", MDP)
    with pytest.raises(ValueError, match="use problem zjj-thm39"):
        tl.run("greedy-mle", "comparison-bandit", dataset_size=5, design="zjj-thm39")


def test_p2r_bad_parameters():
    mdp = make(MDP)
    oracle = PreferenceMatrixOracle(btl_matrix(np.zeros(4)), generators(0, [0], 5))
    env = EnvSpec(mdp.S, mdp.A, mdp.horizon, None, mdp.mu0)
    with pytest.raises(ValueError, match="expected the S\\*A = 6 state-action pairs"):
        P2RUCBVI(env, 1, generators(0, [0], 1), oracle, episodes=5)
    with pytest.raises(ValueError, match="eps0 must lie in"):
        tl.run("p2r-ucbvi:eps0=2.0", MDP, episodes=5)


def test_solve_refuses_a_comparison_bandit(capsys):
    assert main(["solve", "zjj-thm39"]) == 2
    assert "ComparisonBandit, not an MDP" in capsys.readouterr().err
