"""Cascading RL (seed row 001#13): the cascading MDP, the BestPerm oracle against brute force,
CascadingVI's constants, the runner, input errors and the controls of ``cascading-vi-sqrt-k``."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.cascading.best_perm import best_perm
from theorylab.algorithms.cascading.cascading_vi import CascadingVI
from theorylab.errors import InvalidMDPError
from theorylab.mdps import make
from theorylab.mdps.cascading import cascade_value


def brute(q, w, w_bot, m):
    """The best value over all ordered lists, written out with explicit loops."""
    best = -np.inf
    for lst in itertools.permutations(range(len(q)), m):
        v, reach = 0.0, 1.0
        for a in lst:
            v += reach * q[a] * w[a]
            reach *= 1.0 - q[a]
        best = max(best, v + reach * w_bot)
    return best


@pytest.mark.parametrize("seed", range(40))
def test_best_perm_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    N = int(rng.integers(1, 7))
    m = int(rng.integers(1, N + 1))
    q, w, w_bot = rng.uniform(size=N), 3 * rng.uniform(size=N), 3 * rng.uniform()
    chosen, value = best_perm(q, w, w_bot, m)
    assert len(set(chosen.tolist())) == m
    assert value == pytest.approx(brute(q, w, w_bot, m), abs=1e-12)
    assert float(cascade_value(q[chosen], w[chosen], w_bot)) == pytest.approx(value, abs=1e-12)


def test_best_perm_batched_and_sorted_by_w():
    rng = np.random.default_rng(7)
    q, w, w_bot = rng.uniform(size=(3, 4, 6)), rng.uniform(size=(3, 4, 6)), rng.uniform(size=(3, 4))
    lists, values = best_perm(q, w, w_bot, 3)
    assert lists.shape == (3, 4, 3) and values.shape == (3, 4)
    for i, j in itertools.product(range(3), range(4)):
        assert values[i, j] == pytest.approx(brute(q[i, j], w[i, j], w_bot[i, j], 3), abs=1e-12)
        assert np.all(np.diff(w[i, j][lists[i, j]]) <= 0)  # the exchange argument's order


def test_cascade_value_closed_forms():
    # one item: q w + (1 - q) w_bot; two items: q1 w1 + (1 - q1) q2 w2 + (1 - q1)(1 - q2) w_bot
    assert float(cascade_value([0.3], [2.0], 1.0)) == pytest.approx(0.3 * 2 + 0.7 * 1)
    v = float(cascade_value([0.3, 0.5], [2.0, 4.0], 1.0))
    assert v == pytest.approx(0.3 * 2 + 0.7 * 0.5 * 4 + 0.7 * 0.5 * 1)


def test_optimal_is_attained_and_rollouts_match_evaluation():
    mdp = make("cascading:S=3,N=4,m=2,H=3,seed=2")
    V, best = mdp.optimal()
    assert mdp.evaluate(best[None])[0] == pytest.approx(mdp.mu0 @ V[0], abs=1e-12)
    rng = np.random.default_rng(0)
    others = np.array([[rng.permutation(4)[:2] for _ in range(3)] for _ in range(3)])[None]
    assert mdp.evaluate(others)[0] <= mdp.mu0 @ V[0] + 1e-12
    gens = [np.random.default_rng(i) for i in range(4000)]
    _, _, rewards = mdp.rollout(np.repeat(best[None], 4000, axis=0), gens)
    ret = rewards.sum(axis=1)
    assert abs(ret.mean() - mdp.evaluate(best[None])[0]) < 4 * ret.std() / math.sqrt(ret.size)


def test_bonus_constants_written_out():
    mdp = make("cascading:S=2,N=4,m=2,H=2")
    agent = CascadingVI(mdp, 1, [np.random.default_rng(0)], episodes=1000, delta=0.1)
    assert agent.L == pytest.approx(math.log(2 * 2 * 5 * 2 * 1000 / 0.1))
    agent.n_exam[0, 0, 1], agent.n_click[0, 0, 1] = 50, 10
    q_bar = agent.optimistic_q()
    assert q_bar[0, 0, 1] == pytest.approx(min(1.0, 10 / 50 + math.sqrt(agent.L / (2 * 50))))
    assert q_bar[0, 0, 0] == 1.0  # never examined


def test_run_regret_nonnegative_and_policy_read_only():
    res = tl.run("cascading-vi", "cascading:S=2,N=4,m=2,H=2", episodes=60, seeds=2)
    assert res.regret.shape == (2, 60) and res.regret.min() >= -1e-12
    agent = CascadingVI(make("cascading:S=2,N=4,m=2,H=2"), 1, [None], episodes=10)
    with pytest.raises(ValueError):
        agent.policy()[0, 0, 0, 0] = 1


def test_input_errors():
    with pytest.raises(InvalidMDPError, match="m must be <= N"):
        make("cascading:N=3,m=4")
    with pytest.raises(InvalidMDPError, match="q_low"):
        make("cascading:q_low=0.7,q_high=0.2")
    with pytest.raises(ValueError, match="bonus"):
        tl.run("cascading-vi", "cascading:S=2,N=4,m=2,H=2", episodes=5, bonus=-1.0)
    with pytest.raises(ValueError, match="cascading MDP"):
        tl.run("cascading-vi", "chain:S=4,H=3", episodes=5)


def test_sort_by_qw_mutation_misses_brute_force():
    from theorylab.validations.cascading_mutations import cascading_sort_by_qw
    from theorylab.validations.claims.cascading import oracle_gaps

    assert oracle_gaps(200, 0)[1] == 0
    with cascading_sort_by_qw():
        assert oracle_gaps(200, 0)[1] > 0
