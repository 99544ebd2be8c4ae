"""What an exact policy-optimisation run returns: the exact metrics of every iterate.

Every algorithm of kind ``"policy-optimization"`` (:mod:`theorylab.algorithms.policy_optimization`)
runs a deterministic iteration pi_0, pi_1, ..., pi_K on a model it solves exactly and scores each
iterate without sampling; the runner (``theorylab.runners.policy_optimization``) turns a
:class:`PolicyPath` into a ``PolicyOptimizationResult``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class PolicyPath:
    """Exact metrics of the iterates k = 0..K (each ``(K+1,)``, prompts or start states averaged).

    objective: the unregularised objective (E r, or J(pi));
    regularised: the objective the algorithm maximises (E r - beta KL(pi || ref), ...);
    entropy: the policy's entropy (sequence entropy on a token tree), nats;
    target_gap: KL(pi_k || the algorithm's stated limit) (NaN where it states none);
    target_value: the regularised objective of that limit (NaN where none);
    policies: the iterates themselves (``(K+1, ...)``: conditional log-probabilities);
    config: the algorithm's settings, recorded with the result.
    """

    objective: np.ndarray
    regularised: np.ndarray
    entropy: np.ndarray
    target_gap: np.ndarray
    target_value: float
    policies: np.ndarray
    config: dict[str, Any] = field(default_factory=dict)


def check_iterations(who: str, iterations) -> int:
    """K as an int, or a one-line error naming the algorithm (``who``) and the value."""
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)):
        raise ValueError(f"{who}: iterations must be a positive integer, got {iterations!r}")
    if iterations < 1:
        raise ValueError(f"{who}: iterations must be a positive integer, got {iterations!r}")
    return int(iterations)


def check_number(who: str, name: str, value, *, positive: bool = True) -> float:
    """A finite number > 0 (``positive``) or >= 0, or a one-line error naming it."""
    numeric = (int, float, np.integer, np.floating)
    ok = isinstance(value, numeric) and not isinstance(value, bool) and np.isfinite(value)
    if not ok or (value <= 0 if positive else value < 0):
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f"{who}: {name} must be a finite number {bound}, got {value!r}")
    return float(value)


def check_positive(algorithm: str, **values) -> None:
    """Each value a finite number > 0, or a one-line error naming it (``check_number`` each)."""
    for name, value in values.items():
        check_number(algorithm, name, value)


def soft_scored_path(mdp, pis: np.ndarray, star, tau: float, config: dict) -> PolicyPath:
    """The exact metrics of stationary iterates pis (K+1, S, A) on a discounted model against
    the entropy-regularised optimum ``star`` (a SoftSolution at temperature tau, uniform
    reference): J, J_tau, entropy, KL(pi_k || pi*_tau) (means over states)."""
    from theorylab.algorithms.planning.evaluation import evaluate_discounted
    from theorylab.algorithms.planning.soft_value_iteration import (
        policy_entropy,
        regularised_value,
    )

    mu = mdp.mu0
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = np.where(pis > 0, pis * (np.log(pis) - np.log(star.policy)[None]), 0.0).sum(-1)
    return PolicyPath(
        objective=np.array([evaluate_discounted(mdp, p) @ mu for p in pis]),
        regularised=np.array([regularised_value(mdp, p, tau) @ mu for p in pis]),
        entropy=policy_entropy(pis).mean(axis=-1),
        target_gap=kl.mean(axis=-1),
        target_value=float(star.V @ mu),
        policies=pis,
        config=config,
    )


def kl_scored_sequences(task, seqs: np.ndarray, beta: float, policies, config: dict) -> PolicyPath:
    """The exact metrics of iterates given as sequence log-probabilities ``seqs`` (K+1, P, Y) on a
    token-tree task against its KL-regularised optimum pi*_beta = ref e^{r / beta} / Z (means over
    prompts): E r, E r - beta KL(pi || ref), the sequence entropy, KL(pi_k || pi*_beta) and
    beta log Z; ``policies`` is what the path records (the sequence or conditional tables)."""
    from theorylab.algorithms.planning.kl_policy_gradient import sequence_entropy

    star = task.optimum_by_enumeration(beta)  # (P, Y)
    p, r, ref = np.exp(seqs), task.mean_reward, task.ref_logprobs
    objective = (p * r).sum(-1).mean(-1)
    return PolicyPath(
        objective=objective,
        regularised=objective - beta * (p * (seqs - ref)).sum(-1).mean(-1),
        entropy=np.stack([sequence_entropy(s) for s in seqs]).mean(-1),
        target_gap=(p * (seqs - star)).sum(-1).mean(-1),
        target_value=float(beta * np.log(np.exp(ref + r / beta).sum(-1)).mean()),
        policies=policies,
        config=config,
    )


def policy_objectives(mdp, pis: np.ndarray) -> np.ndarray:
    """J(pi_k) = V^{pi_k}(mu0) of stationary iterates pis (K+1, S, A) on a discounted model,
    one linear solve per distinct policy (greedy iterates recur)."""
    from theorylab.algorithms.planning.evaluation import evaluate_discounted

    cache: dict[bytes, float] = {}
    out = np.empty(len(pis))
    for k, p in enumerate(pis):
        key = np.ascontiguousarray(p).tobytes()
        if key not in cache:
            cache[key] = float(evaluate_discounted(mdp, p) @ mdp.mu0)
        out[k] = cache[key]
    return out
