"""H2O on a tempting simulator, tabular (issue 31, tier B, 002-004#C5).

``h2o-dynamics-gap-bridge`` runs ``h2o`` (``algorithms/offline/h2o.py``, per-action gap model) on
the *bridge*: a road of L = 6 states to an absorbing goal (reward 1 per step there), taken by
action 1 (advance w.p. 0.9, stay w.p. 0.1), and a shortcut, action 0, that the simulator sends to
the goal and the real MDP to an absorbing trap (reward 0); gamma = 0.9, start at the road's first
state. The real data covers only the road's first 4 states (both actions) and the goal and trap;
the simulator is exact except for the shortcut. It checks, against answers computed here:

1. At beta = 0 without the gap and without simulated data, H2O's fixed point is ``naive-vi`` on
   the real data (values to 1e-6, the two stopping rules).
2. (i) With population data the simulator term of the penalty is 0 on every road pair (where
   the two dynamics agree; to 1e-12, the round-off of the weighted counts) and positive on
   every shortcut pair.
3. (ii) H2O's exact real value beats planning in the simulator and naive real+sim mixing (the gap
   ignored): paired 95% lower bounds of both differences above 0. The per-pair gap model (the
   lead's draft) is reported beside it.
4. (iii) As real data grows to full coverage, H2O approaches offline-only: the mean
   |V(H2O) - V(offline-only)| at the largest N is at most 1e-3.

The control ``h2o-gap-ignored`` (u = 0 and ratio weights 1: naive mixing with H2O's beta) fails 3.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from theorylab.validations.claim import Check, Report, finished_report
from theorylab.validations.registry import register_validation

ROAD = 6
GAMMA = 0.9


def bridge(simulator: bool, L: int = ROAD, gamma: float = GAMMA):
    """The bridge MDP (module docstring): states 0..L-1 the road, L the goal, L+1 the trap."""
    from theorylab.mdps.tabular import TabularMDP

    S, goal, trap = L + 2, L, L + 1
    P = np.zeros((S, 2, S))  # (S, A, S)
    R = np.zeros((S, 2))
    for s in range(L):
        P[s, 1, s + 1 if s + 1 < L else goal] = 0.9  # road
        P[s, 1, s] = 0.1
        P[s, 0, goal if simulator else trap] = 1.0  # shortcut
    P[goal, :, goal] = P[trap, :, trap] = 1.0
    R[goal, :] = 1.0
    return TabularMDP(P, R, gamma=gamma, name="bridge-sim" if simulator else "bridge")


def road_coverage(k: int, L: int = ROAD) -> np.ndarray:
    """The real data's distribution ``mu (S, A)``: road states 0..k-1, the goal and the trap."""
    mu = np.zeros((L + 2, 2))
    mu[:k] = 1.0
    mu[L:] = 0.5
    return mu / mu.sum()


def _ci(x: np.ndarray) -> tuple[float, float]:
    return float(x.mean()), float(1.96 * x.std(ddof=1) / np.sqrt(x.size))


@dataclass
class H2OBridge:
    name: str = "h2o-dynamics-gap-bridge"
    statement: str = (
        "H2O (Niu et al. 2022), tabular fixed point with a per-action dynamics-gap model, on a "
        "bridge whose simulator sends a shortcut to the goal that really ends in a trap: at "
        "beta = 0 without the simulator it is naive VI; with population data the simulator "
        "penalty is exactly 0 where the dynamics agree; its real value beats planning in the "
        "simulator and naive real+sim mixing (95% lower bounds > 0); with full real coverage it "
        "approaches offline-only (mean gap <= 1e-3)"
    )
    scales: dict[str, dict] = field(
        default_factory=lambda: {
            "quick": {"seeds": 100, "covered": 4, "samples": 200, "growing": [100, 1000, 10000]},
            "full": {
                "seeds": 1000,
                "covered": 4,
                "samples": 200,
                "growing": [100, 1000, 10000],
            },
        }  # fmt: skip
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        from theorylab.algorithms.offline.baselines import naive_vi
        from theorylab.algorithms.offline.coverage import optimal_solution
        from theorylab.algorithms.offline.dataset import make_dataset, population_dataset
        from theorylab.algorithms.offline.h2o import h2o
        from theorylab.algorithms.offline.scoring import policy_values

        t0 = time.perf_counter()
        cfg = self.scales[scale]
        real, sim = bridge(False), bridge(True)
        B = cfg["seeds"]
        checks: list[Check] = []

        def draw(k, n, s):
            return make_dataset(real, n, data_distribution=road_coverage(k), kind="samples",
                                seeds=B, seed=s)  # fmt: skip

        # 1: the real-data-only endpoint
        ds = draw(cfg["covered"], cfg["samples"], seed)
        off = naive_vi(ds)
        base = h2o(ds, simulator=sim, beta=0.0, sim_weight=0.0, dynamics_aware=False)
        err = float(np.abs(base.V - off.V).max())
        checks.append(Check(
            "beta = 0, no simulated data: naive VI", err <= 1e-6,
            f"max |V_H2O - V_naive| = {err:.1e} (<= 1e-6)", {"max_error": err}))  # fmt: skip

        # 2: population data -- the penalty vanishes exactly where the dynamics agree
        pop = population_dataset(real, behaviour=np.full((real.S, 2), 0.5))
        pen = h2o(pop, simulator=sim).info["sim_penalty"][0]  # (S, A)
        road_pen = float(np.abs(pen[:ROAD, 1]).max())
        short_pen = float(pen[:ROAD, 0].min())
        ok = road_pen <= 1e-12 and short_pen > 0.0
        checks.append(Check(
            "(i) population data: zero penalty where the dynamics agree", ok,
            f"max simulator penalty on road pairs {road_pen:.1e} (<= 1e-12, round-off of the "
            "weighted counts); min on shortcut pairs "
            f"{short_pen:.3f} (> 0)", {"road": road_pen, "shortcut": short_pen}))  # fmt: skip

        # 3: H2O vs the simulator and naive mixing on partial real data
        v = {
            "H2O": policy_values(real, h2o(ds, simulator=sim).policy),
            "H2O, per-pair gap": policy_values(
                real, h2o(ds, simulator=sim, gap_model="pair").policy
            ),
            "naive mixing": policy_values(real, h2o(ds, simulator=sim, beta=0.0,
                                                    dynamics_aware=False).policy),
            "offline only": policy_values(real, off.policy),
        }  # fmt: skip
        sim_pol = np.asarray(optimal_solution(sim).policy)[None]  # (1, S)
        v["simulator only"] = np.repeat(policy_values(real, sim_pol), B)
        d_sim, d_mix = _ci(v["H2O"] - v["simulator only"]), _ci(v["H2O"] - v["naive mixing"])
        ok = d_sim[0] - d_sim[1] > 0 and d_mix[0] - d_mix[1] > 0
        v_star = optimal_solution(real).value
        checks.append(Check(
            "(ii) H2O beats the simulator and naive mixing", ok,
            "exact real values: " + ", ".join(f"{k} {x.mean():.3f}" for k, x in v.items())
            + f" (V* = {v_star:.3f}); H2O - simulator {d_sim[0]:.3f} (95% lower "
            f"{d_sim[0] - d_sim[1]:.3f}), H2O - mixing {d_mix[0]:.3f} (95% lower "
            f"{d_mix[0] - d_mix[1]:.3f}), both > 0",
            {k: float(x.mean()) for k, x in v.items()}))  # fmt: skip

        # 4: growing real data with full coverage -> offline-only
        Ns = list(cfg["growing"])
        gaps = []
        for j, n in enumerate(Ns):
            full = draw(ROAD, n, seed + 1 + j)
            g = np.abs(policy_values(real, h2o(full, simulator=sim).policy)
                       - policy_values(real, naive_vi(full).policy))  # fmt: skip
            gaps.append(float(g.mean()))
        ok = gaps[-1] <= 1e-3
        checks.append(Check(
            "(iii) with growing real data H2O approaches offline-only", ok,
            "mean |V(H2O) - V(offline only)|: "
            + ", ".join(f"N={n}: {x:.4f}" for n, x in zip(Ns, gaps, strict=True))
            + " (last <= 1e-3)", {"gaps": gaps}))  # fmt: skip

        if plot:
            from theorylab.plotting import plot_lines

            plot_lines(np.asarray(Ns, dtype=float), {"mean |V(H2O) - V(offline only)|":
                                                     np.asarray(gaps) + 1e-6},
                       xlabel="real samples N (full coverage)", ylabel="value gap (+1e-6)",
                       title="H2O approaches offline-only as real data grows", logx=True,
                       logy=True, path=plot)  # fmt: skip
        config = {**cfg, "road": ROAD, "gamma": GAMMA, "seed": seed}
        return finished_report(self.name, self.statement, scale, checks, t0, config, figure=plot)


register_validation(
    H2OBridge(),
    controls=("h2o-gap-ignored",),
    targets={"offline": ("h2o",)},
    papers=("002-004#C5",),
)
