"""Issue 29's preference-alignment rows: the KL bandit and its Gibbs policy, GSHF (offline,
iterative, rejection sampling), HyPO's exact minimisers and DNO's regression step, each against
an answer computed here by other means; the input errors; the controls."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import log_expit

import theorylab as tl
from theorylab.algorithms.preference import dno as D
from theorylab.algorithms.preference import gshf as G
from theorylab.algorithms.preference import hypo as H
from theorylab.mdps import make
from theorylab.mdps.kl_bandit import KLBandit, gshf_coverage, sample_reference_pairs
from theorylab.mdps.preference import PreferenceError, sample_pairwise


def _rand_policy(rng, S, A):
    p = rng.random((S, A)) + 0.01
    return p / p.sum(-1, keepdims=True)


# ------------------------------------------------------------------ the KL bandit
def test_kl_value_identity_and_gibbs_optimality():
    b = make("kl-bandit:eta=0.3")
    rng = np.random.default_rng(0)
    star = b.optimal_policy()
    w = b.ref * np.exp(b.rewards / b.eta)
    assert np.allclose(star, w / w.sum(-1, keepdims=True), atol=1e-14)
    assert abs(b.value(star) - b.optimal_value()) < 1e-12
    for _ in range(20):
        pi = _rand_policy(rng, b.S, b.A)
        # J(pi*) - J(pi) = eta E_rho KL(pi || pi*), written out
        kl = (pi * np.log(pi / star)).sum(-1)
        assert abs(b.suboptimality(pi) - b.eta * b.rho @ kl) < 1e-12
        assert b.suboptimality(pi) > 0


def test_kl_bandit_input_errors():
    b = make("kl-bandit")
    with pytest.raises(PreferenceError, match="ref must have shape"):
        KLBandit(b.phi, b.rho, b.theta, b.B, "x", np.ones((1, 2)), 0.5)
    with pytest.raises(PreferenceError, match="eta"):
        KLBandit(b.phi, b.rho, b.theta, b.B, "x", b.ref, -1.0)
    with pytest.raises(PreferenceError, match="full-support"):
        KLBandit(b.phi, b.rho, b.theta, b.B, "x", np.eye(b.A)[: b.S], 0.5)
    with pytest.raises(PreferenceError, match="eps"):
        gshf_coverage(eps=1.5)


def test_reference_pairs_follow_the_reference_policy():
    b = gshf_coverage(eps=0.2)
    d = sample_reference_pairs(b, 20000, seeds=1, seed=3)
    freq = np.bincount(d.a0[0], minlength=b.A) / d.n
    assert np.abs(freq - b.ref[0]).max() < 0.02
    assert d.queries[0] == 20000


# ------------------------------------------------------------------ GSHF
def test_offline_dpo_is_the_gibbs_policy_of_the_mle():
    """DPO over log-linear policies pi_w ∝ ref exp(<w, phi> / eta), w in the instance's parameter
    set {1^T w = 0} (the ball not binding here), minimised directly (scipy) against gshf-offline
    with C = 0 (the Gibbs policy of the constrained BTL MLE)."""
    b = make("kl-bandit:eta=0.5,B=3")
    data = sample_pairwise(b, 2000, seeds=1, seed=1)
    res = G.gshf_offline(b, data, C=0.0)
    X = data.differences(b)[0]
    y = data.y[0]

    def dpo(w):
        # eta (log pi_w(a1)/ref(a1) - log pi_w(a0)/ref(a0)) = <w, phi(a1) - phi(a0)>
        z = X @ w
        return -float(np.sum(y * log_expit(z) + (1 - y) * log_expit(-z)))

    Q = np.linalg.svd(np.eye(b.d) - 1.0 / b.d)[0][:, : b.d - 1]  # a basis of {1^T w = 0}
    u = minimize(lambda v: dpo(Q @ v), np.zeros(b.d - 1), method="BFGS", options={"gtol": 1e-10})
    w = Q @ u.x
    assert np.linalg.norm(w) < b.B
    logits = np.log(b.ref) + (b.phi @ w) / b.eta
    pi = np.exp(logits - logits.max(-1, keepdims=True))
    pi /= pi.sum(-1, keepdims=True)
    assert np.abs(pi - res.policy[0]).max() < 1e-5


def test_pessimistic_program_reduces_to_gibbs_at_zero_radius():
    b = make("kl-bandit:eta=0.5")
    theta = np.random.default_rng(2).normal(size=b.d)
    M = np.eye(b.d)
    p = G.kl_pessimistic_policy(b, theta, M, 1e-9)  # the cvxpy path
    assert np.abs(p - b.gibbs(b.phi @ theta)).max() < 1e-5


def test_gshf_offline_bound_is_the_printed_formula():
    """2 C sqrt((d + log(1/delta)) / (gamma^2 n) + lambda B^2) ||E phi(pi*) - nu||_{M^-1},
    gamma = 1 / (2 + e^{-LB} + e^{LB}), written out here."""
    b = make("kl-bandit:eta=0.2")
    n, delta, lam = 3000, 0.1, 1e-3
    data = sample_pairwise(b, n, seeds=2, seed=4)
    res = G.gshf_offline(b, data, delta=delta, lam=lam)
    L = float(np.linalg.norm(b.phi, axis=-1).max())
    gamma = 1.0 / (2.0 + math.exp(-L * b.B) + math.exp(L * b.B))
    f = math.sqrt((b.d + math.log(1 / delta)) / (gamma**2 * n) + lam * b.B**2)
    star = b.ref * np.exp(b.rewards / b.eta)
    star /= star.sum(-1, keepdims=True)
    u = np.einsum("s,sa,sad->d", b.rho, star - b.ref, b.phi)
    X = data.differences(b)
    for k in range(2):
        M = X[k].T @ X[k] / n + lam * np.eye(b.d)
        assert abs(res.bound[k] - 2 * f * math.sqrt(u @ np.linalg.solve(M, u))) < 1e-12


def test_gshf_iterative_spends_its_budget_and_beats_offline_dpo():
    kw = dict(dataset_size=[600], design="reference", seeds=4, seed=0)
    on = tl.run("gshf-iterative", "gshf-coverage", batch=100, **kw)
    off = tl.run("gshf-offline", "gshf-coverage", C=0.0, **kw)
    assert (on.queries[:, 0] == 600).all()
    assert on.values.mean() < off.values.mean()


def test_gshf_input_errors():
    b = make("kl-bandit")
    data = sample_pairwise(b, 10, seeds=1)
    with pytest.raises(G.GSHFError, match="batch"):
        G.gshf_iterative(b, data, oracle=object(), batch=0)
    with pytest.raises(G.GSHFError, match="offline_fraction"):
        G.gshf_iterative(b, data, oracle=object(), offline_fraction=2.0)
    with pytest.raises(G.GSHFError, match="needs the runner's oracle"):
        G.gshf_iterative(b, data)
    with pytest.raises(G.GSHFError, match="KL-regularised comparison bandit"):
        G.gshf_offline(make("zjj-thm39"), data)
    with pytest.raises(ValueError, match="design='reference'"):
        tl.run("greedy-mle", "zjj-thm39", dataset_size=[10], design="reference")


def test_rejection_sampling_law_matches_monte_carlo_and_tends_to_gibbs():
    ref = np.array([0.5, 0.3, 0.15, 0.05])
    r = np.array([0.0, 0.4, 0.9, 1.5])
    eta = 0.4
    gibbs = ref * np.exp(r / eta) / (ref * np.exp(r / eta)).sum()
    acc = np.exp((r - r.max()) / eta)
    p = ref @ acc
    # M = 1: accepted -> the draw, rejected -> the same draw: the law is ref
    assert np.allclose(G.rejection_sampling_law(ref, r, eta, 1), ref, atol=1e-15)
    q = G.rejection_sampling_law(ref, r, eta, 6)
    rng = np.random.default_rng(5)
    out = G.rejection_sample(ref, r, eta, 6, 400_000, rng)
    freq = np.bincount(out, minlength=4) / out.size
    assert np.all(np.abs(freq - q) < 4.5 * np.sqrt(q * (1 - q) / out.size))
    tv = [G.total_variation(G.rejection_sampling_law(ref, r, eta, m), gibbs) for m in (5, 10)]
    assert abs(tv[1] / tv[0] - (1 - p) ** 5) < 1e-9  # geometric in M


# ------------------------------------------------------------------ HyPO
def test_hypo_population_minimisers():
    ref = np.array([0.3, 0.3, 0.4])
    r = np.array([1.0, 0.5, 0.0])
    beta = 0.5
    full = H.population_wins(np.triu(np.ones((3, 3)), 1), r)
    gibbs = ref * np.exp(r / beta) / (ref * np.exp(r / beta)).sum()
    assert np.abs(H.hypo_minimiser(ref, full, beta, 0.0) - gibbs).max() < 1e-8
    mu = np.zeros((3, 3))
    mu[0, 1] = 1.0
    part = H.population_wins(mu, r)
    covered = np.array([True, True, False])
    vals = [
        H.dpo_loss(np.log(H.dpo_minimiser_family(ref, r, covered, beta, t) / ref), part, beta)
        for t in (0.1, 0.5, 0.9)
    ]
    assert np.ptp(vals) < 1e-12  # the whole family attains the DPO minimum
    assert H.rlhf_kl_sup(ref, r, covered, beta, R=1.0) <= 1.0 / beta
    # HyPO's minimiser keeps the unseen response at ref's relative mass (one response: any)
    ph = H.hypo_minimiser(ref, part, beta, 0.3)
    x = ph[0] / (ph[0] + ph[1])
    kc = x * np.log(x / 0.5) + (1 - x) * np.log((1 - x) / 0.5)
    m = 0.6 * np.exp(-kc) / (0.6 * np.exp(-kc) + 0.4)
    assert abs(ph[2] - (1 - m)) < 1e-7


def test_hypo_input_errors():
    b = make("kl-bandit")
    data = sample_pairwise(b, 10, seeds=1)
    with pytest.raises(H.HyPOError, match="one-hot features"):
        H.hypo(b, data)
    g = gshf_coverage()
    with pytest.raises(H.HyPOError, match="lam"):
        H.hypo(g, sample_pairwise(g, 10, seeds=1), lam=-1.0)


# ------------------------------------------------------------------ DNO
def test_dno_step_is_the_closed_form_and_improves_monotonically():
    rng = np.random.default_rng(7)
    for _ in range(10):
        N = 5
        M = rng.random((N, N)) - 0.5
        P = 0.5 + (M - M.T) / 2
        pi = rng.dirichlet(np.ones(N))
        eta = rng.uniform(0.5, 5.0)
        r = P @ pi
        nxt = D.dno_step(pi, r, eta)
        w = pi * np.exp(r / eta)
        assert np.abs(nxt - w / w.sum()).max() < 1e-12
        assert nxt @ P @ pi >= 0.5 - 1e-12


def test_dno_input_errors():
    with pytest.raises(ValueError, match="eta"):
        tl.run("dno", "cyclic-preferences", iterations=5, eta=0.0)
    with pytest.raises(ValueError, match="m \\(comparisons"):
        tl.run("dno", "cyclic-preferences", iterations=5, m=-1)


def test_dno_sampled_counts_queries():
    res = tl.run("dno", "cyclic-preferences", iterations=10, m=5, seeds=2)
    assert (res.queries[:, -1] == 4 * 5 * 10).all()


# ------------------------------------------------------------------ MaxMin-RLHF
def test_maxmin_dual_equals_the_cvxpy_primal_and_k1_is_rlhf():
    from theorylab.algorithms.preference import maxmin as MM
    from theorylab.mdps.kl_bandit import sample_group_pairs

    b = make("maxmin-groups:eta=0.5,minority=0.3")
    p, v = MM.maxmin_primal(b.ref, b.rho, b.group_rewards, b.eta)
    assert abs(b.optimal_value() - v) < 1e-6
    assert np.abs(b.optimal_policy() - p).max() < 1e-5
    u = b.utilities(b.optimal_policy())
    assert abs(u[0] - u[1]) < 1e-6  # both groups bind at the max-min policy here
    data = sample_group_pairs(b, 600, seeds=2, seed=1)
    one = MM.maxmin_rlhf(b, data, K=1)
    dpo = G.gshf_offline(b, data, C=0.0)
    assert np.abs(one.policy - dpo.policy).max() < 1e-12


def test_maxmin_input_errors():
    from theorylab.algorithms.preference import maxmin as MM
    from theorylab.mdps.kl_bandit import GroupKLBandit

    b = make("maxmin-groups")
    with pytest.raises(MM.MaxMinError, match="design='groups'"):
        MM.maxmin_rlhf(b, sample_pairwise(b, 20, seeds=1))
    with pytest.raises(MM.MaxMinError, match="group bandit"):
        MM.maxmin_rlhf(make("kl-bandit"), sample_pairwise(make("kl-bandit"), 20, seeds=1))
    with pytest.raises(PreferenceError, match="weights"):
        GroupKLBandit(
            b.phi, b.rho, b.theta, b.B, "x", b.ref, 0.3, b.group_thetas, np.array([0.5, 0.6]), 10
        )
    with pytest.raises(ValueError, match="design='groups'"):
        tl.run("maxmin-rlhf", "kl-bandit", dataset_size=[20], design="groups")


# ------------------------------------------------------------------ RLHS
def test_rlhs_ratings_and_true_value():
    from theorylab.mdps.kl_bandit import rlhs_ratings

    u, f = rlhs_ratings(0.4)
    # honest / praise / hedge on a good item; the same on a bad one (hedge: the user doesn't buy)
    assert u.tolist() == [[1.0, 1.0, 0.0], [0.0, -1.0, 0.0]]
    assert f.tolist() == [[1.0, 1.0, 0.0], [0.0, 1.0, 0.0]]
    b = make("rlhs:feedback=foresight")
    star = b.ref * np.exp(b.true_rewards / b.eta)
    star /= star.sum(-1, keepdims=True)
    pi = _rand_policy(np.random.default_rng(3), 2, 3)
    assert abs(b.suboptimality(pi) - b.eta * b.rho @ (pi * np.log(pi / star)).sum(-1)) < 1e-12
    # the data follow the foresight rating: praise of a bad item is its best message
    assert int(np.argmax(b.rewards[1])) == 1


def test_rlhs_input_errors():
    from theorylab.algorithms.preference import rlhs as R

    b = make("rlhs")
    data = sample_pairwise(b, 10, seeds=1)
    with pytest.raises(G.GSHFError, match="accuracy"):
        R.rlhs(b, data, oracle=object(), accuracy=1.5)
    with pytest.raises(G.GSHFError, match="hindsight problem"):
        R.rlhs(make("kl-bandit"), data, oracle=object())
    with pytest.raises(PreferenceError, match="feedback must be one of"):
        b.feedback_theta("oracle")
