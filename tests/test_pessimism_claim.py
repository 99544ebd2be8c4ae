"""The pessimism claim counts only runs that could fail it (issue 13, item 5).

``V_hat(mu0) <= V^{pi_hat}(mu0)`` holds trivially when the penalty clips V_hat to 0 (rewards are
>= 0). The former claim counted such runs as passes, so an algorithm that learned nothing passed.
"""

from __future__ import annotations

import numpy as np

from theorylab.validations.claims.offline import FH, PessimismInvariant, informative_runs


def claim(*cases) -> PessimismInvariant:
    cfg = {"delta": 0.1, "seeds": 32, "min_informative": 0.5, "cases": list(cases)}
    return PessimismInvariant(name="t", statement="t", scales={"quick": cfg})


def test_informative_runs_are_those_above_zero():
    assert informative_runs(np.array([0.0, 1e-13, 1e-6, 2.0])).tolist() == [
        False,
        False,
        True,
        True,
    ]


def test_a_clipped_algorithm_cannot_pass():
    """VI-LCB at the code's c_L = 2000 has V_hat = 0 on every seed at N = 30,000: the former claim
    passed this case (32/32 'held'); it now fails for want of informative runs."""
    rep = claim(("vi-lcb 2000", "multiscale-bandit:gamma=0.5", "vi-lcb", {}, [30_000])).run()
    (check,) = rep.checks
    assert not check.passed
    assert check.values["informative"] == 0 and check.values["runs"] == 32


def test_negative_control_naive_vi_fails():
    """Naive VI (no penalty) overestimates its greedy policy's value on most seeds."""
    rep = claim(("naive-vi", FH, "naive-vi", {}, [300, 3000])).run()
    (check,) = rep.checks
    assert check.values["informative"] == 64
    assert not check.passed and check.values["failure_rate"] > 0.1


def test_pessimistic_vi_passes_with_every_run_informative():
    rep = claim(("pvi", FH, "pessimistic-vi-hoeffding", {}, [10_000])).run()
    (check,) = rep.checks
    assert check.passed and check.values["informative"] == 32
