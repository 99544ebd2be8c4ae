"""DeepSea (Osband et al., *Deep Exploration via Randomized Value Functions*, JMLR 2019; bsuite).

Source: ``google-deepmind/bsuite``, ``bsuite/environments/deep_sea.py`` (class ``DeepSea``).

* An N x N grid; the agent starts at the top-left cell (row 0, column 0) and descends one row per
  step, so an episode is exactly H = N steps.
* State of cell (row, col) is ``row * N + col``; one extra state ``N * N`` is the explicit terminal
  state (absorbing, zero reward) that every action in row N - 1 leads to, so an episode of the
  finite-horizon MDP ends there exactly when bsuite's episode terminates. Cells with col > row are
  unreachable from the start (kept so the state space is bsuite's N x N observation grid).
  S = N^2 + 1, A = 2.
* Action mapping: bsuite draws, per cell, which of the two actions means "right"
  (``mapping = RandomState(mapping_seed).binomial(1, 0.5, [N, N])``; action ``a`` is "right" iff
  ``a == mapping[row, col]``). Here ``mapping_seed = -1`` (default) is the *deterministic* mapping
  of bsuite's ``randomize_actions=False``: action 1 = right, action 0 = left in every cell.
  ``mapping_seed >= 0`` reproduces bsuite's randomised mapping for that ``mapping_seed`` exactly.
* right: col -> min(col + 1, N - 1); left: col -> max(col - 1, 0); the row always grows by 1.
  ``stochastic=true`` is bsuite's ``deterministic=False`` transition law: right succeeds with
  probability 1 - 1/N and otherwise leaves the column unchanged.
* bsuite rewards: right costs ``move_cost / N`` (``unscaled_move_cost``, default 0.01); right in
  column N - 1 additionally pays 1 (column N - 1 is reachable only in the last row). With the
  deterministic law the optimal return is 1 - move_cost (always right) when move_cost < 1.

Deviation (rewards must be means in [0, 1]): every reward is shifted by ``+move_cost / N``:

    r(s, left) = move_cost / N,   r(s, right) = 0,   r((row, N-1), right) = 1,

and the terminal state pays 0. Every episode takes exactly N steps before the terminal state, so
every policy's value is its bsuite value plus a constant: plus ``move_cost`` for the finite horizon
H = N, plus ``(move_cost / N) (1 - gamma^N) / (1 - gamma)`` with a discount. Hence optimal
policies and regret are unchanged, and with the deterministic law and move_cost < 1 the optimal
value here is 1 (bsuite: 1 - move_cost = 0.99). (With the stochastic law, bsuite's
``_optimal_return = (1 - 1/N)^(N-1) - move_cost`` is the value of "always right"; the exact
optimum is a little higher, because after a failed right move the treasure is out of reach and
moving left saves the move costs.) bsuite's stochastic version also adds N(0, 1) noise
to the rewards of the two bottom corner cells; that noise is not modelled here (rewards follow
``reward_model``).
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.families.chain import family_mdp, require_int
from theorylab.mdps.registry import register
from theorylab.mdps.sizes import check_dense_size
from theorylab.mdps.tabular import TabularMDP


def deepsea_action_mapping(N: int, mapping_seed: int = -1) -> np.ndarray:
    """Which action means "right" in each cell, ``(N, N)`` int (bsuite's ``_action_mapping``)."""
    if mapping_seed == -1:
        return np.ones((N, N), dtype=np.int64)
    return np.random.RandomState(mapping_seed).binomial(1, 0.5, [N, N]).astype(np.int64)


@register("deepsea")
def deepsea(
    N: int = 10,
    move_cost: float = 0.01,
    mapping_seed: int = -1,
    stochastic: bool = False,
    gamma: float = 0.0,
    reward_model: str = "deterministic",
    sparse: bool = False,
) -> TabularMDP:
    """DeepSea (bsuite): N x N, H = N; going right costs move_cost/N, bottom-right pays 1.

    Rewards are shifted by +move_cost/N to lie in [0, 1] (values = bsuite values + move_cost).
    """
    N = require_int("deepsea", "N", N, 2)
    try:
        cost = float(move_cost)
    except (TypeError, ValueError):
        cost = float("nan")
    if not (0.0 <= cost <= N):
        raise InvalidMDPError(
            f"deepsea: parameter move_cost must lie in [0, N] = [0, {N}] so that the shifted "
            f"rewards stay in [0, 1], got move_cost={move_cost!r}"
        )
    if (
        isinstance(mapping_seed, bool)
        or not isinstance(mapping_seed, (int, np.integer))
        or (mapping_seed < -1)
    ):
        raise InvalidMDPError(
            "deepsea: parameter mapping_seed must be -1 (action 1 = right everywhere) or a seed "
            f">= 0, got mapping_seed={mapping_seed!r}"
        )
    mapping = deepsea_action_mapping(N, int(mapping_seed))  # (N, N)
    p_right = 1.0 - 1.0 / N if stochastic else 1.0
    shift = cost / N
    S = N * N + 1
    check_dense_size("deepsea", f"N={N}", S, 2)
    terminal = N * N
    P = np.zeros((S, 2, S))  # (S, A, S)
    R = np.full((S, 2), shift)  # (S, A): left pays the shift, right 0 (1 in column N - 1)
    for row in range(N):
        for col in range(N):
            s = row * N + col
            for a in range(2):
                if row == N - 1:
                    P[s, a, terminal] = 1.0
                if a == mapping[row, col]:  # right
                    R[s, a] = 1.0 if col == N - 1 else 0.0
                    if row < N - 1:
                        P[s, a, (row + 1) * N + min(col + 1, N - 1)] += p_right
                        P[s, a, (row + 1) * N + col] += 1.0 - p_right
                elif row < N - 1:
                    P[s, a, (row + 1) * N + max(col - 1, 0)] = 1.0
    P[terminal, :, terminal] = 1.0
    R[terminal, :] = 0.0
    names = [f"({row},{col})" for row in range(N) for col in range(N)] + ["terminal"]
    return family_mdp(
        "deepsea",
        P,
        R,
        H=N,
        gamma=gamma,
        reward_model=reward_model,
        sparse=sparse,
        state_names=names,
        name=(
            f"deepsea:N={N},move_cost={cost!r},mapping_seed={int(mapping_seed)},"
            f"stochastic={'true' if stochastic else 'false'}"
        ),
    )
