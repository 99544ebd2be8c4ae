"""MDPs with exactly known structure (import name ``theorylab.mdps``).

``TabularMDP`` is the exact model; families are built by name: ``make("riverswim:S=6,H=20")``.
"""

from theorylab.errors import InvalidMDPError, InvalidPolicyError
from theorylab.mdps.registry import MDP_FAMILIES, list_families, make, register
from theorylab.mdps.tabular import TabularMDP, Trajectories

__all__ = [
    "MDP_FAMILIES",
    "InvalidMDPError",
    "InvalidPolicyError",
    "TabularMDP",
    "Trajectories",
    "list_families",
    "make",
    "register",
]
