"""Pessimistic interval estimation for offline two-player zero-sum Markov games (seed row 001#43:
``seed-catalogue-001.md#43``).

Paper: "Offline Learning in Markov Games with General Function Approximation" (catalogue row 43;
Bellman-consistent pessimism for NE, CE and CCE). What was read [V]: the catalogue's quotations
of the abstract only -- "interval estimation for policies' returns", upper and lower bounds used
for "a relaxation on the gap of a candidate policy", a coverage condition that "improves over
the recently proposed 'unilateral concentrability'". The paper's algorithm, constants and
function-class machinery were not read. What is implemented [A] is the tabular special case
of that idea (as in the tabular pessimistic Nash VI literature), zero-sum NE only:

1. From n samples per stage ``(h, s, a, b, r, s')``: counts ``n_h(s, a, b)``, the empirical
   reward and transition (unvisited cells: none).
2. Hoeffding bonus ``b_h(s, a, b) = c (H - h) sqrt(log(2 H S A B / delta) / (2 max(n, 1)))``
   (targets ``r + V_{h+1}(s')`` range over ``[0, H - h]``; a union bound over the cells).
3. Backward over h: ``Q_lo = clip(r_hat + P_hat V_lo - b, 0, H - h)`` and
   ``Q_up = clip(r_hat + P_hat V_up + b, 0, H - h)``; unvisited cells get ``Q_lo = 0``,
   ``Q_up = H - h``. The max player's ``x_h(s)`` is the maximin strategy of the matrix game
   ``Q_lo(h, s)`` (``V_lo`` its value); the min player's ``y_h(s)`` the minimax strategy of
   ``Q_up(h, s)`` (``V_up`` its value).
4. Output ``(x, y)`` with the interval ``[V_lo(mu0), V_up(mu0)]``. On the good event
   ``V_lo <= V^{x, dagger}`` and ``V_up >= V^{dagger, y}``, so the duality gap of ``(x, y)`` is at
   most ``V_up(mu0) - V_lo(mu0)``: the "relaxation on the gap".

The registered name ``pessimistic-nash``; ``c = 0`` is certainty equivalence with the
pessimistic defaults for unvisited cells (the mutation ``markov-game-no-bonus``).

Data [A]: a generative offline dataset -- per stage, n draws ``s ~ uniform``, ``(a, b) ~`` the
coverage distribution over the joint actions (``full``: all cells; ``unilateral``: every cell
``(a, b)`` with a in the support of the max player's NE strategy ``x*_h(s)`` or b in the support of
``y*_h(s)`` (the NE and its unilateral deviations); ``nash``: the support product only),
``r ~ Bernoulli(R)``, ``s' ~ P``. Deviations: trajectories are not simulated (state coverage is
uniform by construction).

Measured (claim ``markov-game-pessimistic-interval``, full scale, ``random-game:S=3,A=3,B=3,H=3``,
unilateral coverage, n = 4000..256000, 12 seeds): the interval valid on every run, width slope
-0.500, duality-gap slope -0.526 (gap 0.099 -> 0.011); NE-support-only data: gap 0.905 at
n = 256000. With the bonus dropped (c = 0) the interval is never valid, yet its gap is smaller at
small n (0.31 against 1.14 at n = 300, 16 seeds): pessimism buys the certificate, not the gap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.algorithms.planning.markov_game import matrix_game, nash_backward_induction
from theorylab.algorithms.registry import register
from theorylab.mdps.markov_game import TabularMarkovGame

COVERAGES = ("full", "unilateral", "nash")


@dataclass(frozen=True)
class GameDataset:
    """Per seed and stage, n samples: states, a, b, rewards, next states ``(B, H, n)``."""

    game: TabularMarkovGame
    s: np.ndarray
    a: np.ndarray
    b: np.ndarray
    r: np.ndarray
    s2: np.ndarray
    coverage: str

    @property
    def n(self) -> int:
        return int(self.s.shape[2])


def coverage_mask(game, coverage: str, tol: float = 1e-9) -> np.ndarray:
    """``(H, S, A, B)`` bool: the cells the data covers."""
    if coverage not in COVERAGES:
        raise ValueError(f"coverage must be one of {', '.join(COVERAGES)}, got {coverage!r}")
    if coverage == "full":
        return np.ones(game.R.shape, dtype=bool)
    _, x, y = nash_backward_induction(game)
    sx, sy = x > tol, y > tol  # (H, S, A), (H, S, B)
    if coverage == "nash":
        return sx[..., :, None] & sy[..., None, :]
    return sx[..., :, None] | sy[..., None, :]


def make_game_dataset(game, n: int, coverage: str, rngs) -> GameDataset:
    """n samples per stage per seed from the coverage distribution (module docstring)."""
    mask = coverage_mask(game, coverage)
    H, S, A, B = game.R.shape
    out = {k: np.zeros((len(rngs), H, n), dtype=np.int64) for k in ("s", "a", "b", "s2")}
    r = np.zeros((len(rngs), H, n))
    for i, rng in enumerate(rngs):
        for h in range(H):
            s = rng.integers(0, S, n)
            u = rng.random(n)
            w = mask[h, s].reshape(n, A * B).astype(float)  # (n, A B)
            cell = (w.cumsum(axis=1) / w.sum(axis=1, keepdims=True) < u[:, None]).sum(axis=1)
            a, b = cell // B, cell % B
            r[i, h] = rng.random(n) < game.R[h, s, a, b]
            cdf = game.P[h, s, a, b].cumsum(axis=1)  # (n, S)
            s2 = np.minimum((cdf < rng.random(n)[:, None]).sum(axis=1), S - 1)
            for k, v in (("s", s), ("a", a), ("b", b), ("s2", s2)):
                out[k][i, h] = v
    return GameDataset(game, out["s"], out["a"], out["b"], r, out["s2"], coverage)


def hoeffding_bonus(n: np.ndarray, H: int, h: int, cells: int, delta: float, c: float):
    """``c (H - h) sqrt(log(2 H cells / delta) / (2 max(n, 1)))`` (cells = S A B)."""
    return c * (H - h) * np.sqrt(np.log(2 * H * cells / delta) / (2 * np.maximum(n, 1)))


def _fit_one(data: GameDataset, i: int, c: float, delta: float):
    game = data.game
    H, S, A, B = game.R.shape
    x, y = np.zeros((H, S, A)), np.zeros((H, S, B))
    V_lo, V_up = np.zeros(S), np.zeros(S)
    for h in range(H - 1, -1, -1):
        s, a, b = data.s[i, h], data.a[i, h], data.b[i, h]
        flat = (s * A + a) * B + b
        n = np.bincount(flat, minlength=S * A * B).reshape(S, A, B)
        r_sum = np.bincount(flat, data.r[i, h], S * A * B).reshape(S, A, B)
        lo_next = np.bincount(flat, V_lo[data.s2[i, h]], S * A * B).reshape(S, A, B)
        up_next = np.bincount(flat, V_up[data.s2[i, h]], S * A * B).reshape(S, A, B)
        safe = np.maximum(n, 1)
        bonus = hoeffding_bonus(n, H, h, S * A * B, delta, c)
        Q_lo = np.where(n > 0, np.clip((r_sum + lo_next) / safe - bonus, 0, H - h), 0.0)
        Q_up = np.where(n > 0, np.clip((r_sum + up_next) / safe + bonus, 0, H - h), H - h)
        for st in range(S):
            V_lo[st], x[h, st], _ = matrix_game(Q_lo[st])
            V_up[st], _, y[h, st] = matrix_game(Q_up[st])
    mu0 = game.mu0
    return x, y, float(mu0 @ V_lo), float(mu0 @ V_up)


@register(
    "pessimistic-nash",
    kind="markov-game-offline",
    problem="random-game",
    papers=("001#43",),
    summary="pessimistic interval estimation for offline zero-sum Markov games: maximin of the "
    "lower Q for the max player, minimax of the upper Q for the min player (Hoeffding bonuses)",
)
def pessimistic_nash(data: GameDataset, c: float = 1.0, delta: float = 0.1):
    """Per seed: ``x (B, H, S, A)``, ``y (B, H, S, B)``, ``lower (B,)``, ``upper (B,)``."""
    if not isinstance(data, GameDataset):
        raise ValueError(f"pessimistic-nash needs a GameDataset, got {type(data).__name__}")
    if isinstance(c, bool) or not isinstance(c, (int, float)) or not (np.isfinite(c) and c >= 0):
        raise ValueError(f"pessimistic-nash: c must be a finite number >= 0, got {c!r}")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
        raise ValueError(f"pessimistic-nash: delta must lie in (0, 1), got {delta!r}")
    fits = [_fit_one(data, i, float(c) * bonus_scale(), float(delta)) for i in range(len(data.s))]
    x, y, lo, up = zip(*fits, strict=True)
    return np.stack(x), np.stack(y), np.asarray(lo), np.asarray(up)


def bonus_scale() -> float:
    """1; the mutation ``markov-game-no-bonus`` patches it to 0."""
    return 1.0
