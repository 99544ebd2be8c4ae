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
        self._controls: dict[str, tuple[str, ...]] = {}
        self._papers: dict[str, tuple[str, ...]] = {}
        self._modules: dict[str, str] = {}

    def add(
        self,
        validation,
        controls: tuple[str, ...] | None = None,
        targets: dict[str, tuple[str, ...]] | None = None,
        papers: tuple[str, ...] = (),
    ):
        """Register a claim with its negative controls (names in
        ``theorylab.validations.controls.CONTROLS``; default: the claim's ``controls``
        attribute) and, for a claim without an ``algorithm`` attribute, the algorithms a null
        control replaces (``targets={"online": (...), "offline": (...)}``). A claim without
        controls is reported UNPOWERED (docs/validations.md, "Power"). ``papers``: the
        seed-catalogue rows whose guarantee the claim checks (``("000#30",)``; default: the
        claim's ``papers`` attribute)."""
        from theorylab.algorithms.registry import check_paper_refs

        if validation.name in self._items:
            raise ValueError(f"validation {validation.name!r} is registered twice")
        controls = tuple(controls if controls is not None else getattr(validation, "controls", ()))
        if targets is not None:
            object.__setattr__(validation, "control_targets", targets)  # frozen dataclasses
        self._items[validation.name] = validation
        self._controls[validation.name] = controls
        self._modules[validation.name] = _registering_module()
        self._papers[validation.name] = check_paper_refs(
            papers or getattr(validation, "papers", ()), f"claim {validation.name!r}"
        )
        return validation

    def papers(self, name: str) -> tuple[str, ...]:
        """The seed-catalogue rows the named claim checks."""
        self.get(name)
        return self._papers[name]

    def module(self, name: str) -> str:
        """The short name of the claims module that registered the named claim (``"risk"`` for
        ``theorylab.validations.claims.risk``): the claim's family in the mutation table."""
        self.get(name)
        return self._modules[name]

    def controls(self, name: str) -> tuple[str, ...]:
        self.get(name)
        return self._controls[name]

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


def register_validation(validation, controls=None, targets=None, papers=()):
    """Register a claim (see :meth:`_ValidationRegistry.add`)."""
    return VALIDATIONS.add(validation, controls, targets, papers)


def _registering_module() -> str:
    """The claims module (``theorylab.validations.claims.X`` -> ``X``) on the call stack of a
    registration; ``"other"`` for a claim registered from elsewhere (a test)."""
    import sys

    frame = sys._getframe(1)
    while frame is not None:
        mod = frame.f_globals.get("__name__", "")
        if ".validations.claims." in mod:
            return mod.rsplit(".", 1)[1]
        frame = frame.f_back
    return "other"


def _load() -> None:
    import theorylab.validations.claims  # noqa: F401


def list_validations() -> list[str]:
    """The registered claim names (``theorylab list validations``)."""
    return VALIDATIONS.names()


def validate(
    name: str,
    scale: str = "quick",
    *,
    plot: str | None = None,
    progress: bool = False,
    seed: int = 0,
    controls: bool = True,
):
    """Run the named validation at ``scale`` and return its Report with a verdict.

    The verdict (docs/validations.md): FAIL if a check fails; VACUOUS if no tested check could
    fail at this scale; SMOKE on a scale labelled a smoke test; otherwise the claim's negative
    controls are run at the same scale and seed (``controls=True``): PASS if every one of them
    FAILs the claim (or makes it raise: ERROR, reported with the exception), UNPOWERED if one
    does not (or none is registered). ``controls=False`` skips them (the verdict is then
    at most PASS before controls; ``report.power`` is None)."""
    import theorylab.validations.mutations  # noqa: F401  (registers the known-bug controls)
    from theorylab.plotting import deferred_saves
    from theorylab.validations.claim import scale_settings

    claim = VALIDATIONS.get(name)
    scales = sorted(getattr(claim, "scales", None) or ("quick", "full"))
    if not isinstance(scale, str) or scale not in scales:  # before anything runs
        raise ValueError(f"validation {name!r} has scales {scales}, not {scale!r}")
    # the figure is drawn during the run, its title gets the verdict once the controls have run
    with deferred_saves() as figures:
        rep = claim.run(scale, plot=plot, progress=progress, seed=seed).finalize()
    rep.settings = scale_settings(claim, scale)
    if controls:
        _run_controls(name, claim, scale, seed, rep)
    _write_figures(figures, rep)
    return rep


def _write_figures(figures, rep) -> None:
    """Write the claim's figures with its final verdict in the title."""
    from theorylab.plotting import save_figure, title_note

    power = rep.power
    if power is None:
        text = f"{rep.verdict} (checks only; controls not run)"
    elif not power["controls"]:
        text = f"{rep.verdict} (no negative control registered)"
    else:
        text = f"{rep.verdict} ({power['failing']}/{power['controls']} controls fail it)"
    for fig, paths, dpi in figures:
        title_note(fig, text)
        written = save_figure(fig, paths, dpi=dpi)
        if rep.figure is None:  # a claim that looks for its file saw none while it was kept
            rep.figure = str(written[0])


def _run_controls(name: str, claim, scale: str, seed: int, rep) -> None:
    """Run the claim's negative controls at ``scale``; set ``rep.power``, the verdict."""
    from theorylab.validations.controls import get_control

    names = VALIDATIONS.controls(name)
    for cname in names:
        control = get_control(cname)
        try:
            with control.applied(claim):
                crep = claim.run(scale, seed=seed).finalize()
            verdict, failed = crep.verdict, [c.name for c in crep.checks if c.status == "FAIL"]
        except Exception as exc:  # the claim cannot even be evaluated on the control: not held
            verdict, failed = "ERROR", [f"{type(exc).__name__}: {exc}"[:200]]
        rep.controls.append(
            {"control": cname, "kind": control.kind, "verdict": verdict, "failed_checks": failed}
        )
    failing = sum(c["verdict"] in ("FAIL", "ERROR") for c in rep.controls)
    rep.power = {"controls": len(names), "failing": failing}
    if rep.verdict == "PASS" and (not names or failing < len(names)):
        rep.verdict, rep.passed = "UNPOWERED", False
