"""Progress reports (``theorylab.progress``): lines that fit the width, one rate, no duplicate
final line, rates that count only this process's work and leave compile time out, and a
readable rate for slow units (cells/s of a sweep).

Each report is captured at 80 and 160 columns (``COLUMNS``), piped (sparse lines) and as a
terminal bar (carriage returns), with the compiled run's real label.
"""

from __future__ import annotations

import io
import re
import time

import pytest

from theorylab.progress import Progress, progress_bar, rate_text, shorten

LABEL = "ucbvi-hoeffding on random:S=5,A=3,H=5,seed=11 (compiled)"  # the run


def _frames(text: str) -> list[str]:
    """What a terminal shows after each redraw: the text between carriage returns."""
    return [f for chunk in text.split("\n") for f in chunk.split("\r") if f.strip()]


def _run(width: int, terminal: bool, total=10_000_000, step=100_000, scale=8, initial=0):
    buf = io.StringIO()
    bar = Progress(
        total, LABEL, "ep", scale=scale, rate_unit="seed-ep", terminal=terminal, stream=buf,
        width=width, min_interval=0.0, redraw_interval=0.0, initial=initial,
    )  # fmt: skip
    bar.restart(initial)
    if not terminal:  # piped: no second start line when nothing was resumed
        assert len(buf.getvalue().splitlines()) == 1
    while bar.n < total:
        time.sleep(0.0005)
        bar.update(min(step, total - bar.n))
    bar.close()
    return buf.getvalue()


@pytest.mark.parametrize("width", [80, 160])
@pytest.mark.parametrize("terminal", [False, True])
def test_every_line_fits_and_shows_percent_count_and_one_rate(width, terminal):
    out = _run(width, terminal)
    frames = _frames(out) if terminal else out.splitlines()
    assert frames
    for line in frames:
        limit = width - 1 if terminal else width
        assert len(line.rstrip()) <= limit, (len(line), line)
        assert "%" in line
        assert "/10M ep" in line
    last = frames[-1]
    assert "100%" in last
    assert len(re.findall(r"/s\b", last)) == 1  # one rate, in seed-episodes/s
    assert "seed-ep/s" in last
    if width == 160:
        assert LABEL in last  # room for the whole label
    else:
        assert "..." in last and last.startswith("ucbvi-hoeffding")  # shortened, not cut off


def test_piped_output_has_no_duplicate_final_line():
    out = _run(80, terminal=False)
    lines = out.splitlines()
    finals = [ln for ln in lines if "(100%)" in ln]
    assert len(finals) == 1, lines
    assert 2 <= len(lines) <= 12
    assert "\r" not in out


def test_close_prints_the_final_count_when_the_last_line_did_not():
    buf = io.StringIO()
    bar = Progress(100, "run", "ep", stream=buf, width=80, min_interval=3600.0)
    bar.update(95)  # no line: within min_interval
    bar.close()
    lines = buf.getvalue().splitlines()
    assert len(lines) == 2 and "95/100 ep (95%)" in lines[-1]


def test_a_resumed_run_counts_only_the_work_of_this_process():
    # 2.9M episodes come from a checkpoint; this process runs 100 episodes in >= 0.05 s:
    # the rate must be about 100 x 8 / 0.05 = 16,000 seed-ep/s at most, not 29M x 8 / 0.05
    buf = io.StringIO()
    bar = Progress(10_000_000, LABEL, "ep", scale=8, rate_unit="seed-ep", stream=buf, width=80,
                   min_interval=0.0, note="compiling")  # fmt: skip
    time.sleep(0.2)  # compile time: not in the rate either
    bar.restart(2_900_000)
    t0 = time.perf_counter()
    time.sleep(0.05)
    bar.update(100)
    elapsed = time.perf_counter() - t0
    rate = bar.rate()
    assert rate is not None and rate <= 100 * 8 / elapsed * 1.0001
    assert rate >= 100 * 8 / (elapsed + 0.2)  # the clock restarted after the compile
    bar.close()
    lines = buf.getvalue().splitlines()
    assert "compiling" in lines[0] and "/s" not in lines[0]
    assert lines[1].split(": ")[1].startswith("2.9M/10M ep (29%)")
    assert "seed-ep/s" not in lines[1]  # nothing done yet in this process: no rate
    assert "M seed-ep/s" not in lines[-1] and "seed-ep/s" in lines[-1]


def test_slow_units_get_a_nonzero_rate():
    assert rate_text(0.3125, "cells") == "0.312 cells/s"
    assert rate_text(2.0, "cells") == "2 cells/s"
    assert rate_text(1_234_567.0, "seed-ep") == "1.23M seed-ep/s"
    buf = io.StringIO()
    bar = Progress(3, "sweep runs/x", "cells", stream=buf, width=80, min_interval=0.0)
    time.sleep(0.05)
    bar.update(1)
    bar.close()
    assert re.search(r"[1-9][0-9.]* cells/s", buf.getvalue().splitlines()[-1])


def test_sweep_reports_cells_per_second_of_its_own_cells(tmp_path, monkeypatch, capsys):
    # two cells stored already: the rate counts the one computed now
    from theorylab import progress

    made = []
    real = progress.Progress

    def spy(*a, **kw):
        made.append(real(*a, **kw, stream=io.StringIO(), width=80, min_interval=0.0))
        return made[-1]

    monkeypatch.setattr(progress, "Progress", spy)
    bar = progress_bar(3, "sweep x", "cells", initial=2)
    assert bar.initial == 2 and bar.rate() is None
    time.sleep(0.02)
    bar.update(1)
    assert 0 < bar.rate() <= 1 / 0.02


def test_shorten_keeps_both_ends():
    assert shorten("abcdefghij", 7) == "abc...j"
    assert shorten("short", 10) == "short"


@pytest.mark.parametrize("width", [80, 160])
def test_cli_run_piped_progress_fits_and_reports_compile_apart(width, monkeypatch, capsys):
    from theorylab.cli import main

    monkeypatch.setenv("COLUMNS", str(width))
    args = ["run", "ucbvi-hoeffding", "random:S=5,A=3,H=5,seed=11", "-K", "30000", "-B", "2",
            "--loop", "compiled", "--segment", "5000"]  # fmt: skip
    assert main(args) == 0
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.splitlines() if "(compiled)" in ln]
    assert lines and "\r" not in captured.err
    assert all(len(ln) <= width for ln in lines), lines
    assert "compiling" in lines[0]
    assert sum("(100%)" in ln for ln in lines) == 1 and "(100%)" in lines[-1]
    assert all(ln.count("/s") <= 1 for ln in lines) and "seed-ep/s" in lines[-1]
    compile_line = [ln for ln in captured.out.splitlines() if ln.startswith("compile: ")]
    assert len(compile_line) == 1 and "not in the rate" in compile_line[0]


def test_compile_time_is_recorded_apart_from_the_rate():
    import theorylab as tl

    res = tl.run("ucbvi-hoeffding", "riverswim:S=4,H=4", episodes=3000, seeds=2,
                 loop="compiled")  # fmt: skip
    assert res.config["compile_seconds"] > 0
    assert res.config["episodes_this_run"] == 3000
    assert res.episodes_per_second == pytest.approx(2 * 3000 / res.wall_seconds)


def test_demo_reports_compile_seconds_in_its_own_column(tmp_path, capsys):
    from theorylab.demo import demo

    assert demo(out=str(tmp_path / "r.png"), episodes=60, seeds=2, progress=False) == 0
    header = capsys.readouterr().out.splitlines()[1]
    assert "seed-episodes/s" in header and "compile s" in header
