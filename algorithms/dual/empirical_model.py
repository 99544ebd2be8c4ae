r"""The empirical (maximum-likelihood) tabular model of one seed of a discounted offline dataset.

The DICE methods (:mod:`~theorylab.algorithms.dual.optidice`,
:mod:`~theorylab.algorithms.dual.dualdice`) are stated for samples from d^D; their tabular
*exact sub-problem* is the same objective with every expectation taken under the empirical
distribution, i.e. the dual-V / dual-Q problem on the empirical MDP ``(P_hat, r_hat)`` with
reference ``d^O = d_hat^D = n(s, a) / N``:

    n(s, a) = sum_i w_i 1{(s_i, a_i) = (s, a)},   d_hat(s, a) = n(s, a) / sum n,
    r_hat(s, a) = mean reward,                     P_hat(s'|s, a) = next-state frequencies.

Pairs without data carry no mass under d_hat, so they never enter an objective; their P_hat row is
a self-loop with r_hat = 0 only to make the model a valid :class:`~theorylab.mdps.TabularMDP` (the
flow-support check of :mod:`~theorylab.algorithms.dual.inputs` treats them as uncovered). The
statistics come from :func:`theorylab.algorithms.offline.empirical.compress` (weighted datasets
included).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from theorylab.algorithms.dual.inputs import DualInputError
from theorylab.algorithms.offline.dataset import OfflineDataset
from theorylab.algorithms.offline.empirical import all_samples, compress, require_data
from theorylab.mdps import TabularMDP


def check_discounted(dataset: OfflineDataset, who: str) -> float:
    """The dataset's discount; raises DualInputError for finite-horizon data."""
    if dataset.horizon is not None or dataset.gamma is None:
        raise DualInputError(
            f"{who} needs discounted data (make_dataset on an MDP with gamma and no horizon, "
            f"e.g. mdp.with_objective(gamma=0.9)); this dataset has horizon {dataset.horizon}"
        )
    return float(dataset.gamma)


def empirical_models(dataset: OfflineDataset, who: str) -> list[tuple[TabularMDP, np.ndarray]]:
    """Per seed b: ``(empirical MDP, d_hat (S, A))`` (module docstring)."""
    require_data(dataset, who)
    g = check_discounted(dataset, who)
    model = compress(all_samples(dataset))
    B, S, A = dataset.n_seeds, dataset.S, dataset.A
    counts = model.counts.reshape(B, S * A)
    r_hat = np.clip(model.r_hat.reshape(B, S, A), 0.0, 1.0)
    out = []
    for b in range(B):
        P = sp.csr_array(model.P_hat[b * S * A : (b + 1) * S * A, b * S : (b + 1) * S])
        seen = counts[b] > 0
        unseen = np.flatnonzero(~seen)
        loops = sp.csr_array(
            (np.ones(unseen.size), (unseen, unseen // A)), shape=(S * A, S)
        )  # (s, a) -> s for pairs without data
        P = sp.csr_array(P + loops)
        R = np.where(seen.reshape(S, A), r_hat[b], 0.0)
        mdp = TabularMDP(P, R, dataset.mu0, gamma=g, name=f"empirical[{who}, seed {b}]")
        total = counts[b].sum()
        if not total > 0:
            raise DualInputError(f"seed {b} of the dataset has zero total weight")
        out.append((mdp, (counts[b] / total).reshape(S, A)))
    return out
