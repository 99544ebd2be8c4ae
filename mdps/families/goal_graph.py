"""Directed goal-reaching graphs: ``digraph:S=12,A=2,seed=0`` (QRL's deterministic setting).

A random directed graph on S states with A actions, built for goal-conditioned problems in which
every state may be a goal and each move costs one step (Wang et al. 2023, QRL; seed rows
000#65, 001#73):

* action 0 moves along a directed ring, ``s -> (s + 1) mod S``: every state reaches every other,
  and the reverse way round is long, so shortest-path distances are asymmetric
  (``d(s, s + 1) = 1`` while ``d(s + 1, s)`` can be up to S - 1);
* actions 1 .. A-1 move to a successor drawn uniformly from the S states with
  ``numpy.random.default_rng(seed)`` (one-way shortcuts, self-loops allowed);
* ``slip`` in [0, 1]: with probability ``slip`` a move lands on a uniformly random state instead
  (``slip = 0``, the default, is deterministic; ``slip > 0`` is the stochastic case QRL's
  guarantee does not cover: every state becomes a one-step successor of every other);
* rewards are all 0 (goal-reaching problems bring their own goal and step cost); start state 0;
  ``H = 2 S`` by default.
"""

from __future__ import annotations

import numpy as np

from theorylab.mdps.families.chain import family_mdp, require_int, require_probability
from theorylab.mdps.registry import register
from theorylab.mdps.tabular import TabularMDP


def digraph_successors(S: int, A: int, seed: int) -> np.ndarray:
    """``(S, A)`` int successor of each (state, action): the ring for action 0, uniform draws
    for the others."""
    rng = np.random.default_rng(seed)
    succ = np.empty((S, A), dtype=np.int64)  # (S, A)
    succ[:, 0] = (np.arange(S) + 1) % S
    succ[:, 1:] = rng.integers(0, S, size=(S, A - 1))
    return succ


@register("digraph")
def digraph(
    S: int = 12,
    A: int = 2,
    seed: int = 0,
    slip: float = 0.0,
    H: int = 0,
    gamma: float = 0.0,
) -> TabularMDP:
    """Random directed graph (ring + random one-way shortcuts) for goal reaching; unit steps."""
    S = require_int("digraph", "S", S, 2)
    A = require_int("digraph", "A", A, 1)
    seed = require_int("digraph", "seed", seed, 0)
    H = require_int("digraph", "H", H, 0) or 2 * S
    p = require_probability("digraph", "slip", slip)
    succ = digraph_successors(S, A, seed)  # (S, A)
    P = np.full((S, A, S), p / S)  # (S, A, S)
    P[np.arange(S)[:, None], np.arange(A)[None, :], succ] += 1.0 - p
    name = f"digraph:S={S},A={A},seed={seed}" + (f",slip={p!r}" if p else "")
    return family_mdp(
        "digraph",
        P,
        np.zeros((S, A)),
        H=H,
        gamma=gamma,
        reward_model="deterministic",
        sparse=False,
        name=name,
    )
