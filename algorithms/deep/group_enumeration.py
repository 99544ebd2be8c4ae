"""Every group of G i.i.d. draws from a finite distribution, with its probability: the exact
expectation of a group loss (and of its gradient) is then a weighted sum over one batch.

Used to check the expected updates of GRPO, Dr. GRPO, RLOO and CVaR-GRPO against their closed
forms (tests/test_deep_losses.py) and to train tabular twins on exact expected losses.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def enumerate_groups(n_atoms: int, group_size: int) -> np.ndarray:
    """All n_atoms**group_size ordered G-tuples of atom indices: (n_atoms**G, G) int64."""
    if n_atoms < 1 or group_size < 1:
        raise ValueError(f"need n_atoms >= 1 and group_size >= 1, got {n_atoms}, {group_size}")
    if n_atoms**group_size > 2_000_000:
        raise ValueError(
            f"{n_atoms}^{group_size} = {n_atoms**group_size} groups is too many to enumerate"
        )
    return np.array(list(itertools.product(range(n_atoms), repeat=group_size)), dtype=np.int64)


def group_probabilities(tuples: np.ndarray, probs) -> np.ndarray:
    """Probability of each G-tuple (N, G) of atoms drawn i.i.d. from ``probs`` (n_atoms,): (N,).

    ``probs`` may be a numpy array or a torch tensor (then the result is a torch tensor, keeping
    the gradient)."""
    return probs[tuples].prod(axis=1) if isinstance(probs, np.ndarray) else probs[tuples].prod(1)


def enumerate_multisets(n_atoms: int, group_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Every multiset of G atoms as a sorted G-tuple (M, G), and its number of orderings (M,)
    (the multinomial coefficient): a permutation-invariant group loss's expectation is
    sum_m count[m] * P(tuple m) * loss(tuple m), over C(n_atoms + G - 1, G) groups instead of
    n_atoms^G."""
    if n_atoms < 1 or group_size < 1:
        raise ValueError(f"need n_atoms >= 1 and group_size >= 1, got {n_atoms}, {group_size}")
    tuples = np.array(
        list(itertools.combinations_with_replacement(range(n_atoms), group_size)), dtype=np.int64
    )
    counts = np.array(
        [
            math.factorial(group_size)
            / np.prod([math.factorial(c) for c in np.bincount(t, minlength=n_atoms)])
            for t in tuples
        ]
    )
    return tuples, counts
