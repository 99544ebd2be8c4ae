"""Regenerate every figure of the documentation site from the code: ``python docs/make_figures.py``.

Run from anywhere; it works in the repository root. In order:

1. every Python block of the tutorials, the algorithm cards and the README, in the repository
   root (the blocks that draw write ``docs/figures/...``), with their printed output checked
   as in ``tests/test_docs_code.py``;
2. every ``$ theorylab ...`` line of a console block on those pages that writes a file under
   ``docs/figures/``;
3. the three figures of the pessimism tutorial (``theorylab.figures.make_tutorial_figures``), the
   alpha -> 0 figure of the dual-RL tutorial (``theorylab.figures.dual_alpha_figure``), PR-LSVI's
   regret / query trade-off (``theorylab.figures.pr_lsvi_tradeoff_figure``) and
   the two of the GRPO KL tutorial (``theorylab.figures.grpo_kl_figures``, when torch is
   installed); and every full-scale claim figure a page shows, ``docs/figures/claim-NAME.png``
   (``theorylab validate NAME --scale full --plot docs/figures/claim-NAME.png``; slow), unless a
   page's own console command drew it in step 2;
4. the gallery: one figure per registered claim (``theorylab validate NAME --plot ...``) and
   ``docs/gallery.md`` with each claim's verdict, checks and the command that reproduces it.

``--scale quick`` (default) runs the claims at their quick scale (minutes in all);
``--scale full`` at full scale (hours). ``--only pages|gallery`` runs one half. The gallery keeps
one entry per claim (``docs/figures/gallery/NAME.json`` and ``NAME.png``) and reruns only the
stale ones: without an entry, whose definition changed since (``claim_fingerprint``), or quick
entries when ``--scale full`` is asked; ``--claims A,B`` reruns the named claims, ``--all``
every claim.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
GALLERY_DIR = "figures/gallery"


def console_commands(page: Path) -> list[str]:
    """The ``theorylab`` commands of a page's console blocks that write under docs/figures/."""
    from theorylab.markdown_code import commands

    return [
        c.line
        for c in commands(page)
        if c.argv and c.argv[0] == "theorylab" and "docs/figures/" in c.line
    ]


def make_pages() -> None:
    from theorylab.cli import main as cli
    from theorylab.figures import make_tutorial_figures
    from theorylab.markdown_code import executed_pages, run_page
    from theorylab.validations import list_validations

    pages = [*executed_pages(DOCS), ROOT / "README.md"]
    for page in pages:
        t0 = time.perf_counter()
        run_page(page, ROOT)
        print(f"ran {page.relative_to(ROOT)} ({time.perf_counter() - t0:.1f} s)")
        for command in console_commands(page):
            argv = shlex.split(command, comments=True)[1:]
            if "--no-progress" not in argv and argv[0] in ("run", "validate"):
                argv.append("--no-progress")
            print(f"$ {command}")
            if cli(argv) != 0:
                raise SystemExit(f"{page}: `{command}` failed")
    make_tutorial_figures(str(DOCS / "figures"))
    print("wrote the pessimism tutorial's figures")
    from theorylab.figures import dual_alpha_figure

    dual_alpha_figure(str(DOCS / "figures" / "dual-alpha-to-zero.png"))
    print("wrote the dual-RL tutorial's figure")
    from theorylab.figures import pr_lsvi_tradeoff_figure

    pr_lsvi_tradeoff_figure(str(DOCS / "figures" / "pr-lsvi-tradeoff.png"))
    print("wrote PR-LSVI's trade-off figure")
    if importlib.util.find_spec("torch") is not None:
        from theorylab.figures import grpo_kl_figures

        grpo_kl_figures(str(DOCS / "figures"))
        print("wrote the GRPO KL tutorial's figures")
    drawn = " ".join(command for page in pages for command in console_commands(page))
    for name in sorted(set(re.findall(r"figures/claim-([\w.-]+)\.png", _all_pages_text()))):
        path = f"docs/figures/claim-{name}.png"
        if name not in list_validations() or path in drawn:
            continue  # a page's own console command drew it above
        command = f"validate {name} --scale full --plot {path} --no-progress"
        print(f"$ theorylab {command}")
        if cli(shlex.split(command)) != 0:
            print("  (the claim did not pass; its figure is written all the same)")


def _all_pages_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in DOCS.rglob("*.md"))


def _verdict(rep) -> str:
    verdict = getattr(rep, "verdict", None)  # PASS / FAIL / VACUOUS where the claim reports it
    if verdict:
        return str(verdict)
    return "PASS" if rep.passed else "FAIL"


def claim_fingerprint(name: str) -> str:
    """A hash of claim ``name``'s definition: the source of its class and of the validation
    classes it derives from, the source of the functions it holds (a solver, an estimator) and
    its other attributes (statement, scales). A gallery entry made before it changed is stale;
    a change elsewhere in the library (an algorithm's code) is not seen."""
    import hashlib
    import inspect

    from theorylab.validations import VALIDATIONS

    claim = VALIDATIONS.get(name)
    parts = [
        inspect.getsource(cls)
        for cls in type(claim).__mro__
        if cls.__module__.startswith("theorylab.validations")
    ]
    for key, value in sorted(vars(claim).items()):
        parts.append(key)
        parts.append(inspect.getsource(value) if inspect.isfunction(value) else repr(value))
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:16]


def gallery_scale(name: str, scale: str) -> str:
    """The scale claim ``name`` is shown at when ``scale`` is asked: ``full`` falls back to
    ``quick`` for a claim without a full scale (one whose next scale is the papers' constants,
    out of a gallery run's reach)."""
    from theorylab.validations import VALIDATIONS

    scales = getattr(VALIDATIONS.get(name), "scales", None) or ("quick", "full")
    return scale if scale in scales else "quick"


def run_gallery_entry(name: str, scale: str) -> dict:
    """Run claim ``name`` at ``scale``; write its figure and its entry (``NAME.json``, the report
    as text with its verdict, time and fingerprint) under docs/figures/gallery/."""
    from theorylab.store import atomic_write_json
    from theorylab.validations import VALIDATIONS, validate

    scale = gallery_scale(name, scale)
    folder = DOCS / GALLERY_DIR
    folder.mkdir(parents=True, exist_ok=True)
    figure = folder / f"{name}.png"
    figure.unlink(missing_ok=True)
    t0 = time.perf_counter()
    rep = validate(name, scale=scale, plot=str(figure))
    seconds = time.perf_counter() - t0
    entry = {
        "name": name,
        "scale": scale,
        "verdict": _verdict(rep),
        "seconds": round(seconds, 1),
        "statement": VALIDATIONS.get(name).statement,
        "report": rep.format().rstrip(),
        "figure": bool(rep.figure and Path(rep.figure).exists()),
        "fingerprint": claim_fingerprint(name),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
    }
    atomic_write_json(folder / f"{name}.json", entry)
    print(f"{entry['verdict']:8s} {name} [{scale}] {seconds:.1f} s", flush=True)
    return entry


def _entry(name: str) -> dict | None:
    import json

    path = DOCS / GALLERY_DIR / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def _stale(name: str, entry: dict | None, scale: str) -> bool:
    if entry is None or entry["fingerprint"] != claim_fingerprint(name):
        return True
    # a quick run never replaces a fresh full entry; a full run replaces a quick entry unless
    # the claim has no full scale
    return scale == "full" and entry["scale"] != gallery_scale(name, "full")


def make_gallery(
    scale: str, names: list[str] | None = None, rerun_all: bool = False
) -> Path | None:
    """Run the claims whose entry is stale (none yet, its source changed since, or, at full
    scale, a quick one: a quick run never replaces a fresh full-scale entry), or only ``names``,
    or every claim with ``rerun_all``; then write docs/gallery.md from the stored entries."""
    from theorylab.validations import list_validations

    registered = list_validations()
    unknown = sorted(set(names or ()) - set(registered))
    if unknown:
        raise SystemExit(f"no claim named {', '.join(unknown)} (theorylab list validations)")
    for name in registered:
        if names is not None and name not in names:
            continue
        if names is None and not rerun_all and not _stale(name, _entry(name), scale):
            continue
        run_gallery_entry(name, scale)
    folder = DOCS / GALLERY_DIR
    for path in [*folder.glob("*.json"), *folder.glob("*.png")]:
        if path.stem not in registered:
            path.unlink()  # a claim that is no longer registered
    missing = [name for name in registered if _entry(name) is None]
    if missing:
        print(f"docs/gallery.md not written: no entry yet for {', '.join(missing)}")
        return None
    return write_gallery_page()


def write_gallery_page() -> Path:
    """docs/gallery.md, assembled from the stored entries (no claim is run)."""
    from theorylab.bounds.registry import markdown_prose
    from theorylab.validations import list_validations

    rows, sections, scales = [], [], []
    for name in list_validations():
        e = _entry(name)
        if e is None:
            raise SystemExit(f"claim {name} has no gallery entry: run --claims {name}")
        fresh = e["fingerprint"] == claim_fingerprint(name)
        note = "" if fresh else " (its source changed since: stale)"
        if e["scale"] == "quick" and gallery_scale(name, "full") == "quick":
            note += " (no full scale: its next scale is the papers' constants, `--scale paper`)"
        scales.append(e["scale"])
        command = f"theorylab validate {name} --scale {e['scale']} --plot {name}.png"
        rows.append(
            f"| [`{name}`](#{name}) | {e['verdict']} | {e['scale']}{note} | {e['seconds']:.0f} s |"
        )
        text = [
            f"## {name}",
            "",
            markdown_prose(e["statement"]),
            "",
            f"**{e['verdict']}** at {e['scale']} scale ({e['seconds']:.1f} s, {e['date']})"
            f"{note}. Reproduce: `{command}`",
            "",
            "```text",
            e["report"],
            "```",
            "",
        ]
        if e["figure"]:
            text += [f"![{name}]({GALLERY_DIR}/{name}.png)", ""]
        else:
            text += ["This claim checks exact identities or values and draws no figure.", ""]
        sections.append("\n".join(text))
    n_full = scales.count("full")
    scale_note = (
        f"{n_full} of the {len(scales)} claims are shown at their **full** scale"
        + (
            f", the other {len(scales) - n_full} at their quick scale (the one CI runs)"
            if n_full < len(scales)
            else ""
        )
        + "; the table says which."
    )
    page = "\n".join(
        [
            "# Gallery of claims",
            "",
            "One figure per registered claim, with its verdict and the command that reproduces "
            f"it. {scale_note} Generated by `python docs/make_figures.py --only gallery` "
            "(it reruns the claims without an entry or whose source changed; `--scale full`, "
            "`--claims NAME,...`, `--all`); do not edit by hand.",
            "",
            "| claim | verdict | scale | time |",
            "|---|---|---|---|",
            *rows,
            "",
            *sections,
        ]
    )
    out = DOCS / "gallery.md"
    out.write_text(page.rstrip() + "\n", encoding="utf-8")
    from theorylab.validations.papers import main as write_papers_index

    write_papers_index([str(DOCS / "papers.md")])  # its claims' verdicts are these entries'
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=["quick", "full"], default="quick")
    parser.add_argument("--only", choices=["pages", "gallery"])
    parser.add_argument("--claims", help="gallery: rerun only these claims (comma-separated)")
    parser.add_argument(
        "--all", action="store_true", dest="rerun_all", help="gallery: rerun every claim"
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.chdir(ROOT)
    if args.only in (None, "pages"):
        make_pages()
    if args.only in (None, "gallery"):
        names = args.claims.split(",") if args.claims else None
        page = make_gallery(args.scale, names, args.rerun_all)
        if page is not None:
            print(f"wrote {page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
