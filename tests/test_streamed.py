"""Streamed runs (theorylab.validations.streamed): the summary a paper-scale claim reads instead
of (B, K) curves gives the same numbers as the full curves of the same run."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.mdps import make
from theorylab.validations import VALIDATIONS
from theorylab.validations.claim import (
    Scale,
    check_learns,
    check_learns_summary,
    check_optimism,
    check_optimism_summary,
)
from theorylab.validations.reference import null_regret_per_episode
from theorylab.validations.streamed import DENSE_UP_TO, PER_DECADE, streamed_run, summary_grid

SPEC = "riverswim:S=2,H=2"


def test_the_grid_is_dense_then_log_spaced_and_holds_the_last_tenth():
    assert summary_grid(50).tolist() == list(range(1, 51))
    K = 10**8
    g = summary_grid(K)
    assert g[0] == 1 and g[-1] == K and np.all(np.diff(g) > 0)
    assert np.array_equal(g[:DENSE_UP_TO], np.arange(1, DENSE_UP_TO + 1))
    assert K - K // 10 + 1 in g
    assert g.size <= DENSE_UP_TO + PER_DECADE * 4 + 3  # four decades above 1e4
    assert np.max(g[DENSE_UP_TO + 1 :] / g[DENSE_UP_TO:-1]) <= 10 ** (1 / PER_DECADE) + 1e-3


@pytest.mark.parametrize("segment", [700, 100_000])
def test_streamed_summary_equals_the_full_curves(segment):
    K, B = 6000, 3
    full = tl.run("ucbvi-bernstein", SPEC, episodes=K, seeds=B, loop="compiled")
    s = streamed_run("ucbvi-bernstein", SPEC, K, B, segment=segment)
    cum = full.cumulative_regret
    assert np.array_equal(s.grid, np.arange(1, K + 1))  # K <= DENSE_UP_TO: every episode
    assert np.allclose(s.cum, cum, rtol=1e-12, atol=1e-9)
    est = full.value_estimates
    assert np.allclose(s.min_gap, (est - full.optimal_value).min(axis=1), atol=1e-12)
    tail = full.regret[:, K - K // 10 :].mean(axis=1)
    assert np.allclose(s.tail_mean, tail, rtol=1e-12)
    null = null_regret_per_episode(make(SPEC), full.optimal_value)
    a, b = check_learns(full.regret, null), check_learns_summary(s, null)
    assert a.status == b.status
    for key in ("burn_in_K", "first_below_null_K"):
        assert a.values[key] == b.values[key], key
    assert b.values["tail_regret_ci_high"] == pytest.approx(a.values["tail_regret_ci_high"])
    cap = 2.0 * float(make(SPEC).R.max())
    assert check_optimism_summary(s, 0.1, cap).status == check_optimism(full, 0.1, cap).status


def test_a_streamed_run_scores_the_algorithms_own_objective():
    """ICVaR-RM is scored by the iterated CVaR (as in theorylab.run): the streamed summary equals
    the full compiled curves of the same run, whose regret is not the expected-return regret."""
    spec, K, B = "icvar-lower-bound:n=2,alpha=0.25,eta=0.1,A=2,H=3", 3000, 2
    full = tl.run("icvar-rm", spec, episodes=K, seeds=B, loop="compiled", alpha=0.25)
    s = streamed_run("icvar-rm", spec, K, B, segment=1100, alpha=0.25)
    assert s.config["objective"] == full.config["objective"] != "expected return"
    assert s.optimal_value == full.optimal_value
    assert np.allclose(s.cum, full.cumulative_regret, rtol=1e-12, atol=1e-9)
    est = full.value_estimates
    assert np.allclose(s.min_gap, (est - full.optimal_value).min(axis=1), atol=1e-12)
    neutral = tl.run("ucbvi-hoeffding", spec, episodes=5, seeds=1).optimal_value
    assert abs(s.optimal_value - neutral) > 1e-3  # a different objective, not a relabelling


def test_a_long_streamed_run_keeps_a_small_summary_and_finds_its_burn_in():
    """Beyond DENSE_UP_TO episodes the burn-in is read off the log grid (window ends
    interpolated): within one grid step of the full curves' value."""
    K, B = 60_000, 2
    full = tl.run("ucbvi-bernstein", SPEC, episodes=K, seeds=B, loop="compiled")
    s = streamed_run("ucbvi-bernstein", SPEC, K, B, segment=7000)
    assert s.cum.shape[1] < 12_000
    idx = s.grid - 1
    assert np.allclose(s.cum, full.cumulative_regret[:, idx], rtol=1e-12, atol=1e-9)
    null = null_regret_per_episode(make(SPEC), full.optimal_value)
    a, b = check_learns(full.regret, null), check_learns_summary(s, null)
    assert a.status == b.status == "PASS"
    ka, kb = a.values["burn_in_K"], b.values["burn_in_K"]
    assert ka is not None and kb is not None and abs(ka - kb) <= max(1, 0.002 * ka)


def test_a_streamed_scale_runs_the_claim_and_its_null_controls():
    """ucbvi-bernstein-riverswim on a streamed scale (its paper scale is one): the real run
    passes learns and optimism; the frozen and random agents' closed forms fail learns."""
    from dataclasses import replace

    import theorylab.validations.mutations  # noqa: F401
    from theorylab.validations.controls import get_control

    claim = VALIDATIONS.get("ucbvi-bernstein-riverswim")
    assert claim.scales["paper"].streamed
    small = replace(
        claim,
        scales={
            "test": Scale(
                episodes=20_000, seeds=2, mdp=SPEC, tests=("optimism", "learns"), streamed=True
            )
        },
    )
    rep = small.run("test").finalize()
    assert rep.verdict == "PASS", rep.format()
    assert rep.config["loop"].startswith("compiled, streamed")
    for kind in ("frozen", "random"):
        with get_control(kind).applied(small):
            crep = small.run("test").finalize()
        assert crep.verdict == "FAIL", crep.format()
        learns = next(c for c in crep.checks if c.name == "learns")
        assert learns.status == "FAIL"


def _same_checks(a, b) -> None:
    """Two reports' checks: the same names and statuses, and the same numbers to round-off (the
    in-memory run is the Python loop, whose BLAS products on a dense model differ from the
    kernel's by round-off). The slope after the burn-in is left out: check_learns and
    check_learns_summary fit it over different point sets (the full curve, the grid's second
    half in log k), as in test_streamed_summary_equals_the_full_curves."""
    assert [(c.name, c.status) for c in a.checks] == [(c.name, c.status) for c in b.checks]
    for ca, cb in zip(a.checks, b.checks, strict=True):
        for key, va in ca.values.items():
            if key == "slope_after_burn_in":
                continue
            vb = cb.values[key]
            if isinstance(va, (int, float)) and not isinstance(va, bool):
                assert vb == pytest.approx(va, rel=1e-9, abs=1e-9), (ca.name, key)
            elif isinstance(va, (list, tuple)):
                assert vb == pytest.approx(va, rel=1e-9, abs=1e-9), (ca.name, key)
            else:
                assert va == vb, (ca.name, key)


@pytest.mark.parametrize("c", [0.02, 1.0])
def test_a_streamed_linear_claim_equals_the_in_memory_one(c):
    """lsvi-ucb-paper-constant's streamed scales (StreamedLinearRegretClaim): at K <= DENSE_UP_TO
    the grid is every episode, so the streamed checks (compiled kernel, summary) equal the
    in-memory ones (Python loop, (B, K) curves): same statuses, same numbers to round-off."""
    from dataclasses import replace

    from theorylab.validations.claims.linear import LinearScale

    claim = VALIDATIONS.get("lsvi-ucb-paper-constant")
    assert set(claim.streamed) == {"full", "paper"}
    sc = LinearScale(
        episodes=1500, seeds=3, tests=("below-bound", "optimism", "sublinear", "learns")
    )
    small = replace(
        claim, scales={"mem": sc, "str": sc}, streamed=("str",), params={**claim.params, "c": c}
    )
    mem, streamed = small.run("mem").finalize(), small.run("str").finalize()
    assert streamed.config["loop"].startswith("compiled, streamed")
    _same_checks(mem, streamed)
    assert mem.informative_from == streamed.informative_from
    if c == 0.02:  # the estimates leave the cap: optimism is tested, not vacuous
        assert next(x for x in streamed.checks if x.name == "optimism").status != "VACUOUS"


def test_a_streamed_linear_scale_fails_under_its_null_controls():
    from dataclasses import replace

    import theorylab.validations.mutations  # noqa: F401
    from theorylab.validations.claims.linear import LinearScale
    from theorylab.validations.controls import get_control

    claim = VALIDATIONS.get("lsvi-ucb-paper-constant")
    sc = LinearScale(episodes=20_000, seeds=2)  # the claim's tests
    small = replace(claim, scales={"str": sc}, streamed=("str",), params={**claim.params, "c": 0.1})
    rep = small.run("str").finalize()
    assert rep.config["loop"].startswith("compiled, streamed")
    assert next(x for x in rep.checks if x.name == "sublinear").status == "PASS", rep.format()
    for kind in ("frozen", "random"):
        with get_control(kind).applied(small):
            crep = small.run("str").finalize()
        assert crep.config["loop"] == "closed form (summary)"
        assert crep.verdict == "FAIL", crep.format()
        assert next(x for x in crep.checks if x.name == "sublinear").status == "FAIL"
