"""The validation registry: ``validate("ucbvi-hoeffding-riverswim", scale="quick")``.

Validations are defined in the modules of ``theorylab.validations.claims`` (auto-imported) with
``register_validation(...)``. Anything with a ``name``, a ``statement``, ``scales`` and a method
``run(scale, *, plot=None, progress=False, seed=0) -> Report`` can be registered:
:class:`~theorylab.validations.claim.Validation` covers online regret claims; offline
(sub-optimality against N) and exact-identity claims define their own ``run``.
"""

from __future__ import annotations

from theorylab.errors import UnknownNameError


class _ValidationRegistry:
    def __init__(self) -> None:
        self._items: dict = {}

    def add(self, validation):
        if validation.name in self._items:
            raise ValueError(f"validation {validation.name!r} is registered twice")
        self._items[validation.name] = validation
        return validation

    def get(self, name: str):
        _load()
        if name not in self._items:
            raise UnknownNameError(
                f"unknown validation {name!r}; available: {', '.join(sorted(self._items))}"
            )
        return self._items[name]

    def names(self) -> list[str]:
        _load()
        return sorted(self._items)


VALIDATIONS = _ValidationRegistry()
register_validation = VALIDATIONS.add


def _load() -> None:
    import theorylab.validations.claims  # noqa: F401


def list_validations() -> list[str]:
    return VALIDATIONS.names()


def validate(
    name: str,
    scale: str = "quick",
    *,
    plot: str | None = None,
    progress: bool = False,
    seed: int = 0,
):
    """Run the named validation at ``scale`` ("quick" or "full") and return its Report.

    An unknown scale raises ``ValueError`` naming the validation's scales before anything runs.
    """
    validation = VALIDATIONS.get(name)
    scales = sorted(getattr(validation, "scales", None) or ("quick", "full"))
    if not isinstance(scale, str) or scale not in scales:
        raise ValueError(f"validation {name!r} has scales {scales}, not {scale!r}")
    return validation.run(scale, plot=plot, progress=progress, seed=seed)
