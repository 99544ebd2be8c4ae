"""Registered preference-based algorithms (kinds ``preference`` and ``preference-offline``).

* ``p2r-ucbvi`` (online, a comparison oracle): :mod:`theorylab.algorithms.preference.p2r`.
* ``dueling-rl`` and ``regime`` (online, duels of two policies, trajectory comparisons):
  :mod:`theorylab.algorithms.preference.dueling`, :mod:`theorylab.algorithms.preference.regime`.
* ``pessimistic-mle`` / ``greedy-mle`` (offline, pairwise comparisons on a ``ComparisonBandit``):
  Zhu-Jordan-Jiao's Algorithm 1 and its greedy contrast,
  :mod:`theorylab.algorithms.preference.pessimistic`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.algorithms.preference import (
    dueling,  # noqa: F401  (registers dueling-rl)
    p2r,  # noqa: F401  (registers p2r-ucbvi)
    regime,  # noqa: F401  (registers regime)
)
from theorylab.algorithms.preference.mle import fit_btl
from theorylab.algorithms.preference.pessimistic import fit_pessimistic_mle, greedy_policy
from theorylab.algorithms.registry import register


@register(
    "pessimistic-mle",
    kind="preference-offline",
    problem="pref-bandit",
    bounds=("zjj-thm3.2",),
)
def pessimistic_mle(
    bandit, data, delta: float = 0.1, lam: float = 1e-3, C: float = 1.0, solver: str = "newton"
):
    """Pessimistic MLE (Zhu-Jordan-Jiao 2023, Alg. 1): max-min over the MLE's confidence set."""
    return fit_pessimistic_mle(bandit, data, delta=delta, lam=lam, C=C, solver=solver)


@dataclass
class GreedyMLEResult:
    """theta_hat ``(B, d)``, policy ``(B, S)``, suboptimality and queries ``(B,)``."""

    theta_hat: np.ndarray
    policy: np.ndarray
    suboptimality: np.ndarray
    queries: np.ndarray


@register("greedy-mle", kind="preference-offline", problem="pref-bandit", bounds=())
def greedy_mle(bandit, data, solver: str = "newton"):
    """Greedy on the constrained BTL MLE (the contrast that fails on ZJJ Theorem 3.9)."""
    theta = fit_btl(bandit, data, solver=solver)
    pol = greedy_policy(bandit, theta)
    sub = np.array([bandit.suboptimality(p) for p in pol])
    q = data.queries if data.queries is not None else np.full(len(pol), data.n)
    return GreedyMLEResult(theta, pol, sub, q)
