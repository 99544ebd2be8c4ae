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
    Python values. The returned MDP's ``name`` is the canonical spec string.
    """
    _load_families()
    mdp = MDP_FAMILIES.make(spec, **overrides)
    if hasattr(mdp, "name") and getattr(mdp, "name", "") in ("", "tabular"):
        mdp.name = spec
    return mdp


def list_families() -> list[str]:
    """The registered MDP family names (``theorylab list mdps`` prints them with their keys)."""
    _load_families()
    return MDP_FAMILIES.names()
