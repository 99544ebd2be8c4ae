"""LinUCB / OFUL, LMC-LSVI and Rep-UCB (with its MLE oracle).

* LinUCB: V^{-1} by Sherman-Morrison equals the inverse of lambda I + sum x x^T, log det by the
  determinant lemma equals slogdet, the radius is Theorem 2's formula, the index is the argmax of
  <theta_hat, x> + sqrt(beta) ||x||_{V^-1}; the sqrt(T) claim passes at quick scale.
* LMC-LSVI: the closed-form law of J Langevin steps equals the literal noisy gradient loop
  (exactly without noise, in mean and covariance with noise); with n_samples = M the Q is the max
  of M chains.
* MLE: EM never decreases the likelihood, recovers mu* from many samples of the true model, and
  picks the true map; Rep-UCB's claim passes at quick scale.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.linear.mle import check_simplex_class, em_steps
from theorylab.algorithms.online.linucb import LinUCB, oful_radius
from theorylab.algorithms.online.lmc_lsvi import LMCLSVI, langevin_chain_law
from theorylab.experiment import env_spec
from theorylab.mdps import make
from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators
from theorylab.validations import validate


def make_agent(cls, mdp, B, **params):
    return cls(env_spec(mdp), B, generators(0, range(B), AGENT_STREAM), **params)


# ------------------------------------------------------------------ LinUCB / OFUL
def test_linucb_statistics_and_index():
    mdp = make("linear-bandit:d=4,A=12,seed=1")
    B, T, lam = 3, 60, 1.5
    agent = make_agent(LinUCB, mdp, B, features=mdp.phi, lam=lam, delta=0.05)
    env_rngs = generators(0, range(B), ENV_STREAM)
    X, R = [], []
    for _ in range(T):
        traj = mdp.rollout(agent.policy(), rng=env_rngs)
        X.append(mdp.arms[traj.actions[:, 0]])
        R.append(traj.rewards[:, 0])
        agent.update(traj)
    X, R = np.stack(X, 1), np.stack(R, 1)  # (B, T, d), (B, T)
    V = lam * np.eye(4) + np.swapaxes(X, 1, 2) @ X  # (B, d, d)
    np.testing.assert_allclose(agent.V_inv, np.linalg.inv(V), atol=1e-12)
    logdet = np.linalg.slogdet(V)[1] - 4 * math.log(lam)
    np.testing.assert_allclose(agent.logdet_ratio, logdet, atol=1e-10)
    theta_hat = np.linalg.solve(V, np.einsum("btd,bt->bd", X, R)[..., None])[..., 0]
    np.testing.assert_allclose(agent.theta_hat, theta_hat, atol=1e-10)
    radius = 0.5 * np.sqrt(2 * (0.5 * logdet + math.log(1 / 0.05))) + math.sqrt(lam) * 1.0
    np.testing.assert_allclose(agent.radius, radius, atol=1e-10)
    np.testing.assert_allclose(
        oful_radius(logdet, noise=0.5, delta=0.05, lam=lam, theta_norm=1.0), radius
    )
    width = np.sqrt(np.einsum("ad,bde,ae->ba", mdp.arms, np.linalg.inv(V), mdp.arms))
    ucb = theta_hat @ mdp.arms.T + radius[:, None] * width  # (B, A)
    np.testing.assert_allclose(agent.ucb[:, 0], ucb, atol=1e-10)
    np.testing.assert_array_equal(agent.policy()[:, 0, 0], ucb.argmax(axis=1))


def test_linucb_needs_a_bandit():
    with pytest.raises(ValueError, match="needs H = 1"):
        tl.run("linucb", make("linear-simplex"), 2, 1)


def test_linucb_claim_quick():
    # the claim's power (its negative controls) is tested in tests/test_validations.py
    report = validate("linucb-sqrt-t", "quick", controls=False)
    assert report.verdict in ("PASS", "VACUOUS", "SMOKE"), report.format()


# ------------------------------------------------------------------ LMC-LSVI
def _random_problem(seed=0, B=2, d=3, M=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(B, 20, d))
    Lam = np.swapaxes(X, 1, 2) @ X + np.eye(d)  # (B, d, d)
    b = rng.normal(size=(B, d))
    w0 = rng.normal(size=(B, M, d))
    return Lam, b, w0


def _literal(Lam, b, w0, J, inv_beta, noise):
    eta = 1 / (4 * np.linalg.eigvalsh(Lam)[:, -1])  # (B,)
    w = w0.copy()
    for j in range(J):
        grad = 2 * (w @ Lam - b[:, None, :])
        w = w - eta[:, None, None] * grad + np.sqrt(2 * eta * inv_beta)[:, None, None] * noise[j]
    return w


def test_langevin_law_equals_literal_loop_without_noise():
    Lam, b, w0 = _random_problem()
    J = 37
    U, mean, std = langevin_chain_law(Lam, b, w0, J=np.full(2, float(J)), inv_beta=0.0)
    w = np.matmul(mean, np.swapaxes(U, -1, -2))
    np.testing.assert_allclose(w, _literal(Lam, b, w0, J, 0.0, np.zeros((J, 2, 2, 3))), atol=1e-12)
    assert np.all(std == 0)
    # many steps: the ridge solution Lam^{-1} b
    U, mean, _ = langevin_chain_law(Lam, b, w0, J=np.full(2, 1e7), inv_beta=0.0)
    np.testing.assert_allclose(
        np.matmul(mean, np.swapaxes(U, -1, -2)),
        np.broadcast_to(np.linalg.solve(Lam, b[..., None])[..., 0][:, None], w0.shape),
        atol=1e-9,
    )


def test_langevin_law_moments_match_the_literal_loop():
    Lam, b, w0 = _random_problem(B=1, M=1)
    J, inv_beta, n = 15, 0.7, 40000
    rng = np.random.default_rng(1)
    reps = _literal(
        np.broadcast_to(Lam, (n, 3, 3)),
        np.broadcast_to(b, (n, 3)),
        np.broadcast_to(w0, (n, 1, 3)),
        J,
        inv_beta,
        rng.standard_normal((J, n, 1, 3)),
    )[:, 0]  # (n, d): n independent runs of the chain
    U, mean, std = langevin_chain_law(Lam, b, w0, J=np.array([float(J)]), inv_beta=inv_beta)
    m = U[0] @ mean[0, 0]  # exact mean
    cov = U[0] @ np.diag(std[0] ** 2) @ U[0].T  # exact covariance
    se = np.sqrt(np.diag(cov) / n)
    assert np.all(np.abs(reps.mean(0) - m) < 5 * se)
    np.testing.assert_allclose(np.cov(reps.T), cov, rtol=0.05, atol=0.02 * np.abs(cov).max())


def test_lmc_agent_modes_and_multisampling():
    mdp = make("linear-simplex:S=5,A=3,d=3,H=4,rewards=cube")
    a = make_agent(LMCLSVI, mdp, 2, episodes=20, features=mdp.phi, c=0.3, n_samples=3)
    env_rngs = generators(0, range(2), ENV_STREAM)
    for _ in range(5):
        a.update(mdp.rollout(a.policy(), rng=env_rngs))
    # Q is the max over the M chains, truncated at H - h
    h = 1
    scores = np.matmul(a.phi_flat, np.swapaxes(a.chains[:, h], -1, -2)).max(-1)  # (B, SA)
    np.testing.assert_allclose(
        a.Q[:, h].reshape(2, -1), np.minimum(scores, mdp.horizon - h), atol=1e-12
    )
    assert a.Q[:, -1].max() <= 1.0
    lit = make_agent(LMCLSVI, mdp, 1, episodes=20, features=mdp.phi, n_steps=5, exact_chain=False)
    assert lit.Q.shape == (1, 4, 5, 3)
    with pytest.raises(ValueError, match="needs n_steps > 0"):
        make_agent(LMCLSVI, mdp, 1, episodes=5, exact_chain=False)


def test_lmc_theory_steps():
    mdp = make("linear-simplex:S=5,A=3,d=3,H=4,rewards=cube")
    a = make_agent(LMCLSVI, mdp, 1, episodes=100, features=mdp.phi)
    Lam = np.diag([1.0, 2.0, 8.0])[None]
    assert a.steps(Lam)[0] == math.ceil(2 * 8 * math.log(4 * 4 * 100 * 3))


# ------------------------------------------------------------------ MLE and Rep-UCB
def _counts_from_model(P, n, rng):
    """(1, H, SA, S) multinomial counts of n samples per (h, s, a) from P (H, SA, S)."""
    H, SA, S = P.shape
    C = np.stack([[rng.multinomial(n, P[h, i]) for i in range(SA)] for h in range(H)])
    return C[None].astype(float)


def test_em_is_monotone_and_recovers_mu():
    m = make("lowrank-simplex:S=6,A=3,d=2,H=2,seed=3")
    truth = m.reveal()
    S, A, d = 6, 3, 2
    Phi = m.candidates.reshape(m.n_candidates, S * A, d)
    P = np.broadcast_to(m.dense_P(), (2, S, A, S)).reshape(2, S * A, S)
    C = _counts_from_model(P, 2000, np.random.default_rng(0))
    mu = np.full((1, 2, m.n_candidates, d, S), 1 / S)
    lls = []
    for _ in range(30):
        mu, ll = em_steps(Phi, mu, C, 5)
        lls.append(ll)
    lls = np.array(lls)  # (iters, 1, H, M)
    assert np.all(np.diff(lls, axis=0) >= -1e-7)  # EM never decreases the likelihood
    assert lls[-1, 0].sum(0).argmax() == truth.index  # the MLE picks the true map
    np.testing.assert_allclose(mu[0, :, truth.index], truth.mu, atol=0.05)


def test_simplex_class_is_required():
    bad = np.zeros((2, 3, 2, 2))
    bad[..., 0] = 1.0
    bad[1, 2, 1] = [0.5, 0.6]
    with pytest.raises(ValueError, match=r"candidate 1 at \(s=2, a=1\) sums to 1.1"):
        check_simplex_class(bad)
    m = make("linear-simplex:S=3,A=2,d=2,H=2")
    with pytest.raises(ValueError, match="needs feature_class"):
        tl.run("rep-ucb", m, 2, 1)


def test_rep_ucb_claim_quick():
    # the claim's power (its negative controls) is tested in tests/test_validations.py
    report = validate("rep-ucb-recovers-features", "quick", controls=False)
    assert report.verdict in ("PASS", "VACUOUS", "SMOKE"), report.format()
