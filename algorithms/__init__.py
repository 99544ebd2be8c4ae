"""The provable algorithms (import name ``theorylab.algorithms``).

``planning``: exact solvers. ``online``: episodic learners; ``offline``: learners from a dataset;
``risk``: risk-sensitive planning; ``linear``: shared linear-MDP machinery. Every algorithm of
every kind is in the one registry (``registry.ALGORITHMS``; ``docs/architecture.md``).
"""

from theorylab.algorithms.registry import (
    ALGORITHMS,
    KINDS,
    get_algorithm,
    list_algorithms,
    make_agent,
)

__all__ = ["ALGORITHMS", "KINDS", "get_algorithm", "list_algorithms", "make_agent"]
