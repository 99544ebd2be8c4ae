"""mkdocs hook: a source tree in which ``theorylab.mdps`` etc. sit where griffe looks for them.

The repository's top-level folders ``mdps/``, ``algorithms/``, ``bounds/`` and ``validations/``
install as sub-packages of ``theorylab`` (setup.py's package map). mkdocstrings reads source
files by package path (and does not follow linked folders), so this hook copies the Python
sources into ``.cache/api-src/theorylab/`` in the installed layout. It is rebuilt on every build
(new modules appear without editing anything) and is ignored by git.

The docstrings use Sphinx roles (``:class:`~theorylab.results.Result```), which read well in
``help()`` but are not Markdown: mkdocstrings printed them as text. The copies in the view have
each role replaced by an optional mkdocs-autorefs reference, a link where the object has an API
page and plain code where it has none (``sphinx_roles_to_autorefs``); the sources are not edited.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VIEW = ROOT / ".cache" / "api-src"
MAPPED = ("mdps", "algorithms", "bounds", "validations")
ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|mod|attr|obj|data|exc|const):`(~?)([\w.]+)(?:\(\))?`"
)


def sphinx_roles_to_autorefs(text: str, module: str) -> str:
    """``text`` (the source of ``module``) with every Sphinx role made an optional autoref.

    ``:class:`~a.b.C``` shows ``C`` and ``:class:`a.b.C``` shows ``a.b.C``, both linking to
    ``a.b.C``; a name without a dot (``:func:`run```) or under a class (``:meth:`Result.save```)
    is looked up in ``module``, as Sphinx does; a dotted lower-case path (``os.replace``) is kept.
    """

    def autoref(m: re.Match) -> str:
        short, target = m.group(1), m.group(2)
        if target == "theorylab" or ("." in target and target[0].islower()):
            identifier = target
        else:
            identifier = f"{module}.{target}"
        title = target.rsplit(".", 1)[-1] if short else target
        return f"<autoref identifier={identifier} optional><code>{title}</code></autoref>"

    return ROLE.sub(autoref, text)


def build_view() -> Path:
    package = VIEW / "theorylab"
    if VIEW.exists():
        shutil.rmtree(VIEW)
    only_sources = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "theorylab", package, ignore=only_sources)
    for folder in MAPPED:
        shutil.copytree(ROOT / folder, package / folder, ignore=only_sources)
    for path in VIEW.rglob("*.py"):
        parts = path.relative_to(VIEW).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        text = path.read_text(encoding="utf-8")
        if ROLE.search(text):
            path.write_text(sphinx_roles_to_autorefs(text, module), encoding="utf-8")
    return VIEW


# Built when mkdocs imports this hook, which happens while the configuration is validated:
# before any plugin's on_config. mkdocstrings' handler resolves ``paths`` in its own on_config,
# and hooks run after the plugins, so building it in on_config came too late on the first
# build of a fresh clone (``theorylab.bounds could not be found``; a second build passed).
build_view()
