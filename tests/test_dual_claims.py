"""The dual-RL claims can fail: each known-bug mutation or non-learning control, run through the
same checks as the real solver, fails its claim (validations/claims/dual.py). The claims
themselves pass at quick scale in tests/test_validations.py."""

from __future__ import annotations

from dataclasses import replace

from theorylab.validations.claims.dual import (
    AlphaToZero,
    CMDPLastIterate,
    DICERate,
    DualVStrongDuality,
    FiniteHorizonDualV,
    REPSBindingKL,
    behaviour_value_estimator,
    fixed_eta_mutant,
    plain_conjugate_mutant,
    sqrt_alpha_mutant,
)
from theorylab.validations.mutations import dual_v_plain_conjugate, dual_v_sqrt_alpha


def failed(report, check: str) -> bool:
    return not report.passed and not {c.name: c.passed for c in report.checks}[check]


def test_plain_conjugate_in_dual_v_fails_strong_duality():
    report = replace(DualVStrongDuality(), solver=plain_conjugate_mutant).run("quick")
    assert failed(report, "d >= 0")


def test_sqrt_alpha_fails_the_rate_claim():
    report = replace(AlphaToZero(), value=sqrt_alpha_mutant).run("quick")
    assert failed(report, "rate alpha^1")
    assert failed(report, "0 <= J_LP - J(alpha) <= alpha D_f(d_LP || d^O)")


def test_untuned_eta_fails_the_binding_kl_claim():
    report = replace(REPSBindingKL(), solver=fixed_eta_mutant).run("quick")
    assert failed(report, "KL(mu* || q) = epsilon")


def test_non_learning_estimator_fails_the_ope_rate():
    report = replace(DICERate(), estimator=behaviour_value_estimator).run("quick")
    assert failed(report, "RMSE ~ N^(-1/2)")


def test_plain_gda_in_place_of_ogda_fails_the_last_iterate_claim():
    report = replace(CMDPLastIterate(), optimistic=False).run("quick")
    assert failed(report, "OGDA last iterate -> optimum")


def test_finite_horizon_claim_fails_under_both_registered_controls():
    with dual_v_plain_conjugate():
        report = FiniteHorizonDualV().run("quick")
    assert failed(report, "d >= 0") and failed(report, "duality gap <= 1e-8")
    with dual_v_sqrt_alpha():
        report = FiniteHorizonDualV().run("quick")
    assert failed(report, "0 <= V*_0(mu) - J(alpha) <= alpha D_f(d_LP || d^O)")
