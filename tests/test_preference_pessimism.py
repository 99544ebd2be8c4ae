"""VPO offline and RPO on finite-response KL bandits (issue 28): the value-regularised MLE against
a solve written out here, the max-min / DPO + SFT equivalence, the spurious response, input errors
and the control."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import log_expit, logsumexp

import theorylab as tl
from theorylab.algorithms.preference import rpo as P
from theorylab.algorithms.preference import vpo as V
from theorylab.mdps import make
from theorylab.mdps.kl_bandit import sample_reference_pairs, spurious_coverage
from theorylab.mdps.preference import PairwiseDataset, PreferenceError


def _objective_written_out(r, ref, cal, wins, beta, alpha):
    """sum wins_ij (-log sigma(r_i - r_j)) + alpha (beta log sum ref e^{r/beta} - cal r)."""
    A = len(r)
    nll = sum(
        -wins[i, j] * log_expit(r[i] - r[j]) for i in range(A) for j in range(A) if wins[i, j]
    )
    return nll + alpha * (beta * logsumexp(r / beta, b=ref) - cal @ r)


def _random_problem(seed):
    rng = np.random.default_rng(seed)
    A = 4
    ref = rng.random(A) + 0.05
    ref /= ref.sum()
    wins = rng.random((A, A)) * (rng.random((A, A)) < 0.6)
    np.fill_diagonal(wins, 0.0)
    wins /= wins.sum()
    return ref, wins


@pytest.mark.parametrize("seed", range(4))
def test_objective_gradient_and_hessian_against_finite_differences(seed):
    ref, wins = _random_problem(seed)
    r = np.random.default_rng(seed + 10).normal(size=4)
    for sign in (-1, 1):
        f, g = V.regularised_objective(r, ref, ref, wins, 0.7, 0.3, sign)
        if sign == -1:
            assert abs(f - _objective_written_out(r, ref, ref, wins, 0.7, 0.3)) < 1e-12
        h = 1e-6
        E = np.eye(4)
        fd = [
            (V.regularised_objective(r + h * e, ref, ref, wins, 0.7, 0.3, sign)[0]
             - V.regularised_objective(r - h * e, ref, ref, wins, 0.7, 0.3, sign)[0]) / (2 * h)
            for e in E
        ]  # fmt: skip
        assert np.allclose(g, fd, atol=1e-7)
        H = V._hessian(r, ref, wins, 0.7, 0.3, sign)
        fdh = np.stack(
            [
                (V.regularised_objective(r + h * e, ref, ref, wins, 0.7, 0.3, sign)[1]
                 - V.regularised_objective(r - h * e, ref, ref, wins, 0.7, 0.3, sign)[1]) / (2 * h)
                for e in E
            ]
        )  # fmt: skip
        assert np.allclose(H, fdh, atol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_projected_newton_matches_a_generic_solver(seed):
    ref, wins = _random_problem(seed)
    R, beta, alpha = 3.0, 0.5, 0.2
    r = V.regularised_rewards(ref, ref, wins, beta, alpha, R)
    res = minimize(
        lambda x: _objective_written_out(x, ref, ref, wins, beta, alpha),
        np.zeros(4),
        method="SLSQP",
        bounds=[(-R, R)] * 4,
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    f_ours = _objective_written_out(r, ref, ref, wins, beta, alpha)
    assert f_ours <= res.fun + 1e-10
    # Gibbs policies agree (the rewards are fixed up to a shift)
    p1 = ref * np.exp(r / beta)
    p2 = ref * np.exp(res.x / beta)
    assert np.allclose(p1 / p1.sum(), p2 / p2.sum(), atol=1e-5)


def test_value_term_is_the_kl_regularised_maximum():
    ref, _ = _random_problem(0)
    r, beta = np.array([0.3, -1.0, 2.0, 0.1]), 0.4
    pi = ref * np.exp(r / beta)
    pi /= pi.sum()
    J = pi @ r - beta * np.sum(pi * np.log(pi / ref))
    assert abs(J - beta * logsumexp(r / beta, b=ref)) < 1e-12
    rng = np.random.default_rng(1)
    for _ in range(50):  # no other policy does better
        q = rng.dirichlet(np.ones(4))
        assert q @ r - beta * np.sum(q * np.log(q / ref)) <= J + 1e-12


def _one_spurious_win(bandit, n=100):
    """n comparisons: a beats b in 73 % of them (sigma(1)), s beats b in the single one of s."""
    a0 = np.array([1] * (n - 1) + [1])
    a1 = np.array([0] * (n - 1) + [2])
    y = np.array([1] * int(0.73 * (n - 1)) + [0] * (n - 1 - int(0.73 * (n - 1))) + [1])
    st = np.zeros(n, np.int64)
    return PairwiseDataset(st[None], a0[None], a1[None], y[None])


def test_plain_mle_promotes_the_spurious_response_and_vpo_does_not():
    bandit = spurious_coverage(eps=0.01)
    data = _one_spurious_win(bandit)
    mle = V.vpo_offline(bandit, data, alpha=0.0)
    ours = V.vpo_offline(bandit, data, alpha=1.0)
    assert mle.policy[0, 0, 2] > 0.9  # the MLE puts s at the box's top
    assert ours.policy[0, 0, 2] < 0.05
    assert ours.suboptimality[0] < 0.1 < 1.0 < mle.suboptimality[0]
    rp = P.rpo_offline(bandit, data, eta=0.3)
    assert rp.policy[0, 0, 2] < 0.05
    assert P.rpo_offline(bandit, data, eta=0.0).policy[0, 0, 2] > 0.9


def test_rpo_policy_form_is_the_torch_rpo_loss_minimiser():
    pytest.importorskip("torch")
    from theorylab.validations.claims.preference_pessimism import _torch_rpo_policy

    bandit = spurious_coverage(eps=0.01)
    data = sample_reference_pairs(bandit, 200, seeds=1, seed=3)
    fit = P.rpo_offline(bandit, data, eta=0.5, baseline="chosen")
    assert np.abs(fit.rewards).max() < 4.0 - 1e-6  # interior: the policy form applies
    w = V.wins_matrix(data, 0, 0, 3)
    base = w.sum(1) / w.sum()  # the chosen responses, written out
    pt = _torch_rpo_policy(bandit.ref[0], base, w, bandit.eta, 0.5)
    assert np.abs(pt - fit.policy[0, 0]).max() < 1e-6


def test_wins_matrix_counts_and_calibration():
    bandit = spurious_coverage(eps=0.2)
    data = sample_reference_pairs(bandit, 50, seeds=1, seed=0)
    w = V.wins_matrix(data, 0, 0, 3)
    win = np.where(data.y[0] == 1, data.a1[0], data.a0[0])
    lose = np.where(data.y[0] == 1, data.a0[0], data.a1[0])
    for i in range(3):
        for j in range(3):
            expect = 0.0 if i == j else np.sum((win == i) & (lose == j)) / 50
            assert abs(w[i, j] - expect) < 1e-15
    assert np.allclose(V.calibration("chosen", bandit.ref[0], w), w.sum(1) / w.sum())
    assert np.allclose(V.calibration("reference", bandit.ref[0], w), bandit.ref[0])


def test_spurious_coverage_instance():
    b = make("spurious-coverage:eps=0.01,gap=2")
    assert np.allclose(b.ref, [[0.495, 0.495, 0.01]])
    assert np.allclose(b.rewards[0] - b.rewards[0, 1], [2.0, 0.0, 0.0])
    with pytest.raises(PreferenceError, match="eps"):
        spurious_coverage(eps=1.5)
    with pytest.raises(PreferenceError, match="gap"):
        spurious_coverage(gap=-1.0)


def test_input_errors():
    kw = dict(dataset_size=20, design="reference", seeds=1)
    with pytest.raises(V.VPOError, match="alpha must be a number >= 0, got -1"):
        tl.run("vpo-offline", "spurious-coverage", alpha=-1.0, **kw)
    with pytest.raises(V.VPOError, match="calibration must be one of"):
        tl.run("vpo-offline", "spurious-coverage", calibration="nope", **kw)
    with pytest.raises(V.VPOError, match="eta must be a number >= 0"):
        tl.run("rpo-offline", "spurious-coverage", eta=-0.1, **kw)
    with pytest.raises(V.VPOError, match="R .* must be > 0"):
        tl.run("rpo-offline", "spurious-coverage", R=0.0, **kw)
    with pytest.raises(V.VPOError, match="one-hot features"):
        tl.run("vpo-offline", "kl-bandit", **kw)


def test_pessimism_dropped_mutation_is_the_plain_mle():
    from theorylab.validations.alignment_mutations import pessimism_dropped

    bandit = spurious_coverage(eps=0.01)
    data = _one_spurious_win(bandit)
    with pessimism_dropped():
        mutated = V.vpo_offline(bandit, data, alpha=1.0).policy
    assert np.allclose(mutated, V.vpo_offline(bandit, data, alpha=0.0).policy)


# ------------------------------------------------------------------ XPO
def test_xpo_bonus_is_the_value_term_with_sign_plus():
    """alpha sum_a m_a log pi_r(a), written out, equals -(alpha M / beta)(beta log Z - <m/M, r>)
    up to a constant in r (the reduction xpo_rewards uses)."""
    rng = np.random.default_rng(0)
    ref = rng.dirichlet(np.ones(4))
    m = rng.dirichlet(np.ones(4)) * 0.7
    M, beta, alpha = m.sum(), 0.3, 0.05
    const = alpha * m @ np.log(ref)
    for _ in range(5):
        r = rng.normal(size=4)
        logpi = np.log(ref) + r / beta - logsumexp(r / beta, b=ref)
        bonus = alpha * m @ logpi
        value = -(alpha * M / beta) * (beta * logsumexp(r / beta, b=ref) - (m / M) @ r)
        assert abs(bonus - (value + const)) < 1e-12


def test_online_dpo_stalls_and_xpo_explores():
    prob = "gshf-coverage:S=1,eps=0.00001,gap=4,eta=0.25"
    kw = dict(dataset_size=400, seeds=3, batch=40)
    dpo = tl.run("xpo-bandit", prob, alpha=0.0, **kw).values.ravel()
    ours = tl.run("xpo-bandit", prob, alpha=0.002, **kw).values.ravel()
    assert dpo.min() > 0.9  # the best response (ref mass 1e-5) is never drawn
    assert ours.max() < 0.05


def test_xpo_input_errors():
    kw = dict(dataset_size=20, seeds=1)
    with pytest.raises(V.VPOError, match="batch must be a positive integer, got 0"):
        tl.run("xpo-bandit", "gshf-coverage", batch=0, **kw)
    with pytest.raises(V.VPOError, match="alpha must be a number >= 0"):
        tl.run("xpo-bandit", "gshf-coverage", alpha=-1.0, **kw)
    with pytest.raises(V.VPOError, match="one-hot features"):
        tl.run("xpo-bandit", "kl-bandit", **kw)
