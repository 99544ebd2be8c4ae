"""The documentation site builds with ``mkdocs build --strict`` (a broken link, a missing page in
the navigation or a docstring mkdocstrings cannot render fails the build).

Needs the ``[docs]`` extra (CI installs it: there a missing mkdocs is a failure, not a skip).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from site_build import build_site

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

if not os.environ.get("CI"):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")


def test_docs_site_builds_strict(tmp_path):
    # As on a fresh clone: no source view left by an earlier build (the first build of a clone
    # used to fail because the view was made after mkdocstrings had read its paths).
    shutil.rmtree(ROOT / ".cache" / "api-src", ignore_errors=True)
    proc = build_site(tmp_path / "site")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    site = tmp_path / "site"
    assert (site / "index.html").exists()
    for page in ("tutorials/sweeps", "api/mdps", "algorithms/ucbvi"):
        assert (site / page / "index.html").exists(), page
    api = (site / "api" / "planning" / "index.html").read_text(encoding="utf-8")
    assert "backward_induction" in api  # docstrings rendered, not an empty page


def test_every_page_is_in_the_navigation():
    import yaml  # mkdocs depends on PyYAML

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text().replace("!!python", "#"))

    def pages(nav):
        for item in nav:
            for value in item.values() if isinstance(item, dict) else [item]:
                if isinstance(value, list):
                    yield from pages(value)
                else:
                    yield value

    listed = set(pages(config["nav"]))
    docs = ROOT / "docs"
    on_disk = {p.relative_to(docs).as_posix() for p in docs.rglob("*.md")}
    assert on_disk - listed == set(), "pages missing from mkdocs.yml's nav"


SOURCE_FOLDERS = ("theorylab", "mdps", "algorithms", "bounds", "validations", "tests", "docs")


def _sources():
    for folder in SOURCE_FOLDERS:
        yield from (ROOT / folder).rglob("*.py")
    yield ROOT / "setup.py"


def test_sources_cite_documents_that_are_in_the_repository():
    outside = ("ARCHITECTURE" + ".md", "peers" + ".md")  # design notes kept outside the repo
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in _sources()
        for name in outside
        if name in path.read_text(encoding="utf-8")
    ]
    assert offenders == [], "cite a page under docs/ instead"


def test_every_docs_page_cited_by_a_source_exists():
    import re

    cited = {
        (path.relative_to(ROOT), m)
        for path in _sources()
        for m in re.findall(r"docs/[\w./-]+\.md", path.read_text(encoding="utf-8"))
    }
    missing = sorted(f"{p}: {m}" for p, m in cited if not (ROOT / m).exists())
    assert missing == []


def test_every_figure_is_shown_by_a_page():
    # figures come from python docs/make_figures.py and are shown somewhere; none hand-placed
    docs = ROOT / "docs"
    text = "\n".join(p.read_text(encoding="utf-8") for p in docs.rglob("*.md"))
    unused = [
        p.relative_to(docs).as_posix()
        for p in (docs / "figures").rglob("*.png")
        if p.relative_to(docs / "figures").as_posix() not in text
    ]
    assert unused == []


def _make_figures():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_figures", DOCS / "make_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_gallery_has_an_entry_and_a_section_for_every_claim():
    import json

    from theorylab.validations import list_validations

    gallery = (DOCS / "gallery.md").read_text(encoding="utf-8")
    for name in list_validations():
        entry = DOCS / "figures" / "gallery" / f"{name}.json"
        assert entry.exists(), f"{name}: no entry (python docs/make_figures.py --only gallery)"
        e = json.loads(entry.read_text(encoding="utf-8"))
        assert e["name"] == name and e["scale"] in ("quick", "full")
        assert e["verdict"] in ("PASS", "FAIL", "VACUOUS", "SMOKE", "UNPOWERED")
        assert e["figure"] == (DOCS / "figures" / "gallery" / f"{name}.png").exists()
        assert f"## {name}\n" in gallery, f"{name}: not on docs/gallery.md"


def test_a_gallery_entry_goes_stale_when_its_claim_changes(monkeypatch):
    import dataclasses

    mf = _make_figures()
    from theorylab.validations import VALIDATIONS

    name = "cvar-identities"
    fresh = {"fingerprint": mf.claim_fingerprint(name), "scale": "full"}
    assert not mf._stale(name, fresh, "full") and not mf._stale(name, fresh, "quick")
    assert mf._stale(name, {**fresh, "scale": "quick"}, "full")  # full asked, quick shown
    assert mf._stale(name, None, "quick")
    claim, get = VALIDATIONS.get(name), VALIDATIONS.get
    # a claim without a full scale (next comes the papers' constants) is shown at quick
    # (no registered claim lacks one today: lsvi-ucb-paper-constant gained its full scale)
    no_full = "lsvi-ucb-paper-constant"
    paper_only = dataclasses.replace(
        get(no_full), scales={k: v for k, v in get(no_full).scales.items() if k != "full"}
    )
    with monkeypatch.context() as m:
        m.setattr(VALIDATIONS, "get", lambda n: paper_only if n == no_full else get(n))
        entry = {"fingerprint": mf.claim_fingerprint(no_full), "scale": "quick"}
        assert mf.gallery_scale(no_full, "full") == "quick"
        assert not mf._stale(no_full, entry, "full")
    assert mf.gallery_scale(no_full, "full") == "full"
    changed = dataclasses.replace(claim, statement=claim.statement + " (changed)")
    monkeypatch.setattr(VALIDATIONS, "get", lambda n: changed if n == name else get(n))
    assert mf._stale(name, fresh, "full")
