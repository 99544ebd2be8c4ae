"""Risk plotting, the risk benchmark and the risk claims' registration (their quick scales run in
tests/test_validations.py with every other registered claim)."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.algorithms.planning import backward_induction
from theorylab.algorithms.risk import return_distribution
from theorylab.figures import safe_risky_figure
from theorylab.mdps import make
from theorylab.plotting import plot_cvar_regret, plot_return_distribution, save_figure

PNG = b"\x89PNG\r\n\x1a\n"
RISK_CLAIMS = {
    "cvar-identities",
    "cvar-augmented-equals-brute-force",
    "cvar-optimal-differs-from-risk-neutral",
    "icvar-rm-regret",
    "cvar-ucbvi-regret",
    "icvar-regret-grows-as-alpha-shrinks-tuned-bonus",
}


def test_plot_return_distribution_marks_var_cvar_and_mean(tmp_path):
    mdp = make("cvar-safe-risky:H=3")
    dist = return_distribution(mdp, backward_induction(mdp).policy)  # RISKY: 0 w.p. .2, 2 w.p. .8
    ax = plot_return_distribution(dist, tau=0.25)
    marks = {line.get_gid(): line.get_xdata()[0] for line in ax.get_lines()}
    assert set(marks) == {"var", "cvar", "mean"}
    assert marks["var"] == pytest.approx(2.0)
    assert marks["cvar"] == pytest.approx(0.4)
    assert marks["mean"] == pytest.approx(1.6)
    labels = ax.get_legend_handles_labels()[1]
    assert any(lab.startswith("CVaR_0.25 = 0.4") for lab in labels)
    assert any(lab.startswith("VaR_0.25 = 2") for lab in labels)
    # bars: two atoms drawn twice (full mass, then the tau-tail: 0.2 at 0 and 0.05 at 2)
    heights = sorted(round(p.get_height(), 12) for p in ax.patches)
    assert heights == [0.05, 0.2, 0.2, 0.8]
    out = tmp_path / "dist.png"
    save_figure(ax, out)
    assert out.read_bytes()[:8] == PNG and out.stat().st_size > 5000


def test_plot_return_distribution_of_a_batch_row():
    mdp = make("cvar-safe-risky:H=3")
    pols = np.stack([np.zeros((3, 4), int), np.ones((3, 4), int)])  # RISKY, SAFE
    ax = plot_return_distribution(return_distribution(mdp, pols), tau=0.25, row=1)
    marks = {line.get_gid(): line.get_xdata()[0] for line in ax.get_lines()}
    assert marks == pytest.approx({"var": 1.0, "cvar": 1.0, "mean": 1.0})


def test_safe_risky_figure_and_regret_helper(tmp_path):
    (path,) = safe_risky_figure(tmp_path / "fig.png")
    assert path.read_bytes()[:8] == PNG
    ax = plot_cvar_regret({"a": np.cumsum(np.ones((3, 20)), axis=1)}, objective="CVaR_0.25")
    assert ax.get_ylabel() == "cumulative CVaR_0.25 regret"


def test_bench_risk_quick_rows_have_the_documented_keys():
    from theorylab.bench.risk import (
        COMMON_KEYS,
        PLANNING_KEYS,
        UCBVI_KEYS,
        bench_risk,
        format_table,
    )

    rows = bench_risk(quick=True)
    kinds = {r["kind"] for r in rows}
    assert kinds == {"planning", "cvar-ucbvi"}
    for r in rows:
        extra = PLANNING_KEYS if r["kind"] == "planning" else UCBVI_KEYS
        assert set(COMMON_KEYS) | set(extra) == set(r), r
        assert r["seconds"] > 0
    plan = [r for r in rows if r["kind"] == "planning"]
    assert len(plan) >= 2 and len({r["value"] for r in plan}) == 1  # finer grid, same CVaR*
    assert plan[0]["grid_points"] < plan[1]["grid_points"]
    ucb = [r for r in rows if r["kind"] == "cvar-ucbvi"]
    assert ucb[0]["seeds"] == 32
    assert ucb[0]["seed_episodes_per_s"] == pytest.approx(
        ucb[0]["seeds"] * ucb[0]["episodes"] / ucb[0]["seconds"]
    )
    table = format_table(rows)
    assert "us / grid point" in table and "seed-episodes / s" in table


def test_risk_claims_are_registered_with_quick_and_full_scales():
    from theorylab.validations import list_validations
    from theorylab.validations.registry import VALIDATIONS

    assert RISK_CLAIMS <= set(list_validations())
    for name in RISK_CLAIMS:
        v = VALIDATIONS.get(name)
        assert {"quick", "full"} <= set(v.scales) and v.statement


def test_exact_claim_detects_a_wrong_identity(monkeypatch):
    """The identity claim fails when CVaR_1 is not the mean (it can fail)."""
    from theorylab.algorithms.risk.return_distribution import ReturnDistribution
    from theorylab.validations.registry import VALIDATIONS

    real = ReturnDistribution.cvar
    monkeypatch.setattr(
        ReturnDistribution, "cvar", lambda self, tau: real(self, tau) - (tau == 1.0) * 1e-9
    )
    report = VALIDATIONS.get("cvar-identities").run("quick")
    assert not report.passed
    failed = [c.name for c in report.checks if not c.passed]
    assert "cvar(tau=1) == mean" in failed and "cvar <= mean" not in failed
