r"""RAPO (Rewards-Aware Policy Optimization), exactly on an answer bandit whose base model cannot
sample the correct answers of some prompts: a forward-KL penalty toward a reward-reweighted
reference, against the reverse-KL penalty toward the base model.

Seed reference: ``seed-catalogue-002-004.md#F9``. Paper: "Unlocking Reasoning Capabilities in LLMs
via Reinforcement Learning Exploration" (2025). Card: docs/algorithms/rapo.md.

What was read [V] (the abstract, through the catalogue row; no theorem is stated): the pass@k
ceiling is attributed to "the reverse Kullback-Leibler (KL) divergence regularizer, whose
mode-seeking behavior keeps the policy trapped inside the base model's support region"; RAPO "(i)
utilizes the forward KL penalty to replace the reverse KL penalty for out-of-distribution
exploration, and (ii) reweights the reference policy to facilitate adaptive in-distribution
exploration". Reconstructed [A] (the paper's reweighting rule, estimator and constants were not
read): the reweighted reference ``pi~ = pi_0 e^{r / tau} / Z`` (the catalogue's assumption, with
the verifier's reward as r), and RAPO's objective per prompt

    F(pi) = E_pi r - beta KL(pi~ || pi),

whose exact maximiser is :func:`~theorylab.algorithms.planning.divergence_optima.
forward_kl_optimum` with ``off_support=True``: the forward KL charges nothing outside supp(pi_0),
so on a prompt whose correct answers the base model never samples the optimum puts 1 - beta
(beta < 1) on them, while the reverse-KL optimum pi_0 e^{r / beta} / Z keeps them at exactly 0
(its support is supp(pi_0)). Within supp(pi_0) the reweighting raises the correct answers'
reference mass (tau -> infinity: pi~ = pi_0).

The instance (constructed here): an ``answer-bandit`` whose base model pi_0 gives probability 0 to
the correct answers of its first ``unsolvable`` prompts (:func:`base_model`).

Registered ``rapo`` (kind ``policy-optimization``, problem ``answer-bandit``): K steps of exact
ascent on F in the softmax logits, from pi_0 mixed with ``smoothing`` x uniform (a policy that can
leave supp(pi_0), as a softmax LM can), the natural-gradient step of ``divergence-pg``'s forward
KL, damped by 1 + beta max pi~/pi (:mod:`.divergence_choice`); ``target_gap`` = KL(pi* || pi_k)
(pi* has zeros, so the reverse direction is reported); ``divergence="reverse"`` runs the same
ascent on E r - beta KL(pi || pi_0) (the baseline).
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax, logsumexp

from theorylab.algorithms.planning import divergence_optima
from theorylab.algorithms.planning.kl_policy_gradient import sequence_entropy
from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
)
from theorylab.algorithms.registry import register
from theorylab.mdps.answer_bandit import AnswerBandit

PAPERS = ("002-004#F9",)
DIVERGENCES = ("forward", "reverse")


def base_model(inst: AnswerBandit, unsolvable: int) -> np.ndarray:
    """(P, A) log pi_0: the bandit's base with its correct answers removed (probability 0,
    renormalised) on the first ``unsolvable`` prompts."""
    P = inst.correct.shape[0]
    if isinstance(unsolvable, bool) or not isinstance(unsolvable, (int, np.integer)):
        raise ValueError(f"rapo: unsolvable must be an integer, got {unsolvable!r}")
    if not 0 <= unsolvable < P:
        raise ValueError(f"rapo: unsolvable must be in 0..{P - 1} (prompts), got {unsolvable}")
    logp = inst.base_logp.copy()
    logp[:unsolvable][inst.correct[:unsolvable]] = -np.inf
    return logp - logsumexp(logp, axis=1, keepdims=True)


def reweighted_reference(base: np.ndarray, reward: np.ndarray, tau: float) -> np.ndarray:
    """(P, A) log pi~ = log pi_0 + r / tau - log Z (tau = inf: pi_0)."""
    if np.isinf(tau):
        return base.copy()
    logits = base + reward / tau
    return logits - logsumexp(logits, axis=1, keepdims=True)


def optimum(base, reward, beta: float, tau: float, divergence: str = "forward") -> np.ndarray:
    """(P, A) log pi*: RAPO's (forward KL to pi~, off supp(pi_0) included) or the reverse-KL
    baseline's (pi_0 e^{r / beta} / Z)."""
    if divergence == "reverse":
        return divergence_optima.reverse_kl_optimum(base, reward, beta)
    ref = reweighted_reference(base, reward, tau)
    return divergence_optima.forward_kl_optimum(ref, reward, beta, off_support=True)


def ascent_direction(logits, ref, reward, beta: float, divergence: str) -> np.ndarray:
    """(P, A) the damped natural-gradient direction of F (module docstring) in the logits."""
    logp = log_softmax(logits, axis=1)
    p = np.exp(logp)
    if divergence == "forward":
        ratio = np.exp(ref - logp)  # pi~ / pi (0 off supp(pi~))
        g = reward + beta * ratio
        return (g - (p * g).sum(1, keepdims=True)) / (1.0 + beta * ratio.max(1, keepdims=True))
    with np.errstate(invalid="ignore"):
        g = reward - beta * np.where(p > 0, logp - ref, 0.0)
    return g - (p * g).sum(1, keepdims=True)


@register("rapo", kind="policy-optimization", problem="answer-bandit", papers=PAPERS)
def rapo(
    problem,
    iterations,
    beta: float = 0.5,
    tau: float = 1.0,
    unsolvable: int = 2,
    divergence: str = "forward",
    step: float = 1.0,
    smoothing: float = 1e-3,
) -> PolicyPath:
    """RAPO: exact ascent on E r - beta KL(pi~ || pi) (or the reverse-KL baseline)."""
    if not isinstance(problem, AnswerBandit):
        raise ValueError(f"rapo runs on an answer-bandit (e.g. answer-bandit:P=6,A=8,correct=2), "
                         f"got {type(problem).__name__}")  # fmt: skip
    K = check_iterations("rapo", iterations)
    beta = check_number("rapo", "beta", beta)
    tau = check_number("rapo", "tau", tau)
    step = check_number("rapo", "step", step)
    smoothing = check_number("rapo", "smoothing", smoothing)
    if divergence not in DIVERGENCES:
        raise ValueError(f"rapo: divergence must be forward or reverse, got {divergence!r}")
    base = base_model(problem, unsolvable)
    r = problem.correct.astype(np.float64)
    ref = reweighted_reference(base, r, tau) if divergence == "forward" else base
    star = optimum(base, r, beta, tau, divergence)
    A = r.shape[1]
    if divergence == "reverse":  # its ascent stays in supp(pi_0): start there
        theta = base.copy()
    else:
        theta = np.log((1 - smoothing) * np.exp(base) + smoothing / A)
    its = [log_softmax(theta, axis=1)]
    for _ in range(K):
        theta = theta + step * np.where(np.isfinite(theta), ascent_direction(
            theta, ref, r, beta, divergence), 0.0)  # fmt: skip
        its.append(log_softmax(theta, axis=1))
    logps = np.stack(its)  # (K+1, P, A)
    p = np.exp(logps)
    ps = np.exp(star)
    q = np.exp(ref)
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.where(ps > 0, ps * (star - logps), 0.0).sum(-1).mean(-1)
        if divergence == "forward":  # KL(pi~ || pi_k)
            div = np.where(q > 0, q * (ref - logps), 0.0).sum(-1).mean(-1)
        else:  # KL(pi_k || pi_0)
            div = np.where(p > 0, p * (logps - ref), 0.0).sum(-1).mean(-1)
    return PolicyPath(
        objective=(p * r).sum(-1).mean(-1),
        regularised=(p * r).sum(-1).mean(-1) - beta * div,
        entropy=np.stack([sequence_entropy(lp) for lp in logps]).mean(-1),
        target_gap=gap,
        target_value=float((ps * r).sum(-1).mean()),
        policies=logps,
        config={"beta": beta, "tau": tau, "unsolvable": int(unsolvable),
                "divergence": divergence, "step": step, "smoothing": smoothing},
    )  # fmt: skip
