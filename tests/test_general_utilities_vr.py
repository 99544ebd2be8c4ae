"""Tests of N-VR-PG (algorithms/dual/general_utilities_vr.py; Barakat, Fatkhullin, He, ICML 2023,
seed rows 000#14 / 001#65).

Oracles written here, not imported from the module: enumeration of every truncated trajectory
(S = 2, A = 2, H = 3: 2 * 4^3 paths with their probabilities) for the expectations of the
occupancy estimate, the GPOMDP gradient and the importance-weighted correction; the truncated
occupancy by matrix powers; the gradient by central finite differences of that occupancy.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import softmax

import theorylab as tl
from theorylab.algorithms.dual import general_utilities as gu
from theorylab.algorithms.dual import general_utilities_vr as vr
from theorylab.mdps import make

S, A, GAMMA, H = 2, 2, 0.6, 3


def _model():
    rng = np.random.default_rng(3)
    P = rng.dirichlet(np.ones(S), size=(S, A))  # (S, A, S)
    mu = np.array([0.3, 0.7])
    return P, mu


def _paths(P, mu, pi):
    """Every (states, actions) of length H with its probability under pi."""
    for s0 in range(S):
        for acts in itertools.product(range(A), repeat=H):
            for nxt in itertools.product(range(S), repeat=H - 1):
                states = (s0, *nxt)
                p = mu[s0]
                for h in range(H):
                    p *= pi[states[h], acts[h]]
                    if h < H - 1:
                        p *= P[states[h], acts[h], states[h + 1]]
                yield np.array(states), np.array(acts), p


def _truncated_occupancy(P, mu, pi):
    """``(1 - gamma) sum_{h < H} gamma^h P(s_h = s, a_h = a)`` by matrix powers (S, A)."""
    d, lam = mu.copy(), np.zeros((S, A))
    for h in range(H):
        lam += (1 - GAMMA) * GAMMA**h * d[:, None] * pi
        d = np.einsum("s,sa,sat->t", d, pi, P)
    return lam


def test_estimators_are_unbiased_by_enumeration():
    P, mu = _model()
    rng = np.random.default_rng(0)
    theta, theta_old = rng.normal(size=(S, A)), rng.normal(size=(S, A))
    pi, pi_old = softmax(theta, axis=1), softmax(theta_old, axis=1)
    z, z_old = rng.normal(size=(S, A)), rng.normal(size=(S, A))
    e_lam, e_g, e_corr, e_w = np.zeros((S, A)), np.zeros((S, A)), np.zeros((S, A)), 0.0
    total = 0.0
    for states, actions, p in _paths(P, mu, pi):
        lam, g, w = vr.trajectory_estimates(states, actions, pi, pi_old, z, GAMMA)
        _, g_old, _ = vr.trajectory_estimates(states, actions, pi_old, pi_old, z_old, GAMMA)
        e_lam += p * lam
        e_g += p * g
        e_corr += p * w * g_old
        e_w += p * w
        total += p
    assert total == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(e_lam, _truncated_occupancy(P, mu, pi), atol=1e-12)
    assert e_w == pytest.approx(1.0, abs=1e-12)  # E_pi[w] = sum of pi_old's path probabilities

    def objective(th, zz):
        return float(np.sum(_truncated_occupancy(P, mu, softmax(th, axis=1)) * zz))

    def fd(th, zz):
        out = np.zeros((S, A))
        for idx in np.ndindex(S, A):
            e = np.zeros((S, A))
            e[idx] = 1e-6
            out[idx] = (objective(th + e, zz) - objective(th - e, zz)) / 2e-6
        return out

    np.testing.assert_allclose(e_g, fd(theta, z), atol=1e-8)
    # the importance-weighted old term is the old gradient: E_pi[w g(pi_old, z_old)]
    np.testing.assert_allclose(e_corr, fd(theta_old, z_old), atol=1e-8)


def test_horizon_and_schedules_are_the_printed_formulas():
    assert vr.horizon(0.5, 1e-7) == 24  # 0.5^24 = 6.0e-8 <= 1e-7 < 0.5^23
    alpha, eta = vr.schedules(4, 2.0, 10.0, 11.0)
    np.testing.assert_allclose(alpha, [2 / 10, 2 / 11, 2 / 12, 2 / 13])
    np.testing.assert_allclose(eta, [1.0, 1.0, 11 / 12, 11 / 13])  # min(1, 11 / (t + 10))


def test_runs_through_tl_run_and_improves_the_kl_utility():
    spec = "random:S=4,A=2,gamma=0.5,seed=0"
    res = tl.run("general-utility-vr-pg", spec, iterations=3000, utility="kl-expert", seed=1)
    F = np.asarray(res.objective)
    assert F.shape == (3001,)
    assert np.all(F <= 1e-9)  # F* = 0 for the KL utility
    assert -F[-1] < 0.25 * -F[0]  # one run; the claim measures the rate over 16-64 runs
    mdp = make(spec).with_objective(gamma=0.5, horizon=None)
    direct = vr.nvr_pg(mdp, gu.make_utility(mdp, "kl-expert"), 3000, seed=1)
    np.testing.assert_array_equal(F[1:], direct.values[0])


def test_runs_are_independent_and_batched_equals_single():
    mdp = make("random:S=4,A=2,gamma=0.5,seed=0").with_objective(gamma=0.5, horizon=None)
    F = gu.make_utility(mdp, "kl-expert")
    batch = vr.nvr_pg(mdp, F, 200, runs=3, seed=5, checkpoints=np.array([50, 200]))
    single = vr.nvr_pg(mdp, F, 200, runs=1, seed=5, checkpoints=np.array([50, 200]))
    np.testing.assert_array_equal(batch.values[0], single.values[0])  # run 0 first in the stream
    assert not np.allclose(batch.values[1], batch.values[2])


@pytest.mark.parametrize(
    ("kwargs", "flag"),
    [
        ({"alpha0": 0.0}, "alpha0"),
        ({"t0": -1.0}, "t0"),
        ({"eta0": float("nan")}, "eta0"),
        ({"eps": 2.0}, "eps"),
        ({"seed": -1}, "seed"),
        ({"utility": "entropyy"}, "utility"),
    ],
)
def test_bad_input_is_one_line_naming_the_flag(kwargs, flag):
    with pytest.raises(ValueError, match=flag):
        tl.run("general-utility-vr-pg", "random:S=3,A=2,gamma=0.5,seed=0", iterations=5, **kwargs)


def test_the_control_same_sample_reward_stalls_where_the_lagged_method_converges():
    from theorylab.validations.alignment_dual_mutations import vrpg_same_sample_reward

    mdp = make("random:S=4,A=2,gamma=0.5,seed=0").with_objective(gamma=0.5, horizon=None)
    F = gu.make_utility(mdp, "kl-expert")
    cps = np.array([3000])
    good = -vr.nvr_pg(mdp, F, 3000, runs=8, checkpoints=cps, seed=2).values[:, -1].mean()
    with vrpg_same_sample_reward():
        bad = -vr.nvr_pg(mdp, F, 3000, runs=8, checkpoints=cps, seed=2).values[:, -1].mean()
    assert vr.LAGGED  # restored
    assert bad > 5 * good, (bad, good)


@pytest.mark.parametrize("utility", gu.UTILITIES)
def test_every_utility_runs_and_never_exceeds_the_cvxpy_optimum(utility):
    spec = "random:S=3,A=2,gamma=0.6,seed=4"
    mdp = make(spec).with_objective(gamma=0.6, horizon=None)
    f_star, _ = gu.optimum_cvxpy(mdp, gu.make_utility(mdp, utility))
    res = tl.run("general-utility-vr-pg", spec, iterations=500, utility=utility, seed=0)
    F = np.asarray(res.objective)
    assert np.all(np.isfinite(F))
    assert F.max() <= f_star + 1e-7
    assert res.config["utility"] == utility


def test_the_recorded_policies_are_the_scored_iterates():
    spec = "random:S=3,A=2,gamma=0.6,seed=4"
    mdp = make(spec).with_objective(gamma=0.6, horizon=None)
    F = gu.make_utility(mdp, "kl-expert")
    res = tl.run("general-utility-vr-pg", spec, iterations=50, seed=3)
    pis = np.exp(np.asarray(res.policies))  # (T+1, S, A), pi_0 uniform
    assert pis.shape == (51, 3, 2)
    np.testing.assert_allclose(pis[0], 0.5)
    again = [F.value(gu.occupancy_measure(mdp, p, gamma=0.6)) for p in pis]
    np.testing.assert_allclose(again, res.objective, atol=1e-12)
