"""Inverse reinforcement learning: the feasible reward set and its estimation (seed row 001#2)."""

from theorylab.algorithms.irl import us_irl  # noqa: F401  (registers us-irl)
