r"""The reasoning-boundary paradox: on-policy RLVR with shared parameters raises pass@1 while the
pass@k of initially unlikely prompts falls (negative interference, winner-take-all).

Seed row ``seed-catalogue-002-004.md#G3``: "The Reasoning Boundary Paradox: How Reinforcement
Learning Constrains Language Models" (2025). An analysis paper. What was read [V] (the abstract,
through the catalogue row): the shrinkage of pass@k under RLVR "arises from the inherent on-policy
sampling in standard RL objectives"; "negative interference in RLVR, where learning to solve
certain training problems actively reduces the likelihood of correct solutions for others";
"winner-take-all": RLVR "disproportionately reinforces problems with high likelihood, correct
solutions, under the base model, while suppressing other initially low-likelihood ones"; a
data-curation algorithm focused on low-likelihood problems. Reconstructed [A] (the catalogue's
proposed testbed; the paper's model and constants were not read):

* a log-linear policy over (prompt, answer) pairs, ``pi(y|x) = softmax_y(b[x, y] + phi(x, y) .
  theta)``, with fixed base logits b (the base model, theta_0 = 0) and either *shared* features
  ``phi(x, y) = e_y`` (one parameter per answer, shared by every prompt: the interference) or
  *tabular* ones ``phi(x, y) = e_(x, y)`` (none); one correct answer per prompt (``correct=1``);
* exact on-policy policy gradient on the (weighted) mean accuracy,
  ``grad = sum_x w_x sum_y pi(y|x) (c(x, y) - acc_x) phi(x, y)``, step eta, K steps;
  ``w_x = 1/P`` (standard RLVR) or ``w_x ∝ 1/acc_0(x)`` (the re-weighting toward
  low-likelihood prompts);
* pass@k = 1 - (1 - acc_x)^k exactly.

Algorithm ``rlvr-shared-pg``: the run on an ``answer-bandit``
(:class:`~theorylab.mdps.answer_bandit.AnswerBandit`; objective = mean accuracy = pass@1,
regularised = mean pass@k at ``k``).

Measured (claim ``rlvr-interference-pass-at-k``; answer-bandit P = 8, A = 6, scale 2, seeds
0..5, step 1, K = 200): mean pass@1 rises on every step, while the largest pass@64 drop among
the three initially least likely prompts is 0.33 to 0.87 with shared features, 0 with tabular
ones; re-weighting by 1/acc_0 cuts it to 0 on four seeds of six (0.53 and 0.77 on the others).
Over 16 seeds (K = 400) the mean drop is 0.676 standard vs 0.458 re-weighted: the re-weighting
helps on average, not on every instance (several seeds lose as much or more).
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax as _log_softmax

from theorylab.algorithms.planning.kl_policy_gradient import sequence_entropy
from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
)
from theorylab.algorithms.registry import register
from theorylab.mdps.answer_bandit import AnswerBandit


def features(P: int, A: int, shared: bool) -> np.ndarray:
    """(P, A, d): answer identity e_y (shared, d = A) or one per pair e_(x, y) (d = P A)."""
    if shared:
        return np.broadcast_to(np.eye(A), (P, A, A)).copy()
    return np.eye(P * A).reshape(P, A, P * A)


def accuracy(inst: AnswerBandit, theta: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """(P,) pi(correct | x)."""
    return inst.accuracy(_log_softmax(inst.base_logits + phi @ theta, axis=1))


def shared_pg(
    inst: AnswerBandit,
    iterations: int,
    *,
    shared: bool = True,
    reweight: bool = False,
    step: float = 1.0,
    k: int = 64,
) -> PolicyPath:
    """K exact on-policy gradient steps on the (re)weighted mean accuracy (module docstring)."""
    if not isinstance(inst, AnswerBandit):
        raise ValueError(
            "rlvr-shared-pg runs on an answer-bandit (e.g. answer-bandit:P=8,A=6), got "
            f"{type(inst).__name__}"
        )
    iterations = check_iterations("rlvr-shared-pg", iterations)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"rlvr-shared-pg: k must be a positive integer, got {k!r}")
    step = check_number("rlvr-shared-pg", "step", step)
    P, A = inst.base_logits.shape
    phi = features(P, A, shared)  # (P, A, d)
    onehot = inst.correct.astype(np.float64)  # (P, A)
    theta = np.zeros(phi.shape[-1])
    acc0 = accuracy(inst, theta, phi)
    w = (1.0 / acc0) / (1.0 / acc0).sum() if reweight else np.full(P, 1.0 / P)
    logps = []
    for t in range(int(iterations) + 1):
        logp = _log_softmax(inst.base_logits + phi @ theta, axis=1)  # (P, A)
        logps.append(logp)
        if t == iterations:
            break
        pi = np.exp(logp)
        acc = (pi * onehot).sum(1)
        theta = theta + step * np.einsum("x,xa,xad->d", w, pi * (onehot - acc[:, None]), phi)
    logps = np.stack(logps)  # (K+1, P, A)
    acc = inst.accuracy(logps)  # (K+1, P)
    K1 = logps.shape[0]
    return PolicyPath(
        objective=acc.mean(-1),
        regularised=(1.0 - (1.0 - acc) ** k).mean(-1),
        entropy=sequence_entropy(logps.reshape(-1, A)).reshape(K1, P).mean(-1),
        target_gap=np.full(K1, np.nan),
        target_value=float("nan"),
        policies=logps,
        config={"shared": shared, "reweight": reweight, "step": float(step), "k": int(k)},
    )


@register(
    "rlvr-shared-pg", kind="policy-optimization", problem="answer-bandit", papers=("002-004#G3",)
)
def rlvr_shared_pg(problem, iterations, shared=True, reweight=False, step=1.0, k=64):
    """Exact on-policy PG over (prompt, answer) pairs with shared or tabular features."""
    return shared_pg(problem, iterations, shared=shared, reweight=reweight, step=step, k=k)
