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
