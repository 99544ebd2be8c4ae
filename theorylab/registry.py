"""Name -> factory registries with parameters in the name string (``"riverswim:S=6,H=20"``).

Parameter values are parsed without ``eval``: each is converted to the type of the factory's
default for that parameter (int, float, bool, str, or a tuple of those written ``a|b|c``).
Unknown names and parameters raise errors that list what is available.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from theorylab.errors import UnknownNameError

_BOOL = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _convert(text: str, default: Any, key: str, name: str):
    def scalar(t: str, like):
        if isinstance(like, bool):
            if t.lower() not in _BOOL:
                raise ValueError(f"{name}: parameter {key}={t!r} is not a boolean (true/false)")
            return _BOOL[t.lower()]
        if isinstance(like, int):
            try:
                return int(t)
            except ValueError:
                raise ValueError(f"{name}: parameter {key}={t!r} is not an integer") from None
        if isinstance(like, float):
            try:
                return float(t)
            except ValueError:
                raise ValueError(f"{name}: parameter {key}={t!r} is not a number") from None
        if like is None:  # no typed default: int, then float, then the string
            for kind in (int, float):
                try:
                    return kind(t)
                except ValueError:
                    pass
            return t
        return t

    if isinstance(default, tuple):
        like = default[0] if default else None
        return tuple(scalar(p, like) for p in text.split("|") if p != "")
    return scalar(text, default)


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Split ``"name:k1=v1,k2=v2"`` into the name and the raw parameter strings."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"expected a name such as 'riverswim:S=6', got {spec!r}")
    name, _, rest = spec.strip().partition(":")
    params: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"{spec!r}: parameter {item!r} is not of the form key=value")
        if key.strip() in params:
            raise ValueError(f"{spec!r}: parameter {key.strip()!r} given twice")
        params[key.strip()] = value.strip()
    return name.strip().lower(), params


def convert_parameters(
    name: str, what: str, raw: dict[str, str], defaults: dict[str, Any]
) -> dict[str, Any]:
    """Typed values of the raw ``key=value`` strings of a spec, checked against ``defaults``
    (the factory's parameters); an unknown key raises a ValueError listing the parameters."""
    out: dict[str, Any] = {}
    for key, text in raw.items():
        if key not in defaults:
            listed = ", ".join(f"{k}={v!r}" for k, v in defaults.items()) or "(none)"
            raise ValueError(f"{what} {name!r} has no parameter {key!r}; parameters: {listed}")
        out[key] = _convert(text, defaults[key], key, name)
    return out


class Registry:
    """A registry of factories; ``make("name:k=v")`` builds one with typed parameters."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Callable] = {}
        self._summaries: dict[str, str] = {}

    def register(self, name: str, summary: str | None = None):
        def deco(fn: Callable) -> Callable:
            key = name.lower()
            if key in self._entries and self._entries[key] is not fn:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[key] = fn
            doc = (fn.__doc__ or "").strip().splitlines()
            self._summaries[key] = summary or (doc[0] if doc else "")
            return fn

        return deco

    def names(self) -> list[str]:
        return sorted(self._entries)

    def get(self, name: str) -> Callable:
        key = name.lower()
        if key not in self._entries:
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}; available: {', '.join(self.names())}"
            )
        return self._entries[key]

    def parameters(self, name: str) -> dict[str, Any]:
        """Parameter names and defaults of a registered factory."""
        sig = inspect.signature(self.get(name))
        return {
            k: (None if p.default is inspect.Parameter.empty else p.default)
            for k, p in sig.parameters.items()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        }

    def summary(self, name: str) -> str:
        self.get(name)
        return self._summaries[name.lower()]

    def make(self, spec: str, **overrides):
        name, raw = parse_spec(spec)
        fn = self.get(name)
        kwargs = convert_parameters(name, self.kind, raw, self.parameters(name))
        kwargs.update(overrides)
        return fn(**kwargs)
