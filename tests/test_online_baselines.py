"""Optimistic Q-learning (Jin et al. 2018), PSRL (Osband et al. 2013), greedy and epsilon-greedy.

What is checked:

* optimistic Q-learning equals a literal, per-seed, step-by-step implementation of Algorithms 1
  and 2 that acts online (the action at step h chosen from the Q of that moment) -- this checks
  the "greedy policy at the start of the episode = online greedy" argument and the replay order;
* the Bernstein bonus satisfies beta_t = 2 sum_i alpha_t^i b_i (its defining identity);
* optimism (Jin et al. Lemma 4.2): Q^k_h >= Q*_h at every episode, and V^k_1(mu0) >= V*_1(mu0);
* PSRL with a posterior concentrated on the true model plays an optimal policy (zero regret);
* greedy plans exactly by backward induction on the empirical model;
* every algorithm gives seed i the same run alone or inside a batch (through ``run``);
* greedy / epsilon-greedy regret is linear on RiverSwim while PSRL's is sublinear.
"""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms import make_agent
from theorylab.algorithms.online.greedy import CertaintyEquivalentGreedy, EpsilonGreedy
from theorylab.algorithms.online.optimistic_q import OptimisticQBernstein, OptimisticQHoeffding
from theorylab.algorithms.online.psrl import PSRL, batched_backward_induction
from theorylab.algorithms.planning import backward_induction
from theorylab.experiment import env_spec
from theorylab.mdps import TabularMDP
from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators

BASELINES = ("optimistic-q-hoeffding", "optimistic-q-bernstein", "psrl", "greedy", "epsilon-greedy")


def random_mdp(S: int = 4, A: int = 3, H: int = 5, seed: int = 0, bernoulli: bool = True):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(S, A))  # (S, A, S)
    R = rng.random((S, A))  # (S, A)
    mu0 = rng.dirichlet(np.ones(S))  # (S,)
    model = "bernoulli" if bernoulli else "deterministic"
    return TabularMDP(P, R, mu0, horizon=H, reward_model=model, name=f"random:S={S},seed={seed}")


def drive(agent, mdp, episodes: int, env_rngs, check=None) -> None:
    """The loop of ``theorylab.run`` without bookkeeping; ``check(agent)`` before each episode."""
    for _ in range(episodes):
        if check is not None:
            check(agent)
        agent.update(mdp.rollout(agent.policy(), rng=env_rngs))


# ---------------------------------------------------------------------------------- Q-learning
def literal_q_learning(mdp, K, seed_index, *, bonus, delta, c=2.0, c1=1.0, c2=4.0, root=0):
    """Jin et al. (2018) Algorithm 1 / 2 for ONE seed, written line by line, acting online.

    It samples the environment itself with the same uniforms ``TabularMDP.rollout`` draws
    (``1 + 3H`` per episode: initial state, then action / transition / reward per step), so its
    episodes are those the batched agent sees -- as long as it picks the same actions online.
    """
    S, A, H = mdp.S, mdp.A, mdp.H
    P, R = mdp.dense_P(), mdp.R
    g = generators(root, [seed_index], ENV_STREAM)[0]
    iota = np.log(S * A * K * H / delta)
    Q = np.full((H, S, A), float(H))
    V = np.full((H + 1, S), float(H))
    V[H] = 0.0
    N = np.zeros((H, S, A), dtype=np.int64)
    mu, sigma, beta = np.zeros((H, S, A)), np.zeros((H, S, A)), np.zeros((H, S, A))
    history = {}  # (h, x, a) -> list of (alpha_t, b_t, beta_t), for the bonus identity
    returns = []
    for _ in range(K):
        u = g.random(1 + 3 * H)
        x = min(int((np.cumsum(mdp.mu0) <= u[0]).sum()), S - 1)  # receive x_1
        ret = 0.0
        for h in range(H):
            a = int(np.argmax(Q[h, x]))  # take a_h = argmax_a' Q_h(x_h, a') ...
            x_next = min(int((np.cumsum(P[x, a]) <= u[2 + 3 * h]).sum()), S - 1)  # observe x_{h+1}
            r = float(u[3 + 3 * h] < R[x, a]) if mdp.reward_model == "bernoulli" else R[x, a]
            ret += r
            N[h, x, a] += 1
            t = N[h, x, a]  # t = N_h(x_h, a_h) <- N_h(x_h, a_h) + 1
            alpha = (H + 1) / (H + t)
            if bonus == "hoeffding":
                b = c * np.sqrt(H**3 * iota / t)
                beta_t = np.nan
            else:
                mu[h, x, a] += V[h + 1, x_next]
                sigma[h, x, a] += V[h + 1, x_next] ** 2
                W = max(sigma[h, x, a] / t - (mu[h, x, a] / t) ** 2, 0.0)
                beta_t = min(
                    c1 * (np.sqrt(H / t * (W + H) * iota) + np.sqrt(H**7 * S * A) * iota / t),
                    c2 * np.sqrt(H**3 * iota / t),
                )
                b = (beta_t - (1 - alpha) * beta[h, x, a]) / (2 * alpha)
                beta[h, x, a] = beta_t
            history.setdefault((h, x, a), []).append((alpha, b, beta_t))
            Q[h, x, a] = (1 - alpha) * Q[h, x, a] + alpha * (r + V[h + 1, x_next] + b)
            V[h, x] = min(H, Q[h, x].max())
            x = x_next
        returns.append(ret)
    return Q, V, N, np.array(returns), history


@pytest.mark.parametrize(
    ("cls", "params"),
    [
        (OptimisticQHoeffding, {}),
        (OptimisticQHoeffding, {"c": 0.05}),
        (OptimisticQBernstein, {}),
        (OptimisticQBernstein, {"c1": 0.002, "c2": 0.05}),
    ],
)
def test_q_learning_equals_the_literal_online_algorithm(cls, params):
    mdp = random_mdp(S=4, A=3, H=5, seed=1)
    K, idx = 150, [0, 1, 2]
    agent = cls(env_spec(mdp), len(idx), generators(0, idx, AGENT_STREAM), episodes=K, **params)
    env_rngs = generators(0, idx, ENV_STREAM)
    returns = []
    for _ in range(K):
        traj = mdp.rollout(agent.policy(), rng=env_rngs)
        returns.append(traj.returns())
        agent.update(traj)
    returns = np.array(returns).T  # (B, K)
    bonus = "hoeffding" if cls is OptimisticQHoeffding else "bernstein"
    for i in idx:
        Q, V, N, ret, _ = literal_q_learning(mdp, K, i, bonus=bonus, delta=0.1, **params)
        np.testing.assert_array_equal(agent.N[i], N)
        np.testing.assert_allclose(agent.Q[i], Q, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(agent.V[i], V, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(returns[i], ret)
    assert (agent.Q != mdp.H).sum() > 20, "the test should move Q away from its initial value"


def test_bernstein_bonus_sums_to_beta():
    """b_t is defined so that beta_t = 2 sum_{i<=t} alpha_t^i b_i, alpha_t^i = alpha_i prod_{j>i}
    (1 - alpha_j) (Jin et al., Section 4.1 notation)."""
    mdp = random_mdp(S=3, A=2, H=4, seed=2)
    *_, history = literal_q_learning(mdp, 200, 0, bonus="bernstein", delta=0.1, c1=0.01, c2=0.2)
    checked = 0
    for seq in history.values():
        alphas = np.array([s[0] for s in seq])
        bs = np.array([s[1] for s in seq])
        betas = np.array([s[2] for s in seq])
        for t in range(1, len(seq) + 1):
            weights = alphas[:t] * np.array(
                [np.prod(1 - alphas[i + 1 : t]) for i in range(t)]
            )  # alpha_t^i, i = 1..t
            np.testing.assert_allclose(2 * weights @ bs[:t], betas[t - 1], rtol=1e-9)
            checked += 1
    assert checked > 500


@pytest.mark.parametrize("cls", [OptimisticQHoeffding, OptimisticQBernstein])
def test_q_learning_is_optimistic_at_every_episode(cls):
    """Lemma 4.2 (good event): Q^k_h >= Q*_h for all k, h, x, a, with the default constants."""
    mdp = random_mdp(S=3, A=2, H=2, seed=3, bernoulli=False)
    q_star = backward_induction(mdp).Q  # (H, S, A)
    K, B = 2000, 3
    agent = cls(env_spec(mdp), B, generators(0, range(B), AGENT_STREAM), episodes=K)

    def optimistic(a):
        assert (a.Q >= q_star[None] - 1e-12).all()

    drive(agent, mdp, K, generators(0, range(B), ENV_STREAM), check=optimistic)
    optimistic(agent)
    assert (agent.Q[:, -1] < mdp.H - 0.5).any(), "some last-stage Q should have left H"


@pytest.mark.parametrize("name", ["optimistic-q-hoeffding", "optimistic-q-bernstein"])
def test_q_learning_value_estimate_upper_bounds_v_star_on_riverswim(name):
    res = tl.run(name, "riverswim:S=6,H=20", episodes=200, seeds=3)
    assert np.all(res.value_estimates >= res.optimal_value - 1e-12)


def test_q_learning_needs_episodes_and_valid_parameters():
    env = env_spec(random_mdp())
    rngs = generators(0, [0], AGENT_STREAM)
    with pytest.raises(TypeError):
        OptimisticQHoeffding(env, 1, rngs)  # K enters iota = log(SAT/p)
    with pytest.raises(ValueError, match="delta"):
        OptimisticQHoeffding(env, 1, rngs, episodes=10, delta=1.5)
    with pytest.raises(ValueError, match="episodes"):
        OptimisticQBernstein(env, 1, rngs, episodes=0)
    agent = make_agent("optimistic-q-bernstein:c1=0.5", env, 1, rngs, episodes=10)
    assert agent.c1 == 0.5 and agent.bonus == "bernstein"


# ---------------------------------------------------------------------------------- PSRL
@pytest.mark.parametrize("stage_dependent", [False, True])
def test_psrl_with_a_concentrated_posterior_plays_optimally(stage_dependent):
    mdp = tl.make("riverswim:S=6,H=20")
    P = mdp.dense_P()  # (S, A, S)
    prior = 1e12 * (np.broadcast_to(P, (mdp.H, *P.shape)) if stage_dependent else P)
    res = tl.run("psrl", mdp, episodes=20, seeds=3, prior=prior, stage_dependent=stage_dependent)
    assert np.abs(res.regret).max() < 1e-6
    np.testing.assert_allclose(res.value_estimates, res.optimal_value, atol=1e-4)


def test_psrl_posterior_counts_and_dirichlet_draws():
    mdp = random_mdp(S=3, A=2, H=4, seed=4)
    B = 2
    agent = PSRL(env_spec(mdp, known_rewards=False), B, generators(0, range(B), AGENT_STREAM))
    env_rngs = generators(0, range(B), ENV_STREAM)
    counts = np.zeros((B, mdp.S, mdp.A, mdp.S))
    successes = np.zeros((B, mdp.S, mdp.A))
    for _ in range(30):
        traj = mdp.rollout(agent.policy(), rng=env_rngs)
        for b in range(B):
            for s, a, r, s2 in zip(
                traj.states[b], traj.actions[b], traj.rewards[b], traj.next_states[b], strict=True
            ):
                counts[b, s, a, s2] += 1
                successes[b, s, a] += r
        agent.update(traj)
        P, R = agent.P_sample, agent.R_sample
        np.testing.assert_allclose(P.sum(-1), 1.0)
        assert (P > 0).all() and ((R >= 0) & (R <= 1)).all()
    np.testing.assert_array_equal(agent.model.N_sas, counts)
    np.testing.assert_array_equal(agent.reward_beta()[:, 0], 1 + successes)
    np.testing.assert_array_equal(agent.reward_beta()[:, 1], 1 + counts.sum(-1) - successes)
    # the plan is the exact backward induction of the sampled MDP
    sampled = TabularMDP(agent.P_sample[0], agent.R_sample[0, 0], horizon=mdp.H)
    np.testing.assert_allclose(agent.Q[0], backward_induction(sampled).Q, atol=1e-12)


# ---------------------------------------------------------------------------------- greedy
@pytest.mark.parametrize("known_rewards", [True, False])
@pytest.mark.parametrize("stage_dependent", [False, True])
def test_greedy_is_backward_induction_on_the_empirical_model(known_rewards, stage_dependent):
    mdp = random_mdp(S=3, A=2, H=3, seed=5)
    B = 2
    agent = CertaintyEquivalentGreedy(
        env_spec(mdp, known_rewards=known_rewards),
        B,
        generators(0, range(B), AGENT_STREAM),
        stage_dependent=stage_dependent,
    )
    uniform = np.full((B, mdp.H, mdp.S, mdp.A), 1 / mdp.A)  # exploratory data, not the agent's
    env_rngs = generators(0, range(B), ENV_STREAM)
    for _ in range(300):
        agent.update(mdp.rollout(uniform, rng=env_rngs))
    N = agent.model.N_sas  # (B, [H,] S, A, S)
    n = N.sum(-1)
    assert (n > 0).all(), "every pair must be visited for the comparison"
    for b in range(B):
        P_hat = N[b] / n[b][..., None]
        R = mdp.R if known_rewards else agent.model.R_sum[b] / n[b]
        if stage_dependent:  # P_hat (H, S, A, S), R (H, S, A)
            R = np.broadcast_to(R, (mdp.H, mdp.S, mdp.A))
        plan = backward_induction(TabularMDP(P_hat, R, horizon=mdp.H))
        np.testing.assert_allclose(agent.Q[b], plan.Q, atol=1e-12)
        np.testing.assert_allclose(agent.value_estimate()[b], plan.V[0] @ mdp.mu0, atol=1e-12)


def test_greedy_unvisited_pairs_take_the_unvisited_value():
    mdp = tl.make("riverswim:S=6,H=20")
    env = env_spec(mdp)
    rngs = generators(0, [0], AGENT_STREAM)
    agent = CertaintyEquivalentGreedy(env, 1, rngs)
    assert (agent.Q == 0).all() and (agent.policy() == 0).all()
    agent = CertaintyEquivalentGreedy(env, 1, rngs, unvisited_value=20.0)
    assert (agent.Q == 20.0).all()


def test_epsilon_greedy_policy_mixes_uniform():
    mdp = random_mdp(S=4, A=3, H=5, seed=6)
    env, B = env_spec(mdp), 2
    rngs = generators(0, range(B), AGENT_STREAM)
    agent = EpsilonGreedy(env, B, rngs, epsilon=0.3)
    pi = agent.policy()
    assert pi.shape == (B, mdp.H, mdp.S, mdp.A)
    np.testing.assert_allclose(pi.sum(-1), 1.0)
    np.testing.assert_allclose(pi.min(-1), 0.1)
    np.testing.assert_allclose(pi.max(-1), 0.7 + 0.1)
    decaying = EpsilonGreedy(env, B, rngs, epsilon=2.0, schedule="inv-sqrt")
    assert [decaying.epsilon_at(k) for k in (1, 4, 16)] == [1.0, 1.0, 0.5]
    env_rngs = generators(0, range(B), ENV_STREAM)
    drive(decaying, mdp, 16, env_rngs)
    np.testing.assert_allclose(decaying.policy().min(-1), 2.0 / np.sqrt(17) / mdp.A)
    with pytest.raises(ValueError, match="schedule"):
        EpsilonGreedy(env, B, rngs, schedule="linear")


# ---------------------------------------------------------------------------------- all
@pytest.mark.parametrize("known_rewards", [True, False])
@pytest.mark.parametrize("name", BASELINES)
def test_seed_alone_equals_seed_in_a_batch(name, known_rewards):
    mdp = random_mdp(S=4, A=2, H=4, seed=7, bernoulli=True)
    kw = dict(episodes=25, seed=11, known_rewards=known_rewards)
    batch = tl.run(name, mdp, seeds=4, **kw)
    alone = tl.run(name, mdp, seeds=[2], **kw)
    # the agent's side is bitwise identical: same episodes, same estimates ...
    np.testing.assert_array_equal(batch.returns[2], alone.returns[0])
    np.testing.assert_array_equal(batch.value_estimates[2], alone.value_estimates[0])
    # ... while run()'s exact evaluation multiplies (S*A, S) by (S, B) with BLAS, whose rounding
    # can depend on B (1 ulp): the regret agrees to round-off, not bit for bit.
    np.testing.assert_allclose(batch.regret[2], alone.regret[0], rtol=0, atol=1e-12)
    if name == "psrl":  # the seeds really draw from different streams
        assert not np.array_equal(batch.value_estimates[0], batch.value_estimates[1])


def test_batched_backward_induction_matches_the_planner():
    mdps = [random_mdp(S=4, A=3, H=6, seed=s, bernoulli=False) for s in (8, 9)]
    P = np.stack([m.dense_P() for m in mdps])  # (B, S, A, S)
    R = np.stack([np.broadcast_to(m.R, (m.H, m.S, m.A)) for m in mdps])  # (B, H, S, A)
    Q, V, pi = batched_backward_induction(P, R, 6)
    for b, m in enumerate(mdps):
        sol = backward_induction(m)
        np.testing.assert_allclose(Q[b], sol.Q, atol=1e-12)
        np.testing.assert_allclose(V[b], sol.V, atol=1e-12)
        np.testing.assert_array_equal(pi[b], sol.policy)


def loglog_slope(cumulative: np.ndarray, K: int) -> float:
    ks = np.unique(np.geomspace(100, K, 12).astype(int))
    return float(np.polyfit(np.log(ks), np.log(cumulative[ks - 1]), 1)[0])


def test_greedy_regret_is_linear_and_psrl_regret_is_sublinear_on_riverswim():
    K = 2000
    spec = "riverswim:S=6,H=20"
    out = {}
    for name in ("greedy", "epsilon-greedy", "psrl"):
        cum = tl.run(name, spec, episodes=K, seeds=2).cumulative_regret.mean(axis=0)  # (K,)
        out[name] = (cum[K // 2 - 1], cum[-1], loglog_slope(cum, K))
    for name in ("greedy", "epsilon-greedy"):
        half, full, slope = out[name]
        assert full / half > 1.9 and slope > 0.9, (name, out[name])
    half, full, slope = out["psrl"]
    assert full / half < 1.5 and slope < 0.6, out["psrl"]
    assert full < 0.1 * out["greedy"][1]


def stage_dependent_mdp(S: int = 3, A: int = 2, H: int = 4, seed: int = 7) -> TabularMDP:
    """P_h changes with h: stage h moves every pair to state h mod S (deterministic)."""
    rng = np.random.default_rng(seed)
    P = np.zeros((H, S, A, S))
    for h in range(H):
        P[h, :, :, (h + 1) % S] = 1.0
    P[:, :, 1] = rng.dirichlet(np.ones(S), size=(H, S))  # action 1 random per stage
    return TabularMDP(P, rng.random((S, A)), horizon=H)


@pytest.mark.parametrize("cls", [PSRL, CertaintyEquivalentGreedy, EpsilonGreedy])
def test_model_based_agents_follow_the_mdps_stage_dependence(cls):
    """Issue 14 item 3: PSRL (and greedy) defaulted to stage_dependent=False whatever the MDP, so
    on a stage-dependent MDP they pooled counts over h. They now follow the MDP by default and
    refuse an explicit pooling of a stage-dependent MDP."""
    sd, flat = stage_dependent_mdp(), tl.make("riverswim:S=4,H=3")
    rngs = generators(0, range(2), AGENT_STREAM)
    assert cls(env_spec(sd), 2, rngs).stage_dependent is True
    assert cls(env_spec(flat), 2, rngs).stage_dependent is False
    assert cls(env_spec(flat), 2, rngs, stage_dependent=True).stage_dependent is True
    with pytest.raises(ValueError, match="stage-dependent .* pool the counts over h"):
        cls(env_spec(sd), 2, rngs, stage_dependent=False)


def test_psrl_with_a_concentrated_posterior_is_optimal_on_a_stage_dependent_mdp():
    """With the default setting, a posterior concentrated on the true per-stage P plays pi*
    (the pooled posterior could not even hold that prior)."""
    mdp = stage_dependent_mdp()
    res = tl.run("psrl", mdp, episodes=10, seeds=2, prior=1e12 * mdp.dense_P())
    assert np.abs(res.regret).max() < 1e-6
