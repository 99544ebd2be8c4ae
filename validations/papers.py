"""The papers index: is my paper here? The seed corpus' tier-A/B rows against the registries.

Each row of the shipped seed catalogue (:mod:`theorylab.seed_catalogue`) gets its status from
what is registered *now*:

* **implemented with a claim**: a registered algorithm names the row (``register(...,
  papers=("000#30",))``) and a registered claim does (``register_validation(claim, ...,
  papers=("000#30",))``);
* **implemented**: an algorithm names it and no claim checks the row's guarantee;
* **claim only**: a claim names it but no registered algorithm does (the algorithm is a module
  outside the registry);
* **missing**: nothing names it.

Each claim comes with its last verdict from the gallery (``docs/figures/gallery/NAME.json``,
written by ``python docs/make_figures.py --only gallery``) where the gallery is at hand (a
checkout of the repository); "not run" otherwise. ``theorylab papers [QUERY]`` prints the index,
``tl.papers(...)`` returns it, and docs/papers.md is generated from it
(``python -m theorylab.validations.papers docs/papers.md``; a test checks the page is current).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from theorylab.algorithms.registry import PAPER_REF, get_algorithm, list_algorithms
from theorylab.seed_catalogue import load_catalogue
from theorylab.table import with_generated_block
from theorylab.validations.registry import VALIDATIONS, list_validations

STATUSES = ("implemented with a claim", "implemented", "claim only", "missing")
# the gallery of a repository checkout (absent from an installed package: verdicts "not run")
GALLERY = Path(__file__).resolve().parents[1] / "docs" / "figures" / "gallery"
NOT_RUN = "not run"


@dataclass(frozen=True)
class ClaimVerdict:
    """A claim that names a row, with its last gallery verdict (``"not run"`` without one)."""

    name: str
    verdict: str = NOT_RUN
    scale: str | None = None
    date: str | None = None

    def cell(self) -> str:
        scale = f", {self.scale}" if self.scale else ""
        return f"{self.name} ({self.verdict}{scale})"


@dataclass(frozen=True)
class PaperRow:
    """One tier-A/B row of the seed catalogue and what theorylab has of it."""

    ref: str
    title: str
    tier: str
    family: int
    family_name: str
    setting: str
    same_paper: tuple[str, ...]
    status: str
    algorithms: tuple[str, ...]
    claims: tuple[ClaimVerdict, ...]

    def to_dict(self) -> dict:
        return asdict(self)


def paper_refs() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(ref -> algorithm names, ref -> claim names): who names which row, from the registries."""
    algorithms: dict[str, list[str]] = {}
    claims: dict[str, list[str]] = {}
    for name in list_algorithms():
        for ref in get_algorithm(name).papers:
            algorithms.setdefault(ref, []).append(name)
    for name in list_validations():
        for ref in VALIDATIONS.papers(name):
            claims.setdefault(ref, []).append(name)
    return algorithms, claims


def unknown_refs() -> list[str]:
    """Rows named by a registration that are not tier-A/B rows of the catalogue (a typo, or a
    tier-C row): ``"000#300 (algorithm x)"``, ..."""
    known = {r["ref"] for r in load_catalogue()["rows"]}
    algorithms, claims = paper_refs()
    return sorted(
        f"{ref} ({kind} {name})"
        for kind, table in (("algorithm", algorithms), ("claim", claims))
        for ref, names in table.items()
        if ref not in known
        for name in names
    )


def _verdict(name: str, gallery: Path | None) -> ClaimVerdict:
    path = gallery / f"{name}.json" if gallery is not None else None
    if path is None or not path.is_file():
        return ClaimVerdict(name)
    entry = json.loads(path.read_text(encoding="utf-8"))
    return ClaimVerdict(name, entry["verdict"], entry.get("scale"), entry.get("date"))


def _word(word: str) -> re.Pattern:
    return re.compile(rf"(?<!\w){re.escape(word)}(?!\w)")


def _status(algorithms: list[str], claims: list[str]) -> str:
    if algorithms:
        return STATUSES[0] if claims else STATUSES[1]
    return STATUSES[2] if claims else STATUSES[3]


def _status_key(status: str) -> str:
    return status.replace(" ", "-")


def _check_status(status: str | None) -> str | None:
    if status is None:
        return None
    keys = {_status_key(s): s for s in STATUSES}
    key = _status_key(status.strip().lower())
    if key not in keys:
        raise ValueError(
            f"status {status!r}: expected one of {', '.join(keys)} "
            "(implemented: an algorithm and no claim)"
        )
    return keys[key]


def papers(
    query: str | None = None,
    *,
    status: str | None = None,
    family: int | None = None,
    gallery: str | Path | None = GALLERY,
) -> list[PaperRow]:
    """The seed corpus' tier-A/B rows with their status, algorithms and claims (with verdicts).

    ``query``: a row reference (``"000#30"``, the whole reference) or words that must all occur
    as whole words (case-insensitive) in the row's reference, title, setting, algorithm or claim
    names (``"mirror descent"``, ``"vi-lcb"``); ``status``: one of
    ``implemented-with-a-claim``, ``implemented``, ``claim-only``, ``missing``; ``family``: 1-9
    (docs/papers.md lists them); ``gallery``: the folder of gallery entries the verdicts come
    from (None: every verdict is "not run").
    """
    families = load_catalogue()["families"]
    if family is not None and str(family) not in families:
        raise ValueError(f"family {family!r}: expected one of {', '.join(families)}")
    wanted_status = _check_status(status)
    gallery = Path(gallery) if gallery is not None else None
    algorithms, claims = paper_refs()
    query = (query or "").strip()
    exact_ref = query if PAPER_REF.match(query) else None
    # whole words: "dual" finds "Dual RL" and "dual-v", not "Dualization"
    words = [] if exact_ref else [_word(w) for w in query.lower().split()]
    out = []
    for r in load_catalogue()["rows"]:
        algs = algorithms.get(r["ref"], [])
        names = claims.get(r["ref"], [])
        row = PaperRow(
            ref=r["ref"],
            title=r["title"],
            tier=r["tier"],
            family=r["family"],
            family_name=families[str(r["family"])],
            setting=r["setting"],
            same_paper=tuple(r["same_paper"]),
            status=_status(algs, names),
            algorithms=tuple(algs),
            claims=tuple(_verdict(n, gallery) for n in names),
        )
        if exact_ref is not None and row.ref != exact_ref:
            continue
        text = " ".join([row.ref, row.title, row.setting, *algs, *names]).lower()
        if any(not w.search(text) for w in words):
            continue
        if wanted_status is not None and row.status != wanted_status:
            continue
        if family is not None and row.family != int(family):
            continue
        out.append(row)
    return out


# --------------------------------------------------------------------------- docs/papers.md
def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", r"\|")


def markdown_index() -> str:
    """The generated part of docs/papers.md: counts per family, then one table per family."""
    rows = papers()
    families = load_catalogue()["families"]
    lines = [
        "| family | rows | " + " | ".join(STATUSES) + " |",
        "|---|---|" + "---|" * len(STATUSES),
    ]
    totals = [0] * (len(STATUSES) + 1)
    for number, name in families.items():
        mine = [r for r in rows if r.family == int(number)]
        counts = [len(mine)] + [sum(r.status == s for r in mine) for s in STATUSES]
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
        lines.append(f"| {number}. {_cell(name)} | " + " | ".join(map(str, counts)) + " |")
    lines.append("| **all** | " + " | ".join(f"**{n}**" for n in totals) + " |")
    for number, name in families.items():
        lines += [
            "",
            f"### Family {number}: {name}",
            "",
            "| ref | title | tier | setting | status | algorithms | claims (last verdict) |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            if r.family != int(number):
                continue
            claims = "<br>".join(
                f"[`{c.name}`](gallery.md#{c.name}) ({c.verdict})" for c in r.claims
            )
            claims = claims or "-"
            algs = ", ".join(f"`{a}`" for a in r.algorithms) or "-"
            status = f"**{r.status}**" if r.status != "missing" else r.status
            lines.append(
                "| "
                + " | ".join(
                    _cell(x) for x in (r.ref, r.title, r.tier, r.setting, status, algs, claims)
                )
                + " |"
            )
    return "\n".join(lines) + "\n"


INDEX_BEGIN = "<!-- BEGIN PAPERS INDEX (generated by: python -m theorylab.validations.papers) -->"
INDEX_END = "<!-- END PAPERS INDEX -->"


def with_current_index(text: str) -> str:
    """``text`` (docs/papers.md) with the block between the index markers regenerated."""
    return with_generated_block(text, INDEX_BEGIN, INDEX_END, markdown_index())


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0] if args else "docs/papers.md")
    if not path.is_file():
        print(
            f"python -m theorylab.validations.papers: {str(path)!r} is not a file; expected the "
            "papers page to update in place (docs/papers.md)",
            file=sys.stderr,
        )
        return 2
    path.write_text(with_current_index(path.read_text(encoding="utf-8")), encoding="utf-8")
    rows = papers()
    counts = ", ".join(f"{sum(r.status == s for r in rows)} {s}" for s in STATUSES)
    print(f"updated the papers index of {path}: {counts}")
    return 0


__all__ = ["STATUSES", "ClaimVerdict", "PaperRow", "paper_refs", "papers", "unknown_refs"]

if __name__ == "__main__":
    raise SystemExit(main())
