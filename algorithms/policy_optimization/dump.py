r"""DUMP, distribution-level curriculum by UCB (Wang et al. 2025, "DUMP: Automated
Distribution-Level Curriculum Learning for RL-based LLM Post-training", arXiv 2504.09710): UCB
over training distributions whose reward is the magnitude of the policy advantages. Seed row
002-004#B3 (``seed-catalogue-002-004.md#B3``).

What was read [V]: the abstract, as quoted in the catalogue row -- "the magnitude of policy
advantages reflects how much a model can still benefit from further training on a given
distribution"; DUMP "leverages the Upper Confidence Bound (UCB) principle to dynamically adjust
sampling probabilities for different distributions"; it "prioritizes distributions with either
high average advantage (exploitation) or low sample count (exploration)". The abstract claims a
"theoretically grounded" schedule but states no theorem.

Reconstructed [A]/[M]:

* UCB1 (Auer, Cesa-Bianchi & Fischer 2002, [M]) over the K distributions: pull each once, then
  the distribution of the largest  mean_c + bonus * sqrt(2 ln t / n_c), mean_c the average of
  the mean absolute advantages |A| = (1/G) sum_i |r_i - rbar| observed on c, n_c its pulls,
  t the pulls so far; ``bonus`` = 1 is UCB1's constant (rewards in [0, 1]; |A| <= 1/2).
  ``selection="softmax"`` maps the scores to sampling probabilities softmax(score / tau)
  instead (the catalogue's guess at DUMP's mapping, unread); the claim runs UCB1's argmax, for
  which the guarantee is standard: with a frozen learner (``eta = 0``) the arms are stationary
  and UCB1's pseudo-regret is at most 8 sum_{c: Delta_c > 0} ln T / Delta_c
  + (1 + pi^2 / 3) sum_c Delta_c (Auer et al. 2002, Theorem 1 [M]; the card
  ``auer2002-ucb1-thm1``, its constants written out in ``tests/test_curriculum.py``).
* The learner is :mod:`theorylab.mdps.curriculum`'s synthetic one, where E|A|_c =
  2 p_c (1 - p_c) (G - 1) / G (GRPO with the group-mean baseline and binary rewards).

Deviations: one distribution per step for each of ``learners`` independent learners (the paper
samples a batch across distributions); no window on the advantage history (not read).

Registered as ``dump`` (kind ``policy-optimization``, problem ``curriculum``; ``iterations`` = T
steps): ``objective[t]`` the learner-mean mean pass rate; ``regularised[t]`` the learner-mean
cumulative pseudo-regret sum_s (max_c E|A|_c - E|A|_{c_s}) at the learner's state at each step
(the stationary bandit's pseudo-regret when eta = 0); ``entropy[t]`` the entropy of the
learner-mean pull distribution of step t; ``target_gap[t]`` that pseudo-regret / (t + 1);
``target_value`` the largest initial E|A|; ``policies`` (T+1, K): the learner-mean pull counts
n_c(t); config: the settings.
"""

from __future__ import annotations

import numpy as np
from scipy.special import softmax

from theorylab.algorithms.planning.soft_value_iteration import policy_entropy
from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
)
from theorylab.algorithms.registry import register
from theorylab.kernels.sampling import draws_per_row
from theorylab.mdps.curriculum import CurriculumBandit, expected_abs_advantage, simulate

PAPERS = ("002-004#B3",)
SELECTIONS = ("argmax", "softmax")


def ucb_scores(total: np.ndarray, counts: np.ndarray, t: int, bonus: float) -> np.ndarray:
    """(B, K) UCB1's index mean_c + bonus sqrt(2 ln t / n_c) (n_c >= 1 for every arm)."""
    return total / counts + bonus * np.sqrt(2.0 * np.log(t) / counts)


class DUMPCurriculum:
    """UCB1 over categories on the mean absolute advantage; round-robin first pulls."""

    def __init__(self, B: int, K: int, bonus: float, selection: str, tau: float) -> None:
        self.total, self.counts = np.zeros((B, K)), np.zeros((B, K))  # (B, K) each
        self.bonus, self.selection, self.tau = bonus, selection, tau
        self.history: list[np.ndarray] = [self.counts.copy()]

    def choose(self, theta, t, rng):
        B, K = self.counts.shape
        if t < K:
            return np.full(B, t)
        scores = ucb_scores(self.total, self.counts, t, self.bonus)  # (B, K)
        if self.selection == "argmax":
            return scores.argmax(1)
        return draws_per_row(rng, softmax(scores / self.tau, axis=1), 1)[:, 0]

    def observe(self, c, abs_adv, reward) -> None:
        rows = np.arange(c.shape[0])
        self.total[rows, c] += abs_adv
        self.counts[rows, c] += 1.0
        self.history.append(self.counts.copy())


@register(
    "dump",
    kind="policy-optimization",
    problem="curriculum",
    bounds=("auer2002-ucb1-thm1",),
    papers=PAPERS,
)
def dump_path(
    problem,
    iterations,
    bonus: float = 1.0,
    selection: str = "argmax",
    tau: float = 0.05,
    learners: int = 16,
    learner_seed: int = 0,
) -> PolicyPath:
    """DUMP's UCB curriculum on the mean absolute advantage for T steps."""
    if not isinstance(problem, CurriculumBandit):
        raise ValueError(f"dump runs on a curriculum problem (e.g. curriculum:K=6,G=8), got "
                         f"{type(problem).__name__}")  # fmt: skip
    T = check_iterations("dump", iterations)
    bonus = check_number("dump", "bonus", bonus, positive=False)
    tau = check_number("dump", "tau", tau)
    if selection not in SELECTIONS:
        raise ValueError(f"dump: selection must be argmax or softmax, got {selection!r}")
    if isinstance(learners, bool) or not isinstance(learners, int) or learners < 1:
        raise ValueError(f"dump: learners must be a positive integer, got {learners!r}")
    chooser = DUMPCurriculum(learners, problem.K, bonus, selection, tau)
    run = simulate(problem, T, chooser, learners, np.random.default_rng(learner_seed))
    counts = np.stack(chooser.history)  # (T+1, B, K)
    share = np.diff(counts, axis=0).mean(1)  # (T, K) learner-mean pull distribution per step
    ent = policy_entropy(share)  # (T,)
    regret = np.concatenate([[0.0], np.cumsum(run.gap.mean(0))])
    return PolicyPath(
        objective=run.pass_rate.mean(0),
        regularised=regret,
        entropy=np.concatenate([ent, ent[-1:]]),
        target_gap=regret / np.arange(1, T + 2),
        target_value=float(expected_abs_advantage(problem.p0, problem.G).max()),
        policies=counts.mean(1),
        config={
            "bonus": bonus,
            "selection": selection,
            "tau": tau,
            "learners": learners,
            "learner_seed": learner_seed,
        },  # fmt: skip
    )
