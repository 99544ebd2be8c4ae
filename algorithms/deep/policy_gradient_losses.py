"""Policy-gradient losses for verifiable rewards: PPO-clip with a KL penalty, GRPO, Dr. GRPO,
RLOO and CVaR-GRPO.

Token tensors are (B, T) with a (B, T) mask; rewards (B,) are sequence rewards; ``group`` (B,)
holds each response's group id (0..n_groups-1, each group one prompt). Advantages are constants
(no gradient). ``old_logp`` is the sampling policy's log-probability (``None``: on-policy, the
ratio is 1 with the policy's gradient). Each returns a scalar to *minimise*.

Expected updates on a tabular policy (on-policy, one update per batch), with J = E_pi[r]
(docs/algorithms/deep-losses.md derives them and the tests check them by enumerating groups):

* RLOO: E[-grad loss] = grad(J - beta KL(pi||ref)), exactly; fixed point ref exp(r/beta)/Z.
* Dr. GRPO (group mean): E[-grad loss] = ((G-1)/G) grad J / L - beta (KL-term gradient) / L.
* GRPO (std): for 0/1 rewards E[-grad loss] = kappa(p) grad J / L - ..., kappa(p) > 0.
* The KL term in the loss: k3 gives sum_h d(h) grad KL(ref(.|h)||pi(.|h)) (forward KL per
  node), k2 gives sum_h d(h) grad KL(pi(.|h)||ref(.|h)), k1 gives 0.
"""

from __future__ import annotations

import inspect

import torch

from theorylab.algorithms.deep.groups import group_advantages
from theorylab.algorithms.deep.kl import kl_in_reward, kl_tokens
from theorylab.algorithms.deep.masking import (
    InvalidBatchError,
    aggregate,
    check_nonnegative,
    check_positive,
    check_tokens,
    check_vector,
    reduce_examples,
    sequence_logprob,
)
from theorylab.algorithms.deep.registry import register_loss


def _clipped_token_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor | None,
    advantages: torch.Tensor,
    clip_eps: float,
) -> torch.Tensor:
    """-min(rho A, clip(rho, 1-eps, 1+eps) A) per token (B, T); A is (B,) or (B, T)."""
    check_positive("clip_eps", clip_eps)
    old = logp.detach() if old_logp is None else old_logp.detach()
    ratio = torch.exp(logp - old)
    adv = advantages[:, None] if advantages.ndim == 1 else advantages
    adv = adv.detach()
    return -torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)


def _require_ref(ref_logp: torch.Tensor | None, beta: float) -> None:
    """A KL term with beta > 0 needs the reference log-probabilities."""
    if ref_logp is None:
        raise InvalidBatchError(f"beta = {beta} > 0 needs ref_logp (the reference log-probs)")


def _kl_penalty(logp, ref_logp, beta: float, kl: str) -> torch.Tensor | float:
    check_nonnegative("beta", beta)
    if beta == 0:
        return 0.0
    _require_ref(ref_logp, beta)
    return beta * kl_tokens(logp, ref_logp, kl)


@register_loss(
    "ppo-clip",
    summary="PPO-clip with a KL penalty in the loss (Schulman et al. 2017, eq. (7)).",
)
def ppo_clip(
    logp: torch.Tensor,
    old_logp: torch.Tensor | None,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    ref_logp: torch.Tensor | None = None,
    weights: torch.Tensor | None = None,
    *,
    clip_eps: float = 0.2,
    beta: float = 0.0,
    kl: str = "k3",
    aggregation: str = "token-mean",
) -> torch.Tensor:
    """PPO-clip with a KL penalty in the loss: -min(rho A, clip(rho) A) + beta k(pi, ref) per token
    (Schulman et al. 2017, arXiv 1707.06347, eq. (7); the penalty as in GRPO eq. (3)).

    advantages: (B,) per response or (B, T) per token.
    """
    m = check_tokens(mask, logp=logp, old_logp=old_logp, ref_logp=ref_logp)
    if advantages.ndim == 1:
        check_vector("advantages", advantages, logp.shape[0])
    elif tuple(advantages.shape) != tuple(logp.shape):
        raise InvalidBatchError(
            f"advantages has shape {tuple(advantages.shape)}, expected ({logp.shape[0]},) or "
            f"{tuple(logp.shape)}"
        )
    tok = _clipped_token_loss(logp, old_logp, advantages, clip_eps)
    tok = tok + _kl_penalty(logp, ref_logp, beta, kl)
    return aggregate(tok, m, aggregation, weights=weights)


def _group_pg(
    logp,
    old_logp,
    ref_logp,
    mask,
    rewards,
    group,
    advantage: str,
    aggregation: str,
    *,
    clip_eps: float,
    beta: float,
    kl: str,
    eps: float = 1e-4,
    alpha: float = 0.25,
    max_length: int = 0,
    weights=None,
) -> torch.Tensor:
    m = check_tokens(mask, logp=logp, old_logp=old_logp, ref_logp=ref_logp)
    check_vector("rewards", rewards, logp.shape[0])
    adv = group_advantages(rewards, group, advantage, eps=eps, alpha=alpha)
    tok = _clipped_token_loss(logp, old_logp, adv, clip_eps)
    tok = tok + _kl_penalty(logp, ref_logp, beta, kl)
    return aggregate(tok, m, aggregation, max_length=max_length, weights=weights)


@register_loss(
    "grpo",
    summary="GRPO: std-normalised group advantage, clipped ratio, k3 in the loss (Shao 2024).",
)
def grpo(
    logp: torch.Tensor,
    old_logp: torch.Tensor | None,
    ref_logp: torch.Tensor | None,
    mask: torch.Tensor,
    rewards: torch.Tensor,
    group: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    beta: float = 0.04,
    clip_eps: float = 0.2,
    kl: str = "k3",
    eps: float = 1e-4,
) -> torch.Tensor:
    """GRPO: (1/G) sum_i (1/|o_i|) sum_t [-min(rho A_i, clip(rho) A_i) + beta k3_t],
    A_i = (r_i - mean)/(std + eps) (Shao et al. 2024, DeepSeekMath, arXiv 2402.03300, eqs. (3)-(4),
    outcome supervision Sec. 4.1.2). std uses n-1 (as TRL and Dr. GRPO's code).

    ``kl`` selects the estimator in the loss (the paper: k3; k2 gives the reverse-KL gradient).
    """
    return _group_pg(
        logp, old_logp, ref_logp, mask, rewards, group, "std", "seq-mean-token-mean",
        clip_eps=clip_eps, beta=beta, kl=kl, eps=eps, weights=weights,
    )  # fmt: skip


@register_loss(
    "dr-grpo",
    summary="Dr. GRPO: group-mean advantage, token sum / (B max_length) (Liu et al. 2025).",
)
def dr_grpo(
    logp: torch.Tensor,
    old_logp: torch.Tensor | None,
    ref_logp: torch.Tensor | None,
    mask: torch.Tensor,
    rewards: torch.Tensor,
    group: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    beta: float = 0.0,
    clip_eps: float = 0.2,
    kl: str = "k3",
    max_length: int = 0,
) -> torch.Tensor:
    """Dr. GRPO: GRPO with A_i = r_i - mean (no std) and the token sum divided by the constant
    B * max_length instead of 1/|o_i| (Liu et al. 2025, arXiv 2503.20783, Sec. 3.2; official code
    ``masked_sum(..., constant_normalizer=generate_max_length)``). max_length 0: the padded T.
    """
    return _group_pg(
        logp, old_logp, ref_logp, mask, rewards, group, "mean", "seq-mean-token-sum-norm",
        clip_eps=clip_eps, beta=beta, kl=kl, max_length=max_length, weights=weights,
    )  # fmt: skip


@register_loss(
    "cvar-grpo",
    summary="CVaR-GRPO: lower-tail advantage min(r - q_g, 0)/alpha (Tamar et al. 2015).",
)
def cvar_grpo(
    logp: torch.Tensor,
    old_logp: torch.Tensor | None,
    ref_logp: torch.Tensor | None,
    mask: torch.Tensor,
    rewards: torch.Tensor,
    group: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    alpha: float = 0.25,
    beta: float = 0.0,
    clip_eps: float = 0.2,
    kl: str = "k3",
    max_length: int = 0,
) -> torch.Tensor:
    """CVaR-GRPO: Dr. GRPO's loss with the lower-tail advantage A_i = min(r_i - q_g, 0)/alpha,
    q_g the group's empirical alpha-quantile of the rewards: the likelihood-ratio CVaR_alpha
    gradient of Tamar, Glassner and Mannor (AAAI 2015, Prop. 1) with the VaR estimated per group.
    Only the responses in the group's lower alpha tail move; the risk family's deep twin.

    With alpha * G <= 1 (the trainers' G = 4 with alpha = 0.25) q_g is the group's minimum and
    every A_i = min(r_i - min_g r, 0) / alpha is 0: the gradient is exactly zero by construction
    (the empirical-quantile estimator degenerates; not a masking or variable-length bug). On
    tokentree-eos:V=3,L=2 (lr 1e-2, 30 steps) the exact KL to pi* stays at 3.2034 with G = 4,
    falls to 0.7398 with G = 8 and to 0.9137 with alpha = 0.5, G = 4. Both trainers refuse
    alpha * G <= 1 in one line (:func:`check_cvar_group_size`).
    """
    return _group_pg(
        logp, old_logp, ref_logp, mask, rewards, group, "cvar", "seq-mean-token-sum-norm",
        clip_eps=clip_eps, beta=beta, kl=kl, alpha=alpha, max_length=max_length, weights=weights,
    )  # fmt: skip


def check_cvar_group_size(loss_fn, group_size: int) -> None:
    """A one-line error, before any work, when ``loss_fn`` (a bound loss) is CVaR-GRPO with
    alpha * group_size <= 1: each group's alpha-quantile is then its smallest reward, every
    advantage min(r - q, 0) / alpha is 0 and the loss has no gradient at all, by construction
    (measured on tokentree-eos:V=3,L=2, lr 1e-2: G = 4, alpha = 0.25 leaves the exact KL to pi*
    at 3.2034 for 30 steps; G = 8 takes it to 0.7398, alpha = 0.5 with G = 4 to 0.9137)."""
    if getattr(loss_fn, "func", None) is not cvar_grpo:
        return
    alpha = loss_fn.keywords.get("alpha", inspect.signature(cvar_grpo).parameters["alpha"].default)
    if alpha * group_size <= 1 + 1e-9:
        raise ValueError(
            f"cvar-grpo: alpha * group_size = {alpha:g} * {group_size} <= 1: each group's "
            "alpha-quantile is its smallest reward, so every advantage min(r - q, 0) / alpha is 0 "
            f"and nothing trains; use group_size > {1 / alpha:g} or alpha > {1 / group_size:g}"
        )


@register_loss(
    "rloo",
    summary="RLOO: leave-one-out advantage, KL folded into the reward (Ahmadian et al. 2024).",
)
def rloo(
    logp: torch.Tensor,
    ref_logp: torch.Tensor | None,
    mask: torch.Tensor,
    rewards: torch.Tensor,
    group: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    beta: float = 0.05,
    kl: str = "k1",
) -> torch.Tensor:
    """RLOO: -(1/G) sum_i A_i log pi(o_i|q), A_i = r~_i - mean_{j != i} r~_j with the KL folded
    into the reward r~ = r - beta sum_t k1_t under no gradient (Ahmadian et al. 2024, arXiv
    2402.14740, Sec. 3; Kool et al. 2019). beta = 0: no KL (ref_logp may be None).
    """
    m = check_tokens(mask, logp=logp, ref_logp=ref_logp)
    check_vector("rewards", rewards, logp.shape[0])
    check_nonnegative("beta", beta)
    shaped = rewards.detach()
    if beta > 0:
        _require_ref(ref_logp, beta)
        shaped = kl_in_reward(rewards, logp, ref_logp, m, beta=beta, estimator=kl)
    adv = group_advantages(shaped, group, "loo")
    return reduce_examples(-adv * sequence_logprob(logp, m), weights)
