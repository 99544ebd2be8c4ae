"""Exact planning: backward induction, value/policy iteration, exact policy evaluation, LPs."""

from theorylab.algorithms.planning.evaluation import (
    evaluate_discounted,
    evaluate_policies,
    policy_values,
)
from theorylab.algorithms.planning.finite_horizon import backward_induction
from theorylab.algorithms.planning.solution import Solution
from theorylab.algorithms.planning.value_iteration import (
    bellman_optimality,
    policy_iteration,
    value_iteration,
)


def solve(mdp, **kwargs) -> Solution:
    """Backward induction for a finite-horizon MDP, value iteration for a discounted one."""
    if mdp.horizon is not None and kwargs.get("gamma") is None:
        return backward_induction(mdp)
    return value_iteration(mdp, **kwargs)


__all__ = [
    "Solution",
    "backward_induction",
    "bellman_optimality",
    "evaluate_discounted",
    "evaluate_policies",
    "policy_iteration",
    "policy_values",
    "solve",
    "value_iteration",
]

# The LP planners (lp.py) import cvxpy (about 1 s), so they load on first use (PEP 562): importing
# this package stays cheap for the code paths that never solve an LP.
_LP_EXPORTS = (
    "LPSolution",
    "LPSolverError",
    "discounted_lp",
    "finite_horizon_lp",
    "flow_residual",
    "lp_solve",
    "occupancy_measure",
    "policy_from_occupancy",
)
__all__ += list(_LP_EXPORTS)


def __getattr__(name: str):
    if name in _LP_EXPORTS:
        import importlib

        return getattr(importlib.import_module("theorylab.algorithms.planning.lp"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
