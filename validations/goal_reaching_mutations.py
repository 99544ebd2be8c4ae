"""Negative controls of the QRL claim (``validations/claims/goal_reaching.py``), appended to
``mutations.MUTATIONS``; each patches the linear programme of
``theorylab.algorithms.goal_reaching.qrl``:

* ``qrl-symmetric``: d(s, g) = d(g, s) imposed (a metric instead of a quasimetric;
  ``quasimetric_equalities``): on a directed graph d becomes the undirected shortest path;
* ``qrl-no-triangle``: the triangle constraints dropped (``triangle_rows`` empty): the objective
  pushes every pair not an observed edge to the cap;
* ``qrl-no-spread``: the max-spread objective dropped (``spread_weights`` zero): any feasible d,
  here the solver's vertex, is returned.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


def symmetric_rows(S: int) -> sp.csr_array:
    """``(S (S-1) / 2, S^2)`` rows of d(s, g) - d(g, s) = 0 over s < g."""
    s, g = np.triu_indices(S, k=1)
    rows = np.repeat(np.arange(s.size), 2)
    cols = np.stack([s * S + g, g * S + s], axis=1).ravel()
    vals = np.tile([1.0, -1.0], s.size)
    return sp.csr_array((vals, (rows, cols)), shape=(s.size, S * S))


@contextlib.contextmanager
def qrl_symmetric(claim=None) -> Iterator[None]:
    from theorylab.algorithms.goal_reaching import qrl

    with _patched(qrl, "quasimetric_equalities", symmetric_rows):
        yield


@contextlib.contextmanager
def qrl_no_triangle(claim=None) -> Iterator[None]:
    from theorylab.algorithms.goal_reaching import qrl

    def no_rows(S: int) -> sp.csr_array:
        return sp.csr_array((S * (S - 1) * (S - 2), S * S))

    with _patched(qrl, "triangle_rows", no_rows):
        yield


@contextlib.contextmanager
def qrl_no_spread(claim=None) -> Iterator[None]:
    from theorylab.algorithms.goal_reaching import qrl

    with _patched(qrl, "spread_weights", lambda S: np.zeros(S * S)):
        yield


MUTATIONS = (
    register_control(
        Control(
            "qrl-symmetric",
            "mutation",
            "QRL's LP over metrics (d(s, g) = d(g, s) imposed): undirected distances",
            qrl_symmetric,
        )
    ),
    register_control(
        Control(
            "qrl-no-triangle",
            "mutation",
            "QRL's LP without the triangle constraints: non-edges pushed to the cap",
            qrl_no_triangle,
        )
    ),
    register_control(
        Control(
            "qrl-no-spread",
            "mutation",
            "QRL's LP without the max-spread objective: any feasible d",
            qrl_no_spread,
        )
    ),
)
