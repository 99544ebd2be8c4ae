"""Predicted fixed points of the tabular twins on a token tree (numpy, no torch).

A twin is a logit-table policy pi(a | x, h) trained with one loss's exact expected update. Each
loss's expected update is known in closed form (policy_gradient_losses' module docstring; checked
by enumerating groups in tests/test_deep_twins.py), so its stationary points are too. Writing
Q(h, a) = E_pi[r | h, a] (the reward alone) and V(h) = sum_a pi(a|h) Q(h, a), and kappa for the
advantage's multiplier of grad J, the stationarity condition holds node by node (the visit
probability d(h) > 0 multiplies both terms and cancels):

* KL(pi||ref) over the whole sequence (RLOO: the KL folded into the reward; DPO with BT labels):
  the soft-Bellman optimum pi*_beta (:meth:`TokenTreeTask.soft_optimum`).
* k3 in the loss (GRPO, Dr. GRPO): kappa pi (Q - V) = beta (pi - ref) at every node, i.e.
  pi(a|h) = ref(a|h) / (1 - (kappa/beta)(Q(h,a) - V(h)))  -- a forward-KL point, solved per node
  for V(h) by bisection and backwards from the leaves (Q at a node depends only on its subtree).
* k2 in the loss (group mean, Dr. GRPO's advantage): kappa pi (Q - V) = beta pi (log pi/ref - KL_h),
  i.e. pi(a|h) ∝ ref(a|h) exp(kappa Q(h,a)/beta): with L = 1 this is pi*_{beta/kappa}, the
  KL optimum at the effective temperature beta G/(G-1); with L > 1 it ignores the downstream KL
  (a "myopic" point that differs from pi*).
* kappa: (G-1)/G for the group mean (Dr. GRPO); for GRPO's std normalisation with 0/1 rewards
  kappa(p) = E[A_i 1{r_i = 1}] / (p(1-p)) with p = P(correct) under the fixed point itself, so
  the fixed point solves a scalar equation per prompt.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from theorylab.mdps.token_tree import TokenTreeTask

BISECTION_STEPS = 200


def grpo_kappa(p: np.ndarray, G: int, eps: float = 1e-4) -> np.ndarray:
    """GRPO's multiplier of grad J for 0/1 rewards at success probability p (any shape): the
    expected std-normalised advantage of a success, E[A_i 1{r_i=1}], over p(1-p), summing the
    binomial number of successes among the G-1 other responses (std with n-1, plus eps)."""
    p = np.asarray(p, dtype=np.float64)
    total = np.zeros_like(p)
    for k in range(1, G + 1):
        prob = math.comb(G - 1, k - 1) * p**k * (1 - p) ** (G - k)
        mean = k / G
        sd = math.sqrt((k * (1 - mean) ** 2 + (G - k) * mean**2) / (G - 1))
        total += prob * (1 - mean) / (sd + eps)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((p > 0) & (p < 1), total / (p * (1 - p)), np.nan)


def node_recursion(task: TokenTreeTask, kappa: np.ndarray, beta: float, kl: str) -> np.ndarray:
    """The per-node fixed point (P, N, V) conditional log-probabilities for ``kl`` in
    {"k3", "k2"} with multiplier ``kappa`` (P,) (module docstring), solved from the leaves up."""
    P, V = task.n_prompts, task.V
    c = (np.asarray(kappa, dtype=np.float64) / beta).reshape(P, 1, 1)
    log_ref = np.log(task.ref_cond)
    cond = np.empty((P, task.n_nodes, V))
    values = task.mean_reward  # (P, V^L) Q at the leaves
    for t in range(task.L - 1, -1, -1):
        lo, hi = task.level_offset(t), task.level_offset(t + 1)
        Q = values.reshape(P, V**t, V)
        ref = task.ref_cond[:, lo:hi, :]
        if kl == "k2":
            logits = log_ref[:, lo:hi, :] + c * Q
            lp = logits - logsumexp(logits, axis=-1, keepdims=True)
        elif kl == "k3":
            qmax = Q.max(axis=-1, keepdims=True)
            a, b = qmax - 1.0 / c, qmax  # f(V) = sum ref / (1 - c(Q - V)) - 1 decreases on (a, b]
            for _ in range(BISECTION_STEPS):
                mid = 0.5 * (a + b)
                f = (ref / (1.0 - c * (Q - mid))).sum(axis=-1, keepdims=True) - 1.0
                a, b = np.where(f > 0, mid, a), np.where(f > 0, b, mid)
            pi = ref / (1.0 - c * (Q - b))
            lp = np.log(pi / pi.sum(axis=-1, keepdims=True))
        else:
            raise ValueError(f"kl must be 'k3' or 'k2', got {kl!r}")
        cond[:, lo:hi, :] = lp
        values = (np.exp(lp) * Q).sum(axis=-1)  # V(h) = Q at the parent
    return cond


def grpo_fixed_point(task: TokenTreeTask, beta: float, G: int, eps: float = 1e-4) -> np.ndarray:
    """GRPO (std-normalised advantage, k3 in the loss) on 0/1 rewards: the conditional table
    (P, N, V) whose kappa(p) is its own. Solved per prompt by bisection on kappa."""
    if not np.isin(task.mean_reward, (0.0, 1.0)).all():
        raise ValueError("GRPO's fixed point is predicted for 0/1 rewards only (kappa(p))")
    P = task.n_prompts
    lo = np.full(P, 1e-6)
    hi = np.full(P, 1e3)

    def gap(kappa):
        cond = node_recursion(task, kappa, beta, "k3")
        p = task.accuracy(task.sequence_logprobs(cond))
        return kappa - grpo_kappa(p, G, eps)

    for _ in range(100):
        mid = np.sqrt(lo * hi)
        g = gap(mid)
        lo, hi = np.where(g < 0, mid, lo), np.where(g < 0, hi, mid)
    return node_recursion(task, np.sqrt(lo * hi), beta, "k3")


def ipo_optimum(task: TokenTreeTask, tau: float) -> np.ndarray:
    """IPO's population minimiser (P, Y) for pairs from ref x ref with Bradley-Terry labels:
    log ref(y) + p(y > ref)/tau - log Z, p(y > ref) = sum_y' ref(y') sigmoid(r(y) - r(y'))."""
    r = task.mean_reward
    ref = task.ref_logprobs
    pref = 1.0 / (1.0 + np.exp(-(r[:, :, None] - r[:, None, :])))  # (P, Y, Y)
    p_beats = (pref * np.exp(ref)[:, None, :]).sum(axis=-1)
    logits = ref + p_beats / tau
    return logits - logsumexp(logits, axis=1, keepdims=True)


def chipo_optimum(task: TokenTreeTask, beta: float) -> np.ndarray:
    """chi-PO's population minimiser (P, Y) for pairs from ref x ref with Bradley-Terry labels
    (the clip inactive, 2R >= the reward range): beta (z + log z) = r - lambda(x), z = pi/ref,
    i.e. pi = ref W(exp((r - lambda)/beta)) with W the Lambert function and lambda(x) set by
    bisection so that pi sums to 1 (the mixed chi^2 + KL regularised optimum, Huang et al. 2025)."""
    from scipy.special import lambertw

    r = task.mean_reward
    ref = np.exp(task.ref_logprobs)

    def pi_of(lam):
        return ref * np.real(lambertw(np.exp((r - lam[:, None]) / beta)))

    lo = r.min(axis=1) - 50.0 * beta - 1.0  # sum pi > 1 here
    hi = r.max(axis=1) + 1.0  # z + log z = c < 1 -> z < 1 everywhere: sum pi < 1
    for _ in range(BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        over = pi_of(mid).sum(axis=1) > 1.0
        lo, hi = np.where(over, mid, lo), np.where(over, hi, mid)
    pi = pi_of(0.5 * (lo + hi))
    return np.log(pi / pi.sum(axis=1, keepdims=True))
