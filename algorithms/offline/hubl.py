r"""HUBL: heuristic blending for offline RL (finite horizon, tabular, batched over seeds).

Seed: ``seed-catalogue-000.md#44`` (tier B). Paper: Geng, Pacchiano, Kolobov, Cheng, "Improving
Offline RL by Blending Heuristics", ICLR 2024 (arXiv:2306.00321). Read: the abstract and the
first page of the ICLR text [V for: "partially replacing the bootstrapped values with heuristic
ones that are estimated with Monte-Carlo returns"; "For trajectories with higher returns, HUBL
relies more on the heuristic values"; "relabeling the offline datasets with adjusted rewards and
discount factors"; the theory explains the effect as "reducing offline RL's complexity"]; a
summary page [S] gives the relabelling ``r~ = r + gamma lambda h``, ``gamma~ = gamma (1 -
lambda)`` and calls the analysis a bias--regret trade-off of a *reshaped MDP*. The theorem's
statement and constants were not read; the claim below tests the exact mechanics and the
trade-off's two sides, not a printed rate.

Problem. A bootstrapping offline algorithm backs up ``y = r + V_hat_{h+1}(s')``; its errors in
V_hat compound over the H stages. HUBL replaces a fraction lambda of the bootstrapped value by a
heuristic h(s'), the Monte-Carlo return of the *same* trajectory from s' on:

    y_HUBL = r_h + lambda G_{h+1} + (1 - lambda) V_hat_{h+1}(s'),
    G_{h+1} = r_{h+1} + ... + r_{H-1}  (that episode's reward-to-go after stage h).

As relabelling (finite horizon, gamma = 1): reward ``r~_h = r_h + lambda G_{h+1}``, continuation
``1 - lambda``. Any base algorithm that accepts per-row rewards and a continuation factor runs on
the relabelled data unchanged; here the bases are certainty equivalence (``penalty="none"``, the
library's ``naive-vi`` at lambda = 0) and Hoeffding pessimism (``penalty="hoeffding"``,
``pessimistic-vi-hoeffding`` at lambda = 0: ``b = min(c_h H sqrt(L / n), H)``, the same width,
since y still lies in [0, H - h]).

Reshaped MDP (population limit). With trajectories of a behaviour policy pi_b,
``E[G_{h+1} | s_{h+1} = s'] = V^{pi_b}_{h+1}(s')``, so with infinite data HUBL solves exactly

    Q~_h(s, a) = r_h(s, a) + P_h(s, a) [ lambda V^{pi_b}_{h+1} + (1 - lambda) max_a' Q~_{h+1} ],

a finite-horizon MDP with reward ``r_h + lambda P_h V^{pi_b}_{h+1}`` and continuation 1 - lambda
(:func:`reshaped_q`). Its greedy policy is the *bias* of HUBL: lambda = 0 is the original MDP,
lambda = 1 is one step of policy improvement on pi_b. The variance side: an error e in V_hat_{h+1}
enters Q_h multiplied by (1 - lambda), so stage errors add up with weights (1 - lambda)^k rather
than 1 -- the "reduced complexity" (effective horizon ~ 1/lambda instead of H).

Lambda. ``lam`` is a constant in [0, 1], or ``lam_schedule="return"``: per trajectory
``lambda_tau = lam (G_tau - G_min) / (G_max - G_min)`` over the seed's episodes (1 for all when
the returns are equal), so higher-return trajectories lean more on their heuristic [M: the
abstract's rule in its simplest monotone form; the paper's exact lambda formula was not read].

Deviations: finite horizon (the paper's relabelling is discounted; gamma = 1 here, the same
algebra); tabular bases only.

Pitfall, with its error: forgetting the continuation factor (relabelling rewards but bootstrapping
with weight 1, ``y = r + lambda G + V_hat``) counts the future lambda + 1 times; it is registered
as the mutation ``hubl-continuation-kept`` and its values exceed H (tests/test_hubl.py).
"""

from __future__ import annotations

import math
import time

import numpy as np

from theorylab.algorithms.offline.dataset import InvalidDatasetError, OfflineDataset
from theorylab.algorithms.offline.empirical import require_data, stage_blocks
from theorylab.algorithms.offline.result import OfflineResult, greedy, value_at_start
from theorylab.algorithms.offline.trajectory_weighting import episodes

PENALTIES = ("none", "hoeffding")
LAMBDA_SCHEDULES = ("constant", "return")


def reward_to_go(rewards: np.ndarray) -> np.ndarray:
    """``G (B, K, H)``: ``G[..., h] = rewards[..., h:].sum()``; rewards ``(B, K, H)``."""
    return np.flip(np.cumsum(np.flip(rewards, axis=-1), axis=-1), axis=-1)


def trajectory_lambdas(returns: np.ndarray, lam: float, schedule: str) -> np.ndarray:
    """``lambda (B, K)`` per trajectory from the episode returns ``(B, K)`` (module docstring)."""
    if schedule == "constant":
        return np.full(returns.shape, lam)
    lo = returns.min(axis=1, keepdims=True)
    span = returns.max(axis=1, keepdims=True) - lo
    scaled = np.where(span > 0, (returns - lo) / np.where(span > 0, span, 1.0), 1.0)
    return lam * scaled


def relabel(
    dataset: OfflineDataset, lam: float, schedule: str = "constant"
) -> tuple[np.ndarray, np.ndarray]:
    """HUBL's relabelling of trajectory data: ``(rewards~, continuation)``, each ``(B, N)`` in the
    dataset's row order: ``r~ = r + lambda_tau G_{h+1}`` and ``1 - lambda_tau``."""
    _, _, r, _ = episodes(dataset)  # (B, K, H)
    B, K, H = r.shape
    G = reward_to_go(r)  # (B, K, H)
    G_next = np.concatenate([G[:, :, 1:], np.zeros((B, K, 1))], axis=2)  # (B, K, H)
    lam_tau = trajectory_lambdas(G[:, :, 0], lam, schedule)[:, :, None]  # (B, K, 1)
    r_tilde = r + lam_tau * G_next
    cont = np.broadcast_to(1.0 - lam_tau, r.shape)
    return r_tilde.reshape(B, K * H), np.ascontiguousarray(cont).reshape(B, K * H)


def _check(dataset, lam, penalty, schedule, delta, c_h) -> None:
    if dataset.horizon is None or dataset.kind != "trajectories":
        raise InvalidDatasetError(
            "hubl needs finite-horizon trajectory data (its heuristic is each episode's "
            f"reward-to-go), got kind={dataset.kind!r}, horizon={dataset.horizon}"
        )
    if not (isinstance(lam, (int, float)) and 0.0 <= lam <= 1.0):
        raise ValueError(f"hubl: lam must lie in [0, 1], got {lam!r}")
    if penalty not in PENALTIES:
        raise ValueError(f"hubl: penalty must be one of {PENALTIES}, got {penalty!r}")
    if schedule not in LAMBDA_SCHEDULES:
        raise ValueError(f"hubl: lam_schedule must be one of {LAMBDA_SCHEDULES}, got {schedule!r}")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"hubl: delta must lie in (0, 1), got {delta}")
    if not (c_h >= 0 and math.isfinite(c_h)):
        raise ValueError(f"hubl: c_h must be finite and >= 0, got {c_h}")


def hubl(
    dataset: OfflineDataset,
    *,
    lam: float = 0.5,
    penalty: str = "none",
    lam_schedule: str = "constant",
    delta: float = 0.1,
    c_h: float = 1.0,
) -> OfflineResult:
    """HUBL on a finite-horizon trajectory dataset (module docstring).

    Per stage h = H-1..0, per sample i at (h, s, a): ``y_i = r~_i + c_i V_hat_{h+1}(s'_i)`` with
    ``(r~, c)`` from :func:`relabel`; ``Q_hat_h(s, a) = mean_i y_i - b_h(s, a)`` (b = 0, or the
    Hoeffding width of ``pessimistic-vi-hoeffding`` with the floor at 0). Returns policy
    ``(B, H, S)``, V ``(B, H+1, S)``, Q ``(B, H, S, A)``.
    """
    _check(dataset, lam, penalty, lam_schedule, delta, c_h)
    require_data(dataset, "hubl")
    t0 = time.perf_counter()
    B, S, A, H = dataset.n_seeds, dataset.S, dataset.A, dataset.horizon
    r_tilde, cont = relabel(dataset, float(lam), lam_schedule)  # (B, N) each
    L = np.log(np.maximum(dataset.total_weight, 1.0) * H / delta)[:, None, None]  # (B, 1, 1)
    blocks = stage_blocks(dataset)
    V = np.zeros((B, H + 1, S))
    Q = np.empty((B, H, S, A))
    for h in range(H - 1, -1, -1):
        blk = blocks[h]
        rows = dataset.stages[0] == h  # stage-h rows (the same positions in every seed)
        n = blk.counts()  # (B, S, A)
        y = r_tilde[:, rows].reshape(-1) + cont[:, rows].reshape(-1) * blk.next_values(
            V[:, h + 1]
        )  # (B * n_h,) the blended targets, in the block's (seed-major) order
        Q[:, h] = blk.means(y, n)
        if penalty == "hoeffding":
            b = np.minimum(c_h * H * np.sqrt(L / np.maximum(n, 1.0)), H)
            Q[:, h] = np.maximum(Q[:, h] - np.where(n > 0, b, float(H)), 0.0)
        V[:, h] = Q[:, h].max(axis=-1)
    return OfflineResult(
        algorithm="hubl",
        policy=greedy(Q),
        value_estimate=value_at_start(V[:, 0], dataset.mu0),
        V=V,
        Q=Q,
        pessimistic=penalty == "hoeffding",
        params={
            "lam": float(lam),
            "penalty": penalty,
            "lam_schedule": lam_schedule,
            "delta": delta,
            "c_h": c_h,
        },  # fmt: skip
        info={"seconds": time.perf_counter() - t0},
    )


def reshaped_q(mdp, behaviour: np.ndarray, lam: float) -> np.ndarray:
    """``Q~ (H, S, A)`` of the reshaped MDP HUBL solves with infinite data from ``behaviour``
    ``(H, S, A)`` (module docstring), by exact backward induction on the true model."""
    H = mdp.horizon
    v_b = np.zeros(mdp.S)  # V^{pi_b}_{h+1}
    v_t = np.zeros(mdp.S)  # max_a Q~_{h+1}
    Q = np.empty((H, mdp.S, mdp.A))
    for h in range(H - 1, -1, -1):
        r = np.asarray(mdp.reward(h), dtype=float)  # (S, A)
        Q[h] = r + mdp.expected_next(lam * v_b + (1.0 - lam) * v_t, h)
        v_b = np.einsum("sa,sa->s", behaviour[h], r + mdp.expected_next(v_b, h))
        v_t = Q[h].max(axis=-1)
    return Q


__all__ = ["hubl", "relabel", "reshaped_q", "reward_to_go", "trajectory_lambdas"]
