"""The papers index: registrations name seed-catalogue rows, the shipped catalogue is what the
catalogues give, statuses follow from the registries, and the CLI and docs page show them.

Tests marked "reference" read the seed catalogues in ``shared/reference`` beside the repository
(CI has ``shared/`` beside its clone; ``THEORYLAB_SEED_REFERENCE`` points elsewhere) and are
skipped where that folder is absent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from theorylab.algorithms.registry import get_algorithm, list_algorithms
from theorylab.cli import main
from theorylab.markdown_code import run_page
from theorylab.seed_catalogue import (
    build_catalogue,
    catalogue_text,
    coverage_statuses,
    data_path,
    load_catalogue,
)
from theorylab.validations import VALIDATIONS, list_validations
from theorylab.validations import papers as index

ROOT = Path(__file__).resolve().parents[1]


def _reference() -> Path | None:
    candidates = [os.environ.get("THEORYLAB_SEED_REFERENCE"), ROOT.parent / "shared" / "reference"]
    for c in candidates:
        if c and (Path(c) / "seed-coverage.md").is_file():
            return Path(c)
    return None


REFERENCE = _reference()
needs_reference = pytest.mark.skipif(
    REFERENCE is None, reason="no shared/reference beside the repository (seed catalogues)"
)


# --------------------------------------------------------------------------- the shipped file
@needs_reference
def test_the_shipped_catalogue_is_what_the_catalogues_give():
    shipped = data_path().read_text(encoding="utf-8")
    assert shipped == catalogue_text(REFERENCE), (
        "run: python -m theorylab.seed_catalogue ../shared/reference"
    )


# Y rows whose algorithm is a module outside the registry (seed-coverage.md's status note)
UNREGISTERED: set[str] = set()  # ReLOAD (000#1) is registered now: `reload`


@needs_reference
def test_every_row_covered_y_or_a_is_named_by_the_registries():
    """seed-coverage.md's Y rows (implemented, a claim checks the guarantee) are named by an
    algorithm and a claim, its A rows (implemented, no claim) by an algorithm: a registration
    that lost its ``papers=`` fails here."""
    algorithms, claims = index.paper_refs()
    statuses = coverage_statuses(REFERENCE)
    y_rows = sorted(ref for ref, s in statuses.items() if s == "Y")
    a_rows = sorted(ref for ref, s in statuses.items() if s == "A")
    assert len(y_rows) >= 14 and len(a_rows) >= 1
    assert [ref for ref in y_rows if ref not in claims] == []
    assert [ref for ref in y_rows if ref not in algorithms and ref not in UNREGISTERED] == []
    assert [ref for ref in a_rows if ref not in algorithms] == []


def test_the_shipped_catalogue_has_every_field_of_every_row():
    cat = load_catalogue()
    assert set(cat["families"]) == {str(n) for n in range(1, 10)}
    refs = [r["ref"] for r in cat["rows"]]
    assert len(refs) == len(set(refs)) >= 190
    for r in cat["rows"]:
        assert set(r) == {"ref", "title", "tier", "family", "setting", "same_paper"}
        assert r["tier"] in ("A", "B", "A (assigned)", "B (assigned)") and r["title"]
        assert str(r["family"]) in cat["families"] and not r["title"].endswith("…")
        assert all(
            other in refs and r["ref"] in _row(other)["same_paper"] for other in r["same_paper"]
        )


def _row(ref: str) -> dict:
    return next(r for r in load_catalogue()["rows"] if r["ref"] == ref)


# --------------------------------------------------------------------------- the parser
COVERAGE = """# Coverage

| Family | tier-A rows | tier-B rows |
|---|---|---|
| **Total** | **2** | **1** |

## 2. Per-row table

### Family 2: linear / low-rank MDPs and bandits

| Ref | Title | Tier | Setting | Status | algorithm(s) | Claim(s) | Notes | x |
|---|---|---|---|---|---|---|---|---|
| 000#7 (L47) | Title About p(a\\|s) Cu… | A | linear MDP | **Y** | a | c | - | - |
| 001#3 (L12) | Short | B | bandit | **N** | - | - | Same paper as 002-004#C4. | - |

### Family 9: other

| Ref | Title | Tier | Setting | Status | algorithm(s) | Claim(s) | Notes | x |
|---|---|---|---|---|---|---|---|---|
| 002-004#C4 (003) | Short | A (assigned) | other thing | **A** | b | - | - | - |

## 3. Ranked

| 000#7 | not a per-row table | A | x | **N** | - | - | - | - |
"""
CATALOGUE_000 = """# 000
## 1. Theory
| # | L | Exact title | Tier | Setting |
|---|---|---|---|---|
| 7 | L47 | Title About p(a\\|s) Cut Short | A | s |
## 2. Deep
| 8 | L50 | Not Table One | A | s |
"""
CATALOGUE_001 = """# 001
## 1. Table 1
### 1.1 Tabular
| # | Tier | Title (line) | Setting |
|---|---|---|---|
| 3 | B | Short (L12) | s |
"""
CATALOGUE_002 = """# 002-004
## 1. Papers
| # | Exact title | File | Setting |
|---|---|---|---|
| C4 | Short | 003 | s |
"""


def _write_reference(folder: Path, coverage: str = COVERAGE) -> Path:
    (folder / "seed-coverage.md").write_text(coverage, encoding="utf-8")
    (folder / "seed-catalogue-000.md").write_text(CATALOGUE_000, encoding="utf-8")
    (folder / "seed-catalogue-001.md").write_text(CATALOGUE_001, encoding="utf-8")
    (folder / "seed-catalogue-002-004.md").write_text(CATALOGUE_002, encoding="utf-8")
    return folder


def test_the_parser_reads_rows_full_titles_tiers_families_and_same_paper_links(tmp_path):
    cat = build_catalogue(_write_reference(tmp_path))
    assert cat["families"] == {"2": "linear / low-rank MDPs and bandits", "9": "other"}
    assert cat["rows"] == [
        {
            "ref": "000#7",
            "title": "Title About p(a|s) Cut Short",
            "tier": "A",
            "family": 2,
            "setting": "linear MDP",
            "same_paper": [],
        },
        {
            "ref": "001#3",
            "title": "Short",
            "tier": "B",
            "family": 2,
            "setting": "bandit",
            "same_paper": ["002-004#C4"],
        },
        {
            "ref": "002-004#C4",
            "title": "Short",
            "tier": "A (assigned)",
            "family": 9,
            "setting": "other thing",
            "same_paper": ["001#3"],
        },
    ]
    assert coverage_statuses(tmp_path) == {"000#7": "Y", "001#3": "N", "002-004#C4": "A"}


@pytest.mark.parametrize(
    "old, new, match",
    [
        ("**2** | **1**", "**3** | **1**", "read 3 tier-A/B rows, but its summary's total says 4"),
        ("| Short | B | bandit", "| Other | B | bandit", "title 'Other'"),
        ("| Short | B | bandit", "| Short | A | bandit", "tier A in seed-coverage.md, B in"),
        ("| 002-004#C4 (003)", "| 002-004#C5 (003)", "002-004#C5: in seed-coverage.md but not"),
    ],
)
def test_the_parser_refuses_catalogues_that_disagree(tmp_path, old, new, match):
    assert old in COVERAGE
    _write_reference(tmp_path, COVERAGE.replace(old, new))
    with pytest.raises(ValueError, match=match.replace("(", r"\(").replace(")", r"\)")):
        build_catalogue(tmp_path)


# --------------------------------------------------------------------------- the registrations
def test_every_registered_reference_is_a_tier_a_or_b_row():
    assert index.unknown_refs() == []


def test_the_rows_of_one_paper_are_named_together():
    """A registration naming 000#24 also names 001#53 (the same paper, catalogued twice)."""
    owners = [(f"algorithm {n}", get_algorithm(n).papers) for n in list_algorithms()]
    owners += [(f"claim {n}", VALIDATIONS.papers(n)) for n in list_validations()]
    missing = [
        f"{who}: {ref} without {other}"
        for who, refs in owners
        for ref in refs
        for other in _row(ref)["same_paper"]
        if other not in refs
    ]
    assert missing == []


def test_registrations_refuse_a_reference_that_is_not_a_catalogue_row():
    from theorylab.algorithms.registry import check_paper_refs

    assert check_paper_refs("000#30", "x") == ("000#30",)
    for bad in ("000-30", "003#1", "seed-catalogue-000.md#40", "000#"):
        with pytest.raises(ValueError, match="is not a seed-catalogue row"):
            check_paper_refs((bad,), "algorithm 'x'")


# --------------------------------------------------------------------------- the index
@pytest.fixture
def fake_registries(monkeypatch, tmp_path):
    """Rows 000#6 (an algorithm and a claim), 000#26 (an algorithm), 000#1 (a claim), and a
    gallery with one entry."""
    algorithms = {"000#6": ["alg-a"], "002-004#F1": ["alg-a"], "000#26": ["alg-b"]}
    claims = {"000#6": ["claim-x", "claim-y"], "002-004#F1": ["claim-x"], "000#1": ["claim-z"]}
    monkeypatch.setattr(index, "paper_refs", lambda: (algorithms, claims))
    entry = {"verdict": "FAIL", "scale": "full", "date": "2026-01-02"}
    (tmp_path / "claim-x.json").write_text(json.dumps(entry), encoding="utf-8")
    return tmp_path


def test_status_follows_from_who_names_the_row(fake_registries):
    rows = {r.ref: r for r in index.papers(gallery=fake_registries)}
    assert len(rows) == len(load_catalogue()["rows"])
    assert rows["000#6"].status == "implemented with a claim"
    assert rows["000#26"].status == "implemented"
    assert rows["000#1"].status == "claim only"
    assert rows["000#30"].status == "missing"
    assert rows["000#30"].algorithms == () and rows["000#30"].claims == ()
    x, y = rows["000#6"].claims
    assert (x.name, x.verdict, x.scale, x.date) == ("claim-x", "FAIL", "full", "2026-01-02")
    assert (y.name, y.verdict, y.scale) == ("claim-y", "not run", None)
    assert rows["000#6"].same_paper == ("002-004#F1",)


def test_query_status_and_family_filter(fake_registries):
    def refs(*args, **kwargs):
        return [r.ref for r in index.papers(*args, gallery=fake_registries, **kwargs)]

    assert refs("000#6") == ["000#6"]  # a reference is matched whole: not 000#60 ... 000#69
    assert refs("dual rl") == ["000#6", "002-004#F1"]  # title words, any case
    assert refs("claim-z") == ["000#1"]  # claim and algorithm names
    assert refs("DUAL alg-a", status="implemented-with-a-claim") == ["000#6", "002-004#F1"]
    assert refs(status="implemented") == ["000#26"]
    assert refs(status="Claim only") == ["000#1"]
    family_7 = refs(family=7)
    assert family_7 and all(_row(ref)["family"] == 7 for ref in family_7)
    missing_7 = refs(status="missing", family=7)
    assert set(missing_7) == set(family_7)  # no algorithm names a family-7 row here
    assert refs("no such words anywhere") == []


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"status": "done"}, "status 'done': expected one of implemented-with-a-claim, "),
        ({"family": 12}, "family 12: expected one of 1, 2, 3, 4, 5, 6, 7, 8, 9"),
    ],
)
def test_a_bad_filter_is_refused_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        index.papers(**kwargs)


def test_the_registered_index_has_the_rows_the_library_implements():
    rows = {r.ref: r for r in index.papers(gallery=None)}
    assert rows["000#41"].status == "implemented with a claim"
    assert "vi-lcb" in rows["000#41"].algorithms
    assert "offline-lcb-rates" in [c.name for c in rows["000#41"].claims]
    assert all(c.verdict == "not run" for r in rows.values() for c in r.claims)  # no gallery


def test_tl_papers_is_the_index():
    import theorylab as tl

    assert tl.papers is index.papers


# --------------------------------------------------------------------------- CLI and docs
def test_cli_papers_one_row_shows_algorithms_claims_and_verdicts(capsys):
    assert main(["papers", "000#24"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("000#24  Is RLHF More Difficult than Standard RL?\n")
    assert "status: implemented with a claim" in out and "p2r-ucbvi" in out
    assert "claim: p2r-queries-bounded-regret-sublinear: " in out and "same paper: 001#53" in out


def test_cli_papers_filters_and_json(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # titles in full
    assert main(["papers", "--status", "missing", "--family", "7", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and {(r["status"], r["family"]) for r in rows} == {("missing", 7)}
    assert main(["papers", "mirror", "descent"]) == 0
    out = capsys.readouterr().out
    assert "Mirror Descent Policy Optimization" in out and "rows:" in out
    assert main(["papers", "no", "such", "paper", "zzz"]) == 0
    assert "no tier-A/B row of the seed catalogue matches" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["papers", "--status", "done"], "theorylab papers: error: status 'done': expected"),
        (["papers", "--family", "0"], "theorylab papers: error: family 0: expected one of 1,"),
    ],
)
def test_cli_papers_refuses_bad_filters_in_one_line(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_the_docs_page_is_current():
    text = (ROOT / "docs" / "papers.md").read_text(encoding="utf-8")
    assert index.with_current_index(text) == text, (
        "run: python -m theorylab.validations.papers docs/papers.md"
    )
    for r in index.papers():
        assert f"| {r.ref} | " in text


def test_the_docs_page_code_runs(tmp_path):
    run_page(ROOT / "docs" / "papers.md", tmp_path)


def test_updating_a_missing_papers_page_is_one_line(tmp_path, capsys):
    from theorylab.validations.papers import main

    missing = tmp_path / "nowhere" / "papers.md"
    assert main([str(missing)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(missing) in err and "docs/papers.md" in err
    assert not missing.exists()
