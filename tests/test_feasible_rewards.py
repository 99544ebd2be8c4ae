"""US-IRL and the feasible reward set (seed row 001#2): membership three independent ways, the
exact LP distance against a closed form, the radius and the bound card written out from their
formulas, the runner, bad input, and the controls failing what they must."""

from __future__ import annotations

import math

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.feasible_rewards import feasible_set as fs
from theorylab.algorithms.feasible_rewards.us_irl import confidence_radius
from theorylab.mdps import make


def _explicit_reward(p, expert, rng):
    """A feasible reward built from the explicit form with random (V, zeta), scaled into the box
    (scaling keeps it feasible: the set is a cone before the box)."""
    H, S, A, _ = p.shape
    V = np.zeros((H + 1, S))
    V[:H] = rng.normal(size=(H, S))
    zeta = rng.exponential(size=(H, S, A))
    zeta[np.arange(H)[:, None], np.arange(S)[None, :], expert] = 0.0
    r = -zeta + V[:H, :, None] - np.einsum("hsat,ht->hsa", p, V[1:])
    return r / np.abs(r).max()


@pytest.mark.parametrize("seed", range(6))
def test_membership_three_ways_agree(seed):
    rng = np.random.default_rng(seed)
    prob = make(f"irl-random:S=2,A=2,H=2,seed={seed}")
    rewards = [prob.reward, _explicit_reward(prob.p, prob.expert, rng)]
    rewards += [np.clip(prob.reward + rng.uniform(-0.4, 0.4, prob.reward.shape), -1, 1)
                for _ in range(4)]  # fmt: skip
    for r in rewards:
        votes = {fs.is_feasible(prob.p, prob.expert, r), fs.is_feasible_lp(prob.p, prob.expert, r),
                 fs.is_feasible_by_enumeration(prob.p, prob.expert, r)}  # fmt: skip
        assert len(votes) == 1
    assert fs.is_feasible(prob.p, prob.expert, rewards[0])
    assert fs.is_feasible(prob.p, prob.expert, rewards[1])


def test_instances_hold_their_reward_in_the_feasible_set():
    for spec in ("irl-trap:S=5,A=3,H=4,seed=2", "irl-random:S=4,A=3,H=5,seed=3"):
        prob = make(spec)
        assert fs.is_feasible(prob.p, prob.expert, prob.reward)
        assert fs.is_feasible_lp(prob.p, prob.expert, prob.reward)
        assert fs.distance_to_set(prob.reward, prob.p, prob.expert) <= 1e-8
    # irl-trap: every advantage is zero (the true reward is on the boundary)
    trap = make("irl-trap:S=4,A=3,H=5")
    assert np.abs(fs.advantages(trap.p, trap.expert, trap.reward)).max() <= 1e-12


def test_out_of_box_rewards_are_not_feasible():
    prob = make("irl-trap:S=3,A=2,H=2")
    r = prob.reward * 1.5  # scaled: still rationalises the expert, but outside [-1, 1]
    assert not fs.is_feasible(prob.p, prob.expert, r)
    assert not fs.is_feasible_lp(prob.p, prob.expert, r)


@pytest.mark.parametrize("eta", [0.1, 0.3, 0.8])
def test_lp_distance_matches_the_closed_form_on_a_raised_tied_action(eta):
    # At a decision state of irl-trap every action ties and nothing leads there: raising a
    # non-expert action's reward by eta is undone best by moving it and the expert's reward
    # eta / 2 each, so the distance to the set is exactly eta / 2.
    prob = make("irl-trap:S=3,A=2,H=3")
    r = prob.reward.copy()
    r[1, 2, 1] += eta
    assert not fs.is_feasible(prob.p, prob.expert, r)
    assert fs.distance_to_set(r, prob.p, prob.expert) == pytest.approx(eta / 2, abs=1e-8)


def test_lp_distance_is_at_most_the_coupling_and_at_most_one():
    prob = make("irl-trap:S=4,A=3,H=5")
    rng = np.random.default_rng(0)
    p_hat = prob.sample(200, rng) / 200
    coupled = fs.coupled_reward(prob.p, prob.expert, prob.reward, p_hat)
    assert fs.is_feasible(p_hat, prob.expert, coupled)
    d = fs.distance_to_set(prob.reward, p_hat, prob.expert)
    assert 0.0 < d <= np.abs(coupled - prob.reward).max() + 1e-9
    assert d <= fs.hausdorff_lower(prob.reward, prob.p, prob.expert, p_hat) + 1e-12
    far = np.ones_like(prob.reward)
    far[:, :, 0] = -1.0  # the expert's action worst everywhere
    assert fs.distance_to_set(far, p_hat, prob.expert) <= 1.0 + 1e-9


def test_sign_probes_are_feasible_and_see_the_s_term():
    # the probe is a feasible reward of R_p whose successor values are aligned with the error:
    # its violation under p_hat at the probed triple is (H - h - 1) ||w||_1, and its exact
    # distance is at most half of it (the eta / 2 repair) and at most the trivial 1
    for k in (2, 8):
        prob = make(f"irl-trap:S={k + 1},A=2,H=4,traps={k}")
        p_hat = prob.sample(300, np.random.default_rng(k)) / 300
        d = fs.sign_probe_lower(prob.p, prob.expert, p_hat, probes=4)
        err = p_hat - prob.p
        w = err[:, :, 1] - err[:, :, 0]  # (H, S, S): action 1 against the expert's action 0
        worst = max((prob.shape[0] - h - 1) * np.abs(w[h]).sum(-1).max() for h in range(3))
        assert 0.0 < d <= worst / 2 + 1e-9 and d <= 1.0
        assert d <= fs.hausdorff_lower(prob.reward, prob.p, prob.expert, p_hat, probes=4) + 1e-12
    rand = make("irl-random:S=3,A=2,H=3")  # no absorbing state: no probe
    assert fs.sign_probe_lower(rand.p, rand.expert, rand.p.copy()) == 0.0


def test_enumeration_refuses_a_large_problem():
    prob = make("irl-random:S=4,A=3,H=4")
    with pytest.raises(ValueError, match=r"A\^\(HS\) = 3\^16 policies > 2\^16"):
        fs.is_feasible_by_enumeration(prob.p, prob.expert, prob.reward)


@pytest.mark.parametrize(("n", "S", "A", "H", "delta"), [(100, 4, 3, 5, 0.1), (7, 2, 2, 9, 0.01)])
def test_radius_is_the_written_formula(n, S, A, H, delta):
    expected = (H - 1) * math.sqrt(2 * (S * math.log(2) + math.log(S * A * H / delta)) / n)
    assert confidence_radius(n, S, A, H, delta) == pytest.approx(expected, rel=1e-12)


def test_bound_cards_are_the_written_formulas():
    from theorylab.bounds import get_bound

    S, A, H, delta, eps = 5, 3, 7, 0.05, 0.2
    up = float(get_bound("metelli2023-us-irl").evaluate(S=S, A=A, H=H, delta=delta, eps=eps))
    assert up == pytest.approx(
        2 * (H - 1) ** 2 * S * A * H * (S * math.log(2) + math.log(S * A * H / delta)) / eps**2,
        rel=1e-12,
    )
    low = get_bound("metelli2023-irl-lower")
    assert float(low.evaluate(S=S, A=A, H=H, delta=delta, eps=eps, c=1)) == pytest.approx(
        H**3 * S * A * (math.log(1 / delta) + S) / eps**2, rel=1e-12
    )
    assert low.kind == "lower" and get_bound("metelli2023-us-irl").kind == "upper"


def test_run_scores_against_the_truth_and_round_trips(tmp_path):
    res = tl.run("us-irl", "irl-trap:S=3,A=2,H=4", samples=[64, 1024], seeds=4, seed=1)
    assert res.distance.shape == (4, 2) and res.hausdorff_lower.shape == (4, 2)
    assert np.all(res.hausdorff_lower >= res.distance - 1e-12)
    assert res.distance[:, 1].mean() < res.distance[:, 0].mean()
    again = tl.run("us-irl", "irl-trap:S=3,A=2,H=4", samples=[1024], seeds=[2], seed=1)
    assert again.distance[0, 0] == res.distance[2, 1]  # a seed alone = in a batch
    res.save(tmp_path / "irl")
    back = tl.Result.load(tmp_path / "irl")
    assert np.array_equal(back.distance, res.distance) and back.triples == 24
    frame = res.to_frame()
    assert len(frame["distance"]) == 8
    assert res.summary()["total_samples"] == [64 * 24, 1024 * 24]
    text = tl.run("us-irl", "irl-trap:S=3,A=2,H=4", samples="64,1024", seeds=4, seed=1)
    assert np.array_equal(text.distance, res.distance)  # the CLI's text form of the ladder


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: tl.run("us-irl", "irl-trap:S=3,A=2,H=3", samples=0),
         "samples must be a positive integer or an increasing list of them .*, got 0$"),
        (lambda: tl.run("us-irl", "irl-trap:S=3,A=2,H=3", samples=[64, 32]),
         r"samples must be .*, got \[64, 32\]"),
        (lambda: tl.run("us-irl", "irl-trap:S=3,A=2,H=3", samples="64,x"),
         "samples must be .*, got '64,x'"),
        (lambda: tl.run("us-irl", "irl-trap:S=3,A=2,H=3", samples=2.5), "got 2.5"),
        (lambda: tl.run("us-irl", "irl-trap:S=3,A=2,H=3", samples=8, delta=2.0),
         r"us-irl: delta must be a number in \(0, 1\), got 2.0"),
        (lambda: tl.run("us-irl", "riverswim:S=4,H=4", samples=8),
         "us-irl is an inverse-RL algorithm and needs an MDP with an expert"),
        (lambda: make("irl-trap:S=2"), "irl-trap: S must be an integer >= 3, got 2"),
        (lambda: make("irl-random:A=1"), "irl-random: A must be an integer >= 2, got 1"),
        (lambda: make("irl-trap:traps=1"), "irl-trap: traps must be an integer >= 2, got 1"),
        (lambda: make("irl-trap:S=4,traps=4"), "irl-trap: S must be an integer >= 5, got 4"),
    ],
)  # fmt: skip
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_controls_break_coverage_and_rate():
    from theorylab.validations.feasible_rewards_mutations import (
        us_irl_frozen_samples,
        us_irl_no_horizon_factor,
        us_irl_no_radius,
    )

    spec = "irl-trap:S=4,A=3,H=9"
    honest = tl.run("us-irl", spec, samples=[4096], seeds=8)
    assert honest.radius[0] < 1 and honest.coverage()[0] == 1.0
    with us_irl_no_radius():
        assert tl.run("us-irl", spec, samples=[4096], seeds=8).coverage()[0] == 0.0
    with us_irl_no_horizon_factor():
        assert tl.run("us-irl", spec, samples=[4096], seeds=8).coverage()[0] < 0.9
    with us_irl_frozen_samples():
        frozen = tl.run("us-irl", "irl-trap:S=3,A=2,H=3", samples=[64, 4096], seeds=4)
    assert np.array_equal(frozen.distance[:, 0], frozen.distance[:, 1])
