r"""Dual-RL claims on data: ReCOIL's relaxed coverage against SMODICE, and f-DVL's value fixed
point against the exact behaviour-KL-regularised solution.

Each claim has a ``quick`` scale (seconds, run in CI by tests/test_validations.py) and a ``full``
scale, and a registered known-bug mutation that fails it (theorylab.validations.mutations:
``recoil-reference-without-expert``, ``f-dvl-unweighted-value-step``; tests/test_dual_imitation.py
runs both through the claims).

1. ``recoil-relaxed-coverage`` -- on seeded random MDPs (``random:S=6,A=3,gamma=0.9``) with expert
   data from pi* and other data from the uniform policy ("covered": d^S covers d^E) or from the
   adversarial policy that never plays an optimal action ("uncovered"):

   * population data (the exact occupancies, ``population_dataset``): ReCOIL's sub-optimality is
     <= 1e-7 in both settings; SMODICE's is <= 1e-4 when covered (its discriminator clip 1e-6
     costs about 2e-6) and, uncovered, at least the *coverage floor*
     ``V* - max_{pi: supp pi(.|s) in supp pi^S(.|s)} V^pi`` (computed exactly by value iteration
     on the restricted action sets; every policy whose occupancy lives on d^S pays it), which is
     > 1e-3 on every instance (so the check is not vacuous);
   * finite data, uncovered (N other transitions, N / 4 expert transitions, through ``tl.run``):
     ReCOIL's mean sub-optimality falls with N (log-log slope <= -0.3; measured about -0.5, the
     N^(-1/2) estimation error of d_hat^E: the empirical d_hat^E is not exactly flow-feasible
     under P_hat, so the mixture optimum spreads a little mass onto the other data's actions) and
     at the largest N is below a tenth of the floor, while SMODICE stays at or above the floor at
     every N.

   Mutation: ReCOIL's reference mixture without the expert term (``m = d^S``): the mixture
   matching then pulls d to d^S and the policy to the other data's behaviour.
2. ``f-dvl-soft-fixed-point`` -- on seeded random MDPs with data from ``0.5 pi* + 0.5 uniform``,
   the value fixed point of tabular f-DVL with the reverse-KL (Gumbel) loss at temperature lam,
   ``V(mu0)``, equals the optimum of the behaviour-KL-regularised occupancy problem on the same
   empirical model, solved independently by cvxpy
   (:mod:`theorylab.algorithms.dual.behaviour_kl`), to ``1e-6 (1 + |V|)``; the code's clip
   ``max_clip = 7`` is inactive at the fixed point (so the closed-form V-step is the loss's
   minimiser). This is the claim f-DVL can carry: its *value*; its policy (greedy among the
   data's actions, not the authors' AWR actor) is not claimed. Mutation: the V-step's data
   weights dropped (every action with data weighted equally).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from theorylab.validations.claim import Check, Report
from theorylab.validations.claim import finished_report as _report
from theorylab.validations.claims.dual import DUAL_RL_PAPERS
from theorylab.validations.registry import register_validation

MDP_SPEC = "random:S=6,A=3,gamma=0.9,seed={seed}"


def discounted_instance(seed: int):
    from theorylab.mdps import make

    mdp = make(MDP_SPEC.format(seed=seed))
    return mdp.with_objective(gamma=mdp.gamma, horizon=None)


def restricted_optimum(mdp, allowed: np.ndarray, tol: float = 1e-12) -> float:
    """``max V^pi(mu0)`` over policies playing only ``allowed (S, A)`` actions (value
    iteration to ``tol``; states with no allowed action keep every action)."""
    allowed = allowed | ~allowed.any(axis=1, keepdims=True)
    r, g = mdp.reward(0), mdp.gamma
    V = np.zeros(mdp.S)
    while True:
        Q = np.where(allowed, r + g * mdp.expected_next(V, 0), -np.inf)
        V_new = Q.max(axis=1)
        if np.max(np.abs(V_new - V)) <= tol * (1 - g):
            return float(mdp.mu0 @ V_new)
        V = V_new


# --------------------------------------------------------------------------- 1. ReCOIL
@dataclass(frozen=True)
class RecoilRelaxedCoverage:
    name: str = "recoil-relaxed-coverage"
    statement: str = (
        "On seeded random MDPs (S = 6, A = 3, gamma = 0.9), expert data from pi* plus other data "
        "from the uniform policy (covered) or from a policy that never plays an optimal action "
        "(uncovered): with population data ReCOIL's sub-optimality is <= 1e-7 in both settings, "
        "SMODICE's is <= 1e-4 when covered and at least the coverage floor V* - (best value "
        "using only the other data's actions) > 1e-3 when uncovered; with N other and N/4 "
        "expert transitions (uncovered) ReCOIL's mean sub-optimality falls with N (log-log "
        "slope <= -0.3) to below a tenth of the floor at the largest N while SMODICE stays at "
        "or above the floor. Quick: 2 MDPs, N in {1e3, 8e3, 6.4e4}, 4 seeds; full: 20 MDPs, "
        "N in 1e3..2.56e5 (5 sizes), 20 seeds on 3 of them."
    )
    scales: dict[str, dict] = field(
        default_factory=lambda: {
            "quick": {"mdps": 2, "sizes": [1000, 8000, 64000], "seeds": 4, "curves": 1},
            "full": {
                "mdps": 20,
                "sizes": [1000, 4000, 16000, 64000, 256000],
                "seeds": 20,
                "curves": 3,
            },
        }
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        import theorylab as tl
        from theorylab.algorithms.dual.recoil import recoil
        from theorylab.algorithms.dual.smodice import smodice
        from theorylab.algorithms.offline.coverage import optimal_solution
        from theorylab.algorithms.offline.dataset import population_dataset
        from theorylab.algorithms.offline.scoring import policy_values
        from theorylab.stats import loglog_slope

        t0 = time.perf_counter()
        cfg = self.scales[scale]
        recoil_sub, smodice_cov, smodice_excess, floors = [], [], [], {}
        for i in range(cfg["mdps"]):
            mdp = discounted_instance(seed + i)
            v_star = optimal_solution(mdp).value
            expert = population_dataset(mdp, coverage=1.0)
            for other in ("uniform", "adversarial"):
                data = population_dataset(mdp, coverage=0.0, other=other)
                sub_r = v_star - policy_values(mdp, recoil(expert, data).policy)[0]
                sub_s = v_star - policy_values(mdp, smodice(expert, data).policy)[0]
                recoil_sub.append(float(sub_r))
                if other == "uniform":
                    smodice_cov.append(float(sub_s))
                else:
                    floor = v_star - restricted_optimum(mdp, data.behaviour > 0)
                    floors[i] = float(floor)
                    smodice_excess.append(float(sub_s - floor))
        slopes, last_ratio, smodice_curve_excess = [], [], []
        sizes = cfg["sizes"]
        for i in range(cfg["curves"]):
            spec = MDP_SPEC.format(seed=seed + i)
            budget = {
                "dataset_size": sizes,
                "expert_size": [n // 4 for n in sizes],
                "other": "adversarial",
                "seeds": cfg["seeds"],
                "seed": seed,
                "progress": False,
            }
            rec = tl.run("recoil", spec, **budget)
            smo = tl.run("smodice", spec, **budget)
            fit = loglog_slope(sizes, np.maximum(rec.suboptimality, 1e-300), fit_range=(0.0, 1.0))
            slopes.append(float(fit.slope))
            last_ratio.append(float(rec.suboptimality[:, -1].mean() / floors[i]))
            smodice_curve_excess.append(float((smo.suboptimality - floors[i]).min()))
        fl = np.array(list(floors.values()))
        checks = [
            Check(
                "ReCOIL recovers the expert (population, covered and uncovered)",
                max(recoil_sub) <= 1e-7,
                f"max sub-optimality {max(recoil_sub):.2e} over {len(recoil_sub)} solves (<= 1e-7)",
                {"suboptimality": recoil_sub},
            ),
            Check(
                "SMODICE recovers it when d^S covers d^E",
                max(smodice_cov) <= 1e-4,
                f"max sub-optimality {max(smodice_cov):.2e} (<= 1e-4)",
                {"suboptimality": smodice_cov},
            ),
            Check(
                "SMODICE pays the coverage floor when uncovered",
                min(smodice_excess) >= -1e-9 and fl.min() > 1e-3,
                f"min (SMODICE sub-optimality - floor) = {min(smodice_excess):.2e} (>= -1e-9); "
                f"floors {fl.min():.3f}..{fl.max():.3f} (> 1e-3)",
                {"excess": smodice_excess, "floors": floors},
            ),
            Check(
                "ReCOIL's finite-data sub-optimality falls with N (uncovered)",
                max(slopes) <= -0.3
                and max(last_ratio) <= 0.1
                and min(smodice_curve_excess) >= -1e-9,
                f"log-log slopes {min(slopes):.3f}..{max(slopes):.3f} (<= -0.3); at N = "
                f"{sizes[-1]} mean sub-optimality / floor <= {max(last_ratio):.4f} (<= 0.1); "
                f"SMODICE minus floor >= {min(smodice_curve_excess):.3f} at every N",
                {"slopes": slopes, "last_ratio": last_ratio},
            ),
        ]
        config = {**cfg, "seed": seed, "mdp": MDP_SPEC}
        return _report(self.name, self.statement, scale, checks, t0, config)


# --------------------------------------------------------------------------- 2. f-DVL
def f_dvl_values(dataset, lam: float):
    """The claim's algorithm: tabular f-DVL (reverse-KL) -> ``(V(mu0) (B,), max z (B,))``."""
    from theorylab.algorithms.dual.f_dvl import f_dvl

    res = f_dvl(dataset, loss="reverse-kl", loss_temp=lam)
    return res.value_estimate, res.info["max_scaled_advantage"]


@dataclass(frozen=True)
class FDVLSoftFixedPoint:
    name: str = "f-dvl-soft-fixed-point"
    statement: str = (
        "On seeded random MDPs (S = 6, A = 3, gamma = 0.9) with N = 2000 transitions of 0.5 pi* "
        "+ 0.5 uniform, tabular f-DVL's reverse-KL value fixed point V(mu0) at temperature lam "
        "equals the optimum of the behaviour-KL-regularised occupancy problem max_d E_d[r] - lam "
        "E_d KL(pi_d || pi_b) / (1 - gamma) on the same empirical model (cvxpy, exponential "
        "cone) to 1e-6 (1 + |V|), with the code's max_clip inactive. Quick: 2 MDPs x lam in "
        "{0.1, 1} x 2 seeds; full: 20 MDPs x lam in {0.03, 0.1, 0.3, 1} x 5 seeds."
    )
    scales: dict[str, dict] = field(
        default_factory=lambda: {
            "quick": {"mdps": 2, "lams": [0.1, 1.0], "seeds": 2},
            "full": {"mdps": 20, "lams": [0.03, 0.1, 0.3, 1.0], "seeds": 5},
        }
    )
    values: Callable = f_dvl_values

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        from theorylab.algorithms.dual.behaviour_kl import solve_behaviour_kl
        from theorylab.algorithms.dual.empirical_model import empirical_models
        from theorylab.algorithms.dual.surrogate_losses import MAX_CLIP
        from theorylab.algorithms.offline.dataset import make_dataset

        t0 = time.perf_counter()
        cfg = self.scales[scale]
        worst, worst_z, worst_flow, n = 0.0, -np.inf, 0.0, 0
        for i in range(cfg["mdps"]):
            mdp = discounted_instance(seed + 100 + i)
            data = make_dataset(mdp, 2000, coverage=0.5, seeds=cfg["seeds"], seed=seed + i)
            models = empirical_models(data, "f-dvl-soft-fixed-point")
            for lam in cfg["lams"]:
                values, z = self.values(data, lam)
                worst_z = max(worst_z, float(np.max(z)))
                for b, (emp, d_hat) in enumerate(models):
                    seen = d_hat.sum(axis=1, keepdims=True)
                    pi_b = np.where(seen > 0, d_hat / np.where(seen > 0, seen, 1.0), 1 / emp.A)
                    ref = solve_behaviour_kl(emp, pi_b, lam)
                    err = abs(values[b] - ref["value"]) / (1.0 + abs(ref["value"]))
                    worst = max(worst, float(err))
                    worst_flow = max(worst_flow, ref["flow_residual"])
                    n += 1
        checks = [
            Check(
                "f-DVL fixed point = behaviour-KL optimum",
                worst <= 1e-6,
                f"max |V_fdvl - V_ref| / (1 + |V_ref|) = {worst:.2e} over {n} fits (<= 1e-6; "
                f"cvxpy flow residual <= {worst_flow:.1e})",
                {"max_relative_error": worst, "max_flow_residual": worst_flow},
            ),
            Check(
                "max_clip inactive",
                worst_z <= MAX_CLIP,
                f"max (Q - V) / lam on data pairs = {worst_z:.3f} (<= {MAX_CLIP:g})",
                {"max_scaled_advantage": worst_z},
            ),
        ]
        config = {**cfg, "seed": seed, "N": 2000, "coverage": 0.5}
        return _report(self.name, self.statement, scale, checks, t0, config)


register_validation(
    RecoilRelaxedCoverage(), controls=("recoil-reference-without-expert",), papers=DUAL_RL_PAPERS
)
register_validation(
    FDVLSoftFixedPoint(), controls=("f-dvl-unweighted-value-step",), papers=DUAL_RL_PAPERS
)
