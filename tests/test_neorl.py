"""NeoRL (seed row 000#38; ``algorithms/average_reward/neorl.py``) on the grid system
``gp-dynamics``: the exact GP posterior against conditioning on every observation one by one,
the cell masses against scipy, the optimistic planner with the true dynamics against the
average-reward LP, input errors, and the claim with its control."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtr

import theorylab as tl
from theorylab.algorithms.average_reward import neorl
from theorylab.algorithms.planning import average_reward as ar
from theorylab.errors import InvalidMDPError
from theorylab.mdps import make
from theorylab.mdps.families.gp_dynamics import cell_bounds


def test_pooled_posterior_is_the_posterior_of_every_observation():
    """Independent answer: the textbook GP posterior with one row per observation (repeated
    inputs kept apart), ``mu = m0 + K_*X (K_XX + s^2 I)^-1 (y - m0_X)``."""
    mdp = make("gp-dynamics:nx=7,nu=3")
    K, prior, noise = mdp.gp_kernel, mdp.gp_prior_mean.ravel(), mdp.gp_noise
    rng = np.random.default_rng(0)
    X = rng.integers(0, K.shape[0], size=40)  # observed pairs, with repeats
    y = prior[X] + rng.normal(size=40)
    n = np.bincount(X, minlength=K.shape[0]).astype(float)
    ysum = np.bincount(X, weights=y, minlength=K.shape[0])
    mu, sd = neorl.gp_posterior(prior, K, n, ysum, noise)
    G = K[np.ix_(X, X)] + noise**2 * np.eye(X.size)
    want_mu = prior + K[:, X] @ np.linalg.solve(G, y - prior[X])
    want_var = np.diag(K) - np.einsum("ij,ji->i", K[:, X], np.linalg.solve(G, K[X, :]))
    assert np.allclose(mu, want_mu, atol=1e-8)
    assert np.allclose(sd**2, np.maximum(want_var, 0.0), atol=1e-8)
    mu0, sd0 = neorl.gp_posterior(prior, K, np.zeros_like(n), np.zeros_like(n), noise)
    assert np.array_equal(mu0, prior) and np.allclose(sd0**2, np.diag(K))


def test_cell_masses_are_scipys():
    x = np.linspace(-1, 1, 9)
    b = cell_bounds(x)
    out = np.zeros(9)
    for mean in (-1.3, 0.0, 0.42, 1.1):
        neorl.cell_mass(mean, 0.2, b, out)
        assert np.allclose(out, np.diff(ndtr((b - mean) / 0.2)), atol=1e-14)


def test_planner_with_the_true_dynamics_is_the_lp_gain():
    """sigma = 0 and mu = f: the optimistic RVI plans on the true system (up to the 1e-9 tail
    cut of the model's rows)."""
    mdp = make("gp-dynamics:nx=11,nu=3")
    star = ar.optimal_gain_bias_lp(mdp)
    pol, lo, hi, _ = neorl.optimistic_rvi(
        mdp.gp_f, np.zeros_like(mdp.gp_f), 2.0, np.linspace(-1, 1, 5), mdp.R, mdp.gp_noise,
        cell_bounds(mdp.gp_x), 1e-10, 10**6, 0.5,
    )  # fmt: skip
    assert lo - 1e-7 <= star.gain <= hi + 1e-7
    assert ar.policy_gain_bias(mdp, pol).gain == pytest.approx(star.gain, abs=1e-7)


def test_gp_dynamics_model_and_its_errors():
    m = make("gp-dynamics")
    assert m.P.shape == (21, 5, 21) and np.allclose(m.P.sum(axis=2), 1.0)
    assert np.allclose(m.gp_f, make("gp-dynamics").gp_f)  # the draw is seeded
    assert not np.allclose(m.gp_f, make("gp-dynamics:seed=1").gp_f)
    with pytest.raises(InvalidMDPError, match="nx >= 3"):
        make("gp-dynamics:nx=2")
    with pytest.raises(InvalidMDPError, match="noise > 0"):
        make("gp-dynamics:noise=0.0")


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="carries no GP prior"):
        tl.run("neorl", "riverswim:S=3", steps=10)
    with pytest.raises(ValueError, match="beta must be"):
        tl.run("neorl", "gp-dynamics:nx=5,nu=2", steps=10, beta=-1.0)
    with pytest.raises(ValueError, match="n_eta must be"):
        tl.run("neorl", "gp-dynamics:nx=5,nu=2", steps=10, n_eta=0)


def test_neorl_claim_passes_and_the_null_agent_fails():
    from theorylab.validations.registry import validate

    rep = validate("neorl-gp-average-cost", "quick")
    assert rep.verdict == "PASS", [c.detail for c in rep.checks]
    assert {c["control"]: c["verdict"] for c in rep.controls} == {"neorl-uniform-null": "FAIL"}
