"""Tests of return-weighted trajectory sampling (algorithms/offline/trajectory_weighting.py;
seed-catalogue-002-004.md#C1).

Oracles: a one-step instance in closed form (pi_w proportional to pi_beta exp(r / temperature),
written out here); the initial-state masses the weighting must keep; exact backward induction of
the cloned policy against enumeration (the claim); the inverted-weights mutation failing the claim.
"""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.offline.dataset import InvalidDatasetError, make_dataset
from theorylab.algorithms.offline.trajectory_weighting import (
    episode_multipliers,
    trajectory_weighting,
)
from theorylab.mdps import TabularMDP
from theorylab.validations.claims.offline import (
    deterministic_instance,
    enumerated_trajectories,
    finite_value,
)


def test_one_step_closed_form():
    # H = 1, one state, rewards (0, 1), behaviour (0.6, 0.4): the re-weighted action law is
    # 0.6 : 0.4 e^(1/T), and its value is the second action's mass.
    mdp = TabularMDP(np.ones((1, 2, 1)), np.array([[0.0, 1.0]]), np.array([1.0]), horizon=1)
    data = enumerated_trajectories(mdp, np.array([[[0.6, 0.4]]]))
    for T in (0.5, 1.0, 3.0):
        w1 = 0.4 * np.exp(1.0 / T)
        expected = np.array([0.6, w1]) / (0.6 + w1)
        res = trajectory_weighting(data, temperature=T)
        np.testing.assert_allclose(res.policy[0, 0, 0], expected, rtol=1e-12)
        assert res.value_estimate[0] == pytest.approx(expected[1], rel=1e-12)
    res = trajectory_weighting(data, temperature=np.inf)  # no weighting: the behaviour
    np.testing.assert_allclose(res.policy[0, 0, 0], [0.6, 0.4], rtol=1e-12)


def test_multipliers_keep_the_initial_state_masses():
    rng = np.random.default_rng(0)
    s0 = rng.integers(3, size=(2, 50))
    G, n = rng.random((2, 50)) * 5, rng.random((2, 50))
    m = episode_multipliers(s0, G, n, 3, 0.1)
    for b in range(2):
        for s in range(3):
            assert m[b, s0[b] == s].sum() == pytest.approx(n[b, s0[b] == s].sum(), rel=1e-12)
    # within one initial state, higher return -> higher multiplier per unit of data
    ratio = m / n
    for s in range(3):
        sel = s0[0] == s
        order = np.argsort(G[0, sel])
        assert np.all(np.diff(ratio[0, sel][order]) >= 0)


@pytest.mark.parametrize("i", range(5))
def test_improves_on_deterministic_mdps(i):
    mdp, beh = deterministic_instance(100 + i)
    res = trajectory_weighting(enumerated_trajectories(mdp, beh), temperature=0.3)
    v = finite_value(mdp, res.policy[0])
    assert v >= finite_value(mdp, beh)
    assert v == pytest.approx(res.value_estimate[0], abs=1e-12)


def test_input_errors():
    mdp = tl.make("random:S=3,A=2,H=3,seed=0")
    data = make_dataset(mdp, 60, coverage=0.5)
    with pytest.raises(InvalidDatasetError, match="temperature must be > 0"):
        trajectory_weighting(data, temperature=0.0)
    samples = make_dataset(mdp, 60, coverage=0.5, kind="samples")
    with pytest.raises(InvalidDatasetError, match="needs finite-horizon trajectory data"):
        trajectory_weighting(samples)


def test_beats_behaviour_cloning_through_tl_run():
    spec = "random:S=5,A=2,H=4,seed=0"
    kw = {"dataset_size": 4000, "seeds": 3, "coverage": 0.0}
    tw = tl.run("trajectory-weighting", spec, **kw).suboptimality
    bc = tl.run("behaviour-cloning", spec, **kw).suboptimality
    assert np.all(tw < bc)  # measured 0.06-0.12 against 1.12-1.13


def test_claim_passes_and_mutation_fails_it():
    import theorylab.validations.mutations  # noqa: F401
    from theorylab.validations.controls import get_control
    from theorylab.validations.registry import VALIDATIONS

    claim = VALIDATIONS.get("trajectory-weighting-improves-deterministic")
    assert claim.run("quick").passed
    with get_control("trajectory-weighting-inverted").applied(claim):
        rep = claim.run("quick")
    failed = {c.name for c in rep.checks if c.status == "FAIL"}
    assert "V(pi_w) >= V(behaviour), deterministic MDPs" in failed
