r"""Guide, adaptive hints with importance-weighted updates (Nath et al. 2025, "Adaptive Guidance
Accelerates Reinforcement Learning of Reasoning Models", arXiv 2506.13923): on a prompt whose
rollouts all fail, resample with a hint in the context and weight those rollouts by
pi(y | x) / pi(y | x, hint), so the update optimises the policy *without* the hint. Seed row
002-004#G7 (``seed-catalogue-002-004.md#G7``).

What was read [V]: the abstract, as quoted in the catalogue row -- Guide "adaptively incorporates
hints into the model's context on problems for which all rollouts were initially incorrect and
adjusts the importance sampling ratio for the "off-policy" trajectories in order to optimize the
policy for contexts in which the hints are no longer present"; it claims to "theoretically analyze
Guide's learning efficiency" (no statement quoted).

Reconstructed [A]/[M] on an answer bandit (:class:`~theorylab.mdps.answer_bandit.AnswerBandit`; a
policy is a softmax table theta (P, A) of answer logits, initialised at the base model's):

* The hint adds ``hint`` to the correct answers' logits: pi(. | x, h) = softmax(theta_x +
  hint * correct_x) (a context that raises the probability of a correct solution).
* Each step, for every prompt: G rollouts y_i ~ pi(. | x), rewards r_i = 1[y_i correct]. If all
  fail, G fresh rollouts from pi(. | x, h) with weights w_i = pi(y_i | x) / pi(y_i | x, h);
  otherwise w_i = 1. The GRPO advantage A_i = r_i - mean(r) (no standard-deviation scaling) and
  the step theta_x += lr (1/G) sum_i w_i A_i (e_{y_i} - pi(. | x)) (the softmax score).
* For a fixed baseline b, E_{y ~ pi_h}[w(y) (r(y) - b) (e_y - pi)] = sum_y pi(y) (r(y) - b)
  (e_y - pi) = pi * (r - J) = grad_theta J(pi), J = pi(correct | x): the weighted update is
  unbiased for the unhinted objective (:func:`weighted_score_expectation` enumerates it). With
  the group-mean baseline, GRPO's expected update is ((G - 1) / G) grad J; Guide's adds the same
  on the all-fail event, ((G - 1) / G) (1 + (1 - J)^G) grad J (my algebra: GRPO's all-fail
  update is 0 and the hinted group is independent of the failed one).

``mode="grpo"``: the plain update, no hints (a group that all fail contributes zero).

Registered as ``guide-grpo`` (kind ``policy-optimization``, problem ``answer-bandit``;
``iterations`` = T steps): ``objective[t]`` the learner-mean unhinted accuracy pi(correct | x)
averaged over prompts; ``regularised[t]`` the learner-mean fraction of prompts whose update at
step t is non-zero (NaN at t = 0); ``entropy[t]`` the mean answer entropy; ``target_gap`` NaN;
``target_value`` NaN; ``policies`` (T+1, P, A) the learner-mean log-probabilities.
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

PAPERS = ("002-004#G7",)
MODES = ("guide", "grpo")


def importance_ratio(pi: np.ndarray, pi_hint: np.ndarray) -> np.ndarray:
    """w(y) = pi(y | x) / pi(y | x, h) for every answer (same shape as pi)."""
    return pi / pi_hint


def importance_weights(pi: np.ndarray, pi_hint: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The weights (R, G) of sampled answers y (R, G); pi, pi_hint (R, A)."""
    return np.take_along_axis(importance_ratio(pi, pi_hint), y, axis=1)


def weighted_score_expectation(pi, pi_hint, r, b) -> np.ndarray:
    """(A,) E_{y ~ pi_hint}[w(y) (r(y) - b) (e_y - pi)] by enumeration over the answers."""
    w = importance_ratio(pi, pi_hint)  # (A,)
    return ((pi_hint * w * (r - b))[:, None] * (np.eye(pi.shape[0]) - pi[None])).sum(0)


def guide_update(theta, corr, hint: float, group: int, mode: str, rng: np.random.Generator):
    """One step's update direction (R, A) for R prompt rows of logits ``theta`` (R, A) with
    correct answers ``corr`` (R, A), and the advantages (R, G) it used."""
    rows = np.arange(theta.shape[0])[:, None]
    pi = softmax(theta, axis=1)  # (R, A)
    y = draws_per_row(rng, pi, group)  # (R, G)
    w = np.ones(y.shape)
    if mode == "guide":
        fail = ~corr[rows, y].any(1)  # (R,) every rollout wrong
        if fail.any():
            pi_h = softmax(theta[fail] + hint * corr[fail], axis=1)
            y_h = draws_per_row(rng, pi_h, group)
            y[fail] = y_h
            w[fail] = importance_weights(pi[fail], pi_h, y_h)
    r = corr[rows, y].astype(np.float64)  # (R, G)
    adv = r - r.mean(1, keepdims=True)
    coef = w * adv / group  # (R, G)
    step = np.zeros_like(theta)
    np.add.at(step, (np.repeat(rows[:, 0], group), y.ravel()), coef.ravel())
    step -= coef.sum(1, keepdims=True) * pi  # the -pi part of each softmax score
    return step, adv


@register("guide-grpo", kind="policy-optimization", problem="answer-bandit", papers=PAPERS)
def guide_path(
    problem,
    iterations,
    hint: float = 6.0,
    group: int = 8,
    lr: float = 1.0,
    mode: str = "guide",
    learners: int = 16,
    learner_seed: int = 0,
) -> PolicyPath:
    """Guide-GRPO (hints on all-fail prompts, importance-weighted) or plain GRPO for T steps."""
    if not isinstance(problem, AnswerBandit):
        raise ValueError(f"guide-grpo runs on an answer-bandit (e.g. answer-bandit:P=8,A=6,"
                         f"rare=4), got {type(problem).__name__}")  # fmt: skip
    T = check_iterations("guide-grpo", iterations)
    hint = check_number("guide-grpo", "hint", hint, positive=False)
    lr = check_number("guide-grpo", "lr", lr)
    if mode not in MODES:
        raise ValueError(f"guide-grpo: mode must be guide or grpo, got {mode!r}")
    for name, v, low in (("group", group, 2), ("learners", learners, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ValueError(f"guide-grpo: {name} must be an integer >= {low}, got {v!r}")
    rng = np.random.default_rng(learner_seed)
    correct = np.asarray(problem.correct)  # (P, A)
    P, A = correct.shape
    theta = np.tile(problem.base_logp, (learners, 1, 1)).reshape(learners * P, A)  # (B P, A)
    corr = np.tile(correct, (learners, 1))  # (B P, A)
    acc, active, ent, logps = [], [np.nan], [], []

    def record():
        lp = log_softmax(theta, axis=1)
        acc.append(float((np.exp(lp) * corr).sum(1).mean()))
        ent.append(float(-(np.exp(lp) * lp).sum(1).mean()))
        logps.append(lp.reshape(learners, P, A).mean(0))

    record()
    for _ in range(T):
        step, adv = guide_update(theta, corr, hint, group, mode, rng)
        theta += lr * step
        active.append(float((np.abs(adv).sum(1) > 0).mean()))
        record()
    return PolicyPath(
        objective=np.array(acc),
        regularised=np.array(active),
        entropy=np.array(ent),
        target_gap=np.full(T + 1, np.nan),
        target_value=float("nan"),
        policies=np.stack(logps),
        config={
            "hint": hint,
            "group": group,
            "lr": lr,
            "mode": mode,
            "learners": learners,
            "learner_seed": learner_seed,
        },  # fmt: skip
    )
