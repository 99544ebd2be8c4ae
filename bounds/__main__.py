"""``python -m theorylab.bounds [docs/bounds.md]``: regenerate the table of registered bounds."""

from __future__ import annotations

import sys
from pathlib import Path

from .registry import list_bounds, with_current_table


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0] if args else "docs/bounds.md")
    path.write_text(with_current_table(path.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"updated the bounds table of {path} ({len(list_bounds())} bounds)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
