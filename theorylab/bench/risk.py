"""Benchmark: static-CVaR planning time against the budget grid; CVaR-UCBVI throughput.

Two tables in one list of rows (``kind`` tells them apart):

* ``kind="planning"``: :func:`theorylab.algorithms.risk.static_cvar_planning` on one fixed random
  MDP (deterministic rewards on the 1/4 grid; S, A, H in the row) planned on finer and finer
  exact lattices eta = 1/4, 1/8, 1/20, 1/40, 1/100 (every reward stays on the grid, so the value
  is the same on each; the rows report it). The number of budget grid points is
  ``J = H max_r / eta + 1`` (the lattice's own count is reported); the backup costs
  O(H S A (S + K_outcomes) J), so for a fixed MDP the time should be linear in J:
  ``us_per_grid_point = seconds / J * 1e6`` should stay flat (fixed per-call overhead inflates it
  at small J). Best of ``repeats`` runs.
* ``kind="cvar-ucbvi"``: one full ``theorylab.run("cvar-ucbvi", ...)`` (exact regret every
  episode included) with B seeds batched; ``seed_episodes_per_s = B K / seconds`` and
  ``episodes_per_s = K / seconds``. B = 32 (the brief) and B = 1 for the batching speed-up.

Keys of every row: ``kind``, ``problem``, ``seconds``; planning rows add ``S, A, H, eta,
grid_points, us_per_grid_point, value``; cvar-ucbvi rows add ``seeds, episodes,
seed_episodes_per_s, episodes_per_s``. Quick (< 10 s): a small MDP, two grids, 32 seeds x 100
episodes only.
"""

from __future__ import annotations

import time

from theorylab.table import left, render, right

PLANNING_KEYS = ("S", "A", "H", "eta", "grid_points", "us_per_grid_point", "value")
UCBVI_KEYS = ("seeds", "episodes", "seed_episodes_per_s", "episodes_per_s")
COMMON_KEYS = ("kind", "problem", "seconds")


def _random_mdp(S: int, A: int, H: int, seed: int = 0):
    import numpy as np

    from theorylab.mdps import TabularMDP

    rng = np.random.default_rng(seed)
    W = rng.integers(0, 4, size=(S, A, S)).astype(float)
    W[W.sum(-1) == 0, 0] = 1.0
    R = rng.integers(0, 5, size=(S, A)) / 4
    mu0 = np.zeros(S)
    mu0[0] = 1.0
    return TabularMDP(W / W.sum(-1, keepdims=True), R, mu0, horizon=H)


def bench_planning(S: int, A: int, H: int, etas, *, tau: float = 0.25, repeats: int = 3):
    from theorylab.algorithms.risk import static_cvar_planning

    mdp = _random_mdp(S, A, H)
    rows = []
    for eta in etas:
        best, sol = float("inf"), None
        for _ in range(repeats):
            t0 = time.perf_counter()
            sol = static_cvar_planning(mdp, tau, eta=eta)
            best = min(best, time.perf_counter() - t0)
        J = sol.lattice.n_levels
        rows.append(
            {
                "kind": "planning",
                "problem": f"random S={S},A={A},H={H}, tau={tau}",
                "seconds": best,
                "S": S,
                "A": A,
                "H": H,
                "eta": eta,
                "grid_points": J,
                "us_per_grid_point": best / J * 1e6,
                "value": float(sol.value),
            }
        )
    return rows


def bench_cvar_ucbvi(mdp: str, seeds: int, episodes: int, *, tau: float = 0.25, **params):
    from theorylab.experiment import run

    run("cvar-ucbvi", mdp, episodes=5, seeds=seeds, tau=tau, **params)  # warm-up (imports)
    t0 = time.perf_counter()
    run("cvar-ucbvi", mdp, episodes=episodes, seeds=seeds, tau=tau, **params)
    dt = time.perf_counter() - t0
    return {
        "kind": "cvar-ucbvi",
        "problem": f"{mdp}, tau={tau}",
        "seconds": dt,
        "seeds": seeds,
        "episodes": episodes,
        "seed_episodes_per_s": seeds * episodes / dt,
        "episodes_per_s": episodes / dt,
    }


def bench_risk(quick: bool = False) -> list[dict]:
    """Rows of both tables (module docstring). ``quick``: small sizes only (< 10 s)."""
    if quick:
        rows = bench_planning(4, 2, 4, (0.25, 0.05))
        rows.append(bench_cvar_ucbvi("cvar-safe-risky:H=3", 32, 100))
        return rows
    rows = bench_planning(10, 3, 10, (0.25, 0.125, 0.05, 0.025, 0.01))
    for mdp, K in (
        ("cvar-safe-risky:H=3", 1000),
        ("icvar-lower-bound:n=2,alpha=0.25,eta=0.1,A=2,H=4", 500),
    ):
        rows.append(bench_cvar_ucbvi(mdp, 32, K))
        rows.append(bench_cvar_ucbvi(mdp, 1, K))
    return rows


def format_table(rows: list[dict]) -> str:
    """Markdown tables: planning time per budget grid point, then CVaR-UCBVI throughput."""
    out = []
    plan = [r for r in rows if r["kind"] == "planning"]
    if plan:
        columns = [
            left("problem"),
            *map(right, ("eta", "grid points J", "seconds", "us / grid point", "CVaR*")),
        ]
        body = [
            [
                r["problem"],
                f"{r['eta']:g}",
                str(r["grid_points"]),
                f"{r['seconds']:.4f}",
                f"{r['us_per_grid_point']:.1f}",
                f"{r['value']:.6f}",
            ]
            for r in plan
        ]
        out.append(render(columns, body, markdown=True))
    ucb = [r for r in rows if r["kind"] == "cvar-ucbvi"]
    if ucb:
        columns = [
            left("problem"),
            *map(right, ("seeds B", "episodes K", "seconds", "seed-episodes / s", "episodes / s")),
        ]
        body = [
            [
                r["problem"],
                str(r["seeds"]),
                str(r["episodes"]),
                f"{r['seconds']:.2f}",
                f"{r['seed_episodes_per_s']:.0f}",
                f"{r['episodes_per_s']:.1f}",
            ]
            for r in ucb
        ]
        out.append(render(columns, body, markdown=True))
    return "\n\n".join(out)
