"""Coverage of a drawn dataset: the exact concentrability of its data distribution and PEVI's
coverage term from its counts (the model-only quantities live in ``coverage``)."""

from __future__ import annotations

import numpy as np

from theorylab.algorithms.offline.coverage import (
    clipped_concentrability,
    concentrability,
    elliptical_norms,
    gram_matrices,
    optimal_occupancy,
    stage_features,
)
from theorylab.algorithms.offline.dataset import OfflineDataset
from theorylab.algorithms.offline.empirical import stage_blocks


def dataset_concentrability(mdp, dataset: OfflineDataset) -> dict[str, float]:
    """``{"C_star": ..., "C_star_clipped": ...}`` of a dataset's exact data distribution."""
    if dataset.data_distribution is None:
        raise ValueError("the dataset does not record its data distribution")
    return distribution_concentrability(mdp, dataset.data_distribution)


def distribution_concentrability(mdp, mu: np.ndarray) -> dict[str, float]:
    """``{"C_star": ..., "C_star_clipped": ...}`` of a data distribution ``mu`` (``(H, S, A)``
    finite horizon, ``(S, A)`` discounted)."""
    d_star = optimal_occupancy(mdp)
    return {
        "C_star": concentrability(d_star, mu),
        "C_star_clipped": clipped_concentrability(d_star, mu, mdp.S),
    }


def pevi_coverage(
    mdp, dataset: OfflineDataset, phi: np.ndarray | None = None, *, lam: float = 1.0
) -> np.ndarray:
    """``sum_h E_{pi*} ||phi(s_h, a_h)||_{Lambda_h^{-1}}`` per seed, exactly: ``(B,)``.

    phi: ``(S, A, d)`` or ``(H, S, A, d)``; None uses ``mdp.phi`` when the MDP has features and
    one-hot features otherwise (then the norm is ``1 / sqrt(n_h(s, a) + lam)``, computed in closed
    form). Finite-horizon data only (PEVI is episodic).
    """
    if dataset.horizon is None or mdp.horizon is None:
        raise ValueError("the PEVI coverage term is defined for finite-horizon data")
    counts = np.stack([blk.counts() for blk in stage_blocks(dataset)], axis=1)  # (B, H, S, A)
    return pevi_coverage_from_counts(mdp, counts, phi, lam=lam)


def pevi_coverage_from_counts(
    mdp, counts: np.ndarray, phi: np.ndarray | None = None, *, lam: float = 1.0
) -> np.ndarray:
    """:func:`pevi_coverage` from the per-stage counts ``counts (B, H, S, A)`` of the data."""
    H = mdp.horizon
    d_star = optimal_occupancy(mdp)  # (H, S, A)
    if phi is None:
        phi = getattr(mdp, "phi", None)
    total = np.zeros(counts.shape[0])
    for h in range(H):
        n = np.ascontiguousarray(counts[:, h])  # (B, S, A)
        if phi is None:  # one-hot: Lambda_h = diag(n_h + lam)
            norms = 1.0 / np.sqrt(n + lam)
        else:
            phi_h = stage_features(phi, H)[h]
            norms = elliptical_norms(gram_matrices(n, phi_h, lam), phi_h)
        total += np.einsum("sa,bsa->b", d_star[h], norms)
    return total
