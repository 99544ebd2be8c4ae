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
