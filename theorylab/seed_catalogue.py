"""The seed corpus' tier-A and tier-B catalogue rows, shipped with the package.

The seed catalogues (``seed-catalogue-000.md``, ``-001.md``, ``-002-004.md``) and their coverage
table (``seed-coverage.md``) live outside the package, in the ``shared/reference`` folder beside
the repository. An installed theorylab has no such folder, so this module reads them once and
writes what the papers index needs into the package (``theorylab/data/seed_papers.json``):

    python -m theorylab.seed_catalogue ../shared/reference

Every tier-A and tier-B row of the coverage table becomes one entry: its reference as the
registrations write it (``"000#30"``, ``"001#24"``, ``"002-004#F4"``), the paper's full title
(from the catalogue; the coverage table shortens long titles), its tier (the catalogue's, or
"A (assigned)" where 002-004 has no tier column and the coverage table assigned one), its family
(1-9, the coverage table's one family per row) and the setting in a few words (the coverage
table's "family detail"), and the other rows of the same paper. Whether a row is implemented is
*not* stored: :mod:`theorylab.validations.papers` computes it from the registries each time.
``tests/test_papers.py`` checks that the shipped file is what this module writes from the
catalogues, where the reference folder is present.
"""

from __future__ import annotations

import json
import re
import sys
from functools import lru_cache
from importlib import resources
from pathlib import Path

COVERAGE = "seed-coverage.md"
CATALOGUES = {
    "000": "seed-catalogue-000.md",
    "001": "seed-catalogue-001.md",
    "002-004": "seed-catalogue-002-004.md",
}
DATA_FILE = "seed_papers.json"  # in theorylab/data/

_REF = re.compile(r"^((?:000|001|002-004)#[A-Z]?[0-9]+)\b")
_FAMILY = re.compile(r"^### Family ([0-9]+): (.+?)\s*$")
_SAME = re.compile(r"Same paper as ((?:000|001|002-004)#[A-Z]?[0-9]+)")
_TOTAL = re.compile(r"^\| \*\*Total\*\* \| \*\*([0-9]+)\*\* \| \*\*([0-9]+)\*\* \|")


def _cells(line: str) -> list[str]:
    """The cells of a markdown table row; ``\\|`` inside a cell is a literal bar."""
    parts = re.split(r"(?<!\\)\|", line.strip())
    return [p.strip().replace("\\|", "|") for p in parts[1:-1]]


def _catalogue_titles(reference: Path) -> dict[str, tuple[str, str | None]]:
    """ref -> (full title, tier or None) from Table 1 of each catalogue (section 1)."""
    out: dict[str, tuple[str, str | None]] = {}
    for code, name in CATALOGUES.items():
        section = None
        for line in (reference / name).read_text(encoding="utf-8").splitlines():
            if line.startswith("## "):
                section = line[3:].split(".")[0].strip()
            if section != "1" or not line.startswith("| "):
                continue
            cells = _cells(line)
            if code == "000" and cells[0].isdigit():  # # | L | Exact title | Tier | ...
                out[f"000#{cells[0]}"] = (cells[2], cells[3])
            elif code == "001" and cells[0].isdigit():  # # | Tier | Title (Lnnn) | ...
                title = re.sub(r"\s*\(L[0-9]+\)$", "", cells[2])
                out[f"001#{cells[0]}"] = (title, cells[1])
            elif code == "002-004" and re.fullmatch(r"[A-Z][0-9]+", cells[0]):  # no tier column
                out[f"002-004#{cells[0]}"] = (cells[1], None)
    return out


def _coverage_rows(reference: Path) -> list[dict]:
    """The per-row tables of seed-coverage.md (section 2), in order, with their status."""
    rows: list[dict] = []
    family, family_name = None, None
    total = None
    for line in (reference / COVERAGE).read_text(encoding="utf-8").splitlines():
        if m := _TOTAL.match(line):
            total = int(m.group(1)) + int(m.group(2))
        if line.startswith("## ") and family is not None:
            family = None  # the per-row tables end with section 2
        if m := _FAMILY.match(line):
            family, family_name = int(m.group(1)), m.group(2)
            continue
        if family is None or not line.startswith("| "):
            continue
        cells = _cells(line)
        if not (m := _REF.match(cells[0])):
            continue
        # Ref | Title | Tier | Setting | Status | algorithm(s) | Claim(s) | Notes | ...
        rows.append(
            {
                "ref": m.group(1),
                "title": cells[1],
                "tier": cells[2],
                "family": family,
                "family_name": family_name,
                "setting": cells[3],
                "status": cells[4].strip("*"),
                "notes": cells[7],
            }
        )
    if total is None or len(rows) != total:
        raise ValueError(
            f"{reference / COVERAGE}: read {len(rows)} tier-A/B rows, but its summary's total "
            f"says {total}: the table's layout changed"
        )
    return rows


def coverage_statuses(reference: str | Path) -> dict[str, str]:
    """ref -> the status seed-coverage.md gave the row when it was written (Y, A or N)."""
    return {r["ref"]: r["status"] for r in _coverage_rows(Path(reference))}


def build_catalogue(reference: str | Path) -> dict:
    """The shipped catalogue, read from the ``shared/reference`` folder ``reference``."""
    reference = Path(reference)
    titles = _catalogue_titles(reference)
    rows = _coverage_rows(reference)
    # rows of one paper: the notes' "Same paper as X" links, closed (A as B and C as B: A as C)
    same: dict[str, set[str]] = {r["ref"]: {r["ref"]} for r in rows}
    for r in rows:
        for other in _SAME.findall(r["notes"]):
            if other in same:  # a tier-C twin (appendix of the coverage table) is not a row
                group = same[r["ref"]] | same[other]
                for ref in group:
                    same[ref] = group
    out = []
    for r in rows:
        if r["ref"] not in titles:
            raise ValueError(f"{r['ref']}: in {COVERAGE} but not in Table 1 of its catalogue")
        title, tier = titles[r["ref"]]
        short = r["title"].removesuffix("…")
        if not title.startswith(short):
            raise ValueError(f"{r['ref']}: title {r['title']!r} in {COVERAGE}, {title!r} in the "
                             "catalogue")  # fmt: skip
        if tier is not None and tier != r["tier"]:
            raise ValueError(f"{r['ref']}: tier {r['tier']} in {COVERAGE}, {tier} in the catalogue")
        out.append(
            {
                "ref": r["ref"],
                "title": title,
                "tier": r["tier"],
                "family": r["family"],
                "setting": r["setting"],
                "same_paper": sorted(same[r["ref"]] - {r["ref"]}),
            }
        )
    families = {str(r["family"]): r["family_name"] for r in rows}
    return {
        "source": "seed-coverage.md (tier-A/B rows, families, settings) and "
        "seed-catalogue-{000,001,002-004}.md (titles), written by python -m "
        "theorylab.seed_catalogue",
        "families": families,
        "rows": out,
    }


def catalogue_text(reference: str | Path) -> str:
    """The shipped file's text for ``reference`` (what the test compares byte for byte)."""
    return json.dumps(build_catalogue(reference), indent=1, ensure_ascii=False) + "\n"


def data_path() -> Path:
    """Where the shipped catalogue lives (inside the installed package)."""
    return Path(str(resources.files("theorylab") / "data" / DATA_FILE))


@lru_cache(maxsize=1)
def load_catalogue() -> dict:
    """The shipped catalogue: ``{"families": {"1": name, ...}, "rows": [{ref, title, ...}]}``."""
    return json.loads(data_path().read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not (Path(args[0]) / COVERAGE).is_file():
        print(
            "usage: python -m theorylab.seed_catalogue REFERENCE_DIR (the folder holding "
            f"{COVERAGE} and the seed catalogues, e.g. ../shared/reference)",
            file=sys.stderr,
        )
        return 2
    path = data_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(catalogue_text(args[0]), encoding="utf-8")
    print(f"wrote {path} ({len(build_catalogue(args[0])['rows'])} tier-A/B rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
