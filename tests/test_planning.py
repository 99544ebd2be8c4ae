"""Property tests of exact planning: backward induction, exact policy evaluation, VI and PI.

Oracles are independent of the code under test: a dense reference recursion written with einsum
on ``mdp.dense_P()`` (stage by stage), brute-force enumeration of every deterministic Markov policy
on tiny MDPs, the Neumann series for discounted evaluation, and Monte-Carlo rollouts with a
Hoeffding confidence interval.

Tolerances (stated once, used everywhere):

* ``ROUNDOFF = 1e-12``: two computations of the same finite-horizon quantity that sum in a
  different order (BLAS gemv vs gemm vs CSR products vs einsum) differ by at most a few ulp per
  stage; values are <= H <= 4 and S <= 4, so 1e-12 is ~1000x the expected worst case and far below
  any modelling error (a wrong stage, action or transition changes values by >= 1/8 * 1e-3 here).
* discounted round-off: ``64 * eps * (1 + ||V||) / (1 - gamma)`` with ``||V|| <= 1 / (1 - gamma)``,
  the conditioning of ``I - gamma P_pi`` times the scale of V.
* Monte Carlo: Hoeffding for returns in [0, H] with failure probability ``DELTA_MC = 1e-6`` per
  comparison (union bound: a full run of this file has < 1e-4 chance of a false alarm).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import (
    all_forms,
    deterministic_policies,
    discounted_mdps,
    finite_horizon_mdps,
    policies,
    stochastic_policies,
)

from theorylab.algorithms.planning import (
    backward_induction,
    evaluate_discounted,
    evaluate_policies,
    policy_iteration,
    policy_values,
    solve,
    value_iteration,
)
from theorylab.algorithms.planning.greedy import TIE_RTOL
from theorylab.errors import InvalidPolicyError
from theorylab.mdps import TabularMDP, make

ROUNDOFF = 1e-12
EPS = np.finfo(np.float64).eps
DELTA_MC = 1e-6


def discounted_roundoff(gamma: float) -> float:
    """Round-off allowance for discounted values (see the module docstring)."""
    return 64 * EPS * (1 + 1 / (1 - gamma)) / (1 - gamma)


# ------------------------------------------------------------------------------- dense oracles
def stage_arrays(mdp: TabularMDP) -> tuple[np.ndarray, np.ndarray]:
    """``P (H, S, A, S)`` and ``R (H, S, A)`` for every stage, dense, from the model's arrays."""
    H = mdp.horizon
    P = mdp.dense_P()
    P = P if mdp.stage_dependent else np.broadcast_to(P, (H, *P.shape))
    R = mdp.R if mdp.reward_stage_dependent else np.broadcast_to(mdp.R, (H, *mdp.R.shape))
    return np.asarray(P), np.asarray(R)


def one_hot(policy: np.ndarray, A: int) -> np.ndarray:
    """Deterministic ``(..., S)`` ints -> stochastic ``(..., S, A)``."""
    return np.eye(A)[policy]


def reference_optimal(mdp: TabularMDP) -> tuple[np.ndarray, np.ndarray]:
    """``V* (H+1, S)`` and ``Q* (H, S, A)`` by the textbook recursion on dense arrays."""
    P, R = stage_arrays(mdp)
    H, S = mdp.horizon, mdp.S
    V = np.zeros((H + 1, S))
    Q = np.zeros((H, S, mdp.A))
    for h in reversed(range(H)):
        Q[h] = R[h] + np.einsum("sat,t->sa", P[h], V[h + 1])
        V[h] = Q[h].max(axis=1)
    return V, Q


def reference_evaluation(mdp: TabularMDP, pi: np.ndarray) -> np.ndarray:
    """``V^pi (B, H+1, S)`` of stochastic policies ``pi (B, H, S, A)`` on dense arrays."""
    P, R = stage_arrays(mdp)
    B, H, S = pi.shape[0], mdp.horizon, mdp.S
    V = np.zeros((B, H + 1, S))
    for h in reversed(range(H)):
        Q = R[h][None] + np.einsum("sat,bt->bsa", P[h], V[:, h + 1])
        V[:, h] = np.einsum("bsa,bsa->bs", pi[:, h], Q)
    return V


def as_stochastic(pol: np.ndarray, A: int) -> np.ndarray:
    return one_hot(pol, A) if np.issubdtype(pol.dtype, np.integer) else pol


# ------------------------------------------------------------------------------- backward induction
@settings(max_examples=60)
@given(finite_horizon_mdps(form=None, stage_dependent=None))
def test_backward_induction_satisfies_bellman_optimality(mdp):
    sol = backward_induction(mdp)
    H, S, A = mdp.horizon, mdp.S, mdp.A
    assert sol.V.shape == (H + 1, S) and sol.Q.shape == (H, S, A) and sol.policy.shape == (H, S)
    assert np.all(sol.V[H] == 0.0)
    P, R = stage_arrays(mdp)
    for h in range(H):
        # Q_h = r_h + P_h V_{h+1}, computed from the returned V, and V_h = max_a Q_h
        backup = R[h] + np.einsum("sat,t->sa", P[h], sol.V[h + 1])
        np.testing.assert_allclose(sol.Q[h], backup, rtol=0, atol=ROUNDOFF)
        np.testing.assert_array_equal(sol.V[h], sol.Q[h].max(axis=1))
    # the policy attains the max up to round-off (TIE_RTOL), and ties go to the smallest such
    # action (documented rule in algorithms/planning/greedy.py)
    chosen = np.take_along_axis(sol.Q, sol.policy[..., None], axis=2)[..., 0]
    V = sol.V[:H]
    assert np.all(chosen >= V - TIE_RTOL * (1 + np.abs(V)))
    near_max = sol.Q >= (V - TIE_RTOL * (1 + np.abs(V)))[..., None]
    np.testing.assert_array_equal(sol.policy, np.argmax(near_max, axis=2))
    assert sol.value == pytest.approx(float(sol.V[0] @ mdp.mu0), abs=0)
    V_ref, _ = reference_optimal(mdp)
    np.testing.assert_allclose(sol.V, V_ref, rtol=0, atol=ROUNDOFF)


@st.composite
def tiny_mdps(draw, max_policies: int = 729):
    """MDPs small enough to enumerate all A^(S*H) deterministic Markov policies."""
    mdp = draw(finite_horizon_mdps(S=(1, 3), A=(1, 3), H=(1, 3), form=None, stage_dependent=None))
    if mdp.A ** (mdp.S * mdp.horizon) > max_policies:  # shrink H until enumerable
        H = max(1, int(np.log(max_policies) / np.log(mdp.A) // mdp.S))
        P = mdp.dense_P()[:H] if mdp.stage_dependent else mdp.P
        R = mdp.R[:H] if mdp.reward_stage_dependent else mdp.R
        mdp = TabularMDP(P, R, mdp.mu0, horizon=H)
    return mdp


def all_deterministic_policies(S: int, A: int, H: int) -> np.ndarray:
    """Every deterministic Markov policy, ``(A^(S*H), H, S)``."""
    return np.array(list(itertools.product(range(A), repeat=S * H)), np.int64).reshape(-1, H, S)


@settings(max_examples=40)
@given(tiny_mdps())
def test_backward_induction_equals_brute_force_over_all_deterministic_policies(mdp):
    H, S, A = mdp.horizon, mdp.S, mdp.A
    pols = all_deterministic_policies(S, A, H)
    assert pols.shape[0] == A ** (S * H) <= 729
    V_all = reference_evaluation(mdp, one_hot(pols, A))  # (B, H+1, S), independent oracle
    sol = backward_induction(mdp)
    # one Markov policy is optimal in every state simultaneously: V*_0(s) = max_pi V^pi_0(s)
    np.testing.assert_allclose(sol.V[0], V_all[:, 0].max(axis=0), rtol=0, atol=ROUNDOFF)
    assert sol.value == pytest.approx(float((V_all[:, 0] @ mdp.mu0).max()), abs=ROUNDOFF)
    # and backward induction's own policy is among them and attains the optimum everywhere
    idx = np.flatnonzero((pols == sol.policy).all(axis=(1, 2)))
    assert idx.size == 1
    np.testing.assert_allclose(V_all[idx[0]], sol.V, rtol=0, atol=ROUNDOFF)


@settings(max_examples=40)
@given(tiny_mdps(), st.sampled_from([0.0, 0.05, 0.3, 1.0]))
def test_epsilon_soft_planning_equals_brute_force_over_all_deterministic_parts(mdp, eps):
    from theorylab.algorithms.planning.epsilon_soft import epsilon_soft_planning

    H, S, A = mdp.horizon, mdp.S, mdp.A
    pols = all_deterministic_policies(S, A, H)
    soft = (1 - eps) * one_hot(pols, A) + eps / A  # every epsilon-soft Markov policy
    V_all = reference_evaluation(mdp, soft)  # (B, H+1, S), independent oracle
    sol = epsilon_soft_planning(mdp, eps)
    np.testing.assert_allclose(sol.V[0], V_all[:, 0].max(axis=0), rtol=0, atol=ROUNDOFF)
    assert sol.value == pytest.approx(float((V_all[:, 0] @ mdp.mu0).max()), abs=ROUNDOFF)
    # the returned stochastic policy attains it, and eps = 0 is backward induction
    V_played = reference_evaluation(mdp, sol.info["stochastic_policy"][None])[0]
    np.testing.assert_allclose(V_played, sol.V, rtol=0, atol=ROUNDOFF)
    if eps == 0.0:
        np.testing.assert_allclose(sol.V, backward_induction(mdp).V, rtol=0, atol=ROUNDOFF)


def test_epsilon_soft_planning_rejects_bad_input():
    from theorylab.algorithms.planning.epsilon_soft import epsilon_soft_planning

    with pytest.raises(ValueError, match="epsilon must lie in \\[0, 1\\], got 1.5"):
        epsilon_soft_planning(make("riverswim:S=3,H=3"), 1.5)
    discounted = TabularMDP(np.full((2, 2, 2), 0.5), np.zeros((2, 2)), np.ones(2) / 2, gamma=0.9)
    with pytest.raises(ValueError, match="has no finite horizon"):
        epsilon_soft_planning(discounted, 0.1)


def test_riverswim_hand_computed_value():
    # S=2, H=2 from state 0: left pays 5/1000 twice (0.01); right pays 0 then
    # 0.4 * V_1(0) + 0.6 * V_1(1) = 0.4 * 0.005 + 0.6 * 1 = 0.602.
    sol = backward_induction(make("riverswim:S=2,H=2"))
    assert sol.value == pytest.approx(0.602, abs=1e-15)
    np.testing.assert_array_equal(sol.policy[0], [1, 1])


# ------------------------------------------------------------------------------- exact evaluation
@settings(max_examples=50)
@given(finite_horizon_mdps(form=None, stage_dependent=None), st.data())
def test_evaluate_policies_matches_reference_recursion(mdp, data):
    H, S, A = mdp.horizon, mdp.S, mdp.A
    pol = data.draw(policies(S, A, H), label="policy")  # (H, S) int or (H, S, A)
    V = evaluate_policies(mdp, pol)
    assert V.shape == (H + 1, S)
    V_ref = reference_evaluation(mdp, as_stochastic(pol, A)[None])[0]
    np.testing.assert_allclose(V, V_ref, rtol=0, atol=ROUNDOFF)
    assert float(policy_values(mdp, pol, batched=False)) == pytest.approx(
        float(V_ref[0] @ mdp.mu0), abs=ROUNDOFF
    )
    # a deterministic policy and its one-hot stochastic form have the same value
    np.testing.assert_allclose(
        evaluate_policies(mdp, as_stochastic(pol, A)), V, rtol=0, atol=ROUNDOFF
    )


@settings(max_examples=40)
@given(finite_horizon_mdps(form=None, stage_dependent=None), st.integers(1, 6), st.data())
def test_batched_evaluation_equals_one_at_a_time(mdp, B, data):
    H, S, A = mdp.horizon, mdp.S, mdp.A
    for strat in (deterministic_policies(S, A, H, B), stochastic_policies(S, A, H, B)):
        pols = data.draw(strat)  # (B, H, S) or (B, H, S, A)
        V = evaluate_policies(mdp, pols)  # batched inferred from ndim
        assert V.shape == (B, H + 1, S)
        np.testing.assert_array_equal(evaluate_policies(mdp, pols, batched=True), V)
        for i in range(B):
            np.testing.assert_allclose(V[i], evaluate_policies(mdp, pols[i]), rtol=0, atol=ROUNDOFF)
        np.testing.assert_allclose(
            policy_values(mdp, pols), V[:, 0] @ mdp.mu0, rtol=0, atol=ROUNDOFF
        )


@settings(max_examples=30)
@given(finite_horizon_mdps(form=None, stage_dependent=None), st.integers(1, 4), st.data())
def test_stationary_policies_broadcast_over_the_horizon(mdp, B, data):
    H, S, A = mdp.horizon, mdp.S, mdp.A
    for strat in (deterministic_policies(S, A, None, B), stochastic_policies(S, A, None, B)):
        pols = data.draw(strat)  # (B, S) or (B, S, A)
        tiled = np.repeat(pols[:, None], H, axis=1)  # (B, H, S[, A])
        np.testing.assert_array_equal(mdp.check_policy(pols, batched=True), tiled)
        np.testing.assert_array_equal(mdp.check_policy(pols[0]), tiled[0])
        np.testing.assert_array_equal(
            evaluate_policies(mdp, pols, batched=True), evaluate_policies(mdp, tiled)
        )
        np.testing.assert_array_equal(
            evaluate_policies(mdp, pols[0]), evaluate_policies(mdp, tiled[0])
        )


def test_check_policy_rejects_bad_policies():
    mdp = make("riverswim:S=3,H=4")
    with pytest.raises(InvalidPolicyError, match="action 2"):
        mdp.check_policy(np.full((4, 3), 2))
    with pytest.raises(InvalidPolicyError, match="sums to"):
        mdp.check_policy(np.full((4, 3, 2), 0.4))
    with pytest.raises(InvalidPolicyError, match="shape"):
        mdp.check_policy(np.zeros((5, 3), np.int64))


@settings(max_examples=40)
@given(discounted_mdps(form=None), st.data())
def test_evaluate_discounted_equals_neumann_series(mdp, data):
    S, A, g = mdp.S, mdp.A, mdp.gamma
    pol = data.draw(policies(S, A), label="policy")  # (S,) int or (S, A)
    pi = as_stochastic(pol, A)
    P = mdp.dense_P()
    P_pi = np.einsum("sa,sat->st", pi, P)
    r_pi = np.einsum("sa,sa->s", pi, mdp.R)
    # V = sum_t gamma^t P_pi^t r_pi; truncation after N terms leaves <= gamma^N / (1 - gamma)
    N = 1 if g == 0 else int(np.ceil(np.log(1e-14 * (1 - g)) / np.log(g)))
    V_series, term = np.zeros(S), r_pi.copy()
    for _ in range(N):
        V_series += term
        term = g * P_pi @ term
    tail = g**N / (1 - g)
    V = evaluate_discounted(mdp, pol)
    assert V.shape == (S,)
    np.testing.assert_allclose(V, V_series, rtol=0, atol=tail + discounted_roundoff(g))


# ------------------------------------------------------------------------------- Monte Carlo
def hoeffding_radius(n: int, value_range: float, delta: float) -> float:
    """Two-sided Hoeffding: P(|mean - E| > range * sqrt(ln(2/delta) / (2n))) <= delta."""
    return value_range * np.sqrt(np.log(2 / delta) / (2 * n))


@settings(max_examples=20)
@given(
    finite_horizon_mdps(form=None, stage_dependent=None, reward_model="deterministic")
    | finite_horizon_mdps(form=None, stage_dependent=None, reward_model="bernoulli"),
    st.data(),
    st.integers(0, 2**32 - 1),
)
def test_monte_carlo_returns_agree_with_exact_evaluation(mdp, data, seed):
    """Mean return of n rollouts vs the exact V^pi_0(mu0).

    Returns lie in [0, H] (rewards in [0, 1], deterministic or Bernoulli), so Hoeffding gives
    |mean - V| <= H sqrt(ln(2/delta) / (2n)) with probability >= 1 - delta, delta = 1e-6.
    """
    n = 10_000  # radius H * 0.027
    H, S, A = mdp.horizon, mdp.S, mdp.A
    pol = data.draw(policies(S, A, H), label="policy")
    exact = float(policy_values(mdp, pol, batched=False))
    traj = mdp.rollout(pol, n_seeds=n, rng=seed)
    returns = traj.returns()
    assert returns.shape == (n,) and returns.min() >= 0 and returns.max() <= H
    assert abs(returns.mean() - exact) <= hoeffding_radius(n, H, DELTA_MC)


# ------------------------------------------------------------------------------- VI and PI
@settings(max_examples=40)
@given(
    discounted_mdps(form=None),
    st.sampled_from([1e-1, 1e-3, 1e-6, 1e-10]),
    st.booleans(),
    st.sampled_from(["sup", "span"]),
    st.data(),
)
def test_value_iteration_certified_bound_and_policy_iteration(mdp, tol, warm_start, stopping, data):
    g = mdp.gamma
    pi_sol = policy_iteration(mdp)
    # PI's V is the fixed point of the Bellman optimality operator (certifies V* independently)
    Q = mdp.R + g * np.einsum("sat,t->sa", mdp.dense_P(), pi_sol.V)
    np.testing.assert_allclose(pi_sol.V, Q.max(axis=1), rtol=0, atol=discounted_roundoff(g))
    np.testing.assert_allclose(
        pi_sol.V, evaluate_discounted(mdp, pi_sol.policy), rtol=0, atol=discounted_roundoff(g)
    )
    V0 = None
    if warm_start:
        values = st.lists(st.floats(0, 1 / (1 - g)), min_size=mdp.S, max_size=mdp.S)
        V0 = np.array(data.draw(values, label="V0"))
    vi = value_iteration(mdp, tol=tol, V0=V0, stopping=stopping)
    assert vi.info["converged"] and vi.info["stopping"] == stopping
    bound = vi.info["error_bound"]
    assert bound <= tol
    # the certified bound really bounds the distance to V*
    assert np.max(np.abs(vi.V - pi_sol.V)) <= bound + discounted_roundoff(g)
    # greedy policy of the VI output is 2 gamma tol / (1 - gamma)-optimal (AJKS Lemma 1.11)
    V_greedy = evaluate_discounted(mdp, vi.policy)
    assert np.all(V_greedy >= pi_sol.V - 2 * g * bound / (1 - g) - discounted_roundoff(g))


@settings(max_examples=30)
@given(discounted_mdps(form=None), st.sampled_from([1e-3, 1e-8]))
def test_span_rule_never_needs_more_sweeps_than_the_sup_rule(mdp, tol):
    # MacQueen's half-span c (max D - min D) / 2 <= c max |D|, so it certifies tol no later
    sup = value_iteration(mdp, tol=tol, stopping="sup")
    span = value_iteration(mdp, tol=tol, stopping="span")
    assert value_iteration(mdp, tol=tol).info["stopping"] == "span"  # the default
    assert span.info["iterations"] <= sup.info["iterations"]
    assert span.info["error_bound"] <= tol and sup.info["error_bound"] <= tol
    with pytest.raises(ValueError, match="stopping must be 'sup' or 'span', got 'l2'"):
        value_iteration(mdp, stopping="l2")


def test_solve_dispatches_on_the_objective():
    # a model with a discount is solved as the discounted problem (its H is not used), never
    # as the undiscounted H-step one with gamma dropped (issue 25)
    m = make("riverswim:S=4,H=5,gamma=0.9")
    assert solve(m).info["method"] == "value_iteration"
    assert solve(m).value == pytest.approx(solve(m, gamma=0.9).value, abs=1e-9)
    assert solve(m).value == pytest.approx(
        solve(m.with_objective(gamma=0.9), "policy_iteration").value, abs=1e-9
    )
    assert solve(make("riverswim:S=4,H=5")).info["method"] == "backward_induction"
    with pytest.raises(ValueError, match="gamma=0.9, which it would ignore"):
        solve(m, "backward_induction")
    with pytest.raises(ValueError, match="gamma=0.9, which it would ignore"):
        backward_induction(m)


# ------------------------------------------------------------------------------- storage forms
def assert_same_greedy_choice(Q_ref, policy_ref, policy, atol, err_msg=""):
    """Greedy policies of the same Q computed two ways (Q_ref ``(..., A)``, policies ``(...)``).

    Where one action beats all others by more than ``atol`` (the round-off of Q) both policies
    must pick it. Where several actions are within ``atol`` of the max, i.e. tie up to round-off,
    each policy must pick one of those maximisers. Exact agreement at such ties is what
    ``test_greedy_policy_does_not_depend_on_storage_form_at_ties`` asks for (a known bug).
    """
    near = Q_ref >= Q_ref.max(axis=-1, keepdims=True) - atol  # (..., A) near-maximisers
    decided = near.sum(axis=-1) == 1
    np.testing.assert_array_equal(policy[decided], policy_ref[decided], err_msg=err_msg)
    assert np.take_along_axis(near, policy[..., None], axis=-1).all(), err_msg


@settings(max_examples=40)
@given(finite_horizon_mdps(form="dense", stage_dependent=None), st.data())
def test_dense_and_sparse_forms_give_identical_finite_horizon_results(mdp, data):
    H, S, A = mdp.horizon, mdp.S, mdp.A
    pols = data.draw(stochastic_policies(S, A, H, batch=3))
    ref = backward_induction(mdp)
    V_ref = evaluate_policies(mdp, pols)
    for form, m in all_forms(mdp).items():
        sol = backward_induction(m)
        np.testing.assert_allclose(sol.V, ref.V, rtol=0, atol=ROUNDOFF, err_msg=form)
        np.testing.assert_allclose(sol.Q, ref.Q, rtol=0, atol=ROUNDOFF, err_msg=form)
        assert_same_greedy_choice(ref.Q, ref.policy, sol.policy, ROUNDOFF, form)
        np.testing.assert_allclose(
            evaluate_policies(m, pols), V_ref, rtol=0, atol=ROUNDOFF, err_msg=form
        )


@settings(max_examples=30)
@given(discounted_mdps(form="dense"), st.data())
def test_dense_and_sparse_forms_give_identical_discounted_results(mdp, data):
    g = mdp.gamma
    tol = discounted_roundoff(g)
    pol = data.draw(policies(mdp.S, mdp.A))
    vi, pi, ev = value_iteration(mdp), policy_iteration(mdp), evaluate_discounted(mdp, pol)
    for form, m in all_forms(mdp).items():
        vi_f, pi_f = value_iteration(m), policy_iteration(m)
        # same number of sweeps -> the same iterate up to round-off; otherwise the stopping test
        # fell on different sides of its threshold and both are only within their bounds of V*
        same_run = vi_f.info["iterations"] == vi.info["iterations"]
        atol = tol if same_run else vi.info["error_bound"] + vi_f.info["error_bound"] + tol
        np.testing.assert_allclose(vi_f.V, vi.V, rtol=0, atol=atol, err_msg=form)
        np.testing.assert_allclose(vi_f.Q, vi.Q, rtol=0, atol=atol, err_msg=form)
        assert_same_greedy_choice(vi.Q, vi.policy, vi_f.policy, atol, form)
        # PI decides improvements with a relative margin of 1e-12, far above round-off
        np.testing.assert_allclose(pi_f.V, pi.V, rtol=0, atol=tol, err_msg=form)
        np.testing.assert_array_equal(pi_f.policy, pi.policy, err_msg=form)
        np.testing.assert_allclose(evaluate_discounted(m, pol), ev, rtol=0, atol=tol, err_msg=form)


# ------------------------------------------------------------------------------- fixed bugs
# Each test below pinned a bug found by hypothesis or by review (as a strict xfail until fixed);
# they now guard the fixes.


def tie_mdp(**objective) -> TabularMDP:
    """Found by hypothesis. States 0 and 2 absorb, paying 1 for action 2, so V(0) = V(2) exactly.
    From state 1 (reward 0) actions 0 and 1 go to state 0 and action 2 splits p / q over states
    0 and 2 with p + q = 1 + 2^-54 exactly (a normalised row), so Q(1, 2) exceeds Q(1, 0) by
    x * 2^-54, less than half an ulp of x: the correctly rounded Q(1, .) tie. The dense (BLAS)
    product rounds Q(1, 2) one ulp up on this machine, the CSR product does not."""
    P = np.zeros((3, 3, 3))
    P[0, :, 0] = P[2, :, 2] = P[1, 0, 0] = P[1, 1, 0] = 1.0
    P[1, 2, 0], P[1, 2, 2] = 0.570098441041306, 0.42990155895869403
    R = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    return TabularMDP(P, R, np.array([1.0, 0.0, 0.0]), **objective)


@pytest.mark.parametrize("objective", [{"horizon": 4}, {"gamma": 0.99}], ids=["BI", "VI"])
def test_greedy_policy_does_not_depend_on_storage_form_at_ties(objective):
    dense = tie_mdp(**objective)
    sparse = dense.to_sparse()
    plan = backward_induction if "horizon" in objective else value_iteration
    a, b = plan(dense), plan(sparse)
    Qa, Qb = a.Q[0] if a.Q.ndim == 3 else a.Q, b.Q[0] if b.Q.ndim == 3 else b.Q
    if np.array_equal(Qa[1], Qb[1]):
        pytest.skip("this BLAS rounds the tie like the CSR product: instance does not reproduce")
    np.testing.assert_allclose(Qa, Qb, rtol=0, atol=ROUNDOFF * 100)  # the values do agree
    np.testing.assert_array_equal(a.policy, b.policy)


def test_policy_values_of_a_single_policy_is_its_value():
    mdp = make("riverswim:S=4,H=5")
    sol = backward_induction(mdp)
    v = np.asarray(policy_values(mdp, sol.policy))
    assert v.shape == () and float(v) == pytest.approx(sol.value, abs=ROUNDOFF)


class FixedUniforms:
    """A stand-in generator whose ``random(n)`` returns given numbers (rollout's draws)."""

    def __init__(self, u):
        self.u = np.asarray(u, dtype=np.float64)

    def random(self, n):
        return self.u[:n]


def test_rollout_never_plays_a_zero_probability_action():
    mdp = TabularMDP(np.ones((1, 3, 1)), np.zeros((1, 3)), horizon=1)
    pol = np.array([[[0.5, 0.5 - 5e-9, 0.0]]])  # (H, S, A) = (1, 1, 3), accepted by check_policy
    mdp.check_policy(pol)
    # uniforms: initial state, then (action, transition, reward) for the one step
    traj = mdp.rollout(pol, rng=[FixedUniforms([0.5, 1 - 1e-12, 0.5, 0.5])])
    assert pol[0, 0, traj.actions[0, 0]] > 0


def test_backward_induction_rejects_another_horizon_for_stage_dependent_rewards():
    R = np.array([0.1, 0.2, 0.3])[:, None, None] * np.ones((3, 1, 1))  # (H, S, A) = (3, 1, 1)
    mdp = TabularMDP(np.ones((1, 1, 1)), R, horizon=3)
    with pytest.raises(ValueError, match="horizon"):
        backward_induction(mdp, horizon=5)


def test_policy_iteration_sees_improvements_below_1e12():
    """Found by hypothesis (issue 13): PI's improvement test had an absolute floor,
    ``best > Q(s, pi(s)) + 1e-12 (1 + |best|)``, so an action better by 1e-12 was never taken and
    PI returned V = 0 where V* = 2e-12. Checked against the closed form r / (1 - gamma) and VI."""
    gamma, r = 0.5, 1e-12
    mdp = TabularMDP(np.ones((1, 2, 1)), np.array([[0.0, r]]), np.array([1.0]), gamma=gamma)
    sol = policy_iteration(mdp)
    assert sol.policy.tolist() == [1]
    assert sol.V[0] == pytest.approx(r / (1 - gamma), rel=1e-12)
    vi = value_iteration(mdp, tol=1e-20)
    assert sol.V[0] == pytest.approx(vi.V[0], rel=1e-9)
    assert sol.info["iterations"] == 2 and sol.info["converged"]
