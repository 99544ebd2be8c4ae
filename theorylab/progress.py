"""Progress reports on stderr (ground floor): a bar redrawn in place on a terminal, sparse lines
otherwise.

A bar redraws itself with carriage returns many times a second; written to a pipe or a log file
that becomes tens of kilobytes of partial lines. :func:`progress_bar` therefore draws a bar only
when stderr is a terminal. When it is not, it prints one plain line at the start, one each time
another tenth of the work is done (and at most one every ``min_interval`` seconds), and one at
the end unless the last line already showed the final count -- about a dozen lines for any run.

Every line fits the width of the terminal (``COLUMNS``, else the terminal's, else 80): the label
is shortened (middle elided) first, so that the count, the percentage, the elapsed time and the
rate always show. There is one rate: the units done *by this report* per second, times
``scale`` (a compiled run counts episodes and shows seed-episodes/s, ``scale`` = seeds). Work
found done before the report started (``initial=``, or a resumed checkpoint: :meth:`restart`)
is not counted in the rate, and neither is time spent before :meth:`restart` (numba's compile,
for instance, which :meth:`note` can name while it lasts).
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import IO

ELLIPSIS = "..."


def columns() -> int:
    """The width a progress line may take: ``COLUMNS``, else the terminal's, else 80."""
    return max(40, shutil.get_terminal_size(fallback=(80, 24)).columns)


def compact(n: float) -> str:
    """``n`` in at most 5 characters for a count: 123, 9999, 12.3k, 4.57M, 1.2G."""
    n = float(n)
    if abs(n) < 10_000:
        return f"{n:.0f}"
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            v = n / div
            return f"{v:.3g}{suffix}" if v < 1000 else f"{v:.0f}{suffix}"
    return f"{n:.0f}"  # pragma: no cover


def rate_text(per_second: float, unit: str) -> str:
    """A rate with three significant digits, never rounded to 0: ``0.312 cells/s``,
    ``1.23M seed-ep/s``."""
    if per_second >= 10_000:
        return f"{compact(per_second)} {unit}/s"
    return f"{per_second:.3g} {unit}/s"


def clock(seconds: float) -> str:
    """Elapsed time: ``12.3s``, ``4:05``, ``1:02:03``."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def shorten(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, elided after its first two thirds (the
    algorithm's name stays whole, the loop's label at the end too)."""
    if len(text) <= width:
        return text
    if width <= len(ELLIPSIS) + 1:
        return text[: max(0, width)]
    keep = width - len(ELLIPSIS)
    head = (2 * keep + 2) // 3
    return text[:head] + ELLIPSIS + text[len(text) - (keep - head) :]


class Progress:
    """A progress report over ``total`` units of ``unit`` on ``stream`` (stderr).

    terminal: redraw one bar in place (else: sparse lines; :func:`progress_bar` decides from
    stderr). scale, rate_unit: the rate shown is ``scale`` x units per second in ``rate_unit``
    (default: ``unit``). leave: on a terminal, keep the final bar (else clear it). note: shown
    in place of the rate until :meth:`restart` (e.g. ``compiling``).
    Methods: :meth:`update`, :meth:`restart`, :meth:`note`, :meth:`close`; a context manager.
    """

    def __init__(
        self,
        total: int,
        desc: str,
        unit: str = "it",
        *,
        initial: int = 0,
        scale: float = 1.0,
        rate_unit: str | None = None,
        terminal: bool = False,
        leave: bool = True,
        stream: IO[str] | None = None,
        width: int | None = None,
        min_interval: float = 5.0,
        redraw_interval: float = 0.1,
        note: str | None = None,
    ) -> None:
        self.total, self.desc, self.unit = int(total), desc, unit
        self.scale, self.rate_unit = float(scale), rate_unit or unit
        self.terminal, self.leave = bool(terminal), bool(leave)
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.min_interval, self.redraw_interval = float(min_interval), float(redraw_interval)
        self.n = self.initial = int(initial)
        self._t0 = time.perf_counter()
        self._note = note
        self._last_time = -float("inf")
        self._last_tenth = -1
        self._last_n: int | None = None  # the count of the last line printed
        self._closed = False
        self._emit(force=True)

    # ------------------------------------------------------------------ what is shown
    def rate(self) -> float | None:
        """``scale`` x units done since the start (or the last :meth:`restart`) per second."""
        elapsed = time.perf_counter() - self._t0
        if self.n <= self.initial or elapsed <= 0:
            return None
        return self.scale * (self.n - self.initial) / elapsed

    def line(self) -> str:
        """The current report, at most :meth:`line_width` characters."""
        width = self.line_width()
        elapsed = time.perf_counter() - self._t0
        pct = 100.0 * self.n / self.total if self.total else 100.0
        rate = self.rate()
        tail = self._note or (rate_text(rate, self.rate_unit) if rate is not None else "")
        count = f"{compact(self.n)}/{compact(self.total)} {self.unit}"
        right = f" {count} {clock(elapsed)}" + (f", {tail}" if tail else "")
        if not self.terminal:  # label: count (pct%), elapsed, rate
            fixed = f": {count} ({pct:.0f}%), {clock(elapsed)}" + (f", {tail}" if tail else "")
            return shorten(self.desc, width - len(fixed)) + fixed
        # the rate's room is kept from the start, so the label does not shrink when it appears
        most = f"{compact(self.total)}/{compact(self.total)}"  # the widest count
        count = f"{compact(self.n)}/{compact(self.total)}".rjust(len(most)) + f" {self.unit}"
        tail = tail.ljust(len(f"999k {self.rate_unit}/s"))
        right = f" {count} {clock(elapsed).rjust(5)}  {tail}"
        bar_width = 10
        room = width - len(right) - len(f" {pct:3.0f}% ||") - bar_width
        desc = shorten(self.desc, max(room, 8))
        bar_width = max(4, width - len(desc) - len(right) - len(f" {pct:3.0f}% ||"))
        filled = int(bar_width * min(max(pct, 0.0), 100.0) / 100.0)
        bar = "#" * filled + "-" * (bar_width - filled)
        return f"{desc} {pct:3.0f}% |{bar}|{right}".rstrip()[:width]

    def line_width(self) -> int:
        # a terminal line one short of the width: a full line would wrap on some terminals
        return (self.width or columns()) - (1 if self.terminal else 0)

    def _emit(self, force: bool = False) -> None:
        now = time.perf_counter()
        if self.terminal:
            if force or now - self._last_time >= self.redraw_interval:
                text = self.line()
                self.stream.write("\r" + text.ljust(self.line_width()))
                self.stream.flush()
                self._last_time, self._last_n = now, self.n
            return
        tenth = (10 * self.n) // self.total if self.total else 10
        if force or (tenth > self._last_tenth and now - self._last_time >= self.min_interval):
            print(self.line(), file=self.stream, flush=True)
            self._last_tenth, self._last_time, self._last_n = tenth, now, self.n

    # ------------------------------------------------------------------ the tqdm-like verbs
    def update(self, n: int = 1) -> None:
        self.n += int(n)
        self._emit()

    def restart(self, n: int | None = None) -> None:
        """Count the rate from now on, from ``n`` units done (default: the current count):
        work done before (a resumed checkpoint) and time spent before (a compile) are not in
        it. Clears :meth:`note`."""
        if n is not None:
            self.n = int(n)
        self.initial = self.n
        self._t0 = time.perf_counter()
        self._note = None
        self._emit(force=self.terminal or self._last_n != self.n)  # piped: a resumed count

    def note(self, text: str | None) -> None:
        """Show ``text`` in place of the rate (e.g. ``compiling``) until :meth:`restart`."""
        self._note = text
        self._emit(force=True)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.terminal:
            if self.leave:
                self._emit(force=True)
                self.stream.write("\n")
            else:
                self.stream.write("\r" + " " * self.line_width() + "\r")
            self.stream.flush()
        elif self._last_n != self.n:  # the last line printed already shows the final count
            self._emit(force=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


LineProgress = Progress  # (the former name of the piped report)


class NoProgress:
    """Progress switched off."""

    n = 0

    def update(self, n: int = 1) -> None:
        self.n += int(n)

    def restart(self, n: int | None = None) -> None:
        if n is not None:
            self.n = int(n)

    def note(self, text: str | None) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> NoProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def progress_bar(
    total: int,
    desc: str,
    unit: str = "it",
    *,
    enabled: bool = True,
    initial: int = 0,
    leave: bool = True,
    scale: float = 1.0,
    rate_unit: str | None = None,
    note: str | None = None,
) -> Progress | NoProgress:
    """A progress report over ``total`` units: a bar when stderr is a terminal, sparse lines
    when it is not, nothing when ``enabled`` is False (see :class:`Progress`)."""
    if not enabled:
        return NoProgress()
    return Progress(
        total, desc, unit, initial=initial, leave=leave, scale=scale, rate_unit=rate_unit,
        terminal=stderr_is_terminal(), note=note,
    )  # fmt: skip
