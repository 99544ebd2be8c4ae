"""Online tabular bonuses pinned to the papers' printed formulas, written out here (issue 26).

Every expected value below is computed in this file from the paper's formula (equation and paper
in the comment next to it), never from a library constant: a mutation of any factor, exponent or
log argument of a bonus changes the recovered bonus and fails the test. Both paths an algorithm
runs through are pinned: the Python agent's plan / update and the compiled whole-run kernel
(``algorithms/online/whole_run_kernel.py``) with the constants ``loop_constants`` hands it.

How a bonus is read off the public path: with ``bonus_scale = EPS`` (a tiny positive scale) the
planned Q at the last step h = H-1 (0-based; V_{H+1} = 0) of a visited pair is
``r + EPS * b(N)`` below the cap H, so ``b = (Q - r) / EPS`` is the bonus the plan used, at every
count N >= 1; an unvisited pair (N = 0) keeps Q = H. One step earlier, Q = r + P_hat V + EPS b
with V the plan's own V_{H} (an input here, not a constant), which exercises the variance terms.
Counts and P_hat are counted in the test from the trajectories (Python path) or read from the
kernel's count arrays (kernel path: the data, not a constant).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from theorylab.experiment import env_spec
from theorylab.mdps import TabularMDP
from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators

EPS = 1e-6  # bonus_scale: EPS * b stays far below the cap H, so b is read off Q exactly
S, A, H, K, DELTA = 3, 2, 3, 40, 0.1  # K: the horizon of the run that enters the logs
EPISODES = 6  # episodes actually played: counts 0, 1 and a few (N = 0 and N = 1 both occur)


def small_mdp() -> TabularMDP:
    rng = np.random.default_rng(26)
    P = rng.dirichlet(np.ones(S), size=(S, A))  # (S, A, S)
    R = rng.uniform(0.0, 0.5, size=(S, A))  # (S, A)
    return TabularMDP(P, R, np.full(S, 1.0 / S), horizon=H, name="pinned-constants")


def play(agent, mdp, episodes=EPISODES, replan=True):
    """Feed ``episodes`` uniformly random episodes to ``agent``; return the trajectories and,
    with ``replan``, re-plan from Q_{0,h} = H on the final counts (Azar's min{Q_{k-1}, .} then
    reads only this plan)."""
    rng = np.random.default_rng(7)
    env_rngs = generators(0, range(agent.n_seeds), ENV_STREAM)
    trajs = []
    for _ in range(episodes):
        pol = rng.integers(A, size=(agent.n_seeds, H, S))
        traj = mdp.rollout(pol, rng=env_rngs)
        agent.update(traj)
        trajs.append(traj)
    if replan:
        agent._Q[:] = float(H)
        agent.plan()
    return trajs


def counts(trajs, per_step: bool):
    """N (B, [H,] S, A) and N(s, a, s') (B, [H,] S, A, S) counted here from the trajectories."""
    B = trajs[0].states.shape[0]
    shape = (B, H, S, A) if per_step else (B, 1, S, A)
    N, Nsas = np.zeros(shape), np.zeros((*shape, S))
    for tr in trajs:
        for b in range(B):
            for h in range(H):
                m = h if per_step else 0
                s, a, y = tr.states[b, h], tr.actions[b, h], tr.next_states[b, h]
                N[b, m, s, a] += 1
                Nsas[b, m, s, a, y] += 1
    return N, Nsas


def make(cls, mdp, B=2, **params):
    env = env_spec(mdp, known_rewards=True)
    return cls(env, B, generators(0, range(B), AGENT_STREAM), **params)


def kernel_plan(cls, mdp, nhs=None, **params):
    """The compiled kernel's plan (``plan_all``) after EPISODES episodes of its own, re-planned
    from Q = H on its count arrays; returns (Q, nsa, P_hat) with P_hat (B, Hm, S, A, S)."""
    from theorylab.algorithms.online.whole_run import CompiledLoop

    agent = make(cls, mdp, **params)
    loop = CompiledLoop(agent, mdp, 0.0, generators(0, range(agent.n_seeds), ENV_STREAM))
    loop.advance(EPISODES)
    st = loop.state
    st["Q"][:] = float(H)
    if nhs is not None:
        st["nhs"][:] = nhs
    loop._plan_all()
    B, Hm = st["nsa"].shape[:2]
    P_hat = np.zeros((B, Hm, S, A, S))
    for idx in np.ndindex(B, Hm, S, A):
        k = st["nsucc"][idx]
        P_hat[idx][st["succ"][idx][:k]] = st["pc"][idx][:k]
    return st["Q"].copy(), st["nsa"].copy(), P_hat


def planned(cls, mdp, path, per_step):
    """(Q, N) of the plan at bonus_scale EPS on the Python path or the kernel's: N
    (B, H|1, S, A), counted here (Python) or the kernel's counts."""
    params = dict(episodes=K, delta=DELTA, bonus_scale=EPS)
    if path == "python":
        agent = make(cls, mdp, **params)
        N = counts(play(agent, mdp), per_step)[0]
        return agent.Q, N
    Q, nsa, _ = kernel_plan(cls, mdp, **params)
    return Q, nsa


def recovered(Q, h, r, PV=0.0):
    """b = (Q_h - r - P_hat V_{h+1}) / EPS where the plan did not cap Q."""
    return (Q[:, h] - r - PV) / EPS


def assert_bonus(Q, N, expected, h, r, PV=0.0):
    visited = N > 0
    assert visited.any() and (N == 1).any() and (N > 1).any(), "need N = 1 and N > 1 pairs"
    np.testing.assert_allclose(recovered(Q, h, r, PV)[visited], expected[visited], rtol=1e-7)
    assert np.all(Q[:, h][~visited] == H)  # N = 0: Q = H (the bonus is infinite)


# --------------------------------------------------------------------------------- UCBVI-CH
def ucbvi_ch_bonus(N):
    # Azar, Osband, Munos 2017, Algorithm 3 (bonus_1): b(x, a) = 7 H L sqrt(1 / N(x, a)),
    # L = ln(5 S A T / delta), T = K H
    L = math.log(5 * S * A * K * H / DELTA)
    return 7 * H * L * np.sqrt(1 / np.where(N > 0, N, np.nan))


@pytest.mark.parametrize("path", ["python", "kernel"])
def test_ucbvi_hoeffding_bonus_is_azar_alg3(path):
    from theorylab.algorithms.online.ucbvi import UCBVIHoeffding

    mdp = small_mdp()
    Q, N = planned(UCBVIHoeffding, mdp, path, per_step=False)
    N = N[:, 0]
    for h in (H - 1,):  # the bonus is the same at every h; the last step has P_hat V = 0
        assert_bonus(Q, N, ucbvi_ch_bonus(N), h, mdp.R)


# --------------------------------------------------------------------------------- UCBVI-BF
def ucbvi_bf_bonus(N, P_hat, V_next, N_next):
    # Azar, Osband, Munos 2017, Algorithm 4 (bonus_2), L = ln(5 S A T / delta), T = K H:
    # b = sqrt(8 L Var_{y~P_hat}[V_{h+1}(y)] / N) + 14 H L / (3 N)
    #     + sqrt(8 sum_y P_hat(y) min{100^2 H^3 S^2 A L^2 / N'_{h+1}(y), H^2} / N)
    # with min{.} = H^2 where N'_{h+1}(y) = 0
    L = math.log(5 * S * A * K * H / DELTA)
    n = np.where(N > 0, N, np.nan)  # (B, S, A)
    mean = np.einsum("bsay,by->bsa", P_hat, V_next)
    var = np.einsum("bsay,bsay->bsa", P_hat, (V_next[:, None, None, :] - mean[..., None]) ** 2)
    with np.errstate(divide="ignore"):
        g = np.where(N_next > 0, np.minimum(100**2 * H**3 * S**2 * A * L**2 / N_next, H**2), H**2)
    third = np.einsum("bsay,by->bsa", P_hat, g)
    return np.sqrt(8 * L * var / n) + 14 * H * L / (3 * n) + np.sqrt(8 * third / n)


@pytest.mark.parametrize("path", ["python", "kernel"])
def test_ucbvi_bernstein_bonus_is_azar_alg4(path):
    from theorylab.algorithms.online.ucbvi import UCBVIBernstein

    mdp = small_mdp()
    params = dict(episodes=K, delta=DELTA, bonus_scale=EPS)
    # N'_{h}(y) set to 0, 1, 10^9 (the min's both branches: c / N' < H^2 needs N' > c / H^2)
    nhs = np.broadcast_to(np.array([0.0, 1.0, 1e9]), (2, H + 1, S)).copy()
    if path == "python":
        agent = make(UCBVIBernstein, mdp, **params)
        trajs = play(agent, mdp, replan=False)
        agent.model.N_hs[:] = nhs  # the visits of each next state, chosen
        agent._Q[:] = float(H)
        agent.plan()
        N, Nsas = counts(trajs, per_step=False)
        N, P_hat = N[:, 0], Nsas[:, 0] / np.maximum(N[:, 0], 1)[..., None]
        Q, V = agent.Q, agent.V
    else:
        Q, nsa, P_hat = kernel_plan(UCBVIBernstein, mdp, nhs=nhs, **params)
        N, P_hat = nsa[:, 0], P_hat[:, 0]
        V = np.concatenate([Q.max(axis=-1), np.zeros((Q.shape[0], 1, S))], axis=1)
    for h in (H - 1, H - 2):  # h = H-2: a non-zero variance of V_{h+1}
        V_next = V[:, h + 1]
        PV = np.einsum("bsay,by->bsa", P_hat, V_next)
        expected = ucbvi_bf_bonus(N, P_hat, V_next, nhs[:, h + 1])
        assert_bonus(Q, N, expected, h, mdp.R, PV)
    assert np.any(ucbvi_bf_bonus(N, P_hat, V[:, H - 1], nhs[:, H - 1]) > 0)


# --------------------------------------------------------------------------------- UCBVI-AJKS
@pytest.mark.parametrize("path", ["python", "kernel"])
def test_ucbvi_ajks_bonus_is_ajks_ch7(path):
    from theorylab.algorithms.online.ucbvi import UCBVIAJKS

    mdp = small_mdp()
    Q, N = planned(UCBVIAJKS, mdp, path, per_step=True)
    # AJKS (Agarwal, Jiang, Kakade, Sun 2022), Ch. 7, p. 74: b_h(s, a) = 2 H sqrt(L / N_h(s, a)),
    # L = ln(S A H K / delta)
    L = math.log(S * A * H * K / DELTA)
    n = np.where(N > 0, N, np.nan)
    expected = 2 * H * np.sqrt(L / n)  # (B, H, S, A)
    h = H - 1
    assert_bonus(Q, N[:, h], expected[:, h], h, mdp.R)


# --------------------------------------------------------------------------------- ICVaR-RM
@pytest.mark.parametrize("path", ["python", "kernel"])
@pytest.mark.parametrize("alpha", [0.2, 0.5])
def test_icvar_rm_bonus_is_du2023_alg1(path, alpha):
    from theorylab.algorithms.online.icvar_rm import ICVaRRM

    mdp = small_mdp()
    params = dict(alpha=alpha, episodes=K, delta=DELTA, bonus_scale=EPS)
    if path == "python":
        agent = make(ICVaRRM, mdp, **params)
        N = counts(play(agent, mdp, replan=False), per_step=False)[0][:, 0]
        bonus = agent.bonus() / EPS  # the (B, S, A) array the plan adds (+inf where n = 0)
    else:
        Q, nsa, _ = kernel_plan(ICVaRRM, mdp, **params)
        N = nsa[:, 0]
    # Du, Wang, Huang 2023 (ICLR), Algorithm 1: bonus (H / alpha) sqrt(L / n_k(s, a)),
    # L = log(K H S A / delta'), delta' = delta / 5
    L = math.log(K * H * S * A / (DELTA / 5))
    expected = (H / alpha) * np.sqrt(L / np.where(N > 0, N, np.nan))  # (B, S, A)
    if path == "kernel":
        assert_bonus(Q, N, expected, H - 1, mdp.R)
    else:
        assert (N == 1).any() and (N > 1).any() and np.all(np.isinf(bonus[N == 0]))
        np.testing.assert_allclose(bonus[N > 0], expected[N > 0], rtol=1e-9)


# --------------------------------------------------------------------------------- Q-learning
def jin_q_learning(trajs, bonus, c=2.0, c1=1.0, c2=4.0):
    """Jin, Allen-Zhu, Bubeck, Jordan 2018 (NeurIPS), Algorithms 1 and 2, literally, one seed at a
    time: alpha_t = (H + 1) / (H + t); iota = log(S A T / p), T = K H;
    Alg. 1: b_t = c sqrt(H^3 iota / t);
    Alg. 2: W_t = sigma / t - (mu / t)^2,
            beta_t = min{c1 (sqrt(H / t (W_t + H) iota) + sqrt(H^7 S A) iota / t),
                         c2 sqrt(H^3 iota / t)},
            b_t = (beta_t - (1 - alpha_t) beta_{t-1}) / (2 alpha_t), beta_0 = 0."""
    B = trajs[0].states.shape[0]
    iota = math.log(S * A * K * H / DELTA)
    Q = np.full((B, H, S, A), float(H))
    V = np.full((B, H + 1, S), float(H))
    V[:, H] = 0.0
    N, mu, sig, beta = (np.zeros((B, H, S, A)) for _ in range(4))
    W_max = 0.0
    for tr in trajs:
        for b in range(B):
            for h in range(H):
                x, a, r, y = (
                    tr.states[b, h],
                    tr.actions[b, h],
                    tr.rewards[b, h],
                    tr.next_states[b, h],
                )
                N[b, h, x, a] += 1
                t = N[b, h, x, a]
                al = (H + 1) / (H + t)
                v = V[b, h + 1, y]
                if bonus == "hoeffding":
                    bt = c * math.sqrt(H**3 * iota / t)
                else:
                    mu[b, h, x, a] += v
                    sig[b, h, x, a] += v**2
                    W = max(sig[b, h, x, a] / t - (mu[b, h, x, a] / t) ** 2, 0.0)
                    W_max = max(W_max, W)
                    new = min(
                        c1
                        * (math.sqrt(H / t * (W + H) * iota) + math.sqrt(H**7 * S * A) * iota / t),
                        c2 * math.sqrt(H**3 * iota / t),
                    )
                    bt = (new - (1 - al) * beta[b, h, x, a]) / (2 * al)
                    beta[b, h, x, a] = new
                Q[b, h, x, a] = (1 - al) * Q[b, h, x, a] + al * (r + v + bt)
                V[b, h, x] = min(H, Q[b, h, x].max())
    return Q, W_max


QL_CASES = [
    ("hoeffding", {}),
    ("hoeffding", {"c": 3.0}),
    ("bernstein", {}),  # the c2 branch of the min
    ("bernstein", {"c1": 1e-4, "c2": 1e6}),  # the c1 branch, W_t > 0 (V below H)
]


@pytest.mark.parametrize("path", ["python", "kernel"])
@pytest.mark.parametrize(("bonus", "consts"), QL_CASES)
def test_optimistic_q_bonus_is_jin2018(path, bonus, consts):
    from theorylab.algorithms.online.optimistic_q import (
        OptimisticQBernstein,
        OptimisticQHoeffding,
    )

    cls = OptimisticQHoeffding if bonus == "hoeffding" else OptimisticQBernstein
    mdp = small_mdp()
    agent = make(cls, mdp, episodes=K, delta=DELTA, **consts)
    rng = np.random.default_rng(7)
    env_rngs = generators(0, range(agent.n_seeds), ENV_STREAM)
    trajs = [
        mdp.rollout(rng.integers(A, size=(agent.n_seeds, H, S)), rng=env_rngs)
        for _ in range(20)  # enough revisits for W_t > 0 (all actions of a state tried)
    ]
    expected, W_max = jin_q_learning(trajs, bonus, **consts)
    if consts.get("c1", 1.0) < 1e-3:  # the c1 branch with V below H: the variance term counts
        assert W_max > 0
    if path == "python":
        for tr in trajs:
            agent.update(tr)
        Q = agent.Q
    else:
        from theorylab.algorithms.online.whole_run import loop_constants
        from theorylab.algorithms.online.whole_run_kernel import q_learning_step

        c = loop_constants(agent, mdp)
        B = agent.n_seeds
        Q = np.full((B, H * S * A), float(H))
        V = np.full((B, (H + 1) * S), float(H))
        V[:, H * S :] = 0.0
        N, mu, sig, beta = (np.zeros((B, H * S * A)) for _ in range(4))
        pol = np.zeros((B, H * S), np.int64)
        for tr in trajs:
            for b in range(B):
                for h in range(H):
                    q_learning_step(
                        c.variant, c.Hf, c.qc, S, A, h, tr.states[b, h], tr.actions[b, h],
                        tr.rewards[b, h], tr.next_states[b, h], N[b], Q[b], V[b], pol[b],
                        mu[b], sig[b], beta[b],
                    )  # fmt: skip
        Q = Q.reshape(B, H, S, A)
    assert np.any(expected != H)
    np.testing.assert_allclose(Q, expected, rtol=1e-12)


# --------------------------------------------------------------------------------- CVaR-UCBVI
@pytest.mark.parametrize("bonus", ["bernstein", "hoeffding"])
def test_cvar_ucbvi_bonus_as_stated(bonus):
    """CVaR-UCBVI's bonus, as cvar_ucbvi.py states it [M] (Wang, Kallus, Sun 2023's RL bonus
    could not be read; this is the library's construction, pinned so that a change is seen):
    L = log(S A H K J / delta); bernstein: c [sqrt(2 Var_{P_hat}(W_lo) L / n)
    + sqrt(2 E_{P_hat}(W_hi - W_lo)^2 L / n) + r_c (j eta) L / n], r_c = 7/3 (Maurer-Pontil);
    hoeffding: c (M eta) sqrt(2 L / n); n -> max(n, 1) (unvisited pairs are masked)."""
    from theorylab.algorithms.online.cvar_ucbvi import CVaRUCBVI
    from theorylab.mdps import make as make_mdp

    mdp = make_mdp(f"riverswim:S={S},H={H}")  # rewards on a grid (the budget lattice needs one)
    agent = make(CVaRUCBVI, mdp, tau=0.25, delta=DELTA, episodes=K, bonus=bonus, bonus_scale=0.7)
    levels = agent.lattice.levels  # the budget lattice j eta (the reward grid: data)
    J = len(levels)
    assert agent.L == pytest.approx(math.log(S * A * H * K * J / DELTA), rel=1e-12)
    rng = np.random.default_rng(4)
    B = 2
    n = rng.integers(0, 4, size=(B, S, A)).astype(np.int64)
    n[0, 0, 0], n[0, 0, 1] = 0, 1
    p_hat = rng.dirichlet(np.ones(S), size=(B, S, A))  # (B, S, A, S')
    W_lo = rng.uniform(0, 1, size=(B, S, S, A, J))  # (B, S', S, A, J)
    W_hi = W_lo + rng.uniform(0, 0.5, size=W_lo.shape)
    mean = np.einsum("bsay,bysaj->bsaj", p_hat, W_lo)
    L, c, m = agent.L, 0.7, np.maximum(n, 1)[..., None]
    if bonus == "hoeffding":
        expected = c * levels[-1] * np.sqrt(2 * L / m) * np.ones(J)
    else:
        second = np.einsum("bsay,bysaj->bsaj", p_hat, W_lo**2)
        var = np.maximum(second - mean**2, 0.0)
        gap = np.einsum("bsay,bysaj->bsaj", p_hat, (W_hi - W_lo) ** 2)
        expected = c * (
            np.sqrt(2 * var * L / m) + np.sqrt(2 * gap * L / m) + (7 / 3) * levels * L / m
        )
    got = agent._bonus(n, p_hat, W_lo, W_hi, mean)  # the bonus _plan subtracts and adds
    np.testing.assert_allclose(got, np.broadcast_to(expected, got.shape), rtol=1e-9, atol=1e-14)
