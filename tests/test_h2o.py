"""H2O (002-004#C5): the dynamics-gap penalty, the ratio weights and the bridge instance."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
import theorylab.validations.mutations  # noqa: F401  (registers the known-bug controls)
from theorylab.algorithms.offline.baselines import naive_vi
from theorylab.algorithms.offline.dataset import make_dataset, population_dataset
from theorylab.algorithms.offline.h2o import action_gap, dynamics_gap, h2o
from theorylab.algorithms.offline.scoring import policy_values
from theorylab.validations.claims.offline_h2o import ROAD, bridge, road_coverage
from theorylab.validations.controls import get_control


def _data(k=4, n=200, B=20):
    real = bridge(False)
    return real, make_dataset(real, n, data_distribution=road_coverage(k), kind="samples", seeds=B)


def test_gap_models_written_out():
    real, sim = bridge(False), bridge(True)
    pop = population_dataset(real, behaviour=np.full((real.S, 2), 0.5))
    from theorylab.algorithms.offline.h2o import empirical_model

    n, _, P_hat = empirical_model(pop)
    P_sim = np.asarray(sim.dense_P()).reshape(real.S, 2, real.S)
    u = dynamics_gap(n, P_hat, P_sim)[0]
    # the shortcut is wrong on the road (TV 1), right at the absorbing goal and trap
    np.testing.assert_allclose(u[:ROAD, 0], 1.0, atol=1e-12)
    np.testing.assert_allclose(u[:, 1], 0.0, atol=1e-12)
    ua = action_gap(n, P_hat, P_sim)[0]
    # per action: the count-weighted mean over states = the road's share of the shortcut's mass
    share = n[0, :ROAD, 0].sum() / n[0, :, 0].sum()
    assert 0.0 < share < 1.0
    np.testing.assert_allclose(ua[:, 0], share, atol=1e-12)
    np.testing.assert_allclose(ua[:, 1], 0.0, atol=1e-12)


def test_without_simulator_it_is_naive_vi():
    _, ds = _data()
    got = h2o(ds, simulator=bridge(True), beta=0.0, sim_weight=0.0, dynamics_aware=False)
    np.testing.assert_allclose(got.V, naive_vi(ds).V, atol=1e-6)


def test_bridge_per_action_gap_beats_the_per_pair_gap_and_mixing():
    real, ds = _data()
    sim = bridge(True)
    v = policy_values(real, h2o(ds, simulator=sim).policy)
    v_pair = policy_values(real, h2o(ds, simulator=sim, gap_model="pair").policy)
    v_mix = policy_values(real, h2o(ds, simulator=sim, beta=0.0, dynamics_aware=False).policy)
    assert v.mean() > 4.0 and v_pair.mean() < 0.5 and v_mix.mean() < 0.5
    with get_control("h2o-gap-ignored").applied(None):
        v_bad = policy_values(real, h2o(ds, simulator=sim).policy)
    assert v_bad.mean() < 0.5


@pytest.mark.parametrize(
    ("kw", "match"),
    [({"beta": -1.0}, "beta must be"), ({"w_max": 0.5}, "w_max must be"),
     ({"gap_model": "state"}, "gap_model must be one of")],
)  # fmt: skip
def test_bad_input_is_one_line(kw, match):
    _, ds = _data(B=2)
    with pytest.raises(ValueError, match=match) as err:
        h2o(ds, simulator=bridge(True), **kw)
    assert len(str(err.value).splitlines()) == 1


def test_simulator_of_another_size_is_refused():
    _, ds = _data(B=2)
    with pytest.raises(ValueError, match="simulator must have"):
        h2o(ds, simulator="random:S=3,A=2,gamma=0.9")


def test_registered_with_its_paper_and_runs_through_tl_run():
    from theorylab.algorithms.registry import get_algorithm

    entry = get_algorithm("h2o")
    assert entry.kind == "offline" and "002-004#C5" in entry.papers
    res = tl.run("h2o", bridge(False), dataset_size=[50, 200], seeds=2, sampling="samples",
                 data_distribution=road_coverage(4), simulator=bridge(True))  # fmt: skip
    assert res.suboptimality.shape == (2, 2) and np.all(res.suboptimality >= -1e-9)


def test_batched_seeds_equal_seeds_alone():
    _, ds = _data(B=3)
    batch = h2o(ds, simulator=bridge(True))
    for i in range(3):
        alone = h2o(ds.only(i), simulator=bridge(True))
        np.testing.assert_array_equal(alone.policy[0], batch.policy[i])
