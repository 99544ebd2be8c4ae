"""Import every module of a package so that its registrations run (ground floor)."""

from __future__ import annotations

import importlib
import pkgutil


def import_submodules(package_name: str, package_path) -> list[str]:
    """Import all direct submodules of a package (not starting with ``_``); return their names."""
    names = []
    for info in sorted(pkgutil.iter_modules(package_path), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        importlib.import_module(f"{package_name}.{info.name}")
        names.append(info.name)
    return names
