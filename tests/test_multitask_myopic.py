"""Multitask epsilon-greedy (algorithms/online/multitask_myopic.py; seed 001#12): the shared
model and the "reach x" task rewards written out, the single-task closed form, the mutation,
input errors and tl.run."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.agent import env_spec
from theorylab.algorithms.online.multitask_myopic import MultitaskEpsilonGreedy
from theorylab.mdps import make
from theorylab.validations.claims.exploration import episodes_to_solve

LOCK = "combination-lock:H=4,A=2,code_seed=3"


def _agent(tasks="reach", seeds=2, **kw):
    mdp = make(LOCK)
    rngs = [np.random.default_rng(i) for i in range(seeds)]
    return mdp, MultitaskEpsilonGreedy(env_spec(mdp), seeds, rngs, tasks=tasks, **kw)


def _episodes(mdp, agent, n, seed=0):
    rngs = [np.random.default_rng([seed, i]) for i in range(agent.n_seeds)]
    for _ in range(n):
        agent.update(mdp.rollout(agent.policy(), rng=rngs))


def test_tasks_take_turns_and_reach_rewards_are_entry_probabilities():
    mdp, agent = _agent()
    S, H = mdp.S, mdp.H
    assert agent.M == 1 + S
    _episodes(mdp, agent, 3 * agent.M)
    counts = agent.counts.sum(axis=1)  # (B, H, S, A, S) pooled
    n = counts.sum(axis=-1)
    for b in range(agent.n_seeds):
        for x in range(S):  # task 1 + x: Q at the last stage = P_hat(x' = x | s, a)
            want = np.where(
                n[b, H - 1] > 0, counts[b, H - 1, :, :, x] / np.maximum(n[b, H - 1], 1), 0
            )
            np.testing.assert_allclose(agent.Q[b, 1 + x, H - 1], want, atol=1e-15)
    # every task's Q obeys Q_h = r_h + P_hat_h max_a Q_{h+1} on the pooled model
    P_hat = counts / np.maximum(n, 1.0)[..., None]
    for h in range(H - 1):
        nxt = agent.Q[:, :, h + 1].max(axis=-1)  # (B, M, S)
        cont = np.einsum("bsat,bmt->bmsa", P_hat[:, h], nxt)
        resid = agent.Q[:, 1:, h] - cont[:, 1:]
        reach = np.moveaxis(P_hat[:, h], -1, 1)  # (B, S, S, A): reach x at stage h
        np.testing.assert_allclose(resid, reach, atol=1e-12)


def test_a_single_task_plays_uniformly_until_its_first_reward():
    """tasks="target": every Q is 0 until the lock opens, so the policy is exactly uniform."""
    mdp = make("combination-lock:H=8,A=2,code_seed=3")
    rngs = [np.random.default_rng(i) for i in range(3)]
    agent = MultitaskEpsilonGreedy(env_spec(mdp), 3, rngs, tasks="target")
    _episodes(mdp, agent, 2)  # these seeds do not open the lock (probability 2^-8 per episode)
    assert np.all(agent.reward_sum == 0)
    np.testing.assert_allclose(agent.policy(), 1.0 / mdp.A)


def test_diverse_tasks_solve_a_lock_the_single_task_cannot_in_the_same_budget():
    mdp = make("combination-lock:H=7,A=2,code_seed=5")
    diverse = episodes_to_solve(mdp, None, 6, 200, 1, algorithm="multitask-epsilon-greedy",
                                tasks="reach")  # fmt: skip
    single = episodes_to_solve(mdp, None, 6, 200, 1, algorithm="multitask-epsilon-greedy",
                               tasks="target")  # fmt: skip
    assert np.all(diverse < 200) and diverse.mean() < single.mean()


def test_the_mutation_gives_each_task_its_own_episodes_only():
    from theorylab.validations.controls import get_control
    from theorylab.validations.mutations import MUTATIONS  # noqa: F401  (registers the controls)

    with get_control("multitask-data-unshared").applied(None):
        mdp, agent = _agent()
        _episodes(mdp, agent, agent.M)  # one episode per task
        n = agent.counts.sum(axis=(-1, -2, -3, -4))  # (B, M) transitions per serving task
        assert np.all(n == mdp.H)
        # task 1 + x planned on its own single episode, not the pooled M episodes
        own = agent.counts[:, 2].sum(axis=-1)  # (B, H, S, A)
        assert own.sum() == agent.n_seeds * mdp.H


@pytest.mark.parametrize(
    ("kw", "match"), [({"tasks": "all"}, "tasks must be one of"), ({"epsilon": 1.5}, "epsilon")]
)
def test_bad_input_is_one_line(kw, match):
    with pytest.raises(ValueError, match=match) as err:
        _agent(**kw)
    assert len(str(err.value).splitlines()) == 1


def test_registered_with_its_paper_and_runs_through_tl_run():
    from theorylab.algorithms.registry import get_algorithm

    entry = get_algorithm("multitask-epsilon-greedy")
    assert entry.kind == "online" and "001#12" in entry.papers
    res = tl.run("multitask-epsilon-greedy", LOCK, episodes=20, seeds=2, tasks="reach")
    assert res.regret.shape == (2, 20)
