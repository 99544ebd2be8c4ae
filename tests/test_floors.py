"""The floor plan (docs/architecture.md), read from the source without executing it.

Every ``import`` statement of the package -- at module level or inside a function, since a lazy
import is still a dependency -- is an edge of the module graph. The test fails on

* a circle between modules (a strongly connected component with more than one module), and
* an import from a lower floor to a higher one (``FLOORS``: each floor lists the floors it may
  import; a floor may always import itself).

``test_the_checker_fails_on_*`` show that the checker itself catches a deliberate circle and a
deliberate upward arrow on a synthetic graph.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# import name -> folder (setup.py's package map)
PACKAGE_DIRS = {
    "theorylab": ROOT / "theorylab",
    "theorylab.mdps": ROOT / "mdps",
    "theorylab.bounds": ROOT / "bounds",
    "theorylab.algorithms": ROOT / "algorithms",
    "theorylab.validations": ROOT / "validations",
}

# floor -> the floors below it that it may import (docs/architecture.md, "Floors").
FLOORS: dict[str, set[str]] = {
    "ground": set(),
    "mdps": {"ground"},
    "bounds": {"ground"},
    "algorithms": {"ground", "mdps", "bounds"},
    "experiment": {"ground", "mdps", "bounds", "algorithms"},
    "validations": {"ground", "mdps", "bounds", "algorithms", "experiment"},
    "interface": {"ground", "mdps", "bounds", "algorithms", "experiment", "validations"},
}
# module-name prefix -> floor (longest prefix wins; anything else under theorylab. is ground).
FLOOR_OF_PREFIX = {
    "theorylab.mdps": "mdps",
    "theorylab.bounds": "bounds",
    "theorylab.algorithms": "algorithms",
    "theorylab.experiment": "experiment",
    "theorylab.runners": "experiment",
    "theorylab.sweeps": "experiment",
    "theorylab.grid_file": "experiment",
    "theorylab.sweep_tables": "experiment",
    "theorylab.markdown_code": "interface",
    "theorylab.validations": "validations",
    "theorylab.figures": "experiment",
    "theorylab.cli": "interface",
    "theorylab.demo": "interface",
    "theorylab.bench": "interface",
    "theorylab.__main__": "interface",
}
PACKAGE_ROOT = "theorylab"  # its __init__ re-exports lazily, by strings: no edges


def floor_of(module: str) -> str:
    best = ""
    for prefix in FLOOR_OF_PREFIX:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
            best = prefix
    return FLOOR_OF_PREFIX[best] if best else "ground"


def package_modules() -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for pkg, folder in PACKAGE_DIRS.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if pkg == "theorylab" and parts[0] in {"mdps", "bounds", "algorithms", "validations"}:
                continue  # not present: those folders live at the repository root
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join([pkg, *parts])] = path
    return mods


def _imported(module: str, path: Path, tree: ast.AST, modules=()) -> set[str]:
    """The ``theorylab`` modules ``module`` imports. ``from pkg import name`` is an edge to the
    submodule ``pkg.name`` when ``modules`` has one (the package's ``__init__`` is then not
    needed), else to ``pkg`` itself."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.add(sub if sub in modules or not modules else target)
                if not modules:
                    out.add(target)
    return {m for m in out if m == "theorylab" or m.startswith("theorylab.")}


def import_graph() -> dict[str, set[str]]:
    mods = package_modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        edges = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for target in _imported(name, path, tree, mods):
            while target and target not in mods:  # ``theorylab.x.y`` names a symbol of x
                target = target.rpartition(".")[0]
            if target and target != name and target != PACKAGE_ROOT:
                edges.add(target)
        graph[name] = edges
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            advanced = False
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def upward_arrows(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for a, targets in sorted(graph.items()):
        fa = floor_of(a)
        for b in sorted(targets):
            fb = floor_of(b)
            if fb != fa and fb not in FLOORS[fa]:
                bad.append(f"{a} ({fa}) imports {b} ({fb})")
    return bad


# --------------------------------------------------------------------------- the package
@pytest.fixture(scope="module")
def graph():
    g = import_graph()
    assert len(g) > 100 and "theorylab.experiment" in g and "theorylab.mdps.tabular" in g
    return g


def test_no_circle_between_modules(graph):
    assert circles(graph) == []


def test_no_import_from_a_lower_floor_to_a_higher_one(graph):
    assert upward_arrows(graph) == []


def test_every_module_has_a_floor(graph):
    assert {floor_of(m) for m in graph} <= set(FLOORS)


# --------------------------------------------------------------------------- the checker itself
SYNTHETIC = {
    "theorylab.store": {"theorylab.errors"},
    "theorylab.errors": set(),
    "theorylab.mdps.tabular": {"theorylab.errors"},
    "theorylab.algorithms.planning": {"theorylab.mdps.tabular"},
    "theorylab.experiment": {"theorylab.algorithms.planning", "theorylab.store"},
}


def test_the_checker_passes_a_clean_synthetic_graph():
    assert circles(SYNTHETIC) == [] and upward_arrows(SYNTHETIC) == []


def test_the_checker_fails_on_a_deliberate_circle():
    g = {k: set(v) for k, v in SYNTHETIC.items()}
    g["theorylab.store"].add("theorylab.experiment")  # the store importing the top floor
    assert circles(g) == [["theorylab.experiment", "theorylab.store"]]
    assert upward_arrows(g) == [
        "theorylab.store (ground) imports theorylab.experiment (experiment)"
    ]


def test_the_checker_fails_on_a_deliberate_upward_arrow():
    g = {k: set(v) for k, v in SYNTHETIC.items()}
    g["theorylab.mdps.tabular"].add("theorylab.algorithms.planning")  # mdps -> algorithms
    assert upward_arrows(g) == [
        "theorylab.mdps.tabular (mdps) imports theorylab.algorithms.planning (algorithms)"
    ]
    assert circles(g) == [["theorylab.algorithms.planning", "theorylab.mdps.tabular"]]


def test_relative_and_lazy_imports_are_edges(tmp_path):
    src = (
        "from . import sibling\n"
        "from ..mdps import tabular\n"
        "def f():\n"
        "    import theorylab.experiment\n"
    )
    path = tmp_path / "mod.py"
    path.write_text(src)
    found = _imported("theorylab.algorithms.mod", path, ast.parse(src))
    assert {"theorylab.algorithms.sibling", "theorylab.mdps.tabular"} <= found
    assert "theorylab.experiment" in found
