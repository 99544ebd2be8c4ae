"""Tests of RL with general utilities (algorithms/dual/general_utilities.py; Barakat, Fatkhullin,
He, ICML 2023, seed rows 000#14 / 001#65).

Oracles: cvxpy on the occupancy polytope and Frank-Wolfe's duality-gap bracket (two answers);
the closed form F* = 0 of the KL-to-expert utility; central finite differences of F(lambda^theta)
for the chain-rule gradient; ordinary softmax PG written out in the claim module for the linear
utility; the control (frozen pseudo-reward) stalling.
"""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.dual import general_utilities as gu
from theorylab.algorithms.dual.occupancy_flow import occupancy_flow
from theorylab.mdps import make
from theorylab.validations.alignment_dual_mutations import general_utility_frozen_reward
from theorylab.validations.claims.dual import ordinary_softmax_pg

SPEC = "random:S=4,A=3,gamma=0.8,seed=2"


def model():
    return make(SPEC).with_objective(gamma=0.8, horizon=None)


@pytest.mark.parametrize("utility", gu.UTILITIES)
def test_cvxpy_optimum_lies_in_the_frank_wolfe_bracket(utility):
    mdp = model()
    F = gu.make_utility(mdp, utility)
    f_star, lam = gu.optimum_cvxpy(mdp, F)
    _, f_fw, gap = gu.frank_wolfe(mdp, F)
    assert f_fw - 1e-9 <= f_star <= f_fw + gap + 1e-9
    assert np.abs(occupancy_flow(mdp, gamma=0.8).residual(lam)).max() <= 1e-7  # lam in K
    if utility == "kl-expert":
        assert f_star == pytest.approx(0.0, abs=1e-7)


@pytest.mark.parametrize("utility", ["entropy", "kl-expert"])
def test_chain_rule_gradient_is_the_finite_difference(utility):
    mdp = model()
    F = gu.make_utility(mdp, utility)
    theta = np.random.default_rng(0).normal(size=(mdp.S, mdp.A))
    grad, _ = gu.utility_gradient(mdp, F, theta)
    h = 1e-6
    for idx in [(0, 0), (1, 2), (3, 1)]:
        e = np.zeros_like(theta)
        e[idx] = h
        up = F.value(gu.occupancy_measure(mdp, gu.softmax(theta + e, axis=1), gamma=0.8))
        down = F.value(gu.occupancy_measure(mdp, gu.softmax(theta - e, axis=1), gamma=0.8))
        assert grad[idx] == pytest.approx((up - down) / (2 * h), rel=1e-6, abs=1e-9)


def test_linear_utility_is_ordinary_softmax_pg():
    mdp = model()
    res = tl.run("general-utility-pg", SPEC, iterations=15, utility="linear", step=2.0)
    np.testing.assert_allclose(np.exp(res.policies), ordinary_softmax_pg(mdp, 15, 2.0), atol=1e-12)


def test_pg_approaches_the_optimum_and_the_frozen_reward_control_stalls():
    mdp = model()
    F = gu.make_utility(mdp, "entropy")
    f_star, _ = gu.optimum_cvxpy(mdp, F)
    res = tl.run("general-utility-pg", SPEC, iterations=300, utility="entropy", step=10.0)
    gap = f_star - res.objective
    assert gap.min() >= -1e-7 and gap[-1] <= 0.05 * gap[0]
    with general_utility_frozen_reward():
        frozen = tl.run("general-utility-pg", SPEC, iterations=300, utility="entropy", step=10.0)
    assert f_star - frozen.objective[-1] > 0.1 * gap[0]


def test_bad_input_is_one_line():
    with pytest.raises(ValueError, match="utility must be one of entropy, kl-expert, linear"):
        tl.run("general-utility-pg", SPEC, iterations=5, utility="variance")
    with pytest.raises(ValueError, match="step must be a finite number > 0"):
        tl.run("general-utility-pg", SPEC, iterations=5, step=0.0)
    with pytest.raises(ValueError, match="iterations must be a positive integer"):
        tl.run("general-utility-pg", SPEC, iterations=0)
