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

``mountaincar-grid:nx=6,nv=6,repeat=10`` is the discretised MountainCar of the QRL catalogue
rows ([M]: the grid and the rounding are this module's choice, the paper's discretisation was not
read): states are the cells of an nx x nv grid over position [-1.2, 0.6] x velocity
[-0.07, 0.07] (``state = i nv + j``), the 3 actions push left / not / right, and a move runs
Gymnasium's MountainCar-v0 update ``v += (a - 1) 0.001 - 0.0025 cos(3 x)`` (velocity clipped,
position clipped, the left wall stops the car) ``repeat`` times from the cell's centre, then
rounds to the nearest cell. Deterministic and asymmetric; a coarse grid also leaves pairs that
cannot reach each other (QRL's cap) and cells that every action maps to themselves. The start
state is the cell nearest (x, v) = (-0.5, 0); goal cells are those with x >= 0.5. On the default
grid the goal is 6 moves from the start.
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


def mountaincar_successors(nx: int, nv: int, repeat: int) -> np.ndarray:
    """``(nx nv, 3)`` the grid state each (state, action) moves to: from the cell's centre,
    ``repeat`` steps of Gymnasium's MountainCar-v0 dynamics with the action held, then the
    nearest cell."""
    xs = np.linspace(-1.2, 0.6, nx)  # (nx,) positions
    vs = np.linspace(-0.07, 0.07, nv)  # (nv,) velocities
    x = np.repeat(xs, nv)[:, None] * np.ones((1, 3))  # (S, 3)
    v = np.tile(vs, nx)[:, None] * np.ones((1, 3))  # (S, 3)
    push = (np.arange(3) - 1)[None, :] * 0.001  # force 0.001 per unit of (action - 1)
    for _ in range(repeat):
        v = np.clip(v + push - 0.0025 * np.cos(3 * x), -0.07, 0.07)
        x = np.clip(x + v, -1.2, 0.6)
        v = np.where((x <= -1.2) & (v < 0), 0.0, v)  # the left wall stops the car
    i = np.abs(x[:, :, None] - xs[None, None, :]).argmin(axis=2)  # (S, 3)
    j = np.abs(v[:, :, None] - vs[None, None, :]).argmin(axis=2)  # (S, 3)
    return i * nv + j


@register("mountaincar-grid")
def mountaincar_grid(nx: int = 6, nv: int = 6, repeat: int = 10, H: int = 0) -> TabularMDP:
    """MountainCar-v0 on an nx x nv grid of (position, velocity), deterministic, 3 actions."""
    nx = require_int("mountaincar-grid", "nx", nx, 2)
    nv = require_int("mountaincar-grid", "nv", nv, 2)
    repeat = require_int("mountaincar-grid", "repeat", repeat, 1)
    S = nx * nv
    H = require_int("mountaincar-grid", "H", H, 0) or 2 * S
    succ = mountaincar_successors(nx, nv, repeat)  # (S, 3)
    P = np.zeros((S, 3, S))  # (S, A, S)
    P[np.arange(S)[:, None], np.arange(3)[None, :], succ] = 1.0
    xs, vs = np.linspace(-1.2, 0.6, nx), np.linspace(-0.07, 0.07, nv)
    mu0 = np.zeros(S)
    mu0[int(np.abs(xs + 0.5).argmin()) * nv + int(np.abs(vs).argmin())] = 1.0
    return family_mdp(
        "mountaincar-grid",
        P,
        np.zeros((S, 3)),
        H=H,
        gamma=0.0,
        reward_model="deterministic",
        sparse=False,
        name=f"mountaincar-grid:nx={nx},nv={nv},repeat={repeat}",
        mu0=mu0,
        state_names=[f"(x={x:.2f},v={v:.3f})" for x in xs for v in vs],
    )
