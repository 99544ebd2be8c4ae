"""The MDP family registry: ``make("riverswim:S=6,H=20")``, ``list_families()``."""

from __future__ import annotations

from theorylab.registry import Registry

MDP_FAMILIES = Registry("MDP family")
register = MDP_FAMILIES.register


def _load_families() -> None:
    # Importing the family modules registers them.
    import theorylab.mdps.families  # noqa: F401


def make(spec: str, **overrides):
    """Build a registered MDP from its name string, e.g. ``make("riverswim:S=6,H=20")``.

    Parameters are converted to the types of the family's defaults; ``overrides`` are passed as
    Python values. The returned MDP's ``name`` is the canonical spec string. A spec ending in
    ``.npz`` is a file written by ``TabularMDP.save`` (:mod:`theorylab.mdps.mdp_file`). A model
    too large to build raises :class:`~theorylab.errors.InvalidMDPError` before allocating
    (:mod:`theorylab.mdps.sizes`), never a MemoryError.
    """
    if isinstance(spec, str) and spec.lower().endswith(".npz"):
        if overrides:
            raise ValueError(f"an MDP file ({spec}) takes no parameters, got {sorted(overrides)}")
        from theorylab.mdps.tabular import TabularMDP

        mdp = TabularMDP.load(spec)
        mdp.name = spec  # as a family spec names its model: what rebuilds it
        return mdp
    _load_families()
    try:
        mdp = MDP_FAMILIES.make(spec, **overrides)
    except MemoryError as exc:  # a family without its own size guard (theorylab.mdps.sizes)
        from theorylab.errors import InvalidMDPError

        raise InvalidMDPError(
            f"{spec}: the model does not fit in memory ({exc}); give smaller sizes"
        ) from None
    if hasattr(mdp, "name") and getattr(mdp, "name", "") in ("", "tabular"):
        mdp.name = spec
    return mdp


def list_families() -> list[str]:
    """The registered MDP family names (``theorylab list mdps`` prints them with their keys)."""
    _load_families()
    return MDP_FAMILIES.names()
