"""The RLHF / DPO dichotomy (seed 000#66): the exact population solutions against answers written
out here (closed forms, symmetry, grid search, a BFGS on the loss over the softmax), the sparse and
dense estimators, the input errors and the two controls."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import log_expit, log_softmax

import theorylab as tl
from theorylab.algorithms.preference import dichotomy as D
from theorylab.mdps.kl_bandit import sample_reference_pairs, sparse_reward
from theorylab.mdps.preference import PreferenceError
from theorylab.validations.dichotomy_mutations import (
    rlhf_kl_anchor_dropped,
    rlhf_sparsity_dropped,
)


def _gibbs(ref, r, beta):
    w = ref * np.exp((r - r.max()) / beta)
    return w / w.sum()


def test_optimal_value_is_the_printed_formula():
    # V*(pi*) = beta log sum_y ref(y) exp(r*(y) / beta), attained by the Gibbs policy
    ref, r, beta = np.array([0.2, 0.5, 0.3]), np.array([1.0, -0.5, 0.25]), 0.4
    closed = beta * math.log(sum(p * math.exp(x / beta) for p, x in zip(ref, r, strict=True)))
    assert abs(D.optimal_value(r, ref, beta) - closed) < 1e-12
    pi = _gibbs(ref, r, beta)
    assert abs(D.regularised_value(pi, r, ref, beta) - closed) < 1e-12


@pytest.mark.parametrize("R,beta", [(0.5, 0.1), (2.0, 0.5), (5.0, 2.0)])
def test_tabular_classes_recover_the_gibbs_policy(R, beta):
    inst = D.misspecified_instance("none", R, beta)
    wins = D.population_wins(inst.mu, inst.r)
    r_hat = D.reward_mle(inst.F, wins)  # all pairs compared: r* up to a constant
    assert np.ptp(r_hat - inst.r) < 1e-7
    star = _gibbs(inst.ref, inst.r, beta)
    assert np.abs(D.best_in_class(inst.r, inst.ref, inst.G, beta) - star).max() < 1e-7
    assert np.abs(D.dpo_policy(inst.ref, inst.G, wins, beta) - star).max() < 1e-7


@pytest.mark.parametrize("R,beta", [(0.5, 0.1), (3.0, 0.2), (10.0, 1.0)])
def test_policy_misspecified_dpo_is_uniform_and_rlhf_the_grid_optimum(R, beta):
    inst = D.misspecified_instance("policy", R, beta)
    o = D.ordering(inst)
    # the DPO loss is even in theta (pairs (1,2) and (2,3) swap, (1,3) is a coin): theta = 0
    assert np.abs(o.pi_dpo - 1 / 3).max() < 1e-8
    ts = np.linspace(-30, 30, 60_001)
    z = np.log(inst.ref)[None] + ts[:, None] * np.array([1.0, 0.0, -1.0])[None]
    lp = z - np.log(np.exp(z).sum(1, keepdims=True))
    p = np.exp(lp)
    vals = p @ inst.r - beta * (p * (lp - np.log(inst.ref))).sum(1)
    assert abs(o.rlhf - vals.max()) < 1e-6 and o.rlhf >= vals.max() - 1e-12
    assert o.rlhf >= o.dpo - 1e-12


def test_reward_misspecified_dpo_wins_and_isomorphic_classes_coincide():
    for R, beta in ((0.5, 2.0), (2.0, 0.5), (5.0, 0.1)):
        o = D.ordering(D.misspecified_instance("reward", R, beta))
        assert abs(o.dpo - o.optimum) < 1e-8 and o.dpo - o.rlhf > 1e-3
        # the one-feature reward MLE, against a 1-D grid over its weight
        inst = D.misspecified_instance("reward", R, beta)
        wins = D.population_wins(inst.mu, inst.r)
        g = inst.F[:, 0]
        ws = np.linspace(-10, 10, 200_001)
        i, j = np.nonzero(wins)
        loss = -(wins[i, j][None] * log_expit(ws[:, None] * (g[i] - g[j])[None])).sum(1)
        w = ws[np.argmin(loss)]
        assert np.abs(D.reward_mle(inst.F, wins) - w * g).max() < 1e-3
        iso = D.ordering(D.misspecified_instance("isomorphic", R, beta))
        assert abs(iso.rlhf - iso.dpo) < 1e-7
        assert np.abs(iso.pi_rlhf - iso.pi_dpo).max() < 1e-6


def test_ridge_logistic_against_bfgs_and_dpo_is_the_dense_mle():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((80, 6))
    lam, s = 0.05, 0.7

    def f(t):
        return float(-log_expit(s * (x @ t)).mean()) + lam * float(t @ t) / 2

    ref = minimize(f, np.zeros(6), method="BFGS", options={"gtol": 1e-10}).x
    assert np.abs(D.ridge_logistic(x, lam, scale=s) - ref).max() < 1e-5
    bandit = sparse_reward(A=24, d=12, eta=0.5)
    data = sample_reference_pairs(bandit, 60, seeds=2, seed=1)
    res = D.dpo_loglinear(bandit, data, wd=1.0)
    sign = np.where(data.y == 1, 1.0, -1.0)[..., None]
    xs = data.differences(bandit) * sign
    for b in range(2):
        # beta theta_DPO = the ridge BTL MLE with weight wd / (n beta^2)
        dense = D.ridge_logistic(xs[b], 1.0 / (60 * 0.25))
        assert np.abs(res.theta[b] - dense).max() < 1e-6
        # and the policy is the DPO loss minimised over the softmax, written out
        win = np.where(data.y[b] == 1, data.a1[b], data.a0[b])
        lose = np.where(data.y[b] == 1, data.a0[b], data.a1[b])
        phi, r0 = bandit.phi[0], np.log(bandit.ref[0])

        def loss(t, win=win, lose=lose, phi=phi, r0=r0):
            h = log_softmax(r0 + phi @ t) - r0
            return float(-log_expit(0.5 * (h[win] - h[lose])).mean()) + float(t @ t) / 120

        t = minimize(loss, np.zeros(12), method="BFGS", options={"gtol": 1e-10}).x
        assert np.abs(np.exp(log_softmax(r0 + phi @ t)) - res.policy[b, 0]).max() < 1e-5


def test_sparse_reward_instance_and_support_recovery():
    b = sparse_reward(A=64, d=32, k=2, norm=2.0)
    assert np.count_nonzero(b.theta) == 2 and abs(np.linalg.norm(b.theta) - 2.0) < 1e-12
    data = sample_reference_pairs(b, 2000, seeds=1, seed=0)
    res = D.rlhf_sparse(b, data, c=1.0)
    assert set(np.flatnonzero(res.theta[0])) == set(np.flatnonzero(b.theta))
    assert np.abs(res.theta[0] - b.theta).max() < 0.3


def test_runs_through_tl_run():
    r = tl.run(
        "rlhf-sparse",
        "sparse-reward:A=32,d=16,eta=1",
        dataset_size=[400],
        design="reference",
        seeds=2,
    )
    d = tl.run(
        "dpo-loglinear",
        "sparse-reward:A=32,d=16,eta=1",
        dataset_size=[400],
        design="reference",
        seeds=2,
    )
    assert r.values.shape == (2, 1) and d.values.shape == (2, 1)
    assert (r.values >= -1e-12).all() and (d.values >= -1e-12).all()


def test_input_errors():
    with pytest.raises(D.DichotomyError, match="misspecification must be one of"):
        D.misspecified_instance("policies")
    with pytest.raises(D.DichotomyError, match="beta"):
        D.misspecified_instance("none", beta=0.0)
    with pytest.raises(PreferenceError, match="k \\(non-zeros"):
        sparse_reward(k=3)
    with pytest.raises(D.DichotomyError, match="ref must be"):
        D.best_in_class(np.zeros(3), np.array([0.5, 0.5, 0.0]), np.eye(3), 1.0)
    b = sparse_reward(A=8, d=4)
    data = sample_reference_pairs(b, 10, seeds=1)
    with pytest.raises(D.DichotomyError, match="wd"):
        D.dpo_loglinear(b, data, wd=0.0)
    with pytest.raises(D.DichotomyError, match="c \\(the l1"):
        D.rlhf_sparse(b, data, c=-1.0)
    with pytest.raises(D.DichotomyError, match="needs a KL bandit"):
        D.rlhf_sparse(object(), data)


def test_controls_break_the_claims():
    inst = D.misspecified_instance("none", 2.0, 0.5)
    with rlhf_kl_anchor_dropped():
        o = D.ordering(inst)
    assert o.optimum - o.rlhf > 0.05  # the unanchored policy step leaves V*(pi*) behind
    b = sparse_reward(A=32, d=16)
    data = sample_reference_pairs(b, 100, seeds=1, seed=0)
    with rlhf_sparsity_dropped():
        dense = D.rlhf_sparse(b, data).theta[0]
    assert np.count_nonzero(np.abs(dense) > 1e-8) == 16
    assert np.count_nonzero(D.rlhf_sparse(b, data).theta[0]) < 16


# ------------------------------------------------------------------ IPL (000#21)
def _ipl_mdp(spec="random:S=4,A=2,gamma=0.9,seed=0"):
    from theorylab.mdps import make
    from theorylab.runners.problems import discounted_problem

    return discounted_problem(make(spec), "ipl")


def test_inverse_bellman_inverts_soft_value_iteration():
    from theorylab.algorithms.planning.soft_value_iteration import soft_value_iteration
    from theorylab.algorithms.preference import ipl as I

    mdp = _ipl_mdp()
    for tau in (0.1, 0.5, 2.0):
        star = soft_value_iteration(mdp, tau)
        # r_Q* = r for the soft-optimal Q* (written out: Q - gamma P [tau log mean exp(Q / tau)])
        V = tau * np.log(np.mean(np.exp(star.Q / tau), axis=1))
        r = star.Q - mdp.gamma * np.einsum("sat,t->sa", mdp.P, V)
        assert np.abs(r - mdp.reward(0)).max() < 1e-9
        assert np.abs(I.implied_reward(star.Q, mdp.P, mdp.gamma, tau) - r).max() < 1e-12


def test_ipl_fit_recovers_the_soft_optimum_and_segments_are_a_distribution():
    from theorylab.algorithms.planning.soft_value_iteration import soft_value_iteration
    from theorylab.algorithms.preference import ipl as I

    mdp = _ipl_mdp("random:S=3,A=3,gamma=0.8,seed=1")
    M, w = I.segments(mdp, 2)
    assert abs(w.sum() - 1) < 1e-12 and (M.sum(1) == 2).all() and (M.sum(0) > 0).all()
    Q, _, val, floor = I.fit_ipl(mdp, 0.3, 2)
    assert val - floor < 1e-9
    assert np.ptp(I.implied_reward(Q, mdp.P, mdp.gamma, 0.3) - mdp.reward(0)) < 1e-5
    pi = I.soft_values(Q, 0.3)[1]
    assert np.abs(pi - soft_value_iteration(mdp, 0.3).policy).max() < 1e-6
    res = tl.run("ipl", "random:S=3,A=3,gamma=0.8,seed=1", iterations=40, tau=0.3)
    assert res.target_gap[-1] < 1e-10 and res.target_gap[0] > 1e-3


def test_ipl_gradient_against_finite_differences():
    from theorylab.algorithms.preference import ipl as I

    mdp = _ipl_mdp()
    M, w = I.segments(mdp, 1)
    Rs = M @ mdp.reward(0).reshape(-1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(M.shape[0])
    val, grad = I.preference_loss(x, Rs, w)
    for k in range(5):
        e = np.zeros_like(x)
        e[k] = 1e-6
        fd = (I.preference_loss(x + e, Rs, w)[0] - I.preference_loss(x - e, Rs, w)[0]) / 2e-6
        assert abs(fd - grad[k]) < 1e-7


def test_ipl_input_errors_and_control():
    from theorylab.algorithms.planning.soft_value_iteration import soft_value_iteration
    from theorylab.algorithms.preference import ipl as I
    from theorylab.validations.dichotomy_mutations import ipl_bellman_term_dropped

    mdp = _ipl_mdp()
    with pytest.raises(I.IPLError, match="tau"):
        I.fit_ipl(mdp, 0.0)
    with pytest.raises(I.IPLError, match="segment_length"):
        I.fit_ipl(mdp, 0.5, L=4)
    with ipl_bellman_term_dropped():
        Q, *_ = I.fit_ipl(mdp, 0.5, 2)
    assert np.abs(I.soft_values(Q, 0.5)[1] - soft_value_iteration(mdp, 0.5).policy).max() > 1e-2
