"""PRDC (seed row 002-004#C3) and the point-mass family: the KD-tree constraint against brute
force, the critic against an independent least-squares fit, the point mass by hand, input errors,
tl.run, and the control."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.offline import prdc as P
from theorylab.algorithms.offline.dataset import make_dataset
from theorylab.errors import InvalidMDPError
from theorylab.mdps import make
from theorylab.validations.claims.dataset_constraint import band_behaviour, bc_penalty

SPEC = "point-mass:nx=11,nu=9,control=1.0"


def brute_force_penalty(states, actions, S, A, beta):
    """(S, A): (u - u_i)^2 for the sample i minimising beta^2 dx^2 + du^2, all pairs by numpy
    (ties: the smaller penalty, so that it does not depend on which tied sample is returned)."""
    x, u = np.linspace(-1, 1, S), np.linspace(-1, 1, A)
    d2 = (beta * (x[:, None, None] - x[states][None, None, :])) ** 2 + (
        u[None, :, None] - u[actions][None, None, :]
    ) ** 2  # (S, A, N)
    best = d2.min(axis=-1, keepdims=True)
    pen = (u[None, :, None] - u[actions][None, None, :]) ** 2
    return np.where(d2 <= best + 1e-12, pen, np.inf).min(axis=-1)


@pytest.mark.parametrize("beta", [0.3, 2.0, 50.0])
def test_kd_tree_penalty_equals_brute_force(beta):
    rng = np.random.default_rng(0)
    S, A, N = 9, 7, 40
    states, actions = rng.integers(0, S, N), rng.integers(0, A, N)
    got = P.dataset_constraint_penalty(states, actions, S, A, beta)
    want = brute_force_penalty(states, actions, S, A, beta)
    # the KD-tree returns one of the tied samples: its penalty is >= the tie-minimum; off ties,
    # equal
    assert np.all(got >= want - 1e-12)
    x, u = np.linspace(-1, 1, S), np.linspace(-1, 1, A)
    d2 = (beta * (x[:, None, None] - x[states])) ** 2 + (u[None, :, None] - u[actions]) ** 2
    srt = np.sort(d2, axis=-1)
    unique = srt[..., 1] - srt[..., 0] > 1e-9
    np.testing.assert_allclose(got[unique], want[unique])
    # a dataset control has penalty 0 at its own state
    assert np.all(got[states, actions] == 0.0)


def test_large_beta_is_the_closest_control_at_the_nearest_data_state():
    rng = np.random.default_rng(1)
    S, A = 11, 9
    states, actions = rng.integers(2, 8, 30), rng.integers(0, A, 30)
    pen = P.dataset_constraint_penalty(states, actions, S, A, 1e4)
    np.testing.assert_allclose(pen, bc_penalty(states, actions, S, A))


def test_critic_is_the_kernel_weighted_least_squares_fit():
    """fit_critic against numpy's lstsq on the square-root-weighted samples, state by state."""
    rng = np.random.default_rng(2)
    S, A, N = 6, 5, 80
    s, a = rng.integers(0, S, N), rng.integers(0, A, N)
    y = rng.normal(size=N)
    phi = P.action_features(A, 1)
    K = P.state_kernel(s, S, 0.5, np.ones(N))
    got = P.fit_critic(phi, s, a, y, K)
    for st in range(S):
        w = np.sqrt(K[st])
        coef = np.linalg.lstsq(phi[a] * w[:, None], y * w, rcond=None)[0]
        np.testing.assert_allclose(got[st], phi @ coef, atol=1e-5)


def test_point_mass_by_hand():
    mdp = make("point-mass:nx=5,nu=3,step=0.5,noise=0.01,control=1.0,gamma=0.5")
    x = np.linspace(-1, 1, 5)
    P_ = mdp.dense_P()
    np.testing.assert_allclose(P_.sum(-1), 1.0)
    # from x = 0 with u = +1 the mean is 0.5 = x_3, with u = -1 it is -0.5 = x_1 (tiny noise)
    assert P_[2, 2, 3] > 0.999 and P_[2, 0, 1] > 0.999
    assert P_[0, 0, 0] > 0.999  # the wall at -1
    r = 1 - ((x[:, None] - 0.5) ** 2 + 1.0 * np.array([1.0, 0.0, 1.0])[None] ** 2) / 3.25
    np.testing.assert_allclose(mdp.R, r)
    assert mdp.gamma == 0.5 and mdp.horizon is None and mdp.mu0[0] == 1.0
    again = make(mdp.name)
    assert again.name == mdp.name
    np.testing.assert_array_equal(again.dense_P(), mdp.dense_P())


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ("point-mass:nx=2", "nx >= 3"),
        ("point-mass:step=0", "step > 0"),
        ("point-mass:noise=-1", "noise > 0"),
        ("point-mass:control=-0.5", "control >= 0"),
        ("point-mass:gamma=1.0", "0 < gamma < 1"),
    ],
)
def test_point_mass_bad_input(spec, fragment):
    with pytest.raises(InvalidMDPError, match=fragment):
        make(spec)


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"beta": 0.0}, "beta must be a finite number > 0"),
        ({"alpha": float("inf")}, "alpha must be a finite number > 0"),
        ({"bandwidth": -1.0}, "bandwidth must be a finite number > 0"),
        ({"iterations": 0}, "iterations must be an integer >= 1"),
        ({"degree_u": 1.5}, "degree_u must be an integer >= 0"),
    ],
)
def test_prdc_bad_input(kwargs, fragment):
    ds = make_dataset(make(SPEC), 50, coverage=0.0, seeds=1, seed=0)
    with pytest.raises(ValueError, match=fragment):
        P.prdc(ds, **kwargs)


def test_finite_horizon_data_are_refused():
    ds = make_dataset(make("random:S=4,A=3,H=3,seed=1"), 30, coverage=0.0, seeds=1, seed=0)
    with pytest.raises(ValueError, match="discounted data"):
        P.prdc(ds)


def test_large_beta_clones_and_the_constraint_bounds_the_critic():
    """On the claim's data (the band controller, 2000 samples, 4 seeds): PRDC at large beta plays
    a dataset control at (almost) every data state; the unregularised critic goes beyond
    1 / (1 - gamma) on some seed while PRDC's does not."""
    mdp = make("point-mass:nx=21,nu=21,control=1.0")
    beh = band_behaviour(mdp.S, mdp.A)
    ds = make_dataset(mdp, 2000, behaviour=beh, kind="samples", seeds=4, seed=0)
    bc = P.prdc(ds, beta=1e3, alpha=1.0, iterations=20)
    u = np.linspace(-1, 1, mdp.A)
    dist = []
    for b in range(4):
        mask = np.zeros((mdp.S, mdp.A), dtype=bool)
        mask[ds.states[b], ds.actions[b]] = True
        for s in np.unique(ds.states[b]):
            dist.append(np.abs(u[mask[s]] - u[bc.policy[b][s]]).min())
    # a dataset control at its state, or (a penalty of 0.01 against lam Q) one grid step off
    assert max(dist) <= 0.1 + 1e-12 and np.mean(dist) <= 0.01
    top = 1 / (1 - mdp.gamma)
    assert P.prdc(ds, beta=2.0, alpha=1.0, iterations=50).info["q_max"].max() <= 1.05 * top
    free = P.prdc(ds, alpha=1.0, iterations=50, constraint=False)
    assert np.abs(free.info["q_max"]).max() > top


def test_tl_run_and_the_mutation():
    res = tl.run("prdc", SPEC, dataset_size=300, seeds=2, iterations=10)
    assert np.all(np.isfinite(res.summary()["suboptimality_mean"]))
    import theorylab.validations.mutations  # noqa: F401
    from theorylab.validations.controls import get_control

    ds = make_dataset(make(SPEC), 100, coverage=0.0, seeds=1, seed=0)
    with get_control("prdc-constraint-dropped").applied(None):
        muted = P.prdc(ds, iterations=5)
    assert np.all(muted.info["penalty"] == 0.0)
    assert np.any(P.prdc(ds, iterations=5).info["penalty"] > 0.0)
