r"""The choice of divergence in RLVR: reverse KL, forward KL and Jensen-Shannon regularisers toward
the base model, their exact optima, exact gradient ascent on them, and the sample-only estimate.

Seed row ``seed-catalogue-002-004.md#F6``: "The Choice of Divergence: A Neglected Key to
Mitigating Diversity Collapse in Reinforcement Learning with Verifiable Reward" (2025; DPH-RL).
What was read [V] (the abstract, through the catalogue row; no theorem is stated): DPH-RL
"leverages mass-covering f-divergences (like forward-KL and JS-divergence) to function as a
rehearsal mechanism"; "The reverse-KL actively accelerates this decay by narrowing the policy";
it "computes f-divergence using generator functions, requiring only sampling from the initial
policy and no online reference model". Reconstructed [A] (the paper's losses, constants and
models were not read):

* objective per prompt ``F(pi) = E_pi r - beta D(pi, pi_0)`` on an answer bandit (binary
  verifier, several correct answers per prompt), D = ``KL(pi || pi_0)`` (reverse), ``KL(pi_0 ||
  pi)`` (forward) or ``JS(pi, pi_0)``; exact optima by the closed forms of
  :mod:`theorylab.algorithms.planning.divergence_optima` (one scalar root per prompt);
* the generator-function form ``D_f(pi, pi_0) = E_{y ~ pi_0} f(pi(y)/pi_0(y))`` with ``f(t) =
  -log t`` (forward KL), ``t log t`` (reverse KL) and ``(t log(2t/(1+t)) + log(2/(1+t)))/2`` (JS):
  a sample mean over draws from pi_0 alone (:func:`generator_estimate`);
* ``divergence-pg``: exact ascent on F from pi_0 in the softmax logits, ``g_y = dF/dpi_y = r_y -
  beta dD/dpi_y`` with ``dD/dpi_y`` = ``log(pi_y/pi0_y) + 1``, ``-pi0_y/pi_y`` and
  ``log(2 pi_y/(pi_y + pi0_y))/2``: the natural gradient ``theta <- theta + step (g - E_pi g)``
  (mirror ascent) for reverse KL and JS; for forward KL the same step divided by ``1 + beta
  max_y pi_0(y)/pi(y)``, since its natural gradient ``beta pi_0/pi`` explodes on rare answers
  (measured on answer-bandit P = 16, A = 12: the undamped step diverges at beta <= 0.3; plain
  gradient ascent crawls, KL to the optimum 1e-3 after 2000 steps at beta = 0.3; the damped
  step reaches 1e-16 within 150 steps for beta in 0.05..1). Default step: ``1/beta`` for reverse
  KL (the optimum in one step: ``log pi_1 = log pi_0 + r/beta - log Z``) and JS, 1 for forward
  KL [A].

What the exact optima show (derived here, measured by claim ``divergence-choice-coverage``): with
a binary reward all three optima keep the base model's ratios within the correct answers, so the
divergences differ in how they spread accuracy *across prompts*: the reverse-KL optimum's
accuracy on a prompt is ``a e^(1/beta) / (a e^(1/beta) + 1 - a)`` (a = the base model's
accuracy), tiny where a << e^(-1/beta), while the forward-KL optimum's is ``1 - beta (1 - a) /
lambda`` -- close to 1 - beta on every prompt the base model can solve at all (mass-covering).
At matched mean pass@1 the forward-KL and JS optima therefore keep the hard prompts alive (higher
worst-prompt accuracy and pass@k) where the reverse KL gives them up.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_softmax

from theorylab.algorithms.planning import divergence_optima
from theorylab.algorithms.planning.kl_policy_gradient import sequence_entropy
from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
)
from theorylab.algorithms.registry import register
from theorylab.mdps.answer_bandit import AnswerBandit

DIVERGENCES = ("reverse", "forward", "js")


def _check_divergence(divergence: str) -> None:
    if divergence not in DIVERGENCES:
        raise ValueError(f"divergence must be one of {', '.join(DIVERGENCES)}, got {divergence!r}")


def optimum(inst: AnswerBandit, divergence: str, beta: float) -> np.ndarray:
    """(P, A) log pi* of ``E r - beta D(pi, pi_0)`` (closed forms, ``divergence_optima``)."""
    _check_divergence(divergence)
    solve = {
        "reverse": divergence_optima.reverse_kl_optimum,
        "forward": divergence_optima.forward_kl_optimum,
        "js": divergence_optima.js_optimum,
    }[divergence]
    return solve(inst.base_logp, inst.correct.astype(np.float64), beta)


def matched_beta(inst: AnswerBandit, divergence: str, accuracy: float) -> float:
    """The beta whose optimum has mean accuracy ``accuracy`` (bisection on log beta over
    [1e-3, 1e3]; the optimum's accuracy falls as beta grows)."""
    lo_acc = float(inst.accuracy(optimum(inst, divergence, 1e3)).mean())
    hi_acc = float(inst.accuracy(optimum(inst, divergence, 1e-3)).mean())
    if not lo_acc < accuracy < hi_acc:
        raise ValueError(
            f"accuracy {accuracy} is outside the reachable range ({lo_acc:.4f}, {hi_acc:.4f}) "
            f"of the {divergence} optima for beta in [1e-3, 1e3]"
        )

    def excess(log_beta: float) -> float:
        return float(inst.accuracy(optimum(inst, divergence, np.exp(log_beta))).mean()) - accuracy

    return float(np.exp(brentq(excess, np.log(1e-3), np.log(1e3), xtol=1e-13)))


def divergence_value(divergence: str, logp: np.ndarray, base: np.ndarray) -> np.ndarray:
    """(P,) D(pi, pi_0) written directly from the two tables (P, A)."""
    _check_divergence(divergence)
    p, q = np.exp(logp), np.exp(base)
    if divergence == "reverse":
        return (p * (logp - base)).sum(-1)
    if divergence == "forward":
        return (q * (base - logp)).sum(-1)
    m = 0.5 * (p + q)
    return 0.5 * (p * np.log(p / m)).sum(-1) + 0.5 * (q * np.log(q / m)).sum(-1)


def generator(divergence: str, t: np.ndarray) -> np.ndarray:
    """f(t) with ``D_f(pi, pi_0) = E_{pi_0} f(pi/pi_0)`` (module docstring)."""
    _check_divergence(divergence)
    if divergence == "reverse":
        return t * np.log(t)
    if divergence == "forward":
        return -np.log(t)
    return 0.5 * (t * np.log(2 * t / (1 + t)) + np.log(2 / (1 + t)))


def generator_estimate(divergence, logp, base, samples) -> np.ndarray:
    """(P,) the sample-only estimate: the mean of f(pi(y_i)/pi_0(y_i)) over ``samples`` (P, n)
    answer indices drawn from pi_0 (no online reference model beyond its log-probabilities)."""
    rows = np.arange(logp.shape[0])[:, None]
    return generator(divergence, np.exp(logp[rows, samples] - base[rows, samples])).mean(-1)


def divergence_gradient(inst: AnswerBandit, logits, divergence: str, beta: float) -> np.ndarray:
    """(P, A) the ascent direction of ``F = E r - beta D`` in the softmax logits: the natural
    gradient ``g - E_pi g`` (``g = dF/dpi``) for reverse KL and JS, the plain gradient
    ``pi (g - E_pi g)`` for forward KL (module docstring)."""
    logp = log_softmax(logits, axis=1)
    p, base = np.exp(logp), inst.base_logp
    if divergence == "reverse":
        dd = logp - base + 1.0
    elif divergence == "forward":
        dd = -np.exp(base - logp)
    else:
        dd = 0.5 * (np.log(2.0) + logp - np.logaddexp(logp, base))
    g = inst.correct - beta * dd
    centred = g - (p * g).sum(axis=1, keepdims=True)
    if divergence == "forward":  # the natural step damped by the size of beta pi_0 / pi
        return centred / (1.0 + beta * np.exp(base - logp).max(axis=1, keepdims=True))
    return centred


def divergence_pg(
    inst: AnswerBandit,
    iterations: int,
    *,
    divergence: str = "forward",
    beta: float = 0.2,
    step: float | None = None,
) -> PolicyPath:
    """K exact natural-gradient steps on ``E r - beta D(pi, pi_0)`` from pi_0 (module
    docstring); target: the closed-form optimum."""
    if not isinstance(inst, AnswerBandit):
        raise ValueError(f"divergence-pg runs on an answer-bandit, got {type(inst).__name__}")
    _check_divergence(divergence)
    K = check_iterations("divergence-pg", iterations)
    beta = check_number("divergence-pg", "beta", beta)
    default = 1.0 if divergence == "forward" else 1.0 / beta
    step = check_number("divergence-pg", "step", default if step is None else step)
    base = inst.base_logp
    theta = base.copy()
    logps = [base]
    for _ in range(K):
        theta = theta + step * divergence_gradient(inst, theta, divergence, beta)
        logps.append(log_softmax(theta, axis=1))
    logps = np.stack(logps)  # (K+1, P, A)
    star = optimum(inst, divergence, beta)
    p = np.exp(logps)
    reg = np.array(
        [(inst.accuracy(lp) - beta * divergence_value(divergence, lp, base)).mean() for lp in logps]
    )
    K1, P, A = logps.shape
    return PolicyPath(
        objective=inst.accuracy(logps).mean(-1),
        regularised=reg,
        entropy=sequence_entropy(logps.reshape(-1, A)).reshape(K1, P).mean(-1),
        target_gap=(p * (logps - star)).sum(-1).mean(-1),
        target_value=float(
            (inst.accuracy(star) - beta * divergence_value(divergence, star, base)).mean()
        ),
        policies=logps,
        config={"divergence": divergence, "beta": float(beta), "step": float(step)},
    )


@register(
    "divergence-pg", kind="policy-optimization", problem="answer-bandit", papers=("002-004#F6",)
)
def divergence_pg_entry(problem, iterations, divergence="forward", beta=0.2, step=None):
    """Exact natural PG on E r - beta D(pi, pi_0), D reverse KL, forward KL or JS."""
    return divergence_pg(problem, iterations, divergence=divergence, beta=beta, step=step)
