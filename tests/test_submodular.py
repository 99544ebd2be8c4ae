"""Submodular RL (Prajapat et al. 2024): the families of mdps/submodular.py, the exact optima of
algorithms/planning/submodular.py and SubPO (algorithms/policy_optimization/subpo.py).

Independent answers: OPT by enumerating action sequences, by the covered-set DP, by choosing
subsets (bandits) and in closed form (the tight instance, the corridor); the greedy constant
written out; SubPO's marginal-gain gradient against the REINFORCE gradient of the whole return
F(tau) enumerated over action sequences and against finite differences; the modular special
case against the library's backward induction; the mutation that drops the history.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.planning import submodular as sm
from theorylab.algorithms.policy_optimization import subpo as sp
from theorylab.mdps import make


def test_the_greedy_constants_are_the_printed_formulas():
    for k in range(1, 12):
        assert sm.greedy_constant(k) == pytest.approx(1 - ((k - 1) / k) ** k, abs=1e-15)
        assert sm.greedy_constant(k) >= 1 - 1 / math.e
    from theorylab.validations.claims.submodular import ONE_MINUS_1_OVER_E

    assert ONE_MINUS_1_OVER_E == pytest.approx(1 - math.exp(-1), abs=1e-15)


def test_coverage_is_monotone_and_submodular():
    p = make("coverage-grid:rows=3,cols=3,H=4,radius=1,seed=2")
    rng = np.random.default_rng(0)
    for _ in range(200):
        B = list(rng.choice(9, size=rng.integers(1, 6), replace=False))
        A = B[: rng.integers(0, len(B) + 1)]
        s = int(rng.integers(9))
        gain_A = p.value([*A, s]) - p.value(A)
        gain_B = p.value([*B, s]) - p.value(B)
        assert gain_A >= gain_B >= 0  # diminishing returns, monotone


@pytest.mark.parametrize(
    "spec",
    [
        "coverage-grid:rows=3,cols=3,H=5,seed=0",
        "coverage-grid:rows=2,cols=4,H=6,radius=0,seed=1",
        "coverage-bandit:S=6,H=4,seed=2",
        "coverage-corridor:k=4",
        "coverage-tight:k=3",
    ],
)
def test_optimum_by_enumeration_equals_the_covered_set_dp_and_the_tree(spec):
    p = make(spec)
    opt, states = sm.optimum_by_enumeration(p)
    assert p.value(states) == opt
    assert sm.optimum_by_coverage_dp(p) == opt
    assert sp.history_tree(p).leaf_value.max() == opt


@pytest.mark.parametrize("seed", range(4))
def test_bandit_optimum_is_the_best_subset_and_greedy_meets_its_constant(seed):
    p = make(f"coverage-bandit:S=7,H=4,J=12,seed={seed}")
    k = p.H - 1  # picks; repeats never help a monotone F, so OPT is the best k-subset
    best = max(p.value([0, *T]) for T in itertools.combinations(range(p.S), k))
    assert sm.optimum_by_enumeration(p)[0] == best
    greedy = sm.greedy_trajectory(p)[1]
    assert greedy >= (1 - ((k - 1) / k) ** k) * best - 1e-12


@pytest.mark.parametrize("k", [2, 3, 4])
def test_tight_instance_closed_form(k):
    p = make(f"coverage-tight:k={k}")
    assert sm.optimum_by_enumeration(p)[0] == k ** (k + 1)  # the k columns cover everything
    states, greedy = sm.greedy_trajectory(p)
    assert states == list(range(k + 1))  # the start, then the rows in order
    assert greedy == pytest.approx(k ** (k + 1) * (1 - (1 - 1 / k) ** k), rel=1e-14)


@pytest.mark.parametrize("k", [2, 4, 6])
def test_corridor_closed_form_greedy_is_lured_left(k):
    p = make(f"coverage-corridor:k={k}")
    assert sm.optimum_by_enumeration(p)[0] == 3 * k
    assert sm.greedy_trajectory(p) == (list(range(k, -1, -1)), float(k + 3))


def test_marginal_gains_telescope_on_a_hand_example():
    p = make("coverage-corridor:k=3")  # weights [1, 1, 4, 0, 3, 3, 3], start 3
    states = [3, 2, 3, 4, 4]
    gains = sm.marginal_gains(p, states)
    np.testing.assert_array_equal(gains, [0.0, 4.0, 0.0, 3.0, 0.0])
    assert gains.sum() == p.value(states) == 7.0


def _reinforce_gradient(p, tree, pis):
    """sum over action sequences of P(a) F(tau(a)) grad log P(a), per node (the whole return,
    no marginal gains), written out by enumeration."""
    grads = [np.zeros_like(pi) for pi in pis]
    for actions in itertools.product(range(p.A), repeat=p.H - 1):
        nodes, node = [], 0
        for h, a in enumerate(actions):
            nodes.append(node)
            node = tree.child[h][node, a]
        prob = np.prod([pis[h][n, a] for h, (n, a) in enumerate(zip(nodes, actions))])
        F = p.value(p.rollout(actions))
        for h, (n, a) in enumerate(zip(nodes, actions)):
            score = -pis[h][n].copy()
            score[a] += 1.0
            grads[h][n] += prob * F * score
    return grads


@pytest.mark.parametrize(
    "spec", ["coverage-grid:rows=2,cols=2,H=4,seed=1", "coverage-bandit:S=4,H=3"]
)
def test_subpo_gradient_equals_the_enumerated_reinforce_gradient(spec):
    p = make(spec)
    tree = sp.history_tree(p)
    rng = np.random.default_rng(3)
    theta = [rng.standard_normal((s.size, p.A)) for s in tree.state[:-1]]
    pis = sp.node_policies(tree, theta, "history")
    grads, J = sp.subpo_gradient(tree, pis)
    assert J == pytest.approx(sp.exact_objective(tree, pis), rel=1e-12)
    for got, want in zip(grads, _reinforce_gradient(p, tree, pis), strict=True):
        np.testing.assert_allclose(got, want, atol=1e-12)


def test_markov_gradient_matches_finite_differences():
    p = make("coverage-grid:rows=2,cols=3,H=4,seed=4")
    tree = sp.history_tree(p)
    rng = np.random.default_rng(5)
    theta = [rng.standard_normal((p.S, p.A)) for _ in range(p.H - 1)]
    node = sp.subpo_gradient(tree, sp.node_policies(tree, theta, "markov"))[0]
    grads = sp.parameter_gradient(tree, node, "markov", p.S)
    eps = 1e-6
    for h, s, a in [(0, 0, 1), (1, 1, 2), (2, 4, 3), (1, 3, 0)]:
        up = [t.copy() for t in theta]
        dn = [t.copy() for t in theta]
        up[h][s, a] += eps
        dn[h][s, a] -= eps
        fd = (
            sp.exact_objective(tree, sp.node_policies(tree, up, "markov"))
            - sp.exact_objective(tree, sp.node_policies(tree, dn, "markov"))
        ) / (2 * eps)
        assert grads[h][s, a] == pytest.approx(fd, abs=1e-7)


@pytest.mark.parametrize("seed", [0, 1])
def test_modular_utility_is_standard_rl(seed):
    from theorylab.algorithms.planning.finite_horizon import backward_induction

    p = make(f"modular-grid:rows=2,cols=3,H=5,seed={seed}")
    planner = backward_induction(p.modular_tabular()).value
    assert sm.optimum_by_enumeration(p)[0] == planner
    res = tl.run("subpo", p, iterations=400, policy="markov")
    assert res.target_value == planner
    assert planner - 0.01 <= res.objective[-1] <= planner + 1e-12
    assert np.all(np.diff(res.objective) >= -1e-9)  # small exact steps improve J here


def test_subpo_through_tl_run_reaches_the_optimum_where_greedy_fails():
    res = tl.run("subpo", "coverage-corridor:k=6", iterations=300)
    assert res.target_value == 18.0
    assert res.objective[-1] / res.target_value > 0.99
    assert sm.greedy_trajectory(make("coverage-corridor:k=6"))[1] / 18.0 == 0.5
    assert res.policies.shape[0] == 301 and np.allclose(res.policies.sum(-1), 1.0)


def test_uniform_policy_value_by_enumeration_on_the_corridor():
    p = make("coverage-corridor:k=3")
    want = np.mean([p.value(p.rollout(a)) for a in itertools.product(range(2), repeat=3)])
    assert tl.run("subpo", p, iterations=1).objective[0] == pytest.approx(want, rel=1e-14)


def test_singleton_reward_mutation_breaks_telescoping_and_misleads_subpo():
    from theorylab.validations.submodular_mutations import subpo_singleton_reward

    p = make("coverage-bandit:S=8,H=5,seed=3")
    with subpo_singleton_reward():
        tree = sp.history_tree(p)
        res = tl.run("subpo", p, iterations=300)
    from theorylab.validations.claims.submodular import path_sums

    assert np.abs(path_sums(tree) - tree.leaf_value).max() > 1.0
    assert res.objective[-1] / res.target_value < 1 - 1 / math.e


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: tl.run("subpo", "riverswim:S=4,H=5", iterations=3), "needs a submodular MDP"),
        (lambda: tl.run("subpo", "coverage-corridor:k=3", iterations=0), "iterations must be"),
        (lambda: tl.run("subpo", "coverage-corridor:k=3", iterations=2, lr=-1.0), "lr must be"),
        (
            lambda: tl.run("subpo", "coverage-corridor:k=3", iterations=2, policy="tabular"),
            "policy must be one of history, markov",
        ),
        (lambda: tl.run("subpo", "coverage-grid:H=40", iterations=2), "action sequences"),
        (lambda: make("coverage-bandit:S=1"), "parameter S must be an integer >= 2"),
        (lambda: make("coverage-bandit:p=1.5"), "parameter p must be a probability"),
        (lambda: make("coverage-corridor:k=1"), "parameter k must be an integer >= 2"),
        (lambda: make("coverage-grid:rows=1,cols=1"), "need at least 2 cells"),
        (lambda: make("modular-grid:H=1"), "parameter H must be an integer >= 2"),
        (lambda: make("coverage-grid").modular_tabular(), "only a modular utility"),
    ],
)
def test_bad_input_is_one_line(call, message):
    with pytest.raises(ValueError, match=message) as info:
        call()
    assert "\n" not in str(info.value)
