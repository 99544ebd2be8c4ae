"""Feedback models through tl.run (btl / plackett-luce / matrix, checked per algorithm), the
preference-game kind (inpo, hedge-selfplay) and the trajectory BTL oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import theorylab as tl
from theorylab.algorithms.preference import nash
from theorylab.algorithms.preference.mle import fit_pairwise_split, fit_plackett_luce
from theorylab.algorithms.preference.pessimistic import greedy_policy
from theorylab.mdps import make
from theorylab.mdps.preference import TrajectoryBTLOracle, sample_rankings


def test_plackett_luce_feedback_matches_the_library_fit():
    bandit = make("comparison-bandit")
    res = tl.run(
        "greedy-mle",
        bandit,
        dataset_size=[50, 400],
        seeds=3,
        seed=7,
        feedback="plackett-luce",
        ranking_size=4,
    )
    assert res.config["feedback"] == "plackett-luce" and res.config["ranking_size"] == 4
    for j, n in enumerate((50, 400)):  # the runner draws size j's data with root seed + j
        data = sample_rankings(bandit, n, 4, seeds=3, seed=7 + j)
        for fit, est in (
            (fit_plackett_luce, "plackett-luce"),
            (fit_pairwise_split, "pairwise-split"),
        ):
            pol = greedy_policy(bandit, fit(bandit, data))
            expected = [bandit.suboptimality(p) for p in pol]
            got = tl.run(
                "greedy-mle",
                bandit,
                dataset_size=[50, 400],
                seeds=3,
                seed=7,
                feedback="plackett-luce",
                ranking_size=4,
                ranking_estimator=est,
            )
            np.testing.assert_allclose(got.values[:, j], expected, atol=1e-12)
        np.testing.assert_array_equal(res.queries[:, j], n)  # one query per ranking


@pytest.mark.parametrize(
    ("algorithm", "problem", "budget", "needle"),
    [
        (
            "pessimistic-mle",
            "comparison-bandit",
            {"dataset_size": 20, "feedback": "plackett-luce"},
            "K-dependence not recovered",
        ),
        (
            "p2r-ucbvi",
            "riverswim:S=2,H=3",
            {"episodes": 2, "feedback": "matrix"},
            "algorithms taking matrix feedback: dno (preference-game), hedge-selfplay",
        ),
        (
            "inpo",
            "cyclic-preferences",
            {"iterations": 2, "feedback": "btl"},
            "inpo (preference-game) takes feedback matrix",
        ),
        (
            "greedy-mle",
            "comparison-bandit",
            {"dataset_size": 20, "feedback": "btl", "ranking_size": 3},
            "ranking_size applies to plackett-luce feedback only",
        ),
        (
            "greedy-mle",
            "comparison-bandit",
            {"dataset_size": 20, "feedback": "plackett-luce", "ranking_size": 1},
            "ranking_size must be an integer >= 2",
        ),
        (
            "greedy-mle",
            "comparison-bandit",
            {"dataset_size": 20, "feedback": "plackett-luce", "ranking_size": 99},
            "exceeds the 6 actions",
        ),
        (
            "greedy-mle",
            "zjj-thm39",
            {"dataset_size": 20, "feedback": "plackett-luce", "design": "zjj-thm39"},
            "takes feedback='btl' only",
        ),
        (
            "greedy-mle",
            "comparison-bandit",
            {"dataset_size": 20, "feedback": "ranked"},
            "feedback must be one of btl, plackett-luce, matrix",
        ),
        ("inpo", "riverswim:S=2,H=3", {"iterations": 2}, "needs a preference game"),
        ("inpo", "cyclic-preferences", {"iterations": 0}, "iterations must be a positive integer"),
        ("inpo", "cyclic-preferences", {"iterations": 2, "tau": 0.0}, "tau = 0 is hedge-selfplay"),
        ("inpo", "cyclic-preferences", {"iterations": 2, "m": -1}, "must be >= 0"),
    ],
)
def test_feedback_and_game_errors_are_specific(algorithm, problem, budget, needle):
    with pytest.raises(ValueError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        tl.run(algorithm, problem, **budget)


def test_inpo_exact_matches_library_dynamics_and_equilibrium():
    game = make("cyclic-preferences")
    res = tl.run("inpo", game, iterations=300, seeds=2, tau=0.2, eta=0.5)
    dyn = nash.omd_dynamics(game.P, game.pi_ref, 0.2, 0.5, 300)
    # inpo minimises INPO's loss (a least-squares solve), OMD is its closed form: equal to
    # round-off, not to the bit (issue 26)
    np.testing.assert_allclose(res.values[0], dyn.gap, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(res.values[1], res.values[0])
    assert res.measure == "duality-gap" and res.values.shape == (2, 301)
    assert res.extra["distance"][0, -1] < 1e-10 and abs(res.values[0, -1]) < 1e-10
    assert (res.queries == 0).all()
    assert res.summary()["duality_gap_mean"] == pytest.approx(res.values[0, -1])


def test_hedge_reports_its_average_iterate_and_cycles_in_the_last():
    game = make("cyclic-preferences")
    res = tl.run("hedge-selfplay", game, iterations=2000, eta=0.05)
    dyn = nash.omd_dynamics(game.P, game.pi_ref, 0.0, 0.05, 2000)
    np.testing.assert_array_equal(res.values[0], dyn.average_gap)
    np.testing.assert_array_equal(res.extra["last_gap"][0], dyn.gap)
    vn, _ = nash.von_neumann_winner(game.P)
    np.testing.assert_allclose(res.extra["distance"][0], np.abs(dyn.average - vn).max(-1))
    assert res.values[0, -1] < 0.02 < res.extra["last_gap"][0, -500:].max()


def test_sampled_inpo_counts_queries_and_is_batch_invariant():
    both = tl.run("inpo", "cyclic-preferences", iterations=30, seeds=[0, 1], m=5, eta=0.2, seed=3)
    alone = tl.run("inpo", "cyclic-preferences", iterations=30, seeds=[1], m=5, eta=0.2, seed=3)
    np.testing.assert_array_equal(both.values[1], alone.values[0])
    np.testing.assert_array_equal(both.queries[:, -1], 4 * 5 * 30)
    np.testing.assert_array_equal(both.queries[0], 20 * np.arange(31))
    assert both.values[0, -1] < both.values[0, 0]


def test_cli_runs_feedback_and_game(capsys):
    from theorylab.cli import main

    assert main(["run", "inpo", "cyclic-preferences", "--iterations", "50", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "duality gap" in out and "inpo" in out
    assert (
        main(
            [
                "run",
                "greedy-mle",
                "comparison-bandit",
                "-N",
                "40",
                "--feedback",
                "plackett-luce",
                "--ranking-size",
                "3",
                "--no-progress",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "run",
                "pessimistic-mle",
                "comparison-bandit",
                "-N",
                "40",
                "--feedback",
                "plackett-luce",
                "--no-progress",
            ]
        )
        == 2
    )
    assert "K-dependence" in capsys.readouterr().err


def _oracle(seeds, seed=0):
    R = np.array([[0.1, 0.9], [0.5, 0.2]])
    rngs = [np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i,))) for i in seeds]
    return TrajectoryBTLOracle(R, 3, rngs)


def test_trajectory_oracle_probability_counts_and_batches():
    o = _oracle([0, 1])
    s1, a1 = np.array([[0, 0, 1]] * 2), np.array([[1, 1, 0]] * 2)
    s0, a0 = np.array([[1, 1, 1]] * 2), np.array([[1, 1, 1]] * 2)
    p = o.probability(s1, a1, s0, a0)
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-((0.9 + 0.9 + 0.5) - 0.6))))
    wins = np.zeros(2)
    for _ in range(4000):
        wins += o.compare(s1, a1, s0, a0, np.array([True, True]))
    np.testing.assert_array_equal(o.queries, [4000, 4000])
    se = np.sqrt(p * (1 - p) / 4000)
    assert (np.abs(wins / 4000 - p) < 4 * se).all()
    # seed 1 answers the same alone and in a batch, whatever seed 0 asks
    a, b = _oracle([0, 1]), _oracle([1])
    for k in range(50):
        ask = np.array([k % 2 == 0, True])
        ya = a.compare(s1, a1, s0, a0, ask)
        yb = b.compare(s1[:1], a1[:1], s0[:1], a0[:1], np.array([True]))
        assert ya[1] == yb[0]
        if not ask[0]:
            assert ya[0] == -1
    assert a.queries[0] == 25


@settings(max_examples=20, deadline=None)
@given(st.integers(2, 5), st.integers(0, 10))
def test_plackett_luce_pairwise_marginal_is_btl(K, seed):
    """Gumbel-max PL: the relative order of two items is BTL whatever the others (IIA), the fact
    that makes a K-wise ranking informative about every pair it contains."""
    from theorylab.mdps.preference import PlackettLuceOracle

    rng = np.random.default_rng(seed)
    theta = rng.normal(size=K)
    x = np.eye(K)[None, None].repeat(3000, axis=1)  # (1, n, K, K): item k has reward theta_k
    order = PlackettLuceOracle(theta, [np.random.default_rng(seed)]).rank(x)[0]
    pos = np.argsort(order, axis=-1)  # position of each item
    p = 1 / (1 + np.exp(-(theta[0] - theta[1])))
    freq = (pos[:, 0] < pos[:, 1]).mean()
    assert abs(freq - p) < 5 * np.sqrt(p * (1 - p) / 3000)
