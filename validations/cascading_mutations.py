"""Negative controls of ``cascading-vi-sqrt-k`` (seed row 001#13;
``validations/claims/cascading.py``); appended to ``mutations.MUTATIONS``:

* ``cascading-sort-by-qw``: BestPerm orders and selects the items by ``q w`` instead of ``w``
  (``algorithms/cascading/best_perm.sort_key``): the exchange argument no longer holds and the
  oracle misses the brute-force optimum on instances where a likely click leads nowhere good.
* ``cascading-vi-greedy``: CascadingVI with its bonus constant set to 0 (the plug-in planner): no
  exploration, linear regret on instances where an optimal item looks bad early.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def cascading_sort_by_qw(claim=None) -> Iterator[None]:
    from theorylab.algorithms.cascading import best_perm

    with _patched(best_perm, "sort_key", lambda q, w: q * w):  # the bug: order by q w
        yield


@contextlib.contextmanager
def cascading_vi_greedy(claim=None) -> Iterator[None]:
    from theorylab.algorithms.cascading.cascading_vi import CascadingVI

    original = CascadingVI.__init__

    def greedy(self, *args, **kwargs) -> None:
        original(self, *args, **kwargs)
        self.c = 0.0  # the bug: no bonus
        self._lists = self._plan()

    with _patched(CascadingVI, "__init__", greedy):
        yield


MUTATIONS = (
    register_control(
        Control(
            "cascading-sort-by-qw",
            "mutation",
            "BestPerm ordering and selecting items by q w instead of the click value w",
            cascading_sort_by_qw,
        )
    ),
    register_control(
        Control(
            "cascading-vi-greedy",
            "mutation",
            "CascadingVI without its bonus (c = 0: the plug-in planner, no exploration)",
            cascading_vi_greedy,
        )
    ),
)
