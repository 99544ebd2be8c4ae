r"""Regularised policy gradient (RPG): the surrogate losses of forward- and reverse-KL-regularised
objectives under off-policy sampling, and exact ascent on their expected gradients.

Seed row ``seed-catalogue-000.md#10``: Y. Zhang, Y. Liu, H. Yuan, Y. Yuan, Q. Gu, A. C. Yao,
"On the Design of KL-Regularized Policy Gradient Algorithms for LLM Reasoning", arXiv:2505.17508
(2025). What was read [V] (the abstract and the project page, through stored copies): the paper
asks "under the off-policy setting, what weighting is required for each KL variant so that the
surrogate we optimize yields the exact gradient of the intended KL-regularized objective?"; it
derives surrogates for forward and reverse KL in normalised (KL) and unnormalised (UKL) forms,
shows that "the widely-used k3 penalty is exactly the unnormalized KL", and "identifies and
corrects an off-policy importance-weighting mismatch in GRPO's KL term". Reconstructed [A] (the
paper's equations were not read; these are derived here and checked by the claim): with samples
``y ~ pi_old``, ``w = pi_theta(y) / pi_old(y)`` and ``rho = ref(y) / pi_old(y)``, the per-sample
losses (their mean under pi_old is ``-J(theta) + const`` for every theta, so their gradient is
``-grad J`` off-policy too):

    rkl  (J = E r - beta KL(pi || ref)):   l = -w r + beta w log(pi_theta / ref)
    urkl (unnormalised reverse, k3):       l = -w r + beta (w log(pi_theta / ref) - w + rho)
    fkl  (J = E r - beta KL(ref || pi)):   l = -w r - beta rho log pi_theta
    ufkl (unnormalised forward):           l = -w r + beta (rho log(ref / pi_theta) + w - rho)

each ``grad l = c(y) grad log pi_theta(y)`` with ``c = w (-r + beta log(pi/ref) + beta)``,
``w (-r + beta log(pi/ref))``, ``-w r - beta rho`` and ``-w r - beta rho + beta w``
(:func:`surrogate_coefficients`). The unnormalised divergences add ``sum pi - sum ref`` (= 0 for
a normalised policy), so a surrogate and its UKL twin share the objective and the gradient but
not the per-sample loss (the UKL terms have mean zero and smaller variance near pi = ref).
The REINFORCE-style losses of the paper (``-sg(c(y)) log pi_theta(y)``) have the same gradient
by construction and are not repeated.

Algorithm (``rpg``): tabular autoregressive softmax on a token tree, theta_0 = log ref,
``theta_{k+1} = theta_k - step E_{y ~ pi_theta_k}[grad l(theta_k; y)]`` (on-policy, the expected
gradient computed exactly by enumerating the responses), K iterations; step None: the
:func:`~theorylab.algorithms.policy_optimization.kl_bayesian_inference.default_step` of kl-pg.
The paper's clipping (RPG-Style Clip), its iterative reference update and sampled batches are not
implemented [deviation]: the claim is about the gradients and their fixed points.

Fixed points (:mod:`theorylab.algorithms.planning.divergence_optima`): reverse KL -> ``ref
e^(r/beta) / Z``; forward KL -> ``beta ref / (lambda - r)``, which keeps the floor ``pi(y) >=
beta ref(y) / (Delta + beta)`` on every response (mass-covering; Delta = max r - min r).

Measured (claim ``rpg-surrogate-gradients``; tokentree:V=3,L=2, U(0, 1) rewards, beta = 0.2):
the four expected surrogate gradients equal the exact gradients (reverse: the tree's dynamic
programme; forward: central differences of the enumerated objective) to 4e-10 at random
off-policy points of a random reference; from a uniform reference the runs reach KL(pi_K ||
pi*) <= 1e-12 in 800 steps (2 prompts). From a random reference the default step (15 at beta =
0.2) is slow for rkl (KL 1.2e-7 after 2500 steps, 6 prompts) and locks fkl in a 2-cycle (KL
9.5e-3); step 10 converges there (fkl 1e-16, rkl 6e-7 after 2500).
"""

from __future__ import annotations

import numpy as np

from theorylab.algorithms.planning.divergence_optima import (
    forward_kl_optimum,
    reverse_kl_optimum,
)
from theorylab.algorithms.planning.kl_policy_gradient import (
    log_softmax,
    sequence_entropy,
    weighted_score,
)
from theorylab.algorithms.policy_optimization.kl_bayesian_inference import default_step
from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
)
from theorylab.algorithms.registry import register
from theorylab.mdps.token_tree import TokenTreeTask

SURROGATES = ("rkl", "urkl", "fkl", "ufkl")


def _check_surrogate(name: str) -> None:
    if name not in SURROGATES:
        raise ValueError(f"rpg: surrogate must be one of {', '.join(SURROGATES)}, got {name!r}")


def surrogate_losses(name, beta, logp, old_logp, ref_logp, reward) -> np.ndarray:
    """(P, Y) the loss l(theta; y) of every response y taken as a sample from pi_old; ``logp``,
    ``old_logp``, ``ref_logp``: (P, Y) sequence log-probabilities of pi_theta, pi_old, ref."""
    _check_surrogate(name)
    w, rho = np.exp(logp - old_logp), np.exp(ref_logp - old_logp)
    log_ratio = logp - ref_logp
    if name == "rkl":
        return -w * reward + beta * w * log_ratio
    if name == "urkl":
        return -w * reward + beta * (w * log_ratio - w + rho)
    if name == "fkl":
        return -w * reward - beta * rho * logp
    return -w * reward + beta * (-rho * log_ratio + w - rho)  # ufkl


def surrogate_coefficients(name, beta, logp, old_logp, ref_logp, reward) -> np.ndarray:
    """(P, Y) c(y) with ``grad l(theta; y) = c(y) grad log pi_theta(y)`` (module docstring)."""
    _check_surrogate(name)
    w, rho = np.exp(logp - old_logp), np.exp(ref_logp - old_logp)
    if name == "rkl":
        return w * (-reward + beta * (logp - ref_logp) + beta)
    if name == "urkl":
        return w * (-reward + beta * (logp - ref_logp))
    if name == "fkl":
        return -w * reward - beta * rho
    return -w * reward - beta * rho + beta * w  # ufkl


def expected_surrogate_gradient(task, logits, old_logp, name, beta) -> np.ndarray:
    """(P, N, V) ``E_{y ~ pi_old} grad l(theta; y)`` at the policy of ``logits`` (P, N, V), by
    enumeration of the responses (``-grad J`` when the surrogate is right)."""
    logp = task.sequence_logprobs(log_softmax(logits))
    c = surrogate_coefficients(name, beta, logp, old_logp, task.ref_logprobs, task.mean_reward)
    return weighted_score(task, logits, np.exp(old_logp) * c)


def sampled_surrogate_gradient(task, logits, old_logp, name, beta, samples) -> np.ndarray:
    """(P, N, V) the mean of ``grad l(theta; y_i)`` over ``samples`` (P, n) response indices
    drawn from pi_old (the Monte-Carlo gradient a learner computes)."""
    logp = task.sequence_logprobs(log_softmax(logits))
    c = surrogate_coefficients(name, beta, logp, old_logp, task.ref_logprobs, task.mean_reward)
    counts = np.zeros_like(c)
    for x in range(c.shape[0]):
        counts[x] = np.bincount(samples[x], minlength=c.shape[1]) / samples.shape[1]
    return weighted_score(task, logits, counts * c)


def divergence_of(name: str) -> str:
    """'reverse' or 'forward': the KL direction a surrogate regularises with."""
    _check_surrogate(name)
    return "reverse" if name in ("rkl", "urkl") else "forward"


def regularised_objective(name, beta, logp, ref_logp, reward) -> np.ndarray:
    """(P,) ``E_pi r - beta D`` with D the surrogate's KL direction (unnormalised = normalised
    for normalised tables)."""
    p, q = np.exp(logp), np.exp(ref_logp)
    if divergence_of(name) == "reverse":
        div = (p * (logp - ref_logp)).sum(axis=1)
    else:
        div = np.where(q > 0, q * (ref_logp - logp), 0.0).sum(axis=1)
    return (p * reward).sum(axis=1) - beta * div


def stationary_point(task: TokenTreeTask, name: str, beta: float) -> np.ndarray:
    """(P, Y) log pi* of the surrogate's objective (closed forms, ``divergence_optima``)."""
    solve = reverse_kl_optimum if divergence_of(name) == "reverse" else forward_kl_optimum
    return solve(task.ref_logprobs, task.mean_reward, beta)


def rpg_ascent(
    task: TokenTreeTask,
    iterations: int,
    *,
    surrogate: str = "rkl",
    beta: float = 0.2,
    step: float | None = None,
) -> PolicyPath:
    """K on-policy steps along ``-E grad l`` from theta_0 = log ref (module docstring)."""
    if not isinstance(task, TokenTreeTask):
        raise ValueError(
            f"rpg runs on a token-tree task (e.g. tokentree:V=3,L=2), got {type(task).__name__}"
        )
    _check_surrogate(surrogate)
    K = check_iterations("rpg", iterations)
    beta = check_number("rpg", "beta", beta)
    step = check_number("rpg", "step", default_step(beta) if step is None else step)
    theta = np.log(task.ref_cond)  # (P, N, V)
    iterates = [log_softmax(theta)]
    for _ in range(K):
        old = task.sequence_logprobs(log_softmax(theta))
        theta = theta - step * expected_surrogate_gradient(task, theta, old, surrogate, beta)
        iterates.append(log_softmax(theta))
    policies = np.stack(iterates)  # (K+1, P, N, V)
    seqs = policies[:, :, task.token_nodes, task.tokens].sum(axis=-1)  # (K+1, P, Y)
    r, ref = task.mean_reward, task.ref_logprobs
    star = stationary_point(task, surrogate, beta)  # (P, Y)
    probs = np.exp(seqs)
    gap = (probs * (seqs - star)).sum(axis=-1).mean(axis=-1)  # KL(pi_k || pi*)
    reg = np.array([regularised_objective(surrogate, beta, s, ref, r).mean() for s in seqs])
    K1 = policies.shape[0]
    return PolicyPath(
        objective=(probs * r).sum(axis=-1).mean(axis=-1),
        regularised=reg,
        entropy=sequence_entropy(seqs.reshape(-1, seqs.shape[-1])).reshape(K1, -1).mean(-1),
        target_gap=gap,
        target_value=float(regularised_objective(surrogate, beta, star, ref, r).mean()),
        policies=policies,
        config={"surrogate": surrogate, "beta": float(beta), "step": float(step)},
    )


@register("rpg", kind="policy-optimization", problem="token-tree", papers=("000#10",))
def rpg(problem, iterations, surrogate: str = "rkl", beta: float = 0.2, step: float | None = None):
    """RPG: exact on-policy ascent on a forward/reverse (U)KL surrogate (Zhang et al. 2025)."""
    return rpg_ascent(problem, iterations, surrogate=surrogate, beta=beta, step=step)
