"""P3O (Wu, Zhu, Liu, Jiao and Jiao 2023, "Pairwise Proximal Policy Optimization: Harnessing
Relative Feedback for LLM Alignment", arXiv 2310.00212): the registered pairwise loss and its
invariance to prompt-dependent reward shifts. Seed row 002-004#E3
(``seed-catalogue-002-004.md#E3``).

Read [V] (the abstract, through the catalogue row): a trajectory-wise policy gradient that
"operates directly on comparative rewards"; "P3O is invariant to equivalent rewards", while
"PPO is not invariant to equivalent reward functions containing identical preference
information". Reconstructed [A] (the paper's text was not found in the search corpus): two or
more responses per prompt; for an ordered pair (i, j) of one prompt's responses the advantage
is the reward difference A_ij = r~_i - r~_j; the trajectory-wise importance ratio
rho_i = pi_theta(y_i|x) / pi_old(y_i|x) (a response's log-ratio summed over its tokens) is clipped
PPO-style on each response separately ("separate clipping"):

    L = mean_i mean_{j != i, same prompt} -min(rho_i A_ij, clip(rho_i, 1 - eps, 1 + eps) A_ij),

so each unordered pair contributes both halves, +A to y_i and -A to y_j. The KL enters the reward
as in RLHF PPO: r~_i = r_i - beta sum_t (log pi_old - log ref)(y_i, t) (sequence level,
detached). At rho = 1 the gradient is the pairwise policy gradient
E[(r_1 - r_2)(grad log pi(y_1) - grad log pi(y_2))] / 2.

The claim (``p3o-shift-invariance``): A_ij is unchanged when r(x, y) becomes r(x, y) + c(x), so
the loss -- every sampled batch's, and its exact expectation at any theta != theta_old, where
clipping is active -- is unchanged to rounding; PPO with a value-free single-response advantage
A_i = r~_i (the registered ``ppo-clip``, and the mutation ``p3o-single-response-advantage``)
clips according to the sign of r~_i + c(x) and its expected gradient moves. The KL-reward frontier
(``p3o-kl-reward-frontier``, :mod:`theorylab.algorithms.deep.kl_reward_frontier`): P3O's clipped
rounds end on the exact frontier, value-free PPO on the same draws below it. Not reproduced: the
joint-clipping variant, the reward model, PPO with a learned critic and the HH-RLHF / TL;DR
experiments.

Tensors as the GRPO family's: ``logp``, ``old_logp`` (None: on-policy), ``ref_logp``, ``mask``
(B, T); ``rewards`` (B,); ``group`` (B,) the prompt of each response (>= 2 per group).
"""

from __future__ import annotations

import torch

from theorylab.algorithms.deep.groups import group_index
from theorylab.algorithms.deep.masking import (
    InvalidBatchError,
    check_nonnegative,
    check_positive,
    check_tokens,
    check_vector,
    masked_sum,
    reduce_examples,
)
from theorylab.algorithms.deep.registry import register_loss


def pairwise_advantages(rewards: torch.Tensor, group: torch.Tensor):
    """(B, B) A[i, j] = r_i - r_j for j != i of i's group, and (B, B) the 0/1 pair mask."""
    g, _ = group_index(group, rewards.shape[0], min_size=2)
    same = (g[:, None] == g[None, :]).to(rewards.dtype)
    pairs = same - torch.eye(rewards.shape[0], dtype=rewards.dtype, device=rewards.device)
    return (rewards[:, None] - rewards[None, :]) * pairs, pairs


@register_loss(
    "p3o",
    summary="P3O: PPO-clipped trajectory ratios with pairwise reward differences (Wu et al. 2023).",
)
def p3o(
    logp: torch.Tensor,
    old_logp: torch.Tensor | None,
    ref_logp: torch.Tensor | None,
    mask: torch.Tensor,
    rewards: torch.Tensor,
    group: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    clip_eps: float = 0.2,
    beta: float = 0.0,
) -> torch.Tensor:
    """mean_i mean_{j != i} -min(rho_i A_ij, clip(rho_i) A_ij), A_ij = r~_i - r~_j, rho_i the
    trajectory ratio, r~ = r - beta sum_t log pi_old / ref (module docstring)."""
    check_positive("clip_eps", clip_eps)
    check_nonnegative("beta", beta)
    m = check_tokens(mask, logp=logp, old_logp=old_logp, ref_logp=ref_logp)
    check_vector("rewards", rewards, logp.shape[0])
    old = logp.detach() if old_logp is None else old_logp.detach()
    shaped = rewards.detach().to(logp.dtype)
    if beta > 0:
        if ref_logp is None:
            raise InvalidBatchError("p3o with beta > 0 needs ref_logp (the KL is in the reward)")
        shaped = shaped - beta * masked_sum(old - ref_logp.detach(), m)
    adv, pairs = pairwise_advantages(shaped, group)
    ratio = masked_sum(logp - old, m).exp()[:, None]  # (B, 1)
    clipped = ratio.clamp(1 - clip_eps, 1 + clip_eps)
    per_pair = -torch.minimum(ratio * adv, clipped * adv) * pairs  # (B, B)
    return reduce_examples(per_pair.sum(1) / pairs.sum(1), weights)
