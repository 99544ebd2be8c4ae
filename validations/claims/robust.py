"""Claims of the robust-MDP family (seed-coverage family 4).

1. ``iwocs-static-maxmin`` -- Zouitine, Geist & Rachelson 2024 (seed row 002-004#D1), on
   finite sets of whole kernels around random discounted MDPs: (i) IWOCS (``iwocs`` through
   ``tl.run``) terminates within m worst-case searches; (ii) its policy's worst-case value over
   the full set equals the brute-force max-min over the A^S deterministic policies x the m
   kernels (to 1e-10); (iii) the static robust value is >= the dynamic one (robust VI over the
   set's rectangular hull), strictly on some non-rectangular sets, and equal (to 1e-9) on the
   (s, a)-rectangular product sets. Negative control: ``iwocs-adds-best-case-model`` (the
   worst-case search returns the best model for the policy), which stops IWOCS early.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.registry import register_validation


def _discounted(spec: str):
    from theorylab.mdps import make

    mdp = make(spec)
    return mdp.with_objective(gamma=mdp.gamma, horizon=None)


@dataclass(frozen=True)
class IWOCSStaticMaxmin(ScaledClaim):
    name: str = "iwocs-static-maxmin"
    statement: str = (
        "IWOCS (Zouitine, Geist & Rachelson 2024), exact tabular form: on a finite set of m "
        "kernels (the nominal and m - 1 mixtures (1 - 0.6) P + 0.6 Q, Q Dirichlet(1) rows) of "
        "random discounted MDPs (gamma = 0.9), IWOCS through tl.run terminates within m "
        "worst-case searches and its policy's worst-case value equals the brute-force max-min "
        "over deterministic policies x kernels to 1e-10; the static robust value is >= the "
        "dynamic (rectangular-hull robust VI) value on every set, strictly on some, and equal to "
        "1e-9 on (s, a)-rectangular product sets (2 rows per (s, a), 2^(S A) kernels). Quick: 12 "
        "MDPs S = 4, A = 2, m = 8, rectangular S = 3, A = 2 (64 kernels); full: 40 MDPs S = 5, "
        "A = 2, m = 12, rectangular S = 4, A = 2 (256 kernels)."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {"mdps": 12, "S": 4, "A": 2, "m": 8, "rect_S": 3},
            "full": {"mdps": 40, "S": 5, "A": 2, "m": 12, "rect_S": 4},
        }
    )
    spread: float = 0.6

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        import theorylab as tl
        from theorylab.algorithms.robust import finite_sets as F

        rounds_ok, gaps, static_minus_dynamic, rect_gaps, curves = True, [], [], [], {}
        rounds, reported = [], []
        for i in range(cfg["mdps"]):
            spec = f"random:S={cfg['S']},A={cfg['A']},gamma=0.9,seed={seed + i}"
            mdp = _discounted(spec)
            res = tl.run(
                "iwocs", spec, iterations=cfg["m"], models=cfg["m"], spread=self.spread,
                kernel_seed=seed + i,
            )  # fmt: skip
            models = F.perturbed_models(mdp, cfg["m"], self.spread, seed + i)
            maxmin, _ = F.brute_force_maxmin(mdp, models)  # independent: enumeration
            worst = F.static_values(mdp, models, np.asarray(res.policies[-1])[None])[0].min()
            n = int(res.objective.size)
            rounds.append(n)
            rounds_ok &= bool(res.config["terminated"]) and n <= cfg["m"]
            gaps.append(abs(float(worst) - maxmin))
            reported.append(abs(float(res.objective[-1]) - float(worst)))
            V_dyn, _ = F.dynamic_robust_vi(mdp, models)
            static_minus_dynamic.append(maxmin - float(V_dyn @ mdp.mu0))
            if i < 3:
                curves[f"MDP {i}: worst-case value of pi_k - max-min"] = (
                    np.abs(res.objective - maxmin) + 1e-16
                )
            rect_mdp = _discounted(
                f"random:S={cfg['rect_S']},A={cfg['A']},gamma=0.9,seed={seed + i}"
            )
            rect = F.rectangular_product(F.perturbed_models(rect_mdp, 2, self.spread, seed + i))
            static, _ = F.brute_force_maxmin(rect_mdp, rect)
            V_rect, _ = F.dynamic_robust_vi(rect_mdp, rect)
            rect_gaps.append(abs(static - float(V_rect @ rect_mdp.mu0)))
        smd = np.array(static_minus_dynamic)
        rep.checks.extend(
            [
                Check(
                    "IWOCS terminates within m worst-case searches",
                    rounds_ok,
                    f"searches per MDP {rounds} (m = {cfg['m']}); all terminated: {rounds_ok}",
                    {"max_rounds": max(rounds)},
                ),
                Check(
                    "IWOCS's worst-case value = brute-force max-min",
                    max(gaps) <= 1e-10,
                    f"max |min_i V^pi_IWOCS_{{P_i}} - max_pi min_i V^pi_{{P_i}}| = "
                    f"{max(gaps):.2e} over {cfg['mdps']} MDPs (tolerance 1e-10)",
                    {"max_gap": max(gaps)},
                ),
                Check(
                    "IWOCS's reported worst-case value is the independent one",
                    max(reported) <= 1e-10,
                    f"max |reported - min_i V^pi_{{P_i}}| = {max(reported):.2e} (tolerance 1e-10)",
                    {"max_reported_error": max(reported)},
                ),
                Check(
                    "static >= dynamic, strictly on some non-rectangular set",
                    bool(np.all(smd >= -1e-10) and np.max(smd) > 1e-3),
                    f"static - dynamic in [{smd.min():.3e}, {smd.max():.3e}] over "
                    f"{cfg['mdps']} sets",
                    {"min_static_minus_dynamic": float(smd.min())},
                ),
                Check(
                    "static = dynamic on (s, a)-rectangular sets",
                    max(rect_gaps) <= 1e-9,
                    f"max |static - dynamic| = {max(rect_gaps):.2e} over {cfg['mdps']} product "
                    f"sets of {2 ** (cfg['rect_S'] * cfg['A'])} kernels (tolerance 1e-9)",
                    {"max_rect_gap": max(rect_gaps)},
                ),
            ]
        )
        if plot:
            from theorylab.plotting import plot_policy_path

            ax = plot_policy_path(
                curves,
                ylabel="|worst-case value - brute-force max-min| (+1e-16)",
                title="IWOCS: worst-case value of each iterate against the max-min",
                logy=True,
            )
            save_claim_figure(ax, plot)


register_validation(
    IWOCSStaticMaxmin(), controls=("iwocs-adds-best-case-model",), papers=("002-004#D1",)
)
