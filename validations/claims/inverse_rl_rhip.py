"""RHIP (Barnes et al. 2024, seed row 000#55): the horizon extremes, the gradient and recovery,
each against an answer written independently of ``algorithms/inverse_rl/rhip.py``: every route
of a small DAG enumerated depth-first, central finite differences, and the best routes of the
fitted reward compared with the demonstrations. Control: ``rhip-soft-tail`` (the tail's values
are MaxEnt's soft values, not Dijkstra's) fails the H = 0 extreme."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.registry import register_validation


def grid_dag(rows: int, cols: int, d: int, seed: int):
    """A rows x cols grid DAG (moves right, down, diagonal) with features ``0.1 + U[0, 1)``."""
    from theorylab.algorithms.inverse_rl.rhip import RouteGraph

    tails, heads = [], []
    for i, j in itertools.product(range(rows), range(cols)):
        for di, dj in ((0, 1), (1, 0), (1, 1)):
            if i + di < rows and j + dj < cols:
                tails.append(i * cols + j)
                heads.append((i + di) * cols + j + dj)
    phi = 0.1 + np.random.default_rng(seed).random((len(tails), d))  # (E, d)
    return RouteGraph(rows * cols, np.array(tails), np.array(heads), phi)


def all_routes(g, s: int, dest: int) -> list[list[int]]:
    """Every edge path from ``s`` to ``dest``, by depth-first enumeration."""
    if s == dest:
        return [[]]
    return [[int(e), *rest] for e in np.flatnonzero(g.tails == s)
            for rest in all_routes(g, int(g.heads[e]), dest)]  # fmt: skip


def best_route(g, r: np.ndarray, s: int, dest: int) -> list[int]:
    """The largest-reward route from ``s`` (ties: the lexicographically least edge list)."""
    routes = all_routes(g, s, dest)
    vals = np.array([r[p].sum() for p in routes])
    return min(p for p, v in zip(routes, vals, strict=True) if v >= vals.max() - 1e-12)


def enumerated(g, theta: np.ndarray, path: list[int], H: int | None) -> tuple[float, np.ndarray]:
    """``J_H`` and its gradient by enumeration: ``P_H(tau) ~ exp(r(tau))`` on the routes whose
    edges after the H-th are the best route from there (all routes when H is None)."""
    r = g.phi @ theta
    origin, dest = int(g.tails[path[0]]), int(g.heads[path[-1]])
    keep = [
        p
        for p in all_routes(g, origin, dest)
        if H is None or len(p) <= H or p[H:] == best_route(g, r, int(g.tails[p[H]]), dest)
    ]
    w = np.array([r[p].sum() for p in keep])
    logz = float(np.log(np.exp(w - w.max()).sum()) + w.max())
    feats = np.array([g.phi[p].sum(axis=0) for p in keep])  # (routes, d)
    return float(r[path].sum()) - logz, g.phi[path].sum(axis=0) - np.exp(w - logz) @ feats


@dataclass(frozen=True)
class RHIPHorizonExtremes(ScaledClaim):
    name: str = "rhip-horizon-extremes"
    statement: str = (
        "Receding-horizon inverse planning (Barnes et al. 2024, rhip: H soft backups from "
        "Dijkstra's values, H stochastic steps then the Dijkstra tail) on random grid DAGs "
        "(features 0.1 + U[0, 1), theta < 0): (i) J_H and its gradient equal the enumeration of "
        "every route (P_H ~ exp r on the routes whose edges after the H-th are the best route) "
        "to 1e-9 at H = 0 (the deterministic planner: r(tau) - max r), H = 1, 2 and H = None "
        "(MaxEnt IRL: r(tau) - log sum exp r); (ii) the gradient equals central finite "
        "differences (step 1e-6) to 1e-6; (iii) projected gradient ascent (300 steps, lr 0.5, "
        "from theta = -1) on the demonstrations (the best routes under a hidden theta* from 4 "
        "origins) recovers a reward whose best routes are the demonstrations, at H = 2 and "
        "H = None, where theta = -1 does not. Quick: 3x4 grids, 3 instances; full: 4x4, 8."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {"rows": 3, "cols": 4, "instances": 3, "d": 4},
            "full": {"rows": 4, "cols": 4, "instances": 8, "d": 4},
        }
    )

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        from theorylab.algorithms.inverse_rl.rhip import fit_rhip, rhip_objective

        rows, cols, n_inst, d = cfg["rows"], cfg["cols"], cfg["instances"], cfg["d"]
        err = {H: 0.0 for H in (0, 1, 2, None)}
        fd_err, matched, total, start_matched = 0.0, {2: 0, None: 0}, 0, 0
        for i in range(n_inst):
            g = grid_dag(rows, cols, d, seed * 1000 + i)
            rng = np.random.default_rng([seed, i])
            theta = -(0.2 + rng.random(d))
            routes = all_routes(g, 0, g.n - 1)
            demos = [routes[k] for k in rng.choice(len(routes), 3, replace=False)]
            for H in err:
                for p in demos:
                    J, grad = rhip_objective(g, theta, [np.array(p)], H)
                    J_e, grad_e = enumerated(g, theta, p, H)
                    err[H] = max(err[H], abs(J - J_e), float(np.abs(grad - grad_e).max()))
                arr = [np.array(p) for p in demos]
                _, grad = rhip_objective(g, theta, arr, H)
                for k in range(d):
                    e = 1e-6 * np.eye(d)[k]
                    fd = (rhip_objective(g, theta + e, arr, H)[0]
                          - rhip_objective(g, theta - e, arr, H)[0]) / 2e-6  # fmt: skip
                    fd_err = max(fd_err, abs(fd - grad[k]))
            theta_star = -(0.1 + 2 * rng.random(d))
            r_star = g.phi @ theta_star
            origins = (0, 1, cols, cols + 1)
            shown = [best_route(g, r_star, o, g.n - 1) for o in origins]
            total += len(shown)
            start_matched += sum(best_route(g, g.phi @ -np.ones(d), o, g.n - 1) == p
                                 for o, p in zip(origins, shown, strict=True))  # fmt: skip
            for H in matched:
                th = fit_rhip(g, [np.array(p) for p in shown], H, -np.ones(d), steps=300, lr=0.5)
                matched[H] += sum(best_route(g, g.phi @ th, o, g.n - 1) == p
                                  for o, p in zip(origins, shown, strict=True))  # fmt: skip
        names = {0: "H = 0 (deterministic planner)", 1: "H = 1", 2: "H = 2",
                 None: "H = None (MaxEnt IRL)"}  # fmt: skip
        for H, e in err.items():
            rep.checks.append(Check(f"{names[H]} equals route enumeration", e <= 1e-9,
                                    f"largest |J - J_enum|, |grad - grad_enum| {e:.2e} (<= 1e-9) "
                                    f"over {n_inst} graphs x 3 demonstrations",
                                    {"error": e}))  # fmt: skip
        rep.checks.append(Check("gradient equals finite differences", fd_err <= 1e-6,
                                f"largest |grad - central difference| {fd_err:.2e} (<= 1e-6)",
                                {"error": fd_err}))  # fmt: skip
        if plot:
            self._plot(g, theta, demos[0], plot)
        for H, m in matched.items():
            vacuous = start_matched == total
            rep.checks.append(Check(
                f"{names[H]}: the fitted reward's best routes are the demonstrations",
                m == total,
                f"{m} of {total} demonstrations are best routes after fitting (theta = -1: "
                f"{start_matched} of {total})",
                {"matched": m, "total": total, "start": start_matched},
                status="VACUOUS" if vacuous and m == total else None,
            ))  # fmt: skip

    @staticmethod
    def _plot(g, theta: np.ndarray, path: list[int], plot: str) -> None:
        """log P_H(demonstration) against H: RHIP's passes and the route enumeration."""
        from theorylab.algorithms.inverse_rl.rhip import longest_route, rhip_objective
        from theorylab.plotting import plot_lines

        Hs = np.arange(longest_route(g) + 1)
        curves = {
            "rhip (Dijkstra + H soft backups)": [
                rhip_objective(g, theta, [np.array(path)], int(H))[0] for H in Hs
            ],
            "enumeration of every route": [enumerated(g, theta, path, int(H))[0] for H in Hs],
        }
        ax = plot_lines(Hs, curves, xlabel="horizon H (0: deterministic planner; last: MaxEnt)",
                        ylabel="J_H = r(tau) - V^H(origin)",
                        title="RHIP objective of one demonstration")  # fmt: skip
        save_claim_figure(ax, plot)


register_validation(RHIPHorizonExtremes(), controls=("rhip-soft-tail",), papers=("000#55",))
