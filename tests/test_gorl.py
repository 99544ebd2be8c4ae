"""GORL (000#9): per-sample constraint weights guided by expert demonstrations."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
import theorylab.validations.mutations  # noqa: F401  (registers the known-bug controls)
from theorylab.algorithms.offline.baselines import behaviour_cloning, naive_vi
from theorylab.algorithms.offline.dataset import make_dataset
from theorylab.algorithms.offline.gorl import gorl, gorl_actor, guided_weights, project_simplex
from theorylab.mdps import make
from theorylab.validations.claims.offline_gorl import actor_by_cvxpy
from theorylab.validations.controls import get_control

SPEC = "random:S=5,A=4,H=4,seed=3"


def _data(B=3, K=8):
    mdp = make(SPEC)
    ds = make_dataset(mdp, K * mdp.horizon, coverage=0.3, other="adversarial", seeds=B)
    demos = make_dataset(mdp, 2 * mdp.horizon, coverage=1.0, seeds=B, seed=1)
    return mdp, ds, demos


def test_simplex_projection_is_the_closest_point():
    import cvxpy as cp

    rng = np.random.default_rng(0)
    for _ in range(5):
        y = rng.normal(size=4) * 2
        p = cp.Variable(4)
        cp.Problem(cp.Minimize(cp.sum_squares(p - y)), [p >= 0, cp.sum(p) == 1]).solve()
        np.testing.assert_allclose(project_simplex(y), p.value, atol=1e-6)
    x = np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(project_simplex(x), x, atol=1e-15)  # a point on the simplex


def test_actor_maximises_the_per_sample_objective():
    rng = np.random.default_rng(1)
    for _ in range(4):
        acts, w = rng.integers(0, 4, 5), rng.random(5)
        q = rng.random(4) * 2
        c = np.bincount(acts, weights=w, minlength=4)
        got = gorl_actor(q, c, np.array(5 - w.sum()), np.array(w.sum()), 0.7)
        np.testing.assert_allclose(got, actor_by_cvxpy(q, acts, w, 0.7), atol=1e-6)


def test_endpoints_are_behaviour_cloning_and_naive_vi():
    _, ds, _ = _data()
    np.testing.assert_allclose(gorl(ds, weights="constant", w=1.0).policy,
                               behaviour_cloning(ds).policy, atol=1e-12)  # fmt: skip
    np.testing.assert_allclose(gorl(ds, weights="constant", w=0.0, unseen="zero").V,
                               naive_vi(ds).V, atol=1e-12)  # fmt: skip


def test_guided_weights_follow_the_demonstrations_and_the_control_inverts_them():
    from theorylab.algorithms.offline.coverage import optimal_solution

    mdp, ds, demos = _data()
    wi = guided_weights(ds, demos, 0.5)
    pi_star = np.asarray(optimal_solution(mdp).policy)
    expert = pi_star[ds.stages, ds.states] == ds.actions
    assert set(np.unique(wi)) <= {0.0, 0.5, 1.0}  # a deterministic expert: 1, 0 or unvisited
    assert wi[expert].mean() > wi[~expert].mean()
    with get_control("gorl-weights-inverted").applied(None):
        bad = gorl(ds, demos=demos).info["sample_weights"]
    np.testing.assert_allclose(bad, 1.0 - wi)


@pytest.mark.parametrize(
    ("kw", "match"),
    [({"weights": "learned"}, "weights must be one of"), ({"w": 1.5}, "w must lie in"),
     ({"alpha": 0.0}, "alpha must be"), ({"demos": None}, "needs demos="),
     ({"unseen": "max"}, "unseen must be one of")],
)  # fmt: skip
def test_bad_input_is_one_line(kw, match):
    _, ds, demos = _data()
    kw = {"demos": demos, **kw}
    with pytest.raises(ValueError, match=match) as err:
        gorl(ds, **kw)
    assert len(str(err.value).splitlines()) == 1


def test_registered_with_its_paper_and_runs_through_tl_run():
    from theorylab.algorithms.registry import get_algorithm

    entry = get_algorithm("gorl")
    assert entry.kind == "offline" and "000#9" in entry.papers
    res = tl.run("gorl", SPEC, dataset_size=[16, 32], seeds=2, coverage=0.5,
                 weights="constant", w=0.3)  # fmt: skip
    assert res.suboptimality.shape == (2, 2) and np.all(res.suboptimality >= -1e-12)


def test_batched_seeds_equal_seeds_alone():
    _, ds, demos = _data(B=3)
    batch = gorl(ds, demos=demos)
    for i in range(3):
        alone = gorl(ds.only(i), demos=demos.only(i))
        np.testing.assert_array_equal(alone.policy[0], batch.policy[i])


def test_population_data_without_constraint_is_optimal():
    from theorylab.algorithms.offline.dataset import population_dataset
    from theorylab.algorithms.offline.scoring import suboptimality

    mdp = make(SPEC)
    ds = population_dataset(mdp, coverage=0.5, mass=1e16, seeds=2)
    res = gorl(ds, weights="constant", w=0.0)
    assert np.all(np.abs(suboptimality(mdp, res.policy)) < 1e-9)
