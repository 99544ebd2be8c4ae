"""Claims of goal-conditioned RL by quasimetric learning.

1. ``qrl-recovers-shortest-paths`` -- Wang, Torralba, Isola & Zhang 2023 (QRL; seed rows 000#65,
   001#73) on random directed graphs (``digraph``: a one-way ring plus random one-way shortcuts,
   unit step cost), a walled gridworld and a discretised MountainCar (``mountaincar-grid``, pairs
   that cannot reach each other at the cap): QRL's objective solved exactly (``qrl``, through
   ``tl.run``) returns (i) the shortest-path distances, checked against Dijkstra on the edge list
   (``scipy.sparse.csgraph.shortest_path``, the independent answer: no LP, no library planner);
   (ii) a quasimetric (triangle inequality over all triples); (iii) the graph's asymmetry
   (max |d(s, g) - d(g, s)| equal to the true one, >= 1); (iv) a greedy goal-reaching policy
   ``argmin_a c + d(s', g)`` whose cost on the true model equals the shortest path for every
   (s, g). (v) Stochastic dynamics, what QRL does not claim: on ``digraph:slip=0.3`` the LP
   returns the support graph's shortest path (Dijkstra on the support edges), strictly below the
   optimal expected cost-to-go (by value iteration) -- optimistic. Negative controls, each a
   registered mutation of the LP (``validations/goal_reaching_mutations.py``):
   ``qrl-symmetric`` (a metric: d(s, g) = d(g, s) imposed), ``qrl-no-triangle`` (the triangle
   constraints dropped) and ``qrl-no-spread`` (the max-spread objective dropped); each FAILs (i).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.registry import register_validation

QRL_PAPERS = ("000#65", "001#73")


def dijkstra_distances(P: np.ndarray, step_cost: float, cap: float) -> np.ndarray:
    """``(S, S)`` shortest paths over the support edges of P ``(S, A, S)`` (scipy's Dijkstra),
    unreachable goals at ``cap``."""
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import shortest_path

    support = (P > 0).any(axis=1)  # (S, S): an edge s -> s' under some action
    np.fill_diagonal(support, False)
    W = csr_array(np.where(support, step_cost, 0.0))
    D = shortest_path(W, method="D", directed=True)
    return np.minimum(D, cap)


def triangle_gap(d: np.ndarray) -> float:
    """``max_{s, w, g} d(s, g) - d(s, w) - d(w, g)`` for ``(S, S)`` d (<= 0: a quasimetric)."""
    return float(np.max(d[:, None, :] - d[:, :, None] - d[None, :, :]))


@dataclass(frozen=True)
class QRLRecoversShortestPaths(ScaledClaim):
    name: str = "qrl-recovers-shortest-paths"
    statement: str = (
        "QRL (Wang, Torralba, Isola & Zhang 2023) solved exactly -- max sum_(s, g) d(s, g) over "
        "quasimetrics d <= cap with d(s, s') <= 1 on every observed transition (qrl, an LP) -- "
        "on deterministic random directed graphs (digraph: a one-way ring plus random one-way "
        "shortcuts), a walled gridworld and a discretised MountainCar (mountaincar-grid: "
        "deterministic, with pairs that cannot reach each other), all transitions observed: "
        "(i) d equals the "
        "shortest-path distance by Dijkstra (unreachable goals at cap = S) to 1e-9; (ii) d "
        "satisfies the triangle inequality over all triples (violation <= 1e-9); (iii) d keeps "
        "the graph's asymmetry (max |d(s, g) - d(g, s)| equals the true one, >= 1); (iv) the "
        "greedy policy argmin_a [1 + d(s', g)] reaches every goal at the optimal cost (gap <= "
        "1e-9). (v) Stochastic dynamics (digraph slip 0.3): the LP returns the support graph's "
        "shortest path, below the optimal expected cost-to-go for every reachable pair s != g "
        "by at least 0.1 (optimistic). Quick: 4 graphs S = 10, A = 2, a 3x3 gridworld and a 6 x 6 "
        "MountainCar grid; full: 8 graphs S = 24, A = 3, a 5x5 gridworld with 4 walls and a "
        "9 x 4 MountainCar grid."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {
                "S": 10,
                "A": 2,
                "graphs": 4,
                "grid": "rows=3,cols=3,walls=4",
                "car": "nx=6,nv=6,repeat=10",
            },
            "full": {
                "S": 24,
                "A": 3,
                "graphs": 8,
                "grid": "rows=5,cols=5,walls=6|7|17|18",
                "car": "nx=9,nv=4,repeat=12",
            },
        }
    )
    slip: float = 0.3

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        import theorylab as tl
        from theorylab.algorithms.planning.goal_distances import goal_cost_to_go
        from theorylab.mdps import make

        specs = [f"digraph:S={cfg['S']},A={cfg['A']},seed={seed + i}" for i in range(cfg["graphs"])]
        specs += [f"gridworld:{cfg['grid']}", f"mountaincar-grid:{cfg['car']}"]
        err = tri = gap = 0.0
        asym_ok = True
        asym_text = []
        first = None
        for spec in specs:
            mdp = make(spec)
            res = tl.run("qrl", mdp)
            d = res.distances[0]  # (S, S)
            truth = dijkstra_distances(mdp.dense_P(), 1.0, res.cap)
            err = max(err, float(np.abs(d - truth).max()))
            tri = max(tri, triangle_gap(d))
            gap = max(gap, float(res.policy_gap.max()))
            a_d, a_t = float(np.abs(d - d.T).max()), float(np.abs(truth - truth.T).max())
            asym_ok &= abs(a_d - a_t) <= 1e-9 and a_t >= 1.0
            asym_text.append(f"{a_d:g}/{a_t:g}")
            if first is None:
                first = (mdp, truth, d)
        noisy = make(f"digraph:S={cfg['S']},A={cfg['A']},seed={seed},slip={self.slip}")
        P = noisy.dense_P()
        d_noisy = tl.run("qrl", noisy).distances[0]
        support_sp = dijkstra_distances(P, 1.0, float(noisy.S))
        expected = goal_cost_to_go(P, np.ones((noisy.S, noisy.A)), float(noisy.S))
        off = ~np.eye(noisy.S, dtype=bool)
        support_err = float(np.abs(d_noisy - support_sp).max())
        margin = float((expected - d_noisy)[off].min())
        checks = [
            Check(
                "d = shortest-path distance (Dijkstra)",
                err <= 1e-9,
                f"max |d - d*| = {err:.2e} over {len(specs)} graphs (tolerance 1e-9)",
                {"distance_error": err},
            ),
            Check(
                "triangle inequality",
                tri <= 1e-9,
                f"max d(s, g) - d(s, w) - d(w, g) = {tri:.2e} (tolerance 1e-9)",
                {"triangle_violation": tri},
            ),
            Check(
                "asymmetry captured",
                asym_ok,
                f"max |d(s, g) - d(g, s)| learned/true per graph: {', '.join(asym_text)}",
                {},
            ),
            Check(
                "greedy policy reaches every goal optimally",
                gap <= 1e-9,
                f"max over graphs and (s, g) of cost(greedy) - d* = {gap:.2e} (tolerance 1e-9)",
                {"policy_gap": gap},
            ),
            Check(
                f"stochastic (slip {self.slip:g}): optimistic support distance",
                support_err <= 1e-9 and margin >= 0.1,
                f"max |d - support shortest path| = {support_err:.2e}; min over s != g of "
                f"(optimal expected cost-to-go - d) = {margin:.3f} (needs >= 0.1)",
                {"support_error": support_err, "optimism_margin": margin},
            ),
        ]
        if plot:
            from theorylab.plotting import plot_goal_distances

            mdp, truth, d = first
            emb = tl.run("qrl-embedding", mdp).distances[0]
            ax = plot_goal_distances(
                truth,
                {"qrl (exact LP)": d, "qrl-embedding (Lagrangian relaxation)": emb},
                title=f"QRL distances against Dijkstra on {mdp.name}",
            )
            save_claim_figure(ax, plot)
        rep.checks.extend(checks)


register_validation(
    QRLRecoversShortestPaths(),
    controls=("qrl-symmetric", "qrl-no-triangle", "qrl-no-spread"),
    papers=QRL_PAPERS,
)
