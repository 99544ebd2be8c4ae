"""CFGRL's guidance weight as a policy improvement operator, exact tabular core (000#68).

``cfgrl-guidance-improves-behaviour`` draws random finite-horizon MDPs (``random:S,A,H,seed=k``)
and per MDP a behaviour policy pi_beta (Dirichlet(0.5) rows with actions below 0.1 removed, so
the support matters), forms ``pi_w ∝ pi_beta sigmoid(A^{pi_beta} / tau)^w`` exactly from the
model (``algorithms/offline/cfgrl.py``) on a grid of w, and checks against answers computed here:

1. ``w = 0`` is behaviour cloning: pi_0 = pi_beta to 1e-15 on the model, and the offline
   ``cfgrl(w=0)`` policy equals ``behaviour-cloning``'s on a dataset to 1e-15.
2. The operator is the printed product: pi_w equals ``pi_beta * sigmoid(A / tau)^w / Z`` written
   out here with A from an independent linear solve of the layered Bellman system, to 1e-9.
3. Theorem 1 (every w): ``J(pi_w) >= J(pi_beta)`` on every MDP (to 1e-12) with J from the
   library's evaluation agreeing with the independent linear solve to 1e-10; the mean gain at
   the largest w is at least 0.01 (the check is not vacuous).
4. The per-state core of Theorem 2: ``sum_a pi_w(a|s) A_h^{pi_beta}(s, a)`` is non-decreasing in
   w at every (h, s) of every MDP (to 1e-12).
5. The w -> infinity limit: at w = 1e60 (the sigmoid saturates; see W_LIMIT), pi_w is within
   1e-6 of pi_beta renormalised on the argmax of A^{pi_beta} over its support, and J agrees with
   the limit policy's to 1e-6.

INFO (not gating): whether ``J(pi_w)`` itself is non-decreasing along the grid on every MDP
(Theorem 2 as summarised; measured: it fails on a few percent of random MDPs, since the
advantage is the behaviour policy's and the state distribution moves with w).

The control ``cfgrl-guidance-sign-flipped`` (``p^{-w}``) fails 2, 3, 4 and 5.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from theorylab.validations.claim import Check, Report, finished_report
from theorylab.validations.registry import register_validation

GRID = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
# sigmoid saturates: at advantage a > 0 the log-likelihood gap between two actions is about
# exp(-a / tau) times their advantage gap, so separating them needs w >> exp(a / tau) (about
# 1e35 for a = 8, tau = 0.1); a practical w never reaches the greedy limit among positive-advantage
# actions, which it weighs close to pi_beta
W_LIMIT = 1e60


def layered_values(P: np.ndarray, R: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """``V (H+1, S)`` of ``pi (H, S, A)`` by one linear solve of the layered system
    ``V_h - P_pi,h V_{h+1} = r_pi,h``, ``V_H = 0``; ``P (H, S, A, S)``, ``R (H, S, A)``."""
    H, S, _ = pi.shape
    n = (H + 1) * S
    M = np.eye(n)
    b = np.zeros(n)
    for h in range(H):
        M[h * S : (h + 1) * S, (h + 1) * S : (h + 2) * S] -= np.einsum("sa,sat->st", pi[h], P[h])
        b[h * S : (h + 1) * S] = (pi[h] * R[h]).sum(axis=1)
    return np.linalg.solve(M, b).reshape(H + 1, S)


def model_arrays(mdp) -> tuple[np.ndarray, np.ndarray]:
    """Dense ``P (H, S, A, S)`` and ``R (H, S, A)`` of a finite-horizon model."""
    H = mdp.horizon
    P = np.asarray(mdp.dense_P())
    P = P if P.ndim == 4 else np.broadcast_to(P, (H, *P.shape))
    return P, np.stack([mdp.reward(h) for h in range(H)])


def behaviour_policy(rng: np.random.Generator, H: int, S: int, A: int) -> np.ndarray:
    """Dirichlet(0.5) rows ``(H, S, A)`` with actions below 0.1 removed and renormalised."""
    pb = rng.dirichlet(np.full(A, 0.5), size=(H, S))
    pb = np.where(pb >= 0.1, pb, 0.0)
    return pb / pb.sum(axis=-1, keepdims=True)


@dataclass
class CfgrlGuidance:
    name: str = "cfgrl-guidance-improves-behaviour"
    statement: str = (
        "CFGRL (Frans et al. 2025), exact tabular core: pi_w ∝ pi_beta * p(o|s,a)^w with "
        "p = sigmoid(A^{pi_beta} / tau). w = 0 is behaviour cloning; pi_w is the printed product "
        "(independent linear solve, 1e-9); J(pi_w) >= J(pi_beta) for every w on every random MDP; "
        "the expected behaviour advantage under pi_w is non-decreasing in w at every state; "
        "w -> infinity tends to the support-constrained greedy policy on A^{pi_beta}"
    )
    scales: dict[str, dict] = field(
        default_factory=lambda: {
            "quick": {"mdps": 60, "S": 6, "A": 4, "H": 5, "tau": 0.1},
            "full": {"mdps": 1000, "S": 8, "A": 5, "H": 8, "tau": 0.1},
        }
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        from scipy.special import expit

        from theorylab.algorithms.offline.baselines import behaviour_cloning
        from theorylab.algorithms.offline.cfgrl import (
            behaviour_advantage,
            cfgrl,
            exact_guided_policy,
            guidance_limit,
        )
        from theorylab.algorithms.offline.dataset import make_dataset
        from theorylab.algorithms.planning import policy_values
        from theorylab.mdps import make

        t0 = time.perf_counter()
        cfg = self.scales[scale]
        S, A, H, tau = cfg["S"], cfg["A"], cfg["H"], cfg["tau"]
        K = cfg["mdps"]
        J = np.empty((K, len(GRID)))  # library evaluation
        J_beta = np.empty(K)
        J_lim = np.empty(K)
        J_big = np.empty(K)
        bc_err = prod_err = solve_err = lim_err = 0.0
        adv_drop = 0.0  # most negative step of the per-state expected advantage along the grid
        for k in range(K):
            mdp = make(f"random:S={S},A={A},H={H},seed={seed + k}")
            rng = np.random.default_rng([seed, k])
            pb = behaviour_policy(rng, H, S, A)
            P, R = model_arrays(mdp)
            V_b = layered_values(P, R, pb)  # independent
            adv = R + np.einsum("hsat,ht->hsa", P, V_b[1:]) - V_b[:-1, :, None]  # (H, S, A)
            mu0 = np.asarray(mdp.mu0)
            J_beta[k] = V_b[0] @ mu0
            gains = []
            for j, w in enumerate(GRID):
                pi = exact_guided_policy(mdp, pb, w, tau)
                written = pb * expit(adv / tau) ** w
                written = written / written.sum(axis=-1, keepdims=True)
                prod_err = max(prod_err, float(np.abs(pi - written).max()))
                if w == 0.0:
                    bc_err = max(bc_err, float(np.abs(pi - pb).max()))
                J[k, j] = float(policy_values(mdp, pi))
                J_ind = float(layered_values(P, R, pi)[0] @ mu0)
                solve_err = max(solve_err, abs(J[k, j] - J_ind))
                gains.append((pi * adv).sum(axis=-1))  # (H, S)
            adv_drop = min(adv_drop, float(np.diff(np.stack(gains), axis=0).min()))
            lib_adv = behaviour_advantage(mdp, pb)
            limit = guidance_limit(pb, lib_adv)
            big = exact_guided_policy(mdp, pb, W_LIMIT, tau)
            lim_err = max(lim_err, float(np.abs(big - limit).max()))
            J_lim[k] = float(policy_values(mdp, limit))
            J_big[k] = float(policy_values(mdp, big))
        checks: list[Check] = []

        # 1: w = 0 is behaviour cloning (model and dataset)
        mdp = make(f"random:S={S},A={A},H={H},seed={seed}")
        ds = make_dataset(mdp, 20 * H, coverage=0.5, seeds=4, seed=seed)
        ds_err = float(np.abs(cfgrl(ds, w=0.0, tau=tau).policy
                              - behaviour_cloning(ds).policy).max())  # fmt: skip
        checks.append(Check(
            "w = 0 is behaviour cloning", max(bc_err, ds_err) <= 1e-15,
            f"max |pi_0 - pi_beta| = {bc_err:.1e} on {K} models; offline cfgrl(w=0) vs "
            f"behaviour-cloning on a dataset {ds_err:.1e} (<= 1e-15)",
            {"model": bc_err, "dataset": ds_err}))  # fmt: skip

        # 2: the printed product
        checks.append(Check(
            "pi_w is the product pi_beta sigmoid(A/tau)^w / Z", prod_err <= 1e-9,
            f"max |pi_w - written-out product| = {prod_err:.1e} over w in {list(GRID)} "
            "(A from an independent layered linear solve; <= 1e-9)",
            {"max_error": prod_err}))  # fmt: skip

        # 3: Theorem 1 at every w
        gain = J - J_beta[:, None]  # (K, W)
        worst = float(gain.min())
        top = float(gain[:, -1].mean())
        ok = worst >= -1e-12 and solve_err <= 1e-10 and top >= 0.01
        checks.append(Check(
            "J(pi_w) >= J(pi_beta) for every w (Theorem 1)", ok,
            f"min over {K} MDPs and the grid of J(pi_w) - J(pi_beta) = {worst:.2e} (>= -1e-12); "
            f"mean gain at w = {GRID[-1]:g}: {top:.4f} (>= 0.01); library vs linear-solve J "
            f"{solve_err:.1e} (<= 1e-10)",
            {"worst_gain": worst, "mean_gain_top": top, "solve_error": solve_err}))  # fmt: skip

        # 4: per-state expected advantage non-decreasing in w
        checks.append(Check(
            "E_{pi_w}[A^{pi_beta}(s, .)] non-decreasing in w at every state", adv_drop >= -1e-12,
            f"most negative step along the grid over all (MDP, h, s): {adv_drop:.2e} (>= -1e-12)",
            {"worst_step": adv_drop}))  # fmt: skip

        # 5: the w -> infinity limit
        lim_gap = float(np.abs(J_big - J_lim).max())
        checks.append(Check(
            "w -> infinity: support-constrained greedy on A^{pi_beta}",
            lim_err <= 1e-6 and lim_gap <= 1e-6,
            f"at w = {W_LIMIT:g}: max |pi_w - limit| = {lim_err:.1e}, max |J(pi_w) - J(limit)| = "
            f"{lim_gap:.1e} (<= 1e-6)", {"policy": lim_err, "value": lim_gap}))  # fmt: skip

        # INFO: J itself monotone in w?
        steps = np.diff(J, axis=1)  # (K, W-1)
        n_bad = int((steps.min(axis=1) < -1e-12).sum())
        checks.append(Check(
            "J(pi_w) non-decreasing along the grid on every MDP (Theorem 2 as summarised)", True,
            f"{n_bad}/{K} MDPs have a decrease (worst step {float(steps.min()):.4f}); mean J "
            f"over MDPs along the grid: {np.round(J.mean(axis=0), 4).tolist()}",
            {"n_decreasing": n_bad, "worst_step": float(steps.min())}, status="INFO"))  # fmt: skip

        if plot:
            from theorylab.plotting import plot_lines

            x = np.asarray(GRID[1:])
            plot_lines(x, {"J(pi_w) - J(pi_beta), mean": gain[:, 1:].mean(axis=0),
                           "worst MDP": gain[:, 1:].min(axis=0),
                           "w -> inf limit, mean": np.full(x.size, (J_lim - J_beta).mean())},
                       xlabel="guidance weight w", ylabel="exact improvement over pi_beta",
                       title="CFGRL: guidance weight as policy improvement (exact, tabular)",
                       logx=True, path=plot)  # fmt: skip
        config = {**cfg, "grid": list(GRID), "w_limit": W_LIMIT, "seed": seed}
        return finished_report(self.name, self.statement, scale, checks, t0, config, figure=plot)


register_validation(
    CfgrlGuidance(),
    controls=("cfgrl-guidance-sign-flipped",),
    targets={"offline": ("cfgrl",)},
    papers=("000#68",),
)
