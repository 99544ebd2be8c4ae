"""Submodular-MDP families (SubRL, :mod:`theorylab.mdps.submodular`): coverage utilities on a
bandit, a grid and a corridor, and a modular (additive) utility on a grid.

* ``coverage-bandit:S=8,H=5,J=16,p=0.25,seed=0`` -- A = S actions, action a moves to state a
  from anywhere (every state reachable in one step: the submodular-bandit special case, where
  picking H - 1 states greedily by marginal gain is the classical greedy). State s covers target
  j with probability p (each state at least one target), weights uniform on {1..4}; start 0.
* ``coverage-tight:k=4`` -- the bandit instance on which greedy attains its constant exactly
  (the classical construction): k columns of k + 1 targets; with W = k^(k+1), target (i, j),
  i = 1..k, weighs ``W (k-1)^(i-1) / k^(i+1)`` and the last target of each column ``W (1 -
  1/k)^k / k`` (all integers). States 1..k cover row i (1/k of what every column still lacks),
  states k+1..2k cover a column each, the start 0 covers nothing; A = S = 2k + 1 (teleport),
  H = k + 1 (k picks). OPT = the k columns = W; greedy (ties to the smallest action) takes the
  rows: ``W (1 - (1 - 1/k)^k)``.
* ``coverage-grid:rows=3,cols=3,H=5,radius=1,seed=0`` -- a rows x cols grid, A = 4 moves
  (0 up, 1 right, 2 down, 3 left; off-grid moves stay), one target per cell with weight uniform
  on {1..4}; a state covers the cells within Chebyshev distance ``radius``; start cell 0.
* ``coverage-corridor:k=6`` -- 2k + 1 cells in a row, A = 2 (0 left, 1 right), start in the
  middle, H = k + 1 (k moves); each cell covers itself; the cell left of the start weighs 4, the
  cells beyond it 1, every cell right of the start 3. The marginal-gain greedy goes left and
  collects 4 + (k - 1); the optimum goes right and collects 3k: greedy/OPT = (k + 3)/(3k) (1/2
  at k = 6), below 1 - 1/e -- the bandit assumption matters.
* ``modular-grid:rows=3,cols=3,H=5,seed=0`` -- the grid moves with ``u[h, s]`` uniform on
  {0, 1/8, ..., 1}: standard finite-horizon RL (:meth:`SubmodularMDP.modular_tabular`).
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.families.chain import require_int, require_probability
from theorylab.mdps.registry import register
from theorylab.mdps.submodular import CoverageUtility, ModularUtility, SubmodularMDP

MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))  # (d_row, d_col) of up, right, down, left


def grid_moves(rows: int, cols: int) -> np.ndarray:
    """next_state (rows cols, 4): the cell each move leads to (off-grid moves stay)."""
    nxt = np.empty((rows * cols, 4), dtype=np.int64)  # (S, A)
    for r in range(rows):
        for c in range(cols):
            for a, (dr, dc) in enumerate(MOVES):
                rr, cc = r + dr, c + dc
                inside = 0 <= rr < rows and 0 <= cc < cols
                nxt[r * cols + c, a] = rr * cols + cc if inside else r * cols + c
    return nxt


def _grid_sizes(family: str, rows, cols, H) -> tuple[int, int, int]:
    rows = require_int(family, "rows", rows, 1)
    cols = require_int(family, "cols", cols, 1)
    H = require_int(family, "H", H, 2)
    if rows * cols < 2:
        raise InvalidMDPError(f"{family}: need at least 2 cells, got rows={rows}, cols={cols}")
    return rows, cols, H


def teleport_coverage(cover: np.ndarray, weights: np.ndarray, H: int, name: str) -> SubmodularMDP:
    """The submodular bandit: A = S, action a moves to state a from anywhere; start 0."""
    S = cover.shape[0]
    nxt = np.broadcast_to(np.arange(S, dtype=np.int64)[None, :], (S, S)).copy()  # (S, A = S)
    return SubmodularMDP(
        nxt, 0, H, CoverageUtility(cover, weights), name=name, info={"bandit": True}
    )


@register("coverage-bandit")
def coverage_bandit(
    S: int = 8, H: int = 5, J: int = 16, p: float = 0.25, seed: int = 0
) -> SubmodularMDP:
    """Every state reachable from every state; random coverage of J targets."""
    S = require_int("coverage-bandit", "S", S, 2)
    H = require_int("coverage-bandit", "H", H, 2)
    J = require_int("coverage-bandit", "J", J, 1)
    p = require_probability("coverage-bandit", "p", p)
    seed = require_int("coverage-bandit", "seed", seed, 0)
    rng = np.random.default_rng(seed)
    cover = rng.random((S, J)) < p  # (S, J)
    cover[np.arange(S), rng.integers(0, J, size=S)] = True  # every state covers something
    weights = rng.integers(1, 5, size=J).astype(np.float64)  # (J,)
    return teleport_coverage(
        cover, weights, H, f"coverage-bandit:S={S},H={H},J={J},p={p!r},seed={seed}"
    )


@register("coverage-tight")
def coverage_tight(k: int = 4) -> SubmodularMDP:
    """Greedy's tight instance: rows (taken by greedy on ties) against columns (the optimum)."""
    k = require_int("coverage-tight", "k", k, 2)
    S = 2 * k + 1
    cover = np.zeros((S, (k + 1) * k), dtype=bool)  # (S, J): target i k + j is cell (i, j)
    for i in range(k):
        cover[1 + i, i * k : (i + 1) * k] = True  # state 1 + i: row i of the table
        cover[1 + k + i, i::k] = True  # state 1 + k + i: column i, its last cell included
    rows = np.array([k ** (k - i) * (k - 1) ** (i - 1) for i in range(1, k + 1)] + [(k - 1) ** k])
    weights = np.repeat(rows.astype(np.float64), k)  # (J,) = ((k + 1) k,)
    return teleport_coverage(cover, weights, k + 1, f"coverage-tight:k={k}")


@register("coverage-grid")
def coverage_grid(
    rows: int = 3, cols: int = 3, H: int = 5, radius: int = 1, seed: int = 0
) -> SubmodularMDP:
    """A grid; each state covers the cells within Chebyshev distance ``radius``."""
    rows, cols, H = _grid_sizes("coverage-grid", rows, cols, H)
    radius = require_int("coverage-grid", "radius", radius, 0)
    seed = require_int("coverage-grid", "seed", seed, 0)
    rng = np.random.default_rng(seed)
    r, c = np.divmod(np.arange(rows * cols), cols)  # (S,) each
    dist = np.maximum(np.abs(r[:, None] - r[None, :]), np.abs(c[:, None] - c[None, :]))  # (S, S)
    weights = rng.integers(1, 5, size=rows * cols).astype(np.float64)
    return SubmodularMDP(
        grid_moves(rows, cols),
        0,
        H,
        CoverageUtility(dist <= radius, weights),
        name=f"coverage-grid:rows={rows},cols={cols},H={H},radius={radius},seed={seed}",
        info={"bandit": False},
    )


@register("coverage-corridor")
def coverage_corridor(k: int = 6) -> SubmodularMDP:
    """The greedy trap: a heavy cell on the left of the start, the optimum on the right."""
    k = require_int("coverage-corridor", "k", k, 2)
    n = 2 * k + 1
    nxt = np.empty((n, 2), dtype=np.int64)  # (S, A): 0 left, 1 right
    nxt[:, 0] = np.maximum(np.arange(n) - 1, 0)
    nxt[:, 1] = np.minimum(np.arange(n) + 1, n - 1)
    weights = np.zeros(n)
    weights[:k] = 1.0
    weights[k - 1] = 4.0
    weights[k + 1 :] = 3.0
    return SubmodularMDP(
        nxt,
        k,
        k + 1,
        CoverageUtility(np.eye(n, dtype=bool), weights),
        name=f"coverage-corridor:k={k}",
        info={"bandit": False},
    )


@register("modular-grid")
def modular_grid(rows: int = 3, cols: int = 3, H: int = 5, seed: int = 0) -> SubmodularMDP:
    """A grid with an additive time-indexed utility u[h, s] in {0, 1/8, ..., 1}."""
    rows, cols, H = _grid_sizes("modular-grid", rows, cols, H)
    seed = require_int("modular-grid", "seed", seed, 0)
    rng = np.random.default_rng(seed)
    u = rng.integers(0, 9, size=(H, rows * cols)) / 8.0  # (H, S), exact in binary
    return SubmodularMDP(
        grid_moves(rows, cols),
        0,
        H,
        ModularUtility(u),
        name=f"modular-grid:rows={rows},cols={cols},H={H},seed={seed}",
        info={"bandit": False},
    )
