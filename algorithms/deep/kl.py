"""Per-token KL estimators k1, k2, k3 (Schulman 2020, "Approximating KL divergence") and the KL
folded into a sequence reward.

With ``lr = log pi_theta(y_t|h) - log pi_ref(y_t|h)`` at a token sampled from pi_theta:

* k1 = lr                      (unbiased for KL(pi||ref), any sign per sample);
* k2 = lr^2 / 2                (biased, low variance; grad E_pi[k2 per-sample] = grad KL(pi||ref));
* k3 = exp(-lr) + lr - 1       (unbiased for KL(pi||ref), >= 0; GRPO, Shao et al. 2024, eq. (4)).

Placed in the *loss* and differentiated per sample (on-policy, no importance ratio), their expected
gradients differ: k1's is 0 (E_pi[grad log pi] = 0), k2's is grad KL(pi||ref) and k3's is
grad KL(**ref||pi**), the forward KL (docs/algorithms/deep-losses.md, "Expected updates,
exactly"). Folded into the reward (PPO, RLOO: no gradient through it) the sum of k1 over the
response gives the sequence KL(pi||ref) exactly in expectation, with the score-function gradient
of KL(pi||ref).
"""

from __future__ import annotations

import torch

from theorylab.algorithms.deep.masking import (
    InvalidBatchError,
    check_positive,
    check_tokens,
    check_vector,
    masked_sum,
)
from theorylab.algorithms.deep.registry import register_loss

KL_ESTIMATORS = ("k1", "k2", "k3")


def kl_tokens(logp: torch.Tensor, ref_logp: torch.Tensor, estimator: str = "k3") -> torch.Tensor:
    """The per-token estimate (B, T) of ``estimator`` from log pi (B, T) and log pi_ref (B, T)."""
    lr = logp - ref_logp
    if estimator == "k1":
        return lr
    if estimator == "k2":
        return 0.5 * lr * lr
    if estimator == "k3":
        return torch.expm1(-lr) + lr
    raise InvalidBatchError(f"unknown KL estimator {estimator!r}; expected one of {KL_ESTIMATORS}")


@register_loss("kl-k1")
def kl_k1(logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """k1 = log(pi/ref) per token, summed over each response: (B,) (Schulman 2020)."""
    m = check_tokens(mask, logp=logp, ref_logp=ref_logp)
    return masked_sum(kl_tokens(logp, ref_logp, "k1"), m)


@register_loss("kl-k2")
def kl_k2(logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """k2 = log(pi/ref)^2 / 2 per token, summed over each response: (B,) (Schulman 2020)."""
    m = check_tokens(mask, logp=logp, ref_logp=ref_logp)
    return masked_sum(kl_tokens(logp, ref_logp, "k2"), m)


@register_loss(
    "kl-k3",
    summary="k3 = ref/pi - log(ref/pi) - 1 per token, summed per response (Schulman 2020; GRPO).",
)
def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """k3 = ref/pi - log(ref/pi) - 1 per token, summed over each response: (B,) (Schulman 2020;
    GRPO eq. (4))."""
    m = check_tokens(mask, logp=logp, ref_logp=ref_logp)
    return masked_sum(kl_tokens(logp, ref_logp, "k3"), m)


def kl_in_reward(
    rewards: torch.Tensor,
    logp: torch.Tensor,
    ref_logp: torch.Tensor,
    mask: torch.Tensor,
    *,
    beta: float,
    estimator: str = "k1",
) -> torch.Tensor:
    """Shaped sequence reward ``r - beta * sum_t k(lr_t)`` (B,), detached (no gradient flows
    through the KL: it is part of the reward, as in PPO-RLHF and RLOO, Ahmadian et al. 2024).

    rewards: (B,); logp, ref_logp, mask: (B, T).
    """
    check_positive("beta", beta)
    m = check_tokens(mask, logp=logp, ref_logp=ref_logp)
    check_vector("rewards", rewards, logp.shape[0])
    with torch.no_grad():
        return rewards - beta * masked_sum(kl_tokens(logp, ref_logp, estimator), m)
