"""Linear-model bonuses, radii and temperatures pinned to the papers' formulas, written out here
(issue 26).

Each expected value is computed in this file (Gram matrices from the trajectories, the log terms,
the constants) from the formula in the comment next to it, never from a library constant; the
public path the algorithm plans with is compared: LSVI-UCB's ``bonus(h)`` and the beta its
compiled loop plans with, LinUCB's ``radius()`` and the compiled kernel's UCB (``_ucbs``),
LMC-LSVI's Langevin chain law (step size, number of steps, inverse temperature), Rep-UCB's bonus
scale. Tags as in the modules' docstrings: [V] read in the paper, [M] this library's construction
where the paper gives only an order (stated, so that a change is seen).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from theorylab.experiment import env_spec
from theorylab.mdps import make
from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators

K, DELTA = 50, 0.1


def agent_on(cls, mdp, B=2, episodes=K, **params):
    if episodes is not None:
        params["episodes"] = episodes
    return cls(env_spec(mdp), B, generators(0, range(B), AGENT_STREAM), **params)


def feed(agent, mdp, episodes=8):
    rng = np.random.default_rng(11)
    env_rngs = generators(0, range(agent.n_seeds), ENV_STREAM)
    trajs = []
    for _ in range(episodes):
        pol = rng.integers(mdp.A, size=(agent.n_seeds, mdp.horizon, mdp.S))
        traj = mdp.rollout(pol, rng=env_rngs)
        agent.update(traj)
        trajs.append(traj)
    return trajs


def grams(trajs, phi, lam, H):
    """Lambda_h = sum_tau phi(s^tau_h, a^tau_h) phi^T + lambda I per seed and step: (B, H, d, d)."""
    B, d = trajs[0].states.shape[0], phi.shape[-1]
    G = np.broadcast_to(lam * np.eye(d), (B, H, d, d)).copy()
    for tr in trajs:
        for b in range(B):
            for h in range(H):
                x = phi[tr.states[b, h], tr.actions[b, h]]
                G[b, h] += np.outer(x, x)
    return G


# --------------------------------------------------------------------------------- LSVI-UCB
@pytest.mark.parametrize("features", ["one-hot", "random"])
@pytest.mark.parametrize("c", [1.0, 0.3])
def test_lsvi_ucb_bonus_is_jin2020(features, c):
    from theorylab.algorithms.online.lsvi_ucb import LSVIUCB
    from theorylab.algorithms.online.whole_run import make_compiled_loop

    mdp = make("riverswim:S=3,H=3")
    S, A, H = mdp.S, mdp.A, mdp.horizon
    phi = (
        np.eye(S * A).reshape(S, A, S * A)
        if features == "one-hot"
        else np.random.default_rng(2).uniform(size=(S, A, 3)) / 2.0  # ||phi|| <= 1
    )
    agent = agent_on(LSVIUCB, mdp, c=c, delta=DELTA, features=phi)
    trajs = feed(agent, mdp)
    d = phi.shape[-1]
    # Jin, Yang, Wang, Jordan 2020, Theorem 3.1: beta = c d H sqrt(iota), iota = log(2 d T / p),
    # T = K H; Algorithm 1: bonus beta (phi^T Lambda_h^{-1} phi)^{1/2}, lambda = 1
    beta = c * d * H * math.sqrt(math.log(2 * d * K * H / DELTA))
    G = grams(trajs, phi, 1.0, H)
    for h in range(H):
        width = np.sqrt(np.einsum("sai,bij,saj->bsa", phi, np.linalg.inv(G[:, h]), phi))
        np.testing.assert_allclose(agent.bonus(h), beta * width.reshape(2, -1), rtol=1e-9)
    loop = make_compiled_loop(agent_on(LSVIUCB, mdp, c=c, features=phi), mdp, 0.0, [None] * 2)
    assert loop.beta == pytest.approx(beta, rel=1e-12)  # the beta the compiled plan multiplies


# --------------------------------------------------------------------------------- LinUCB
def oful_sqrt_beta(G, lam, delta, R, S_norm):
    # Abbasi-Yadkori, Pal, Szepesvari 2011, Theorem 2:
    # sqrt(beta_t) = R sqrt(2 log(det(V_t)^{1/2} det(lambda I)^{-1/2} / delta)) + lambda^{1/2} S
    d = G.shape[-1]
    logdet = np.linalg.slogdet(G)[1]
    return R * np.sqrt(2 * np.log(np.exp(0.5 * logdet - 0.5 * d * math.log(lam)) / delta)) + (
        math.sqrt(lam) * S_norm
    )


@pytest.mark.parametrize("path", ["python", "kernel"])
@pytest.mark.parametrize(("lam", "noise", "theta_norm"), [(1.0, 0.5, 1.0), (2.0, 0.3, 0.7)])
def test_linucb_radius_is_oful(path, lam, noise, theta_norm):
    from theorylab.algorithms.online.linucb import LinUCB
    from theorylab.algorithms.online.whole_run import make_compiled_loop
    from theorylab.algorithms.online.whole_run_linucb import _ucbs

    mdp = make("linear-bandit:d=4,A=12,seed=1")
    params = dict(delta=DELTA, lam=lam, noise=noise, theta_norm=theta_norm, episodes=None)
    agent = agent_on(LinUCB, mdp, **params)
    trajs = feed(agent, mdp, episodes=10)
    phi = agent.phi  # the features are the problem's (data, not a constant)
    G = grams(trajs, phi, lam, 1)[:, 0]  # V_t: (B, d, d)
    expected = oful_sqrt_beta(G, lam, DELTA, noise, theta_norm)  # (B,)
    if path == "python":
        np.testing.assert_allclose(agent.radius, expected, rtol=1e-9)  # a property
        return
    loop = make_compiled_loop(agent_on(LinUCB, mdp, **params), mdp, 0.0, [None] * 2)
    phi_flat = np.ascontiguousarray(phi.reshape(-1, phi.shape[-1]))
    for b in range(2):
        xr = np.zeros(phi.shape[-1])
        for tr in trajs:
            xr += phi[tr.states[b, 0], tr.actions[b, 0]] * tr.rewards[b, 0]
        V_inv = np.linalg.inv(G[b])
        logdet = np.linalg.slogdet(G[b])[1] - phi.shape[-1] * math.log(lam)
        ucb, theta = np.zeros(len(phi_flat)), np.zeros(phi.shape[-1])
        _ucbs(phi_flat, V_inv, xr, logdet, loop.consts, theta, ucb)
        mean = phi_flat @ (V_inv @ xr)
        width = np.sqrt(np.einsum("ri,ij,rj->r", phi_flat, V_inv, phi_flat))
        np.testing.assert_allclose((ucb - mean) / width, expected[b], rtol=1e-9)


# --------------------------------------------------------------------------------- LMC-LSVI
@pytest.mark.parametrize("c", [1.0, 0.5])
def test_lmc_lsvi_step_size_steps_and_temperature(c):
    """Ishfaq et al. 2024 (LMC-LSVI, ICLR), Algorithm 1 as stated in lmc_lsvi.py [M]:
    eta_k = 1 / (4 lambda_max(Lambda)), J_k = ceil(2 kappa log(4 H K d)), kappa = lambda_max /
    lambda_min, 1 / beta_k = (c H sqrt(d))^2; the J-step chain
    w_j = w_{j-1} - eta grad L(w) + sqrt(2 eta / beta) eps_j has, in Lambda's eigenbasis with
    m_i = 1 - 2 eta l_i, mean z_hat + m^J (z_0 - z_hat) and variance
    (2 eta / beta) (1 - m^{2J}) / (1 - m^2)."""
    from theorylab.algorithms.online.lmc_lsvi import LMCLSVI, langevin_chain_law

    mdp = make("linear-simplex:S=5,A=3,d=3,H=4,seed=2")
    agent = agent_on(LMCLSVI, mdp, c=c)
    H, d = mdp.horizon, agent.d
    inv_beta = (c * H * math.sqrt(d)) ** 2
    assert agent.inv_beta == pytest.approx(inv_beta, rel=1e-12)
    rng = np.random.default_rng(5)
    X = rng.normal(size=(2, 20, d))
    Lam = np.einsum("bni,bnj->bij", X, X) + np.eye(d)  # (B, d, d)
    ell = np.linalg.eigvalsh(Lam)  # ascending
    J = np.ceil(2 * (ell[:, -1] / ell[:, 0]) * math.log(4 * H * K * d))
    np.testing.assert_array_equal(agent.steps(Lam), J)
    b, w0 = rng.normal(size=(2, d)), rng.normal(size=(2, 1, d))  # one chain per seed
    U, mean, std = langevin_chain_law(Lam, b, w0, J=J, inv_beta=agent.inv_beta)
    eta = 1 / (4 * ell[:, -1])
    m = 1 - 2 * eta[:, None] * ell
    var = 2 * eta[:, None] * inv_beta * (1 - m ** (2 * J[:, None])) / (1 - m**2)
    np.testing.assert_allclose(np.sort(std**2, axis=-1), np.sort(var, axis=-1), rtol=1e-9)
    z_hat = np.linalg.solve(Lam, b[..., None])[..., 0]
    mean_w = z_hat + np.einsum("bij,bj,bkj,bk->bi", U, m ** J[:, None], U, w0[:, 0] - z_hat)
    np.testing.assert_allclose(
        np.einsum("bij,bj->bi", U, mean[:, 0]), mean_w, rtol=1e-8, atol=1e-10
    )


# --------------------------------------------------------------------------------- Rep-UCB
@pytest.mark.parametrize("c", [1.0, 0.25])
def test_rep_ucb_bonus_scale(c):
    """Uehara, Zhang, Sun 2022 give alpha_n only as an order (Theorem 4); rep_ucb.py's [M]
    choice: alpha = c H sqrt(d iota), iota = log(2 d K H |Phi| / delta), bonus
    min{alpha ||phi_hat||_{Sigma^{-1}}, H}."""
    from theorylab.algorithms.online.rep_ucb import RepUCB

    mdp = make("lowrank-simplex:S=6,A=3,d=2,H=2,seed=3")
    agent = agent_on(RepUCB, mdp, c=c, delta=DELTA, feature_class=mdp.candidates)
    d, H, M = agent.d, mdp.horizon, agent.n_candidates
    alpha = c * H * math.sqrt(d * math.log(2 * d * K * H * M / DELTA))
    assert agent.alpha == pytest.approx(alpha, rel=1e-12)
