"""Tests of one-shot safety alignment by dualisation (algorithms/dual/safety_dualization.py;
Huang et al., NeurIPS 2024, seed row 000#62) and its problem (mdps/safety_bandit.py).

Oracles: finite differences of the closed-form dual D(lambda) for D' and D''; cvxpy on the
response simplex (exponential cone) for the constrained optimum and its multiplier; the primal-dual
baseline's limit; the control (beta dropped from the dual) moves lambda* away from cvxpy's.
"""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.dual import safety_dualization as sd
from theorylab.errors import InvalidMDPError
from theorylab.mdps import make
from theorylab.mdps.safety_bandit import safety_bandit
from theorylab.validations.alignment_dual_mutations import mocan_dual_without_beta
from theorylab.validations.claims.dual import safety_optimum_cvxpy


@pytest.mark.parametrize("beta", [0.1, 0.5, 2.0])
def test_dual_derivatives_are_the_finite_differences_of_the_closed_form(beta):
    bandit = safety_bandit(S=2, A=5, beta=beta, slack=0.5, seed=4)
    h = 1e-5
    for lam in (0.0, 0.7, 3.0):
        g, H = sd.dual_derivatives(bandit, lam)
        D = [sd.dual_value(bandit, lam + k * h) for k in (-1, 0, 1)]
        assert g == pytest.approx((D[2] - D[0]) / (2 * h), abs=1e-7)
        assert H == pytest.approx((D[2] - 2 * D[1] + D[0]) / h**2, rel=1e-3, abs=1e-5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_shot_optimum_equals_cvxpy_and_binds(seed):
    """D(lambda*) = the constrained optimum (strong duality), lambda* = cvxpy's multiplier, the
    policy pi_{lambda*} meets the bound with equality."""
    bandit = safety_bandit(S=3, A=6, beta=0.3, slack=0.6, seed=seed)
    lam = sd.optimal_multiplier(bandit)
    value, lam_cvx = safety_optimum_cvxpy(bandit)
    pi = bandit.gibbs(lam)
    assert lam > 0 and lam == pytest.approx(lam_cvx, rel=1e-5)
    assert sd.dual_value(bandit, lam) == pytest.approx(value, abs=1e-7)
    assert bandit.objective(pi) == pytest.approx(value, abs=1e-7)
    assert bandit.expected(pi, bandit.safety) == pytest.approx(bandit.threshold, abs=1e-12)


def test_inactive_constraint_gives_lambda_zero_and_the_unconstrained_gibbs_policy():
    bandit = safety_bandit(S=3, A=6, beta=0.3, slack=-0.2, seed=0)
    assert sd.optimal_multiplier(bandit) == 0.0
    assert safety_optimum_cvxpy(bandit)[1] == pytest.approx(0.0, abs=1e-7)
    res = tl.run("mocan", bandit, iterations=3)
    assert res.config["multipliers"] == [0.0] * 4


def test_tl_run_mocan_and_primal_dual_reach_the_same_multiplier():
    spec = "safety-bandit:S=3,A=8,beta=0.5,slack=0.5,seed=0"
    one = tl.run("mocan", spec, iterations=30)
    pd = tl.run("safety-primal-dual", spec, iterations=3000)
    lam = one.config["lambda_star"]
    assert one.config["multipliers"][-1] == pytest.approx(lam, rel=1e-9)
    assert pd.config["multipliers"][-1] == pytest.approx(lam, rel=1e-6)
    assert one.target_gap[-1] <= 1e-12 and pd.target_gap[-1] <= 1e-9
    assert one.target_gap[0] > 1e-3  # pi_0 (lambda = 0) is not the constrained optimum


def test_the_control_without_beta_misses_cvxpys_multiplier():
    bandit = safety_bandit(S=3, A=6, beta=0.3, slack=0.6, seed=0)
    _, lam_cvx = safety_optimum_cvxpy(bandit)
    with mocan_dual_without_beta():
        lam = sd.optimal_multiplier(bandit)
    assert abs(lam - lam_cvx) > 0.1 * (1 + lam_cvx)


def test_spec_builds_the_bandit_and_bad_input_is_one_line():
    bandit = make("safety-bandit:S=2,A=4,beta=0.5,slack=0.3,seed=1")
    assert bandit.name.startswith("safety-bandit") and bandit.reward.shape == (2, 4)
    with pytest.raises(InvalidMDPError, match="slack must be < 1"):
        safety_bandit(slack=1.0)
    with pytest.raises(InvalidMDPError, match="beta must be > 0"):
        safety_bandit(beta=0.0)
    with pytest.raises(InvalidMDPError, match="A >= 2"):
        safety_bandit(A=1)
    with pytest.raises(ValueError, match="iterations must be a positive integer"):
        tl.run("mocan", bandit, iterations=0)
    with pytest.raises(ValueError, match="eta must be a finite number > 0"):
        tl.run("safety-primal-dual", bandit, iterations=5, eta=-1.0)
    bandit.threshold = 2.0  # above the largest achievable safety
    with pytest.raises(ValueError, match="not below the largest achievable safety"):
        sd.optimal_multiplier(bandit)


def test_dual_value_is_the_formula_written_out():
    """D(lambda) = E_rho beta log sum_a ref(a|s) exp((r(s,a) + lambda g(s,a)) / beta) - lambda b,
    written here with plain numpy (not the library's logsumexp path)."""
    bandit = safety_bandit(S=2, A=3, beta=0.7, slack=0.4, seed=5)
    for lam in (0.0, 0.3, 2.5):
        inner = np.sum(bandit.ref * np.exp((bandit.reward + lam * bandit.safety) / 0.7), axis=1)
        D = float(np.sum(bandit.rho * 0.7 * np.log(inner))) - lam * bandit.threshold
        assert sd.dual_value(bandit, lam) == pytest.approx(D, abs=1e-13)
