"""Regret figures: bands contain the mean, bounds are labelled, files are valid, no global state."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import matplotlib
import numpy as np
import pytest
from matplotlib.collections import PolyCollection

import theorylab.plotting as plotting
from theorylab.plotting import plot_loglog, plot_regret, save_figure
from theorylab.stats import loglog_slope

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def curves() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    K = 200
    k = np.arange(1, K + 1)
    # (B, K) cumulative regret growing like sqrt(k), with per-seed noise
    fast = (
        3 * np.sqrt(k) * rng.lognormal(0, 0.2, size=(8, 1))
        + rng.gamma(1, size=(8, K)).cumsum(1) * 0.01
    )
    slow = 5 * np.sqrt(k) * rng.lognormal(0, 0.2, size=(4, 1))
    return {"UCBVI-H": fast, "UCBVI-B": slow}


def _band_contains_line(ax) -> None:
    polys = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert polys, "no band drawn"
    mean_lines = [ln for ln in ax.get_lines() if "mean of" in ln.get_label()]
    assert len(mean_lines) == len(polys)
    for poly in polys:
        color = matplotlib.colors.to_hex(poly.get_facecolor()[0], keep_alpha=False)
        line = next(ln for ln in mean_lines if matplotlib.colors.to_hex(ln.get_color()) == color)
        verts = poly.get_paths()[0].vertices  # (x, lo) forward then (x, hi) back
        for xv, yv in zip(line.get_xdata(), line.get_ydata(), strict=True):
            at = verts[np.isclose(verts[:, 0], xv), 1]
            assert at.min() - 1e-9 <= yv <= at.max() + 1e-9


def test_plot_regret_draws_bands_bounds_and_labels(curves):
    K = 200
    bound = 40 * np.sqrt(np.arange(1, K + 1))
    ax = plot_regret(curves, {"Thm 1: 40 sqrt(K)": bound}, title="RiverSwim")
    assert ax.get_xlabel() == "episode k" and ax.get_ylabel() == "cumulative regret"
    assert ax.get_title() == "RiverSwim"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "UCBVI-H (mean of 8 seeds, 95% bootstrap CI)" in labels
    assert "Thm 1: 40 sqrt(K)" in labels
    bound_line = next(ln for ln in ax.get_lines() if ln.get_label() == "Thm 1: 40 sqrt(K)")
    assert bound_line.get_linestyle() == "--"
    np.testing.assert_allclose(bound_line.get_ydata(), bound)
    mean_line = ax.get_lines()[0]
    np.testing.assert_allclose(mean_line.get_ydata(), curves["UCBVI-H"].mean(axis=0))
    _band_contains_line(ax)


@pytest.mark.parametrize("mode", [True, "UCBVI-B", "both"])
def test_rescaled_bound_meets_the_curve_at_the_end(curves, mode):
    bound = 1000 * np.sqrt(np.arange(1, 201))
    ax = plot_regret(curves, {"Thm 1": bound}, rescale_bound=mode)
    target = "UCBVI-B" if mode == "UCBVI-B" else "UCBVI-H"
    rescaled = [ln for ln in ax.get_lines() if "rescaled" in ln.get_label()]
    assert len(rescaled) == 1
    assert rescaled[0].get_label().startswith("Thm 1, rescaled ×")
    assert rescaled[0].get_ydata()[-1] == pytest.approx(curves[target].mean(axis=0)[-1])
    raw = [ln for ln in ax.get_lines() if ln.get_label() == "Thm 1"]
    assert len(raw) == (1 if mode == "both" else 0)


def test_plot_regret_rejects_mismatches(curves):
    with pytest.raises(ValueError, match="shape"):
        plot_regret(curves, {"b": np.ones(10)})
    with pytest.raises(ValueError, match="names no curve"):
        plot_regret(curves, {"b": np.ones(200)}, rescale_bound="nope")
    with pytest.raises(ValueError, match="at least one"):
        plot_regret({})


def test_single_seed_curve_has_no_band():
    ax = plot_regret({"one": np.arange(1.0, 11.0)})
    assert not [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert ax.get_legend().get_texts()[0].get_text() == "one (1 seed)"


def test_plot_loglog_shows_fits_and_the_bound_rate(curves):
    x = np.arange(1.0, 201.0)
    fits = {label: loglog_slope(x, c) for label, c in curves.items()}
    ax = plot_loglog(x, curves, fits, bound_exponent=0.5)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    fit = fits["UCBVI-H"]
    assert f"UCBVI-H fit: slope {fit.slope:.3f} [{fit.ci_low:.3f}, {fit.ci_high:.3f}] (95% CI)" in (
        labels
    )
    assert any(lbl.startswith("$K^{1/2}$ (bound's rate") for lbl in labels)
    _band_contains_line(ax)
    # fits=None fits every curve itself
    auto = plot_loglog(x, curves)
    assert sum("fit: slope" in t.get_text() for t in auto.get_legend().get_texts()) == 2


def test_plot_loglog_for_a_parameter_sweep():
    S = np.array([2.0, 4.0, 8.0, 16.0])
    final = S**2 * np.random.default_rng(1).lognormal(0, 0.1, size=(10, 4))
    fits = {"UCBVI": loglog_slope(S, final, fit_range=(0.0, 1.0))}
    ax = plot_loglog(S, {"UCBVI": final}, fits, bound_exponent=2, x_name="S", xlabel="S")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(lbl.startswith("$S^{2}$ ") for lbl in labels)
    assert ax.get_xlabel() == "S"


def test_save_png_and_svg(tmp_path, curves):
    ax = plot_regret(curves)
    written = save_figure(ax.figure, [tmp_path / "fig.png", tmp_path / "fig.svg"])
    assert written == [tmp_path / "fig.png", tmp_path / "fig.svg"]
    assert (tmp_path / "fig.png").read_bytes()[:8] == PNG_MAGIC
    root = ET.parse(tmp_path / "fig.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.png", "fig.svg"]  # no temp file
    # SVG output is reproducible (no date, fixed id salt): the same figure built twice
    save_figure(plot_regret(curves), tmp_path / "a.svg")
    save_figure(plot_regret(curves), tmp_path / "b.svg")
    assert (tmp_path / "a.svg").read_bytes() == (tmp_path / "b.svg").read_bytes()
    with pytest.raises(ValueError, match="format"):
        save_figure(ax, tmp_path / "fig.jpeg2000")


def test_save_figure_is_atomic(tmp_path, curves, monkeypatch):
    path = tmp_path / "fig.png"
    ax = plot_regret(curves)
    save_figure(ax, path)
    old = path.read_bytes()

    def half_then_crash(self, fh, **kwargs):
        fh.write(PNG_MAGIC + b"half a picture")
        raise RuntimeError("renderer crashed")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", half_then_crash)
    with pytest.raises(RuntimeError, match="renderer crashed"):
        save_figure(ax, path)
    assert path.read_bytes() == old
    assert [p.name for p in tmp_path.iterdir()] == ["fig.png"]


def test_no_global_matplotlib_state_changes(tmp_path, curves):
    import matplotlib.pyplot as plt

    rc_before = dict(matplotlib.rcParams)
    backend_before = matplotlib.get_backend()
    figs_before = plt.get_fignums()
    ax = plot_regret(curves, {"b": np.ones(200)}, rescale_bound=True)
    plot_loglog(np.arange(1.0, 201.0), curves, bound_exponent=0.5)
    save_figure(ax, tmp_path / "x.svg")
    assert plt.get_fignums() == figs_before  # nothing registered with pyplot
    assert matplotlib.get_backend() == backend_before
    assert dict(matplotlib.rcParams) == rc_before


def test_new_axes_uses_agg():
    ax = plotting.new_axes()
    assert type(ax.figure.canvas).__name__ == "FigureCanvasAgg"


def test_new_panels_share_one_agg_figure():
    left, right = plotting.new_panels(2, panel_size=(3.0, 2.0))
    assert left.figure is right.figure
    assert type(left.figure.canvas).__name__ == "FigureCanvasAgg"
    assert tuple(left.figure.get_size_inches()) == (6.0, 2.0)
