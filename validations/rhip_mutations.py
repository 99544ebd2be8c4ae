"""Known-bug mutation of ``rhip`` (seed row 000#55; the control of
``validations/claims/inverse_rl_rhip.py``); appended to ``mutations.MUTATIONS``:

* ``rhip-soft-tail``: the tail's values are MaxEnt's soft values (every route, log-sum-exp)
  instead of Dijkstra's, while the forward pass still follows the Dijkstra routes: the H = 0
  extreme is no longer the deterministic planner.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def rhip_soft_tail(claim=None) -> Iterator[None]:
    from theorylab.algorithms.inverse_rl import rhip

    original = rhip.dijkstra

    def soft_tail(graph, r, dest):
        _, nxt = original(graph, r, dest)
        V0 = np.full(graph.n, -np.inf)
        V0[dest] = 0.0
        return rhip.soft_backups(graph, r, dest, V0, graph.n)[-1], nxt  # the bug

    with _patched(rhip, "dijkstra", soft_tail):
        yield


MUTATIONS = (
    register_control(
        Control(
            "rhip-soft-tail",
            "mutation",
            "RHIP's tail values are MaxEnt soft values, not Dijkstra's",
            rhip_soft_tail,
        )
    ),
)
