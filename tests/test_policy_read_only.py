"""``policy()`` hands out arrays the caller cannot corrupt (issue 13, item 5).

For every registered online algorithm: writing into the returned policy raises, and a policy kept
from episode k is unchanged after the agent learns from episode k (UCBVI's sparse plan stage
rewrites its table in place; before the fix a caller kept a live alias of it).
"""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.algorithms.registry import list_algorithms, make_agent
from theorylab.algorithms.risk.augmented_policy import AugmentedPolicy, budget_rollout
from theorylab.experiment import env_spec
from theorylab.mdps import make
from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators

PROBLEM = {
    "linucb": "linear-bandit:d=4,A=12,seed=1",
    "lsvi": "linear-simplex:S=5,A=3,d=3,H=4,rewards=cube",
    "lsvi-ucb": "linear-simplex:S=5,A=3,d=3,H=4,rewards=cube",
    "lmc-lsvi": "linear-simplex:S=5,A=3,d=3,H=4,rewards=cube",
    "rep-ucb": "lowrank-simplex:S=6,A=3,d=2,H=2,seed=3",
    "cvar-ucbvi": "cvar-safe-risky:H=3",
    "cvar-ela": "lowrank-simplex:S=6,A=3,d=2,H=2,seed=3,reward_model=bernoulli",
    "contrastive-ucb": "lowrank-simplex:S=6,A=3,d=2,H=2,seed=3",  # issue 31 (rep31)
    "musik": "block-lock:H=3,A=2,m=2",  # issue 31 (rep31)
}


def extra(name: str, mdp) -> dict:
    from theorylab.algorithms.registry import algorithm_parameters

    params = algorithm_parameters(name)
    out = {"episodes": 10} if "episodes" in params else {}
    if "feature_class" in params:
        out["feature_class"] = mdp.candidates
    if "rank" in params:  # contrastive-ucb: the feature dimension to learn
        out["rank"] = mdp.d
    if "n_latent" in params:  # musik: latent states per step of the block MDP
        out["n_latent"] = mdp.n_latent
    if "samples" in params:  # musik: decode layers within the 10 episodes
        out["samples"] = 2
    if "dataset" in params:  # wsrl (offline31b): the offline data it warm-starts from, B = 2
        from theorylab.algorithms.offline.dataset import make_dataset

        out["dataset"] = make_dataset(mdp, 5 * mdp.horizon, coverage=0.5, seeds=2)
        out["warmup"] = 1
    return out


def tables(policy) -> list[np.ndarray]:
    if isinstance(policy, AugmentedPolicy):
        return [policy.actions, policy.initial_budget]
    return [policy]


def one_episode(mdp, agent, policy, rngs):
    if isinstance(policy, AugmentedPolicy):
        traj = budget_rollout(mdp, policy.as_batch(), rngs)
    else:
        traj = mdp.rollout(policy, rng=rngs)
    agent.update(traj)


@pytest.mark.parametrize("name", list_algorithms("online"))
def test_policy_is_read_only_and_not_an_alias(name):
    mdp = make(PROBLEM.get(name, "riverswim:S=4,H=3"))
    if name.startswith("ucbvi"):
        mdp = mdp.to_sparse()  # the in-place (sparse) plan stage
    B = 2
    agent = make_agent(
        name, env_spec(mdp), B, generators(0, range(B), AGENT_STREAM), **extra(name, mdp)
    )
    env_rngs = generators(0, range(B), ENV_STREAM)
    first = agent.policy()
    kept = [t.copy() for t in tables(first)]
    for t in tables(first):
        assert not t.flags.writeable, name
        with pytest.raises(ValueError, match="read-only"):
            t.reshape(-1)[0] = 1
    for _ in range(3):
        one_episode(mdp, agent, agent.policy(), env_rngs)
        for t, k in zip(tables(first), kept, strict=True):
            np.testing.assert_array_equal(t, k, err_msg=name)
