"""The shared benchmark table renderer (theorylab.table)."""

import pytest

from theorylab.table import Column, Span, left, render, right


def test_alignment_and_widths_from_the_widest_cell_or_header():
    text = render([left("name"), right("ms")], [["numba-fused", "1.5"], ["np", "12.25"]])
    assert text.splitlines() == [
        "name            ms",
        "-----------  -----",
        "numba-fused    1.5",
        "np           12.25",
    ]


def test_a_header_wider_than_every_cell_sets_the_width():
    text = render([right("seed-ep/s"), left("backend"), right("B")], [["7", "np", "32"]])
    head, rule, row = text.splitlines()
    assert rule == "---------  -------  --"
    assert row == "        7  np       32"
    assert head == "seed-ep/s  backend   B"


def test_free_text_row_starts_under_its_column_and_does_not_widen_the_table():
    columns = [left("mdp"), right("B"), right("fit s"), right("data s")]
    body = [["chain", "32", "0.125", "1.00"], Span(["riverswim", "1024"], "skipped: needs 8 GiB")]
    lines = render(columns, body).splitlines()
    assert lines[1] == "---------  ----  -----  ------"  # the span's text widens nothing
    assert lines[3] == "riverswim  1024  skipped: needs 8 GiB"
    assert lines[3].index("skipped") == lines[0].index("fit s")
    # with no prefix the text starts at the left margin
    assert render([left("a"), left("b")], [Span([], "nothing ran")]).splitlines()[2] == (
        "nothing ran"
    )


def test_notes_follow_the_table_in_order():
    lines = render([left("x")], [["1"]], notes=["reference: 148 s", "(ms per episode)"])
    assert lines.splitlines() == ["x", "-", "1", "reference: 148 s", "(ms per episode)"]


def test_empty_body_gives_header_and_rule_only():
    assert render([left("kernel"), right("ms")], []) == "kernel  ms\n------  --"


def test_no_trailing_spaces_and_gap_is_configurable():
    text = render([right("n"), left("label")], [["1", "a"], ["22", "bbbbb"]], gap=" | ")
    assert all(line == line.rstrip() for line in text.splitlines())
    assert text.splitlines()[2] == " 1 | a"


def test_markdown_pads_cells_marks_right_alignment_and_escapes_pipes():
    text = render(
        [left("problem"), right("eta")],
        [["a|b", "0.25"], Span(["c"], "skipped")],
        notes=["note"],
        markdown=True,
    )
    assert text.splitlines() == [
        "| problem |  eta |",
        "| ------- | ---: |",
        "| a\\|b    | 0.25 |",
        "| c       | skipped |",
        "",
        "note",
    ]


def test_malformed_rows_are_refused():
    cols = [left("a"), right("b")]
    with pytest.raises(ValueError, match="expected 2 cells"):
        render(cols, [["only one"]])
    with pytest.raises(ValueError, match="expected 2 cells"):
        render(cols, ["ab"])  # a bare string is not a row of cells
    with pytest.raises(ValueError, match="fewer cells"):
        render(cols, [Span(["x", "y"], "text")])
    with pytest.raises(TypeError, match="formatted str"):
        render(cols, [["x", 1.5]])
    with pytest.raises(ValueError, match="align"):
        Column("a", "centre")
    with pytest.raises(ValueError, match="at least one column"):
        render([], [])
