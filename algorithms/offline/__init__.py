"""Offline RL with pessimism (import name ``theorylab.algorithms.offline``).

Offline algorithms are ``fit(dataset) -> policy`` (``docs/architecture.md``): every algorithm
here returns an :class:`OfflineResult` holding the policy *and* its own value estimate, for a
batch of B seeds at once; sub-optimality is computed exactly on the true model
(:func:`suboptimality`).

    from theorylab.algorithms.offline import make_dataset, fit, suboptimality
    data = make_dataset(mdp, 10_000, coverage=0.5, other="adversarial", seeds=32)
    res = fit("pessimistic-vi-bernstein", data)
    gap = suboptimality(mdp, res.policy)              # (32,)

Modules: ``dataset`` (behaviour policies, datasets, population data), ``coverage`` (exact
occupancies, C*, clipped C*, PEVI's coverage term), ``empirical`` (batched sufficient
statistics), ``vi_lcb``, ``pessimistic_vi``, ``pevi``, ``vw_pevi``, ``het_pevi`` (K perturbed
sources), ``rcsl`` (RCSL, MBRCSL), ``baselines`` (naive VI,
behaviour cloning), ``registrations`` (their entries in the one algorithm registry, kind
"offline"), ``scoring`` (exact sub-optimality). ``theorylab.run(name, problem, dataset_size=N)``
draws the data, fits and scores (``theorylab.runners.offline``).
"""

from theorylab.algorithms.offline.coverage import (
    clipped_concentrability,
    concentrability,
    occupancy,
    single_policy_concentrability,
)
from theorylab.algorithms.offline.data_coverage import dataset_concentrability, pevi_coverage
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
from theorylab.algorithms.offline.result import OfflineResult
from theorylab.algorithms.offline.scoring import policy_values, suboptimality
from theorylab.algorithms.registry import fit

__all__ = [
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
    "make_dataset",
    "occupancy",
    "pevi_coverage",
    "policy_values",
    "population_dataset",
    "single_policy_concentrability",
    "suboptimality",
]
