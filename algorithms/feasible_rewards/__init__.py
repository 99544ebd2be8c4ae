"""Inverse reinforcement learning: the feasible reward set and its estimation (seed row 001#2)."""

from theorylab.algorithms.feasible_rewards import us_irl  # noqa: F401  (registers us-irl)
