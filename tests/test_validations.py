"""Every registered claim passes at its quick scale (CI) and at its full scale (``-m slow``).

A claim failing here is information about the algorithm, the constants or the regime: read the
report (``theorylab validate NAME --scale full``) before changing anything.
"""

from __future__ import annotations

import json

import pytest

from theorylab.cli import main
from theorylab.validations import list_validations, validate

NAMES = list_validations()


def test_claims_are_registered():
    assert {
        "ucbvi-hoeffding-riverswim",
        "ucbvi-bernstein-riverswim",
        "greedy-linear-riverswim",
        "bernstein-beats-hoeffding-riverswim",
    } <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_claim_holds_at_quick_scale(name):
    report = validate(name, scale="quick")
    assert report.passed, report.format()


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_claim_holds_at_full_scale(name):
    report = validate(name, scale="full")
    assert report.passed, report.format()


def test_validate_cli_writes_the_report_json_and_plot(tmp_path):
    out, fig = tmp_path / "report.json", tmp_path / "claim.png"
    rc = main(
        [
            "validate",
            "ucbvi-hoeffding-riverswim",
            "--scale",
            "quick",
            "--no-progress",
            "--json",
            str(out),
            "--plot",
            str(fig),
        ]
    )
    assert rc == 0
    report = json.loads(out.read_text())
    for key in ("name", "passed", "slope", "slope_ci", "bound_exponent", "violation_rate"):
        assert key in report
    assert report["passed"] is True and report["bound_exponent"] == 0.5
    assert report["violation_rate"] == 0.0 and len(report["slope_ci"]) == 2
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_validate_cli_rejects_an_unknown_name(capsys):
    assert main(["validate", "no-such-claim", "--no-progress"]) == 2
    assert "unknown validation 'no-such-claim'; available:" in capsys.readouterr().err
