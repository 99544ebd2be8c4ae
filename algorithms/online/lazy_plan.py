"""The lazy-planning protocol of the tabular risk agents (ICVaR-RM, MaxWP, ICVaR-L, ICVaR-HF):
plan when the next policy or value is first asked for, and forget the plan when data arrives.

One home for ``policy()`` / ``value_estimate()`` so that the agents differ only in ``_plan``.
"""

from __future__ import annotations

import numpy as np

from theorylab.agent import read_only_copy


class LazyPlan:
    """Subclasses set ``self.env`` and implement ``_plan`` (filling ``_V (B, H+1, S)`` and
    ``_pi (B, H, S)``); ``forget_plan()`` after every update."""

    _V: np.ndarray | None = None
    _pi: np.ndarray | None = None

    def _plan(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def forget_plan(self) -> None:
        self._V = self._pi = None

    def policy(self) -> np.ndarray:
        """Greedy policy of the planned Q, ``(B, H, S)`` int."""
        if self._pi is None:
            self._plan()
        return read_only_copy(self._pi)

    def value_estimate(self) -> np.ndarray:
        """The planned ``V_1(mu0)`` for every seed, ``(B,)`` (its guarantee: see the class)."""
        if self._V is None:
            self._plan()
        # a row sum (numpy's pairwise order), not BLAS: the same bits alone or batched, as the
        # whole-run kernel (algorithms/online/whole_run_kernel.py) computes it
        return (self._V[:, 0] * self.env.mu0).sum(axis=-1)
