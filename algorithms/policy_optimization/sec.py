r"""SEC, the self-evolving curriculum (Chen et al. 2025, "Self-Evolving Curriculum for LLM
Reasoning", arXiv 2505.14970): a non-stationary bandit over problem categories whose reward is
the absolute advantage of the RL step just taken. Seed row 002-004#B2
(``seed-catalogue-002-004.md#B2``).

What was read [V]: the abstract, as quoted in the catalogue row -- SEC "formulates curriculum
selection as a non-stationary Multi-Armed Bandit problem, treating each problem category (e.g.,
difficulty level or problem type) as an individual arm"; it "leverage[s] the absolute advantage
from policy gradient methods as a proxy measure for immediate learning gain"; the curriculum
policy "is updated using the TD(0) method". Nothing else of the paper was available.

Reconstructed [A]/[M]:

* The arm value is TD(0) with a constant step on the reward of each pull (an exponential moving
  average, the catalogue's reading): Q_c <- Q_c + alpha (|A|_c - Q_c), |A|_c the mean absolute
  advantage (1/G) sum_i |r_i - rbar| of the group just trained on; Q starts at 0.
* The category is drawn from the Boltzmann distribution softmax(Q / tau) (the abstract does not
  say how arms are chosen; Boltzmann is my assumption). alpha = 0.5 and tau = 0.05 are this
  library's choices, not the paper's; tau is small because |A| lies in [0, 1/2].
* The learner is :mod:`theorylab.mdps.curriculum`'s synthetic one (a logit per category, one
  group-baseline REINFORCE step per pull), on which the proxy is exact: the step on theta_c *is*
  (eta / 2) |A|_c, and E|A|_c = 2 p_c (1 - p_c) (G - 1) / G peaks at p_c = 1/2.

Deviations: no language model; categories are independent (no transfer between them); one
category per step for each of ``learners`` independent learners.

Registered as ``sec`` (kind ``policy-optimization``, problem ``curriculum``; ``iterations`` = T
training steps): ``objective[t]`` the learner-mean mean pass rate after t steps; ``regularised[t]``
the learner-mean cumulative pseudo-regret of the proxy (max_c E|A|_c - E|A|_{c_t}, the learner's
state then); ``entropy[t]`` the learner-mean entropy of the curriculum's distribution;
``target_gap[t]`` the myopic oracle's mean pass rate minus SEC's (its own learner noise);
``target_value`` the oracle's final mean pass rate; ``policies`` (T+1, K) the learner-mean
curriculum distributions; config: the settings and the share of pulls whose category's pass
rate was in [0.2, 0.8] (``sweet_spot_share``) and that of pulls of the category with the largest
E|A| at the time (``best_arm_share``: tracking the moving best arm).
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
from theorylab.mdps.curriculum import CurriculumBandit, OracleCurriculum, simulate

PAPERS = ("002-004#B2",)
SWEET_SPOT = (0.2, 0.8)


def sec_reward(abs_adv: np.ndarray, mean_reward: np.ndarray) -> np.ndarray:
    """The TD(0) target of a pull: the group's mean absolute advantage (B,)."""
    return abs_adv


class SECCurriculum:
    """TD(0) arm values on the absolute advantage; Boltzmann choice at temperature tau."""

    def __init__(self, B: int, K: int, alpha: float, tau: float) -> None:
        self.Q = np.zeros((B, K))  # (B, K)
        self.alpha, self.tau = alpha, tau
        self.probs: list[np.ndarray] = []  # per step (B, K)

    def distribution(self) -> np.ndarray:
        return softmax(self.Q / self.tau, axis=1)  # (B, K)

    def choose(self, theta, t, rng):
        pr = self.distribution()
        self.probs.append(pr)
        return draws_per_row(rng, pr, 1)[:, 0]

    def observe(self, c, abs_adv, reward) -> None:
        rows = np.arange(c.shape[0])
        target = sec_reward(abs_adv, reward)
        self.Q[rows, c] += self.alpha * (target - self.Q[rows, c])


@register("sec", kind="policy-optimization", problem="curriculum", papers=PAPERS)
def sec_path(problem, iterations, alpha: float = 0.5, tau: float = 0.05, learners: int = 16,
             learner_seed: int = 0) -> PolicyPath:  # fmt: skip
    """SEC's curriculum (TD(0) on the absolute advantage, Boltzmann choice) for T steps."""
    if not isinstance(problem, CurriculumBandit):
        raise ValueError(f"sec runs on a curriculum problem (e.g. curriculum:K=6,G=8), got "
                         f"{type(problem).__name__}")  # fmt: skip
    T = check_iterations("sec", iterations)
    alpha = check_number("sec", "alpha", alpha)
    tau = check_number("sec", "tau", tau)
    if not 0 < alpha <= 1:
        raise ValueError(f"sec: alpha (the TD(0) step) must be in (0, 1], got {alpha!r}")
    if isinstance(learners, bool) or not isinstance(learners, int) or learners < 1:
        raise ValueError(f"sec: learners must be a positive integer, got {learners!r}")
    chooser = SECCurriculum(learners, problem.K, alpha, tau)
    run = simulate(problem, T, chooser, learners, np.random.default_rng(learner_seed))
    oracle = simulate(problem, T, OracleCurriculum(problem.G, problem.eta), learners,
                      np.random.default_rng(learner_seed))  # fmt: skip
    probs = np.concatenate([np.stack(chooser.probs), chooser.distribution()[None]])  # (T+1,B,K)
    lo, hi = SWEET_SPOT
    sweet = float(((run.chosen_p >= lo) & (run.chosen_p <= hi)).mean())
    return PolicyPath(
        objective=run.pass_rate.mean(0),
        regularised=np.concatenate([[0.0], np.cumsum(run.gap.mean(0))]),
        entropy=policy_entropy(probs).mean(1),
        target_gap=oracle.pass_rate.mean(0) - run.pass_rate.mean(0),
        target_value=float(oracle.pass_rate[:, -1].mean()),
        policies=probs.mean(1),
        config={
            "alpha": alpha,
            "tau": tau,
            "learners": learners,
            "learner_seed": learner_seed,
            "sweet_spot_share": sweet,
            "best_arm_share": float((run.gap <= 1e-12).mean()),
        },
    )
