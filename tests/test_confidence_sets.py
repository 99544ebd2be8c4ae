"""The two-sided confidence-set claims (validations/claims/confidence_sets.py): a shrunk radius
fails coverage, an inflated one fails size, and the radius formulas written in the claims agree
with the library on the paper's own numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from theorylab.validations.controls import get_control
from theorylab.validations.registry import VALIDATIONS


def _statuses(claim_name: str, control: str) -> dict[str, str]:
    import theorylab.validations.mutations  # noqa: F401  (registers the mutations)

    claim = VALIDATIONS.get(claim_name)
    with get_control(control).applied(claim):
        rep = claim.run("quick")
    out: dict[str, str] = {}
    for c in rep.checks:  # one status per kind of check: FAIL if any instance fails
        kind = c.name.split(" (")[0]
        out[kind] = "FAIL" if c.status == "FAIL" or out.get(kind) == "FAIL" else c.status
    return out


@pytest.mark.parametrize(
    ("claim", "control", "failing"),
    [
        ("zjj-mle-radius-coverage", "zjj-radius-gamma-inverted", "coverage"),
        ("zjj-mle-radius-coverage", "zjj-radius-log-dropped", "size"),
        ("oful-ellipsoid-coverage", "oful-radius-halved", "coverage"),
        ("oful-ellipsoid-coverage", "oful-noise-one", "size"),
        ("dueling-glm-set-coverage", "dueling-radius-without-kappa", "coverage"),
        ("dueling-glm-set-coverage", "dueling-kappa-at-h", "size"),
        ("p2r-version-space-confident", "p2r-no-confident-branch", "confident-branch-fires"),
        ("p2r-version-space-confident", "p2r-no-confident-branch", "queries-within-class-bound"),
    ],
)
def test_shrunk_radius_fails_coverage_inflated_fails_size(claim, control, failing):
    st = _statuses(claim, control)
    assert st[failing] == "FAIL", st
    if failing == "size":  # an inflated set still covers: only its size gives it away
        assert st["coverage"] == "PASS", st


def test_claim_formulas_match_hand_values():
    from theorylab.validations.claims.confidence_sets import (
        oful_theorem2_radius,
        zjj_lemma31_radius,
    )

    # L B = 1: gamma = 1 / (2 + e^-1 + e) = 0.19661193...; d = 3, delta = 0.1, n = 100
    g = 0.19661193324148185
    assert zjj_lemma31_radius(100, 3, 0.1, 0.0, 1.0, 1.0) == pytest.approx(
        math.sqrt((3 + math.log(10)) / (g * g * 100)), rel=1e-12
    )
    # V = 2 I (d = 2, lambda = 1): log det V^(1/2) = log 2; R = 1/2, S = 1
    V = 2.0 * np.eye(2)[None]
    want = 0.5 * math.sqrt(2 * (math.log(2.0) + math.log(10.0))) + 1.0
    assert oful_theorem2_radius(V, 0.5, 0.1, 1.0, 1.0)[0] == pytest.approx(want, rel=1e-12)


def test_zjj_claim_evaluates_the_bound_independently():
    """Before issue 26 the claim read the module's mle_radius on both sides, so an inflated
    radius passed it; now its bound-formula check fails."""
    st = _statuses("zjj-greedy-fails-pessimism-bounded", "zjj-radius-log-dropped")
    assert st["bound-formula"] == "FAIL", st


def test_pr_lsvi_query_rule_replay_catches_a_misplaced_square():
    """Issue 26: the elliptical count held for any rule that asks less; the replay of eq. (2)
    does not: 0 mismatches for the registered rule, many under the squared-width mutation."""
    import theorylab.validations.mutations  # noqa: F401
    from theorylab.mdps import make
    from theorylab.validations.claims.pr_lsvi import MDP, query_rule_mismatches

    bad, total, asked = query_rule_mismatches(make(MDP), 100, 2, 0.1778, 0)
    assert bad == 0 and asked > 0 and total == 2 * 99
    with get_control("pr-lsvi-threshold-squared").applied(None):
        bad, _, _ = query_rule_mismatches(make(MDP), 100, 2, 0.1778, 0)
    assert bad > 10
