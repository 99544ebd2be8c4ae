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
``--scale full`` at full scale (hours). ``--only pages|gallery`` runs one half.
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
    from theorylab.markdown_code import blocks

    out = []
    for block in blocks(page):
        if block.language not in ("console", "bash", "shell"):
            continue
        for line in block.code.splitlines():
            command = line.strip().removeprefix("$ ")
            if command.startswith("theorylab ") and "docs/figures/" in command:
                out.append(command)
    return out


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
            argv = shlex.split(command)[1:]
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


def make_gallery(scale: str) -> Path:
    from theorylab.validations import VALIDATIONS, list_validations, validate

    folder = DOCS / GALLERY_DIR
    folder.mkdir(parents=True, exist_ok=True)
    sections = []
    rows = []
    for name in list_validations():
        figure = folder / f"{name}.png"
        figure.unlink(missing_ok=True)
        t0 = time.perf_counter()
        rep = validate(name, scale=scale, plot=str(figure))
        seconds = time.perf_counter() - t0
        verdict = _verdict(rep)
        print(f"{verdict:8s} {name} [{scale}] {seconds:.1f} s")
        command = f"theorylab validate {name} --scale {scale} --plot {name}.png"
        rows.append(f"| [`{name}`](#{name}) | {verdict} | {seconds:.0f} s |")
        text = [
            f"## {name}",
            "",
            VALIDATIONS.get(name).statement,
            "",
            f"**{verdict}** at {scale} scale ({seconds:.1f} s). Reproduce: `{command}`",
            "",
            "```text",
            rep.format().rstrip(),
            "```",
            "",
        ]
        if rep.figure and Path(rep.figure).exists():
            text += [f"![{name}]({GALLERY_DIR}/{name}.png)", ""]
        else:
            text += ["This claim checks exact identities or values and draws no figure.", ""]
        sections.append("\n".join(text))
    scale_note = (
        "These runs are at the claims' **quick** scale (the one CI runs), generated in this "
        "session because the full-scale runs take hours; `python docs/make_figures.py --scale "
        "full` regenerates the page at full scale."
        if scale == "quick"
        else "These runs are at the claims' **full** scale."
    )
    page = "\n".join(
        [
            "# Gallery of claims",
            "",
            "One figure per registered claim, with its verdict and the command that reproduces "
            f"it. {scale_note} Generated by `python docs/make_figures.py`; do not edit by hand.",
            "",
            "| claim | verdict | time |",
            "|---|---|---|",
            *rows,
            "",
            *sections,
        ]
    )
    out = DOCS / "gallery.md"
    out.write_text(page.rstrip() + "\n", encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=["quick", "full"], default="quick")
    parser.add_argument("--only", choices=["pages", "gallery"])
    args = parser.parse_args(argv)
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.chdir(ROOT)
    if args.only in (None, "pages"):
        make_pages()
    if args.only in (None, "gallery"):
        print(f"wrote {make_gallery(args.scale).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
