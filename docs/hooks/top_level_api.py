"""mkdocs hook: the table of top-level names on docs/api/theorylab.md, made from the package.

``theorylab/__init__.py`` re-exports its names lazily (a module-level ``__getattr__`` over
``_EXPORTS``), which mkdocstrings cannot see: ``::: theorylab`` rendered the package docstring and
no function, so ``tl.run`` was missing from the page. This hook replaces the marker
``<!-- TOP-LEVEL NAMES -->`` on that page with one row per name in ``theorylab.__all__``: the name,
its kind, the first sentence of its docstring and a link to its full documentation (the module it
comes from, read statically with griffe from the source view that ``api_source_view.py`` builds;
nothing is imported). A name added to ``_EXPORTS`` appears without editing the page.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VIEW = ROOT / ".cache" / "api-src"
PAGE = "api/theorylab.md"
MARKER = "<!-- TOP-LEVEL NAMES -->"


def exports() -> dict[str, str]:
    """``theorylab._EXPORTS`` (name -> module), read from the source without importing it."""
    tree = ast.parse((ROOT / "theorylab" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in targets):
                return ast.literal_eval(node.value)
    raise RuntimeError("theorylab/__init__.py has no _EXPORTS")


def _first_sentence(docstring: str) -> str:
    """The docstring's first sentence: up to a full stop before a capital letter (not "e.g.")."""
    paragraph = " ".join(docstring.strip().split("\n\n", 1)[0].split())
    match = re.match(r"(.+?\.)\s+[A-Z]", paragraph)
    return (match.group(1) if match else paragraph).replace("|", r"\|")


def table() -> str:
    import griffe

    loader = griffe.GriffeLoader(search_paths=[str(VIEW)])
    package = loader.load("theorylab", try_relative_path=False)  # not ./theorylab: the view
    rows = ["| name | kind | what it is | from |", "|---|---|---|---|"]
    for name, module in sorted(exports().items(), key=lambda item: item[0].lower()):
        inner = module.removeprefix("theorylab").lstrip(".")
        obj = package[f"{inner}.{name}" if inner else name]
        target = obj.final_target if obj.is_alias else obj
        if target.is_module and name in target.members:  # planning.value_iteration (a module)
            target = target[name]  # re-exports its function value_iteration
            target = target.final_target if target.is_alias else target
        if target.is_attribute and str(target.value) in target.parent.members:
            target = target.parent[str(target.value)]  # RunResult = RegretResult
            target = target.final_target if target.is_alias else target
        kind = target.kind.value
        doc = target.docstring.value if target.docstring else ""
        if target.name != name:  # RunResult = RegretResult
            what = f"another name for `{target.name}`"
        else:
            what = _first_sentence(doc) if doc else ""
        link = f"<autoref identifier={target.path} optional><code>tl.{name}</code></autoref>"
        rows.append(f"| {link} | {kind} | {what} | `{module}` |")
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise RuntimeError(f"docs/{PAGE} lost its marker {MARKER}")
    return markdown.replace(MARKER, table())
