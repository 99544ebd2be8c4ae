"""Adversarial episodic MDPs with linear Q-functions (``kind="adversarial"``): per-state FTRL
policy optimisation on loss estimators from a simulator (seed row 002-004#A1)."""

from theorylab.algorithms.adversarial import policy_optimization  # noqa: F401  (registrations)
