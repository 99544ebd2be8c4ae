"""Offline algorithms: pessimism invariant, infinite-data optimality, one-hot PEVI == tabular PEVI,
batched == alone, zero-penalty reductions, and naive VI's failure on partial coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as hst

from theorylab.algorithms.offline import (
    InvalidDatasetError,
    fit,
    make_dataset,
    population_dataset,
    suboptimality,
)
from theorylab.algorithms.offline.coverage import optimal_solution
from theorylab.algorithms.offline.pevi import one_hot_features
from theorylab.algorithms.offline.scoring import pessimism_holds, policy_values
from theorylab.algorithms.offline.vi_lcb import vi_lcb_iterations
from theorylab.algorithms.registry import list_algorithms
from theorylab.experiment import run, run_offline
from theorylab.mdps import make
from theorylab.mdps.families.offline_instances import tempting_arms_coverage

# optidice, f-dvl: algorithms/dual; prdc: tests/test_prdc.py
DISCOUNTED_ONLY = ("vi-lcb", "optidice", "f-dvl", "ogsrl", "prdc")
# trajectory weighting returns the reweighted behaviour policy, an improvement on the behaviour
# but not an optimal policy, even with infinite data (its claim checks the improvement); RCSL
# returns the best data trajectory and MBRCSL the best stitched one, neither optimal in general;
# HetPEVI's source penalty c_K H sqrt(iota / K) does not shrink with data from one source
# hubl: trajectory data only, and biased towards pi_b for lambda > 0 (its claim measures the bias)
# pamc: plans on a rank-r completion of a stationary reward matrix, biased on models whose
# rewards are not rank r (e.g. random MDPs with A > r) or depend on the stage
# cfgrl: a one-step improvement of the behaviour policy at a finite guidance weight, not an
# optimal policy even with infinite data (tests/test_cfgrl.py, its claim checks the improvement)
NOT_CONSISTENT = ("trajectory-weighting", "rcsl", "mbrcsl", "het-pevi", "hubl", "pamc", "cfgrl")
# density-model-vi needs a low-rank MDP's density features mu; its infinite-data test is in
# tests/test_density_features.py
NEEDS_DENSITY = ("density-model-vi",)
# structured-problem learners (issue 31, repr31): bisimulation-vi reads observation histories
# (history-pomdp's layout, observations=), video-representation decodes a block MDP (discounted,
# n_latent=); their own tests hold them to infinite-data optimality on their families
# (tests/test_history_abstraction.py, tests/test_video_representation.py)
# hip-abstraction-vi decodes a HiP-BMDP (discounted, tasks= and n_latent=;
# tests/test_hip_bmdp.py)
STRUCTURED = ("bisimulation-vi", "video-representation", "hip-abstraction-vi")
# gorl (demos=) and h2o (simulator=) need a second input besides the dataset; their own tests
# cover consistency and batching (tests/test_gorl.py, tests/test_h2o.py)
SIDE_INPUT = ("gorl", "h2o")
FINITE = [
    n
    for n in list_algorithms("offline")
    if n not in DISCOUNTED_ONLY + STRUCTURED + NEEDS_DENSITY + SIDE_INPUT
]
DISCOUNTED = ["vi-lcb", "naive-vi", "behaviour-cloning"]
PESSIMISTIC_FINITE = [
    "pessimistic-vi-hoeffding",
    "pessimistic-vi-bernstein",
    "pevi",
    "pevi-tabular",
    "vw-pevi",
    "het-pevi",
]


def _finite_mdp():
    return make("random:S=5,A=3,H=4,seed=3")


def _discounted_mdp():
    return make("random:S=5,A=3,seed=3,gamma=0.8").with_objective(gamma=0.8)


def test_registry_lists_every_algorithm():
    assert set(list_algorithms("offline")) == {
        "vi-lcb",
        "pessimistic-vi-hoeffding",
        "pessimistic-vi-bernstein",
        "pevi",
        "pevi-tabular",
        "vw-pevi",
        "naive-vi",
        "behaviour-cloning",
        "optidice",  # algorithms/dual (tests/test_dual_dice.py)
        "f-dvl",  # algorithms/dual (tests/test_dual_f_dvl.py)
        "ogsrl",  # tests/test_offline_ogsrl.py
        "trajectory-weighting",  # tests/test_offline_trajectory_weighting.py
        "rcsl",  # tests/test_offline_rcsl.py
        "mbrcsl",  # tests/test_offline_rcsl.py
        "het-pevi",  # tests/test_offline_het_pevi.py
        "hubl",  # tests/test_hubl.py
        "prdc",  # tests/test_prdc.py
        "pamc",  # tests/test_pamc.py
        "density-model-vi",  # tests/test_density_features.py
        "video-representation",  # tests/test_video_representation.py
        "bisimulation-vi",  # tests/test_history_abstraction.py
        "hip-abstraction-vi",  # tests/test_hip_bmdp.py
        "gorl",  # tests/test_gorl.py
        "h2o",  # tests/test_h2o.py
        "cfgrl",  # tests/test_cfgrl.py
    }


# ------------------------------------------------------------------------------ pessimism
@pytest.mark.parametrize("name", PESSIMISTIC_FINITE)
@pytest.mark.parametrize("N", [200, 5000])
def test_pessimism_invariant_finite_horizon(name, N):
    """V_hat(mu0) <= V^{pi_hat}(mu0) on every seed, at the default (documented) constants."""
    mdp = _finite_mdp()
    ds = make_dataset(mdp, N, coverage=0.3, other="uniform", seeds=48, seed=5)
    res = fit(name, ds)
    values = policy_values(mdp, res.policy)
    assert res.pessimistic
    assert pessimism_holds(res.value_estimate, values).all(), (res.value_estimate - values).max()


@pytest.mark.parametrize("c_L", [2000.0, 0.5])
def test_pessimism_invariant_vi_lcb(c_L):
    """VI-LCB with the code's constant and with the exact Hoeffding constant c_L = 1/2."""
    mdp = _discounted_mdp()
    ds = make_dataset(mdp, 200_000, coverage=0.3, other="adversarial", seeds=24, seed=5)
    res = fit("vi-lcb", ds, c_L=c_L)
    values = policy_values(mdp, res.policy)
    assert pessimism_holds(res.value_estimate, values).all()
    if c_L == 0.5:
        assert res.V.max() > 0  # it did learn something at this N


def test_vi_lcb_starts_from_the_behaviour_of_fold_0():
    """Issue 14 item 1: Algorithm 3 (as recalled) sets pi_0(s) = argmax_a m_0(s, a) from fold 0,
    the behaviour-cloning fallback of the near-expert regime; the former default started from a
    random policy and never read fold 0. On near-expert data (C* = 1.05) at N = 2000, where few
    lower bounds have risen, the behaviour start is near-optimal and the random one is not."""
    from theorylab.algorithms.offline.empirical import fold_blocks

    mdp = make("multiscale-bandit:gamma=0.5")
    ds = make_dataset(mdp, 2000, coverage=1 / 1.05, other="adversarial", seeds=16)
    bc = fit("vi-lcb", ds, c_L=0.5)  # the default
    rnd = fit("vi-lcb", ds, c_L=0.5, initial_policy="random")
    assert bc.params["initial_policy"] == "behaviour"
    # where V never rose, the policy is fold 0's most frequent action (ties: smallest index)
    T = bc.info["T"]
    m0 = fold_blocks(ds, T + 1)[0].counts()  # (B, S, A)
    never = bc.V <= 0  # (B, S)
    np.testing.assert_array_equal(bc.policy[never], m0.argmax(axis=-1)[never])
    assert never.any()
    sub_bc, sub_rnd = suboptimality(mdp, bc.policy).mean(), suboptimality(mdp, rnd.policy).mean()
    assert sub_bc < 0.01 < 0.1 < sub_rnd, (sub_bc, sub_rnd)  # measured 0.0029 vs 0.166
    with pytest.raises(ValueError, match="initial_policy must be one of 'behaviour'"):
        fit("vi-lcb", ds, initial_policy="expert")


def reference_bernstein_vi(ds, b: int, c_b: float, delta: float, form: str) -> np.ndarray:
    """Li et al.'s Algorithm 2 for seed b, written as loops over the raw samples (an independent
    oracle): Q_hat_h(s, a) = max{r_hat + P_hat V_hat_{h+1} - b_h, 0} with the penalty of Eq. (55)
    (``form="sum"``) or the former max form. Returns Q ``(H, S, A)``."""
    S, A, H = ds.S, ds.A, ds.horizon
    L = math.log(ds.states.shape[1] * H / delta)
    V = np.zeros((H + 1, S))
    Q = np.zeros((H, S, A))
    for h in range(H - 1, -1, -1):
        for s_ in range(S):
            for a in range(A):
                rows = (ds.stages[b] == h) & (ds.states[b] == s_) & (ds.actions[b] == a)
                n = int(rows.sum())
                if n == 0:
                    continue  # penalty H: Q = 0
                v = V[h + 1][ds.next_states[b][rows]]
                var = float(np.mean(v**2) - np.mean(v) ** 2)
                width = math.sqrt(c_b * L * max(var, 0.0) / n)
                if form == "sum":
                    pen = min(width + c_b * H * L / n, H)
                else:
                    pen = min(max(width, 2 * c_b * H * L / n), H)
                Q[h, s_, a] = max(ds.rewards[b][rows].mean() + v.mean() - pen, 0.0)
            V[h, s_] = Q[h, s_].max()
    return Q


@pytest.mark.parametrize("form", ["sum", "max"])
def test_bernstein_penalty_is_the_finite_horizon_form(form):
    """Issue 14 item 4: Li et al.'s finite-horizon penalty, Eq. (55), adds the variance term and
    c_b H L / n (the authors' code: min{H - h, c_b H / n + sqrt(c_b Var / n)}); the module used
    the discounted max{., 2 c_b H L / n} shape, now kept as bernstein_form="max". A small c_b
    keeps Q above 0 so that the two forms differ."""
    mdp = _finite_mdp()
    ds = make_dataset(mdp, 3000, coverage=0.5, other="uniform", seeds=2, seed=3)
    spec = "pessimistic-vi-bernstein:c_b=0.01" + ("" if form == "sum" else ",bernstein_form=max")
    res = fit(spec, ds)  # the sum form is the default
    for b in range(2):
        ref = reference_bernstein_vi(ds, b, 0.01, 0.1, form)
        np.testing.assert_allclose(res.Q[b], ref, rtol=0, atol=1e-9)
    if form == "sum":
        other = fit("pessimistic-vi-bernstein:c_b=0.01,bernstein_form=max", ds)
        assert np.abs(other.Q - res.Q).max() > 1e-3  # the two forms are different algorithms
        assert res.params["bernstein_form"] == "sum"


def test_naive_vi_estimate_is_optimistic_on_partial_coverage():
    """The contrast: naive VI's own estimate exceeds its policy's value on the tempting arms."""
    mdp = make("tempting-arms")
    ds = make_dataset(mdp, 30_000, coverage=tempting_arms_coverage(30_000), seeds=16)
    res = fit("naive-vi", ds)
    assert not pessimism_holds(res.value_estimate, policy_values(mdp, res.policy)).all()


# ------------------------------------------------------------------------------ infinite data
@pytest.mark.parametrize("name", [n for n in FINITE if n not in NOT_CONSISTENT])
def test_infinite_data_gives_an_optimal_policy_finite_horizon(name):
    mdp = _finite_mdp()
    cov = 1.0 if name == "behaviour-cloning" else 0.5  # BC imitates: give it expert data
    ds = population_dataset(mdp, coverage=cov, mass=1e16, seeds=2)
    res = fit(name, ds)
    gap = suboptimality(mdp, res.policy)
    assert np.all(np.abs(gap) < 1e-9), gap


@pytest.mark.parametrize("name", DISCOUNTED)
def test_infinite_data_gives_an_optimal_policy_discounted(name):
    mdp = _discounted_mdp()
    cov = 1.0 if name == "behaviour-cloning" else 0.5
    params = {"c_L": 0.5} if name == "vi-lcb" else {}
    ds = population_dataset(mdp, coverage=cov, mass=1e16, seeds=2)
    res = fit(name, ds, **params)
    gap = suboptimality(mdp, res.policy)
    assert np.all(np.abs(gap) < 1e-9), gap


def test_zero_penalty_reduces_to_naive_vi():
    """theory.md 10.1: with the penalty set to 0 the pessimistic planner is the plug-in planner."""
    mdp = _finite_mdp()
    ds = make_dataset(mdp, 3000, coverage=0.2, seeds=3)
    naive = fit("naive-vi", ds)
    zero = fit("pessimistic-vi-hoeffding", ds, c_h=0.0)
    np.testing.assert_array_equal(zero.Q, naive.Q)  # rewards >= 0: the clip at 0 never binds
    np.testing.assert_array_equal(zero.policy, naive.policy)
    pop = population_dataset(mdp, coverage=0.5, mass=1.0)
    exact = optimal_solution(mdp)
    reached = pop.data_distribution.sum(axis=-1) > 0  # (H, S): states the data visits
    V_hat = fit("naive-vi", pop).V[0, :-1]
    np.testing.assert_allclose(V_hat[reached], exact.V[:-1][reached], atol=1e-12)


# ------------------------------------------------------------------------------ one-hot PEVI
@hsettings(max_examples=12)
@given(
    seed=hst.integers(0, 10_000),
    N=hst.integers(4, 400),
    beta=hst.sampled_from([0.0, 0.3, 2.0]),
    lam=hst.sampled_from([1.0, 0.5]),
)
def test_one_hot_pevi_equals_tabular_pevi(seed, N, beta, lam):
    mdp = make(f"random:S=4,A=3,H=3,seed={seed % 50}")
    ds = make_dataset(mdp, N, coverage=0.5, seeds=3, seed=seed, kind="samples")
    lin = fit("pevi", ds, phi=one_hot_features(4, 3), beta=beta, lam=lam)
    tab = fit("pevi-tabular", ds, beta=beta, lam=lam)
    np.testing.assert_array_equal(lin.policy, tab.policy)
    np.testing.assert_allclose(lin.Q, tab.Q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(lin.value_estimate, tab.value_estimate, rtol=0, atol=1e-12)


def test_pevi_default_beta_uses_d_equal_to_S_times_A():
    mdp = _finite_mdp()
    ds = make_dataset(mdp, 400, coverage=0.5, seeds=2)
    lin = fit("pevi", ds)  # phi=None: explicit one-hot features
    tab = fit("pevi-tabular", ds)
    assert lin.params["beta"] == pytest.approx(tab.params["beta"])
    np.testing.assert_allclose(lin.Q, tab.Q, atol=1e-12)


# ------------------------------------------------------------------------------ batching
@pytest.mark.parametrize("name", [n for n in list_algorithms("offline") if n not in SIDE_INPUT])
def test_batched_seeds_equal_seeds_alone(name):
    if name in DISCOUNTED_ONLY:
        mdp, params = _discounted_mdp(), {"c_L": 0.5} if name == "vi-lcb" else {}
    elif name == "bisimulation-vi":
        mdp, params = make("history-pomdp:N=2,K=2,A=2,H=3"), {"observations": 4}
    elif name == "video-representation":
        mdp, params = make("exo-block"), {"n_latent": 4}
    elif name == "hip-abstraction-vi":
        mdp, params = make("hip-bmdp:M=2"), {"tasks": 2, "n_latent": 4}
    else:
        mdp, params = make("offline-linear:S=6,A=3,d=3,H=3,seed=1"), {}
    if name in ("pevi", "vw-pevi"):
        params["phi"] = mdp.phi
    if name == "density-model-vi":  # needs a low-rank MDP's density features
        mdp = make("lowrank-simplex:S=6,A=3,d=3,H=3,seed=1")
        params["mu"] = mdp.density_features
    ds = make_dataset(mdp, 3000, coverage=0.4, seeds=4, seed=9)
    batch = fit(name, ds, **params)
    for i in range(4):
        alone = fit(name, ds.only(i), **params)
        np.testing.assert_array_equal(alone.policy[0], batch.policy[i])
        np.testing.assert_array_equal(alone.value_estimate[0], batch.value_estimate[i])


# ------------------------------------------------------------------------------ specifics
def test_vi_lcb_iterations_and_folds():
    assert vi_lcb_iterations(1e4, 0.9) == int(np.floor(np.log(1e4) / 0.1))
    mdp = _discounted_mdp()
    ds = make_dataset(mdp, 5000, coverage=0.5, seeds=1)
    res = fit("vi-lcb", ds, c_L=0.5)
    T = res.info["T"]
    assert T == vi_lcb_iterations(5000, 0.8)
    assert res.info["fold_size"] == pytest.approx(5000 / (T + 1))
    assert res.policy.shape == (1, mdp.S)
    uni = fit("vi-lcb", ds, c_L=2000.0, initial_policy="uniform")
    np.testing.assert_allclose(uni.policy, 1.0 / mdp.A)  # nothing learned: uniform everywhere
    assert uni.value_estimate[0] == 0.0


def test_two_fold_subsampling_keeps_at_most_the_main_half():
    mdp = make("random:S=3,A=2,H=3,seed=0")
    ds = make_dataset(mdp, 30_000, coverage=0.5, seeds=2)
    from theorylab.algorithms.offline.pessimistic_vi import two_fold_subsample

    sub = two_fold_subsample(ds, delta=0.1)
    w = sub.weights
    assert set(np.unique(w)) <= {0.0, 1.0}
    assert w[:, ds.N // 2 + ds.horizon :].sum() == 0  # the auxiliary half is never used
    assert 0 < w.sum() < ds.N  # trimmed
    res = fit("pessimistic-vi-bernstein", ds, subsample=True)
    assert pessimism_holds(res.value_estimate, policy_values(mdp, res.policy)).all()


def test_setting_mismatch_raises():
    fh = make_dataset(_finite_mdp(), 100, coverage=0.5)
    disc = make_dataset(_discounted_mdp(), 100, coverage=0.5)
    with pytest.raises(InvalidDatasetError):
        fit("vi-lcb", fh)
    for name in PESSIMISTIC_FINITE:
        with pytest.raises(InvalidDatasetError):
            fit(name, disc)


def test_partial_coverage_naive_fails_pessimism_succeeds():
    """The tempting-arms story in one N: naive VI picks a tempting arm on (almost) every seed,
    pessimism never does."""
    N = 30_000
    w = tempting_arms_coverage(N)
    naive = run("naive-vi", "tempting-arms", dataset_size=N, coverage=w, seeds=32)
    lcb = run("pessimistic-vi-hoeffding", "tempting-arms", dataset_size=N, coverage=w, seeds=32)
    delta = 2 * (0.6 - 0.3)
    assert np.mean(naive.suboptimality) > 0.8 * delta
    assert lcb.suboptimality.max() < 1e-12
    assert lcb.coverage["C_star"] < 1.02  # near-expert data


def test_run_offline_is_a_deprecated_alias_of_run():
    """The former entry point still returns its dict (same keys) and warns; its numbers are
    tl.run's."""
    with pytest.warns(DeprecationWarning, match="tl.run|theorylab.run"):
        out = run_offline("pevi-tabular:c_beta=0.05", "random:S=4,A=2,H=3", 600, 0.5, seeds=3)
    for key in ("suboptimality", "value_estimate", "policy_value", "pessimism_holds"):
        assert len(out[key]) == 3
    assert out["N"] == 600 and out["C_star"] >= 1.0 and out["pevi_coverage"]
    res = run(
        "pevi-tabular:c_beta=0.05", "random:S=4,A=2,H=3", dataset_size=600, coverage=0.5, seeds=3
    )
    assert out["suboptimality"] == res.suboptimality[:, 0].tolist()


def test_vw_pevi_is_linpevi_adv_plus_weighted_ridge_with_lambda_one_over_h2():
    """Issue 14 item 5: vw-pevi follows Xiong et al.'s LinPEVI-ADV+ ([S]: lambda = 1/H^2, beta =
    O(sqrt(d))); it used PEVI's lambda = 1. The last stage's Q is checked against a weighted ridge
    regression written directly on the raw samples of the main half."""
    from theorylab.algorithms.offline.vw_pevi import split_halves

    mdp = make("offline-linear")
    ds = make_dataset(mdp, 2000, coverage=0.5, other="uniform", seeds=2, seed=4)
    res = fit("vw-pevi", ds, phi=mdp.phi)
    H = ds.horizon
    assert res.params["lam"] == pytest.approx(1.0 / H**2)
    _, main = split_halves(ds)
    phi = np.asarray(mdp.phi)  # (S, A, d)
    d = phi.shape[-1]
    h = H - 1  # V_hat_H = 0: the target is the reward alone
    for b in range(2):
        rows = main.stages[b] == h
        X = phi[main.states[b][rows], main.actions[b][rows]]  # (n, d)
        wts = 1.0 / res.info["sigma2"][b, h][main.states[b][rows], main.actions[b][rows]]
        gram = (X.T * wts) @ X + np.eye(d) / H**2
        w = np.linalg.solve(gram, (X.T * wts) @ main.rewards[b][rows])
        width = np.sqrt(np.einsum("sad,de,sae->sa", phi, np.linalg.inv(gram), phi))
        q = np.clip(phi @ w - res.params["beta"] * width, 0.0, 1.0)
        np.testing.assert_allclose(res.Q[b, h], q, rtol=0, atol=1e-9)
    old = fit("vw-pevi", ds, phi=mdp.phi, lam=1.0)  # the former default
    assert np.abs(old.Q - res.Q).max() > 1e-6
