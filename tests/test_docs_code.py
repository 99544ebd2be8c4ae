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

from theorylab.markdown_code import (
    BlockFailed,
    blocks,
    check_command,
    commands,
    executed_pages,
    run_command,
    run_page,
    steps,
    write_named_files,
)

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [*executed_pages(DOCS), ROOT / "README.md"]
ALL_PAGES = sorted([ROOT / "README.md", *DOCS.rglob("*.md")])
CONSOLE = [
    (page, c) for page in ALL_PAGES for c in commands(page) if c.argv and c.argv[0] == "theorylab"
]
SHOWN = [(page, c) for page, c in CONSOLE if c.expected is not None]


def _id(pair) -> str:
    page, c = pair
    return f"{page.relative_to(ROOT).as_posix()}:{c.block.line}:{' '.join(c.argv[1:3])}"


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


def test_the_console_commands_are_found():
    assert len(CONSOLE) >= 30
    shown = {(p.name, c.argv[1]) for p, c in SHOWN}
    assert ("verify-a-regret-bound.md", "solve") in shown and ("sweeps.md", "sweep") in shown


@pytest.mark.parametrize("pair", CONSOLE, ids=[_id(p) for p in CONSOLE])
def test_every_console_command_parses_and_names_what_exists(pair):
    check_command(pair[1])


@pytest.mark.parametrize("pair", SHOWN, ids=[_id(p) for p in SHOWN])
def test_console_commands_print_the_output_the_page_shows(pair, tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    page, command = pair
    (tmp_path / "docs" / "figures").mkdir(parents=True)
    write_named_files(page, tmp_path)
    run_command(command, tmp_path)


def test_a_drifted_console_command_fails(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "```bash\ntheorylab run ucbvi-bernstein riverswim --episodez 10\n"
        "theorylab run nosuch-algo riverswim --episodes 10\n"
        "theorylab validate nosuch-claim --scale quick\n"
        "theorylab solve nosuch-mdp:S=3\n```\n"
        "```console\n$ theorylab solve riverswim:S=3,H=2\nV*(mu0)  42\n```\n"
    )
    cmds = commands(page)
    assert [c.expected for c in cmds] == [None, None, None, None, "V*(mu0)  42\n"]
    names = ["--episodez", "nosuch-algo", "nosuch-claim", "nosuch-mdp"]
    for c, match in zip(cmds[:4], names, strict=True):
        with pytest.raises(BlockFailed, match=match):
            check_command(c)
    check_command(cmds[4])
    with pytest.raises(BlockFailed, match="does not match the page"):
        run_command(cmds[4], tmp_path)


def test_a_named_toml_block_is_written_for_the_commands(tmp_path):
    page = tmp_path / "page.md"
    page.write_text('```toml\n# grid.toml\nepisodes = 5\n```\n```toml\nnot = "named"\n```\n')
    assert write_named_files(page, tmp_path) == [tmp_path / "grid.toml"]
    assert (tmp_path / "grid.toml").read_text() == "# grid.toml\nepisodes = 5\n"
