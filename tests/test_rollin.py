"""ROLLIN (seed rows 000#7, 001#11): the goal chain's closed forms, the exact softmax gradient,
the curriculum's iteration counts against a second implementation, the roll-in formula, input
errors and the mutations."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.planning.evaluation import evaluate_discounted
from theorylab.algorithms.planning.lp import occupancy_measure
from theorylab.algorithms.planning.softmax_gradient import (
    dense_policy_value,
    softmax_gradient,
    softmax_policy,
)
from theorylab.algorithms.planning.value_iteration import policy_iteration
from theorylab.algorithms.policy_optimization import rollin
from theorylab.mdps import make
from theorylab.mdps.goal_chain import GoalCurriculum

GAMMA = 0.9


def test_goal_chain_optimal_values_and_visitation_closed_forms():
    cur = make("goal-chain:N=7,gamma=0.9")
    assert [t.S for t in cur.tasks] == [8] * 7 and cur.target is cur.tasks[-1]
    for k, task in enumerate(cur.tasks, start=1):
        sol = policy_iteration(task)
        assert sol.V[0] == pytest.approx(GAMMA**k / (1 - GAMMA), abs=1e-12)
        opt = np.zeros((8, 3))
        opt[:k, 0] = 1.0  # right until the goal
        opt[k:, 1] = 1.0  # then stay
        d = occupancy_measure(task, opt, gamma=GAMMA).sum(axis=1)
        want = np.zeros(8)
        want[:k] = (1 - GAMMA) * GAMMA ** np.arange(k)
        want[k] = GAMMA**k
        np.testing.assert_allclose(d, want, atol=1e-12)


def test_uniform_policy_value_shrinks_like_two_to_the_minus_k():
    # the exponential wall from scratch: V^uniform_k(0) / V*_k(0) at least halves per unit of k
    # (goals short of the chain's end; at k = N "right" also stays, which helps a little)
    cur = GoalCurriculum(10, GAMMA)
    uniform = np.full((11, 3), 1 / 3)
    ratio = [evaluate_discounted(t, uniform)[0] / cur.optimal_value(k)
             for k, t in enumerate(cur.tasks[:-1], start=1)]  # fmt: skip
    assert np.all(np.array(ratio[1:]) / np.array(ratio[:-1]) < 0.6)


def test_softmax_gradient_matches_library_evaluation_and_finite_differences():
    rng = np.random.default_rng(3)
    task = GoalCurriculum(5, GAMMA).tasks[2]
    mu = rng.dirichlet(np.ones(6))
    for theta in (np.zeros((6, 3)), rng.standard_normal((6, 3))):
        grad, V = softmax_gradient(task, theta, mu)
        pi = softmax_policy(theta)
        np.testing.assert_allclose(V, evaluate_discounted(task, pi), atol=1e-12)
        np.testing.assert_allclose(dense_policy_value(task, pi), V, atol=1e-12)
        rho = occupancy_measure(task, pi, gamma=GAMMA, mu=mu).sum(axis=1) / (1 - GAMMA)
        Q = task.reward(0) + GAMMA * task.expected_next(V)
        np.testing.assert_allclose(grad, rho[:, None] * pi * (Q - V[:, None]), atol=1e-12)
        fd = np.zeros_like(theta)
        for idx in np.ndindex(6, 3):
            e = np.zeros_like(theta)
            e[idx] = 1e-6
            up = evaluate_discounted(task, softmax_policy(theta + e)) @ mu
            down = evaluate_discounted(task, softmax_policy(theta - e)) @ mu
            fd[idx] = (up - down) / 2e-6
        np.testing.assert_allclose(grad, fd, atol=1e-8)


def _second_implementation(N, beta, warm, scratch, eps=0.1, eta=1.0):
    """ROLLIN written differently: transition matrices by hand, values by matrix inverse, V* by
    value iteration to convergence, the visitation by its power series."""
    S = N + 1
    P = np.zeros((3, S, S))  # (A, S, S): right, stay, reset
    for s in range(S):
        P[0, s, min(s + 1, N)] = P[1, s, s] = P[2, s, 0] = 1.0
    rho = np.eye(S)[0]
    theta = np.zeros((S, 3))
    mu = rho.copy()
    total = 0
    goals = [N] if scratch else range(1, N + 1)
    for goal in goals:
        r = (np.arange(S) == goal).astype(float)
        v = np.zeros(S)
        for _ in range(2000):
            v = r + GAMMA * np.max(P @ v, axis=0)
        vstar = v[0]
        while True:
            pi = np.exp(theta) / np.exp(theta).sum(axis=1, keepdims=True)
            Ppi = sum(pi[:, a, None] * P[a] for a in range(3))
            inv = np.linalg.inv(np.eye(S) - GAMMA * Ppi)
            V = inv @ r
            if vstar - V[0] <= eps * vstar:
                break
            adv = np.stack([r + GAMMA * P[a] @ V - V for a in range(3)], axis=1)
            theta = theta + eta * (inv.T @ mu)[:, None] * pi * adv
            total += 1
        d = (1 - GAMMA) * sum(GAMMA**t * np.linalg.matrix_power(Ppi.T, t) @ rho for t in range(600))
        mu = beta * d + (1 - beta) * rho
        if not warm:
            theta = np.zeros((S, 3))
    return total


@pytest.mark.parametrize(
    "kw",
    [{}, {"schedule": "scratch"}, {"beta": 0.0}, {"warm_start": False}],
    ids=["curriculum", "scratch", "no-mixing", "cold"],
)
def test_iteration_counts_match_a_second_implementation(kw):
    res = tl.run("rollin", "goal-chain:N=6,gamma=0.9", iterations=10_000, **kw)
    want = _second_implementation(
        6, kw.get("beta", 0.5), kw.get("warm_start", True), kw.get("schedule") == "scratch"
    )
    assert res.config["solved"] and res.config["total_iterations"] == want
    tasks = len(res.config["tasks"])
    assert res.objective.shape == (want + tasks,) and res.policies.shape == (want + tasks, 7, 3)
    # the run ends eps-optimal on the target, whose V* is the limit's value
    vstar = GAMMA**6 / (1 - GAMMA)
    assert res.objective[-1] >= 0.9 * vstar and res.target_value == pytest.approx(vstar)
    assert res.objective[-1] == res.regularised[-1]


def test_carry_over_is_the_roll_in_mixture_of_the_paper():
    # mu_k = beta d^{pi_{k-1}}_rho + (1 - beta) rho, d written out as (1-g) (I - g P_pi^T)^-1 rho
    task = GoalCurriculum(4, GAMMA).tasks[1]
    theta = np.random.default_rng(0).standard_normal((5, 3))
    rho = np.eye(5)[0]
    pi = softmax_policy(theta)
    Ppi = np.einsum("sa,sat->st", pi, task.P_flat(0).reshape(5, 3, 5))
    d = (1 - GAMMA) * np.linalg.solve(np.eye(5) - GAMMA * Ppi.T, rho)
    for beta, warm in ((0.5, True), (0.2, False), (0.0, True)):
        th0, mu = rollin.carry_over(task, theta, rho, beta, warm)
        np.testing.assert_allclose(mu, beta * d + (1 - beta) * rho, atol=1e-12)
        np.testing.assert_array_equal(th0, theta if warm else np.zeros_like(theta))


def test_curriculum_beats_scratch_at_distance_twelve():
    spec = "goal-chain:N=12,gamma=0.9"
    cur = tl.run("rollin", spec, iterations=5_000).config["total_iterations"]
    scratch = tl.run("rollin", spec, iterations=5_000, schedule="scratch")
    assert scratch.config["solved"] and cur < scratch.config["total_iterations"]


def test_budget_exhausted_is_reported_not_hidden():
    res = tl.run("rollin", "goal-chain:N=8,gamma=0.9", iterations=10, schedule="scratch")
    assert res.config["solved"] is False and res.config["total_iterations"] == 10


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"beta": 1.5}, "beta"),
        ({"beta": True}, "beta"),
        ({"eta": 0.0}, "eta"),
        ({"eps": 1.0}, "eps"),
        ({"schedule": "reverse"}, "schedule"),
        ({"warm_start": "yes"}, "warm_start"),
        ({"iterations": 0}, "iterations"),
    ],
)
def test_bad_parameters_name_themselves(kw, match):
    kw = {"iterations": 10, **kw}
    with pytest.raises(ValueError, match=match):
        tl.run("rollin", "goal-chain:N=3", **kw)


def test_bad_problems_are_refused():
    with pytest.raises(ValueError, match="task sequence"):
        tl.run("rollin", "random:S=3,A=2,gamma=0.9", iterations=5)
    for spec, match in (("goal-chain:N=0", "N"), ("goal-chain:gamma=1.0", "gamma")):
        with pytest.raises(ValueError, match=match):
            make(spec)


def test_mutations_break_the_curriculum():
    import theorylab.validations.mutations  # noqa: F401  (registers the mutations)
    from theorylab.validations.controls import get_control

    spec = "goal-chain:N=12,gamma=0.9"
    scratch = tl.run("rollin", spec, iterations=20_000, schedule="scratch")
    good = tl.run("rollin", spec, iterations=20_000).config["total_iterations"]
    with get_control("rollin-target-only").applied(None):
        only = tl.run("rollin", spec, iterations=20_000).config["total_iterations"]
    with get_control("rollin-no-carry-over").applied(None):
        fresh = tl.run("rollin", spec, iterations=20_000).config["total_iterations"]
    assert only == scratch.config["total_iterations"]
    assert fresh > scratch.config["total_iterations"] > good
