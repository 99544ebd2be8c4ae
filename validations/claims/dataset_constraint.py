"""Claims of policy regularisation with a dataset constraint (issue 31).

1. ``prdc-dataset-constraint`` -- Ran et al. 2023 (seed row 002-004#C3): PRDC (``prdc``, the
   tabular-metric actor-critic of :mod:`theorylab.algorithms.offline.prdc`) on the grid point mass
   (``point-mass:nx=21,nu=21,control=1.0``), offline data of a slow band controller (three
   neighbouring controls around 0.3 sign(0.5 - x)), every quantity against the exact answer on the
   grid (V^pi by a linear solve, V* and the best in-support policy by value iteration):
   (i) PRDC's critic stays bounded -- its largest value over all iterations at most 1.05 / (1 -
   gamma) and its final over-estimation V_hat(s) - V^pi(s) on the data's states at most 0.1 /
   (1 - gamma) on every seed -- while the unregularised actor-critic (``constraint=False``, the
   same critic greedy over every control) has a median over-estimation above 0.25 / (1 - gamma)
   and 10 x PRDC's, its critic reaching values above 1 / (1 - gamma) that no policy has;
   (ii) as beta grows the constraint becomes behaviour cloning: the policy's distance to the
   nearest dataset control at its own state falls (non-increasing within 0.01 over beta = 0.5 ..
   128) to <= 0.01 at beta = 128, and at beta = 1e4 the KD-tree penalty equals the brute-force
   "closest control among the samples at the nearest data state";
   (iii) PRDC's value is at least the behaviour's on every seed, and within the stated gap
   0.5 (V_supp - V_b) of the best in-support policy's V_supp. Negative control:
   ``prdc-constraint-dropped`` (the penalty table replaced by zeros: PRDC becomes the unregularised
   actor-critic) fails (i) and (iii).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.registry import register_validation

PROBLEM = "point-mass:nx=21,nu=21,control=1.0"
BETAS = (0.5, 2.0, 8.0, 32.0, 128.0)


def band_behaviour(S: int, A: int) -> np.ndarray:
    """(S, A): uniform over the three controls nearest 0.3 sign(0.5 - x) (a slow controller)."""
    x, u = np.linspace(-1.0, 1.0, S), np.linspace(-1.0, 1.0, A)
    beh = np.zeros((S, A))
    for s in range(S):
        j = int(np.argmin(np.abs(u - 0.3 * np.sign(0.5 - x[s]))))
        beh[s, max(j - 1, 0) : min(j + 2, A)] = 1.0
    return beh / beh.sum(axis=1, keepdims=True)


def nearest_data_state(states: np.ndarray, S: int) -> np.ndarray:
    """(S,): for every grid state, the nearest state holding data (ties to the smaller)."""
    seen = np.unique(states)
    return seen[np.argmin(np.abs(np.arange(S)[:, None] - seen[None, :]), axis=1)]


def support_mask(states: np.ndarray, actions: np.ndarray, S: int, A: int) -> np.ndarray:
    """(S, A) bool: the controls the data hold at the nearest data state."""
    mask = np.zeros((S, A), dtype=bool)
    mask[states, actions] = True
    return mask[nearest_data_state(states, S)]


def support_restricted_value(mdp, mask: np.ndarray) -> float:
    """V(mu0) of the best policy using only the masked controls (value iteration, brute force
    over the allowed pairs)."""
    R, P, g = mdp.reward(0), mdp.dense_P(), mdp.gamma
    V = np.zeros(mdp.S)
    for _ in range(5000):
        Q = np.where(mask, R + g * P @ V, -np.inf)
        V_new = Q.max(axis=1)
        if np.max(np.abs(V_new - V)) < 1e-12:
            break
        V = V_new
    return float(V_new @ mdp.mu0)


def bc_penalty(states: np.ndarray, actions: np.ndarray, S: int, A: int) -> np.ndarray:
    """(S, A): min over the samples at the nearest data state of (u_a - u_i)^2 (brute force)."""
    u = np.linspace(-1.0, 1.0, A)
    mask = support_mask(states, actions, S, A)
    d2 = (u[:, None] - u[None, :]) ** 2  # (A, A')
    return np.where(mask[:, None, :], d2[None], np.inf).min(axis=-1)


@dataclass(frozen=True)
class PRDCDatasetConstraint(ScaledClaim):
    name: str = "prdc-dataset-constraint"
    statement: str = (
        "PRDC (Ran et al. 2023; prdc: the actor maximises lam Q(s, a) - (u_a - u_NN)^2, "
        "(s_NN, a_NN) the dataset sample nearest (s, a) in sqrt(beta^2 dx^2 + du^2) by a "
        "KD-tree; alpha = 1, beta = 2, a critic Lipschitz in the state and linear in the control) "
        "on the grid point mass (21 x 21, control cost 1, gamma = 0.9) from 2000 samples of a "
        "slow band controller, against exact values on the grid: (i) its critic never exceeds "
        "1.05 / (1 - gamma) and over-estimates V^pi by at most 0.1 / (1 - gamma) on every seed, "
        "while the unregularised actor-critic's median over-estimation exceeds 0.25 / (1 - "
        "gamma) and 10 x PRDC's, its critic exceeding 1 / (1 - gamma) (no policy's value); "
        "(ii) as beta grows (0.5 .. 128) the policy's distance to the data's controls at its "
        "state falls to <= 0.01 (behaviour cloning), and at beta = 1e4 the penalty is the "
        "brute-force closest control at the nearest data state; (iii) its value is >= the "
        "behaviour's on every seed and within 0.5 (V_supp - V_b) of the best in-support policy. "
        "Quick: 4 seeds, 50 iterations; full: 24 seeds, 100 iterations."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {"seeds": 4, "iterations": 50},
            "full": {"seeds": 24, "iterations": 100},
        }
    )

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        from theorylab.algorithms.offline import prdc as P
        from theorylab.algorithms.offline.dataset import make_dataset
        from theorylab.algorithms.planning.evaluation import evaluate_discounted
        from theorylab.algorithms.planning.value_iteration import value_iteration
        from theorylab.mdps import make

        mdp = make(PROBLEM)
        S, A, g, B, K = mdp.S, mdp.A, mdp.gamma, cfg["seeds"], cfg["iterations"]
        top = 1.0 / (1.0 - g)
        beh = band_behaviour(S, A)
        ds = make_dataset(mdp, 2000, behaviour=beh, kind="samples", seeds=B, seed=seed)
        v_star = float(np.ravel(value_iteration(mdp, tol=1e-12).V) @ mdp.mu0)
        v_b = float(evaluate_discounted(mdp, beh) @ mdp.mu0)
        u = np.linspace(-1.0, 1.0, A)

        def scored(res):
            over, values, dist = [], [], []
            for b in range(B):
                V_pi = evaluate_discounted(mdp, res.policy[b])
                seen = np.unique(ds.states[b])
                over.append(float(np.max(res.V[b][seen] - V_pi[seen])))
                values.append(float(V_pi @ mdp.mu0))
                mask = np.zeros((S, A), dtype=bool)
                mask[ds.states[b], ds.actions[b]] = True
                dist.append(
                    float(np.mean([np.abs(u[mask[s]] - u[res.policy[b][s]]).min() for s in seen]))
                )
            return np.array(over), np.array(values), np.array(dist)

        runs = {}
        for beta in BETAS:
            runs[beta] = P.prdc(ds, beta=beta, alpha=1.0, iterations=K)
        free = P.prdc(ds, beta=2.0, alpha=1.0, iterations=K, constraint=False)
        over, values, _ = scored(runs[2.0])
        over_free, values_free, _ = scored(free)
        q_top = float(runs[2.0].info["q_max"].max())
        dists = np.array([scored(runs[beta])[2].mean() for beta in BETAS])
        pen_match = True
        for b in range(B):
            pen = P.dataset_constraint_penalty(ds.states[b], ds.actions[b], S, A, 1e4)
            pen_match &= bool(np.allclose(pen, bc_penalty(ds.states[b], ds.actions[b], S, A)))
        v_supp = np.array(
            [
                support_restricted_value(mdp, support_mask(ds.states[b], ds.actions[b], S, A))
                for b in range(B)
            ]
        )
        gap_allowed = 0.5 * (v_supp - v_b)
        checks = [
            Check(
                "PRDC's over-estimation stays bounded; the unregularised critic's does not",
                q_top <= 1.05 * top
                and bool(np.all(over <= 0.1 * top))
                and float(np.median(over_free)) > max(0.25 * top, 10 * float(np.median(over)))
                and float(np.abs(free.info["q_max"]).max()) > top,
                f"PRDC: largest critic value {q_top:.3f} (<= {1.05 * top:.2f}); max_s V_hat - "
                f"V^pi on the data's states, max over seeds {over.max():.3f} (<= {0.1 * top:.2f}), "
                f"median {np.median(over):.3f}; unregularised: median {np.median(over_free):.3g} "
                f"(> {0.25 * top:.2f} and > 10 x PRDC's), largest critic value "
                f"{float(np.abs(free.info['q_max']).max()):.3g} (> {top:.1f}: no policy's value)",
                {"over": over.tolist(), "over_free": over_free.tolist(), "q_top": q_top},
            ),
            Check(
                "as beta grows the constraint becomes behaviour cloning",
                bool(np.all(np.diff(dists) <= 0.01)) and dists[-1] <= 0.01 and pen_match,
                f"mean distance of pi(s) to the data's controls at s over beta = {list(BETAS)}: "
                f"{np.round(dists, 4).tolist()} (non-increasing within 0.01, <= 0.01 at the "
                f"last); penalty at beta = 1e4 equals the brute-force closest control at the "
                f"nearest data state on every seed: {pen_match}",
                {"distance": dists.tolist(), "penalty_match": pen_match},
            ),
            Check(
                "PRDC's value is at least the behaviour's, within the stated gap of the best "
                "in-support policy",
                bool(np.all(values >= v_b)) and bool(np.all(v_supp - values <= gap_allowed)),
                f"V^PRDC(mu0) min over seeds {values.min():.3f}, mean {values.mean():.3f} vs "
                f"V_b {v_b:.3f}; V_supp - V^PRDC max {np.max(v_supp - values):.3f} (<= 0.5 "
                f"(V_supp - V_b), min {gap_allowed.min():.3f}); V* {v_star:.3f}; unregularised "
                f"mean {values_free.mean():.3f}",
                {
                    "values": values.tolist(),
                    "v_b": v_b,
                    "v_supp": v_supp.tolist(),
                    "v_star": v_star,
                    "values_free": values_free.tolist(),
                },
            ),
        ]
        if plot:
            from theorylab.plotting import plot_lines

            it = np.arange(K + 1)
            ax = plot_lines(
                it,
                {
                    "PRDC (beta = 2): max_s |Q_hat(s, pi(s))|, largest seed": np.maximum(
                        np.abs(runs[2.0].info["q_max"]).max(axis=0), 1e-2
                    ),
                    "unregularised: max_s |Q_hat(s, pi(s))|, largest seed": np.maximum(
                        np.abs(free.info["q_max"]).max(axis=0), 1e-2
                    ),
                    "unregularised: median seed": np.maximum(
                        np.median(np.abs(free.info["q_max"]), axis=0), 1e-2
                    ),
                    "1 / (1 - gamma)": np.full(K + 1, top),
                },
                xlabel="actor-critic iteration",
                ylabel="critic value",
                title=f"PRDC vs the unregularised critic on {PROBLEM}",
                logy=True,
            )
            save_claim_figure(ax, plot)
        rep.checks.extend(checks)


register_validation(
    PRDCDatasetConstraint(),
    controls=("prdc-constraint-dropped",),
    papers=("002-004#C3",),
)
