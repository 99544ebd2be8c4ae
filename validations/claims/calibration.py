"""Claim on RLCR (seed row 002-004#B6): the correctness + Brier reward is proper and its exact
policy-gradient optimum is accurate and calibrated; card docs/algorithms/rlcr.md; the control
``rlcr-brier-dropped`` (the binary reward) is in validations/alignment_mutations.py."""

from __future__ import annotations

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.registry import register_validation


class RLCRCalibration(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.policy_optimization import rlcr
        from theorylab.experiment import run
        from theorylab.mdps import make
        from theorylab.mdps.calibration_bandit import expected_calibration_error

        # (i) properness, written out: argmax_q E[1[c] - (q - 1[c])^2] over a fine grid is p
        ps = np.linspace(0.0, 1.0, 101)
        qs = np.linspace(0.0, 1.0, 2001)
        val = ps[:, None] - ps[:, None] * (1 - qs[None]) ** 2 - (1 - ps[:, None]) * qs[None] ** 2
        qerr = float(np.abs(qs[val.argmax(1)] - ps).max())
        lib = rlcr.brier_reward(ps[:, None], qs[None])
        rep.checks.append(
            Check(
                "brier-reward-is-proper",
                qerr <= 1e-9 and float(np.abs(lib - val).max()) < 1e-14,
                f"for 101 correctness probabilities p, the confidence maximising the expected "
                f"reward over a 2001-point grid is p to {qerr:.1e}; the library's expected reward "
                f"equals the formula written out",
            )
        )
        accs, eces, gaps, bounds = [], [], [], []
        for s in cfg["instances"]:
            spec = f"calibration-bandit:P={cfg['P']},A={cfg['A']},M={cfg['M']},seed={s}"
            inst = make(spec)
            res = run("rlcr-pg", spec, iterations=cfg["iterations"], step=cfg["step"])
            pi = np.exp(res.policies[-1])  # (P, A, M)
            best = inst.p.max(1)  # (P,) enumerated: the most likely correct answer
            qbest = inst.levels[np.abs(inst.levels[None] - best[:, None]).argmin(1)]
            accs.append(float(res.objective[-1] - best.mean()))
            eces.append(expected_calibration_error(inst, pi))
            gaps.append(float(res.target_gap[-1]))
            bounds.append(float(np.abs(qbest - best).mean()))  # ECE of the optimum itself
        accs, eces = np.array(accs), np.array(eces)
        rep.checks.append(
            Check(
                "accurate-and-calibrated",
                float(np.abs(accs).max()) < cfg["tol"]
                and bool(np.all(eces <= np.array(bounds) + cfg["tol"]))
                and max(gaps) < cfg["gap"],
                f"rlcr-pg after {cfg['iterations']} exact steps on {len(cfg['instances'])} "
                f"instances (P={cfg['P']}, A={cfg['A']}, M={cfg['M']}): accuracy minus the best "
                f"answer's {np.round(accs, 5).tolist()} (|.| < {cfg['tol']}); ECE "
                f"{np.round(eces, 4).tolist()} <= the grid's own {np.round(bounds, 4).tolist()} + "
                f"{cfg['tol']}; -log pi(enumerated optimum) {max(gaps):.1e} < {cfg['gap']}",
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            ax = plot_regret(
                {"RLCR: -log pi(optimum)": res.target_gap[None, 1:]},
                x=np.arange(1, cfg["iterations"] + 1), xlabel="iteration",
                ylabel="-log pi(enumerated optimum)", title=f"{self.name} [{rep.scale}]",
            )  # fmt: skip
            ax.set_xscale("log")
            ax.set_yscale("log")
            save_claim_figure(ax, plot)


register_validation(
    RLCRCalibration(
        name="rlcr-calibration-reward",
        statement=(
            "The reward 1[correct] - (q - 1[correct])^2 is proper (the expected reward is "
            "maximised by reporting q = P(correct)), and exact policy gradient on it over (answer, "
            "confidence) converges to the enumerated optimum: the most likely correct answer "
            "(accuracy not traded) with a calibrated confidence (ECE at the grid's own floor)"
        ),
        scales={
            "quick": {
                "P": 4,
                "A": 3,
                "M": 11,
                "instances": [0, 1],
                "iterations": 2000,
                "step": 5.0,
                "tol": 0.005,
                "gap": 0.01,
            },
            "full": {
                "P": 16,
                "A": 4,
                "M": 21,
                "instances": [0, 1, 2, 3, 4],
                "iterations": 6000,
                "step": 5.0,
                "tol": 0.005,
                "gap": 0.01,
            },
        },  # fmt: skip
    ),
    controls=("rlcr-brier-dropped",),
    papers=("002-004#B6",),
)
