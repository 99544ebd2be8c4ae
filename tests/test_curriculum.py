"""Curriculum bandits (seed rows 002-004#B2 SEC, 002-004#B3 DUMP): the synthetic learner's step is
(eta/2) x the mean absolute advantage, the proxy's expectation and the oracle's expected gain
against Monte Carlo, the UCB1 card's constants written out, TD(0) and UCB1 written out, input
errors in one line."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit, logit

import theorylab as tl
from theorylab.algorithms.policy_optimization import dump, sec
from theorylab.bounds import get_bound
from theorylab.mdps import make
from theorylab.mdps.curriculum import (
    CurriculumBandit,
    UniformCurriculum,
    expected_abs_advantage,
    expected_pass_gain,
    simulate,
)


class Always:
    def __init__(self, c):
        self.c, self.seen = c, []

    def choose(self, theta, t, rng):
        return np.full(theta.shape[0], self.c)

    def observe(self, c, abs_adv, reward):
        self.seen.append((abs_adv.copy(), reward.copy()))


def test_family_spaces_the_logits_and_refuses_bad_sizes():
    inst = make("curriculum:K=5,G=4,eta=0.5,low=-2,high=2")
    assert np.allclose(inst.theta0, [-2, -1, 0, 1, 2]) and inst.G == 4 and inst.eta == 0.5
    assert np.allclose(inst.p0, expit(np.array([-2, -1, 0, 1, 2])))
    for bad, word in [
        ("curriculum:K=1", "K"),
        ("curriculum:G=1", "G"),
        ("curriculum:eta=-1", "eta"),
    ]:
        with pytest.raises(Exception, match=word) as err:
            make(bad)
        assert "\n" not in str(err.value)


def test_the_step_is_half_eta_times_the_mean_absolute_advantage():
    """theta_c after T pulls = theta_c(0) + (eta / 2) sum of the observed mean |A| (written out:
    |A| of a group with k successes of G = (k (1 - k/G) + (G - k) k/G) / G)."""
    inst = CurriculumBandit(np.array([-1.0, 0.5]), G=6, eta=0.7)
    ch = Always(0)
    run = simulate(inst, 50, ch, 8, np.random.default_rng(3))
    rbar = np.stack([r for _, r in ch.seen])  # (T, B)
    k, G = rbar * 6, 6
    abs_adv = (k * (1 - k / G) + (G - k) * (k / G)) / G
    assert np.allclose(np.stack([a for a, _ in ch.seen]), abs_adv)
    theta0 = -1.0 + 0.7 / 2 * abs_adv.sum(0)  # (B,)
    assert np.allclose(run.pass_rate[:, -1], (expit(theta0) + expit(0.5)) / 2, atol=1e-13)
    assert np.all(run.choices == 0)


def test_expectations_against_monte_carlo():
    rng = np.random.default_rng(0)
    G, n = 8, 400_000
    for p in (0.1, 0.5, 0.83):
        r = rng.random((n, G)) < p
        a = np.abs(r - r.mean(1, keepdims=True)).mean(1)
        se = a.std() / math.sqrt(n)
        assert abs(a.mean() - expected_abs_advantage(p, G)) < 5 * se
        theta, eta = logit(p), 0.9
        rb = r.mean(1)
        gain = expit(theta + eta * rb * (1 - rb)) - p
        assert abs(
            gain.mean() - expected_pass_gain(np.array(theta), G, eta)
        ) < 5 * gain.std() / math.sqrt(n)


def test_ucb1_card_constants_written_out():
    """Auer, Cesa-Bianchi & Fischer (2002), Theorem 1: 8 sum_{Delta_i > 0} ln n / Delta_i +
    (1 + pi^2/3) sum_j Delta_j."""
    gaps = np.array([0.0, 0.1, 0.25, 0.4])
    for n in (10, 1000, 123_456):
        want = 8 * sum(math.log(n) / d for d in gaps if d > 0) + (1 + math.pi**2 / 3) * gaps.sum()
        got = float(get_bound("auer2002-ucb1-thm1").evaluate(
            K=n, inv_gap_sum=float((1 / gaps[1:]).sum()), gap_sum=float(gaps.sum())))  # fmt: skip
        assert got == pytest.approx(want, rel=1e-12)
    assert tl.algorithms.registry.get_algorithm("dump").bounds == ("auer2002-ucb1-thm1",)


def test_sec_td0_and_boltzmann_written_out():
    ch = sec.SECCurriculum(2, 3, alpha=0.5, tau=0.1)
    ch.observe(np.array([1, 2]), np.array([0.4, 0.2]), np.array([0.5, 0.9]))
    assert np.allclose(ch.Q, [[0, 0.2, 0], [0, 0, 0.1]])
    z = np.exp(np.array([0, 0.2, 0]) / 0.1)
    assert np.allclose(ch.distribution()[0], z / z.sum())


def test_dump_round_robin_then_ucb1_index_written_out():
    ch = dump.DUMPCurriculum(1, 3, bonus=1.0, selection="argmax", tau=0.05)
    theta = np.zeros((1, 3))
    rng = np.random.default_rng(0)
    for t, obs in enumerate([0.1, 0.3, 0.2]):
        c = ch.choose(theta, t, rng)
        assert c.tolist() == [t]
        ch.observe(c, np.array([obs]), np.array([0.5]))
    ch.observe(np.array([1]), np.array([0.1]), np.array([0.5]))  # arm 1: mean 0.2 over 2 pulls
    t = 4
    want = np.array([0.1, 0.2, 0.2]) + np.sqrt(2 * math.log(t) / np.array([1, 2, 1]))
    assert np.allclose(dump.ucb_scores(ch.total, ch.counts, t, 1.0), want[None])
    assert ch.choose(theta, t, rng).tolist() == [int(want.argmax())]


def test_runs_through_tl_run_and_beats_uniform_on_the_quick_instance():
    res = tl.run("sec", "curriculum:K=6,G=8,eta=0.25", iterations=120, learners=64)
    uni = simulate(make("curriculum:K=6,G=8,eta=0.25"), 120, UniformCurriculum(6), 64,
                   np.random.default_rng(1))  # fmt: skip
    assert res.objective[-1] - res.objective[0] > 1.25 * (uni.pass_rate[:, -1].mean()
                                                          - uni.pass_rate[:, 0].mean())  # fmt: skip
    d = tl.run("dump", "curriculum:K=3,G=8,eta=0", iterations=300, learners=4)
    assert d.policies.shape == (301, 3) and np.allclose(d.policies[-1].sum(), 300)


@pytest.mark.parametrize(
    "name, kwargs, word",
    [
        ("sec", dict(alpha=1.5), "alpha"),
        ("sec", dict(tau=0), "tau"),
        ("sec", dict(learners=0), "learners"),
        ("dump", dict(selection="max"), "selection"),
        ("dump", dict(bonus=-1), "bonus"),
    ],
)
def test_input_errors_are_one_line(name, kwargs, word):
    with pytest.raises(ValueError, match=word) as err:
        tl.run(name, "curriculum:K=3", iterations=5, **kwargs)
    assert "\n" not in str(err.value)


def test_wrong_problem_is_refused():
    with pytest.raises(ValueError, match="curriculum"):
        sec.sec_path(make("calibration-bandit"), 5)
