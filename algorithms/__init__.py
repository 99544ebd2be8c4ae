"""The provable algorithms (import name ``theorylab.algorithms``).

``planning``: exact solvers. ``online``: episodic learners registered by name (``ALGORITHMS``).
"""

from theorylab.algorithms.registry import ALGORITHMS, list_algorithms, make_agent

__all__ = ["ALGORITHMS", "list_algorithms", "make_agent"]
