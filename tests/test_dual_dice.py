"""Tests of tabular OptiDICE and DualDICE on offline datasets (algorithms/dual/optidice.py,
dualdice.py; Lee et al. ICML 2021; Nachum et al. NeurIPS 2019).

Oracles: population datasets (the infinite-data limit, exact empirical model) against the dual-V /
exact policy evaluation on the true MDP; on finite data, DualDICE's estimate against an
independent certainty-equivalence evaluation of the target policy (a linear solve on counts).
"""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.dual import UncoveredFlowError, solve_dual_v
from theorylab.algorithms.dual.dualdice import dualdice
from theorylab.algorithms.dual.inputs import DualInputError
from theorylab.algorithms.dual.optidice import optidice
from theorylab.algorithms.offline import make_dataset, population_dataset, suboptimality
from theorylab.algorithms.planning.lp import discounted_lp, occupancy_measure


@pytest.fixture(scope="module")
def mdp():
    return tl.make("random:S=5,A=2,gamma=0.9").with_objective(gamma=0.9)


def true_value(mdp, pi) -> float:
    return float(np.sum(occupancy_measure(mdp, pi) * mdp.reward(0))) / (1 - mdp.gamma)


def plug_in_value(ds, pi) -> np.ndarray:
    """Certainty-equivalence V^pi(mu0) per seed, from raw counts (no shared code with DICE)."""
    S, A, g = ds.S, ds.A, ds.gamma
    out = []
    for b in range(ds.n_seeds):
        n = np.zeros((S, A))
        rs = np.zeros((S, A))
        nxt = np.zeros((S, A, S))
        np.add.at(n, (ds.states[b], ds.actions[b]), 1.0)
        np.add.at(rs, (ds.states[b], ds.actions[b]), ds.rewards[b])
        np.add.at(nxt, (ds.states[b], ds.actions[b], ds.next_states[b]), 1.0)
        P = nxt / np.maximum(n, 1)[..., None]
        r = rs / np.maximum(n, 1)
        P_pi = np.einsum("sa,sat->st", pi, P)
        V = np.linalg.solve(np.eye(S) - g * P_pi, np.sum(pi * r, axis=1))
        out.append(float(ds.mu0 @ V))
    return np.array(out)


def test_population_optidice_is_the_dual_v_solution_on_the_true_model(mdp):
    data = population_dataset(mdp, coverage=0.3)
    res = optidice(data, alpha=0.1)
    exact = solve_dual_v(mdp, data.data_distribution, 0.1, "half-chi2")
    np.testing.assert_allclose(res.V[0], exact.V, atol=1e-8)
    assert res.value_estimate[0] == pytest.approx(
        float(np.sum(exact.occupancy * mdp.reward(0))) / (1 - mdp.gamma), abs=1e-8
    )
    assert abs(res.info["duality_gap"][0]) <= 1e-8


def test_optidice_small_alpha_with_population_data_is_optimal(mdp):
    data = population_dataset(mdp, coverage=0.0)  # uniform behaviour: full coverage
    res = optidice(data, alpha=1e-4)
    assert suboptimality(mdp, res.policy)[0] <= 1e-6


def test_optidice_improves_on_the_behaviour_policy_from_samples(mdp):
    data = make_dataset(mdp, 3000, coverage=0.0, seeds=4, seed=2)
    res = optidice(data, alpha=0.1)
    behaviour = true_value(mdp, data.behaviour)
    V_star = discounted_lp(mdp).value
    gaps = suboptimality(mdp, res.policy)
    assert np.all(gaps < 0.5 * (V_star - behaviour))


def test_population_dualdice_is_exact(mdp):
    pi = discounted_lp(mdp).policy
    data = population_dataset(mdp, coverage=0.0)
    est = dualdice(data, pi)
    assert est.value[0] == pytest.approx(true_value(mdp, pi), abs=1e-8)
    d_pi = occupancy_measure(mdp, pi)
    np.testing.assert_allclose(est.ratio[0] * data.data_distribution, d_pi, atol=1e-9)


def test_dualdice_equals_certainty_equivalence_on_finite_data(mdp):
    rng = np.random.default_rng(0)
    pi = rng.dirichlet(np.ones(mdp.A), size=mdp.S)
    data = make_dataset(mdp, 2000, coverage=0.0, seeds=3, seed=5)
    est = dualdice(data, pi)
    np.testing.assert_allclose(est.value, plug_in_value(data, pi), atol=1e-8)


def test_dualdice_needs_the_target_covered(mdp):
    data = make_dataset(mdp, 2000, coverage=1.0, seeds=1)  # expert data: pi* only
    pi = 1 - discounted_lp(mdp).policy.argmax(1)  # the other action everywhere
    with pytest.raises(UncoveredFlowError, match=r"d\^pi is positive where d\^O is 0"):
        dualdice(data, pi.astype(np.int64))


def test_dice_refuses_finite_horizon_data():
    data = make_dataset(tl.make("riverswim:S=4,H=5"), 100, coverage=0.5)
    with pytest.raises(DualInputError, match="discounted data"):
        optidice(data)
