"""KL-regularised policy optimisation (algorithms/policy_optimization, kind "policy-optimization").

Independent answers: the tree gradient against the score-function gradient written out by
enumeration of the responses, and against central finite differences of the objective; the
variational identity against enumeration; the kind through tl.run, its bad input, its result
stored and reloaded.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

import theorylab as tl
from theorylab.algorithms.planning.kl_policy_gradient import regularised_gradient
from theorylab.mdps import make

SPEC = "tokentree:V=3,L=2,prompts=2,reward=random,ref=random,seed=3"


def _objective(task, logits, beta):
    """E r - beta KL(pi || ref) per prompt (P,), written out by enumeration."""
    cond = logits - logsumexp(logits, axis=-1, keepdims=True)
    seq = cond[:, task.token_nodes, task.tokens].sum(-1)  # (P, Y)
    p = np.exp(seq)
    return (p * (task.mean_reward - beta * (seq - task.ref_logprobs))).sum(1)


@pytest.mark.parametrize("beta", [0.0, 0.3, 2.0])
def test_tree_gradient_equals_the_enumerated_score_function_gradient(beta):
    task = make(SPEC)
    rng = np.random.default_rng(0)
    logits = rng.standard_normal(task.ref_cond.shape)
    grad = regularised_gradient(task, logits, beta)
    cond = logits - logsumexp(logits, axis=-1, keepdims=True)
    seq = cond[:, task.token_nodes, task.tokens].sum(-1)
    p = np.exp(seq)
    adv = task.mean_reward - beta * (seq - task.ref_logprobs)  # (P, Y)
    want = np.zeros_like(grad)
    # d log pi(y) / d theta[h, b] = 1[h on y's path] (1[y_t = b] - pi(b|h))
    for x in range(task.n_prompts):
        for y in range(task.n_responses):
            for t in range(task.L):
                h, a = task.token_nodes[y, t], task.tokens[y, t]
                score = -np.exp(cond[x, h])
                score[a] += 1.0
                want[x, h] += p[x, y] * adv[x, y] * score
    np.testing.assert_allclose(grad, want, atol=1e-12)


def test_tree_gradient_matches_finite_differences():
    task = make(SPEC)
    logits = np.random.default_rng(1).standard_normal(task.ref_cond.shape)
    grad = regularised_gradient(task, logits, 0.5)
    eps = 1e-6
    for idx in [(0, 0, 1), (1, 2, 0), (0, 3, 2)]:
        e = np.zeros_like(logits)
        e[idx] = eps
        fd = (_objective(task, logits + e, 0.5) - _objective(task, logits - e, 0.5))[idx[0]]
        assert abs(fd / (2 * eps) - grad[idx]) < 1e-8


def test_variational_identity_on_random_policies():
    """E r - beta KL(pi||ref) = beta log Z - beta KL(pi||pi*), log Z written out here."""
    task = make(SPEC)
    rng = np.random.default_rng(2)
    beta = 0.4
    log_z = np.log((np.exp(task.ref_logprobs) * np.exp(task.mean_reward / beta)).sum(1))
    star = task.soft_optimum(beta).seq_logp
    for _ in range(10):
        logits = 3 * rng.standard_normal(task.ref_cond.shape)
        cond = logits - logsumexp(logits, axis=-1, keepdims=True)
        seq = task.sequence_logprobs(cond)
        lhs = _objective(task, logits, beta)
        rhs = beta * log_z - beta * task.kl(seq, star)
        np.testing.assert_allclose(lhs, rhs, atol=1e-12)


def test_kl_pg_through_tl_run_converges_and_plain_pg_collapses(tmp_path):
    spec = "tokentree:V=3,L=2,prompts=2,reward=random"
    reg = tl.run("kl-pg", spec, iterations=400, beta=0.3)
    assert reg.result_kind == "policy-optimization"
    assert reg.target_gap[-1] < 1e-8
    assert reg.target_value - reg.regularised[-1] < 1e-8
    assert np.all(np.diff(reg.regularised) >= -1e-12)  # ascent on a smooth objective
    plain = tl.run("kl-pg", spec, iterations=400, beta=0.0)
    assert plain.entropy[-1] < 0.1 < 1.0 < reg.entropy[-1]  # from log 9 = 2.2 nats
    assert np.all(np.isnan(plain.target_gap))
    reg.save(tmp_path / "run")
    back = tl.load_result(tmp_path / "run")
    np.testing.assert_array_equal(back.target_gap, reg.target_gap)
    assert back.target_value == reg.target_value


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"iterations": 0}, "iterations must be a positive integer"),
        ({"iterations": 5, "beta": -1.0}, "beta must be a finite number >= 0"),
        ({"iterations": 5, "step": 0.0}, "step must be a finite number > 0"),
    ],
)
def test_kl_pg_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tl.run("kl-pg", "tokentree:V=2,L=2", **kwargs)


def test_kl_pg_refuses_a_tabular_mdp():
    with pytest.raises(ValueError, match="token-tree task"):
        tl.run("kl-pg", "riverswim:S=4,H=5", iterations=3)


def test_the_mutation_fails_the_claim():
    from theorylab.validations import validate

    rep = validate("kl-penalty-bayesian-inference", "quick")
    assert rep.verdict == "PASS", rep.format()


# ------------------------------------------------------------------ soft value iteration
def _random_mdp(seed, S=5, A=3, gamma=0.9):
    """A random discounted MDP (the claims' generator) and a random reference policy."""
    from theorylab.validations.claims.policy_optimization import random_discounted_mdp

    rng = np.random.default_rng(seed)
    return random_discounted_mdp(rng, S, A, gamma), rng.dirichlet(np.ones(A), size=S)


@pytest.mark.parametrize("tau", [0.05, 0.5, 2.0])
def test_soft_value_iteration_equals_the_occupancy_programme(tau):
    from theorylab.algorithms.dual.behaviour_kl import solve_behaviour_kl
    from theorylab.algorithms.planning.soft_value_iteration import (
        regularised_value,
        soft_value_iteration,
    )

    mdp, ref = _random_mdp(0)
    sol = soft_value_iteration(mdp, tau, reference=ref)
    cvx = solve_behaviour_kl(mdp, ref, tau)["value"]
    assert abs(sol.V @ mdp.mu0 - cvx) < 1e-6
    # the policy's exact regularised value is the optimal value (a policy, not just a number)
    np.testing.assert_allclose(regularised_value(mdp, sol.policy, tau, reference=ref), sol.V)


def test_soft_policy_is_softmax_of_q_over_tau_for_the_uniform_reference():
    from theorylab.algorithms.planning.soft_value_iteration import soft_value_iteration

    mdp, _ = _random_mdp(1)
    sol = soft_value_iteration(mdp, 0.3)
    e = np.exp((sol.Q - sol.Q.max(1, keepdims=True)) / 0.3)
    np.testing.assert_allclose(sol.policy, e / e.sum(1, keepdims=True), atol=1e-12)


def test_soft_vi_through_tl_run():
    res = tl.run("soft-vi", "random:S=5,A=3,gamma=0.9", iterations=300, tau=0.1)
    assert res.target_gap[-1] < 1e-12
    assert abs(res.regularised[-1] - res.target_value) < 1e-9
    assert res.objective[-1] >= res.regularised[-1]  # J >= J_tau (the KL is >= 0)


@pytest.mark.parametrize(
    "problem, kwargs, message",
    [
        ("random:S=4,A=2,gamma=0.9", {"iterations": 3, "tau": 0.0}, "tau must be a finite"),
        ("random:S=4,A=2", {"iterations": 3}, "stated for discounted MDPs"),
    ],
)
def test_soft_vi_bad_input(problem, kwargs, message):
    with pytest.raises(ValueError, match=message):
        tl.run("soft-vi", problem, **kwargs)


# ------------------------------------------------------------------ TRPO
def test_penalty_constant_is_the_papers():
    from theorylab.algorithms.policy_optimization.trpo import penalty_constant

    A = np.array([[0.3, -0.7], [0.1, 0.2]])
    gamma = 0.9
    assert penalty_constant(A, gamma) == pytest.approx(4 * 0.7 * 0.9 / (1 - 0.9) ** 2)


def test_surrogate_matches_eta_at_the_old_policy_and_its_gradient():
    """L_pi(pi) = eta(pi), and grad L = grad eta at pi (finite differences of the exact eta)."""
    from theorylab.algorithms.planning.advantage import policy_advantage, surrogate
    from theorylab.algorithms.policy_optimization.trpo import log_linear_policy

    mdp, _ = _random_mdp(3)
    phi = np.random.default_rng(4).standard_normal((mdp.S, mdp.A, 3))
    theta = np.array([0.2, -0.4, 0.7])
    adv = policy_advantage(mdp, log_linear_policy(theta, phi))
    assert surrogate(adv, log_linear_policy(theta, phi)) == pytest.approx(adv.eta, abs=1e-12)
    for j in range(3):
        e = np.zeros(3)
        e[j] = 1e-6
        d_eta = (
            policy_advantage(mdp, log_linear_policy(theta + e, phi)).eta
            - policy_advantage(mdp, log_linear_policy(theta - e, phi)).eta
        ) / 2e-6
        d_l = (
            surrogate(adv, log_linear_policy(theta + e, phi))
            - surrogate(adv, log_linear_policy(theta - e, phi))
        ) / 2e-6
        assert d_l == pytest.approx(d_eta, abs=1e-6)


def test_trpo_penalty_is_monotone_and_the_trap_is_not_without_penalty():
    from theorylab.validations.claims.policy_optimization import trap_instance

    res = tl.run("trpo-penalty", "random:S=4,A=2,gamma=0.9", iterations=3)
    assert np.all(np.diff(res.objective) >= -1e-12)
    trap, phi = trap_instance()
    safe = tl.run("trpo-penalty", trap, iterations=2, features=phi, init=-3.0)
    assert np.all(np.diff(safe.objective) > 0)
    greedy = tl.run("trpo-penalty", trap, iterations=1, features=phi, init=-3.0, c_scale=0.0)
    assert greedy.objective[1] < greedy.objective[0] - 4  # 5.42 -> 1.0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"iterations": 2, "c_scale": -1.0}, "c_scale must be a finite number >= 0"),
        ({"iterations": 2, "features": 0}, "features must be 'tabular' or a positive int"),
        ({"iterations": 2, "features": np.zeros((2, 2, 1))}, "features array must have shape"),
    ],
)
def test_trpo_penalty_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tl.run("trpo-penalty", "random:S=4,A=2,gamma=0.9", **kwargs)


# ------------------------------------------------------------------ best-of-N
def _enumerate(lm):
    """Every sequence's probability and reward, by brute force (tiny n)."""
    import itertools

    seqs = list(itertools.product(range(len(lm.p)), repeat=lm.n))
    prob = np.array([np.prod(lm.p[list(y)]) for y in seqs])
    reward = np.array([lm.w[list(y)].sum() for y in seqs])
    return prob, reward


def test_level_distribution_and_best_of_n_by_enumeration():
    import itertools

    from theorylab.algorithms.policy_optimization.alignment_asymptotics import best_of_n_levels
    from theorylab.mdps import make

    lm = make("memoryless-lm:V=3,n=3,m=2,seed=1")
    prob, reward = _enumerate(lm)
    want = np.bincount(reward, weights=prob, minlength=lm.levels.size)
    np.testing.assert_allclose(lm.level_distribution(), want, atol=1e-15)
    # best of N = 2 with uniform tie-breaking: enumerate the pairs
    bon = np.zeros(lm.levels.size)
    for i, j in itertools.product(range(prob.size), repeat=2):
        bon[max(reward[i], reward[j])] += prob[i] * prob[j]
    np.testing.assert_allclose(best_of_n_levels(lm, 2), bon, atol=1e-15)


def test_frontier_is_the_constrained_optimum_and_best_of_n_stays_below():
    from theorylab.algorithms.policy_optimization.alignment_asymptotics import frontier
    from theorylab.validations.claims.policy_optimization import cvxpy_frontier

    res = tl.run("best-of-n", "memoryless-lm:V=3,n=6", iterations=8)
    assert np.all(res.objective <= res.regularised + 1e-9)
    lm = __import__("theorylab.mdps", fromlist=["make"]).make("memoryless-lm:V=3,n=6")
    for budget in (0.1, 1.0):
        assert frontier(lm, budget)[1] == pytest.approx(cvxpy_frontier(lm, budget), abs=1e-6)


def test_best_of_n_bad_input():
    with pytest.raises(ValueError, match="memoryless LM"):
        tl.run("best-of-n", "tokentree:V=2,L=2", iterations=2)
    with pytest.raises(ValueError, match="iterations must be in 1..60"):
        tl.run("best-of-n", "memoryless-lm:n=4", iterations=61)
    with pytest.raises(ValueError, match="need V >= 2"):
        tl.run("best-of-n", "memoryless-lm:V=1", iterations=2)
