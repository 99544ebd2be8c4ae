"""Density-feature occupancy estimation and density-model-vi
(algorithms/offline/density_features.py; seed 001#28): exact answers on population data, the
estimators written out, input errors, tl.run."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.offline.coverage import optimal_solution
from theorylab.algorithms.offline.dataset import make_dataset
from theorylab.algorithms.offline.density_features import (
    density_model_vi,
    density_occupancy,
    mixture_weights,
    span_projector,
    trajectory_is_occupancy,
)
from theorylab.algorithms.offline.registrations import fit_density_model_vi
from theorylab.algorithms.offline.scoring import suboptimality
from theorylab.mdps import make
from theorylab.validations.claims.density_features import (
    dense_transitions,
    exact_occupancy,
    population_dataset,
)

SPEC = "lowrank-simplex:S=8,A=2,d=3,H=4,seed=2"


def _setup():
    mdp = make(SPEC)
    rng = np.random.default_rng(0)
    pi = np.eye(mdp.A)[rng.integers(0, mdp.A, size=(mdp.horizon, mdp.S))]
    return mdp, dense_transitions(mdp), pi


def test_occupancy_lies_in_the_span_of_the_density_features():
    mdp, P, pi = _setup()
    d = exact_occupancy(P, pi, np.asarray(mdp.mu0, dtype=float))
    mu = mdp.density_features
    for h in range(mdp.horizon - 1):
        np.testing.assert_allclose(d[h + 1] @ span_projector(mu[h]), d[h + 1], atol=1e-12)


def test_population_data_gives_the_exact_occupancy():
    mdp, P, pi = _setup()
    nu = make_dataset(mdp, mdp.horizon, coverage=0.0, seeds=1, seed=0).data_distribution
    pop = population_dataset(mdp, P, nu)
    d = exact_occupancy(P, pi, np.asarray(mdp.mu0, dtype=float))
    np.testing.assert_allclose(density_occupancy(pop, pi, mdp.density_features)[0], d, atol=1e-13)


def test_recursion_with_identity_features_is_the_weighted_empirical_next_state_law():
    """mu = I: d_hat_{h+1}(s') = mean_i d_hat_h(s_i) pi(a_i|s_i) / nu(s_i, a_i) 1{s'_i = s'},
    written out sample by sample."""
    mdp, _, pi = _setup()
    ds = make_dataset(mdp, 40 * mdp.horizon, coverage=0.0, seeds=1, seed=4)
    got = density_occupancy(ds, pi, np.eye(mdp.S))[0]
    nu = ds.data_distribution
    want = np.zeros_like(got)
    want[0] = mdp.mu0
    for h in range(mdp.horizon - 1):
        rows = np.flatnonzero(ds.stages[0] == h)
        for i in rows:
            s, a, s2 = ds.states[0, i], ds.actions[0, i], ds.next_states[0, i]
            want[h + 1, s2] += want[h, s] * pi[h, s, a] / nu[h, s, a] / rows.size
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_trajectory_importance_sampling_written_out():
    mdp, _, pi = _setup()
    ds = make_dataset(mdp, 30 * mdp.horizon, coverage=0.0, seeds=1, seed=5)
    got = trajectory_is_occupancy(ds, pi)[0]
    H, K, beh = mdp.horizon, ds.n_episodes, ds.behaviour
    want = np.zeros_like(got)
    for k in range(K):
        w = 1.0
        for h in range(H):
            i = k * H + h
            s, a = ds.states[0, i], ds.actions[0, i]
            want[h, s] += w / K
            w *= pi[h, s, a] / beh[h, s, a]
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_mixture_weights_recover_the_true_features_from_exact_laws():
    mdp = make(SPEC)
    mu = mdp.density_features[0]  # (d, S)
    phi = np.random.default_rng(1).dirichlet(np.ones(mu.shape[0]), size=5)  # (5, d)
    counts = 1e6 * (phi @ mu)  # exact laws as counts
    got = mixture_weights(counts, mu, iters=20000, tol=1e-14)
    np.testing.assert_allclose(got @ mu, phi @ mu, atol=1e-6)


def test_density_model_vi_is_optimal_on_population_data():
    mdp, P, _ = _setup()
    nu = make_dataset(mdp, mdp.horizon, coverage=0.0, seeds=1, seed=0).data_distribution
    pop = population_dataset(mdp, P, nu)
    pop.rewards[:] = np.asarray([mdp.reward(h) for h in range(mdp.horizon)])[
        pop.stages, pop.states, pop.actions
    ]
    res = density_model_vi(pop, mdp.density_features)
    seen = nu > 0  # (H, S, A): pairs with data (no data, no backup)
    # EM stops at a parameter change of 1e-8, so Q is close, not exact
    np.testing.assert_allclose(res.Q[0][seen], optimal_solution(mdp).Q[seen], atol=1e-3)
    assert np.all(np.abs(suboptimality(mdp, res.policy)) < 1e-9)


def test_density_model_vi_through_tl_run_and_input_errors():
    res = tl.run("density-model-vi", SPEC, dataset_size=[200, 800], seeds=2, coverage=0.3)
    assert res.suboptimality.shape == (2, 2)
    with pytest.raises(ValueError, match="density features"):
        tl.run("density-model-vi", "random:S=4,A=2,H=3,seed=1", dataset_size=100, seeds=1)
    ds = make_dataset(make(SPEC), 100, coverage=0.0, seeds=1, seed=0)
    with pytest.raises(ValueError, match="shape"):
        density_occupancy(ds, np.ones((4, 8, 2)) / 2, np.ones((3, 7)))
    with pytest.raises(ValueError, match="row-stochastic"):
        density_model_vi(ds, -np.ones((3, 8)))
    with pytest.raises(ValueError, match="give the density features"):
        fit_density_model_vi(ds)


def test_density_features_are_the_hidden_right_factor_read_only():
    mdp = make(SPEC)
    mu = mdp.density_features
    np.testing.assert_array_equal(mu, mdp.reveal().mu)
    assert mu.shape == (mdp.horizon, 3, mdp.S) and not mu.flags.writeable
