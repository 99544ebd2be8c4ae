"""Size guards of the MDP families: a model too large to build is refused before any allocation.

Every family builds its transitions as a dense ``(S, A, S)`` float64 array (8 S^2 A bytes; a CSR
model with ``sparse=true`` is converted from it), so ``riverswim:S=100000000`` would ask numpy for
142 PiB. :func:`check_dense_size` refuses such a spec with a one-line error naming the parameter,
its value, the memory it needs and the limit; :func:`theorylab.mdps.make` also turns a
``MemoryError`` raised by any family into the same kind of error.
"""

from __future__ import annotations

from theorylab.errors import InvalidMDPError

MAX_DENSE_BYTES = 4 * 2**30
"""Largest dense ``(S, A, S)`` float64 transition array a family builds (4 GiB)."""


def format_bytes(n: float) -> str:
    """``1.5 GiB``, ``142 PiB``: binary units, 3 significant digits."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def check_dense_size(family: str, given: str, S: int, A: int, hint: str = "") -> None:
    """Refuse a dense ``(S, A, S)`` model above :data:`MAX_DENSE_BYTES`.

    given: the parameters that set S and A, as written in the spec (``"S=100000000"``);
    hint: what to do instead (``"; use random-sparse"``), appended to the message.
    """
    need = 8.0 * S * A * S
    if need > MAX_DENSE_BYTES:
        raise InvalidMDPError(
            f"{family}: {given} gives S = {S:,} states x A = {A:,} actions, a dense (S, A, S) "
            f"model of {format_bytes(need)}; the limit is {format_bytes(MAX_DENSE_BYTES)}: give "
            f"smaller sizes{hint}"
        )
