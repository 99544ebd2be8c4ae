"""Curriculum bandits: a synthetic RLVR learner over K problem categories (seed rows 002-004#B2
SEC and 002-004#B3 DUMP, which choose the category to train on next).

The learner holds one logit theta_c per category; its pass rate is p_c = sigmoid(theta_c). A
training step on category c draws a group of G rollouts with binary rewards r_i ~ Bernoulli(p_c)
and takes one REINFORCE step with the group-mean baseline (GRPO's advantage A_i = r_i - rbar,
no standard-deviation scaling): the gradient of log Bernoulli(r; sigmoid(theta)) in theta is
r - p, so

    theta_c += eta (1/G) sum_i A_i (r_i - p_c) = eta rbar (1 - rbar),

because sum_i A_i = 0 and r_i^2 = r_i. The step is exactly (eta / 2) times the group's mean
absolute advantage (1/G) sum_i |r_i - rbar| = 2 rbar (1 - rbar) -- the "learning gain" proxy
both papers use. Its expectation over the group is

    E[(1/G) sum_i |A_i|] = 2 p (1 - p) (G - 1) / G            (:func:`expected_abs_advantage`),

largest at p = 1/2, zero on categories the learner always or never solves (a group of G
failures teaches nothing). Pass rates only rise; the category worth training on moves as they do.

``eta = 0`` freezes the learner: each category is then a stationary arm whose reward (the mean
absolute advantage of a fresh group) has the mean above -- the stochastic bandit of DUMP's UCB
analysis.

Arrays: theta (B, K) for B seeds at once; choices c (B,) ints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.special import expit
from scipy.stats import binom


@dataclass(frozen=True)
class CurriculumBandit:
    """theta0: (K,) initial logits of the categories' pass rates; G rollouts per step; eta the
    learner's step size (0: frozen, a stationary bandit); hint: the logit a full hint adds (a
    hint revealing a fraction h in [0, 1] of the solution gives pass rate sigmoid(theta + hint h);
    used by SEELE, seed row 002-004#G9)."""

    theta0: np.ndarray
    G: int = 8
    eta: float = 1.0
    name: str = "curriculum"
    hint: float = 0.0

    def __post_init__(self) -> None:
        t = np.asarray(self.theta0, dtype=np.float64)
        if t.ndim != 1 or t.shape[0] < 2 or not np.all(np.isfinite(t)):
            raise ValueError(f"theta0 must be a finite (K >= 2,) array, got shape {t.shape}")
        if isinstance(self.G, bool) or not isinstance(self.G, (int, np.integer)) or self.G < 2:
            raise ValueError(f"G (rollouts per step) must be an integer >= 2, got {self.G!r}")
        if not (np.isfinite(self.eta) and self.eta >= 0):
            raise ValueError(
                f"eta (the learner's step) must be a finite number >= 0, got {self.eta!r}"
            )

    @property
    def K(self) -> int:
        return int(np.asarray(self.theta0).shape[0])

    @property
    def p0(self) -> np.ndarray:
        """(K,) the initial pass rates."""
        return expit(np.asarray(self.theta0, dtype=np.float64))


def expected_abs_advantage(p: np.ndarray, G: int) -> np.ndarray:
    """E of a group's mean absolute advantage at pass rate p: 2 p (1 - p) (G - 1) / G."""
    p = np.asarray(p, dtype=np.float64)
    return 2.0 * p * (1.0 - p) * (G - 1) / G


def expected_pass_gain(theta: np.ndarray, G: int, eta: float) -> np.ndarray:
    """E[sigmoid(theta + eta rbar (1 - rbar))] - sigmoid(theta), rbar = k / G, k ~ Bin(G, p):
    the exact expected one-step rise of a category's pass rate (same shape as theta)."""
    theta = np.asarray(theta, dtype=np.float64)
    k = np.arange(G + 1)  # (G+1,)
    rbar = k / G
    pmf = binom.pmf(k, G, expit(theta)[..., None])  # (..., G+1)
    after = expit(theta[..., None] + eta * rbar * (1.0 - rbar))
    return (pmf * after).sum(-1) - expit(theta)


class Chooser(Protocol):
    """A curriculum: ``choose`` the category of every seed, then ``observe`` what training on it
    returned (each group's mean absolute advantage and mean reward, (B,) each)."""

    def choose(self, theta: np.ndarray, t: int, rng: np.random.Generator) -> np.ndarray: ...

    def observe(self, c: np.ndarray, abs_adv: np.ndarray, reward: np.ndarray) -> None: ...


@dataclass
class CurriculumRun:
    """What :func:`simulate` records for B seeds over T steps.

    pass_rate: (B, T+1) the learner's mean pass rate over categories after t steps;
    choices: (B, T); chosen_p: (B, T) the chosen category's pass rate when chosen;
    abs_adv: (B, T) the observed mean absolute advantage; gap: (B, T) the pseudo-regret of the
    step, max_c E|A|_c - E|A|_{c_t} at the learner's state then (:func:`expected_abs_advantage`);
    target_gap: (B, T) |p_{c_t} - target| - min_c |p_c - target| then (when a target is given).
    """

    pass_rate: np.ndarray
    choices: np.ndarray
    chosen_p: np.ndarray
    abs_adv: np.ndarray
    gap: np.ndarray
    target_gap: np.ndarray | None = None


def simulate(problem: CurriculumBandit, T: int, chooser: Chooser, B: int,
             rng: np.random.Generator, target: float | None = None) -> CurriculumRun:  # fmt: skip
    """Train B independent learners for T steps, each on the categories ``chooser`` picks
    (``target``: also record each pull's distance regret to that pass rate)."""
    K, G = problem.K, int(problem.G)
    theta = np.tile(np.asarray(problem.theta0, dtype=np.float64), (B, 1))  # (B, K)
    rows = np.arange(B)
    pass_rate = np.empty((B, T + 1))
    choices = np.empty((B, T), dtype=np.int64)
    chosen_p, abs_adv, gap = np.empty((B, T)), np.empty((B, T)), np.empty((B, T))
    target_gap = None if target is None else np.empty((B, T))
    pass_rate[:, 0] = expit(theta).mean(1)
    for t in range(T):
        c = np.asarray(chooser.choose(theta, t, rng), dtype=np.int64)  # (B,)
        if c.shape != (B,) or c.min() < 0 or c.max() >= K:
            raise ValueError(f"a curriculum must choose one category in 0..{K - 1} per seed")
        p = expit(theta)  # (B, K)
        mu = expected_abs_advantage(p, G)  # (B, K)
        rbar = rng.binomial(G, p[rows, c]) / G  # (B,)
        theta[rows, c] += problem.eta * rbar * (1.0 - rbar)
        choices[:, t], chosen_p[:, t] = c, p[rows, c]
        abs_adv[:, t] = 2.0 * rbar * (1.0 - rbar)
        gap[:, t] = mu.max(1) - mu[rows, c]
        if target_gap is not None:
            dist = np.abs(p - target)  # (B, K)
            target_gap[:, t] = dist[rows, c] - dist.min(1)
        chooser.observe(c, abs_adv[:, t], rbar)
        pass_rate[:, t + 1] = expit(theta).mean(1)
    return CurriculumRun(pass_rate, choices, chosen_p, abs_adv, gap, target_gap)


class UniformCurriculum:
    """Every category with probability 1/K (the baseline both papers improve on)."""

    def __init__(self, K: int) -> None:
        self.K = K

    def choose(self, theta, t, rng):
        return rng.integers(0, self.K, size=theta.shape[0])

    def observe(self, c, abs_adv, reward) -> None:
        pass


class OracleCurriculum:
    """The myopic oracle: knows the learner's state and picks the category of the largest exact
    expected one-step rise in mean pass rate (:func:`expected_pass_gain`; ties to the lowest)."""

    def __init__(self, G: int, eta: float) -> None:
        self.G, self.eta = G, eta

    def choose(self, theta, t, rng):
        return expected_pass_gain(theta, self.G, self.eta).argmax(1)

    def observe(self, c, abs_adv, reward) -> None:
        pass
