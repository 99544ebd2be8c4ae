"""The gymnasium bridge: API conformance, horizon as truncation, terminal states, sampling law,
and the conversion of toy-text models (checked against value iteration on the raw P dict).

Frequency checks use exact binomial acceptance regions whose total tail mass is at most 1e-6
(stated at each test), so a correct environment fails them with probability below 1e-6.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.stats as stats
from gymnasium.utils.env_checker import check_env

from theorylab.algorithms.planning import backward_induction, value_iteration
from theorylab.errors import InvalidMDPError
from theorylab.mdps import GYMNASIUM_ID, TabularEnv, TabularMDP, from_toy_text, make, to_gymnasium


def _stage_dependent() -> TabularMDP:
    # H = 2, S = 2, A = 1. Stage 0: 0 -> 1 surely. Stage 1: 1 -> 0 w.p. 0.25, stays w.p. 0.75.
    # Rewards: 0.2 at stage 0, 0.9 at stage 1 (every state).
    P = np.zeros((2, 2, 1, 2))
    P[0, :, 0, 1] = 1.0
    P[1, :, 0] = [0.25, 0.75]
    R = np.array([[[0.2], [0.2]], [[0.9], [0.9]]])
    return TabularMDP(P, R, horizon=2, name="stage-dependent")


def _sparse_random() -> TabularMDP:
    rng = np.random.default_rng(3)
    S, A = 7, 3
    dense = rng.random((S * A, S)) * (rng.random((S * A, S)) < 0.4)
    dense[:, 0] += 0.1
    dense /= dense.sum(1, keepdims=True)
    return TabularMDP(sp.csr_array(dense), rng.random((S, A)), horizon=6, reward_model="bernoulli")


@pytest.mark.parametrize(
    "mdp",
    [
        make("riverswim:S=6,H=20"),
        make("gridworld:rows=3,cols=4,walls=5,slip=0.1,H=15"),
        _sparse_random(),
        _stage_dependent(),
        make("chain:S=4,H=5,gamma=0.9").with_objective(gamma=0.9),  # discounted only
    ],
    ids=["riverswim", "gridworld", "sparse", "stage-dependent", "discounted"],
)
def test_check_env_passes_without_warnings(mdp):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any gymnasium checker warning fails the test
        env = gym.make(GYMNASIUM_ID, mdp=mdp, render_mode="ansi")
        check_env(env.unwrapped)  # with a spec: render modes and close are checked too
        env.close()
    assert env.observation_space == gym.spaces.Discrete(mdp.S)
    assert env.action_space == gym.spaces.Discrete(mdp.A)


def test_make_from_a_family_name_string():
    env = gym.make(GYMNASIUM_ID, mdp="riverswim:S=4,H=3")
    assert env.unwrapped.mdp.name == "riverswim:S=4,H=3"
    assert to_gymnasium(make("riverswim:S=4,H=3")).mdp.S == 4


def test_finite_horizon_is_truncation_at_H():
    env = TabularEnv(make("riverswim:S=6,H=5"))
    obs, info = env.reset(seed=0)
    assert obs == 0 and info == {"stage": 0}
    for t in range(5):
        obs, reward, terminated, truncated, info = env.step(1)
        assert info["stage"] == t
        assert not terminated
        assert truncated == (t == 4)
    with pytest.raises(RuntimeError, match=r"episode is over .* call reset\(\)"):
        env.step(0)
    env.reset()
    env.step(0)  # a fresh episode steps again


def test_max_episode_steps_shortens_and_is_bounded_by_H():
    env = TabularEnv(make("riverswim:S=6,H=5"), max_episode_steps=2)
    env.reset(seed=1)
    assert env.step(0)[3] is False
    assert env.step(0)[3] is True
    with pytest.raises(ValueError, match=r"max_episode_steps must be in 1\.\.H = 1\.\.5"):
        TabularEnv(make("riverswim:S=6,H=5"), max_episode_steps=6)
    with pytest.raises(ValueError, match="max_episode_steps must be a positive integer"):
        TabularEnv(make("riverswim:S=6,H=5"), max_episode_steps=2.5)


def test_discounted_only_mdp_is_never_truncated_unless_asked():
    mdp = make("riverswim:S=3,H=5").with_objective(gamma=0.95)
    assert mdp.horizon is None
    env = TabularEnv(mdp)
    env.reset(seed=2)
    for _ in range(1000):
        _, _, terminated, truncated, _ = env.step(1)
        assert not terminated and not truncated
    env = TabularEnv(mdp, max_episode_steps=7)
    env.reset(seed=2)
    flags = [env.step(1)[3] for _ in range(7)]
    assert flags == [False] * 6 + [True]


def test_entering_the_terminal_state_is_termination():
    # 1x3 grid, goal 2 absorbing: right, right, then acting in the goal pays 1 and moves to the
    # terminal state (index 3): terminated at step 3, well before the horizon H = 10.
    env = TabularEnv(make("gridworld:rows=1,cols=3,H=10"))
    assert env.terminal.tolist() == [False, False, False, True]
    env.reset(seed=0)
    assert env.step(1)[:4] == (1, 0.0, False, False)
    assert env.step(1)[:4] == (2, 0.0, False, False)
    assert env.step(0)[:4] == (3, 1.0, True, False)


def test_explicit_terminal_states():
    env = TabularEnv(make("riverswim:S=3,H=4"), terminal_states=[1])
    env.reset(seed=0)
    obs, _, terminated, _, _ = env.step(1)
    assert terminated == (obs == 1)
    with pytest.raises(ValueError, match=r"terminal_states must be state indices in 0\.\.2, got 3"):
        TabularEnv(make("riverswim:S=3,H=4"), terminal_states=[3])


def test_stage_dependent_model_uses_stage_h():
    # Stage 0 always goes 0 -> 1 with reward 0.2; stage 1 pays 0.9 and goes to 0 w.p. 0.25.
    # n episodes: the count of stage-1 moves to 0 is Binomial(n, 0.25); the acceptance region
    # has tail mass below 1e-6.
    env = TabularEnv(_stage_dependent())
    n = 4000
    to_zero = 0
    env.reset(seed=123)
    for _ in range(n):
        env.reset()
        assert env.step(0)[:4] == (1, 0.2, False, False)
        obs, reward, terminated, truncated, info = env.step(0)
        assert (reward, terminated, truncated, info["stage"]) == (0.9, False, True, 1)
        to_zero += obs == 0
    q = 0.5e-6
    assert stats.binom.ppf(q, n, 0.25) <= to_zero <= stats.binom.isf(q, n, 0.25)


def test_next_state_frequencies_match_P():
    # 2x2 grid, slip 0.3, from the start cell 0 action right: P = (0.2, 0.7, 0.1, 0) over cells
    # 0..3 (see test_families.test_gridworld_2x2_slip_by_hand). Four binomial checks, each with
    # tail mass q = 1e-6 / 8 per side: a correct sampler fails with probability below 1e-6.
    mdp = make("gridworld:rows=2,cols=2,slip=0.3,H=3")
    for form in (mdp, mdp.to_sparse()):
        env = TabularEnv(form)
        env.reset(seed=9)
        n = 5000
        counts = np.zeros(mdp.S, dtype=np.int64)
        for _ in range(n):
            env.reset()
            obs, _, _, _, info = env.step(1)
            counts[obs] += 1
            assert info["prob"] == pytest.approx(mdp.P[0, 1, obs], abs=1e-15)
        q = 1e-6 / 8
        for s2, p in enumerate([0.2, 0.7, 0.1, 0.0]):
            assert stats.binom.ppf(q, n, p) <= counts[s2] <= stats.binom.isf(q, n, p), (s2, counts)
        assert counts[4] == 0  # the terminal state is unreachable in one step from the start


def test_bernoulli_rewards_follow_the_mean():
    # One state, one action, mean reward 0.3, Bernoulli model, discounted only (no truncation):
    # the number of 1s in n steps is Binomial(n, 0.3); acceptance region tail mass below 1e-6.
    mdp = TabularMDP(np.ones((1, 1, 1)), np.full((1, 1), 0.3), gamma=0.5, reward_model="bernoulli")
    env = TabularEnv(mdp)
    env.reset(seed=4)
    n = 20_000
    rewards = np.array([env.step(0)[1] for _ in range(n)])
    assert set(np.unique(rewards)) <= {0.0, 1.0}
    q = 0.5e-6
    assert stats.binom.ppf(q, n, 0.3) <= rewards.sum() <= stats.binom.isf(q, n, 0.3)


def test_deterministic_rewards_are_the_mean():
    env = TabularEnv(make("riverswim:S=3,H=4"))
    env.reset(seed=0)
    # r(0, left) = 0.005 exactly, every time
    assert [env.step(0)[1] for _ in range(4)] == [0.005] * 4


def test_reset_seed_reproduces_the_episode():
    env = TabularEnv(make("gridworld:rows=3,cols=3,slip=0.5,H=30,goal_mode=reset"))

    def episode(seed):
        out = [env.reset(seed=seed)[0]]
        truncated = False
        while not truncated:
            obs, _, _, truncated, _ = env.step(1)
            out.append(obs)
        return out

    assert episode(5) == episode(5)
    assert episode(5) != episode(6)


def test_invalid_action_is_refused():
    env = TabularEnv(make("riverswim:S=3,H=4"))
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action must be an integer in 0\.\.1, got 2"):
        env.step(2)


def test_render_ansi_names_the_state():
    env = TabularEnv(make("gridworld:rows=1,cols=3,H=4"), render_mode="ansi")
    env.reset(seed=0)
    env.step(1)
    assert env.render() == f"{env.mdp.name}: t=1 state=(0,1)\n"
    assert TabularEnv(make("gridworld:rows=1,cols=3,H=4")).render() is None


# ------------------------------------------------------------------------------ toy-text models
def _dict_values(P: dict, H: int | None = None, gamma: float = 1.0, sweeps: int = 0) -> np.ndarray:
    """Independent optimal values on the raw ``P[s][a] = [(prob, s', reward, terminated)]``.

    Finite horizon: H backward sweeps, V_0 returned. Discounted: ``sweeps`` value-iteration
    sweeps. A terminated transition contributes its reward and nothing after it.
    """
    V = [0.0] * len(P)
    for _ in range(H if H is not None else sweeps):
        V = [
            max(
                sum(p * (r + (0.0 if done else gamma * V[s2])) for p, s2, r, done in P[s][a])
                for a in P[s]
            )
            for s in range(len(P))
        ]
    return np.array(V)


TOY_TEXT = [
    ("FrozenLake-v1", {"is_slippery": True}, 100, (1.0, 0.0)),
    ("FrozenLake-v1", {"is_slippery": False}, 100, (1.0, 0.0)),
    ("Taxi-v4", {}, 60, (30.0, -10.0)),
    ("CliffWalking-v1", {}, 50, (100.0, -100.0)),
    ("CliffWalking-v1", {"is_slippery": True}, 50, (100.0, -100.0)),
]


@pytest.mark.parametrize(
    "env_id, kwargs, H, scale_offset",
    TOY_TEXT,
    ids=["frozenlake-slippery", "frozenlake", "taxi", "cliffwalking", "cliffwalking-slippery"],
)
def test_toy_text_optimal_values_match_the_raw_model(env_id, kwargs, H, scale_offset):
    env = gym.make(env_id, **kwargs)
    raw = env.unwrapped.P
    nS, nA = len(raw), len(raw[0])
    conv = from_toy_text(env, horizon=H)
    mdp = conv.mdp
    assert (mdp.S, mdp.A, mdp.horizon) == (nS + 1, nA, H)
    assert conv.terminal_state == nS and (conv.scale, conv.offset) == scale_offset
    P = mdp.dense_P()
    np.testing.assert_allclose(P.sum(-1), 1.0, rtol=0, atol=1e-12)
    assert np.all(P[nS, :, nS] == 1.0)  # the added terminal state is absorbing
    np.testing.assert_array_equal(mdp.mu0[:nS], env.unwrapped.initial_state_distrib)
    sol = backward_induction(mdp)
    expected = _dict_values(raw, H=H)  # (nS,) raw optimal values at stage 0
    tol = 1e-9 * conv.scale * H
    np.testing.assert_allclose(conv.raw_value(sol.V[0, :nS]), expected, rtol=0, atol=tol)
    assert conv.raw_value(sol.value) == pytest.approx(expected @ mdp.mu0[:nS], abs=tol)


def test_toy_text_discounted_values_match_the_raw_model():
    env = gym.make("FrozenLake-v1", map_name="4x4", is_slippery=True)
    conv = from_toy_text(env.unwrapped.P, gamma=0.9)  # the dict alone: mu0 = state 0
    sol = value_iteration(conv.mdp, tol=1e-12)
    expected = _dict_values(env.unwrapped.P, gamma=0.9, sweeps=400)  # 0.9^400 < 1e-18
    np.testing.assert_allclose(conv.raw_value(sol.V[:16]), expected, rtol=0, atol=1e-10)
    assert conv.mdp.mu0[0] == 1.0 and conv.mdp.horizon is None


def test_toy_text_cliffwalking_rescaled_terminal_reward_is_the_image_of_zero():
    # raw rewards -1 and -100, offset -100, scale 100: -1 -> 0.99, -100 -> 0, and the terminal
    # state pays the image of 0, (0 + 100) / 100 = 1. The optimal policy still walks along the
    # cliff edge: 13 steps of -1 from the start (3, 0) to the goal (3, 11), raw value -13.
    conv = from_toy_text(gym.make("CliffWalking-v1"), horizon=50)
    R = conv.mdp.R
    assert set(np.unique(R[:48]).tolist()) == {0.0, 0.99}
    assert R[48].tolist() == [1.0] * 4
    assert conv.raw_value(backward_induction(conv.mdp).value) == pytest.approx(-13.0, abs=1e-9)


def test_toy_text_duplicates_summed_and_terminations_redirected():
    raw = gym.make("FrozenLake-v1", is_slippery=True).unwrapped.P
    mdp = from_toy_text(raw, horizon=5).mdp
    # state 0, action 0 (left): [(1/3, 0), (1/3, 0), (1/3, 4)] -> P(0 | 0, left) = 2/3
    assert mdp.P[0, 0, 0] == pytest.approx(2 / 3, abs=1e-15)
    assert mdp.P[0, 0, 4] == pytest.approx(1 / 3, abs=1e-15)
    # state 14, action 1 (down): 1/3 to the goal 15, terminated -> the terminal state 16
    assert mdp.P[14, 1, 16] == pytest.approx(1 / 3, abs=1e-15) and mdp.P[14, 1, 15] == 0.0
    # mean reward r(14, down) = 1/3 * 1
    assert mdp.R[14, 1] == pytest.approx(1 / 3, abs=1e-15)


def test_toy_text_needs_an_objective_and_a_valid_model():
    raw = gym.make("FrozenLake-v1").unwrapped.P
    with pytest.raises(ValueError, match="has no max_episode_steps: pass horizon=H or gamma="):
        from_toy_text(raw)
    with pytest.raises(ValueError, match="CliffWalking-v1 has no max_episode_steps"):
        from_toy_text(gym.make("CliffWalking-v1"))
    assert from_toy_text(gym.make("FrozenLake-v1")).mdp.horizon == 100  # the spec's limit
    bad = {0: {0: [(1.0, 1, 0.0, False)]}, 1: {0: [(1.0, 2, 0.0, False)]}}
    with pytest.raises(InvalidMDPError, match=r"\(s=1, a=0\) goes to state 2, states are 0\.\.1"):
        from_toy_text(bad, horizon=2)
    bad = {0: {0: [(1.0, 1, 0.0, False)], 1: [(1.0, 1, 0.0, False)]}, 1: {0: [(1.0, 0, 0, False)]}}
    with pytest.raises(InvalidMDPError, match=r"state 1 has actions \[0\], expected 0\.\.1"):
        from_toy_text(bad, horizon=2)
    bad = {0: {0: [(0.5, 1, 0.0, False)]}, 1: {0: [(1.0, 0, 0.0, False)]}}
    with pytest.raises(InvalidMDPError, match=r"P row \(s=0, a=0\) sums to 0\.5"):
        from_toy_text(bad, horizon=2)


def test_converted_toy_text_runs_as_a_gymnasium_env():
    conv = from_toy_text(gym.make("CliffWalking-v1"), horizon=30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gym.make(GYMNASIUM_ID, mdp=conv.mdp, terminal_states=[conv.terminal_state])
        check_env(env.unwrapped)
    # follow the optimal path: up, 11 x right, down -> terminated after 13 steps, raw return -13
    env = TabularEnv(conv.mdp, terminal_states=[conv.terminal_state])
    obs, _ = env.reset(seed=0)
    assert obs == 36
    raw_return = 0.0
    for t, a in enumerate([0] + [1] * 11 + [2]):
        obs, reward, terminated, truncated, _ = env.step(a)
        raw_return += float(conv.raw_reward(reward))
        assert terminated == (t == 12) and not truncated
    assert obs == conv.terminal_state and raw_return == pytest.approx(-13.0, abs=1e-12)
