"""Tests of tabular f-DVL (algorithms/dual/f_dvl.py): the DVL code's surrogate losses against their
own formulas (hari-sikchi/DVL @4b7cf11, offline/critic.py; theory-preference-dual-llm.md 6.3), the
V-step's optimality, the contraction, and the lam -> 1 limit (in-support value iteration)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import theorylab as tl
from theorylab.algorithms.dual import divergence
from theorylab.algorithms.dual.empirical_model import empirical_models
from theorylab.algorithms.dual.f_dvl import f_dvl, value_loss, value_step
from theorylab.algorithms.dual.inputs import DualInputError
from theorylab.algorithms.offline import make_dataset, population_dataset

LOSSES = ("chi-square", "total-variation", "reverse-kl")


@pytest.fixture(scope="module")
def mdp():
    return tl.make("random:S=5,A=3,gamma=0.9,seed=4").with_objective(gamma=0.9)


def test_surrogate_losses_are_the_codes_formulas():
    x = np.linspace(-6, 3, 37)
    lam = 0.7
    np.testing.assert_allclose(
        value_loss(x, "chi-square", lam), lam * np.maximum(x + x**2 / 4, 0) - (1 - lam) * x
    )
    np.testing.assert_allclose(
        value_loss(x, "total-variation", lam), lam * np.maximum(x, 0) - (1 - lam) * x
    )
    z = np.minimum(x / lam, 7.0)
    m = max(z.max(), -1.0)
    gumbel = np.exp(-m) * (np.exp(z) - z - 1)  # e^{z-m} - z e^{-m} - e^{-m}
    np.testing.assert_allclose(value_loss(x, "reverse-kl", lam), gumbel, atol=1e-15)


def test_the_code_chi_square_loss_is_not_the_exact_conjugate():
    """max(y + y^2/4, 0) = f*_p(y) only for y >= 0; below it the surrogate is 0 or positive
    (non-monotone below -4) while f*_p(y) = y + y^2/4 >= -1 (theory-preference-dual-llm 6.3)."""
    y = np.array([-5.0, -3.0, -1.0, 0.5])
    surrogate = np.maximum(y + y**2 / 4, 0)
    exact = divergence("chi2").conjugate_nonneg(y)
    assert np.allclose(surrogate[-1], exact[-1])
    assert np.all(np.abs(surrogate[:-1] - exact[:-1]) > 0.2)
    assert surrogate[0] > surrogate[1]  # decreasing then increasing: non-monotone


@settings(max_examples=25)
@given(
    seed=st.integers(0, 10_000),
    loss=st.sampled_from(["chi-square", "total-variation"]),
    lam=st.sampled_from([0.1, 0.55, 0.8, 0.99]),
)
def test_value_step_minimises_the_weighted_loss(seed, loss, lam):
    if loss == "total-variation" and lam <= 0.5:
        lam = 0.6
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(4, 3)) * 3
    w = rng.dirichlet(np.ones(3), size=4) * (rng.uniform(size=(4, 1)) + 0.1)
    V = value_step(Q, w, loss, lam)
    for s in range(4):
        grid = V[s] + np.linspace(-1, 1, 401)[:, None] * (1 + np.ptp(Q[s]))
        objs = (w[s] * value_loss(Q[s][None] - grid, loss, lam)).sum(axis=1)
        best = float(np.sum(w[s] * value_loss(Q[s] - V[s], loss, lam)))
        assert best <= objs.min() + 1e-10


def test_reverse_kl_step_is_the_behaviour_log_sum_exp():
    rng = np.random.default_rng(0)
    Q, w = rng.normal(size=(3, 4)), rng.dirichlet(np.ones(4), size=3)
    lam = 0.3
    V = value_step(Q, w, "reverse-kl", lam)
    np.testing.assert_allclose(V, lam * np.log((w * np.exp(Q / lam)).sum(1) / w.sum(1)))
    # the stationarity condition of the code's loss with m held fixed (stop-gradient): the
    # gradient e^{-m} sum_a w (e^z - 1) / lam vanishes, z = (Q - V) / lam
    resid = (w * (np.exp((Q - V[:, None]) / lam) - 1)).sum(axis=1)
    np.testing.assert_allclose(resid, 0.0, atol=1e-12)


@pytest.mark.parametrize("loss", LOSSES)
def test_backup_is_a_gamma_contraction(mdp, loss):
    data = population_dataset(mdp, coverage=0.0)
    emp, d_hat = empirical_models(data, "f-dvl")[0]
    rng = np.random.default_rng(1)
    g = mdp.gamma
    for _ in range(10):
        V1, V2 = rng.normal(size=(2, mdp.S)) * 4
        T1 = value_step(emp.reward(0) + g * emp.expected_next(V1), d_hat, loss, 0.8)
        T2 = value_step(emp.reward(0) + g * emp.expected_next(V2), d_hat, loss, 0.8)
        assert np.max(np.abs(T1 - T2)) <= g * np.max(np.abs(V1 - V2)) + 1e-9


def test_tv_at_lam_one_is_in_support_value_iteration(mdp):
    data = make_dataset(mdp, 400, coverage=0.3, seeds=1, seed=3)
    res = f_dvl(data, loss="total-variation", loss_temp=1 - 1e-12)
    emp, d_hat = empirical_models(data, "f-dvl")[0]
    V = np.zeros(mdp.S)
    for _ in range(2000):  # value iteration over the actions with data
        Q = emp.reward(0) + mdp.gamma * emp.expected_next(V)
        V = np.where(d_hat.sum(1) > 0, np.where(d_hat > 0, Q, -np.inf).max(1), Q.max(1))
    np.testing.assert_allclose(res.V[0], V, atol=1e-8)


def test_f_dvl_runs_like_any_offline_algorithm():
    res = tl.run("f-dvl", "random:S=5,A=3,gamma=0.9,seed=4", dataset_size=[300, 3000], seeds=3)
    assert res.suboptimality.shape == (3, 2) and np.all(res.suboptimality >= -1e-9)


def test_f_dvl_bad_input(mdp):
    data = make_dataset(mdp, 100, coverage=0.3)
    with pytest.raises(DualInputError, match="loss_temp must lie in"):
        f_dvl(data, loss="total-variation", loss_temp=0.5)
    with pytest.raises(DualInputError, match="unknown f-DVL loss"):
        f_dvl(data, loss="kl")
