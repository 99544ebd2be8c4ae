"""The runner of ``kind="constrained"``: a KL-constrained occupancy problem at each epsilon.

The algorithm (``reps``: Peters et al. 2010) maximises the average reward over stationary
state-action distributions mu with ``KL(mu || q) <= epsilon``; the runner supplies the model and
q, the stationary state-action distribution of the uniform policy
(:func:`theorylab.algorithms.dual.reps.stationary_state_action`), and records, per epsilon, the
primal ``sum mu r``, the dual ``g(eta, V)`` (NaN where the constraint does not bind), KL(mu || q),
the stationarity residual and eta, all from the solver's exact arrays. A model's horizon or
discount is ignored (REPS is stated for the average reward). The solver is deterministic:
``seeds`` is recorded, not used. Called through :func:`theorylab.run`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from theorylab.algorithms.dual.reps import stationary_state_action
from theorylab.results.constrained import ConstrainedResult
from theorylab.runners.arguments import increasing_levels
from theorylab.runners.problems import resolve_mdp


def run(
    entry,
    problem,
    *,
    seeds: list[int],
    seed: int,
    progress: bool,
    params: dict[str, Any],
    epsilon: float | Sequence[float],
) -> ConstrainedResult:
    """Solve with ``entry`` at each epsilon and record the exact certificate numbers."""
    t_start = time.perf_counter()
    levels = increasing_levels(epsilon, "epsilon")
    mdp = resolve_mdp(problem)
    q = stationary_state_action(mdp, np.full((mdp.S, mdp.A), 1.0 / mdp.A))
    sols, secs = [], []
    for eps in levels:
        t0 = time.perf_counter()
        sols.append(entry.factory(mdp, q, eps, **params))
        secs.append(time.perf_counter() - t0)
    return ConstrainedResult(
        epsilons=np.array(levels),
        primal=np.array([s.primal_value for s in sols]),
        dual=np.array([np.nan if s.dual_value is None else s.dual_value for s in sols]),
        constraint=np.array([s.kl for s in sols]),
        stationarity=np.array([s.stationarity for s in sols]),
        multiplier=np.array([s.eta for s in sols]),
        seconds=np.array(secs),
        occupancy=np.stack([s.mu for s in sols]),
        wall_seconds=time.perf_counter() - t_start,
        config={"mdp": mdp.name, "S": mdp.S, "A": mdp.A, "q": "stationary, uniform policy"},
    )
