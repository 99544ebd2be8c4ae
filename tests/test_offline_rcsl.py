"""Tests of RCSL and MBRCSL (algorithms/offline/rcsl.py; seed-catalogue-000.md#5) and of the
vw-pevi heteroscedastic claim (000#26).

Oracles: the two-trajectory stitching MDP worked by hand (RCSL returns 1.0, the optimum is 1.5);
the return-conditioned table of a hand-made dataset; the exact rollout probabilities of the
empirical model (they sum to 1 and the sampled rollouts' frequencies approach them); the claims
with their mutations failing them.
"""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.offline.dataset import InvalidDatasetError, make_dataset
from theorylab.algorithms.offline.rcsl import (
    empirical_model,
    enumerate_rollouts,
    mbrcsl,
    rcsl,
    rcsl_table,
    sample_rollouts,
)
from theorylab.algorithms.offline.trajectory_weighting import episodes
from theorylab.validations.claims.offline import (
    finite_value,
    heteroscedastic_instance,
    mixture_dataset,
    optimal_finite_value,
    stitching_instance,
)


def test_stitching_by_hand():
    # data: (0, 0) pays 0.5, (1, 1) pays 1, half and half; the stitched (0, 1) pays 1.5
    mdp, pols = stitching_instance()
    data = mixture_dataset(mdp, pols)
    eye = np.eye(2)
    r = rcsl(data)
    assert r.policy[0, 0, 0] == 1 and r.policy[0, 1, 1] == 1  # follows the return-1 episode
    assert r.value_estimate[0] == pytest.approx(1.0)
    assert finite_value(mdp, eye[r.policy[0]]) == pytest.approx(1.0)
    m = mbrcsl(data)
    assert m.policy[0, 0, 0] == 0 and m.policy[0, 1, 1] == 1  # the stitched path
    assert m.value_estimate[0] == pytest.approx(1.5)
    assert finite_value(mdp, eye[m.policy[0]]) == pytest.approx(optimal_finite_value(mdp))
    # kept rollouts: (0, 1) with 1/4 and (1, 1) with 1/4 (returns 1.5 and 1 >= the data's best)
    assert m.info["kept_rollout_mass"][0] == pytest.approx(0.5)
    # no rollouts is RCSL
    np.testing.assert_array_equal(mbrcsl(data, rollouts=0).policy, r.policy)


def test_rcsl_table_by_hand():
    s = np.array([[0, 1], [0, 1], [0, 1]])
    a = np.array([[0, 1], [1, 1], [0, 0]])
    r = np.array([[0.5, 0.5], [0.0, 1.0], [1.0, 0.0]])
    w = np.ones((3, 2))
    t = rcsl_table(s, a, r, w, 2)
    # returns-to-go 1.0 at (0, 0) for all three episodes: actions 0, 1, 0
    np.testing.assert_array_equal(t[(0, 0, 1.0)], [2.0, 1.0])
    np.testing.assert_array_equal(t[(1, 1, 0.5)], [0.0, 1.0])
    np.testing.assert_array_equal(t[(1, 1, 1.0)], [0.0, 1.0])
    np.testing.assert_array_equal(t[(1, 1, 0.0)], [1.0, 0.0])


def test_rollout_probabilities():
    mdp = tl.make("random:S=3,A=2,H=3,seed=2")
    data = make_dataset(mdp, 3 * 400, coverage=0.5, seeds=1, seed=0)
    s, a, r, w = (x[0] for x in episodes(data))
    P, R, pi_b, mu = empirical_model(s, a, r, w, 3, 2)
    es, ea, er, ep = enumerate_rollouts(P, R, pi_b, mu)
    assert ep.sum() == pytest.approx(1.0, abs=1e-12)
    # expected return of the enumeration vs the mean of 40000 sampled rollouts
    ss, sa, sr, sp = sample_rollouts(P, R, pi_b, mu, 40_000, np.random.default_rng(0))
    assert (sr.sum(axis=1) * sp).sum() == pytest.approx((er.sum(axis=1) * ep).sum(), abs=0.03)
    # first-stage actions: sampled frequencies match pi_b under mu
    freq = np.bincount(sa[:, 0], minlength=2) / len(sa)
    np.testing.assert_allclose(freq, mu @ pi_b[0], atol=0.01)


def test_bad_input():
    mdp, pols = stitching_instance()
    data = mixture_dataset(mdp, pols)
    with pytest.raises(InvalidDatasetError, match="rollouts must be"):
        mbrcsl(data, rollouts=-1)
    disc = make_dataset(
        tl.make("random:S=3,A=2,seed=1,gamma=0.8").with_objective(gamma=0.8),
        50,
        coverage=0.5,
    )
    with pytest.raises(InvalidDatasetError, match="finite-horizon trajectory data"):
        rcsl(disc)


def test_runs_through_tl_run():
    out = tl.run("mbrcsl:rollouts=200", "random:S=3,A=2,H=3,seed=1", dataset_size=60, coverage=0.5)
    assert np.isfinite(out.summary()["suboptimality_mean"])


def _claim_and_control(claim_name, control_name):
    import theorylab.validations.mutations  # noqa: F401
    from theorylab.validations.controls import get_control
    from theorylab.validations.registry import VALIDATIONS

    claim = VALIDATIONS.get(claim_name)
    rep = claim.run("quick")
    assert rep.passed, [c.detail for c in rep.checks if not c.passed]
    with get_control(control_name).applied(claim):
        bad = claim.run("quick")
    return {c.name for c in bad.checks if c.status == "FAIL"}


def test_mbrcsl_claim_passes_and_no_rollouts_fails_it():
    failed = _claim_and_control("mbrcsl-stitches-rcsl-does-not", "mbrcsl-no-rollouts")
    assert "stitching MDP: MBRCSL reaches the optimum" in failed
    assert "random MDPs: MBRCSL = best support-restricted value" in failed


def test_heteroscedastic_instance():
    mdp, beh, phi = heteroscedastic_instance()
    # a linear MDP in phi: equal feature rows have equal rewards and transitions
    for h in range(mdp.horizon):
        R, P = mdp.reward(h), np.asarray(mdp.P_flat(h)).reshape(mdp.S, mdp.A, mdp.S)
        flat = phi.reshape(-1, phi.shape[-1])
        for i, j in zip(*np.nonzero(np.all(flat[:, None] == flat[None], axis=-1)), strict=True):
            assert R.reshape(-1)[i] == R.reshape(-1)[j]
            np.testing.assert_array_equal(P.reshape(-1, mdp.S)[i], P.reshape(-1, mdp.S)[j])
    # the steady action is optimal at every context, by the gaps 0.01 .. 0.3 (/ 1.2 C of mu0)
    v_noisy = finite_value(mdp, np.eye(2)[np.zeros((mdp.horizon, mdp.S), dtype=int)])
    gaps = np.geomspace(0.01, 0.3, 6)
    assert optimal_finite_value(mdp) - v_noisy == pytest.approx(gaps.sum() / 7.2, rel=1e-9)


@pytest.mark.slow
def test_vw_pevi_claim_passes_and_inverted_weights_fail_it():
    failed = _claim_and_control("vw-pevi-heteroscedastic-rate", "vw-pevi-weights-inverted")
    assert "variance weighting beats unweighted (same beta)" in failed
