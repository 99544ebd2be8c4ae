r"""The invisible leash: RLVR by KL-regularised (or plain) mirror-descent steps never leaves the
base model's support.

Seed row ``seed-catalogue-000.md#60``: F. Wu, W. Xuan, X. Lu, Z. Harchaoui, Y. Choi, "The
Invisible Leash: Why RLVR May Not Escape Its Origin", arXiv:2507.14843 (2025). An analysis paper.
What was read [V] (the abstract, through the catalogue row): "RLVR is constrained by the base
model's support-unable to sample solutions with zero initial probability-and operates as a
conservative reweighting mechanism"; "We also identify an entropy-reward tradeoff". The paper's
theorem statements and constants were not read; the update below is the standard exact step of
KL-regularised policy mirror descent on the response simplex (Lan 2022; Tomar et al. 2022 [M]),
which is what natural policy gradient with a tabular softmax does [A]:

    log pi_{t+1} = (log pi_t + eta r + eta beta log pi_0) / (1 + eta beta) - log Z_t

per prompt, on the (P, Y) table of sequence log-probabilities, with pi_0 the base model (also the
KL reference). Every term is -inf where pi_t or pi_0 is 0, so ``supp(pi_{t+1}) = supp(pi_t) and
supp(pi_0)``: by induction supp(pi_t) = supp(pi_0) for every t, and pass@k(pi_t) <= 1{supp(pi_0)
holds a correct response} for every k. beta > 0: pi_t -> pi_0 e^(r/beta) / Z (the fixed point of
the step); beta = 0: multiplicative weights, pi_t -> pi_0 restricted to its best responses.

The base model (constructed here): the task's reference policy with one token removed from its
vocabulary (``banned_token``, default V - 1): every response that writes it has probability 0,
and a prompt whose correct responses all need it is one the base model -- and RLVR from it --
cannot solve.

Algorithm ``rlvr-md``: K such steps from pi_0 (eta = ``step``), scored exactly (objective = mean
accuracy, regularised = E r - beta KL(pi || pi_0), target = the fixed point for beta > 0).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from theorylab.algorithms.planning.divergence_optima import reverse_kl_optimum
from theorylab.algorithms.planning.kl_policy_gradient import sequence_entropy
from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
)
from theorylab.algorithms.registry import register
from theorylab.mdps.token_tree import TokenTreeTask


def base_model(task: TokenTreeTask, banned_token: int) -> np.ndarray:
    """(P, Y) log pi_0: the task's reference with ``banned_token`` removed (renormalised)."""
    if isinstance(banned_token, bool) or not isinstance(banned_token, (int, np.integer)):
        raise ValueError(f"rlvr-md: banned_token must be an integer, got {banned_token!r}")
    if not 0 <= banned_token < task.V:
        raise ValueError(f"rlvr-md: banned_token must be in 0..{task.V - 1}, got {banned_token}")
    writes = (task.tokens == banned_token).any(axis=1)  # (Y,)
    logp = np.where(writes[None, :], -np.inf, task.ref_logprobs)
    return logp - logsumexp(logp, axis=1, keepdims=True)


def md_step(logp: np.ndarray, base: np.ndarray, reward: np.ndarray, eta: float, beta: float):
    """One exact KL-regularised mirror-descent step on (P, Y) log-probability tables."""
    with np.errstate(invalid="ignore"):
        z = (logp + eta * reward + eta * beta * base) / (1.0 + eta * beta)
    z = np.where(np.isneginf(logp) | np.isneginf(base), -np.inf, z)
    return z - logsumexp(z, axis=1, keepdims=True)


def coverage(task: TokenTreeTask, logp: np.ndarray) -> np.ndarray:
    """(P,) pass@infinity: 1 when the policy's support holds a correct response."""
    return (task.correct & (np.exp(logp) > 0)).any(axis=1).astype(np.float64)


def pass_at_k(task: TokenTreeTask, logp: np.ndarray, k: int) -> np.ndarray:
    """(P,) 1 - (1 - acc)^k, exactly (acc summed over the support, so 0 stays 0)."""
    acc = (np.exp(logp) * task.correct).sum(axis=1)
    return 1.0 - (1.0 - acc) ** k


def rlvr_mirror_descent(
    task: TokenTreeTask,
    iterations: int,
    *,
    beta: float = 0.0,
    step: float = 1.0,
    banned_token: int | None = None,
) -> PolicyPath:
    """K mirror-descent steps from the base model (module docstring)."""
    if not isinstance(task, TokenTreeTask):
        raise ValueError(f"rlvr-md runs on a token-tree task, got {type(task).__name__}")
    K = check_iterations("rlvr-md", iterations)
    beta = check_number("rlvr-md", "beta", beta, positive=False)
    step = check_number("rlvr-md", "step", step)
    base = base_model(task, task.V - 1 if banned_token is None else banned_token)
    r = task.mean_reward
    logp = base
    seqs = [base]
    for _ in range(K):
        logp = md_step(logp, base, r, step, beta)
        seqs.append(logp)
    seqs = np.stack(seqs)  # (K+1, P, Y)
    probs = np.exp(seqs)
    with np.errstate(invalid="ignore"):
        kl = np.where(probs > 0, probs * np.nan_to_num(seqs - base), 0.0).sum(-1).mean(-1)
    K1 = seqs.shape[0]
    if beta > 0:
        on = np.isfinite(base)
        star = reverse_kl_optimum(np.where(on, base, -1e300), np.where(on, r, 0.0), beta)
        star = np.where(on, star, -np.inf)
        with np.errstate(invalid="ignore"):
            gap = np.where(probs > 0, probs * np.nan_to_num(seqs - star), 0.0).sum(-1).mean(-1)
        p_star = np.exp(star)
        log_ratio = np.where(on, star - np.where(on, base, 0.0), 0.0)
        target = float(((p_star * r).sum(1) - beta * (p_star * log_ratio).sum(1)).mean())
    else:
        gap, target = np.full(K1, np.nan), float("nan")
    return PolicyPath(
        objective=(probs * task.correct).sum(-1).mean(-1),
        regularised=(probs * r).sum(-1).mean(-1) - beta * kl,
        entropy=sequence_entropy(seqs.reshape(-1, seqs.shape[-1])).reshape(K1, -1).mean(-1),
        target_gap=gap,
        target_value=target,
        policies=seqs,
        config={"beta": float(beta), "step": float(step), "banned_token": banned_token},
    )


@register("rlvr-md", kind="policy-optimization", problem="token-tree", papers=("000#60",))
def rlvr_md(problem, iterations, beta: float = 0.0, step: float = 1.0, banned_token=None):
    """RLVR as exact (KL-regularised) mirror descent from a base model with a banned token."""
    return rlvr_mirror_descent(problem, iterations, beta=beta, step=step, banned_token=banned_token)
