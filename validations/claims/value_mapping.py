"""Orchestrated value mapping (seed row 001#5, Fatemi & Tavakoli, ICLR 2022;
``algorithms/policy_optimization/value_mapping.py``).

``orchestrated-q-converges`` on random discounted MDPs (synchronous generative-model sampling):
(1) the identity mapping with one channel equals plain Q-learning, written out here with the same
random draws, bit for bit; (2) log mapping over the sign channels (Log Q-learning's split; with
beta_f = 1 and beta_f = 0.5), identity over the shifted channels (values <= 0) and identity over
three channels whose rewards differ by 100x all satisfy ||Q_K - Q*||_inf <= 0.1 ||Q*||_inf against
value iteration, and the error at K is at most half the error at K/10; (3) the negative side: the
square map (not injective on the reals) over the shifted channels stays >= 0.2 ||Q*||_inf away
(the theorem's condition is needed). Control ``value-map-folded-inverse`` fails (2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.claims.policy_optimization import (
    random_discounted_mdp as random_mdp,
)
from theorylab.validations.registry import register_validation

CONFIGS = (  # (mapping, channels, beta_f): satisfy the conditions
    ("log", "sign", 1.0),
    ("log", "sign", 0.5),
    ("identity", "shifted", 1.0),
    ("identity", "scales", 1.0),
)


def plain_q_learning(mdp, iterations: int, seed: int, power: float = 1.0) -> np.ndarray:
    """Synchronous Q-learning, the textbook update Q <- Q + beta (r + gamma max Q(s') - Q) with
    the same draws as orchestrated-q: Q_k (K+1, S, A)."""
    S, A, g = mdp.S, mdp.A, mdp.gamma
    cdf = np.cumsum(mdp.dense_P(), axis=2)
    R = np.asarray(mdp.reward(0), dtype=np.float64)
    rng = np.random.default_rng(seed)
    Q = np.zeros((S, A))
    out = [Q]
    for k in range(iterations):
        nxt = np.minimum((cdf < rng.random((S, A, 1))).sum(axis=2), S - 1)
        target = R + g * Q[nxt, np.argmax(Q, axis=1)[nxt]]
        Q = Q + (1.0 + (1.0 - g) * k) ** -power * (target - Q)
        out.append(Q)
    return np.stack(out)


@dataclass(frozen=True)
class OrchestratedQConverges(ScaledClaim):
    name: str = "orchestrated-q-converges"
    statement: str = (
        "Orchestrated value mapping (Fatemi & Tavakoli 2022), synchronous sampling on random "
        "MDPs (S = 6, A = 3, gamma = 0.9), steps (1 + (1 - gamma) k)^-1: identity map + one "
        "channel equals plain Q-learning bit for bit; log map over the sign channels (beta_f 1 "
        "and 0.5), identity over shifted channels and over channels 100x apart in scale reach "
        "||Q_K - Q*||_inf <= 0.1 ||Q*||_inf (Q* by value iteration) with the error at K <= half "
        "that at K/10; the square map (not injective) over the shifted channels stays >= 0.2 "
        "||Q*||_inf away. Quick: 2 MDPs, K = 3000; full: 5 MDPs, K = 20000."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {"mdps": 2, "iterations": 3000},
            "full": {"mdps": 5, "iterations": 20000},
        }
    )

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        import theorylab as tl
        from theorylab.algorithms.policy_optimization.leverage_average import optimal_q

        rng = np.random.default_rng(seed + 5)
        K = cfg["iterations"]
        bitwise, rel, shrink, bad_rel = True, {}, {}, []
        curves = {}
        for i in range(cfg["mdps"]):
            mdp = random_mdp(rng, 6, 3, 0.9)
            q_star = optimal_q(mdp)
            scale = float(np.abs(q_star).max())
            sd = 100 + i
            ident = tl.run("orchestrated-q", mdp, iterations=K, mapping="identity",
                           channels="single", seed=sd)  # fmt: skip
            plain = plain_q_learning(mdp, K, sd)
            gap_plain = np.abs(plain - q_star[None]).max(axis=(1, 2))
            bitwise &= bool(np.array_equal(ident.config["q_error"], gap_plain))
            for mapping, channels, beta_f in CONFIGS:
                run = tl.run("orchestrated-q", mdp, iterations=K, mapping=mapping,
                             channels=channels, beta_f=beta_f, seed=sd)  # fmt: skip
                key = f"{mapping}/{channels}/beta_f={beta_f:g}"
                gap = np.asarray(run.config["q_error"])
                rel[key] = max(rel.get(key, 0.0), float(gap[-1] / scale))
                shrink[key] = max(shrink.get(key, 0.0), float(gap[-1] / gap[K // 10]))
                if i == 0:
                    curves[key] = gap[1:] / scale
            bad = tl.run("orchestrated-q", mdp, iterations=K, mapping="square",
                         channels="shifted", seed=sd)  # fmt: skip
            bad_rel.append(float(bad.config["q_error"][-1] / scale))
            if i == 0:
                curves["square/shifted (violates the condition)"] = (
                    np.asarray(bad.config["q_error"][1:]) / scale
                )
        converge = all(v <= 0.1 for v in rel.values()) and all(v <= 0.5 for v in shrink.values())
        rep.checks.extend(
            [
                Check(
                    "identity + one channel = Q-learning, bit for bit",
                    bitwise,
                    f"||Q_k - Q*|| of orchestrated-q(identity, single) equals that of the "
                    f"written-out Q-learning at every k on every MDP: {bitwise}",
                ),
                Check(
                    "mapped / multi-channel configurations converge to Q*",
                    converge,
                    "worst ||Q_K - Q*||_inf / ||Q*||_inf (limit 0.1) and error(K) / error(K/10) "
                    "(limit 0.5): " + ", ".join(f"{k} {rel[k]:.4f} / {shrink[k]:.3f}" for k in rel),
                    {"relative_error": rel, "shrink": shrink},
                ),
                Check(
                    "a map violating the conditions does not converge",
                    bool(min(bad_rel) >= 0.2),
                    f"square map over the shifted channels: ||Q_K - Q*|| / ||Q*|| >= "
                    f"{min(bad_rel):.3f} (needs >= 0.2)",
                    {"square_relative_error": bad_rel},
                ),
            ]
        )
        if plot and curves:
            from theorylab.plotting import plot_lines

            ax = plot_lines(
                np.arange(1, K + 1),
                curves,
                xlabel="iteration k",
                ylabel="||Q_k - Q*||_inf / ||Q*||_inf",
                title="Orchestrated value mapping (first MDP)",
                logx=True,
                logy=True,
            )
            save_claim_figure(ax, plot)


register_validation(
    OrchestratedQConverges(), controls=("value-map-folded-inverse",), papers=("001#5",)
)
