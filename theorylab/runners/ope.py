"""The runner of ``kind="ope"``: off-policy evaluation, scored exactly.

For each seed a discounted dataset of N transitions is drawn from the behaviour mixture
``coverage * pi* + (1 - coverage) * other`` (``theorylab.algorithms.offline.dataset``), the
estimator is given the dataset and the target policy (``target``: pi* of the exact planner, or the
uniform policy) and returns ``V_hat(mu0)`` per seed; the error is ``V_hat - V^pi(mu0)`` with the
exact value from a linear solve (``theorylab.algorithms.planning.evaluation``). With a list of
dataset sizes the largest dataset is drawn once and the smaller ones are its first N rows (nested
data, as the offline runner does). A model with both a horizon and a discount
(``random:S=5,A=2,gamma=0.9``) is evaluated as the discounted problem. Called through
:func:`theorylab.run`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.algorithms.offline.coverage import optimal_solution
from theorylab.algorithms.offline.dataset import make_dataset
from theorylab.algorithms.planning.evaluation import evaluate_discounted
from theorylab.results.ope import OPEResult
from theorylab.runners.arguments import dataset_sizes
from theorylab.runners.problems import discounted_problem, resolve_mdp

TARGETS = ("optimal", "uniform")


def target_policy(mdp, target: str) -> np.ndarray:
    """``(S, A)`` the policy to evaluate: pi* (exact planner) or uniform."""
    if target == "optimal":
        pol = np.asarray(optimal_solution(mdp).policy)
        return np.eye(mdp.A)[pol] if pol.ndim == 1 else pol
    if target == "uniform":
        return np.full((mdp.S, mdp.A), 1.0 / mdp.A)
    raise ValueError(f"target must be one of {TARGETS}, got {target!r}")


def run(
    entry,
    problem,
    *,
    seeds: list[int],
    seed: int,
    progress: bool,
    params: dict[str, Any],
    dataset_size,
    target: str = "optimal",
    coverage: float = 0.0,
    other: str = "uniform",
) -> OPEResult:
    """Estimate V^pi(mu0) with the OPE estimator ``entry`` on datasets of ``dataset_size``
    transitions per seed and score each estimate against the exact value."""
    sizes = dataset_sizes(dataset_size)
    t_start = time.perf_counter()
    mdp = discounted_problem(resolve_mdp(problem), entry.name)
    pi = target_policy(mdp, target)
    true_value = float(evaluate_discounted(mdp, pi) @ mdp.mu0)
    ds_all = make_dataset(mdp, sizes[-1], coverage=coverage, other=other, seeds=seeds, seed=seed)
    B, M = len(seeds), len(sizes)
    estimates = np.empty((B, M))
    seconds = np.empty(M)
    for j, n in enumerate(sizes):
        ds = ds_all if n == sizes[-1] else ds_all.head(n)
        t0 = time.perf_counter()
        estimates[:, j] = np.asarray(entry.factory(ds, pi, **params), dtype=np.float64)
        seconds[j] = time.perf_counter() - t0
    return OPEResult(
        estimates=estimates,
        dataset_sizes=np.asarray(sizes, dtype=np.int64),
        true_value=true_value,
        seconds=seconds,
        wall_seconds=time.perf_counter() - t_start,
        config={
            "mdp": mdp.name,
            "S": mdp.S,
            "A": mdp.A,
            "gamma": mdp.gamma,
            "target": target,
            "coverage": coverage,
            "other": other,
        },
    )
