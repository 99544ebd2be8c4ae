"""mkdocs hook: a source tree in which ``theorylab.mdps`` etc. sit where griffe looks for them.

The repository's top-level folders ``mdps/``, ``algorithms/``, ``bounds/`` and ``validations/``
install as sub-packages of ``theorylab`` (setup.py's package map). mkdocstrings reads source
files by package path (and does not follow linked folders), so this hook copies the Python
sources into ``.cache/api-src/theorylab/`` in the installed layout. It is rebuilt on every build
(new modules appear without editing anything) and is ignored by git.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VIEW = ROOT / ".cache" / "api-src"
MAPPED = ("mdps", "algorithms", "bounds", "validations")


def build_view() -> Path:
    package = VIEW / "theorylab"
    if VIEW.exists():
        shutil.rmtree(VIEW)
    only_sources = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "theorylab", package, ignore=only_sources)
    for folder in MAPPED:
        shutil.copytree(ROOT / folder, package / folder, ignore=only_sources)
    return VIEW


# Built when mkdocs imports this hook, which happens while the configuration is validated:
# before any plugin's on_config. mkdocstrings' handler resolves ``paths`` in its own on_config,
# and hooks run after the plugins, so building it in on_config came too late on the first
# build of a fresh clone (``theorylab.bounds could not be found``; a second build passed).
build_view()
