"""The memory an online run's curves take, checked before the run starts (ground floor).

An online run keeps three ``(B, K)`` float64 curves (exact regret, returns, value estimates)
whatever its loop, its summary forms the cumulative regret (a fourth) and ``--save`` builds
the ``.npz`` in memory before writing it: measured, ``-K 10000000 -B 8`` with ``--save`` and
``--json`` peaked at 3.85 GiB resident, about 48 bytes per seed-episode above the interpreter's
own 0.3 GiB. ``theorylab run ... -K 300000000 -B 8`` asks for 107 GiB; without a check it
started, grew its memory segment by segment and was stopped by the system (or by Ctrl-C) long
after. :func:`check_curves_fit` refuses such a run before any work, with the estimate, the
memory available and the largest K that fits at B seeds.
"""

from __future__ import annotations

import os

from theorylab.errors import TheorylabError

BYTES_PER_SEED_EPISODE = 48  # measured peak: three float64 curves, cumsum, the npz buffer
HEADROOM = 0.8  # the share of the available memory a run may plan to take


class RunTooLargeError(TheorylabError, ValueError):
    """A run whose results cannot fit in the memory available."""


def available_bytes() -> int | None:
    """The memory a new allocation can take without swapping: ``MemAvailable`` of
    ``/proc/meminfo`` (Linux), else the free physical pages; None where neither is known."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"


def check_curves_fit(seeds: int, episodes: int, *, checkpoint: str | None = None) -> None:
    """Raise :class:`RunTooLargeError` when ``seeds`` x ``episodes`` curves cannot fit in
    :data:`HEADROOM` of the available memory (nothing is checked where that is unknown)."""
    need = BYTES_PER_SEED_EPISODE * int(seeds) * int(episodes)
    avail = available_bytes()
    if avail is None or need <= HEADROOM * avail:
        return
    k_max = int(HEADROOM * avail // (BYTES_PER_SEED_EPISODE * max(int(seeds), 1)))
    b_max = int(HEADROOM * avail // (BYTES_PER_SEED_EPISODE * max(int(episodes), 1)))
    kept = (
        " (--checkpoint stores the finished segments on disk but the result is still held in "
        "memory)"
        if checkpoint is not None
        else ""
    )
    raise RunTooLargeError(
        f"--episodes {episodes} x --seeds {seeds}: the run's curves need about {gib(need)} "
        f"({BYTES_PER_SEED_EPISODE} bytes per seed-episode), {gib(avail)} of memory is "
        f"available{kept}; expected at most K = {k_max:,} episodes at {seeds} seeds (or at most "
        f"{b_max:,} seeds at K = {episodes:,}). For longer "
        "runs keep summaries only: theorylab.validations.streamed.streamed_run (Python API)"
    )
