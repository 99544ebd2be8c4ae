r"""SEELE, capability-adaptive hint scaffolding (Li et al. 2025, "Staying in the Sweet Spot:
Responsive Reasoning Evolution via Capability-Adaptive Hint Scaffolding", arXiv 2509.06923): each
problem gets a hint -- a prefix of its solution -- whose length is predicted by an item-response
model fitted to the (hint, accuracy) pairs of earlier rounds, so that rollout accuracy stays near a
target. Seed row 002-004#G9 (``seed-catalogue-002-004.md#G9``).

What was read [V]: the abstract, as quoted in the catalogue row -- SEELE "augments each training
sample by appending a hint (part of a full solution) after the original problem"; "it fits an
item response theory model to the accuracy-hint pairs collected in preceding rounds to predict the
required hint length for the next round"; the paper formalises "the relationship between loss
descent speed and rollout accuracy" (no theorem quoted).

Reconstructed [A]/[M] on :mod:`theorylab.mdps.curriculum`'s synthetic learner (categories stand
for problems; ``hint`` > 0 in the problem):

* A hint revealing the fraction h in [0, 1] of the solution gives the pass rate
  p(h) = sigmoid(theta_x + b h), b the problem's ``hint`` (a two-parameter logistic IRT item in h).
  Training with a hint takes the group-baseline REINFORCE step on theta_x, theta_x +=
  eta rbar (1 - rbar) (the gradient of log Bernoulli(r; sigmoid(theta + b h)) in theta is r - p),
  so what the hinted problem teaches carries over to the unhinted one in full (an assumption).
* Each round every problem is trained once. Its IRT item sigmoid(alpha + beta h) is fitted by
  maximum likelihood (Newton's method, a 1e-3 ridge) to the (h, successes of G) pairs of the last
  ``window`` rounds; the next hint is h = (logit(p*) - alpha) / beta, clipped to [0, 1]. Rounds 1
  and 2 use h = 0 and h = 1 (two distinct hints identify the item); a fit with beta <= 0 keeps the
  previous hint. p* = 1/2 (the largest expected signal 2p(1-p)(G-1)/G), window = 4 and the ridge
  are this library's choices.

Deviations: a hint is a number, not text; no language model; one group per problem per round.

Registered as ``seele`` (kind ``policy-optimization``, problem ``curriculum`` with ``hint`` > 0;
``iterations`` = R rounds): ``objective[r]`` the learner-mean unhinted mean pass rate after r
rounds; ``regularised[r]`` the learner-mean cumulative training signal sum of rbar (1 - rbar)
over the groups so far; ``entropy[r]`` the learner-mean rollout accuracy of round r (NaN at
r = 0); ``target_gap[r]`` the learner-mean |h_r - h*_r| of round r's hints against the exact
h* = (logit p* - theta_x) / b at the learner's state (clipped to [0, 1]; NaN at r = 0);
``target_value`` p*; ``policies`` (R+1, K) the learner-mean hints (round 0: zeros); config: the
settings. ``schedule="fixed"`` trains with the constant hint ``fixed_hint`` (the baselines).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logit

from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
)
from theorylab.algorithms.registry import register
from theorylab.mdps.curriculum import CurriculumBandit

PAPERS = ("002-004#G9",)
SCHEDULES = ("irt", "fixed")


def fit_irt(h: np.ndarray, k: np.ndarray, G: int, ridge: float = 1e-3, steps: int = 30):
    """Maximum-likelihood (alpha, beta) of sigmoid(alpha + beta h) from k successes of G at the
    hints h, batched: h, k (..., n) -> alpha, beta (...,). Newton's method on the ridge-penalised
    binomial log-likelihood (a 2 x 2 solve per item)."""
    alpha = np.zeros(h.shape[:-1])
    beta = np.zeros(h.shape[:-1])
    for _ in range(steps):
        p = expit(alpha[..., None] + beta[..., None] * h)  # (..., n)
        r = k - G * p  # score terms
        w = G * p * (1 - p)
        g0, g1 = r.sum(-1) - ridge * alpha, (r * h).sum(-1) - ridge * beta
        h00 = w.sum(-1) + ridge
        h01 = (w * h).sum(-1)
        h11 = (w * h * h).sum(-1) + ridge
        det = h00 * h11 - h01**2
        alpha = alpha + (h11 * g0 - h01 * g1) / det
        beta = beta + (h00 * g1 - h01 * g0) / det
    return alpha, beta


def next_hint(alpha, beta, target: float, previous):
    """h = (logit(target) - alpha) / beta clipped to [0, 1]; the previous hint where beta <= 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.clip((logit(target) - alpha) / beta, 0.0, 1.0)
    return np.where(beta > 0, h, previous)


@register("seele", kind="policy-optimization", problem="curriculum", papers=PAPERS)
def seele_path(
    problem,
    iterations,
    target: float = 0.5,
    window: int = 4,
    schedule: str = "irt",
    fixed_hint: float = 0.0,
    learners: int = 16,
    learner_seed: int = 0,
) -> PolicyPath:
    """SEELE's IRT-predicted hints (``schedule="irt"``) or a constant hint, for R rounds."""
    if not isinstance(problem, CurriculumBandit) or not problem.hint > 0:
        got = getattr(problem, "name", type(problem).__name__)
        raise ValueError(f"seele runs on a curriculum problem with hints (e.g. "
                         f"curriculum:K=6,G=8,hint=6), got {got}")  # fmt: skip
    R = check_iterations("seele", iterations)
    target = check_number("seele", "target", target)
    if not 0 < target < 1:
        raise ValueError(f"seele: target (an accuracy) must be in (0, 1), got {target!r}")
    if schedule not in SCHEDULES:
        raise ValueError(f"seele: schedule must be irt or fixed, got {schedule!r}")
    if not 0 <= check_number("seele", "fixed_hint", fixed_hint, positive=False) <= 1:
        raise ValueError(f"seele: fixed_hint must be in [0, 1], got {fixed_hint!r}")
    for name, v in (("window", window), ("learners", learners)):
        if isinstance(v, bool) or not isinstance(v, int) or v < (2 if name == "window" else 1):
            low = 2 if name == "window" else 1
            raise ValueError(f"seele: {name} must be an integer >= {low}, got {v!r}")
    rng = np.random.default_rng(learner_seed)
    B, K, G, b, eta = learners, problem.K, int(problem.G), problem.hint, problem.eta
    theta = np.tile(np.asarray(problem.theta0, dtype=np.float64), (B, 1))  # (B, K)
    hints_seen = np.zeros((B, K, 0))  # (B, K, rounds so far)
    wins_seen = np.zeros((B, K, 0))
    hint = np.zeros((B, K))
    unhinted = [expit(theta).mean(1)]  # per round (B,)
    signal, acc, err, hints = [np.zeros(B)], [], [], [np.zeros((B, K))]
    for r in range(R):
        if schedule == "fixed":
            hint = np.full((B, K), float(fixed_hint))
        elif r < 2:
            hint = np.full((B, K), float(r))  # h = 0, then h = 1
        else:
            alpha, beta = fit_irt(hints_seen[..., -window:], wins_seen[..., -window:], G)
            hint = next_hint(alpha, beta, target, hint)
        star = np.clip((logit(target) - theta) / b, 0.0, 1.0)  # (B, K) exact h*
        p = expit(theta + b * hint)
        k = rng.binomial(G, p)  # (B, K)
        rbar = k / G
        theta += eta * rbar * (1 - rbar)
        hints_seen = np.concatenate([hints_seen, hint[..., None]], axis=-1)
        wins_seen = np.concatenate([wins_seen, k[..., None].astype(np.float64)], axis=-1)
        unhinted.append(expit(theta).mean(1))
        signal.append(signal[-1] + (rbar * (1 - rbar)).sum(1))
        acc.append(rbar.mean(1))
        err.append(np.abs(hint - star).mean(1))
        hints.append(hint.copy())
    nan = np.full(1, np.nan)
    return PolicyPath(
        objective=np.stack(unhinted).mean(1),
        regularised=np.stack(signal).mean(1),
        entropy=np.concatenate([nan, np.stack(acc).mean(1)]),
        target_gap=np.concatenate([nan, np.stack(err).mean(1)]),
        target_value=target,
        policies=np.stack(hints).mean(1),
        config={
            "target": target,
            "window": window,
            "schedule": schedule,
            "fixed_hint": fixed_hint,
            "learners": learners,
            "learner_seed": learner_seed,
        },  # fmt: skip
    )
