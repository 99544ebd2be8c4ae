r"""RLCR: RL with a calibration reward (correctness plus a Brier term) on a calibration bandit,
by exact softmax policy gradient.

Seed reference: ``seed-catalogue-002-004.md#B6``. Paper: Damani, Puri, Slocum, Shenfeld,
Choshen, Kim, Andreas, "Beyond Binary Rewards: Training LMs to Reason About Their Uncertainty",
2025 (arXiv:2507.16806). Card: docs/algorithms/rlcr.md.

What was read [V]: the abstract as quoted in the catalogue row (a reward that "augments a binary
correctness score with a Brier score"; "this reward function (or any analogous reward function
that uses a bounded, proper scoring rule) yields models whose predictions are both accurate and
well-calibrated"). Reconstructed [A]: the combination R(y, q) = 1[c] - (q - 1[c])^2 (the
catalogue's example; the paper's exact form was not read), a tabular policy over (answer,
confidence level) per prompt, and the correctness of answer y a Bernoulli(p[x, y]).

Exact expected reward: E R = p - p (1 - q)^2 - (1 - p) q^2 = p - p (1 - p) - (q - p)^2,
maximised over q at q = p (properness) with value p^2, increasing in p: the best answer is still
the most likely correct one (accuracy is not traded). On a grid of levels the optimum reports the
level nearest p.
With the binary reward alone (``brier=False``) the gradient in the confidence is 0: the reported
confidence stays where it started (uniform), uncalibrated.

Registered ``rlcr-pg`` (kind ``policy-optimization``, problem ``calibration-bandit``): K exact
softmax policy-gradient steps theta += step * pi (R - E_pi R) per prompt from uniform logits.
PolicyPath: ``objective`` = accuracy E_pi p, ``regularised`` = the expected RLCR reward,
``target_gap`` = KL(pi_k || the enumerated optimum), a point mass on (argmax_y p, the level
nearest p) per prompt, i.e. -log pi_k(optimum), and ``target_value`` its reward.
"""

from __future__ import annotations

import numpy as np

from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
)
from theorylab.algorithms.registry import register
from theorylab.mdps.calibration_bandit import CalibrationBandit, brier_reward


def reward_table(inst: CalibrationBandit, brier: bool = True) -> np.ndarray:
    """(P, A, M) the exact expected reward of every (answer, level) per prompt."""
    return brier_reward(inst.p[:, :, None], inst.levels[None, None, :], brier)


def optimum(inst: CalibrationBandit) -> np.ndarray:
    """(P, 2) the (answer, level) maximising the RLCR reward per prompt, by enumeration."""
    R = reward_table(inst).reshape(inst.p.shape[0], -1)
    return np.stack(np.unravel_index(R.argmax(1), (inst.p.shape[1], inst.M)), axis=1)


def _entropy(pi: np.ndarray) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(-np.where(pi > 0, pi * np.log(pi), 0.0).sum((1, 2)).mean())


@register(
    "rlcr-pg", kind="policy-optimization", problem="calibration-bandit", papers=("002-004#B6",)
)
def rlcr_pg(problem, iterations, step: float = 5.0, brier: bool = True) -> PolicyPath:
    """Exact softmax PG on the RLCR reward (``brier=False``: the binary correctness reward)."""
    if not isinstance(problem, CalibrationBandit):
        raise ValueError(
            "rlcr-pg runs on a calibration-bandit (e.g. calibration-bandit:P=4,A=3,M=11), got "
            f"{type(problem).__name__}"
        )
    K = check_iterations("rlcr-pg", iterations)
    step = check_number("rlcr-pg", "step", step)
    if not isinstance(brier, bool):
        raise ValueError(f"rlcr-pg: brier must be True or False, got {brier!r}")
    P, A, M = problem.p.shape[0], problem.p.shape[1], problem.M
    R = reward_table(problem, brier)  # (P, A, M)
    Rt = reward_table(problem, True)
    opt = optimum(problem)
    theta = np.zeros((P, A, M))
    rows = np.arange(P)
    acc, reg, ent, gap, logps = [], [], [], [], []
    for k in range(K + 1):
        z = theta.reshape(P, -1)
        logp = (z - z.max(1, keepdims=True)).reshape(P, A, M)
        logp = logp - np.log(np.exp(logp).sum((1, 2), keepdims=True))
        pi = np.exp(logp)
        logps.append(logp)
        acc.append(float((pi.sum(2) * problem.p).sum(1).mean()))
        reg.append(float((pi * Rt).sum((1, 2)).mean()))
        ent.append(_entropy(pi))
        gap.append(float(-logp[rows, opt[:, 0], opt[:, 1]].mean()))
        if k == K:
            break
        v = (pi * R).sum((1, 2), keepdims=True)
        theta = theta + step * pi * (R - v)
    target = float(Rt[rows, opt[:, 0], opt[:, 1]].mean())
    return PolicyPath(
        objective=np.array(acc),
        regularised=np.array(reg),
        entropy=np.array(ent),
        target_gap=np.array(gap),
        target_value=target,
        policies=np.stack(logps),
        config={"step": step, "brier": brier},
    )
