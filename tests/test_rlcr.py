"""RLCR (seed row 002-004#B6): the calibration bandit, the Brier reward's properness, the exact
PG's limit against enumeration, input errors and the control."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.policy_optimization import rlcr
from theorylab.mdps import make
from theorylab.mdps.calibration_bandit import (
    CalibrationBandit,
    brier_reward,
    expected_calibration_error,
)


def test_brier_reward_written_out_and_proper():
    rng = np.random.default_rng(0)
    for p in rng.random(20):
        q = np.linspace(0, 1, 1001)
        # E over c ~ Bernoulli(p) of 1[c] - (q - 1[c])^2, by the two outcomes
        direct = p * (1 - (q - 1) ** 2) + (1 - p) * (0 - q**2)
        assert np.allclose(brier_reward(p, q), direct, atol=1e-15)
        assert abs(q[direct.argmax()] - p) <= 5e-4
        assert abs(brier_reward(p, p) - p**2) < 1e-15
    assert np.allclose(brier_reward(0.3, np.linspace(0, 1, 5), brier=False), 0.3)


def test_optimum_is_enumerated_best_answer_and_nearest_level():
    inst = make("calibration-bandit:P=6,A=4,M=11,seed=3")
    opt = rlcr.optimum(inst)
    assert np.array_equal(opt[:, 0], inst.p.argmax(1))
    nearest = np.abs(inst.levels[None] - inst.p.max(1)[:, None]).argmin(1)
    assert np.array_equal(opt[:, 1], nearest)


def test_ece_of_point_masses_written_out():
    inst = CalibrationBandit(np.array([[0.2, 0.7], [0.9, 0.4]]), M=3)  # levels 0, 0.5, 1
    pi = np.zeros((2, 2, 3))
    pi[0, 1, 1] = 1.0  # prompt 0: answer 1 (p = 0.7) at q = 0.5
    pi[1, 0, 2] = 1.0  # prompt 1: answer 0 (p = 0.9) at q = 1
    # P(m = 1) = P(m = 2) = 1/2; |0.7 - 0.5| / 2 + |0.9 - 1| / 2
    assert abs(expected_calibration_error(inst, pi) - (0.2 / 2 + 0.1 / 2)) < 1e-15


def test_rlcr_converges_and_binary_reward_leaves_confidence_uniform():
    spec = "calibration-bandit:P=4,A=3,M=11"
    inst = make(spec)
    ours = tl.run("rlcr-pg", spec, iterations=3000)
    binary = tl.run("rlcr-pg", spec, iterations=3000, brier=False)
    assert abs(ours.objective[-1] - inst.p.max(1).mean()) < 1e-3
    assert abs(binary.objective[-1] - inst.p.max(1).mean()) < 1e-3
    assert ours.target_gap[-1] < 0.01
    e_ours = expected_calibration_error(inst, np.exp(ours.policies[-1]))
    pb = np.exp(binary.policies[-1])
    assert e_ours < 0.02 < 0.3 < expected_calibration_error(inst, pb)
    # the binary reward's gradient in the confidence is 0: pi(m | x, y) stays uniform
    cond = pb / pb.sum(2, keepdims=True)
    assert np.allclose(cond, 1.0 / inst.M, atol=1e-12)


def test_input_errors():
    with pytest.raises(ValueError, match="rlcr-pg: step must be a finite number > 0, got -1"):
        tl.run("rlcr-pg", "calibration-bandit", iterations=5, step=-1.0)
    with pytest.raises(ValueError, match="brier='yes' is a str, expected true or false"):
        tl.run("rlcr-pg", "calibration-bandit", iterations=5, brier="yes")
    with pytest.raises(ValueError, match="brier must be True or False"):
        rlcr.rlcr_pg(make("calibration-bandit"), 5, brier=1)
    with pytest.raises(ValueError, match="runs on a calibration-bandit"):
        tl.run("rlcr-pg", "answer-bandit", iterations=5)
    with pytest.raises(ValueError, match="M .* must be an integer >= 2"):
        CalibrationBandit(np.full((2, 2), 0.5), M=1)
    with pytest.raises(ValueError, match="lo < 0.5"):
        make("calibration-bandit:lo=0.7")


def test_brier_dropped_mutation_is_the_binary_reward():
    from theorylab.validations.alignment_mutations import rlcr_brier_dropped

    inst = make("calibration-bandit")
    with rlcr_brier_dropped():
        mutated = rlcr.rlcr_pg(inst, 50).policies[-1]
    assert np.allclose(mutated, rlcr.rlcr_pg(inst, 50, brier=False).policies[-1])
