r"""LSVI: least-squares value iteration without exploration bonus (the contrast to LSVI-UCB).

Jin, Yang, Wang, Jordan, COLT 2020, arXiv:1907.05388v2, Algorithm 1 with beta = 0 (theory.md 2.2):
ridge regression of r + max_a Q_{h+1} on phi per step, targets recomputed from all past data every
episode, Q truncated at H, greedy actions. Registered as ``lsvi``.

Bound carried: none. Without a bonus the algorithm is greedy ("certainty equivalence") and can
under-explore; with uniformly covering data, on a linear MDP, its Q converges to the value-iteration
Q* (claim ``lsvi-covering-converges-to-vi``; with one-hot features and lambda -> 0 on exact
expected data it *is* backward induction, theory.md 10 item 1).

Parameters: ``features`` (default one-hot), ``lam`` (ridge lambda, 1). Implementation and
deviations: :mod:`theorylab.algorithms.linear.lsvi`.
"""

from __future__ import annotations

from theorylab.algorithms.linear.lsvi import LeastSquaresValueIteration
from theorylab.algorithms.registry import register


@register("lsvi", kind="online", problem="linear", bounds=())
class LSVI(LeastSquaresValueIteration):
    """Greedy least-squares value iteration (LSVI-UCB with beta = 0)."""

    name = "lsvi"
