"""Claim on Contrastive Preference Learning (seed row 002-004#E10, issue 28 tier B): the population
CPL minimiser on off-policy segments is the soft-optimal policy under regret preferences, and
a biased policy under reward-sum preferences. Card docs/algorithms/cpl.md; the control
``cpl-reward-sum-preferences`` is in validations/cpl_mutations.py."""

from __future__ import annotations

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.registry import register_validation


class CPLConsistency(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from scipy.special import softmax

        from theorylab.algorithms.planning.soft_value_iteration import soft_value_iteration
        from theorylab.algorithms.preference import cpl
        from theorylab.experiment import run
        from theorylab.mdps import make
        from theorylab.runners.problems import discounted_problem, resolve_mdp

        kls, floors, myopic, bias, curves = [], [], [], [], {}
        for i in range(cfg["mdps"]):
            spec = f"random:S={cfg['S']},A={cfg['A']},gamma={cfg['gamma']},seed={seed + 7 + i}"
            mdp = discounted_problem(resolve_mdp(make(spec)), "cpl")
            for alpha in cfg["alphas"]:
                for L in cfg["lengths"]:
                    pi, _, val, floor = cpl.fit_cpl(mdp, alpha, L)
                    star = soft_value_iteration(mdp, alpha).policy  # independent: soft VI
                    kls.append(float((pi * (np.log(pi) - np.log(star))).sum(1).max()))
                    floors.append(abs(val - floor))
                    # reward-sum preferences: no policy matches them across states (alpha log pi
                    # = r + c would need equal log-partitions); the minimiser is biased
                    pr, _, _, _ = cpl.fit_cpl(mdp, alpha, L, preferences="reward")
                    closed = softmax(np.asarray(mdp.reward(0)) / alpha, axis=1)
                    myopic.append(float(np.abs(pr - closed).max()))
                    bias.append(float((pr * (np.log(pr) - np.log(star))).sum(1).max()))
            res = run("cpl", spec, iterations=cfg["iterations"], alpha=cfg["alphas"][0])
            curves[spec] = res.target_gap
        rep.checks.append(
            Check(
                "cpl-minimiser-is-the-soft-optimum",
                max(kls) < cfg["tol"] and max(floors) < cfg["tol"],
                f"{len(kls)} fits ({cfg['mdps']} random MDPs, gamma {cfg['gamma']}, alpha "
                f"{cfg['alphas']}, segment lengths {cfg['lengths']}; off-policy uniform "
                f"segments): max_s KL(pi_CPL || pi*) <= {max(kls):.1e} (pi* by soft value "
                f"iteration); the loss reaches the preferences' entropy to {max(floors):.1e} "
                f"(< {cfg['tol']})",
            )
        )
        rep.checks.append(
            Check(
                "reward-sum-preferences-are-biased",
                min(bias) > cfg["bias_min"],
                f"with preferences on summed rewards the minimiser is biased: max_s KL to pi* "
                f"from {min(bias):.2e} to {max(bias):.2e} (> {cfg['bias_min']}); its distance to "
                f"the myopic softmax(r / alpha) {min(myopic):.2e} to {max(myopic):.2e} (reported)",
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            ax = plot_regret(
                {f"CPL, {s.split(',seed=')[1]}": np.maximum(g, 1e-18)[None]
                 for s, g in curves.items()},
                xlabel="L-BFGS iteration", ylabel="KL(pi_k || pi*)",
                title=f"{self.name} [{rep.scale}]",
            )  # fmt: skip
            ax.set_yscale("log")
            save_claim_figure(ax, plot)


register_validation(
    CPLConsistency(
        name="cpl-consistency-off-policy",
        statement=(
            "With preferences that follow the optimal advantage (regret), Contrastive Preference "
            "Learning's population loss on off-policy segments is minimised exactly at the "
            "soft-optimal policy (no reward model, no Bellman backup); with preferences on summed "
            "rewards (the model mismatch) its minimiser is a biased policy"
        ),
        scales={
            "quick": {
                "mdps": 2,
                "S": 3,
                "A": 2,
                "gamma": 0.9,
                "alphas": [0.5, 1.0],
                "lengths": [1, 2],
                "iterations": 200,
                "tol": 1e-8,
                "bias_min": 1e-4,
            },
            "full": {
                "mdps": 6,
                "S": 4,
                "A": 3,
                "gamma": 0.9,
                "alphas": [0.25, 0.5, 1.0],
                "lengths": [1, 2],
                "iterations": 400,
                "tol": 1e-8,
                "bias_min": 1e-4,
            },
        },  # fmt: skip
    ),
    controls=("cpl-reward-sum-preferences",),
    papers=("002-004#E10",),
)
