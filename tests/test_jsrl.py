"""JSRL (000#3): the agent's policy and curriculum, the baseline's closed form, the claim and
its controls."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.agent import env_spec
from theorylab.algorithms.online.jsrl import JumpStartQLearning
from theorylab.mdps import make
from theorylab.validations.claims.exploration import (
    JSRLHorizonScaling,
    episodes_to_solve,
    lock_guide,
    lock_optimum,
    lock_values,
)
from theorylab.validations.controls import get_control
from theorylab.validations.mutations import MUTATIONS  # noqa: F401  (registers the controls)


def agent(mdp, B=3, **params):
    rngs = [np.random.default_rng(i) for i in range(B)]
    return JumpStartQLearning(env_spec(mdp), B, rngs, **params)


def test_registered_with_its_paper_and_runs_through_tl_run():
    from theorylab.algorithms.registry import get_algorithm

    entry = get_algorithm("jsrl")
    assert entry.kind == "online" and "000#3" in entry.papers
    res = tl.run("jsrl", "combination-lock:H=4,A=2,code_seed=2", episodes=30, seeds=2)
    assert res.regret.shape == (2, 30)


def test_baseline_first_policy_opens_the_lock_with_probability_A_to_the_minus_H():
    # closed form: all Q = 0, ties split uniformly, so the played policy is uniform: V = A^-H
    H, A = 5, 3
    res = tl.run("jsrl", f"combination-lock:H={H},A={A},code_seed=4", episodes=1, seeds=2)
    np.testing.assert_allclose(res.regret[:, 0], 1.0 - A ** (-H), rtol=0, atol=1e-12)


def test_policy_is_guide_before_the_switch_and_epsilon_greedy_after():
    mdp = make("combination-lock:H=4,A=3,code_seed=1")
    guide = np.full((4, 5), 2)
    ag = agent(mdp, guide=guide, epsilon=0.3)
    ag.switch[:] = [3, 1, 0]
    ag.Q[:, :, :, 1] = 0.5  # action 1 the unique greedy action everywhere
    pi = ag.policy()  # (B, H, S, A)
    learner = np.array([0.1, 0.8, 0.1])  # (1 - eps) on the greedy action + eps / A
    for b, s in enumerate([3, 1, 0]):
        for h in range(4):
            want = np.eye(3)[2] if h < s else learner
            np.testing.assert_allclose(pi[b, h], np.broadcast_to(want, (5, 3)), atol=1e-12)


def test_perfect_guide_walks_the_switch_back_and_solves():
    H, A = 6, 2
    mdp = make(f"combination-lock:H={H},A={A},code_seed=7")
    from theorylab.mdps.families.chain import combination_code

    guide = lock_guide(H, A, combination_code(H, A, 7), H)
    ag = agent(mdp, guide=guide, epsilon=0.0)
    rngs = [np.random.default_rng([9, i]) for i in range(3)]
    for _ in range(200):
        ag.update(mdp.rollout(ag.policy(), rng=rngs))
    assert (ag.switch == 0).all()
    np.testing.assert_array_equal(
        ag.learner_policy()[:, np.arange(H), np.arange(H)],
        guide[np.arange(H), np.arange(H)][None].repeat(3, 0),
    )


def test_patience_moves_a_stuck_switch():
    mdp = make("combination-lock:H=5,A=2,code_seed=3")
    bad = np.zeros((5, 6), dtype=np.int64)
    ag = agent(mdp, guide=bad, patience=4)
    traj = mdp.rollout(np.zeros((3, 5, 6), dtype=np.int64), rng=0)
    traj.rewards[:] = 0.0  # no success
    for _ in range(11):
        ag.update(traj)
    np.testing.assert_array_equal(ag.switch, [3, 3, 3])  # H - 1 = 4: one timeout after 4
    ag.update(traj)
    np.testing.assert_array_equal(ag.switch, [2, 2, 2])  # the second after 8 more (doubled)
    np.testing.assert_array_equal(ag.wait, [16, 16, 16])


def test_exact_values_against_the_closed_forms():
    H, A = 4, 3
    mdp = make(f"combination-lock:H={H},A={A},code_seed=5")
    P, R = mdp.dense_P(), np.asarray(mdp.R, dtype=float)
    assert lock_optimum(P, R, H) @ mdp.mu0 == pytest.approx(1.0)
    uniform = np.full((1, H, H + 1, A), 1.0 / A)
    assert lock_values(P, R, uniform)[0] @ mdp.mu0 == pytest.approx(A ** (-H))


def test_baseline_episodes_to_solve_mean_is_A_to_the_H():
    H, A, B = 4, 2, 300
    mdp = make(f"combination-lock:H={H},A={A},code_seed=1")
    k = episodes_to_solve(mdp, None, B, 400, 0)
    # Geometric(A^-H): mean A^H = 16, standard error sqrt((1 - p) / p^2 / B) = 0.90
    assert abs(k.mean() - A**H) <= 4 * np.sqrt((1 - A ** (-H)) * A ** (2 * H) / B)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"epsilon": 1.5}, "epsilon must lie in"),
        ({"lr": 0.0}, "lr must lie in"),
        ({"patience": -1}, "patience must be"),
        ({"guide": np.zeros((2, 2), dtype=np.int64)}, "guide must have shape"),
        ({"guide": np.full(5, 7)}, "guide must hold integer actions"),
    ],
)
def test_bad_parameters_are_refused(params, match):
    mdp = make("combination-lock:H=4,A=2")
    with pytest.raises(ValueError, match=match):
        agent(mdp, **params)


TINY = JSRLHorizonScaling(scales={"tiny": {"Hs": (4, 5, 6, 7, 8), "seeds": 16, "A": 2}})


def test_claim_passes_on_a_tiny_scale():
    rep = TINY.run("tiny")
    assert rep.passed, [c.detail for c in rep.checks]


@pytest.mark.parametrize("control", ["jsrl-random-guide", "jsrl-frozen-switch"])
def test_controls_fail_the_claim(control):
    with get_control(control).applied(TINY):
        rep = TINY.run("tiny")
    assert not rep.passed
    polynomial = next(c for c in rep.checks if c.name.startswith("JSRL with a good guide"))
    assert not polynomial.passed, polynomial.detail
