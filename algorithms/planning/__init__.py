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

SOLVE_METHODS = ("auto", "backward_induction", "value_iteration", "policy_iteration", "lp")

# The keywords each method takes (besides the MDP); anything else is refused, not ignored.
_METHOD_KEYWORDS = {
    "backward_induction": (),
    "value_iteration": ("gamma", "tol", "stopping", "max_iter", "V0"),
    "policy_iteration": ("gamma", "max_iter"),
    "lp": ("gamma", "kind", "mu", "solver", "solver_options"),
}


def solve(mdp, method: str = "auto", **kwargs):
    """Solve ``mdp`` exactly with ``method``.

    method: ``"auto"`` (backward induction for a finite-horizon MDP without a discount, value
        iteration when ``gamma`` is given or the model has one: a model with both a horizon and
        a discount, ``riverswim:S=6,gamma=0.9``, is solved as the discounted problem, as every
        discounted algorithm does), ``"backward_induction"``, ``"value_iteration"``,
        ``"policy_iteration"`` or ``"lp"`` (:func:`lp_solve`).
    kwargs: the chosen method's own keywords (value iteration: ``gamma``, ``tol``, ``stopping``,
        ``max_iter``, ``V0``; policy iteration: ``gamma``, ``max_iter``; LP: ``gamma``, ``kind``,
        ``mu``, ``solver``, ``solver_options``; backward induction: none). A keyword the method
        does not take raises ``TypeError`` naming the ones it does, rather than being ignored.
    """
    if method not in SOLVE_METHODS:
        raise ValueError(f"unknown method {method!r}; methods: {', '.join(SOLVE_METHODS)}")
    if method == "auto":
        finite = mdp.horizon is not None and kwargs.get("gamma") is None and mdp.gamma is None
        method = "backward_induction" if finite else "value_iteration"
    allowed = _METHOD_KEYWORDS[method]
    extra = sorted(set(kwargs) - set(allowed))
    if extra:
        takes = (
            ", ".join(allowed) if allowed else "no keywords (it is exact and needs no tolerance)"
        )
        raise TypeError(f"solve(method={method!r}) does not take {extra}; {method} takes {takes}")
    if method == "backward_induction":
        if mdp.horizon is None:
            raise ValueError(f"{mdp!r} has no finite horizon: backward induction needs one")
        return backward_induction(mdp)
    if method == "value_iteration":
        return value_iteration(mdp, **kwargs)
    if method == "policy_iteration":
        return policy_iteration(mdp, **kwargs)
    from theorylab.algorithms.planning.lp import lp_solve

    return lp_solve(mdp, **kwargs)


__all__ = [
    "Solution",
    "backward_induction",
    "bellman_optimality",
    "evaluate_discounted",
    "evaluate_policies",
    "policy_iteration",
    "policy_values",
    "solve",
    "SOLVE_METHODS",
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
