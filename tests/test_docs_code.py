"""Every Python block of the tutorials and algorithm cards runs, and prints what the page shows.

One test per page: its blocks run in order in one namespace (theorylab.markdown_code explains
the conventions: doctest blocks, and output blocks ``text title="Output"`` compared with what
the block before them printed). Pages run in a temporary directory, so the figures they write
land there; ``python docs/make_figures.py`` runs the same blocks in the repository root to
regenerate the figures of the site.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from theorylab.markdown_code import blocks, executed_pages, run_page, steps

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [*executed_pages(DOCS), ROOT / "README.md"]


def test_the_executed_pages_are_found():
    names = {p.relative_to(ROOT).as_posix() for p in PAGES}
    assert "docs/tutorials/verify-a-regret-bound.md" in names
    assert "docs/algorithms/ucbvi.md" in names and "README.md" in names


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_page_code_runs_and_prints_what_the_page_shows(page, tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    run_page(page, tmp_path)


def test_an_output_block_that_drifted_fails(tmp_path):
    page = tmp_path / "page.md"
    page.write_text('```python\nx = 2 + 2\nprint(x)\n```\n\n```text title="Output"\n5\n```\n')
    with pytest.raises(AssertionError, match="does not match"):
        run_page(page, tmp_path)
    page.write_text("```python\n>>> 2 + 2\n5\n\n```\n")
    with pytest.raises(AssertionError, match="doctest failed"):
        run_page(page, tmp_path)
    page.write_text("```python\nraise RuntimeError('boom')\n```\n")
    with pytest.raises(AssertionError, match=r"page.md:1: the block raised RuntimeError: boom"):
        run_page(page, tmp_path)


def test_blocks_share_a_namespace_and_ellipsis_matches(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n```python\ny = 21\n```\n\n"
        "```python\nprint(y * 2, 'seconds: 0.123')\n```\n"
        '```text title="Output"\n42 seconds: ...\n```\n'
        "```console\n$ not run\n```\n"
    )
    assert [b.info for b in blocks(page)] == ["python", "python", 'text title="Output"', "console"]
    assert [s.expected is not None for s in steps(page)] == [False, True]
    assert run_page(page, tmp_path) == ["", "42 seconds: 0.123\n"]
