"""CGPO with a mixture of judges (seed 002-004#F8): the instance, the dual's gradient, the fixed
point against an independent constrained solve, plain RLHF's reward hacking, input errors."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.dual.cgpo import cgpo_moj, dual_value_and_gradient, optimal_multipliers
from theorylab.errors import InvalidMDPError
from theorylab.mdps import make


def test_instance_has_hacks_and_a_safe_response():
    b = make("judged-bandit")
    assert b.flags.shape == (3, 4, 6) and np.all(b.flags[:, :, 0] == 0)
    assert np.all(b.reward[:, -1] > b.reward[:, :-1].max(1))
    for s in range(4):
        assert b.flags[s % 3, s, -1] == 1.0


def test_dual_gradient_is_finite_differences():
    b = make("judged-bandit:S=3,A=5,K=2,seed=4")
    lam = np.array([0.3, 1.1])
    _, g = dual_value_and_gradient(b, lam)
    h = 1e-6
    for j in range(2):
        e = np.zeros(2)
        e[j] = h
        fd = (dual_value_and_gradient(b, lam + e)[0] - dual_value_and_gradient(b, lam - e)[0]) / (
            2 * h
        )
        assert abs(fd - g[j]) < 1e-7


def test_fixed_point_is_the_constrained_optimum():
    """Against scipy's SLSQP on the primal (a second solver, written here)."""
    from scipy.optimize import minimize

    b = make("judged-bandit:S=2,A=4,K=2,beta=0.5,seed=5")
    path = cgpo_moj(b, 4000)
    pi = np.exp(path.policies[-1])
    S, A = b.reward.shape

    def neg(x):
        p = x.reshape(S, A)
        return -b.objective(np.clip(p, 1e-300, None))

    cons = [{"type": "eq", "fun": lambda x, s=s: x.reshape(S, A)[s].sum() - 1} for s in range(S)]
    cons += [
        {"type": "ineq", "fun": lambda x, j=j: b.eps[j] - b.violations(x.reshape(S, A))[j]}
        for j in range(b.K)
    ]
    res = minimize(
        neg,
        b.ref.ravel(),
        method="SLSQP",
        bounds=[(1e-12, 1)] * (S * A),
        constraints=cons,
        options={"ftol": 1e-14, "maxiter": 2000},
    )
    assert np.abs(res.x.reshape(S, A) - pi).max() < 1e-4
    assert np.all(b.violations(pi) <= b.eps + 1e-9)
    assert np.allclose(path.config["multipliers"][-1], optimal_multipliers(b), atol=1e-8)


def test_plain_rlhf_hacks():
    b = make("judged-bandit")
    plain = b.gibbs(np.zeros(b.K))
    assert np.any(b.violations(plain) > 5 * b.eps)


def test_mutation_is_plain_rlhf():
    from theorylab.validations.active_context_mutations import cgpo_judges_ignored

    b = make("judged-bandit")
    with cgpo_judges_ignored():
        path = cgpo_moj(b, 2000)
    assert np.allclose(np.exp(path.policies[-1]), b.gibbs(np.zeros(b.K)), atol=1e-8)


def test_runs_through_tl_run():
    res = tl.run("cgpo-moj", "judged-bandit", iterations=50)
    assert res.objective.shape == (51,)


@pytest.mark.parametrize(
    "spec, key",
    [
        ("judged-bandit:A=2", "A"),
        ("judged-bandit:eps=0", "eps"),
        ("judged-bandit:hack=0.5", "hack"),
    ],
)
def test_bad_instance_is_one_line(spec, key):
    with pytest.raises(InvalidMDPError, match=key):
        make(spec)


def test_bad_iterations():
    with pytest.raises(ValueError, match="iterations"):
        cgpo_moj(make("judged-bandit"), 0)
