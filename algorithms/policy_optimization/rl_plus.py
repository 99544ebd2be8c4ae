r"""RL-PLUS: hybrid on-policy / external-data RLVR with multiple importance sampling and an
exploration-based advantage, on an answer bandit.

Seed reference: ``seed-catalogue-002-004.md#G8``. Paper: "RL-PLUS: Countering Capability Boundary
Collapse of LLMs in Reinforcement Learning with Hybrid-policy Optimization" (2025). Card:
docs/algorithms/rl-plus.md.

What was read [V] (the abstract, through the catalogue row): RL-PLUS uses "Multiple Importance
Sampling to address distributional mismatch from external data, and Exploration-Based Advantage
Function to guide the model towards high-value, unexplored reasoning paths"; "We provide both
theoretical analysis and extensive experiments" (no statement quoted). Reconstructed [A] (the
paper's equations were not read; the catalogue's reading):

* a batch per prompt of G on-policy answers y ~ pi and G_e external answers y ~ mu (a fixed
  behaviour: here an expert, uniform over the prompt's correct answers); every answer is weighted
  by the balance heuristic w(y) = pi(y) / m(y), m = (G pi + G_e mu) / (G + G_e) (Veach and
  Guibas 1995 [std]) -- the mixture the batch was drawn from, so the estimator is unbiased for
  E_pi (:func:`mis_expectation` enumerates it source by source); w <= (G + G_e) / G whatever mu,
  while the single-source ratio pi / mu of external data alone is unbounded;
* the advantage A_i = (r_i - mean r) C(y_i), C(y) = (1 - pi(y))^gamma (a weight that grows as
  the policy's probability of y falls: the exploration bonus, "decreasing in pi(y | x)" -- the
  catalogue's assumption on the form); gamma = 0: no bonus;
* the step theta_x += lr / (G + G_e) sum_i w_i A_i (e_{y_i} - pi(. | x)) (softmax score).

``mode="grpo"``: on-policy samples only (no external data, w = 1). With C = 1 and a fixed
baseline b the expected RL-PLUS step is exactly the policy gradient pi * (r - b) - pi <pi, r - b>
(checked by claim ``rl-plus-mis-unbiased``); on a prompt whose on-policy groups all fail, the
external answers still give signal: the learner moves onto correct answers the base model rarely
samples ("capability boundary" expansion), where GRPO's update is zero.

Registered ``rl-plus`` (kind ``policy-optimization``, problem ``answer-bandit``; ``iterations`` =
T steps): ``objective[t]`` the learner-mean accuracy pi(correct | x) over prompts;
``regularised[t]`` the learner-mean pass@k at ``k`` = 256 (1 - (1 - accuracy)^k, averaged over
prompts); ``entropy[t]`` the mean answer entropy; ``target_gap`` NaN; ``policies`` (T+1, P, A)
the learner-mean log-probabilities.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax, softmax

from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
)
from theorylab.algorithms.registry import register
from theorylab.kernels.sampling import draws_per_row
from theorylab.mdps.answer_bandit import AnswerBandit

PAPERS = ("002-004#G8",)
MODES = ("rl-plus", "grpo")


def mis_weights(pi: np.ndarray, mu: np.ndarray, G: int, G_e: int) -> np.ndarray:
    """(R, A) the balance-heuristic weights pi / m, m = (G pi + G_e mu) / (G + G_e)."""
    return pi / ((G * pi + G_e * mu) / (G + G_e))


def exploration_weight(pi: np.ndarray, gamma: float) -> np.ndarray:
    """C(y) = (1 - pi(y))^gamma (same shape as pi)."""
    return (1.0 - pi) ** gamma


def mis_expectation(pi, mu, G: int, G_e: int, f) -> np.ndarray:
    """(R, ...) the exact mean of the MIS estimator (1 / N) sum_i w(y_i) f(y_i) over a batch of
    G draws from pi and G_e from mu, summed source by source; ``f`` (R, A, ...)."""
    w = mis_weights(pi, mu, G, G_e)  # (R, A)
    extra = (slice(None), slice(None)) + (None,) * (np.ndim(f) - 2)
    per = lambda q: ((q * w)[extra] * f).sum(1)  # noqa: E731  E_{y ~ q}[w f]
    return (G * per(pi) + G_e * per(mu)) / (G + G_e)


def rl_plus_update(theta, corr, mu, G: int, G_e: int, gamma: float, mode: str, rng):
    """One step's direction (R, A) for prompt rows of logits ``theta`` (R, A), correct answers
    ``corr`` (R, A) and the external behaviour ``mu`` (R, A)."""
    R, A = theta.shape
    rows = np.arange(R)[:, None]
    pi = softmax(theta, axis=1)
    y = draws_per_row(rng, pi, G)  # (R, G)
    if mode == "rl-plus":
        y = np.concatenate([y, draws_per_row(rng, mu, G_e)], axis=1)  # (R, G + G_e)
        w = mis_weights(pi, mu, G, G_e)[rows, y]
    else:
        w = np.ones(y.shape)
    r = corr[rows, y].astype(np.float64)
    adv = (r - r.mean(1, keepdims=True)) * exploration_weight(pi, gamma)[rows, y]
    coef = w * adv / y.shape[1]
    step = np.zeros_like(theta)
    np.add.at(step, (np.repeat(rows[:, 0], y.shape[1]), y.ravel()), coef.ravel())
    return step - coef.sum(1, keepdims=True) * pi


@register("rl-plus", kind="policy-optimization", problem="answer-bandit", papers=PAPERS)
def rl_plus(
    problem,
    iterations,
    group: int = 8,
    external: int = 4,
    gamma: float = 1.0,
    lr: float = 1.0,
    mode: str = "rl-plus",
    learners: int = 16,
    learner_seed: int = 0,
    k: int = 256,
) -> PolicyPath:
    """RL-PLUS (external expert answers, MIS weights, exploration advantage) or plain GRPO."""
    if not isinstance(problem, AnswerBandit):
        raise ValueError(f"rl-plus runs on an answer-bandit (e.g. answer-bandit:P=8,A=6,rare=4), "
                         f"got {type(problem).__name__}")  # fmt: skip
    T = check_iterations("rl-plus", iterations)
    gamma = check_number("rl-plus", "gamma", gamma, positive=False)
    lr = check_number("rl-plus", "lr", lr)
    if mode not in MODES:
        raise ValueError(f"rl-plus: mode must be rl-plus or grpo, got {mode!r}")
    for name, v, low in (("group", group, 2), ("external", external, 1), ("learners", learners, 1),
                         ("k", k, 1)):  # fmt: skip
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ValueError(f"rl-plus: {name} must be an integer >= {low}, got {v!r}")
    rng = np.random.default_rng(learner_seed)
    correct = np.asarray(problem.correct)  # (P, A)
    P, A = correct.shape
    corr = np.tile(correct, (learners, 1))  # (B P, A)
    mu = corr / corr.sum(1, keepdims=True)  # the expert: uniform over the correct answers
    theta = np.tile(problem.base_logp, (learners, 1))  # (B P, A)
    acc, passk, ent, logps = [], [], [], []

    def record():
        lp = log_softmax(theta, axis=1)
        a = (np.exp(lp) * corr).sum(1)
        acc.append(float(a.mean()))
        passk.append(float((1 - (1 - a) ** k).mean()))
        ent.append(float(-(np.exp(lp) * lp).sum(1).mean()))
        logps.append(lp.reshape(learners, P, A).mean(0))

    record()
    for _ in range(T):
        theta += lr * rl_plus_update(theta, corr, mu, group, external, gamma, mode, rng)
        record()
    return PolicyPath(
        objective=np.array(acc),
        regularised=np.array(passk),
        entropy=np.array(ent),
        target_gap=np.full(T + 1, np.nan),
        target_value=float("nan"),
        policies=np.stack(logps),
        config={"group": group, "external": external, "gamma": gamma, "lr": lr, "mode": mode,
                "learners": learners, "learner_seed": learner_seed, "k": k},
    )  # fmt: skip
