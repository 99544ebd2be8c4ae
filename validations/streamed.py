"""A regret claim's run kept as the statistics its checks read, not as (B, K) curves.

A paper-scale run can be longer than memory allows to keep: UCBVI-BF's Theorem 2 is informative
on RiverSwim S=2, H=2 from K = 1.5e8, where three (B, K) float64 curves take 3.8 GB per seed
(and the checks derive more). :func:`streamed_run` drives the whole-run compiled loop
(:class:`theorylab.algorithms.online.whole_run.CompiledLoop`, or LinUCB's, LSVI-UCB's and
CVaR-UCBVI's own loops: ``whole_run.make_compiled_loop``) segment by segment and folds every
segment into a :class:`RegretSummary`:

* the cumulative regret of every seed on a grid of episodes: every episode up to
  ``DENSE_UP_TO``, then ``PER_DECADE`` log-spaced points a decade, plus the first episode of
  the last tenth and K -- what the below-bound check (R(K)), the slope fits and the burn-in
  measurement read;
* per seed, the smallest ``estimate - V*`` and whether every estimate sat at the cap (the
  optimism check);
* the regret over the last tenth of the run (the ``learns`` test), exact from the grid.

The burn-in (:func:`theorylab.validations.reference.burn_in_end`: windows of max(10, k/10)
episodes) is read off the grid: exact where the grid is dense (k <= ``DENSE_UP_TO``), and
beyond it with the window's ends interpolated linearly in k between grid points, so to within
one grid step (a factor 10^(1/PER_DECADE), 0.1%). The checks that read a summary are
``check_learns_summary`` and ``check_optimism_summary`` in :mod:`theorylab.validations.claim`
(``Validation`` on a ``Scale(streamed=True)``, and ``StreamedLinearRegretClaim`` on its
``streamed`` scales in :mod:`theorylab.validations.claims.linear`); ``tests/test_streamed.py``
checks them against the full curves.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

DENSE_UP_TO = 10_000
PER_DECADE = 2000


def summary_grid(episodes: int) -> np.ndarray:
    """``(n,)`` increasing 1-based episodes: 1..min(K, DENSE_UP_TO), ``PER_DECADE`` log-spaced
    points a decade after it, the first episode of the last tenth and K."""
    K = int(episodes)
    dense = np.arange(1, min(K, DENSE_UP_TO) + 1, dtype=np.int64)
    if K <= DENSE_UP_TO:
        return dense
    n = int(np.ceil(PER_DECADE * np.log10(K / DENSE_UP_TO))) + 1
    sparse = np.unique(np.geomspace(DENSE_UP_TO, K, n).astype(np.int64))
    extra = np.array([K - max(1, K // 10) + 1, K], dtype=np.int64)
    return np.unique(np.concatenate([dense, sparse, extra]))


@dataclass
class RegretSummary:
    """What the online checks read from a run (see the module docstring).

    grid: ``(n,)`` 1-based episodes; cum: ``(B, n)`` cumulative regret at them; min_gap:
    ``(B,)`` min over episodes of ``estimate - V*``; at_cap: every estimate at or above the cap;
    tail_mean: ``(B,)`` mean per-episode regret over the last ``max(1, K // 10)`` episodes.
    """

    episodes: int
    optimal_value: float
    grid: np.ndarray
    cum: np.ndarray
    min_gap: np.ndarray
    at_cap: bool
    tail_mean: np.ndarray
    wall_seconds: float
    config: dict

    @property
    def final(self) -> np.ndarray:
        """``(B,)`` R(K)."""
        return self.cum[:, -1]

    def mean_cumulative(self, k: np.ndarray) -> np.ndarray:
        """Seed-mean cumulative regret at episodes ``k`` (0 at k = 0), interpolated linearly in
        k between grid points (exact on the grid)."""
        x = np.concatenate([[0], self.grid]).astype(float)
        y = np.concatenate([[0.0], self.cum.mean(axis=0)])
        return np.interp(np.asarray(k, dtype=float), x, y)

    def window_means(self) -> tuple[np.ndarray, np.ndarray]:
        """:func:`theorylab.validations.reference.window_means` at the grid's episodes: windows
        of ``max(10, k // 10)`` episodes starting at k, for those that fit in the run."""
        from theorylab.validations.reference import MIN_WINDOW

        k = self.grid
        width = np.minimum(np.maximum(MIN_WINDOW, k // 10), self.episodes)
        fits = k - 1 + width <= self.episodes
        k, width = k[fits], width[fits]
        sums = self.mean_cumulative(k - 1 + width) - self.mean_cumulative(k - 1)
        return k, sums / width


def _accumulate(summary_state: dict, out: dict, done: int, v_star: float, cap: float) -> None:
    """Fold one segment (``out``: regret, estimates, each ``(B, n)``, episodes done+1..done+n)
    into the running statistics."""
    regret, est = out["regret"], out["estimates"]
    n = regret.shape[1]
    grid, K = summary_state["grid"], summary_state["K"]
    c = summary_state["running"][:, None] + np.cumsum(regret, axis=1)  # (B, n)
    pick = (grid > done) & (grid <= done + n)
    summary_state["cum"][:, pick] = c[:, grid[pick] - done - 1]
    summary_state["running"] = c[:, -1].copy()
    gap = np.where(np.isnan(est), np.inf, est - v_star).min(axis=1)
    summary_state["min_gap"] = np.minimum(summary_state["min_gap"], gap)
    finite = est[np.isfinite(est)]
    if finite.size and not np.all(finite >= cap - 1e-9 * max(1.0, abs(cap))):
        summary_state["at_cap"] = False
    tail_start = K - max(1, K // 10)  # 0-based first episode of the last tenth
    lo = max(tail_start, done)
    if lo < done + n:
        summary_state["tail"] += regret[:, lo - done :].sum(axis=1)


def streamed_run(
    algorithm: str,
    problem,
    episodes: int,
    seeds: int,
    *,
    seed: int = 0,
    segment: int | None = None,
    **params,
) -> RegretSummary:
    """Run ``algorithm`` (one with a whole-run kernel) on ``problem`` for ``episodes`` x
    ``seeds`` in compiled segments and return its :class:`RegretSummary`: the same numbers the
    full curves of ``theorylab.run(..., loop="compiled")`` give at the grid (the same agent,
    objective, streams and kernel), in O(B n) memory instead of O(B K). The regret is scored by
    the algorithm's objective, as in ``theorylab.run`` (expected return, or e.g. ICVaR-RM's
    iterated CVaR)."""
    from theorylab.agent import env_spec
    from theorylab.algorithms.objectives import objective_of
    from theorylab.algorithms.online.whole_run import DEFAULT_SEGMENT, make_compiled_loop
    from theorylab.algorithms.registry import get_algorithm
    from theorylab.registry import convert_parameters, parse_spec
    from theorylab.runners.problems import resolve_mdp
    from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators

    entry = get_algorithm(algorithm)
    raw = parse_spec(algorithm)[1]
    typed = {**convert_parameters(entry.name, "algorithm", raw, entry.parameters()), **params}
    mdp = resolve_mdp(problem)
    K, idx = int(episodes), list(range(int(seeds)))
    agent_params = dict(typed)
    if "episodes" in entry.parameters():
        agent_params.setdefault("episodes", K)
    agent = entry.factory(
        env_spec(mdp, known_rewards=True),
        len(idx),
        generators(seed, idx, AGENT_STREAM),
        **agent_params,
    )
    objective = objective_of(entry, typed)
    v_star = float(objective.optimal_value(mdp))
    cap = float(mdp.horizon * np.asarray(mdp.R, dtype=float).max())
    grid = summary_grid(K)
    B = len(idx)
    config = {
        "algorithm": entry.name,
        "mdp": mdp.name,
        "S": mdp.S,
        "A": mdp.A,
        "H": mdp.horizon,
        "episodes": K,
        "objective": objective.name,
        "loop": "compiled, streamed (summary)",
        "grid_points": int(grid.size),
    }
    closed = getattr(agent, "closed_form_run", None)  # a null control: no episodes to run
    arrays = closed(mdp, objective, v_star, K) if closed is not None else None
    if arrays is not None:
        regret, _, est = (np.asarray(a)[:, 0] for a in arrays)  # (B,): constant per seed
        return RegretSummary(
            episodes=K,
            optimal_value=v_star,
            grid=grid,
            cum=regret[:, None] * grid[None, :],
            min_gap=est - v_star,
            at_cap=bool(np.all(est >= cap - 1e-9 * max(1.0, abs(cap)))),
            tail_mean=regret.copy(),
            wall_seconds=0.0,
            config={**config, "loop": "closed form (summary)"},
        )
    loop = make_compiled_loop(agent, mdp, v_star, generators(seed, idx, ENV_STREAM))
    state = {
        "grid": grid,
        "K": K,
        "cum": np.empty((B, grid.size)),
        "running": np.zeros(B),
        "min_gap": np.full(B, np.inf),
        "at_cap": True,
        "tail": np.zeros(B),
    }
    n_seg = loop.segment_length(DEFAULT_SEGMENT if segment is None else int(segment))
    t0 = time.perf_counter()
    done = 0
    while done < K:
        n = min(n_seg, K - done)
        _accumulate(state, loop.advance(n), done, v_star, cap)
        done += n
    return RegretSummary(
        episodes=K,
        optimal_value=v_star,
        grid=grid,
        cum=state["cum"],
        min_gap=state["min_gap"],
        at_cap=bool(state["at_cap"]),
        tail_mean=state["tail"] / max(1, K // 10),
        wall_seconds=time.perf_counter() - t0,
        config=config,
    )
