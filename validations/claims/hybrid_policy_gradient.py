"""Claims of hybrid (offline + on-policy) policy gradient (issue 31).

1. ``hnpg-best-of-both-worlds`` -- Zhou, Sekhari, Song & Sun 2024 (seed rows 000#20 =
   002-004#C6): HNPG (``hnpg`` through ``tl.run``) against pure on-policy NPG (the same
   algorithm with no offline data) and the naive offline-only critic, on random discounted MDPs,
   every iterate scored against the exact optimum V*(mu0) (value iteration) by exact policy
   evaluation: (i) with valid, well-covering offline data (the uniform behaviour's occupancy)
   HNPG's final sub-optimality is below NPG's (95% interval of the difference below 0) and it
   reaches half the initial gap in no more on-policy rollouts; (ii) with offline data that
   violate the offline-RL coverage assumption (only strictly sub-optimal actions, C* = infinity)
   HNPG is no worse than NPG (the difference's 95% interval reaches 0 or below) while (iii) the
   offline-only critic fails (its final gap above NPG's by more than the interval and at least
   half the initial gap). Controls: ``hnpg-drops-on-policy-fit`` (HNPG becomes the offline-only
   critic: (ii) fails) and ``hnpg-drops-offline-data`` (HNPG becomes NPG: (i) fails).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.registry import register_validation

Z95 = 1.959963984540054  # two-sided 95% normal quantile


def difference_interval(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """mean(a) - mean(b) and its 95% normal interval (independent runs, Welch's standard
    error)."""
    d = float(a.mean() - b.mean())
    se = float(np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size))
    return d, d - Z95 * se, d + Z95 * se


def rollouts_to_reach(gap: np.ndarray, eps: float, per_iteration: int) -> float:
    """On-policy rollouts until the mean gap curve (K+1,) first falls to eps (inf if never)."""
    hit = np.flatnonzero(gap <= eps)
    return float(hit[0] * per_iteration) if hit.size else float("inf")


@dataclass(frozen=True)
class HNPGBestOfBothWorlds(ScaledClaim):
    name: str = "hnpg-best-of-both-worlds"
    statement: str = (
        "HNPG (Zhou et al. 2024; hnpg through tl.run: a softmax NPG step on a critic fit to "
        "offline TD targets plus lam = 10 times on-policy Monte Carlo returns, m = 2 rollouts per "
        "pair per iteration, eta = 0.3, 400 offline samples) on random discounted MDPs (S = 6, "
        "A = 3, gamma = 0.8), sub-optimality V*(mu0) - V^pi_K(mu0) exact (V* by value iteration): "
        "(i) with valid uniform-coverage offline data its final gap is below pure NPG's (95% "
        "interval of the difference < 0) and it reaches half the initial gap in no more on-policy "
        "rollouts; (ii) with valid data on strictly sub-optimal actions only (C* = infinity) it "
        "is no worse than NPG (the interval of the difference reaches <= 0); (iii) the "
        "offline-only critic on those data fails (gap above NPG's beyond the interval and >= "
        "half the initial gap). Reported, not claimed: data from a different MDP (rewards "
        "1 - r) bias the critic by the offline share n_off / (n_off + lam n_on). Quick: 1 MDP, "
        "32 runs, K = 40; full: 3 MDPs, 64 runs, K = 60."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {"mdps": 1, "runs": 32, "K": 40},
            "full": {"mdps": 3, "runs": 64, "K": 60},
        }
    )

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        import theorylab as tl

        K, R = cfg["K"], cfg["runs"]
        settings = {
            "npg": {"offline": "none"},
            "hnpg, uniform data": {"offline": "uniform"},
            "hnpg, bad-action data": {"offline": "bad-actions"},
            "offline-only, bad-action data": {"offline": "bad-actions", "critic": "offline-only"},
            "hnpg, rewards 1 - r": {"offline": "inverted-rewards"},
        }
        faster, no_worse, fails, reach_ok = True, True, True, True
        rows, curves = [], {}
        for i in range(cfg["mdps"]):
            spec = f"random:S=6,A=3,gamma=0.8,seed={seed + 3 + i}"
            gaps = {}
            for label, extra in settings.items():
                res = tl.run("hnpg", spec, iterations=K, runs=R, seed=seed + 100 * i, **extra)
                values = np.array(res.config["values"])  # (R, K+1)
                gaps[label] = res.target_value - values
            per_it = int(res.config["samples"])
            final = {k: g[:, -1] for k, g in gaps.items()}
            g0 = float(gaps["npg"][:, 0].mean())
            d_good = difference_interval(final["hnpg, uniform data"], final["npg"])
            d_bad = difference_interval(final["hnpg, bad-action data"], final["npg"])
            d_off = difference_interval(final["offline-only, bad-action data"], final["npg"])
            d_inv = difference_interval(final["hnpg, rewards 1 - r"], final["npg"])
            reach = {
                k: rollouts_to_reach(g.mean(axis=0), 0.5 * g0, per_it)
                for k, g in gaps.items()
                if k in ("npg", "hnpg, uniform data")
            }
            faster &= d_good[2] < 0
            reach_ok &= reach["hnpg, uniform data"] <= reach["npg"]
            no_worse &= d_bad[1] <= 0
            off_mean = float(final["offline-only, bad-action data"].mean())
            fails &= d_off[1] > 0 and off_mean >= 0.5 * g0
            rows.append(
                {
                    "mdp": spec,
                    "initial_gap": g0,
                    "final_gap": {k: float(v.mean()) for k, v in final.items()},
                    "good_minus_npg": d_good,
                    "bad_minus_npg": d_bad,
                    "offline_only_minus_npg": d_off,
                    "inverted_minus_npg": d_inv,
                    "rollouts_to_half_gap": reach,
                }
            )
            if i == 0:
                curves = {k: g.mean(axis=0) for k, g in gaps.items()}
                x = per_it * np.arange(K + 1)

        def fmt(key: str) -> str:
            parts = []
            for r in rows:
                d, lo, hi = r[key]
                parts.append(f"{r['mdp'].split('seed=')[1]}: {d:+.3f} [{lo:+.3f}, {hi:+.3f}]")
            return "; ".join(parts)

        def finals(label: str) -> str:
            return ", ".join(f"{r['final_gap'][label]:.3f}" for r in rows)

        checks = [
            Check(
                "valid, well-covering offline data: faster than NPG",
                bool(faster and reach_ok),
                f"final gap HNPG - NPG per MDP seed {fmt('good_minus_npg')} (interval < 0); "
                f"HNPG {finals('hnpg, uniform data')} vs NPG {finals('npg')}; on-policy rollouts "
                "to half the initial gap (HNPG, NPG): "
                + ", ".join(
                    f"({r['rollouts_to_half_gap']['hnpg, uniform data']:.0f}, "
                    f"{r['rollouts_to_half_gap']['npg']:.0f})"
                    for r in rows
                ),
                {"rows": rows},
            ),
            Check(
                "bad-action offline data: HNPG no worse than NPG",
                bool(no_worse),
                f"final gap HNPG - NPG {fmt('bad_minus_npg')} (interval reaches <= 0); HNPG "
                f"{finals('hnpg, bad-action data')} vs NPG {finals('npg')}",
                {"rows": rows},
            ),
            Check(
                "bad-action offline data: the offline-only critic fails",
                bool(fails),
                f"final gap offline-only - NPG {fmt('offline_only_minus_npg')} (interval > 0); "
                f"offline-only {finals('offline-only, bad-action data')} vs half the initial "
                "gap " + ", ".join(f"{0.5 * r['initial_gap']:.3f}" for r in rows),
                {"rows": rows},
            ),
        ]
        rep.config["reported"] = {
            "inverted_rewards_minus_npg": [r["inverted_minus_npg"] for r in rows],
        }
        if plot:
            from theorylab.plotting import plot_lines

            ax = plot_lines(
                x,
                {k: np.maximum(v, 1e-6) for k, v in curves.items()},
                xlabel="on-policy rollouts per run",
                ylabel="V*(mu0) - V^pi_k(mu0), mean over runs",
                title=f"HNPG vs NPG vs offline-only critic ({rows[0]['mdp']})",
                logy=True,
            )
            save_claim_figure(ax, plot)
        rep.checks.extend(checks)


register_validation(
    HNPGBestOfBothWorlds(),
    controls=("hnpg-drops-on-policy-fit", "hnpg-drops-offline-data"),
    papers=("000#20", "002-004#C6"),
)
