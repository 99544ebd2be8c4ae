"""ROVER's practical loss (He et al. 2025, "Random Policy Valuation is Enough for LLM Reasoning
with Verifiable Rewards", arXiv 2509.24981) as a pure tensor function, and its exact expected
gradient on a token tree. Seed rows 000#17 and 002-004#G1 (``seed-catalogue-000.md#17``); the
exact twin (Q of the uniform policy, Theorem 3.1) is :mod:`~theorylab.algorithms.deep.rover`.

Read [V] from the authors' code (``yuxiaooye/ROVER``, read 2026-11; the facts below, not the code,
carry over): ``Countdown/verl/workers/actor/dp_actor.py`` (``update_policy``),
``Math/verl/workers/actor/dp_actor.py`` (``DataParallelROVERActor``), ``core_algos.py``
(``compute_rover_reward``, ``compute_rover_loss``) and ``torch_functional.sum_log_softmax``:

* the Q-value of a token is parametrised by the policy's log-ratio to the sampler,
  Q_t = rho (log pi_theta(y_t|s_t) - log pi_old(y_t|s_t)) (``rover_t``, default 1.0);
* ``current_q`` at position t is the mean over the vocabulary of log pi_theta(.|s_t)
  (``sum_log_softmax``: mean of the logits minus their logsumexp), ``old_logits`` the same under
  pi_old; the bootstrap of token t is rho (mean_v log pi_theta(v|s_{t+1}) - mean_v log
  pi_old(v|s_{t+1})), masked by the mask at t + 1 and 0 at the last position, so 0 after a
  response's last real token: the uniform policy's average of Q(s_{t+1}, .);
* target_t = A + bootstrap_t, A = r - mean of the prompt's group (Countdown's
  ``compute_rover_reward`` with ``norm_adv_by_std_in_grpo=False``) broadcast to every token;
  the target is detached (``next_q`` is ``.detach()``-ed in Countdown, ``target.detach()`` in
  ``compute_rover_loss`` in both);
* loss = masked mean over the batch's tokens of (Q_t - target_t)^2 (``verl_F.masked_mean``).

Not reproduced (deviations): the Math code's batch-level reward shaping (5 (1 - fraction
correct) for a correct response, -2 (1 - fraction wrong) otherwise), its ``use_rover_clip`` and
``response_level_rover_loss`` options, and any std normalisation of A. ``aggregation`` is the
authors' ``"token-mean"`` by default; ``"seq-mean-token-sum-norm"`` (a constant normaliser, so
the batch loss is unbiased for an expectation) is what the claim enumerates.

What the loss does, exactly (the claim ``rover-practical-loss-gradient`` checks both):

* on-policy (pi_old = pi_theta: one update per batch, as the tree trainer runs it, ``old_logp``
  None) Q_t = 0 and the bootstrap is 0, so the gradient is -2 rho sum_t A grad log pi(y_t|s_t):
  with the constant normaliser L, E[grad loss] = -(2 rho (G - 1) / (G L)) grad J, J = E_pi r --
  a REINFORCE step with the group-mean baseline; the bootstrap term acts only off-policy;
* off-policy (samples from pi_old, theta != old) the expected gradient is, per prompt,
  (2 rho / L) sum_y pi_old(y) sum_t (Q_t - T_t) grad log pi_theta(y_t|s_t), T_t = ((G - 1)/G)
  (r(y) - E_old r) + rho (m_theta - m_old)(s_{t+1}) 1[t + 1 < |y|], m the vocabulary mean of
  the log-probabilities: :func:`expected_gradient` writes it by enumerating responses (numpy, no
  autograd), against the registered loss on every ordered G-tuple of responses. The mutation
  ``rover-target-not-detached`` (the gradient also flows through the bootstrap) fails it.

The fixed point of repeated off-policy regression is not the uniform policy's Q^{pi_u} of the
twin: the centred reward is broadcast to every token *and* bootstrapped, and the log-ratio
parametrisation is normalised per state; not claimed here.

Tensors: ``logp``, ``old_logp`` (None: on-policy), ``mean_logp`` (B, T) the vocabulary mean of
log pi_theta(.|s_t) at each response position, ``old_mean_logp`` its pi_old value (None exactly
when ``old_logp`` is), ``mask`` (B, T); ``rewards`` (B,); ``group`` (B,) prompt ids.
"""

from __future__ import annotations

import numpy as np
import torch

from theorylab.algorithms.deep.groups import group_advantages
from theorylab.algorithms.deep.masking import (
    InvalidBatchError,
    aggregate,
    check_positive,
    check_tokens,
    check_vector,
)
from theorylab.algorithms.deep.registry import register_loss


def bootstrap_target(
    advantages: torch.Tensor,
    mean_logp: torch.Tensor,
    old_mean_logp: torch.Tensor,
    mask: torch.Tensor,
    rho: float,
) -> torch.Tensor:
    """(B, T) the detached target A_b + rho (mean_logp - old_mean_logp)[b, t + 1] mask[b, t + 1]
    (0 at the last position): the uniform policy's average of the next state's Q."""
    nxt = rho * (mean_logp[:, 1:] - old_mean_logp[:, 1:]) * mask[:, 1:]  # (B, T - 1)
    boot = torch.cat([nxt, torch.zeros_like(mask[:, :1])], dim=1)  # (B, T)
    return (advantages[:, None] + boot).detach()


@register_loss(
    "rover",
    summary="ROVER: MSE of rho log(pi/pi_old) against centred reward + rho x next-state "
    "vocabulary-mean log-ratio, target detached (He et al. 2025).",
)
def rover(
    logp: torch.Tensor,
    old_logp: torch.Tensor | None,
    mean_logp: torch.Tensor,
    old_mean_logp: torch.Tensor | None,
    mask: torch.Tensor,
    rewards: torch.Tensor,
    group: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    rho: float = 1.0,
    aggregation: str = "token-mean",
    max_length: int = 0,
) -> torch.Tensor:
    """ROVER's loss: aggregate over tokens of (Q_t - target_t)^2, Q_t = rho (logp - old_logp)_t,
    target_t = (r - group mean) + rho (mean_logp - old_mean_logp)_{t+1} mask_{t+1}, detached
    (module docstring; the authors' ``compute_rover_loss``)."""
    check_positive("rho", rho)
    m = check_tokens(mask, logp=logp, old_logp=old_logp, mean_logp=mean_logp,
                     old_mean_logp=old_mean_logp)  # fmt: skip
    if (old_logp is None) != (old_mean_logp is None):
        raise InvalidBatchError(
            "rover: old_logp and old_mean_logp are both given (off-policy) or both None "
            f"(on-policy); got old_logp {'None' if old_logp is None else 'given'}, "
            f"old_mean_logp {'None' if old_mean_logp is None else 'given'}"
        )
    check_vector("rewards", rewards, logp.shape[0])
    old = logp.detach() if old_logp is None else old_logp.detach()
    old_mean = mean_logp.detach() if old_mean_logp is None else old_mean_logp.detach()
    adv = group_advantages(rewards.to(logp.dtype), group, "mean")  # (B,), no gradient
    target = bootstrap_target(adv, mean_logp, old_mean, m, rho)
    q = rho * (logp - old)  # (B, T)
    return aggregate((q - target) ** 2, m, aggregation, max_length=max_length, weights=weights)


def response_and_mean_logprobs(model, ids: torch.Tensor, V: int):
    """One forward pass of a causal LM on ids (n, L + 1) = [prompt, y_1..y_L]: the per-token
    log-probabilities (n, L) of y under the symbol-restricted policy and, at the same positions,
    the mean over the V symbols of log pi(.|s_t) (n, L) (the authors' ``sum_log_softmax``)."""
    from theorylab.algorithms.deep.logprobs import token_logprobs

    logits = model(ids[:, :-1])[..., :V]  # (n, L, V): position t predicts token t + 1
    logp = token_logprobs(logits, ids[:, 1:])
    mean_logp = torch.log_softmax(logits.float(), dim=-1).mean(dim=-1)
    return logp, mean_logp.to(logp.dtype)


# --------------------------------------------------------------------------- exact expectations
def loss_expectation(task, pol, G: int, rho: float, old_cond=None, spec: str = "rover"):
    """E over G i.i.d. responses per prompt from pi_old (``old_cond`` (P, N, V) log-probs; None:
    on-policy) of the registered loss ``spec`` with the constant normaliser L, every ordered
    G-tuple enumerated (:func:`~theorylab.algorithms.deep.pacs.group_expectation`). ``pol``: a
    :class:`~theorylab.algorithms.deep.twins.LogitTable`; a torch scalar with its gradient."""
    from theorylab.algorithms.deep.pacs import group_expectation
    from theorylab.algorithms.deep.registry import make_loss

    loss = make_loss(spec, rho=rho, aggregation="seq-mean-token-sum-norm", max_length=task.L)
    cond = pol.cond_logp()
    old = None if old_cond is None else torch.as_tensor(old_cond)

    def means(xs, ys):  # the vocabulary means at every response position
        nodes = pol.nodes[ys]  # (B, L)
        out = {"mean_logp": cond.mean(-1)[xs[:, None], nodes]}
        out["old_mean_logp"] = None if old is None else old.mean(-1)[xs[:, None], nodes]
        return out

    def call(logp, old_logp, _ref, mask, r, group, weights, **more):
        return loss(logp, old_logp, more["mean_logp"], more["old_mean_logp"], mask, r, group,
                    weights)  # fmt: skip

    return group_expectation(task, pol, G, call, old_cond=old_cond, extra=means)


def expected_gradient(task, theta: np.ndarray, old_cond: np.ndarray, G: int, rho: float):
    """(P, N, V) the gradient of the loss's expectation (constant normaliser L, groups of G from
    pi_old) at the logit table ``theta``, written by enumerating responses (module docstring):
    (1 / (P L)) sum_y pi_old(y) sum_t 2 rho (Q_t - T_t) (e_{y_t} - pi_theta(.|s_t)) at s_t."""
    from theorylab.algorithms.deep.regression_twins import log_softmax

    cond = log_softmax(theta)  # (P, N, V)
    pi, m, m_old = np.exp(cond), cond.mean(-1), old_cond.mean(-1)  # (P, N, V), (P, N), (P, N)
    p_old = np.exp(task.sequence_logprobs(old_cond))  # (P, Y)
    r = task.mean_reward  # (P, Y)
    centred = (G - 1) / G * (r - (p_old * r).sum(1, keepdims=True))  # (P, Y)
    lengths = task.token_mask.sum(1).astype(np.int64)
    grad = np.zeros_like(theta)
    for y in range(task.n_responses):
        for t in range(lengths[y]):
            h, a = task.token_nodes[y, t], task.tokens[y, t]
            q = rho * (cond[:, h, a] - old_cond[:, h, a])  # (P,)
            target = centred[:, y].copy()
            if t + 1 < lengths[y]:
                nxt = task.token_nodes[y, t + 1]
                target += rho * (m[:, nxt] - m_old[:, nxt])
            w = p_old[:, y] * 2.0 * rho * (q - target)  # (P,)
            score = -pi[:, h, :]
            score[:, a] += 1.0
            grad[:, h, :] += w[:, None] * score
    return grad / (task.n_prompts * task.L)
