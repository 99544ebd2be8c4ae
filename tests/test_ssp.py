"""Stochastic shortest path (``kind="ssp"``; seed row 000#51, ``algorithms/ssp/two_timescale.py``):
the instances' properness and policy costs against independent computations, the exact solvers
against each other and against enumeration of every deterministic policy, the two-timescale
step sizes and actor update written out, input errors, the controls, the result."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.planning.ssp import ssp_linear_program, ssp_value_iteration
from theorylab.errors import InvalidMDPError
from theorylab.mdps import make
from theorylab.mdps.ssp import SSPProblem


def _neumann_cost(p, pi, terms=4000):
    """J^pi = sum_k P_pi^k c_pi, summed term by term (no linear solve)."""
    P_pi = np.einsum("sa,sat->st", pi, p.P)[:, : p.n_states]
    c_pi = np.einsum("sa,sa->s", pi, p.c)
    J, term = np.zeros(p.n_states), c_pi.copy()
    for _ in range(terms):
        J += term
        term = P_pi @ term
    return J


def test_instance_trap_cycle_is_improper_and_costs_match_a_neumann_series():
    p = make("ssp-trap:S=5,A=3,trap=0.2,exit=0.5,seed=4")
    S = p.n_states
    trap = p.deterministic(p.improper_policy)
    assert not p.is_proper(trap) and np.all(np.isinf(p.policy_cost(trap)))
    np.testing.assert_array_equal(np.argmax(p.P[np.arange(S), 0], axis=1), (np.arange(S) + 1) % S)
    np.testing.assert_allclose(p.c[:, 0], 0.2)
    assert p.P[S - 1, 1, S] == 1.0 and p.c[S - 1, 1] == 0.5
    for pi in (np.full((S, 3), 1 / 3), p.deterministic(p.proper_policy)):
        assert p.is_proper(pi)
        np.testing.assert_allclose(p.policy_cost(pi), _neumann_cost(p, pi), rtol=1e-9)
    # trap everywhere but the exit, which leaves: proper, cost = trap steps + exit cost
    walk = p.deterministic(np.r_[np.zeros(S - 1, dtype=int), 1])
    np.testing.assert_allclose(p.policy_cost(walk), 0.2 * (S - 1 - np.arange(S)) + 0.5)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_value_iteration_lp_and_enumeration_agree(seed):
    p = make(f"ssp-trap:S=5,A=3,seed={seed}")
    vi, lp = ssp_value_iteration(p), ssp_linear_program(p)
    best = np.full(p.n_states, np.inf)
    for actions in itertools.product(range(p.n_actions), repeat=p.n_states):  # 243 policies
        best = np.minimum(best, p.policy_cost(p.deterministic(actions)))
    np.testing.assert_allclose(vi.J, best, atol=1e-10)
    np.testing.assert_allclose(lp.J, best, atol=1e-8)
    assert p.is_proper(p.deterministic(vi.policy))


def test_step_sizes_and_actor_update_written_out():
    from theorylab.algorithms.ssp import two_timescale as tt

    # two-timescale conditions: exponents in (1/2, 1] (sum = inf, sum of squares < inf),
    # slow / fast = (n + 100)^-(0.75 - 0.55) -> 0
    assert (tt.FAST, tt.SLOW) == (0.55, 0.75)
    n = 1e6
    assert (1 / (n + 100) ** 0.75) / (1 / (n + 100) ** 0.55) == pytest.approx((n + 100) ** -0.2)
    theta = np.array([[[0.0, 1.0, -1.0]]])  # (B=1, S=1, A=3)
    pi = np.exp(theta) / np.exp(theta).sum()
    onehot = np.array([[[0.0, 1.0, 0.0]]])
    delta = np.array([[2.0]])
    want = np.clip(theta - 0.1 * 2.0 * (onehot - pi), -0.9, 0.9)
    np.testing.assert_allclose(tt.actor_step(theta, pi, onehot, delta, 0.1, 0.9), want)
    np.testing.assert_allclose(tt.softmax_policy(theta), pi)
    np.testing.assert_allclose(tt.critic_target(np.array([1.5]), np.array([2.0])), [3.5])


def test_frozen_actor_critic_is_td_of_the_uniform_policy():
    from theorylab.algorithms.ssp.two_timescale import two_timescale
    from theorylab.seeding import ENV_STREAM, generators
    from theorylab.validations.ssp_mutations import ssp_frozen_actor

    p = make("ssp-trap:S=5,A=3,seed=2")
    J_unif = p.policy_cost(np.full((5, 3), 1 / 3))
    with ssp_frozen_actor():
        run = two_timescale(p, 20_000, generators(0, range(8), ENV_STREAM),
                            timescale="actor-critic")  # fmt: skip
    np.testing.assert_allclose(run.policy[:, -1], 1 / 3)  # the actor never moved
    # the critic is TD(0) of the uniform policy: its seed mean is J^uniform up to TD noise
    np.testing.assert_allclose(run.critic[:, -1].mean(axis=0), J_unif, atol=0.1)
    assert np.max(np.abs(J_unif - ssp_value_iteration(p).J)) > 1.0  # far from J*


def test_learners_converge_and_seeds_are_independent_of_batching():
    p = make("ssp-trap:S=5,A=3,seed=0")
    for name in ("ssp-ac", "ssp-ca"):
        r = tl.run(name, p, iterations=8000, seeds=[0, 1])
        assert np.all(r.policy_error[:, -1] < 0.1 * r.policy_error[:, 0])
        alone = tl.run(name, p, iterations=8000, seeds=[1])
        np.testing.assert_array_equal(alone.critic_error[0], r.critic_error[1])


def test_q_learning_baseline_starts_improper_and_converges():
    p = make("ssp-trap:S=5,A=3,seed=0")
    r = tl.run("ssp-q-learning", p, iterations=6000, seeds=2)
    # Q = 0: the greedy action is the cheapest one-step action, the improper trap cycle
    assert np.all(np.isinf(r.policy_error[:, 0]))
    assert np.all(r.policy_error[:, -1] < 0.05) and np.all(r.critic_error[:, -1] < 0.1)
    # its greedy policy is exactly optimal from some n on (error 0): the rate is the critic's
    assert r.rate("critic_error") < -0.25
    with pytest.raises(ValueError, match="parameter step_scale must be <= 1"):
        tl.run("ssp-q-learning", p, iterations=10, step_scale=2.0)


@pytest.mark.parametrize(
    "spec, match",
    [
        ("ssp-trap:S=1", "parameter S must be an integer >= 2"),
        ("ssp-trap:A=1", "parameter A must be an integer >= 2"),
        ("ssp-trap:trap=-1", "parameter trap must be a finite cost > 0"),
        ("ssp-trap:exit=0", "parameter exit must be a finite cost > 0"),
    ],
)
def test_instance_input_errors(spec, match):
    with pytest.raises(InvalidMDPError, match=match):
        make(spec)


def test_problem_and_learner_input_errors():
    P = np.zeros((2, 1, 3))
    P[:, 0, 0] = 1.0  # both states go to state 0 forever: no proper policy
    with pytest.raises(InvalidMDPError, match="proper_policy is not proper"):
        SSPProblem(P=P, c=np.ones((2, 1)), proper_policy=np.zeros(2, dtype=int))
    with pytest.raises(InvalidMDPError, match="costs c"):
        SSPProblem(P=np.full((1, 1, 2), 0.5), c=np.zeros((1, 1)), proper_policy=np.zeros(1))
    p = make("ssp-trap:S=4,A=2")
    with pytest.raises(ValueError, match="parameter C must be a finite number > 0, got -1"):
        tl.run("ssp-ca", p, iterations=10, C=-1)
    with pytest.raises(ValueError, match="critic_scale must be <= 1"):
        tl.run("ssp-ac", p, iterations=10, critic_scale=2.0)
    with pytest.raises(ValueError, match="needs an SSP problem"):
        tl.run("ssp-ac", "riverswim:S=4,H=5", iterations=10)
    with pytest.raises(ValueError, match="iterations"):
        tl.run("ssp-ac", p, iterations=0)


@pytest.mark.slow  # test_validations runs the claim and its controls at quick scale
def test_claim_passes_and_controls_fail():
    from theorylab.validations import validate

    rep = validate("ssp-two-timescale-convergence", "quick")
    assert rep.verdict == "PASS", rep.format()
    assert {c["control"]: c["verdict"] for c in rep.controls} == {
        "ssp-frozen-actor": "FAIL",
        "ssp-actor-ascends-cost": "FAIL",
        "ssp-discounted-critic": "FAIL",
    }


def test_result_summarises_plots_frames_and_round_trips(tmp_path):
    from theorylab.results import SSPResult, load_result

    r = tl.run("ssp-ca", "ssp-trap:S=4,A=2,seed=3", iterations=500, seeds=2)
    assert isinstance(r, SSPResult) and r.grid[0] == 0 and r.grid[-1] == 500
    back = load_result(r.save(tmp_path / "run"))
    np.testing.assert_array_equal(back.policy_error, r.policy_error)
    np.testing.assert_array_equal(back.optimal_cost, r.optimal_cost)
    cols = r.frame_columns()
    assert len(cols["critic_error"]) == 2 * r.grid.size
    s = r.summary()
    assert s["iterations"] == 500 and np.isfinite(s["rate"])
    r.plot(tmp_path / "ssp.png")
    assert (tmp_path / "ssp.png").exists() and r.table_row()["n"] == "500"
