r"""Balanced online difficulty filtering for RLVR (Bae et al. 2025, "Online Difficulty Filtering
for Reasoning Oriented Reinforcement Learning", arXiv 2504.03380): keep only the prompts whose
sampled accuracy is intermediate, so that every group in a GRPO batch carries a gradient. Seed
row 001#58 (``seed-catalogue-001.md#58``).

What was read [V]: the abstract, as quoted in the catalogue row -- "the lower bound of the KL
divergence between the initial and the optimal policy can be expressed with the variance of the
sampled accuracy"; "balanced filtering can maximize the lower bound"; keep prompts with
intermediate accuracy. The KL statement itself was not read and is not checked here.

Reconstructed [A]/[M] on :mod:`theorylab.mdps.curriculum`'s synthetic learner (K categories
standing for prompts, a logit each):

* An update takes a batch of n groups; each group is a category drawn uniformly and G rollouts
  of it. GRPO's batch-mean loss gives every category the step
  theta_c += (eta / n) sum_{groups g on c} rbar_g (1 - rbar_g)
  -- the per-group step of :mod:`theorylab.mdps.curriculum` averaged over the batch, so a group
  that all solve or all fail (rbar in {0, 1}) adds nothing but still takes a slot.
* Balanced filtering keeps a group only if its accuracy rbar lies in [low, high] (default: the
  open interval (0, 1), i.e. 1/G <= rbar <= 1 - 1/G) and keeps sampling groups until n are kept
  (at most ``max_draws`` x n groups per update; a learner whose every category has left the band
  updates on what it has).
* ``filtering=False`` is the unfiltered GRPO batch, the baseline.

Registered as ``difficulty-filtering`` (kind ``policy-optimization``, problem ``curriculum``;
``iterations`` = U updates): ``objective[u]`` the learner-mean mean pass rate after u updates;
``regularised[u]`` the learner-mean rollouts spent so far (the filter's cost); ``entropy[u]``
the learner-mean fraction of the batch's groups with a non-zero gradient in update u (NaN at
u = 0); ``target_gap`` NaN; ``target_value`` NaN; ``policies`` (U+1, K) the learner-mean pass
rates per category; config: the settings.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
)
from theorylab.algorithms.registry import register
from theorylab.mdps.curriculum import CurriculumBandit

PAPERS = ("001#58",)


def keep_group(rbar: np.ndarray, G: int, low: float | None, high: float | None) -> np.ndarray:
    """Balanced filter: rbar in [low, high]; the defaults drop exactly the zero-variance groups."""
    lo = 1.0 / G if low is None else low
    hi = 1.0 - 1.0 / G if high is None else high
    return (rbar >= lo - 1e-12) & (rbar <= hi + 1e-12)


def filtered_updates(problem: CurriculumBandit, U: int, n: int, filtering: bool,
                     low: float | None, high: float | None, max_draws: int, B: int,
                     rng: np.random.Generator):  # fmt: skip
    """U updates of B learners; returns pass rates (B, U+1, K), rollouts (B, U+1), informative
    fractions (B, U)."""
    K, G, eta = problem.K, int(problem.G), problem.eta
    theta = np.tile(np.asarray(problem.theta0, dtype=np.float64), (B, 1))  # (B, K)
    rates = np.empty((B, U + 1, K))
    rollouts = np.zeros((B, U + 1))
    informative = np.empty((B, U))
    rates[:, 0] = expit(theta)
    for u in range(U):
        step = np.zeros((B, K))
        kept = np.zeros(B, dtype=np.int64)
        useful = np.zeros(B)
        spent = np.zeros(B)
        for _ in range(max_draws if filtering else 1):
            need = n - kept  # (B,) groups still missing
            if not need.any():
                break
            m = int(need.max())
            c = rng.integers(0, K, size=(B, m))  # (B, m) categories of the candidate groups
            p = np.take_along_axis(expit(theta), c, axis=1)
            rbar = rng.binomial(G, p) / G  # (B, m)
            slot = np.arange(m)[None] < need[:, None]  # the groups each learner still draws
            keep = slot & (keep_group(rbar, G, low, high) if filtering else True)
            keep &= np.cumsum(keep, axis=1) <= need[:, None]  # no more than n in all
            spent += slot.sum(1) * G
            np.add.at(step, (np.repeat(np.arange(B), m)[keep.ravel()], c.ravel()[keep.ravel()]),
                      (rbar * (1 - rbar)).ravel()[keep.ravel()])  # fmt: skip
            useful += (keep & (rbar > 0) & (rbar < 1)).sum(1)
            kept += keep.sum(1)
        theta += eta * step / n
        rates[:, u + 1] = expit(theta)
        rollouts[:, u + 1] = rollouts[:, u] + spent
        informative[:, u] = useful / n
    return rates, rollouts, informative


@register("difficulty-filtering", kind="policy-optimization", problem="curriculum",
          papers=PAPERS)  # fmt: skip
def difficulty_filtering_path(
    problem,
    iterations,
    batch: int = 8,
    filtering: bool = True,
    low: float | None = None,
    high: float | None = None,
    max_draws: int = 50,
    learners: int = 16,
    learner_seed: int = 0,
) -> PolicyPath:
    """GRPO updates on uniformly drawn groups, balanced-filtered (``filtering=True``) or not."""
    who = "difficulty-filtering"
    if not isinstance(problem, CurriculumBandit):
        raise ValueError(f"{who} runs on a curriculum problem (e.g. curriculum:K=6,G=8), got "
                         f"{type(problem).__name__}")  # fmt: skip
    U = check_iterations(who, iterations)
    for name, v in (("batch", batch), ("max_draws", max_draws), ("learners", learners)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{who}: {name} must be a positive integer, got {v!r}")
    if not isinstance(filtering, bool):
        raise ValueError(f"{who}: filtering must be True or False, got {filtering!r}")
    for name, v in (("low", low), ("high", high)):
        if v is not None and not 0 <= check_number(who, name, v, positive=False) <= 1:
            raise ValueError(f"{who}: {name} must be an accuracy in [0, 1], got {v!r}")
    if low is not None and high is not None and low > high:
        raise ValueError(f"{who}: low must be <= high, got low={low!r}, high={high!r}")
    rates, rollouts, informative = filtered_updates(
        problem, U, batch, filtering, low, high, max_draws, learners,
        np.random.default_rng(learner_seed),
    )  # fmt: skip
    return PolicyPath(
        objective=rates.mean(2).mean(0),
        regularised=rollouts.mean(0),
        entropy=np.concatenate([[np.nan], informative.mean(0)]),
        target_gap=np.full(U + 1, np.nan),
        target_value=float("nan"),
        policies=rates.mean(0),
        config={
            "batch": batch,
            "filtering": filtering,
            "low": low,
            "high": high,
            "max_draws": max_draws,
            "learners": learners,
            "learner_seed": learner_seed,
        },  # fmt: skip
    )
