"""CDPO (seed 001#71, algorithms/online/cdpo.py): the conservative update against enumeration,
the posterior expectation against Monte Carlo, eta = 0 against PSRL, input errors, the claim and
its control."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import theorylab as tl
from theorylab.agent import env_spec
from theorylab.algorithms.online.cdpo import CDPO, conservative_update
from theorylab.algorithms.planning import evaluate_policies
from theorylab.mdps import TabularMDP, make


def _random_model(rng, S=2, A=2, H=2):
    P = rng.dirichlet(np.ones(S), size=(H, S, A))  # (H, S, A, S)
    R = rng.uniform(size=(H, S, A))  # (H, S, A)
    return P, R


def test_conservative_update_is_the_best_policy_of_the_ball_by_enumeration():
    """Every vertex of the per-state TV ball around a point mass is (1-eta) e_ref + eta e_a;
    a linear objective over a rectangular product of balls peaks at a product of vertices, so
    enumerating the A^(H S) choices of a and evaluating each exactly gives the optimum."""
    rng = np.random.default_rng(3)
    S, A, H, eta = 2, 3, 2, 0.35
    for _ in range(5):
        P, R = _random_model(rng, S, A, H)
        ref = rng.integers(0, A, size=(H, S))
        pi, V = conservative_update(P[None], R[None], ref[None], eta)
        mdp = TabularMDP(P, R, horizon=H, mu0=np.full(S, 1.0 / S))
        best = -np.inf
        for choice in itertools.product(range(A), repeat=H * S):
            cand = np.zeros((H, S, A))
            cand[np.arange(H)[:, None], np.arange(S)[None], ref] += 1 - eta
            cand[np.arange(H)[:, None], np.arange(S)[None], np.reshape(choice, (H, S))] += eta
            best = max(best, float(evaluate_policies(mdp, cand)[0] @ mdp.mu0))
        exact = float(evaluate_policies(mdp, pi[0])[0] @ mdp.mu0)
        assert abs(exact - best) < 1e-12
        assert abs(float(V[0, 0] @ mdp.mu0) - exact) < 1e-12
        assert np.allclose(pi.sum(-1), 1.0) and (pi >= 0).all()
        tv = 0.5 * np.abs(pi[0] - np.eye(A)[ref]).sum(-1)  # (H, S)
        assert (tv <= eta + 1e-12).all()


def test_value_estimate_is_the_posterior_expectation_by_monte_carlo():
    """E_phi[V^pi_f] = V^pi under the posterior mean for a per-stage posterior: checked by drawing
    20,000 models from the agent's Dirichlet posterior and evaluating the played policy on each."""
    mdp = make("riverswim:S=3,H=3")
    agent = CDPO(env_spec(mdp), 1, [np.random.default_rng(0)], eta=0.6)
    env_rng = [np.random.default_rng(1)]
    for _ in range(5):  # some data, so the posterior is not the prior
        agent.update(mdp.rollout(np.asarray(agent.policy()), rng=env_rng))
    pi = np.asarray(agent.policy())[0]  # (H, S, A)
    alpha = agent.alpha + agent.model.N_sas[0]  # (H, S, A, S)
    rng = np.random.default_rng(7)
    n = 20_000
    vals = np.empty(n)
    R = np.stack([mdp.reward(h) for h in range(3)])  # (H, S, A) the known mean rewards
    for i in range(n):
        G = rng.standard_gamma(alpha)
        model = TabularMDP(G / G.sum(-1, keepdims=True), np.array(R), horizon=3, mu0=mdp.mu0)
        vals[i] = evaluate_policies(model, pi)[0] @ mdp.mu0
    se = vals.std() / np.sqrt(n)
    assert abs(vals.mean() - float(agent.value_estimate()[0])) < 4 * se


def test_eta_zero_is_psrl_exactly():
    mdp = make("riverswim:S=3,H=3")
    a = tl.run("cdpo", mdp, 40, 4, seed=5, eta=0.0)
    b = tl.run("psrl", mdp, 40, 4, seed=5, stage_dependent=True)
    assert np.array_equal(a.regret, b.regret)
    c = tl.run("cdpo", mdp, 40, 4, seed=5)
    assert not np.array_equal(c.regret, b.regret)  # the conservative step changes what is played


@pytest.mark.parametrize("eta", [-0.1, 1.5, float("nan"), "0.5"])
def test_bad_eta_is_refused(eta):
    mdp = make("riverswim:S=3,H=3")
    with pytest.raises(ValueError, match="eta must be a number in \\[0, 1\\]"):
        CDPO(env_spec(mdp), 1, [np.random.default_rng(0)], eta=eta)


def test_pooled_posterior_is_refused():
    mdp = make("riverswim:S=3,H=3")
    with pytest.raises(ValueError, match="stage_dependent=False"):
        CDPO(env_spec(mdp), 1, [np.random.default_rng(0)], stage_dependent=False)


def test_claim_passes_and_the_no_conservative_mutation_fails_it():
    from theorylab.validations.cdpo_mutations import cdpo_no_conservative
    from theorylab.validations.claim import Scale
    from theorylab.validations.claims.tabular_regret import ConservativeDualVsPSRL

    small = Scale(episodes=150, seeds=16, mdp="riverswim:S=4,H=4", slope_range=(-1.0, 0.8),
                  fit_range=(0.5, 1.0))  # fmt: skip
    claim = ConservativeDualVsPSRL(scales={"quick": small})
    rep = claim.run("quick")
    by = {c.name: c for c in rep.checks}
    assert rep.passed, [c.detail for c in rep.checks]
    assert by["no-oscillation"].values["ratio"] < 0.7
    with cdpo_no_conservative():
        bad = claim.run("quick")
    by_bad = {c.name: c for c in bad.checks}
    assert not bad.passed
    assert by_bad["no-oscillation"].values["ratio"] == pytest.approx(1.0)
