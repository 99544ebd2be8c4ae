"""Negative controls of the multi-task bandit claim (issue 31; ``validations/claims/
multitask_bandit.py``, 001#19), appended to ``mutations.MUTATIONS``:

* ``douexpdes-random-representation``: the representation is not learned -- ``top_subspace``
  returns a random k-dimensional subspace instead of Z's top eigenvectors, so the per-task
  designs work in the wrong space and the planned misspecification no longer holds;
* ``douexpdes-independent-tasks``: the baseline the paper improves on -- DouExpDes runs each task
  alone in d dimensions (``phased_elimination`` with ``learn=False``), so nothing is shared
  across tasks;
* ``gfucb-independent-tasks``: GFUCB (001#20) with one confidence set over the class per task
  (``gfucb_loop`` with ``joint=False``): every task pays the class price log J alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


def _random_subspace(Z: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    Q, _ = np.linalg.qr(rng.standard_normal((Z.shape[0], k)))
    return Q  # (d, k)


@contextlib.contextmanager
def douexpdes_random_representation(claim=None) -> Iterator[None]:
    from theorylab.algorithms.multitask_bandit import douexpdes

    with _patched(douexpdes, "top_subspace", _random_subspace):
        yield


@contextlib.contextmanager
def douexpdes_independent_tasks(claim=None) -> Iterator[None]:
    from theorylab.algorithms.multitask_bandit import douexpdes

    loop = douexpdes.phased_elimination

    def independent(problem, rounds, rngs, delta, learn, c_rep, diversity):
        return loop(problem, rounds, rngs, delta, False, c_rep, diversity)

    with _patched(douexpdes, "phased_elimination", independent):
        yield


@contextlib.contextmanager
def gfucb_independent_tasks(claim=None) -> Iterator[None]:
    from theorylab.algorithms.multitask_bandit import gfucb

    loop = gfucb.gfucb_loop

    def independent(problem, rounds, rngs, delta, joint):
        return loop(problem, rounds, rngs, delta, False)

    with _patched(gfucb, "gfucb_loop", independent):
        yield


MUTATIONS = (
    register_control(
        Control(
            "douexpdes-random-representation",
            "mutation",
            "DouExpDes with a random k-dimensional subspace in place of the learned one",
            douexpdes_random_representation,
        )
    ),
    register_control(
        Control(
            "douexpdes-independent-tasks",
            "mutation",
            "DouExpDes without sharing: every task eliminates alone in d dimensions (the native "
            "baseline)",
            douexpdes_independent_tasks,
        )
    ),
    register_control(
        Control(
            "gfucb-independent-tasks",
            "mutation",
            "GFUCB with one confidence set over the class per task (nothing shared)",
            gfucb_independent_tasks,
        )
    ),
)
