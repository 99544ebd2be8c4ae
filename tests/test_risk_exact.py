"""Exact risk-sensitive core: CVaR, return distributions, static and iterated CVaR planning.

Every test here can fail: planners are checked against independent oracles (path enumeration,
risk-neutral backward induction, Monte-Carlo rollouts with a DKW band) and against values worked
out by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from theorylab.algorithms.planning import backward_induction, evaluate_policies
from theorylab.algorithms.risk import (
    AugmentedPolicy,
    RewardGridError,
    TooManyPoliciesError,
    brute_force_mean,
    brute_force_static_cvar,
    brute_force_worst_path,
    budget_rollout,
    cvar,
    cvar_objective,
    evaluate_iterated_cvar,
    iterated_cvar_planning,
    iterated_cvar_values,
    mean,
    return_distribution,
    reward_lattice,
    static_cvar_planning,
    var,
    worst_case,
)
from theorylab.mdps import TabularMDP, make

ATOL = 1e-12
FAST = settings(max_examples=60, deadline=None)
SLOWER = settings(max_examples=25, deadline=None)


# --------------------------------------------------------------------------- strategies / helpers
@st.composite
def distributions(draw, max_atoms: int = 8):
    n = draw(st.integers(1, max_atoms))
    values = draw(st.lists(st.integers(-20, 20), min_size=n, max_size=n))
    weights = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    assume(sum(weights) > 0)
    p = np.array(weights, float)
    return np.array(values, float) / 4, p / p.sum()


taus = st.sampled_from([0.05, 0.1, 0.2, 0.25, 0.3, 0.5, 0.7, 0.9, 1.0])


def random_mdp(
    rng, S, A, H, *, model="deterministic", grid=4, stage=False, sparse=False, zeros=True
):
    shape = (H, S, A, S) if stage else (S, A, S)
    W = rng.integers(0 if zeros else 1, 4, size=shape).astype(float)
    W[W.sum(-1) == 0, 0] = 1.0
    P = W / W.sum(-1, keepdims=True)
    R = rng.integers(0, grid + 1, size=(H, S, A) if stage else (S, A)) / grid
    mu0 = rng.integers(0, 3, size=S).astype(float)
    mu0[0] += 1
    mdp = TabularMDP(P, R, mu0 / mu0.sum(), horizon=H, reward_model=model)
    return mdp.to_sparse() if sparse else mdp


@st.composite
def tiny_mdps(draw):
    """Tiny MDPs whose history-dependent policy class can be enumerated."""
    model = draw(st.sampled_from(["deterministic", "bernoulli"]))
    sizes = [(1, 2, 3), (2, 2, 2), (2, 2, 3), (2, 3, 2), (3, 2, 2)]
    if model == "bernoulli":
        sizes = [(1, 2, 2), (1, 2, 3), (2, 2, 2)]
    S, A, H = draw(st.sampled_from(sizes))
    seed = draw(st.integers(0, 2**32 - 1))
    grid = draw(st.sampled_from([1, 2, 4]))
    return random_mdp(np.random.default_rng(seed), S, A, H, model=model, grid=grid)


@st.composite
def small_mdps(draw):
    model = draw(st.sampled_from(["deterministic", "bernoulli"]))
    S, A, H = draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    stage, sparse = draw(st.booleans()), draw(st.booleans())
    return random_mdp(np.random.default_rng(seed), S, A, H, model=model, stage=stage, sparse=sparse)


# --------------------------------------------------------------------------- CVaR of a distribution
@FAST
@given(distributions())
def test_cvar_at_tau_one_is_the_mean(dist):
    v, p = dist
    assert cvar(v, p, 1.0) == pytest.approx(float(v @ p), abs=ATOL)


@FAST
@given(distributions(), taus, taus)
def test_cvar_is_monotone_in_tau_and_never_above_the_mean(dist, t1, t2):
    v, p = dist
    lo, hi = sorted((t1, t2))
    assert cvar(v, p, lo) <= cvar(v, p, hi) + ATOL
    assert cvar(v, p, hi) <= mean(v, p) + ATOL
    assert cvar(v, p, lo) >= worst_case(v, p) - ATOL


@FAST
@given(distributions(), taus)
def test_cvar_equals_the_sup_over_b(dist, tau):
    v, p = dist
    c = cvar(v, p, tau)
    # the sup of the concave piecewise-linear f(b) is attained at an atom ...
    at_atoms = cvar_objective(v, p, v, tau)
    assert c == pytest.approx(float(np.max(at_atoms)), abs=1e-10)
    # ... namely at VaR_tau, and no b on a fine grid beats it
    assert cvar_objective(v, p, var(v, p, tau), tau) == pytest.approx(c, abs=1e-10)
    grid = np.linspace(v.min() - 1, v.max() + 1, 2001)
    assert np.all(cvar_objective(v, p, grid, tau) <= c + 1e-10)


def test_cvar_by_hand():
    # X = 0 w.p. 0.2, 1 w.p. 0.8: CVaR_0.25 = (0.2 * 0 + 0.05 * 1) / 0.25 = 0.2, VaR_0.25 = 1.
    v, p = np.array([1.0, 0.0]), np.array([0.8, 0.2])
    assert cvar(v, p, 0.25) == pytest.approx(0.2, abs=ATOL)
    assert var(v, p, 0.25) == 1.0 and var(v, p, 0.2) == 0.0
    assert cvar(v, p, 0.1) == 0.0 and worst_case(v, p) == 0.0
    # batched over a leading axis
    vb = np.stack([v, v + 1])
    np.testing.assert_allclose(cvar(vb, p, 0.25), [0.2, 1.2], atol=ATOL)


def test_cvar_rejects_invalid_input():
    with pytest.raises(ValueError, match="tau"):
        cvar([0.0, 1.0], [0.5, 0.5], 0.0)
    with pytest.raises(ValueError, match="sum to"):
        cvar([0.0, 1.0], [0.5, 0.6], 0.5)
    with pytest.raises(ValueError, match="non-negative"):
        cvar([0.0, 1.0], [1.5, -0.5], 0.5)


# --------------------------------------------------------------------------- reward lattice
def test_reward_lattice_grid_inference_and_errors():
    mdp = make("icvar-lower-bound")  # rewards 0, 0.2, 0.8, 1
    lat = reward_lattice(mdp)
    assert lat.eta == pytest.approx(0.2) and lat.exact and lat.K == 1
    assert lat.max_index == 5 * mdp.horizon
    bern = make("cvar-safe-risky", reward_model="bernoulli")
    assert reward_lattice(bern).eta == 1.0 and reward_lattice(bern).K == 2
    with pytest.raises(RewardGridError):
        reward_lattice(bern, eta=0.3)
    odd = TabularMDP(np.ones((1, 1, 1)), [[1 / math.pi]], horizon=2)
    with pytest.raises(RewardGridError, match="eta"):
        reward_lattice(odd)
    coarse = reward_lattice(odd, eta=0.25)  # 1/pi = 0.318 rounds up to 0.5
    assert coarse.rounding_error == pytest.approx(2 * (0.5 - 1 / math.pi))


# --------------------------------------------------------------------------- return distribution
@SLOWER
@given(small_mdps(), st.integers(0, 2**32 - 1), st.booleans())
def test_return_distribution_mean_equals_evaluate_policies(mdp, seed, stochastic):
    rng = np.random.default_rng(seed)
    H, S, A = mdp.horizon, mdp.S, mdp.A
    if stochastic:
        pol = rng.dirichlet(np.ones(A), size=(2, H, S))
    else:
        pol = rng.integers(0, A, size=(2, H, S))
    dist = return_distribution(mdp, pol)
    assert dist.probs.shape == (2, reward_lattice(mdp).n_levels)
    np.testing.assert_allclose(dist.probs.sum(1), 1.0, atol=1e-12)
    exact = evaluate_policies(mdp, pol, batched=True)[:, 0] @ mdp.mu0
    np.testing.assert_allclose(dist.mean(), exact, atol=1e-12)


@pytest.mark.parametrize("model", ["deterministic", "bernoulli"])
def test_return_distribution_matches_monte_carlo(model):
    """Dvoretzky-Kiefer-Wolfowitz: sup_x |F_N(x) - F(x)| <= eps w.p. >= 1 - 2 exp(-2 N eps^2)."""
    mdp = random_mdp(np.random.default_rng(7), 3, 2, 4, model=model)
    N, fail = 20_000, 1e-6
    eps = math.sqrt(math.log(2 / fail) / (2 * N))
    lat = reward_lattice(mdp)
    markov = np.random.default_rng(3).integers(0, 2, size=(4, 3))
    aug = static_cvar_planning(mdp, 0.3).policy
    batch = AugmentedPolicy(
        np.broadcast_to(aug.actions, (N, *aug.actions.shape)),
        np.full(N, int(aug.initial_budget)),
        aug.lattice,
    )
    for pol, traj in (
        (markov, mdp.rollout(markov, n_seeds=N, rng=11)),
        (aug, budget_rollout(mdp, batch, 12)),
    ):
        F = np.cumsum(return_distribution(mdp, pol).probs)
        idx = np.rint(traj.returns() / lat.eta).astype(int)
        F_hat = np.cumsum(np.bincount(idx, minlength=lat.n_levels)) / N
        assert np.max(np.abs(F_hat - F)) <= eps


def test_budget_rollout_of_a_budget_free_policy_equals_markov_rollout():
    mdp = random_mdp(np.random.default_rng(5), 3, 2, 4, model="bernoulli")
    lat = reward_lattice(mdp)
    markov = np.random.default_rng(1).integers(0, 2, size=(6, 4, 3))  # (B, H, S)
    acts = np.repeat(markov[..., None], lat.n_levels, axis=-1)
    aug = AugmentedPolicy(acts, np.full(6, lat.max_index), lat)
    a, b = mdp.rollout(markov, rng=99), budget_rollout(mdp, aug, 99)
    for name in ("states", "actions", "rewards", "next_states"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    spent = np.rint(np.cumsum(b.rewards, axis=1) / lat.eta).astype(int)
    np.testing.assert_array_equal(b.budgets[:, 1:], np.maximum(lat.max_index - spent, 0))


# --------------------------------------------------------------------------- static CVaR planning
@SLOWER
@given(tiny_mdps(), taus)
def test_augmented_planning_equals_brute_force(mdp, tau):
    sol = static_cvar_planning(mdp, tau)
    try:  # (h, s, return so far) can outnumber observation histories: rewards depend on actions
        history = brute_force_static_cvar(mdp, tau, policy_class="history")
        augmented = brute_force_static_cvar(mdp, tau, policy_class="augmented")
    except TooManyPoliciesError:
        assume(False)
    markov = brute_force_static_cvar(mdp, tau, policy_class="markov")
    assert sol.value == pytest.approx(history.value, abs=1e-9)
    assert sol.value == pytest.approx(augmented.value, abs=1e-9)
    assert markov.value <= sol.value + 1e-9
    # the planned augmented policy attains the value exactly, at the budget b* = VaR_tau
    dist = return_distribution(mdp, sol.policy)
    assert dist.cvar(tau) == pytest.approx(sol.value, abs=1e-9)
    assert sol.objective.max() == pytest.approx(sol.value, abs=ATOL)


@SLOWER
@given(small_mdps())
def test_static_cvar_at_tau_one_is_the_risk_neutral_optimum(mdp):
    assert static_cvar_planning(mdp, 1.0).value == pytest.approx(
        backward_induction(mdp).value, abs=1e-10
    )


def test_history_dependence_strictly_helps():
    """CVaR_0.5 of: a fair coin pays 1 or 0 (same next state), then SAFE pays 1 for sure or RISKY
    pays 2 w.p. 0.6 / 0 w.p. 0.4 (H = 4, Bernoulli rewards).

    Markov (one choice at s1): all SAFE gives Z in {1, 2} (1/2 each): CVaR_0.5 = 1;
    all RISKY gives {0: .2, 1: .2, 2: .3, 3: .3}: CVaR_0.5 = (0 * .2 + 1 * .2 + 2 * .1) / .5 = 0.8.
    Budget-dependent (RISKY after the coin paid 0, SAFE after it paid 1): {0: .2, 2: .8},
    CVaR_0.5 = (0 * .2 + 2 * .3) / .5 = 1.2 = CVaR*_0.5, with b* = VaR_0.5 = 2.
    """
    s0, s1, safe1, good, bad, z = range(6)
    P, R = np.zeros((6, 2, 6)), np.zeros((6, 2))
    P[s0, :, s1], R[s0, :] = 1, 0.5
    P[s1, 0, good], P[s1, 0, bad], P[s1, 1, safe1] = 0.6, 0.4, 1
    P[safe1, :, z], R[safe1, :] = 1, 1.0
    P[good, :, good], R[good, :] = 1, 1.0
    P[bad, :, bad] = P[z, :, z] = 1
    mdp = TabularMDP(P, R, horizon=4, reward_model="bernoulli")
    sol = static_cvar_planning(mdp, 0.5)
    assert sol.value == pytest.approx(1.2, abs=ATOL) and sol.budget == 2.0
    assert brute_force_static_cvar(mdp, 0.5, policy_class="history").value == pytest.approx(1.2)
    assert brute_force_static_cvar(mdp, 0.5, policy_class="markov").value == pytest.approx(1.0)
    assert sol.policy.actions[1, s1, 2] == 0 and sol.policy.actions[1, s1, 1] == 1


def test_cvar_optimal_policy_differs_from_risk_neutral_on_safe_risky():
    """cvar-safe-risky (p_bad = 0.2, safe_reward = 0.5, H = 3: two paying steps, m = 2).

    RISKY: Z = 2 w.p. 0.8, 0 w.p. 0.2 -> E = 1.6, CVaR_0.25 = (0.2 * 0 + 0.05 * 2) / 0.25 = 0.4.
    SAFE:  Z = 1 for sure           -> E = 1.0, CVaR_0.25 = 1.0.
    So V* = 1.6 (RISKY) but CVaR*_0.25 = 1.0 (SAFE), b* = 1.0.
    """
    mdp = make("cvar-safe-risky:H=3")
    neutral = backward_induction(mdp)
    sol = static_cvar_planning(mdp, 0.25)
    assert neutral.value == pytest.approx(1.6, abs=ATOL) and neutral.policy[0, 0] == 0  # RISKY
    assert sol.value == pytest.approx(1.0, abs=ATOL) and sol.budget == pytest.approx(1.0)
    j1 = int(sol.policy.initial_budget)
    assert sol.policy.actions[0, 0, j1] == 1  # SAFE
    risky = return_distribution(mdp, neutral.policy)
    assert risky.cvar(0.25) == pytest.approx(0.4, abs=ATOL)
    assert risky.mean() == pytest.approx(1.6, abs=ATOL)
    assert brute_force_mean(mdp).value == pytest.approx(1.6, abs=ATOL)


def test_coarse_lattice_error_bound():
    """Rewards on the 0.1 grid, planning on eta = 0.25: CVaR* <= value <= CVaR* + Delta and the
    planned policy, run with its rounded budget, is Delta-optimal (see static_cvar_planning)."""
    rng = np.random.default_rng(3)
    for trial in range(6):
        mdp = random_mdp(rng, 3, 2, 3, grid=10)
        tau = [0.2, 0.5][trial % 2]
        exact = static_cvar_planning(mdp, tau)
        coarse = static_cvar_planning(mdp, tau, eta=0.25)
        delta = coarse.discretisation_error
        assert 0.0 <= delta < mdp.horizon * 0.25
        assert exact.value - 1e-12 <= coarse.value <= exact.value + delta + 1e-12
        true = return_distribution(mdp, coarse.policy).cvar(tau)  # two-lattice evaluation
        assert exact.value - delta - 1e-12 <= true <= exact.value + 1e-12


# --------------------------------------------------------------------------- iterated CVaR
@SLOWER
@given(small_mdps())
def test_iterated_cvar_at_alpha_one_is_risk_neutral(mdp):
    sol, neutral = iterated_cvar_planning(mdp, 1.0), backward_induction(mdp)
    np.testing.assert_allclose(sol.V, neutral.V, atol=1e-12)
    pols = np.random.default_rng(0).integers(0, mdp.A, size=(3, mdp.horizon, mdp.S))
    np.testing.assert_allclose(
        evaluate_iterated_cvar(mdp, pols, 1.0),
        evaluate_policies(mdp, pols, batched=True),
        atol=1e-12,
    )


@SLOWER
@given(small_mdps(), st.sampled_from([0.0, 0.1, 0.3, 0.7]))
def test_iterated_cvar_optimum_dominates_and_is_attained(mdp, alpha):
    sol = iterated_cvar_planning(mdp, alpha)
    np.testing.assert_allclose(evaluate_iterated_cvar(mdp, sol.policy, alpha), sol.V, atol=1e-12)
    pols = np.random.default_rng(1).integers(0, mdp.A, size=(4, mdp.horizon, mdp.S))
    V = evaluate_iterated_cvar(mdp, pols, alpha)
    assert np.all(V <= sol.V[None] + 1e-12)
    # nested CVaR is monotone in alpha and sandwiched by the worst path and the mean
    worst = iterated_cvar_planning(mdp, 0.0).V
    assert np.all(worst <= sol.V + 1e-12)
    assert np.all(sol.V <= backward_induction(mdp).V + 1e-12)


@SLOWER
@given(tiny_mdps())
def test_worst_path_equals_brute_force(mdp):
    assume(mdp.reward_model == "deterministic")
    sol = iterated_cvar_planning(mdp, 0.0)
    for s in np.flatnonzero(mdp.mu0 > 0):  # Du et al. start from a fixed s_1: compare per start
        start = TabularMDP(mdp.P, mdp.R, np.eye(mdp.S)[s], horizon=mdp.horizon)
        assert sol.V[0, s] == pytest.approx(brute_force_worst_path(start).value, abs=1e-12)
    # CVaR_alpha of a finite distribution equals its min once alpha is below every atom's mass
    p_min = mdp.dense_P()[mdp.dense_P() > 0].min()
    tiny = iterated_cvar_planning(mdp, 0.5 * p_min)
    np.testing.assert_allclose(tiny.V, sol.V, atol=1e-12)


def test_iterated_values_by_hand_on_safe_risky():
    """Iterated CVaR^alpha on cvar-safe-risky (p_bad = 0.2, H = 3, m = 2 paying steps).

    Only the first transition is random: V(RISKY) = CVaR_alpha({2: 0.8, 0: 0.2}),
    = 0 for alpha <= 0.2 and 2 (alpha - 0.2) / alpha above; V(SAFE) = 1.
    """
    mdp = make("cvar-safe-risky:H=3")
    risky, safe = np.zeros((3, 4), np.int64), np.ones((3, 4), np.int64)
    for alpha, v_risky in ((0.1, 0.0), (0.25, 0.4), (0.5, 1.2), (1.0, 1.6)):
        vals = iterated_cvar_values(mdp, np.stack([risky, safe]), alpha)
        np.testing.assert_allclose(vals, [v_risky, 1.0], atol=ATOL)
        assert iterated_cvar_planning(mdp, alpha).value == pytest.approx(max(v_risky, 1.0))


# --------------------------------------------------------------------------- families
@pytest.mark.parametrize("n,alpha,eta,A,H", [(2, 0.25, 0.1, 2, 6), (4, 0.2, 0.05, 3, 12)])
def test_icvar_lower_bound_instance(n, alpha, eta, A, H):
    """At the bandit state s_n (0-based stage h, m = H - h - 1 steps left) the optimal action's
    iterated CVaR^alpha is m (0.2 + 0.6 eta / alpha), every other action's is 0.2 m (Du et al.)."""
    mdp = make(f"icvar-lower-bound:n={n},alpha={alpha},eta={eta},A={A},H={H}")
    assert (mdp.S, mdp.A, mdp.horizon) == (n + 3, A, H)
    sol = iterated_cvar_planning(mdp, alpha)
    s_n, a_star = n - 1, A - 1
    for h in range(H):
        m = H - h - 1
        assert sol.Q[h, s_n, a_star] == pytest.approx(m * (0.2 + 0.6 * eta / alpha), abs=1e-12)
        others = np.delete(sol.Q[h, s_n], a_star)
        np.testing.assert_allclose(others, 0.2 * m, atol=1e-12)
        if m > 0:
            assert sol.policy[h, s_n] == a_star
    # the absorbing states pay 1, 0.8 and 0.2 per remaining step
    np.testing.assert_allclose(sol.V[0, n:], [H, 0.8 * H, 0.2 * H], atol=1e-12)


def test_family_parameter_validation():
    from theorylab.errors import InvalidMDPError

    with pytest.raises(InvalidMDPError, match="alpha"):
        make("icvar-lower-bound:alpha=0.5")
    with pytest.raises(InvalidMDPError, match="eta"):
        make("icvar-lower-bound:alpha=0.1,eta=0.2")
    with pytest.raises(InvalidMDPError, match="n >= 2"):
        make("icvar-lower-bound:n=1")
    with pytest.raises(InvalidMDPError, match="H >= 2"):
        make("cvar-safe-risky:H=1")
