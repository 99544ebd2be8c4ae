"""PACS (Li et al. 2025, "Implicit Actor Critic Coupling via a Supervised Learning Framework for
RLVR", arXiv 2509.02522): the registered loss and its exact gradient on a token tree. Seed row
002-004#G5 (``seed-catalogue-002-004.md#G5``).

PACS treats the verifiable reward r in {0, 1} as a label and fits a score psi(x, y) parametrised
by the policy with binary cross-entropy, BCE(sigmoid(psi), r). Read [V] from the authors' code
(ritzz-ai/PACS, ``src/pacs/pacs_core_algos.py``: ``compute_reward`` with ``reward_method="1"``,
``compute_rloo_outcome_advantage``, ``BCEWithLogitsLoss(advantage, score)``): the implicit reward
r^_i = beta sum_t (log pi_theta - log pi_old)(o_i, t) of each of a prompt's G responses, the
score psi_i = r^_i - mean_{j != i} r^_j (leave-one-out, the default "rloo" estimator), and the
loss the mean over the batch of BCE-with-logits(psi_i, r_i). The class-balancing weights
(``use_weight``), the GRPO-normalised score and the length-normalised ``reward_method="2"`` are
not reproduced (the last is the mutation ``pacs-ratio-length-normalised``).

The paper's gradient claim, exact here: at theta = theta_old (on-policy, the first step of an
iteration) every psi_i is 0 with gradient beta (grad log pi(o_i) - mean_{j != i} grad log
pi(o_j)), and d BCE / d psi = sigmoid(psi) - r = 1/2 - r, so summing over i

    -grad L = (beta / G) sum_j (r_j - mean_{i != j} r_i) grad log pi(o_j),

the RLOO policy-gradient estimator: E[grad L] = -beta grad J(theta), J = E_pi r. The "critic"
sigmoid(psi_i) is the implicit baseline; away from theta_old the weight is r_i - sigmoid(psi_i).
The claim ``pacs-policy-gradient`` compares the gradient of the loss's exact expectation (every
multiset of G responses enumerated) with -beta grad J written with the score function.

Tensors as the GRPO family's: ``logp``, ``old_logp`` (None: on-policy), ``mask`` (B, T);
``rewards`` (B,) in [0, 1]; ``group`` (B,) the prompt of each response (>= 2 per group).
"""

from __future__ import annotations

import torch

from theorylab.algorithms.deep.groups import group_index
from theorylab.algorithms.deep.masking import (
    InvalidBatchError,
    check_positive,
    check_tokens,
    check_vector,
    masked_sum,
    reduce_examples,
)
from theorylab.algorithms.deep.registry import register_loss


def implicit_reward(logp: torch.Tensor, old_logp: torch.Tensor | None, mask: torch.Tensor):
    """(B,) sum_t (log pi_theta - log pi_old) over a response's tokens (old: detached; None:
    the current policy, so the value is 0 and the gradient grad log pi)."""
    old = logp.detach() if old_logp is None else old_logp.detach()
    return masked_sum(logp - old, mask)


def leave_one_out(values: torch.Tensor, group: torch.Tensor) -> torch.Tensor:
    """(B,) values_i - mean of the other values of i's group, keeping the gradient."""
    g, n_groups = group_index(group, values.shape[0], min_size=2)
    sums = torch.zeros(n_groups, dtype=values.dtype, device=values.device).index_add(0, g, values)
    sizes = torch.bincount(g, minlength=n_groups).to(values.dtype)
    return values - (sums[g] - values) / (sizes[g] - 1)


@register_loss(
    "pacs",
    summary="PACS: BCE of the leave-one-out implicit reward against the 0/1 reward (Li 2025).",
)
def pacs(
    logp: torch.Tensor,
    old_logp: torch.Tensor | None,
    ref_logp: torch.Tensor | None,
    mask: torch.Tensor,
    rewards: torch.Tensor,
    group: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    beta: float = 1.0,
) -> torch.Tensor:
    """mean_i BCE-with-logits(psi_i, r_i), psi_i = beta (R_i - mean_{j != i} R_j), R_i =
    sum_t log pi/pi_old (module docstring). ``ref_logp`` is accepted and unused (PACS has no
    reference term)."""
    check_positive("beta", beta)
    m = check_tokens(mask, logp=logp, old_logp=old_logp)
    check_vector("rewards", rewards, logp.shape[0])
    labels = rewards.detach().to(logp.dtype)
    if bool(((labels < 0) | (labels > 1)).any()):
        raise InvalidBatchError("pacs needs rewards in [0, 1] (they are BCE labels)")
    psi = leave_one_out(beta * implicit_reward(logp, old_logp, m), group)
    per = torch.nn.functional.binary_cross_entropy_with_logits(psi, labels, reduction="none")
    return reduce_examples(per, weights)


def policy_gradient(task, cond_logp, beta: float):
    """(P, N, V) -beta grad_theta J(theta) / P (numpy): J = sum_y pi(y) r(y) per prompt, the
    gradient sum_y pi(y) r(y) grad log pi(y) from the score function, prompts averaged."""
    import numpy as np

    from theorylab.algorithms.deep.regression_twins import score_matrix

    pi = np.exp(task.sequence_logprobs(cond_logp))  # (P, Y)
    grad_j = np.einsum("py,pynv->pnv", pi * task.mean_reward, score_matrix(task, cond_logp))
    return -beta * grad_j / task.n_prompts


def pacs_expectation(task, pol, G: int, beta: float, spec: str = "pacs") -> torch.Tensor:
    """E over G i.i.d. responses per prompt from the current policy (on-policy: old = theta,
    detached) of the registered loss ``spec`` (:func:`group_expectation`)."""
    from theorylab.algorithms.deep.registry import make_loss

    return group_expectation(task, pol, G, make_loss(spec, beta=beta))


def group_expectation(
    task, pol, G: int, loss, old_cond=None, rewards=None, extra=None
) -> torch.Tensor:
    """E over G i.i.d. responses per prompt of ``loss`` (a group loss called as ``loss(logp,
    old_logp, ref_logp, mask, rewards, group, weights=...)``): one call on every ordered
    G-tuple of every prompt, each tuple a group, each response weighted P(tuple) / (G P) (the
    loss's mean over its G responses, prompts averaged). ``pol``: a
    :class:`~theorylab.algorithms.deep.twins.LogitTable`; ``old_cond`` (P, N, V) log pi_old, the
    sampler (None: the current policy, detached, and ``old_logp`` None); ``rewards`` (P, Y)
    (None: the task's mean reward); ``extra(xs, ys)`` (None: nothing) -> further keyword tensors
    of the loss for the rows' prompts and responses (P M G,). A torch scalar with the table's
    gradient."""
    import itertools

    import numpy as np

    P, Y = task.n_prompts, task.n_responses
    if P * Y**G > 500_000:
        raise ValueError(f"{P} x {Y}^{G} G-tuples is too many to enumerate")
    tup = torch.as_tensor(np.array(list(itertools.product(range(Y), repeat=G))))  # (M, G)
    M = tup.shape[0]
    cond = pol.cond_logp()
    old = None if old_cond is None else torch.as_tensor(old_cond)
    prob = (pol.seq_logp(cond) if old is None else pol.seq_logp(old)).detach().exp()  # (P, Y)
    xs = torch.arange(P).repeat_interleave(M * G)  # (P M G,)
    ys = tup.reshape(-1).repeat(P)  # (P M G,)
    w = prob[xs.reshape(P, M, G), ys.reshape(P, M, G)].prod(-1) / (G * P)  # (P, M)
    weights = w[..., None].expand(P, M, G).reshape(-1)
    group = torch.arange(P * M).repeat_interleave(G)
    r = torch.as_tensor(task.mean_reward if rewards is None else rewards)[xs, ys]
    ref = torch.as_tensor(np.log(task.ref_cond))
    old_logp = None if old is None else pol.token_logp(old, xs, ys)
    more = {} if extra is None else extra(xs, ys)
    return loss(pol.token_logp(cond, xs, ys), old_logp, pol.token_logp(ref, xs, ys),
                pol.mask[ys], r, group, weights=weights, **more)  # fmt: skip
