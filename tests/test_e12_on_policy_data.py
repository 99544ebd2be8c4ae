"""on-policy-data (Tajwar et al. 2024; seed row 002-004#E12): the four exact logit steps against
finite differences of losses written out here, the preferred-response law against a loop over
pairs, the limits against closed forms, the offline bound, input errors, the claim and its
control."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit, log_softmax

import theorylab as tl
from theorylab.algorithms.policy_optimization import on_policy_data as opd
from theorylab.mdps import make

SPEC = "tokentree-bins:B=8,mode=1,peak=6,width=2,reward_width=1"


def _setting(coverage=4, beta=0.3):
    task = make(SPEC)
    ref, r = task.ref_logprobs[0], task.mean_reward[0]
    support = opd.covered_bins(ref, coverage)
    return task, ref, r, support, beta


def _loop_pairs(ref, r, support):
    """(B, B) W[w, l] by a loop over ordered pairs (y1, y2) of the support."""
    q = np.where(support, np.exp(ref), 0.0)
    q /= q.sum()
    B = q.size
    W = np.zeros((B, B))
    for y1 in range(B):
        for y2 in range(B):
            p = q[y1] * q[y2]
            if y1 == y2:
                W[y1, y1] += p
            elif r[y1] > r[y2]:
                W[y1, y2] += p
            elif r[y2] > r[y1]:
                W[y2, y1] += p
            else:
                W[y1, y2] += p / 2
                W[y2, y1] += p / 2
    return W


def test_pairs_and_preferred_law_match_a_loop():
    _, ref, r, support, _ = _setting()
    W = _loop_pairs(ref, r, support)
    np.testing.assert_allclose(opd.pair_weights(ref, r, support), W, atol=1e-15)
    D = opd.preferred_distribution(ref, r, support)
    np.testing.assert_allclose(D, W.sum(axis=1), atol=1e-15)
    assert abs(D.sum() - 1) < 1e-14 and np.all(D[~support] == 0)


def _loss(objective, theta, ref, r, support, beta, beta_dpo=0.7):
    """The loss each step descends, written out from log pi (normalised) directly."""
    logp = log_softmax(theta)
    p = np.exp(logp)
    star = log_softmax(ref + r / beta)
    if objective == "mle":
        return -(opd.preferred_distribution(ref, r, support) * logp).sum()
    if objective == "forward-kl":
        return (np.exp(star) * (star - logp)).sum()
    if objective == "reverse-kl":
        return -((p * r).sum() - beta * (p * (logp - ref)).sum())
    W = _loop_pairs(ref, r, support)
    total = 0.0
    for w in range(theta.size):
        for lo in range(theta.size):
            if w != lo and W[w, lo] > 0:
                z = beta_dpo * ((logp[w] - ref[w]) - (logp[lo] - ref[lo]))
                total -= W[w, lo] * np.log(expit(z))
    return total


@pytest.mark.parametrize("objective", opd.OBJECTIVES)
def test_steps_are_minus_the_exact_gradient_and_sum_to_zero(objective):
    _, ref, r, support, beta = _setting()
    rng = np.random.default_rng(7)
    kw = dict(
        ref_logp=ref,
        reward=r,
        beta=beta,
        data=opd.preferred_distribution(ref, r, support),
        pairs=opd.pair_weights(ref, r, support),
        beta_dpo=0.7,
    )
    for _ in range(3):
        theta = rng.normal(size=ref.size)
        step = opd.step_direction(theta, objective, **kw)
        h = 1e-6
        fd = np.array(
            [
                (
                    _loss(objective, theta + h * e, ref, r, support, beta)
                    - _loss(objective, theta - h * e, ref, r, support, beta)
                )
                / (2 * h)
                for e in np.eye(ref.size)
            ]
        )
        np.testing.assert_allclose(step, -fd, atol=1e-8)
        assert abs(step.sum()) < 1e-13


@pytest.mark.parametrize("objective", ["forward-kl", "reverse-kl"])
def test_kl_objectives_converge_to_the_tilted_optimum(objective):
    task, ref, r, _, beta = _setting()
    res = tl.run("on-policy-data", task, iterations=4000, objective=objective, beta=beta)
    star = ref + r / beta
    star = star - np.log(np.exp(star).sum())  # pi* written out: pi_ref e^(r / beta) / Z
    np.testing.assert_allclose(res.policies[-1, 0, 0], star, atol=1e-8)
    assert res.target_gap[-1] < 1e-12


def test_mle_converges_to_the_data_law_when_the_data_cover_everything():
    task, ref, r, _, _ = _setting()
    full = opd.covered_bins(ref, ref.size)
    D = opd.preferred_distribution(ref, r, full)
    res = tl.run("on-policy-data", task, iterations=3000, objective="mle", coverage=ref.size)
    np.testing.assert_allclose(np.exp(res.policies[-1, 0, 0]), D, atol=1e-6)
    assert D[6] > 1.5 * np.exp(ref[6])  # the peak bin in the data: MLE raises its mass


@pytest.mark.parametrize("objective", ["mle", "dpo"])
@pytest.mark.parametrize("eta", [0.3, 1.0, 5.0])
def test_offline_mass_on_a_missing_bin_stays_below_the_reference_bound(objective, eta):
    task, ref, r, support, _ = _setting(coverage=4)
    assert not support[6]
    res = tl.run("on-policy-data", task, iterations=400, objective=objective, eta=eta, coverage=4)
    bound = np.exp(ref[6]) / np.exp(ref.mean())  # pi_ref(b*) / geometric mean of pi_ref
    assert np.exp(res.policies[:, 0, 0, 6]).max() <= bound
    centred = res.policies[:, 0, 0] - res.policies[:, 0, 0].mean(axis=1, keepdims=True)
    assert np.all(np.diff(centred[:, 6]) <= 1e-13)


def test_the_family_pins_its_formulas():
    task = make("tokentree-bins:B=6,mode=2,peak=4,width=1.5,reward_width=0.5")
    y = np.arange(6)
    ref = np.exp(-((y - 2) ** 2) / (2 * 1.5**2))
    np.testing.assert_allclose(task.ref_cond[0, 0], ref / ref.sum(), atol=1e-15)
    np.testing.assert_allclose(task.mean_reward[0], np.exp(-((y - 4) ** 2) / 0.5), atol=1e-15)
    assert task.correct[0].tolist() == [False] * 4 + [True, False]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"iterations": 0}, "iterations must be a positive integer"),
        ({"iterations": 3, "objective": "ppo"}, "objective must be one of"),
        ({"iterations": 3, "coverage": 0}, "coverage must be an integer in 1..8"),
        ({"iterations": 3, "eta": -1.0}, "eta must be a finite number > 0"),
        ({"iterations": 3, "beta": 0.0}, "beta must be a finite number > 0"),
        ({"iterations": 3, "beta_dpo": float("nan")}, "beta_dpo must be a finite number > 0"),
    ],
)
def test_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tl.run("on-policy-data", SPEC, **kwargs)


def test_refuses_a_sequence_task():
    with pytest.raises(ValueError, match="categorical policy"):
        tl.run("on-policy-data", "tokentree:V=2,L=2", iterations=3)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("tokentree-bins:B=1", "B >= 2"),
        ("tokentree-bins:B=5,peak=7", "peak must be a bin in 0..4"),
        ("tokentree-bins:width=0", "width must be > 0"),
    ],
)
def test_family_bad_input(spec, message):
    with pytest.raises(ValueError, match=message):
        make(spec)


def test_claim_passes_and_its_control_fails():
    from theorylab.validations import validate

    rep = validate("on-policy-data-reaches-peak", "quick")
    assert rep.verdict == "PASS", rep.format()
