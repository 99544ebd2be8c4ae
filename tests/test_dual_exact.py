"""The independent answers of validations/claims/dual_exact.py and their controls."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from theorylab.validations.claims.dual_exact import _loss, closed_form_value_step


@pytest.mark.parametrize("loss", ["chi-square", "total-variation"])
@pytest.mark.parametrize("lam", [0.3, 0.6, 0.8, 0.95])
def test_closed_form_value_step_is_the_minimiser(loss, lam):
    if loss == "total-variation" and lam <= 0.5:
        pytest.skip("TV's loss is unbounded below at lam <= 1/2")
    rng = np.random.default_rng(int(lam * 100))
    for _ in range(20):
        Q = rng.uniform(0, 10, size=4)
        w = rng.dirichlet(np.ones(4)) * (rng.random(4) < 0.8)
        if w.sum() == 0:
            continue
        v = closed_form_value_step(Q, w, loss, lam)

        def g(u, Q=Q, w=w):
            return float((w * _loss(Q - u, loss, lam)).sum())

        lo, hi = Q[w > 0].min() - 20, Q[w > 0].max() + 20
        grid = np.linspace(lo, hi, 4001)
        best = min(grid, key=g)
        ref = minimize_scalar(
            g, bounds=(best - 0.02, best + 0.02), method="bounded", options={"xatol": 1e-12}
        )
        assert g(v) <= g(ref.x) + 1e-10  # no point does better than the closed form


def test_optidice_alpha_inverted_fails_the_claim():
    import theorylab.validations.mutations  # noqa: F401
    from theorylab.validations.controls import get_control
    from theorylab.validations.registry import VALIDATIONS

    claim = VALIDATIONS.get("optidice-regularised-optimum")
    assert claim.run("quick").finalize().verdict == "PASS"
    with get_control("optidice-alpha-inverted").applied(claim):
        assert claim.run("quick").finalize().verdict == "FAIL"
