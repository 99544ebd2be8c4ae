"""Claim of action grouping (Li, Ju & Shroff, ICLR 2024; seed row 001#8): at a fixed sample size
the exact loss of the grouped plug-in policy against the number of groups is U-shaped
(approximation error falls, estimation error grows as the grouping is refined), and the best
number of groups grows with N. Learner: :mod:`theorylab.algorithms.offline.action_grouping`;
control ``action-grouping-random`` (``validations/grouping_mutations.py``); card
docs/algorithms/action-grouping.md.
"""

from __future__ import annotations

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.registry import register_validation

GROUPING_PAPERS = ("001#8",)


def loss_table(cfg: dict, seed: int) -> tuple[list[int], np.ndarray]:
    """The groups ``gs`` (the divisors of A along the cluster tree: 1, b_1, b_1 b_2, ..., A) and
    the exact losses ``(seeds, len(Ns), len(gs))``: one instance and one set of N draws per
    (seed, N), shared by every grouping (paired comparisons)."""
    from theorylab.algorithms.offline import action_grouping as ag
    from theorylab.algorithms.planning.value_iteration import value_iteration

    br = tuple(cfg["branching"])
    gs = [int(np.prod(br[:k])) for k in range(len(br) + 1)]
    A = gs[-1]
    L = np.zeros((cfg["seeds"], len(cfg["Ns"]), len(gs)))
    for i in range(cfg["seeds"]):
        rng = np.random.default_rng([seed, i])
        mdp = ag.clustered_mdp(rng, cfg["S"], br, tuple(cfg["weights"]), cfg["gamma"])
        V_star = value_iteration(mdp).V  # (S,)
        for j, N in enumerate(cfg["Ns"]):
            counts, rewards = ag.sample_counts(mdp, N, rng)
            for k, g in enumerate(gs):
                labels = ag.nested_groups(A, g)
                pi = ag.grouped_plugin_policy(counts, rewards, labels, cfg["gamma"])
                L[i, j, k] = ag.suboptimality(mdp, pi, V_star)
    return gs, L


class ActionGroupingTradeoff(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.offline import action_grouping as ag
        from theorylab.algorithms.planning.lp import discounted_lp
        from theorylab.algorithms.planning.value_iteration import value_iteration

        # (i) the ground truth, independently: value iteration against the LP on two instances
        gap = 0.0
        for i in range(2):
            mdp = ag.clustered_mdp(
                np.random.default_rng([seed, 99, i]), cfg["S"], tuple(cfg["branching"]),
                tuple(cfg["weights"]), cfg["gamma"],
            )  # fmt: skip
            gap = max(gap, float(np.abs(value_iteration(mdp).V - discounted_lp(mdp).V).max()))
        rep.checks.append(
            Check(
                "optimum-vi-equals-lp",
                gap < 1e-6,
                f"V* by value iteration vs the discounted LP on 2 instances: max gap {gap:.1e}",
            )
        )
        gs, L = loss_table(cfg, seed)
        mean = L.mean(0)  # (len(Ns), len(gs))
        # (ii) U shape: at some N an interior grouping beats both g = 1 and g = A, paired over
        # seeds by more than z standard errors
        margins = []
        for j in range(len(cfg["Ns"])):
            k = 1 + int(mean[j, 1:-1].argmin())
            worst = []
            for e in (0, len(gs) - 1):
                diff = L[:, j, e] - L[:, j, k]  # (seeds,) endpoint minus interior
                se = diff.std(ddof=1) / np.sqrt(diff.size)
                worst.append(float(diff.mean() / max(se, 1e-12)))
            margins.append(min(worst))
        u_at = [cfg["Ns"][j] for j, m in enumerate(margins) if m > cfg["z"]]
        rep.checks.append(
            Check(
                "loss-u-shaped-in-groups",
                bool(u_at),
                f"mean loss over {cfg['seeds']} seeds (rows N={cfg['Ns']}, columns g={gs}): "
                f"{np.round(mean, 4).tolist()}; paired z of (endpoint - best interior) per N "
                f"{np.round(margins, 1).tolist()}; U-shaped (z > {cfg['z']}) at N={u_at}",
            )
        )
        # (iii) the best number of groups grows with N
        best = [gs[int(k)] for k in mean.argmin(1)]
        grows = all(b <= c for b, c in zip(best[:-1], best[1:], strict=True)) and best[-1] > best[0]
        rep.checks.append(
            Check(
                "best-groups-grow-with-n",
                grows,
                f"argmin_g mean loss per N={cfg['Ns']}: {best} (non-decreasing, last > first)",
            )
        )
        if plot:
            from theorylab.plotting import plot_lines

            ax = plot_lines(
                gs, {f"N = {N}": mean[j] for j, N in enumerate(cfg["Ns"])},
                xlabel="number of groups g", ylabel="mean exact sub-optimality",
                title=f"{self.name} [{rep.scale}]", logx=True,
            )  # fmt: skip
            ax.set_xticks(gs, [str(g) for g in gs])
            ax.minorticks_off()
            save_claim_figure(ax, plot)


register_validation(
    ActionGroupingTradeoff(
        name="action-grouping-tradeoff",
        statement=(
            "Plug-in planning with a generative model on actions grouped by similarity (Li, Ju & "
            "Shroff 2024): at fixed N the exact sub-optimality against the number of groups "
            "g in {1, ..., A} along the cluster tree is U-shaped (an interior g beats both "
            "g = 1 and the ungrouped g = A, paired over seeds by z > 3 at some N), and the best "
            "g is non-decreasing in N and larger at the largest N than at the smallest; V* by "
            "value iteration matches the LP"
        ),
        scales={
            "quick": {
                "S": 8,
                "branching": [2, 2, 2],
                "weights": [0.5, 0.2, 0.05],
                "gamma": 0.9,
                "Ns": [1, 16, 1024],
                "seeds": 120,
                "z": 3.0,
            },
            "full": {
                "S": 8,
                "branching": [2, 2, 2],
                "weights": [0.5, 0.2, 0.05],
                "gamma": 0.9,
                "Ns": [1, 4, 16, 64, 256, 1024],
                "seeds": 400,
                "z": 3.0,
            },
        },  # fmt: skip
    ),
    controls=("action-grouping-random",),
    papers=GROUPING_PAPERS,
)
