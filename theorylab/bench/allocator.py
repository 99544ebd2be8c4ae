"""The C allocator's setting for CPU timings: keep freed memory in the heap (no page faults).

glibc's ``malloc`` serves a block above ``M_MMAP_THRESHOLD`` (128 KiB at start, raised by glibc
itself each time such a block is freed: the *dynamic* threshold) with a fresh ``mmap`` and returns
it to the kernel on ``free``. The next allocation of that size touches new pages: a minor page
fault per 4 KiB page, each zeroed by the kernel, in the system time of the thread that allocates.
A training step on CPU allocates and frees activations and gradients of hundreds of KiB to MiB
every step, so a step pays that cost every time, in an amount that depends

* on which tensors happen to be above the threshold, which depends on the process's history (the
  dynamic threshold moves as blocks are freed): the same step, rebuilt later in the same process,
  faulted 2,720 then 4,124 times per step (theorylab's padded DPO step, ``bench llm --quick``);
* on the kernel and the hypervisor: a fault on this 2-core VM cost about 2 us, and what the
  neighbours do moves it.

Measured on ``bench llm --quick`` (2026-11-28, idle 2-core VM): TRL's DPO step took 10,600-13,200
faults and 23-26 ms of system time per step, a third of its 72-80 ms; theorylab's bucket and
packed layouts (smaller tensors) took none; and the ratios to TRL spread up to 18% across six runs
of one sitting. With freed memory kept in the heap (:func:`keep_freed_memory`) every row took 0
faults per step after the warm-up and TRL's step fell to 47-56 ms; with the cyclic garbage
collector also off in the timed rounds (``theorylab.bench.llm``), no ratio moved by more than 6.7%
across three runs of one sitting (idle), 8.3% at the default sizes and 9.8% at a load of 8-14.

:func:`keep_freed_memory` sets ``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD`` to 1 GiB with
``mallopt`` (which also turns the dynamic threshold off), so that blocks below 1 GiB come from
the heap and freed memory stays there for the next step: what a long-running trainer's allocator
reaches after its first steps, and what jemalloc or tcmalloc (``LD_PRELOAD``) do by design. It is
process-wide and cannot be undone (memory freed afterwards stays with the process until it exits),
so the bench applies it only where asked (``allocator="heap"``, the default of ``theorylab bench
llm`` on CPU) and every row records which allocator setting it ran under.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

ALLOCATORS = ("heap", "system")
M_TRIM_THRESHOLD = -1  # glibc <malloc.h>
M_MMAP_THRESHOLD = -3
HEAP_BYTES = 1 << 30


def keep_freed_memory() -> str:
    """Set glibc's mmap and trim thresholds to 1 GiB (module docstring); return the setting as a
    one-line description for the rows. Where the C library is not glibc (no ``mallopt``), nothing
    changes and the description says so."""
    if not sys.platform.startswith("linux"):
        return f"system (no mallopt on {sys.platform})"
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return "system (no glibc mallopt)"
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    ok = mallopt(M_MMAP_THRESHOLD, HEAP_BYTES) == 1 and mallopt(M_TRIM_THRESHOLD, HEAP_BYTES) == 1
    if not ok:
        return "system (glibc refused mallopt M_MMAP_THRESHOLD / M_TRIM_THRESHOLD = 1 GiB)"
    return "heap (glibc mallopt: mmap and trim thresholds 1 GiB)"


def check_allocator(allocator: object) -> None:
    """A one-line error for a name other than those of :data:`ALLOCATORS`."""
    if allocator not in ALLOCATORS:
        raise ValueError(f"--allocator must be one of {', '.join(ALLOCATORS)}, got {allocator!r}")


def set_allocator(allocator: str) -> str:
    """``"heap"``: :func:`keep_freed_memory`; ``"system"``: leave the C allocator as it is. Returns
    the description stored in every row; an unknown name is a one-line error."""
    check_allocator(allocator)
    if allocator == "system":
        return "system (glibc defaults: dynamic mmap threshold)"
    return keep_freed_memory()


def minor_faults() -> int:
    """Minor page faults of the calling thread so far (of the process where the OS has no
    per-thread count); 0 where ``resource`` is unavailable."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return 0
    who = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)
    return resource.getrusage(who).ru_minflt
