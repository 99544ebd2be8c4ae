"""MDPs with exactly known structure (import name ``theorylab.mdps``).

``TabularMDP`` is the exact model; families are built by name: ``make("riverswim:S=6,H=20")``.
"""

from theorylab.errors import InvalidMDPError, InvalidPolicyError
from theorylab.mdps.gymnasium_env import GYMNASIUM_ID, TabularEnv, to_gymnasium
from theorylab.mdps.linear import LinearBandit, LinearMDP, MisspecifiedLinearMDP, one_hot_linear
from theorylab.mdps.lowrank import LowRankMDP
from theorylab.mdps.registry import MDP_FAMILIES, list_families, make, register
from theorylab.mdps.reward_map import RewardMap
from theorylab.mdps.tabular import TabularMDP, Trajectories
from theorylab.mdps.toy_text import ToyTextConversion, from_gymnasium, from_toy_text

__all__ = [
    "GYMNASIUM_ID",
    "MDP_FAMILIES",
    "InvalidMDPError",
    "InvalidPolicyError",
    "LinearBandit",
    "LinearMDP",
    "LowRankMDP",
    "MisspecifiedLinearMDP",
    "RewardMap",
    "TabularEnv",
    "TabularMDP",
    "ToyTextConversion",
    "Trajectories",
    "from_gymnasium",
    "from_toy_text",
    "list_families",
    "make",
    "one_hot_linear",
    "register",
    "to_gymnasium",
]
