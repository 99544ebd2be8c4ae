"""theorylab: provable reinforcement-learning algorithms checked against their theorems.

    import theorylab as tl
    result = tl.run("ucbvi-bernstein", "riverswim:S=6,H=20", episodes=2000, seeds=32)

Re-exports are lazy (module-level ``__getattr__``): ``import theorylab`` loads no algorithm, and
numba, sympy and cvxpy load only when used.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    # experiments (top floor)
    "run": "theorylab.experiment",
    "run_offline": "theorylab.experiment",  # deprecated: tl.run(..., dataset_size=N)
    # the result family (ground floor)
    "Result": "theorylab.results",
    "RegretResult": "theorylab.results",
    "RunResult": "theorylab.results",
    "SuboptimalityResult": "theorylab.results",
    "load_result": "theorylab.results",
    "sweep": "theorylab.sweeps",
    "Grid": "theorylab.sweeps",
    # MDPs
    "make": "theorylab.mdps",
    "TabularMDP": "theorylab.mdps",
    "list_families": "theorylab.mdps",
    # planning
    "solve": "theorylab.algorithms.planning",
    "backward_induction": "theorylab.algorithms.planning",
    "value_iteration": "theorylab.algorithms.planning",
    "policy_iteration": "theorylab.algorithms.planning",
    "evaluate_policies": "theorylab.algorithms.planning",
    "list_algorithms": "theorylab.algorithms.registry",
    "get_algorithm": "theorylab.algorithms.registry",
    # bounds and validations
    "get_bound": "theorylab.bounds",
    "list_bounds": "theorylab.bounds",
    "validate": "theorylab.validations",
    "list_validations": "theorylab.validations",
    "papers": "theorylab.validations.papers",
    # errors
    "InvalidMDPError": "theorylab.errors",
    "InvalidPolicyError": "theorylab.errors",
    "UnknownNameError": "theorylab.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'theorylab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
