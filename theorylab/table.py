"""One plain-text table renderer (ground floor): the CLI, the demo and the benchmarks use it.

Each ``theorylab.bench`` module formats its own cells (number formats, units, column order) and
hands them here; this module only lays them out. Widths come from the content: a column is as
wide as its header or its widest cell, whichever is wider. A table is a header line, a line of
dashes (one run per column), then one line per row; columns are separated by ``gap``.

A row is either one string per column, or a :class:`Span`: a prefix of cells for the first
columns and then one free-text line (``"skipped: needs 8 GiB"``, ``"failed: ..."``) that starts
where the next column starts and runs past the remaining columns without widening them.

``notes`` are lines printed after the table (references, units, footnotes). ``markdown=True``
renders the same table as a GitHub-flavoured Markdown pipe table (right-aligned columns get a
``---:`` delimiter; ``|`` in a cell is escaped), with the notes after a blank line so that they
do not join the table.

Example::

    >>> print(render([left("name"), right("ms")], [["numba", "1.25"], Span(["torch"], "skipped")]))
    name     ms
    -----  ----
    numba  1.25
    torch  skipped
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

Align = Literal["left", "right"]

__all__ = ["Align", "Column", "Span", "left", "render", "right"]


@dataclass(frozen=True)
class Column:
    """A column: its header and how its cells (and the header) are aligned."""

    header: str
    align: Align = "right"

    def __post_init__(self) -> None:
        if self.align not in ("left", "right"):
            raise ValueError(f"align must be 'left' or 'right', not {self.align!r}")


def left(header: str) -> Column:
    """A left-aligned column (names, labels)."""
    return Column(header, "left")


def right(header: str) -> Column:
    """A right-aligned column (numbers)."""
    return Column(header, "right")


@dataclass(frozen=True)
class Span:
    """A free-text row: ``cells`` fill the first ``len(cells)`` columns as usual, then ``text``
    starts where the next column starts and spans the rest of the table (it does not count
    towards any column's width)."""

    cells: tuple[str, ...]
    text: str

    def __init__(self, cells: Sequence[str], text: str) -> None:
        object.__setattr__(self, "cells", tuple(cells))
        object.__setattr__(self, "text", text)


Row = Sequence[str] | Span


def _check(columns: Sequence[Column], body: Sequence[Row]) -> None:
    n = len(columns)
    if n == 0:
        raise ValueError("a table needs at least one column")
    for i, row in enumerate(body):
        cells = row.cells if isinstance(row, Span) else row
        if isinstance(row, Span):
            if len(cells) >= n:
                raise ValueError(
                    f"row {i}: a Span takes fewer cells than the {n} columns, got {len(cells)}"
                )
            if not isinstance(row.text, str):
                raise TypeError(f"row {i}: Span text must be a str, got {type(row.text).__name__}")
        elif isinstance(row, str) or len(cells) != n:
            got = "a str" if isinstance(row, str) else f"{len(cells)} cells"
            raise ValueError(f"row {i}: expected {n} cells (or a Span), got {got}")
        for c in cells:
            if not isinstance(c, str):
                raise TypeError(f"row {i}: cells must be formatted str, got {type(c).__name__}")


def _pad(text: str, width: int, align: Align) -> str:
    return text.ljust(width) if align == "left" else text.rjust(width)


def render(
    columns: Sequence[Column],
    body: Iterable[Row],
    *,
    notes: Iterable[str] = (),
    gap: str = "  ",
    markdown: bool = False,
) -> str:
    """The table as one string (no trailing newline; trailing spaces stripped from each line).

    columns: header and alignment of each column, in order.
    body: rows; each a sequence of one already-formatted ``str`` per column, or a :class:`Span`.
        Empty: the header and the dashes line only.
    notes: lines printed after the table, in order.
    gap: what separates two columns in the plain layout (ignored with ``markdown``).
    markdown: a Markdown pipe table instead of the plain layout.
    """
    body = list(body)
    _check(columns, body)
    esc = (lambda s: s.replace("|", "\\|")) if markdown else (lambda s: s)
    headers = [esc(c.header) for c in columns]
    rows: list[tuple[list[str], str | None]] = [
        ([esc(c) for c in row.cells], esc(row.text))
        if isinstance(row, Span)
        else ([esc(c) for c in row], None)
        for row in body
    ]
    widths = [len(h) for h in headers]
    for cells, _ in rows:
        for i, c in enumerate(cells):
            widths[i] = max(widths[i], len(c))
    aligns = [c.align for c in columns]

    if markdown:
        widths = [max(w, 3) for w in widths]  # room for a "---:" delimiter

        def line(cells: Sequence[str]) -> str:
            return "| " + " | ".join(cells) + " |"

        def padded(cells: Sequence[str]) -> list[str]:
            return [_pad(c, w, a) for c, w, a in zip(cells, widths, aligns, strict=False)]

        rule = [
            "-" * (w - 1) + (":" if a == "right" else "-")
            for w, a in zip(widths, aligns, strict=True)
        ]
        out = [line(padded(headers)), line(rule)]
        for cells, text in rows:
            if text is not None:  # the text fills the next cell, the remaining ones stay empty
                cells = [*cells, text, *[""] * (len(columns) - len(cells) - 1)]
            out.append(line(padded(cells)))
        notes = list(notes)
        if notes:
            out += ["", *notes]
        return "\n".join(out)

    def plain(cells: Sequence[str]) -> str:
        return gap.join(_pad(c, w, a) for c, w, a in zip(cells, widths, aligns, strict=False))

    out = [plain(headers).rstrip(), gap.join("-" * w for w in widths)]
    for cells, text in rows:
        if text is None:
            out.append(plain(cells).rstrip())
        else:
            out.append((plain(cells) + gap if cells else "") + text)
    out += list(notes)
    return "\n".join(out)


def from_dicts(rows: Sequence[dict], columns: Sequence[str] | None = None) -> str:
    """A left-aligned table of dicts (the keys of the first row are the columns unless given);
    ``"(empty)"`` when there is no row."""
    if not rows:
        return "(empty)"
    names = list(columns or rows[0])
    return render([left(c) for c in names], [[str(r.get(c, "")) for c in names] for r in rows])


def with_generated_block(text: str, begin: str, end: str, block: str) -> str:
    """``text`` (a Markdown page) with what lies between the marker lines ``begin`` and ``end``
    replaced by ``block`` (a generated table: docs/bounds.md, docs/papers.md; tests compare the
    committed page with the page this returns)."""
    if begin not in text or end not in text:
        raise ValueError(f"the text has no {begin!r} ... {end!r} block")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{block}{end}{tail}"
