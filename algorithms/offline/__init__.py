"""Offline RL with pessimism (import name ``theorylab.algorithms.offline``).

Offline algorithms are ``fit(dataset) -> policy`` (docs/architecture.md): every algorithm here
returns an :class:`OfflineResult` holding the policy *and* its own value estimate, for a batch of
B seeds at once; sub-optimality is computed exactly on the true model (:func:`suboptimality`).

    from theorylab.algorithms.offline import make_dataset, fit, suboptimality
    data = make_dataset(mdp, 10_000, coverage=0.5, other="adversarial", seeds=32)
    res = fit("pessimistic-vi-bernstein", data)
    gap = suboptimality(mdp, res.policy)              # (32,)

Modules: ``dataset`` (behaviour policies, datasets, population data), ``coverage`` (exact
occupancies, C*, clipped C*, PEVI's coverage term), ``empirical`` (batched sufficient
statistics), ``vi_lcb``, ``pessimistic_vi``, ``pevi``, ``vw_pevi``, ``baselines`` (naive VI,
behaviour cloning), ``registry`` (names), ``experiment`` (``run_offline``), ``plotting``.
"""

from theorylab.algorithms.offline.coverage import (
    clipped_concentrability,
    concentrability,
    dataset_concentrability,
    occupancy,
    pevi_coverage,
    single_policy_concentrability,
)
from theorylab.algorithms.offline.dataset import (
    EmptyDatasetError,
    InvalidCoverageError,
    InvalidDatasetError,
    InvalidDatasetSizeError,
    OfflineDataset,
    behaviour_policy,
    make_dataset,
    population_dataset,
)
from theorylab.algorithms.offline.experiment import (
    policy_values,
    run_offline,
    suboptimality,
)
from theorylab.algorithms.offline.registry import (
    OFFLINE_ALGORITHMS,
    fit,
    list_offline_algorithms,
    offline_parameters,
)
from theorylab.algorithms.offline.result import OfflineResult

__all__ = [
    "OFFLINE_ALGORITHMS",
    "EmptyDatasetError",
    "InvalidCoverageError",
    "InvalidDatasetError",
    "InvalidDatasetSizeError",
    "OfflineDataset",
    "OfflineResult",
    "behaviour_policy",
    "clipped_concentrability",
    "concentrability",
    "dataset_concentrability",
    "fit",
    "list_offline_algorithms",
    "make_dataset",
    "occupancy",
    "offline_parameters",
    "pevi_coverage",
    "policy_values",
    "population_dataset",
    "run_offline",
    "single_policy_concentrability",
    "suboptimality",
]
