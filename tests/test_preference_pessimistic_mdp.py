"""Zhu-Jordan-Jiao Section 5: trajectory-pair data, the SOCP over occupancy measures against
independent answers (its own objective at the extracted policy, backward induction at f = 0)."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.planning.lp import occupancy_measure
from theorylab.algorithms.preference.mle import btl_mle
from theorylab.algorithms.preference.pessimistic_mdp import (
    feature_expectation,
    pessimistic_objective,
    pessimistic_occupancy_policy,
    planned_policy,
    policy_value,
)
from theorylab.mdps import make
from theorylab.mdps.linear import one_hot_features
from theorylab.mdps.preference import (
    PreferenceError,
    centred_parameter,
    identifiable_features,
    sample_trajectory_pairs,
)

MDP = "riverswim:S=3,H=3"


def _setup(n=200, seeds=2):
    mdp = make(MDP)
    phi = one_hot_features(mdp.S, mdp.A)
    beh = np.full((mdp.horizon, mdp.S, mdp.A), 1.0 / mdp.A)
    data = sample_trajectory_pairs(mdp, n, beh, seeds=seeds, seed=5)
    return mdp, phi, data


def test_pairs_are_batch_invariant_and_labels_follow_btl():
    mdp, phi, both = _setup(n=50, seeds=[0, 1])
    beh = np.full((mdp.horizon, mdp.S, mdp.A), 1.0 / mdp.A)
    alone = sample_trajectory_pairs(mdp, 50, beh, seeds=[1], seed=5)
    np.testing.assert_array_equal(both.states1[1], alone.states1[0])
    np.testing.assert_array_equal(both.y[1], alone.y[0])
    np.testing.assert_array_equal(both.queries, 50)
    theta = centred_parameter(mdp.R, phi)
    # differences of centred rewards are the true trajectory reward differences
    R = np.asarray(mdp.R)
    ret = lambda s, a: R[s, a].sum(-1)  # noqa: E731
    np.testing.assert_allclose(
        both.differences(phi) @ theta,
        ret(both.states1, both.actions1) - ret(both.states0, both.actions0),
        atol=1e-12,
    )


def test_identifiability_checks():
    with pytest.raises(PreferenceError, match="same coordinate sum"):
        identifiable_features(np.array([[[1.0, 0.0], [0.5, 0.0]]]))
    with pytest.raises(PreferenceError, match="not linear in the features"):
        centred_parameter(np.array([[0.1, 0.9]]), np.array([[[1.0, 0.0], [1.0, 0.0]]]))


def test_socp_value_is_its_policy_objective_and_beats_other_policies():
    mdp, phi, data = _setup()
    theta = btl_mle(data.differences(phi), data.y, np.sqrt(phi.shape[-1]))[0]
    M = data.covariance(phi)[0] + 1e-3 * np.eye(phi.shape[-1])
    for radius in (0.05, 0.5):
        pol, value = pessimistic_occupancy_policy(mdp, phi, theta, M, radius)
        here = pessimistic_objective(mdp, phi, pol, theta, M, radius)
        assert here == pytest.approx(value, abs=1e-6)
        rng = np.random.default_rng(0)
        others = [planned_policy(mdp, phi @ theta), planned_policy(mdp, np.asarray(mdp.R))]
        others += [rng.dirichlet(np.ones(mdp.A), size=(mdp.horizon, mdp.S)) for _ in range(20)]
        for other in others:
            assert pessimistic_objective(mdp, phi, other, theta, M, radius) <= value + 1e-6


def test_zero_radius_is_planning_on_the_mle_reward():
    mdp, phi, data = _setup()
    theta = btl_mle(data.differences(phi), data.y, np.sqrt(phi.shape[-1]))[0]
    M = np.eye(phi.shape[-1])
    _, value = pessimistic_occupancy_policy(mdp, phi, theta, M, 0.0)
    greedy = planned_policy(mdp, phi @ theta)  # backward induction on <phi, theta_hat>
    assert value == pytest.approx(theta @ feature_expectation(mdp, greedy, phi), abs=1e-7)
    d = occupancy_measure(mdp, greedy)
    assert theta @ np.einsum("hsa,sad->d", d, phi) == pytest.approx(value, abs=1e-7)


def test_run_reports_exact_suboptimality_and_the_bound():
    res = tl.run("pessimistic-mle-mdp", MDP, dataset_size=[20, 200], seeds=2)
    mdp = make(MDP)
    v_star = policy_value(mdp, planned_policy(mdp, np.asarray(mdp.R)))
    assert res.optimal_value == pytest.approx(v_star)
    assert (res.values >= -1e-9).all() and (res.values <= v_star + 1e-9).all()
    assert (res.extra["bound"] >= res.values).all()  # vacuous here (docstring), but must hold
    np.testing.assert_array_equal(res.queries, [[20, 200], [20, 200]])
    with pytest.raises(ValueError, match="uniform policy only"):
        tl.run("pessimistic-mle-mdp", MDP, dataset_size=20, design="zjj-thm39")
