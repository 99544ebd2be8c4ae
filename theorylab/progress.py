"""Progress reports on stderr (ground floor): a tqdm bar on a terminal, sparse lines otherwise.

A tqdm bar redraws itself with carriage returns many times a second; written to a pipe or a log
file that becomes tens of kilobytes of partial lines. :func:`progress_bar` therefore draws a bar
only when stderr is a terminal. When it is not, it prints one plain line at the start, one each
time another tenth of the work is done (and at most one every ``min_interval`` seconds), and one
at the end -- about a dozen lines for any run.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any


class LineProgress:
    """The tqdm methods theorylab uses (``update``, ``close``, context manager), as lines."""

    def __init__(
        self,
        total: int,
        desc: str,
        unit: str,
        *,
        initial: int = 0,
        stream: IO[str] | None = None,
        min_interval: float = 5.0,
    ) -> None:
        self.total, self.desc, self.unit = int(total), desc, unit
        self.n = int(initial)
        self.stream = stream if stream is not None else sys.stderr
        self.min_interval = float(min_interval)
        self._t0 = time.perf_counter()
        self._last_time = -float("inf")
        self._last_tenth = -1
        self._closed = False
        self._emit(force=True)

    def _line(self) -> str:
        elapsed = time.perf_counter() - self._t0
        pct = f" ({100 * self.n / self.total:.0f}%)" if self.total else ""
        rate = f", {self.n / elapsed:,.0f} {self.unit}/s" if self.n and elapsed > 0 else ""
        return f"{self.desc}: {self.n}/{self.total} {self.unit}{pct}, {elapsed:.1f} s{rate}"

    def _emit(self, force: bool = False) -> None:
        tenth = (10 * self.n) // self.total if self.total else 10
        now = time.perf_counter()
        if force or (tenth > self._last_tenth and now - self._last_time >= self.min_interval):
            print(self._line(), file=self.stream, flush=True)
            self._last_tenth, self._last_time = tenth, now

    def update(self, n: int = 1) -> None:
        self.n += int(n)
        self._emit()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._emit(force=True)

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class NoProgress:
    """Progress switched off."""

    n = 0

    def update(self, n: int = 1) -> None:
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
) -> Any:
    """A progress report over ``total`` units: a tqdm bar when stderr is a terminal, a
    :class:`LineProgress` when it is not, nothing when ``enabled`` is False."""
    if not enabled:
        return NoProgress()
    if not stderr_is_terminal():
        return LineProgress(total, desc, unit, initial=initial)
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, initial=initial, leave=leave)
