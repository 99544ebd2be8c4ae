"""PAMC (algorithms/offline/pamc.py; seed 001#32): the conformal quantile written out, completion
against the truth and a second solver, the lowrank-reward family, input errors, tl.run."""

from __future__ import annotations

import math

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.offline.dataset import make_dataset
from theorylab.algorithms.offline.pamc import (
    complete_als,
    complete_nuclear,
    conformal_quantile,
    pamc,
)
from theorylab.errors import InvalidMDPError
from theorylab.mdps import make
from theorylab.validations.claims.reward_completion import low_rank_matrix

SPEC = "lowrank-reward:S=12,A=6,r=2,H=4,seed=3"


@pytest.mark.parametrize("n", [1, 9, 19, 24, 99])
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.3])
def test_conformal_quantile_is_the_ceil_n_plus_1_order_statistic(n, alpha):
    scores = np.random.default_rng(n).permutation(np.arange(1.0, n + 1))  # 1, ..., n shuffled
    k = math.ceil((n + 1) * (1 - alpha))  # the printed finite-sample rank, written out here
    want = float(k) if k <= n else math.inf
    assert conformal_quantile(scores, alpha) == want


def test_conformal_coverage_is_k_over_n_plus_1_and_the_uncorrected_quantile_undercovers():
    """Uniform scores: the coverage of a fresh draw given the set is q itself, so the mean over
    sets is E[U_(k)] = k / (n + 1) (order statistics); the plain quantile under-covers."""
    from theorylab.algorithms.offline import pamc as module
    from theorylab.validations.controls import get_control
    from theorylab.validations.mutations import MUTATIONS  # noqa: F401  (registers the controls)

    n, alpha, sets = 24, 0.1, 20000
    U = np.random.default_rng(0).random((sets, n))
    good = np.mean([conformal_quantile(u, alpha) for u in U])
    assert good == pytest.approx(23 / 25, abs=3e-3)  # k = ceil(25 * 0.9) = 23
    with get_control("pamc-conformal-uncorrected").applied(None):
        bad = np.mean([module.conformal_quantile(u, alpha) for u in U])
    assert bad < 1 - alpha - 0.02


def test_als_and_nuclear_norm_recover_an_exact_low_rank_matrix():
    rng = np.random.default_rng(5)
    M = low_rank_matrix(rng, 12, 10, 2)
    mask = rng.random(M.shape) < 0.7
    assert np.abs(complete_als(M, mask.astype(float), 2) - M).max() <= 1e-4
    assert np.abs(complete_nuclear(M, mask) - M).max() <= 1e-4
    # one rank short cannot fit a rank-2 matrix
    assert np.abs(complete_als(M, mask.astype(float), 1) - M).max() > 1e-2


def test_als_with_every_entry_observed_is_the_truncated_svd():
    rng = np.random.default_rng(6)
    Y = rng.random((9, 7))
    u, s, vt = np.linalg.svd(Y)
    best = (u[:, :2] * s[:2]) @ vt[:2]  # Eckart-Young: the best rank-2 approximation
    np.testing.assert_allclose(complete_als(Y, np.ones_like(Y), 2), best, atol=1e-5)


def test_lowrank_reward_family_has_rank_r_rewards_in_unit_interval():
    mdp = make("lowrank-reward:S=15,A=8,r=3,seed=1")
    R = np.asarray(mdp.reward(0))
    assert np.linalg.matrix_rank(R, tol=1e-10) == 3
    assert R.min() >= 0 and R.max() <= 1
    assert mdp.reward_model == "bernoulli"
    with pytest.raises(InvalidMDPError, match="r <= min"):
        make("lowrank-reward:S=4,A=3,r=5")
    with pytest.raises(InvalidMDPError, match="noise"):
        make("lowrank-reward:noise=gaussian")


def test_pamc_completes_rewards_at_pairs_it_never_saw():
    """Noiseless rewards, 250 uniform samples on 72 pairs: every seed leaves pairs unvisited;
    the completion is exact there (<= 1e-4) on most seeds, and where ALS misses, the conformal
    radius says so (> 0.1)."""
    mdp = make("lowrank-reward:S=12,A=6,r=2,H=4,noise=deterministic,seed=3")
    ds = make_dataset(mdp, 250, coverage=0.0, seeds=4, seed=1)
    res = pamc(ds, rank=2, calibration=0.2)
    R = np.asarray(mdp.reward(0))
    assert res.info["R_hat"].shape == (4, mdp.S, mdp.A)
    exact = 0
    for b in range(4):
        n = np.bincount(ds.states[b] * mdp.A + ds.actions[b], minlength=mdp.S * mdp.A)
        unseen = n.reshape(mdp.S, mdp.A) == 0
        assert unseen.any()
        err = np.abs(res.info["R_hat"][b] - R)[unseen].max()
        exact += err <= 1e-4
        assert err <= 1e-4 or res.info["radius"][b] > 0.1
    assert exact >= 3


def test_pamc_through_tl_run_and_its_q_is_backward_induction_on_r_hat():
    res = tl.run("pamc", SPEC, dataset_size=[400, 2000], seeds=2, coverage=0.5)
    assert res.suboptimality.shape == (2, 2)
    mdp = make(SPEC)
    ds = make_dataset(mdp, 400, coverage=0.5, seeds=1, seed=7)
    out = pamc(ds)
    # independent backward induction on dense empirical transitions
    H, S, A = mdp.horizon, mdp.S, mdp.A
    V = np.zeros(S)
    for h in range(H - 1, -1, -1):
        rows = ds.stages[0] == h
        cnt = np.zeros((S, A, S))
        np.add.at(cnt, (ds.states[0][rows], ds.actions[0][rows], ds.next_states[0][rows]), 1.0)
        n = cnt.sum(-1)
        PV = np.where(n > 0, cnt @ V / np.maximum(n, 1), 0.0)
        Q = out.info["R_hat"][0] + PV
        np.testing.assert_allclose(out.Q[0, h], Q, atol=1e-12)
        V = Q.max(-1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"rank": 0}, "rank=0"),
        ({"rank": 7}, "at most min"),
        ({"alpha": 1.5}, "alpha=1.5"),
        ({"calibration": 1.0}, "calibration=1.0"),
        ({"weights": "propensity"}, "weights='propensity'"),
    ],
)
def test_bad_parameters_name_the_key(kwargs, match):
    with pytest.raises(ValueError, match=match):
        tl.run("pamc", SPEC, dataset_size=100, seeds=1, **kwargs)


def test_discounted_data_is_refused():
    mdp = make("random:S=4,A=2,gamma=0.9,seed=1").with_objective(gamma=0.9)
    ds = make_dataset(mdp, 100, coverage=0.0, seeds=1, seed=0)
    with pytest.raises(ValueError, match="finite-horizon"):
        pamc(ds)


def test_ipw_weights_recover_the_same_exact_matrix():
    mdp = make("lowrank-reward:S=12,A=6,r=2,H=4,noise=deterministic,seed=3")
    ds = make_dataset(mdp, 4000, coverage=0.5, seeds=1, seed=2)
    res = pamc(ds, weights="ipw")
    assert np.abs(res.info["R_hat"][0] - np.asarray(mdp.reward(0))).max() <= 1e-4
