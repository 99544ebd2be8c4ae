"""HUBL (algorithms/offline/hubl.py; seed 000#44): the relabelling written out from the paper's
description, lambda = 0 as the base algorithms, the reshaped MDP, input errors, tl.run."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.offline.baselines import naive_vi
from theorylab.algorithms.offline.dataset import (
    InvalidDatasetError,
    behaviour_policy,
    make_dataset,
)
from theorylab.algorithms.offline.hubl import hubl, relabel, reshaped_q, trajectory_lambdas
from theorylab.mdps import make
from theorylab.validations.claims.offline_hubl import blended_q_by_episodes

SPEC = "random:S=4,A=2,H=4,seed=2"


def _data(cov=0.5, K=30, seeds=2):
    mdp = make(SPEC)
    return mdp, make_dataset(mdp, K * mdp.horizon, coverage=cov, seeds=seeds, seed=3)


def test_relabelled_reward_is_r_plus_lambda_times_the_rest_of_the_episode():
    mdp, ds = _data()
    H, lam = mdp.horizon, 0.3
    r_tilde, cont = relabel(ds, lam)
    for b in range(ds.n_seeds):
        for k in range(ds.N // H):
            r = ds.rewards[b, k * H : (k + 1) * H]
            for h in range(H):
                want = r[h] + lam * sum(r[t] for t in range(h + 1, H))  # r_h + lam G_{h+1}
                assert r_tilde[b, k * H + h] == pytest.approx(want, abs=1e-13)
                assert cont[b, k * H + h] == pytest.approx(1.0 - lam)


def test_return_schedule_scales_lambda_by_the_episode_return():
    G = np.array([[0.0, 1.0, 3.0], [2.0, 2.0, 2.0]])
    lam = trajectory_lambdas(G, 0.6, "return")
    np.testing.assert_allclose(lam, [[0.0, 0.2, 0.6], [0.6, 0.6, 0.6]])  # 0.6 (G - 0) / 3


def test_lambda_zero_is_naive_vi_and_the_loop_agrees_for_every_lambda():
    mdp, ds = _data(cov=0.2)
    np.testing.assert_allclose(hubl(ds, lam=0.0).Q, naive_vi(ds).Q, atol=1e-13)
    for lam in (0.25, 1.0):
        want = blended_q_by_episodes(ds, np.full((ds.n_seeds, ds.N // mdp.horizon), lam))
        np.testing.assert_allclose(hubl(ds, lam=lam).Q, want, atol=1e-12)


def test_continuation_dropped_counts_the_future_twice():
    """The pitfall of the module docstring, as its registered mutation: y = r + lam G + V_hat
    counts the future 1 + lam times, so values pass the horizon H (rewards lie in [0, 1])."""
    from theorylab.validations.controls import get_control
    from theorylab.validations.mutations import MUTATIONS  # noqa: F401  (registers the controls)

    mdp, ds = _data(cov=1.0, K=200)
    assert hubl(ds, lam=0.5).V.max() <= mdp.horizon + 1e-12
    with get_control("hubl-continuation-kept").applied(None):
        bad = hubl(ds, lam=0.5)
    assert bad.V.max() > mdp.horizon


def test_reshaped_mdp_interpolates_between_q_star_and_the_behaviour():
    mdp = make(SPEC)
    beh = behaviour_policy(mdp, 0.3, "uniform")
    q0, q1 = reshaped_q(mdp, beh, 0.0), reshaped_q(mdp, beh, 1.0)
    from theorylab.algorithms.planning.finite_horizon import backward_induction

    np.testing.assert_allclose(q0, backward_induction(mdp).Q, atol=1e-12)
    # lambda = 1: Q^{pi_b}, so V^{pi_b}_0 = sum_a pi_b Q
    v_b = (beh[0] * q1[0]).sum(-1) @ np.asarray(mdp.mu0)
    v_eval = tl.algorithms.planning.policy_values(mdp, beh)
    assert v_b == pytest.approx(float(v_eval), abs=1e-12)


@pytest.mark.parametrize(
    ("kw", "match"),
    [({"lam": 1.5}, "lam must lie in"), ({"penalty": "bernstein"}, "penalty must be one of"),
     ({"lam_schedule": "rank"}, "lam_schedule must be one of"), ({"delta": 0.0}, "delta")],
)  # fmt: skip
def test_bad_input_is_one_line(kw, match):
    _, ds = _data()
    with pytest.raises(ValueError, match=match) as err:
        hubl(ds, **kw)
    assert len(str(err.value).splitlines()) == 1


def test_sampled_or_discounted_data_is_refused():
    mdp = make(SPEC)
    ds = make_dataset(mdp, 40, coverage=0.5, kind="samples", seeds=1)
    with pytest.raises(InvalidDatasetError, match="trajectory data"):
        hubl(ds)


def test_registered_with_its_paper_and_runs_through_tl_run():
    from theorylab.algorithms.registry import get_algorithm

    entry = get_algorithm("hubl")
    assert entry.kind == "offline" and "000#44" in entry.papers
    res = tl.run("hubl", SPEC, dataset_size=[40, 400], seeds=2, coverage=0.7, lam=0.5)
    assert res.suboptimality.shape == (2, 2) and np.all(res.suboptimality >= -1e-12)
