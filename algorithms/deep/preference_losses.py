"""Direct-alignment losses on preference pairs: DPO, IPO, RPO, VPO (+/-), XPO, chi-PO.

Every loss takes *sequence* log-probabilities (B,) of the chosen and the rejected response under
the policy and the reference (:func:`theorylab.algorithms.deep.masking.sequence_logprob` makes
them from token log-probabilities and a mask, summed over tokens as in the official DPO code) and
returns a scalar: the mean over pairs, or ``sum_b weights[b] * loss_b`` when ``weights`` (B,) are
given (an exact expectation when the batch enumerates every pair with its probability). Write

    h = [log pi(y_w|x) - log ref(y_w|x)] - [log pi(y_l|x) - log ref(y_l|x)].

Population minimisers (pairs from mu x mu with full support, labels from the true preference;
docs/algorithms/deep-losses.md): DPO with Bradley-Terry labels -> ref exp(r/beta)/Z; IPO ->
ref exp(p(y > mu)/tau)/Z; chi-PO -> beta (z + log z) = r - lambda(x) with z = pi/ref.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from theorylab.algorithms.deep.masking import (
    InvalidBatchError,
    check_nonnegative,
    check_positive,
    check_same_vectors,
    check_vector,
    reduce_examples,
)
from theorylab.algorithms.deep.registry import register_loss


def log_ratios(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(log pi(y_w|x) - log ref(y_w|x), log pi(y_l|x) - log ref(y_l|x)), each (B,), from the four
    sequence log-probability vectors (B,), checked to have one length."""
    check_same_vectors(
        policy_chosen=policy_chosen,
        policy_rejected=policy_rejected,
        ref_chosen=ref_chosen,
        ref_rejected=ref_rejected,
    )
    return policy_chosen - ref_chosen, policy_rejected - ref_rejected


def preference_margin(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
) -> torch.Tensor:
    """h (B,) from the four sequence log-probability vectors (B,), checked to have one length."""
    chosen, rejected = log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    return chosen - rejected


@register_loss("dpo")
def dpo(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    beta: float = 0.1,
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    """DPO: -log sigmoid(beta h) (Rafailov et al., NeurIPS 2023, eq. (7)).

    ``label_smoothing`` eps > 0 is conservative DPO (the official code's
    -(1-eps) log sigmoid(beta h) - eps log sigmoid(-beta h)); eps = 0 is eq. (7).
    """
    check_positive("beta", beta)
    if not 0 <= label_smoothing < 0.5:
        raise InvalidBatchError(f"label_smoothing must be in [0, 0.5), got {label_smoothing!r}")
    h = preference_margin(policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    per_pair = -(1 - label_smoothing) * F.logsigmoid(beta * h) - label_smoothing * F.logsigmoid(
        -beta * h
    )
    return reduce_examples(per_pair, weights)


@register_loss("ipo")
def ipo(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    tau: float = 0.1,
) -> torch.Tensor:
    """IPO: (h - 1/(2 tau))^2 (Azar et al., AISTATS 2024, eq. (17) of arXiv 2310.12036v2).

    Log-ratios summed over tokens, as in the official DPO repository (TRL averages them per token).
    """
    check_positive("tau", tau)
    h = preference_margin(policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    return reduce_examples((h - 1.0 / (2.0 * tau)) ** 2, weights)


def _sft_term(name: str, logp: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    """Mean (or weighted sum) of the sequence log-probabilities ``logp`` (B0,) of extra samples."""
    check_vector(name, logp)
    return reduce_examples(logp, weights)


@register_loss(
    "rpo",
    summary="RPO: L_DPO + eta beta E_{pi_base}[-log pi] (Liu et al. 2024, eq. (4.8)).",
)
def rpo(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    baseline_logp: torch.Tensor,
    weights: torch.Tensor | None = None,
    baseline_weights: torch.Tensor | None = None,
    *,
    beta: float = 0.1,
    eta: float = 1.0,
) -> torch.Tensor:
    """RPO: eta beta E_{a0 ~ pi_base}[-log pi(a0|x)] + L_DPO (Liu et al. 2024, arXiv 2405.16436,
    eq. (4.8)).

    baseline_logp: (B0,) policy log-probabilities of samples of the baseline policy (the paper's
    experiments use the chosen responses, Remark 5.4); baseline_weights: their probabilities when
    they enumerate pi_base exactly. eta = 0 is DPO.
    """
    check_nonnegative("eta", eta)
    base = _sft_term("baseline_logp", baseline_logp, baseline_weights)
    loss = dpo(policy_chosen, policy_rejected, ref_chosen, ref_rejected, weights, beta=beta)
    return loss - eta * beta * base


@register_loss(
    "vpo",
    summary="VPO: L_DPO + sign alpha beta E_{pi_cal}[log pi] (Cen et al., ICLR 2025).",
)
def vpo(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    calibration_logp: torch.Tensor,
    weights: torch.Tensor | None = None,
    calibration_weights: torch.Tensor | None = None,
    *,
    beta: float = 0.1,
    alpha: float = 0.1,
    sign: int = 1,
) -> torch.Tensor:
    """VPO: L_DPO + sign alpha beta E_{y ~ pi_cal}[log pi(y|x)] (Cen et al., ICLR 2025, arXiv
    2405.19320: the value-regularised MLE after Lemma 4.1's closed form of max_pi J).

    sign = +1 online (optimism: pushes probability away from pi_cal samples, like XPO); sign = -1
    offline (pessimism: an SFT term on pi_cal samples, RPO's form). calibration_logp: (B0,).
    """
    if sign not in (1, -1):
        raise InvalidBatchError(f"sign must be +1 (online) or -1 (offline), got {sign!r}")
    check_nonnegative("alpha", alpha)
    cal = _sft_term("calibration_logp", calibration_logp, calibration_weights)
    loss = dpo(policy_chosen, policy_rejected, ref_chosen, ref_rejected, weights, beta=beta)
    return loss + sign * alpha * beta * cal


@register_loss(
    "xpo",
    summary="XPO: L_DPO + alpha E_{y ~ ref}[log pi(y)] (Xie et al., ICLR 2025).",
)
def xpo(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    ref_sample_logp: torch.Tensor,
    weights: torch.Tensor | None = None,
    ref_sample_weights: torch.Tensor | None = None,
    *,
    beta: float = 0.1,
    alpha: float = 1e-5,
) -> torch.Tensor:
    """XPO: L_DPO + alpha E_{y ~ pi_samp}[log pi(y|x)] (Xie et al., ICLR 2025, arXiv 2405.21046,
    the exploration objective of Alg. 1 per round; TRL's XPO trainer uses y ~ pi_ref).

    ref_sample_logp: (B0,) policy log-probabilities of responses sampled from pi_ref (or earlier
    iterates). The bonus lowers their likelihood (optimism).
    """
    check_nonnegative("alpha", alpha)
    bonus = _sft_term("ref_sample_logp", ref_sample_logp, ref_sample_weights)
    loss = dpo(policy_chosen, policy_rejected, ref_chosen, ref_rejected, weights, beta=beta)
    return loss + alpha * bonus


@register_loss(
    "chipo",
    summary="chi-PO: DPO with the link z + log z, z = pi/ref, clipped at 2R (Huang et al. 2025).",
)
def chipo(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    beta: float = 0.1,
    clip_r: float = 1.0,
) -> torch.Tensor:
    """chi-PO: -log sigmoid(clip_{2R}[beta phi(z_w) - beta phi(z_l)]), phi(z) = z + log z,
    z = pi/ref (Huang et al., ICLR 2025, arXiv 2407.13399: DPO with the link log z replaced by
    z + log z, the mixed chi^2 + KL regulariser).

    clip_r: R, the reward range; the margin is clipped to [-2R, 2R].
    """
    check_positive("beta", beta)
    check_positive("clip_r", clip_r)
    lw, ll = log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    margin = beta * ((torch.exp(lw) + lw) - (torch.exp(ll) + ll))
    per_pair = -F.logsigmoid(torch.clamp(margin, -2 * clip_r, 2 * clip_r))
    return reduce_examples(per_pair, weights)
