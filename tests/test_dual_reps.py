"""Tests of exact REPS (algorithms/dual/reps.py; Peters, Muelling, Altuen AAAI 2010, section 2;
theory-preference-dual-llm.md 6.5).

Oracles: cvxpy on the REPS primal (exponential cone, to its 1e-6 accuracy), the closed form
mu* = q exp(delta_V / eta) / Z recomputed from the returned (V, eta), the dual g evaluated
independently, and the exact stationary distribution of a behaviour policy (a linear solve).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.algorithms.dual.inputs import DualInputError
from theorylab.algorithms.dual.reps import (
    InfeasibleREPSError,
    _primal_cvxpy,
    kl_divergence,
    reps,
    reps_dual,
)
from theorylab.mdps import TabularMDP


def instance(seed: int, S: int, A: int):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(S, A))
    mdp = TabularMDP(P, rng.uniform(size=(S, A)), gamma=0.9)
    pi = rng.dirichlet(np.ones(A), size=S)
    return mdp, pi, rng


def stationary_pairs(mdp, pi) -> np.ndarray:
    """The stationary state-action distribution of pi: solve d (P_pi - I) = 0, sum d = 1."""
    P_pi = np.einsum("sa,sat->st", pi, mdp.dense_P())
    S = mdp.S
    lhs = np.vstack([(P_pi - np.eye(S)).T, np.ones(S)])
    d = np.linalg.lstsq(lhs, np.r_[np.zeros(S), 1.0], rcond=None)[0]
    return d[:, None] * pi


@settings(max_examples=12)
@given(
    seed=st.integers(0, 10_000),
    S=st.integers(2, 6),
    A=st.integers(1, 3),
    epsilon=st.sampled_from([0.01, 0.05, 0.2, 0.5]),
)
def test_reps_binding_kl_stationarity_and_duality(seed, S, A, epsilon):
    mdp, pi, _ = instance(seed, S, A)
    q = stationary_pairs(mdp, pi)
    sol = reps(mdp, q, epsilon)
    ref_mu, ref_value = _primal_cvxpy(mdp, q, epsilon)
    assert sol.primal_value == pytest.approx(ref_value, abs=1e-6)
    if sol.binding:
        assert sol.stationarity <= 1e-8
        assert abs(sol.mu.sum() - 1.0) <= 1e-12
        assert abs(sol.kl - epsilon) <= 1e-8
        assert abs(sol.dual_value - sol.primal_value) <= 1e-8
        assert sol.dual_value == pytest.approx(
            reps_dual(sol.eta, sol.V, mdp, q, epsilon), abs=1e-12
        )
        # the closed form: mu* proportional to q exp(delta_V / eta)
        delta = mdp.reward(0) + mdp.expected_next(sol.V) - sol.V[:, None]
        tilt = q * np.exp((delta - delta.max()) / sol.eta)
        np.testing.assert_allclose(sol.mu, tilt / tilt.sum(), atol=1e-10)
    else:  # epsilon is slack: cvxpy's primal answer, to its accuracy
        assert sol.kl <= epsilon + 1e-6
        assert sol.stationarity <= 1e-6


def test_non_stationary_q_within_epsilon_is_solved():
    mdp, pi, rng = instance(4, 5, 3)
    q = stationary_pairs(mdp, pi) * rng.uniform(0.5, 1.5, size=(5, 3))
    q /= q.sum()
    sol = reps(mdp, q, 0.1)
    assert 0 < sol.min_kl < 0.1
    assert sol.binding and abs(sol.kl - 0.1) <= 1e-8 and sol.stationarity <= 1e-8


def test_reps_that_is_infeasible_raises_instead_of_returning_a_number():
    mdp, pi, rng = instance(4, 5, 3)
    q = stationary_pairs(mdp, pi) * rng.uniform(0.5, 1.5, size=(5, 3))
    q /= q.sum()
    min_kl = reps(mdp, q, 0.1).min_kl
    with pytest.raises(InfeasibleREPSError, match="closest stationary distribution has KL"):
        reps(mdp, q, min_kl / 2)


def test_q_whose_support_holds_no_stationary_distribution():
    P = np.zeros((2, 1, 2))
    P[0, 0, 1] = 1.0  # 0 -> 1 -> 1: the only stationary distribution sits on state 1
    P[1, 0, 1] = 1.0
    mdp = TabularMDP(P, np.array([[1.0], [0.0]]), gamma=0.5)
    with pytest.raises(InfeasibleREPSError, match="no stationary distribution lives on"):
        reps(mdp, np.array([[1.0], [0.0]]), 0.5)


def test_slack_constraint_returns_the_reward_optimal_stationary_distribution():
    mdp, pi, _ = instance(2, 4, 2)
    q = stationary_pairs(mdp, pi)
    sol = reps(mdp, q, 50.0)
    assert not sol.binding and sol.kl < 50.0
    # the best stationary distribution (average-reward LP over all stationary mu)
    _, best = _primal_cvxpy(mdp, q, 1e6)
    assert sol.primal_value == pytest.approx(best, abs=1e-6)


@pytest.mark.parametrize("eps", [0.0, -1.0, float("nan")])
def test_epsilon_must_be_positive(eps):
    mdp, pi, _ = instance(1, 3, 2)
    with pytest.raises(DualInputError, match="epsilon"):
        reps(mdp, stationary_pairs(mdp, pi), eps)


def test_kl_divergence_helper():
    assert kl_divergence([0.5, 0.5], [0.5, 0.5]) == 0.0
    assert kl_divergence([1.0, 0.0], [0.5, 0.5]) == pytest.approx(np.log(2))
    assert kl_divergence([0.5, 0.5], [1.0, 0.0]) == float("inf")
