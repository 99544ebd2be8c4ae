r"""Best-of-N against the KL-constrained optimum (the tilted distribution), exactly.

Seed row ``seed-catalogue-000.md#64``: J. Q. Yang, S. Salamatian, Z. Sun, A. T. Suresh,
A. Beirami, "Asymptotics of Language Model Alignment", arXiv:2404.01730 (2024).

What was read [V] (the abstract, through the stored arXiv text): KL-constrained RL chooses
phi_Delta maximising E_phi r subject to KL(phi || p) <= Delta, and the paper gives its closed
form (the tilted distribution phi_lambda ∝ p e^{lambda r}, lambda set by the budget); any method
with a comparable (KL, reward) trade-off must be close to it in relative entropy; under a
memoryless p and a linear reward, best-of-N is asymptotically (in the sequence length n)
equivalent to the KL-constrained solution: "their expected rewards are asymptotically equal"
and the KL between them is "vanishingly small". Not read: the theorems' exact scalings
(N = e^{n delta} here) and constants [A].

Exact objects (:class:`theorylab.mdps.memoryless_lm.MemorylessLM`; every quantity lives on the
reward levels R = 0..n m):

* the tilted distribution q_lambda(R) ∝ p_R e^{lambda R}; the frontier
  ``F(Delta) = E_{q_lambda} R`` with ``KL(q_lambda || p_R) = Delta`` (lambda by bisection);
* best-of-N, ties broken uniformly: ``P_N(R) = Fp(R)^N - Fp(R-)^N`` with Fp the CDF of R under
  p (the chosen response is distributed as p within its level);
* KL(BoN_N || p) = KL(P_N || p_R) and KL(BoN_N || phi_lambda) = KL(P_N || q_lambda).

Algorithm (``best-of-n``, kind ``policy-optimization``): the ladder N = 2^k, k = 0..K, each
rung scored exactly: objective = E r of BoN_N; regularised = the frontier F(KL(BoN_N || p)), the
best reward any policy achieves at that KL; target_gap = KL(BoN_N || phi_lambda) for the lambda
with the same KL; entropy not computed (NaN).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq
from scipy.special import logsumexp

from theorylab.algorithms.policy_optimization.path import PolicyPath
from theorylab.algorithms.registry import register
from theorylab.mdps.memoryless_lm import MemorylessLM

PAPERS = ("000#64",)


def kl_levels(q: np.ndarray, p: np.ndarray) -> float:
    """KL(q || p) of two level distributions (0 log 0 = 0; q must vanish where p does)."""
    on = q > 0
    with np.errstate(divide="ignore"):  # q > 0 where p = 0: KL = inf
        return float(np.sum(q[on] * (np.log(q[on]) - np.log(p[on]))))


def tilted_levels(lm: MemorylessLM, lam: float) -> np.ndarray:
    """q_lambda (L,) ∝ p_R e^{lambda R}."""
    p = lm.level_distribution()
    with np.errstate(divide="ignore"):
        logits = np.log(p) + lam * lm.levels
    return np.exp(logits - logsumexp(logits))


def tilted_kl(lm: MemorylessLM, lam: float) -> float:
    """KL(q_lambda || p_R)."""
    return kl_levels(tilted_levels(lm, lam), lm.level_distribution())


def frontier(lm: MemorylessLM, budget: float) -> tuple[float, float]:
    """(lambda, F(budget)): the largest expected reward at KL(. || p) <= budget, by the tilt."""
    p = lm.level_distribution()
    top = np.flatnonzero(p > 0)[-1]
    if budget >= -np.log(p[top]):  # the point mass on the top level fits the budget
        return np.inf, float(lm.levels[top])
    if budget <= 1e-14:  # within rounding of KL(p || p) = 0: the reference itself
        return 0.0, float(p @ lm.levels)
    hi = 1.0
    while tilted_kl(lm, hi) < budget:
        hi *= 2.0
    lam = brentq(lambda x: tilted_kl(lm, x) - budget, 0.0, hi, xtol=1e-14, rtol=1e-14)
    return float(lam), float(tilted_levels(lm, lam) @ lm.levels)


def best_of_n_levels(lm: MemorylessLM, N: int) -> np.ndarray:
    """P_N (L,): the reward-level law of the best of N i.i.d. draws from p.

    Computed from the upper tails t(R) = Pr_p(r >= R) (summed from the top, so tiny tails keep
    their digits): Fp(R)^N = exp(N log1p(-t(R+1))), and the difference of the two powers as
    exp(a) (-expm1(b - a)) -- a CDF rounded to 1 would lose the top levels' mass at large N."""
    p = lm.level_distribution()
    tail = np.cumsum(p[::-1])[::-1]  # t(R) = Pr(r >= R)
    t_next = np.concatenate([tail[1:], [0.0]])  # t(R + 1)
    with np.errstate(divide="ignore", invalid="ignore"):  # log 0 at the bottom level
        a = N * np.log1p(-np.minimum(t_next, 1.0))  # log Fp(R)^N
        b = N * np.log1p(-np.minimum(tail, 1.0))  # log Fp(R-)^N
        out = np.exp(a) * -np.expm1(np.where(np.isfinite(a), b - a, -np.inf))
    return np.clip(np.where(p > 0, out, 0.0), 0.0, None)


def best_of_n_ladder(lm: MemorylessLM, iterations: int) -> PolicyPath:
    """BoN at N = 2^k, k = 0..K, scored against the tilted frontier (module docstring)."""
    if not isinstance(lm, MemorylessLM):
        raise ValueError(
            f"best-of-n runs on a memoryless LM (e.g. memoryless-lm:V=3,n=20), got "
            f"{type(lm).__name__}"
        )
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)):
        raise ValueError(f"best-of-n: iterations must be a positive integer, got {iterations!r}")
    if not 1 <= iterations <= 60:
        raise ValueError(f"best-of-n: iterations must be in 1..60 (N = 2^K), got {iterations!r}")
    p = lm.level_distribution()
    rewards, frontiers, gaps, kls = [], [], [], []
    for k in range(int(iterations) + 1):
        q = best_of_n_levels(lm, 2**k)
        kl = kl_levels(q, p)
        lam, best = frontier(lm, kl)
        tilt = tilted_levels(lm, lam) if np.isfinite(lam) else q
        rewards.append(float(q @ lm.levels))
        frontiers.append(best)
        gaps.append(kl_levels(q, tilt))
        kls.append(kl)
    K1 = int(iterations) + 1
    return PolicyPath(
        objective=np.array(rewards),
        regularised=np.array(frontiers),
        entropy=np.full(K1, np.nan),
        target_gap=np.array(gaps),
        target_value=float(lm.levels[np.flatnonzero(p > 0)[-1]]),
        policies=np.stack([best_of_n_levels(lm, 2**k) for k in range(K1)]),
        config={"N": [2**k for k in range(K1)], "kl_to_p": kls, "n": int(lm.n)},
    )


@register("best-of-n", kind="policy-optimization", problem="memoryless-lm", papers=PAPERS)
def best_of_n(problem, iterations):
    """Best-of-N (N = 2^k) vs the tilted KL-constrained optimum, exactly (Yang et al. 2024)."""
    return best_of_n_ladder(problem, iterations)
