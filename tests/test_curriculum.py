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


def test_mopps_update_written_out_and_thompson_toward_the_target():
    from theorylab.algorithms.policy_optimization import mopps

    a, b = mopps.discounted_update(np.array(5.0), np.array(3.0), 2, 8, 0.9, 1.0, 1.0)
    assert a == pytest.approx(0.9 * 5 + 0.1 * 1 + 2) and b == pytest.approx(0.9 * 3 + 0.1 + 6)
    ch = mopps.MoPPSCurriculum(1, 3, 8, target=0.5, lam=1.0, a0=1.0, b0=1.0)
    ch.a[:] = [[1000.0, 500.0, 1.0]]  # posterior means ~1, 0.5 (sharp), ~0.5 (flat prior)
    ch.b[:] = [[1.0, 500.0, 1.0]]
    picks = [int(ch.choose(np.zeros((1, 3)), 0, np.random.default_rng(s))[0]) for s in range(200)]
    assert picks.count(1) > 150 and picks.count(0) == 0


def test_mopps_input_errors_are_one_line():
    for kwargs, word in [(dict(target=1.0), "target"), (dict(lam=1.5), "lam"), (dict(a0=0), "a0")]:
        with pytest.raises(ValueError, match=word) as err:
            tl.run("mopps", "curriculum:K=3", iterations=5, **kwargs)
        assert "\n" not in str(err.value)


def test_difficulty_filter_band_and_batch_step_written_out():
    from theorylab.algorithms.policy_optimization import difficulty_filtering as df

    rbar = np.arange(9) / 8
    assert df.keep_group(rbar, 8, None, None).tolist() == [False] + [True] * 7 + [False]
    assert df.keep_group(rbar, 8, 0.25, 0.5).tolist() == [r in (2, 3, 4) for r in range(9)]
    # one learner, one category, batch of 3: the step is (eta / n) sum of rbar (1 - rbar)
    inst = CurriculumBandit(np.array([0.0, 0.0]), G=4, eta=0.6)
    rates, rollouts, informative = df.filtered_updates(
        inst, 1, 3, False, None, None, 1, 1, np.random.default_rng(5)
    )
    rng = np.random.default_rng(5)
    c = rng.integers(0, 2, size=(1, 3))
    rb = rng.binomial(4, 0.5 * np.ones((1, 3))) / 4
    theta = np.zeros(2)
    np.add.at(theta, c[0], 0.6 / 3 * rb[0] * (1 - rb[0]))
    assert np.allclose(rates[0, 1], expit(theta)) and rollouts[0, 1] == 12


def test_filtered_batches_are_full_of_signal_and_cost_more_rollouts_per_update():
    kw = dict(iterations=20, batch=8, learners=16)
    f = tl.run("difficulty-filtering", "curriculum:K=6,G=8,eta=1.0", filtering=True, **kw)
    b = tl.run("difficulty-filtering", "curriculum:K=6,G=8,eta=1.0", filtering=False, **kw)
    assert np.all(f.entropy[1:] == 1.0) and np.all(b.entropy[1:] < 1.0)
    assert np.all(b.regularised == np.arange(21) * 64) and f.regularised[-1] > b.regularised[-1]
    with pytest.raises(ValueError, match="low must be <= high"):
        tl.run("difficulty-filtering", "curriculum:K=3", iterations=2, low=0.8, high=0.2)


def test_seele_fit_recovers_a_known_item_and_inverts_it():
    from theorylab.algorithms.policy_optimization import seele

    h = np.linspace(0, 1, 11)
    G = 10**6  # near-exact frequencies
    k = np.rint(G * expit(-2.0 + 5.0 * h))
    a, b = seele.fit_irt(h[None], k[None], G, ridge=0.0)
    assert a[0] == pytest.approx(-2.0, abs=1e-3) and b[0] == pytest.approx(5.0, abs=1e-3)
    # h = (logit(p*) - alpha) / beta, clipped; beta <= 0 keeps the previous hint
    got = seele.next_hint(np.array([-2.0, -2.0, 3.0]), np.array([5.0, -1.0, 1.0]), 0.5,
                          np.array([0.7, 0.7, 0.7]))  # fmt: skip
    assert np.allclose(got, [0.4, 0.7, 0.0])


def test_seele_first_rounds_and_inputs():
    r = tl.run("seele", "curriculum:K=3,eta=0,hint=6", iterations=3, learners=2)
    assert np.allclose(r.policies[1], 0.0) and np.allclose(r.policies[2], 1.0)
    with pytest.raises(ValueError, match="hints"):
        tl.run("seele", "curriculum:K=3", iterations=3)
    with pytest.raises(ValueError, match="schedule"):
        tl.run("seele", "curriculum:K=3,hint=6", iterations=3, schedule="best")
    with pytest.raises(ValueError, match="window"):
        tl.run("seele", "curriculum:K=3,hint=6", iterations=3, window=1)


def test_guide_update_written_out_for_one_prompt():
    """A fixed draw: the step is (1/G) sum_i w_i A_i (e_{y_i} - pi), w = pi/pi_h on hinted rows."""
    from scipy.special import softmax

    from theorylab.algorithms.policy_optimization import guide

    theta = np.array([[0.0, -4.0, 1.0]])
    corr = np.array([[False, True, False]])
    rng = np.random.default_rng(11)
    step, adv = guide.guide_update(theta, corr, 5.0, 4, "guide", rng)
    rng = np.random.default_rng(11)
    pi = softmax(theta, axis=1)
    from theorylab.kernels.sampling import draws_per_row

    y = draws_per_row(rng, pi, 4)[0]
    w = np.ones(4)
    if not corr[0, y].any():
        pi_h = softmax(theta + 5.0 * corr, axis=1)
        y = draws_per_row(rng, pi_h, 4)[0]
        w = pi[0, y] / pi_h[0, y]
    r = corr[0, y].astype(float)
    a = r - r.mean()
    want = sum(w[i] * a[i] * (np.eye(3)[y[i]] - pi[0]) for i in range(4)) / 4
    assert np.allclose(step[0], want, atol=1e-15) and np.allclose(adv[0], a)


def test_guide_grpo_mode_never_hints_and_inputs():
    r = tl.run("guide-grpo", "answer-bandit:P=4,A=5,rare=6", iterations=3, mode="grpo", learners=4)
    assert r.policies.shape == (4, 4, 5) and np.isnan(r.regularised[0])
    with pytest.raises(ValueError, match="mode"):
        tl.run("guide-grpo", "answer-bandit", iterations=2, mode="hinted")
    with pytest.raises(ValueError, match="group"):
        tl.run("guide-grpo", "answer-bandit", iterations=2, group=1)
    with pytest.raises(Exception, match="rare"):
        make("answer-bandit:rare=-1")
