"""LOOP (seed row 000#37; ``algorithms/average_reward/loop.py``): the radii and the switching
rule pinned to their written formulas, the span-truncated planners against the average-reward
LP (the independent answer), the linear-mixture family, input errors, and the claims with their
controls."""

from __future__ import annotations

import math

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.average_reward import loop
from theorylab.algorithms.planning import average_reward as ar
from theorylab.errors import InvalidMDPError
from theorylab.mdps import make


def ergodic(seed: int, S: int, A: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(S), size=(S, A)), rng.uniform(size=(S, A))


def test_tabular_radius_is_weissman(delta: float = 0.05):
    """L1 radius sqrt(2 (S ln 2 + ln(S A t (t + 1) / delta)) / max(1, N)), written out here."""
    for S, A, t, N in [(3, 2, 1, 0), (3, 2, 10, 1), (6, 2, 1000, 57), (10, 4, 10**6, 12345)]:
        want = math.sqrt(2 * (S * math.log(2) + math.log(S * A * t * (t + 1) / delta)) / max(1, N))
        got = loop.radius_scale() * loop.tabular_radius(S, A, float(t), delta, float(N))
        assert got == pytest.approx(want, rel=1e-14)


def test_mixture_radius_is_ofuls(delta: float = 0.05):
    """OFUL (Abbasi-Yadkori et al. 2011, Thm 2) with lambda = 1, ||theta||_2 <= sqrt(d):
    sqrt(2 ln(1/delta) + d ln(1 + t / lambda)) + sqrt(lambda d)."""
    assert loop.RIDGE == 1.0
    for d, t in [(2, 1), (3, 100), (5, 10**7)]:
        want = math.sqrt(2 * math.log(1 / delta) + d * math.log(1 + t)) + math.sqrt(d)
        got = loop.radius_scale() * loop.mixture_radius(d, float(t), delta, 1.0)
        assert got == pytest.approx(want, rel=1e-14)


def test_switching_rule_is_determinant_doubling():
    assert loop.switch_threshold() == pytest.approx(math.log(2.0), rel=1e-15)
    assert loop.switch_period() == 0  # no clock: the determinant alone
    # the cap: 1 + dim log2(1 + T L / (dim lambda))
    assert loop.switch_cap(6, 10**6, 1.0) == pytest.approx(1 + 6 * math.log2(1 + 10**6 / 6))


def test_log_det_is_numpys():
    rng = np.random.default_rng(3)
    for d in (1, 2, 3, 5):
        X = rng.normal(size=(d + 4, d))
        M = X.T @ X + np.eye(d)
        assert loop.log_det(M, np.zeros((d, d))) == pytest.approx(np.linalg.slogdet(M)[1])


@pytest.mark.parametrize("seed", range(4))
def test_span_truncated_evi_with_zero_radius_is_the_lp_gain(seed):
    """Zero radius and H >= sp(h*): the truncation does not bind at the fixed point, the gain
    bracket [lo, hi] holds g* of the LP."""
    P, R = ergodic(seed, 5, 3)
    star = ar.optimal_gain_bias_lp((P, R))
    for H in (star.span, 2 * star.span, 1e9):
        pol, lo, hi, _ = loop.span_evi_tabular(P, R, np.zeros((5, 3)), H, 1e-11, 10**6)
        assert lo - 1e-9 <= star.gain <= hi + 1e-9 and hi - lo < 1e-9
        assert ar.policy_gain_bias((P, R), pol).gain == pytest.approx(star.gain, abs=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_mixture_planner_with_exact_theta_is_the_lp_gain(seed):
    """beta = 0, theta_hat = theta*: the damped planner solves the mixture model itself."""
    rng = np.random.default_rng(seed)
    dim, S, A = 3, 4, 2
    basis = rng.dirichlet(np.ones(S), size=(dim, S, A))  # (d, S, A, S)
    theta = rng.dirichlet(np.ones(dim))
    P = np.einsum("i,isat->sat", theta, basis)
    R = rng.uniform(size=(S, A))
    star = ar.optimal_gain_bias_lp((P, R))
    _, lo, hi, _ = loop.span_evi_mixture(
        basis, theta, np.eye(dim), 0.0, R, 1e9, 1e-11, 10**6, loop.DAMPING
    )
    assert lo - 1e-9 <= star.gain <= hi + 1e-9


def test_mixture_family_is_the_mixture():
    m = make("riverswim-mixture:S=5,w1=0.5,w2=0.3")
    assert np.allclose(np.einsum("i,isat->sat", m.mixture_theta, m.mixture_basis), m.P)
    assert np.allclose(m.mixture_basis.sum(axis=3), 1.0) and np.allclose(m.P.sum(axis=2), 1.0)
    assert np.allclose(m.mixture_theta, [0.5, 0.3, 0.2])
    assert np.array_equal(m.R, make("riverswim:S=5").R)
    with pytest.raises(InvalidMDPError, match="w1"):
        make("riverswim-mixture:S=5,w1=0.0")
    with pytest.raises(InvalidMDPError, match="S >= 3"):
        make("riverswim-mixture:S=2")


def test_runs_record_switches_within_the_cap():
    res = tl.run("loop", "riverswim:S=4", steps=50_000, seeds=2, span_bound=7.0)
    sw = res.diagnostics["switches"]  # (B, G)
    assert np.all(np.diff(sw, axis=1) >= 0) and np.all(sw[:, -1] <= res.config["switch_cap"])
    assert np.all(sw[:, -1] == np.isfinite(res.diagnostics["switch_start"]).sum(axis=1))
    mix = tl.run("loop-mixture", "riverswim-mixture:S=4", steps=50_000, seeds=1, span_bound=9.0)
    assert mix.diagnostics["switches"][0, -1] <= 1 + 3 * math.log2(1 + 50_000 * 3 / 3)
    one = tl.run("loop", "riverswim:S=4", steps=2000, seeds=[1], span_bound=7.0)
    both = tl.run("loop", "riverswim:S=4", steps=2000, seeds=[0, 1], span_bound=7.0)
    assert np.array_equal(one.regret[0], both.regret[1])


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="span_bound must be a positive finite"):
        tl.run("loop", "riverswim:S=3", steps=10)
    with pytest.raises(ValueError, match="span_bound must be a positive finite"):
        tl.run("loop", "riverswim:S=3", steps=10, span_bound=-1.0)
    with pytest.raises(ValueError, match="delta must be in"):
        tl.run("loop", "riverswim:S=3", steps=10, span_bound=3.0, delta=1.5)
    with pytest.raises(ValueError, match="carries no mixture_basis"):
        tl.run("loop-mixture", "riverswim:S=3", steps=10, span_bound=3.0)


@pytest.mark.slow  # test_validations runs both claims and their controls at quick scale in CI
@pytest.mark.parametrize(
    "name, controls",
    [
        (
            "loop-regret-span-switches",
            {"loop-zero-radius", "loop-periodic-switch", "loop-uniform-null"},
        ),
        (
            "loop-mixture-regret",
            {"loop-mixture-zero-radius", "loop-periodic-switch", "loop-uniform-null"},
        ),
    ],
)
def test_loop_claims_pass_and_their_controls_fail(name, controls):
    from theorylab.validations.registry import validate

    rep = validate(name, "quick")
    assert rep.verdict == "PASS", [c.detail for c in rep.checks]
    verdicts = {c["control"]: c["verdict"] for c in rep.controls}
    assert verdicts == dict.fromkeys(controls, "FAIL")
