r"""Contrastive Policy Gradient (CoPG), exactly on the response bandit of a token-tree task: an
off-policy policy gradient on sequence-level scores whose contrastive pair supplies the baseline.

Seed reference: ``seed-catalogue-000.md#56``. Paper: Flet-Berliac, Grinsztajn, Strub, Bigaj,
Choi, Wu, Geist, Pietquin et al., "Contrastive Policy Gradient: Aligning LLMs on sequence-level
scores in a supervised-friendly fashion", EMNLP 2024, arXiv:2406.19185. Card:
docs/algorithms/copg.md.

What was read [V] (the abstract, through the catalogue row): CoPG is "a simple and mathematically
principled new RL algorithm that can estimate the optimal policy even from off-policy data"; "We
show this approach to generalize the direct alignment method IPO (identity preference
optimization) and classic policy gradient"; the row adds "the importance of the right state
baseline" and a toy bandit with a KL-regularised objective and fixed behaviour data. The update
below is our reconstruction [A] of the contrastive estimator from those sentences (the paper's
equations were not read):

    R^pi(y) = r(y) - beta log pi(y) / ref(y)                      (the regularised score)
    g(pi; mu) = 1/2 E_{y, y' ~ mu} [ (R^pi(y) - R^pi(y')) (grad log pi(y) - grad log pi(y')) ]

with mu a fixed behaviour policy (no importance weights). It is minus the gradient of the
contrastive least squares (1 / 4 beta) E_{mu x mu} (R^pi(y) - R^pi(y'))^2, whose minimum 0 is
attained where R^pi is constant on supp(mu), i.e. pi = ref e^{r / beta} / Z = pi*_beta on the
support (a full-support mu: everywhere). For the tabular softmax (grad log pi(y) = e_y - pi) the
pair's -pi terms cancel and g = mu * (R - <mu, R>): the partner's score is a baseline, the
behaviour's mean regularised score. Consequences checked by claim ``copg-off-policy-fixed-point``:

* the fixed point from off-policy data is pi*_beta (closed form, enumeration);
* on-policy (mu = pi) g = pi * (R - <pi, R>) is the exact gradient of E_pi r - beta KL(pi || ref)
  (classic policy gradient with the value baseline);
* preference-derived rewards -- for a compared pair r(y_w) - r(y_l) = 1/2 -- turn the pair's term
  into (1/2 - beta h)(e_w - e_l), h = log pi/ref (y_w) - log pi/ref (y_l): minus the gradient of
  (beta^2 / 2)(h - 1 / (2 beta))^2, IPO's loss with tau = beta (:func:`copg_pairs_gradient`).

The control (mutation ``copg-no-contrast``, in validations/copg_mutations.py): plain off-policy
policy gradient E_mu [R^pi(y) grad log pi(y)] = mu * R - <mu, R> pi, without the contrastive
partner; its stationary points solve mu R = <mu, R> pi, not pi* (biased).

Registered ``copg`` (kind ``policy-optimization``, a token-tree task; responses are the bandit's
arms, logits a (P, Y) table over whole responses): K steps of gradient ascent theta += step g from
theta_0 = log ref, with ``behaviour`` uniform, a random softmax (``behaviour_seed``), the
reference, or ``on-policy`` (mu = pi_k); ``target_gap`` = KL(pi_k || pi*_beta).
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax

from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
    kl_scored_sequences,
)
from theorylab.algorithms.registry import register
from theorylab.mdps.token_tree import TreeTask

PAPERS = ("000#56", "002-004#E11")  # the same paper, two catalogue rows
BEHAVIOURS = ("uniform", "random", "reference", "on-policy")


def behaviour_logp(task: TreeTask, behaviour: str, seed: int = 0) -> np.ndarray:
    """(P, Y) log mu: uniform, a softmax of standard normal logits (``seed``) or the reference."""
    P, Y = task.n_prompts, task.n_responses
    if behaviour == "uniform":
        return np.full((P, Y), -np.log(Y))
    if behaviour == "random":
        return log_softmax(np.random.default_rng(seed).standard_normal((P, Y)), axis=1)
    if behaviour == "reference":
        return task.ref_logprobs
    raise ValueError(f"copg: behaviour must be one of {', '.join(BEHAVIOURS[:3])}, got "
                     f"{behaviour!r}")  # fmt: skip


def regularised_score(logp, ref_logp, reward, beta: float) -> np.ndarray:
    """(P, Y) R^pi(y) = r(y) - beta log pi(y) / ref(y)."""
    return reward - beta * (logp - ref_logp)


def copg_gradient(logits, ref_logp, reward, mu, beta: float) -> np.ndarray:
    """(P, Y) CoPG's ascent direction in the logits (module docstring), written as the pair sum
    1/2 sum_{y, y'} mu(y) mu(y') (R(y) - R(y')) (score(y) - score(y')) with score(y) = e_y - pi."""
    logp = log_softmax(logits, axis=1)
    R = regularised_score(logp, ref_logp, reward, beta)  # (P, Y)
    Y = logp.shape[1]
    score = np.eye(Y)[None] - np.exp(logp)[:, None, :]  # (P, Y, Y): row y is grad log pi(y)
    dR = R[:, :, None] - R[:, None, :]  # (P, Y, Y') R(y) - R(y')
    w = mu[:, :, None] * mu[:, None, :] * dR  # (P, Y, Y')
    return 0.5 * (np.einsum("pab,pak->pk", w, score) - np.einsum("pab,pbk->pk", w, score))


def copg_pairs_gradient(logits, ref_logp, winners, losers, beta: float) -> np.ndarray:
    """(P, Y) CoPG on a fixed data set of compared pairs (``winners``, ``losers`` (P, n)) with
    preference-derived rewards r(y_w) - r(y_l) = 1/2: the mean over pairs of
    (1/2 - beta h)(score(y_w) - score(y_l)), h = log pi/ref (y_w) - log pi/ref (y_l)."""
    logp = log_softmax(logits, axis=1)
    delta = logp - ref_logp  # (P, Y)
    x = np.arange(logp.shape[0])[:, None]
    h = delta[x, winners] - delta[x, losers]  # (P, n)
    coef = (0.5 - beta * h) / winners.shape[1]  # (P, n); the score's -pi terms cancel
    g = np.zeros_like(logp)
    np.add.at(g, (np.broadcast_to(x, winners.shape), winners), coef)
    np.add.at(g, (np.broadcast_to(x, losers.shape), losers), -coef)
    return g


def copg_ascent(task: TreeTask, iterations: int, beta: float, behaviour: str = "uniform",
                step: float | None = None, behaviour_seed: int = 0) -> np.ndarray:  # fmt: skip
    """(K+1, P, Y) the log-policies of K CoPG steps from theta_0 = log ref (step None:
    1 / (beta max mu), or 1 / beta on-policy)."""
    ref = task.ref_logprobs
    on_policy = behaviour == "on-policy"
    mu = None if on_policy else np.exp(behaviour_logp(task, behaviour, behaviour_seed))
    if step is None:
        step = 1.0 / beta if on_policy else 1.0 / (beta * float(mu.max()))
    step = check_number("copg", "step", step)
    theta = ref.copy()
    out = [log_softmax(theta, axis=1)]
    for _ in range(iterations):
        m = np.exp(out[-1]) if on_policy else mu
        theta = theta + step * copg_gradient(theta, ref, task.mean_reward, m, beta)
        out.append(log_softmax(theta, axis=1))
    return np.stack(out)


@register("copg", kind="policy-optimization", problem="token-tree", papers=PAPERS)
def copg(problem, iterations, beta: float = 0.5, behaviour: str = "uniform",
         step: float | None = None, behaviour_seed: int = 0) -> PolicyPath:  # fmt: skip
    """CoPG (Flet-Berliac et al. 2024): exact contrastive off-policy gradient ascent on the
    response bandit of a token-tree task, scored against pi*_beta."""
    if not isinstance(problem, TreeTask):
        raise ValueError(f"copg runs on a token-tree task (e.g. tokentree:V=4,L=2), got "
                         f"{type(problem).__name__}")  # fmt: skip
    K = check_iterations("copg", iterations)
    beta = check_number("copg", "beta", beta)
    if behaviour not in BEHAVIOURS:
        raise ValueError(f"copg: behaviour must be one of {', '.join(BEHAVIOURS)}, got "
                         f"{behaviour!r}")  # fmt: skip
    seqs = copg_ascent(problem, K, beta, behaviour, step, behaviour_seed)  # (K+1, P, Y)
    config = {"beta": beta, "behaviour": behaviour, "behaviour_seed": behaviour_seed,
              "task": problem.name}  # fmt: skip
    return kl_scored_sequences(problem, seqs, beta, seqs, config)
