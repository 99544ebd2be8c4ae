"""WSRL (002-004#C8): warm start from pessimistic VI, warm-up rollouts, (no) retention."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
import theorylab.validations.mutations  # noqa: F401  (registers the known-bug controls)
from theorylab.agent import env_spec
from theorylab.algorithms.offline.dataset import make_dataset
from theorylab.algorithms.offline.pessimistic_vi import pessimistic_vi
from theorylab.algorithms.online.wsrl import WSRL
from theorylab.mdps import make
from theorylab.seeding import AGENT_STREAM, generators
from theorylab.validations.claims.offline_wsrl import refit_online, run_wsrl, union_dataset
from theorylab.validations.controls import get_control

SPEC = "random:S=4,A=3,H=5,seed=2"


def _data(B=3, K=60, c_h=0.05):
    mdp = make(SPEC)
    return mdp, make_dataset(mdp, K * mdp.horizon, coverage=0.2, other="adversarial", seeds=B)


def _agent(mdp, ds, **kw):
    B = ds.n_seeds
    return WSRL(env_spec(mdp), B, generators(0, list(range(B)), AGENT_STREAM), dataset=ds, **kw)


@pytest.mark.parametrize("retain", [False, True])
def test_before_online_data_q_is_pessimistic_vi(retain):
    mdp, ds = _data()
    want = pessimistic_vi(ds, penalty="hoeffding", c_h=0.05).Q
    assert np.any(want > 0)  # a non-trivial pessimistic Q (not all floored at 0)
    np.testing.assert_allclose(_agent(mdp, ds, retain=retain, c_h=0.05).Q, want, atol=1e-12)


def test_retained_learner_is_pessimistic_vi_on_the_union():
    mdp, ds = _data()
    agent, _, trajs = run_wsrl(mdp, ds, 12, 3, retain=True, c_h=0.05)
    want = pessimistic_vi(union_dataset(ds, trajs), penalty="hoeffding", c_h=0.05).Q
    np.testing.assert_allclose(agent.Q, want, atol=1e-10)


def test_non_retaining_learner_refits_on_the_online_buffer_only():
    mdp, ds = _data()
    agent, _, trajs = run_wsrl(mdp, ds, 12, 3, c_h=0.05)
    q_off = pessimistic_vi(ds, penalty="hoeffding", c_h=0.05).Q
    np.testing.assert_allclose(agent.Q, refit_online(mdp, ds, trajs, q_off), atol=1e-10)
    # and it differs from Q_off where it was visited: the warm start is overwritten
    assert np.abs(agent.Q - q_off).max() > 1e-3


def test_warmup_plays_the_offline_policy_and_does_not_train():
    mdp, ds = _data()
    agent, values, _ = run_wsrl(mdp, ds, 0, 3, warmup=3, c_h=0.05)
    assert np.all(values == values[:, :1])  # greedy policy unchanged during the warm-up
    a2 = _agent(mdp, ds, warmup=3, c_h=0.05)
    np.testing.assert_array_equal(a2.policy(), np.eye(mdp.A)[a2.offline_policy])
    with get_control("wsrl-uniform-warmup").applied(None):
        a3 = _agent(mdp, ds, warmup=3, c_h=0.05)
    np.testing.assert_allclose(a3.policy(), 1.0 / mdp.A)


@pytest.mark.parametrize(
    ("kw", "match"),
    [({"warmup": -1}, "warmup must be"), ({"warmup_policy": "random"}, "warmup_policy must be"),
     ({"retain": "yes"}, "retain must be"), ({"delta": 1.0}, "delta"), ({"c_h": -1.0}, "c_h"),
     ({"dataset": None}, "dataset must be an OfflineDataset")],
)  # fmt: skip
def test_bad_input_is_one_line(kw, match):
    mdp, ds = _data()
    kw = {"dataset": ds, **kw}
    with pytest.raises(ValueError, match=match) as err:
        WSRL(env_spec(mdp), 3, generators(0, [0, 1, 2], AGENT_STREAM), **kw)
    assert len(str(err.value).splitlines()) == 1


def test_dataset_of_another_size_is_refused():
    mdp, ds = _data(B=2)
    with pytest.raises(ValueError, match="the online run has"):
        _agent(mdp, ds).__class__(env_spec(mdp), 3, generators(0, [0, 1, 2], AGENT_STREAM),
                                  dataset=ds)  # fmt: skip


def test_registered_with_its_paper_and_runs_through_tl_run():
    from theorylab.algorithms.registry import get_algorithm

    entry = get_algorithm("wsrl")
    assert entry.kind == "online" and "002-004#C8" in entry.papers
    _, ds = _data(B=2)
    res = tl.run("wsrl", SPEC, episodes=6, seeds=2, dataset=ds, warmup=2, c_h=0.05)
    assert res.regret.shape == (2, 6) and np.all(res.regret >= -1e-12)
