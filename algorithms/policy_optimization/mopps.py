r"""MoPPS, model-predictive prompt selection (Qu et al. 2025, "Can Prompt Difficulty be Online
Predicted for Accelerating RL Finetuning of Reasoning Models?", arXiv 2507.04632): a Beta-Bernoulli
posterior on each prompt's success rate, updated in a stream with discounting, and Thompson
sampling toward a target difficulty. Seed row 000#72 (``seed-catalogue-000.md#72``).

What was read [V]: the abstract, as quoted in the catalogue row -- MoPPS "models each prompt's
success rate as a latent variable, performs streaming Bayesian inference, and employs posterior
sampling in a constructed multi-armed bandit machine". No theorem is stated.

Reconstructed [A]/[M]:

* Posterior: Beta(a_c, b_c) on category c's pass rate from a Beta(a0, b0) prior; a pull with k
  successes of G first discounts the category's evidence toward the prior,
  a_c <- lam a_c + (1 - lam) a0 (the same for b_c), then adds the group: a_c += k,
  b_c += G - k. lam = 1 is exact Beta-Bernoulli conjugacy; lam < 1 forgets old groups, so the
  posterior can follow a pass rate that moves as the model learns. (Where the discount is
  applied -- per pull or per step for every prompt -- was not read: per pull is my choice.)
* Selection: draw one p~_c ~ Beta(a_c, b_c) per category and train on the category whose draw is
  closest to the target difficulty p* (Thompson sampling on -|p - p*|); p* = 1/2 by default, the
  pass rate of the largest expected signal 2p(1-p)(G-1)/G (see :mod:`theorylab.mdps.curriculum`).
* lam = 0.9, a0 = b0 = 1 are this library's choices.

Deviations: categories of a synthetic learner stand for prompts; one category per step for each
of ``learners`` independent learners (the paper selects a batch of prompts).

Registered as ``mopps`` (kind ``policy-optimization``, problem ``curriculum``; ``iterations`` = T
steps): ``objective[t]`` the learner-mean mean pass rate; ``regularised[t]`` the learner-mean
cumulative distance regret sum_s (|p_{c_s} - p*| - min_c |p_c - p*|) at the learner's state at
each step; ``entropy[t]`` the entropy of the learner-mean pull distribution of step t;
``target_gap[t]`` the learner-mean |posterior mean - true pass rate| of the category pulled at t
(before its update; NaN at t = T); ``target_value`` p*; ``policies`` (T+1, K) the learner-mean
pull counts; config: the settings and the share of pulls of a category with pass rate within
0.2 of p* (``target_share``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from theorylab.algorithms.planning.soft_value_iteration import policy_entropy
from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
)
from theorylab.algorithms.registry import register
from theorylab.mdps.curriculum import CurriculumBandit, simulate

PAPERS = ("000#72",)
TARGET_BAND = 0.2


def discounted_update(a, b, k, G, lam, a0, b0):
    """The Beta parameters after discounting toward the prior and adding k successes of G."""
    return lam * a + (1.0 - lam) * a0 + k, lam * b + (1.0 - lam) * b0 + (G - k)


class MoPPSCurriculum:
    """Beta posteriors per category; Thompson draws; the draw closest to the target is trained."""

    def __init__(self, B: int, K: int, G: int, target: float, lam: float, a0: float, b0: float):
        self.a, self.b = np.full((B, K), a0), np.full((B, K), b0)  # (B, K) each
        self.G, self.target, self.lam, self.a0, self.b0 = G, target, lam, a0, b0
        self.errors: list[np.ndarray] = []  # per step (B,) |posterior mean - true p| of the pull
        self.history: list[np.ndarray] = [np.zeros((B, K))]

    def choose(self, theta, t, rng):
        draws = rng.beta(self.a, self.b)  # (B, K)
        c = np.abs(draws - self.target).argmin(1)
        rows = np.arange(c.shape[0])
        mean = self.a[rows, c] / (self.a[rows, c] + self.b[rows, c])
        self.errors.append(np.abs(mean - expit(theta[rows, c])))
        return c

    def observe(self, c, abs_adv, reward) -> None:
        rows = np.arange(c.shape[0])
        k = np.rint(reward * self.G)
        self.a[rows, c], self.b[rows, c] = discounted_update(
            self.a[rows, c], self.b[rows, c], k, self.G, self.lam, self.a0, self.b0
        )
        counts = self.history[-1].copy()
        counts[rows, c] += 1.0
        self.history.append(counts)


@register("mopps", kind="policy-optimization", problem="curriculum", papers=PAPERS)
def mopps_path(
    problem,
    iterations,
    target: float = 0.5,
    lam: float = 0.9,
    a0: float = 1.0,
    b0: float = 1.0,
    learners: int = 16,
    learner_seed: int = 0,
) -> PolicyPath:
    """MoPPS (discounted Beta posteriors, Thompson sampling toward ``target``) for T steps."""
    if not isinstance(problem, CurriculumBandit):
        raise ValueError(f"mopps runs on a curriculum problem (e.g. curriculum:K=6,G=8), got "
                         f"{type(problem).__name__}")  # fmt: skip
    T = check_iterations("mopps", iterations)
    target = check_number("mopps", "target", target)
    lam = check_number("mopps", "lam", lam)
    a0, b0 = check_number("mopps", "a0", a0), check_number("mopps", "b0", b0)
    if not 0 < target < 1:
        raise ValueError(f"mopps: target (a pass rate) must be in (0, 1), got {target!r}")
    if lam > 1:
        raise ValueError(f"mopps: lam (the discount) must be in (0, 1], got {lam!r}")
    if isinstance(learners, bool) or not isinstance(learners, int) or learners < 1:
        raise ValueError(f"mopps: learners must be a positive integer, got {learners!r}")
    ch = MoPPSCurriculum(learners, problem.K, int(problem.G), target, lam, a0, b0)
    run = simulate(problem, T, ch, learners, np.random.default_rng(learner_seed), target=target)
    dist_chosen = np.abs(run.chosen_p - target)  # (B, T)
    counts = np.stack(ch.history)  # (T+1, B, K)
    share = np.diff(counts, axis=0).mean(1)  # (T, K)
    ent = policy_entropy(share)  # (T,)
    return PolicyPath(
        objective=run.pass_rate.mean(0),
        regularised=np.concatenate([[0.0], np.cumsum(run.target_gap.mean(0))]),
        entropy=np.concatenate([ent, ent[-1:]]),
        target_gap=np.concatenate([np.stack(ch.errors).mean(1), [np.nan]]),
        target_value=target,
        policies=counts.mean(1),
        config={
            "target": target,
            "lam": lam,
            "a0": a0,
            "b0": b0,
            "learners": learners,
            "learner_seed": learner_seed,
            "target_share": float((dist_chosen <= TARGET_BAND).mean()),
        },
    )
