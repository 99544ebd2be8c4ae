"""GridWorld: a rows x cols grid with walls, slippery moves and one rewarding goal cell.

Source: the rlberry GridWorld (``rlberry/envs/finite/gridworld.py``, theory.md section 9.3), with
the differences listed below. The definition implemented here:

* Cells are numbered row-major, ``cell = row * cols + col``, row 0 at the top. Walls are cells
  (``walls=5|6`` in a name string). Wall cells are *not* states: the states are the free cells in
  increasing cell order (so ``S = rows * cols - len(walls)`` plus the terminal state below);
  ``mdp.state_names[s]`` is ``"(row,col)"``; :func:`gridworld_states` gives the cell -> state map.
* A = 4 actions: 0 = up, 1 = right, 2 = down, 3 = left.
* Moves: the intended direction is taken with probability ``1 - slip``; with probability ``slip``
  the move goes in one of the *other three* directions, each with probability ``slip / 3``.
  A move into a wall or off the grid leaves the agent where it is. (rlberry instead spreads the
  slip mass over the valid neighbours only; here the slip law does not depend on the position.)
* Reward: acting in the goal cell pays 1 (any action, as rlberry's ``reward_at``); every other
  (state, action) pays 0. Mean rewards are 0/1, so ``reward_model="bernoulli"`` changes nothing.
* What happens after acting in the goal (``goal_mode``):

  - ``"absorbing"`` (default): the agent moves to an explicit terminal state (the last state,
    named ``"terminal"``), absorbing with zero reward; the goal pays once per episode. The
    optimal value from the start is 1 if the goal can be reached within H - 1 moves, else less.
  - ``"reset"``: the agent moves back to the start cell and may collect the goal again in the
    same episode (no terminal state is added).

* ``start`` and ``goal`` are cell indices; ``goal = -1`` (default) is the last cell
  ``rows * cols - 1`` (any negative index counts from the end, as in Python).
* Parameters are validated: rows, cols >= 1 with at least 2 cells, slip in [0, 1], walls inside
  the grid, not repeated and not on the start or the goal, start != goal.
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.families.chain import family_mdp, require_int, require_probability
from theorylab.mdps.registry import register
from theorylab.mdps.sizes import check_dense_size
from theorylab.mdps.tabular import TabularMDP

UP, RIGHT, DOWN, LEFT = 0, 1, 2, 3
MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))  # (d_row, d_col) of up, right, down, left
GOAL_MODES = ("absorbing", "reset")


def _cell_index(name: str, value, n_cells: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidMDPError(f"gridworld: parameter {name} must be a cell index, got {value!r}")
    if not (-n_cells <= value < n_cells):
        raise InvalidMDPError(
            f"gridworld: parameter {name}={value} is outside the grid: cells are 0..{n_cells - 1}"
        )
    return int(value) % n_cells


def gridworld_states(rows: int, cols: int, walls: tuple[int, ...] = ()) -> np.ndarray:
    """Cell -> state map, ``(rows * cols,)`` int: the state of each free cell, -1 for a wall."""
    is_wall = np.zeros(rows * cols, dtype=bool)
    is_wall[list(walls)] = True
    index = np.full(rows * cols, -1, dtype=np.int64)
    index[~is_wall] = np.arange(int((~is_wall).sum()))
    return index


@register("gridworld")
def gridworld(
    rows: int = 4,
    cols: int = 4,
    walls: tuple[int, ...] = (),
    slip: float = 0.0,
    start: int = 0,
    goal: int = -1,
    goal_mode: str = "absorbing",
    H: int = 20,
    gamma: float = 0.0,
    reward_model: str = "deterministic",
    sparse: bool = False,
) -> TabularMDP:
    """GridWorld: reach the goal cell (reward 1) through walls; moves slip w.p. slip.

    ``gridworld:rows=4,cols=4,walls=5|6,slip=0.1,H=20``; actions 0..3 = up, right, down, left.
    """
    rows = require_int("gridworld", "rows", rows, 1)
    cols = require_int("gridworld", "cols", cols, 1)
    n_cells = rows * cols
    if n_cells < 2:
        raise InvalidMDPError(
            f"gridworld: the grid needs at least 2 cells, got rows={rows}, cols={cols}"
        )
    check_dense_size("gridworld", f"rows={rows},cols={cols}", n_cells + 1, len(MOVES))
    H = require_int("gridworld", "H", H, 1)
    slip = require_probability("gridworld", "slip", slip)
    if goal_mode not in GOAL_MODES:
        raise InvalidMDPError(
            f"gridworld: parameter goal_mode must be 'absorbing' or 'reset', "
            f"got goal_mode={goal_mode!r}"
        )
    start = _cell_index("start", start, n_cells)
    goal = _cell_index("goal", goal, n_cells)
    if start == goal:
        raise InvalidMDPError(f"gridworld: start and goal are the same cell {start}")
    if isinstance(walls, (int, np.integer)):
        walls = (walls,)
    walls = tuple(walls)
    seen: set[int] = set()
    for w in walls:
        if isinstance(w, bool) or not isinstance(w, (int, np.integer)):
            raise InvalidMDPError(f"gridworld: walls must be cell indices, got {w!r} in {walls}")
        if not (0 <= w < n_cells):
            raise InvalidMDPError(
                f"gridworld: wall cell {w} is outside the grid: cells are 0..{n_cells - 1}"
            )
        if w == start or w == goal:
            which = "start" if w == start else "goal"
            raise InvalidMDPError(f"gridworld: wall cell {w} is on the {which} cell")
        if w in seen:
            raise InvalidMDPError(f"gridworld: wall cell {w} is listed twice in walls={walls}")
        seen.add(int(w))
    walls = tuple(sorted(int(w) for w in walls))

    state_of = gridworld_states(rows, cols, walls)  # (rows * cols,)
    n_free = int((state_of >= 0).sum())
    absorbing = goal_mode == "absorbing"
    S = n_free + (1 if absorbing else 0)
    terminal = n_free  # only used when absorbing
    P = np.zeros((S, 4, S))  # (S, A, S)
    R = np.zeros((S, 4))  # (S, A)
    names: list[str] = []
    for cell in range(n_cells):
        s = state_of[cell]
        if s < 0:
            continue
        r, c = divmod(cell, cols)
        names.append(f"({r},{c})")
        if cell == goal:
            R[s, :] = 1.0
            P[s, :, terminal if absorbing else state_of[start]] = 1.0
            continue
        # Where each direction leads from this cell (blocked moves stay put).
        dest = np.empty(4, dtype=np.int64)
        for d, (dr, dc) in enumerate(MOVES):
            rr, cc = r + dr, c + dc
            inside = 0 <= rr < rows and 0 <= cc < cols
            dest[d] = state_of[rr * cols + cc] if inside and state_of[rr * cols + cc] >= 0 else s
        for a in range(4):
            for d in range(4):
                P[s, a, dest[d]] += (1.0 - slip) if d == a else slip / 3.0
    if absorbing:
        names.append("terminal")
        P[terminal, :, terminal] = 1.0
    mu0 = np.zeros(S)
    mu0[state_of[start]] = 1.0
    wall_text = "|".join(str(w) for w in walls)
    return family_mdp(
        "gridworld",
        P,
        R,
        H=H,
        gamma=gamma,
        reward_model=reward_model,
        sparse=sparse,
        mu0=mu0,
        state_names=names,
        name=(
            f"gridworld:rows={rows},cols={cols},walls={wall_text},slip={slip!r},start={start},"
            f"goal={goal},goal_mode={goal_mode},H={H}"
        ),
    )
