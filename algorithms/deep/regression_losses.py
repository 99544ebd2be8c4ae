"""Regression losses for KL-regularised RL of language models: A*-PO, REBEL (and REFUEL through
its turn mask) and TBRM. Each regresses a policy log-ratio, summed over a response's tokens, on a
reward; they differ in what makes the regression realisable:

* ``astar-po`` (Brantley et al. 2025, arXiv 2505.20686, stage 2; authors' code
  ZhaolinGao/A-PO ``verl/trainer/apo/core_algos.py::compute_policy_loss`` [V]):
  (beta sum_t log pi/ref + V*(x) - r)^2, V*(x) = beta log E_ref exp(r/beta) estimated in stage 1
  from N reference samples by log-mean-exp (:func:`log_mean_exp_value`; the code's
  ``rl_dataset._process_values`` [V]). pi*_beta makes every residual zero.
* ``rebel`` (Gao et al. 2024, arXiv 2404.16767, eq. (1); code ZhaolinGao/REBEL
  ``src/tldr/rebel.py``: ``reg_diff = ratio_logprob - eta (r - r')`` [V]): for two responses
  y, y' to one prompt, ((log pi(y)/pi_t(y) - log pi(y')/pi_t(y')) - eta (r(y) - r(y')))^2; its
  minimiser with full coverage is pi_t exp(eta r)/Z (the mirror-descent / NPG step). The KL to
  ref enters the reward as in the code: r - beta sum_t (log pi_t - log ref).
  REFUEL (Gao et al. 2024, arXiv 2410.04612) is this loss with the mask on the tokens of one
  turn and r the return of the rollout after it (two continuations branched from one state);
  registered as ``refuel`` (the rebel loss, the two rows of a pair checked to mask one turn);
  :mod:`theorylab.algorithms.deep.regression_twins` checks it on a token tree and the trainer
  draws its branched roll-outs (:func:`theorylab.algorithms.deep.trainer.branched_rollouts`).
* ``tbrm`` (Yuan et al. 2025, arXiv 2505.15311): the trajectory Bellman residual with the model's
  logits as Q-values, Q_theta(s, a) = beta (z(s, a) - z_ref(s, a)): the per-step soft residuals
  Q(s_h, a_h) - r_h - V(s_h+1) telescope to beta sum_t log pi/ref + V_theta(s_1) - R, with
  V_theta(s_1) = beta log sum_a ref(a|s_1) exp(Q(s_1, a)/beta) = beta (logsumexp z(s_1) -
  logsumexp z_ref(s_1)) (:func:`tbrm_root_values`). Reconstructed [A] from the abstract ("a
  single trajectory-level Bellman objective using the model's own logits as Q-values") and the
  standard soft Bellman residual; the paper's text and code were not reachable here.

Tensors: logp, old_logp, ref_logp (B, T) per-token log-probabilities with a (B, T) mask;
rewards (B,); ``weights`` (B,) (REBEL: (B/2,) per pair) turn the mean into an exact expectation
(:func:`~theorylab.algorithms.deep.masking.reduce_examples`). Each returns a scalar to minimise.
"""

from __future__ import annotations

import math

import torch

from theorylab.algorithms.deep.groups import group_index
from theorylab.algorithms.deep.masking import (
    InvalidBatchError,
    check_nonnegative,
    check_positive,
    check_tokens,
    check_vector,
    reduce_examples,
    sequence_logprob,
)
from theorylab.algorithms.deep.registry import register_loss


def log_mean_exp_value(
    rewards: torch.Tensor, beta: float, weights: torch.Tensor | None = None
) -> torch.Tensor:
    """A*-PO's stage-1 estimate V^(x) = beta log (1/N) sum_i exp(r_i / beta) from N reference
    samples per prompt: rewards (n, N) -> (n,). Consistent for V*(x) = beta log E_ref exp(r/beta)
    (biased low for finite N, by Jensen). ``weights`` (n, N), rows summing to 1, replace 1/N:
    every response with its reference probability gives V* exactly."""
    check_positive("beta", beta)
    if rewards.ndim != 2 or rewards.shape[1] == 0:
        raise InvalidBatchError(
            f"rewards must be 2-D (prompts, N >= 1 samples), got shape {tuple(rewards.shape)}"
        )
    if weights is None:
        return beta * (torch.logsumexp(rewards / beta, dim=1) - math.log(rewards.shape[1]))
    if weights.shape != rewards.shape:
        raise InvalidBatchError(f"weights {tuple(weights.shape)} must match rewards' shape")
    return beta * torch.logsumexp(rewards / beta + torch.log(weights), dim=1)


def tbrm_root_values(
    root_logits: torch.Tensor, ref_root_logits: torch.Tensor, beta: float
) -> torch.Tensor:
    """V_theta(s_1) = beta (logsumexp z(s_1) - logsumexp z_ref(s_1)) (B,) from the first-token
    logits (B, V) of the policy (with gradient) and of the reference (module docstring)."""
    check_positive("beta", beta)
    if root_logits.shape != ref_root_logits.shape or root_logits.ndim != 2:
        raise InvalidBatchError(
            f"root_logits {tuple(root_logits.shape)} and ref_root_logits "
            f"{tuple(ref_root_logits.shape)} must both be (B, V)"
        )
    return beta * (
        torch.logsumexp(root_logits, dim=-1) - torch.logsumexp(ref_root_logits.detach(), dim=-1)
    )


def sequence_log_ratio(logp, base_logp, m) -> torch.Tensor:
    """log pi(y|x) - log base(y|x) (B,): the per-token log-ratios *summed* over each response's
    tokens (the base detached). A per-token mean here is the length-normalisation slip the
    mutation ``regression-ratio-length-normalised`` patches in."""
    return sequence_logprob(logp, m) - sequence_logprob(base_logp.detach(), m)


@register_loss(
    "astar-po",
    summary="A*-PO: on-policy regression on the optimal advantage (Brantley et al. 2025).",
)
def astar_po(
    logp: torch.Tensor,
    ref_logp: torch.Tensor,
    mask: torch.Tensor,
    rewards: torch.Tensor,
    v_star: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    beta: float = 0.1,
) -> torch.Tensor:
    """mean_i (beta log pi(y_i|x_i)/ref(y_i|x_i) + V*(x_i) - r_i)^2; v_star (B,) the stage-1
    estimate for each response's prompt (no gradient)."""
    return _ratio_regression(logp, ref_logp, mask, rewards, "v_star", v_star.detach(), weights,
                             beta)  # fmt: skip


def _ratio_regression(logp, ref_logp, mask, rewards, name, offset, weights, beta):
    """mean_i (beta log pi/ref (y_i) + offset_i - r_i)^2, the residual A*-PO and TBRM share."""
    check_positive("beta", beta)
    m = check_tokens(mask, logp=logp, ref_logp=ref_logp)
    B = check_vector("rewards", rewards, logp.shape[0])
    check_vector(name, offset, B)
    residual = beta * sequence_log_ratio(logp, ref_logp, m) + offset - rewards.detach()
    return reduce_examples(residual**2, weights)


@register_loss(
    "rebel",
    summary="REBEL: regress relative rewards on relative log-ratios (Gao et al. 2024).",
)
def rebel(
    logp: torch.Tensor,
    old_logp: torch.Tensor | None,
    ref_logp: torch.Tensor | None,
    mask: torch.Tensor,
    rewards: torch.Tensor,
    group: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    eta: float = 1.0,
    beta: float = 0.0,
) -> torch.Tensor:
    """Rows (2k, 2k+1) are the k-th pair (one prompt: equal group ids); old_logp the sampling
    policy pi_t (None: on-policy, logp detached); beta > 0 puts -beta sum_t log pi_t/ref in the
    reward (REBEL's code). weights: (B/2,) per pair."""
    check_positive("eta", eta)
    check_nonnegative("beta", beta)
    m = check_tokens(mask, logp=logp, old_logp=old_logp, ref_logp=ref_logp)
    B = check_vector("rewards", rewards, logp.shape[0])
    if B % 2:
        raise InvalidBatchError(f"REBEL pairs rows (2k, 2k+1): the batch needs an even B, got {B}")
    g, _ = group_index(group, B)
    if bool((g[0::2] != g[1::2]).any()):
        k = int((g[0::2] != g[1::2]).nonzero()[0, 0])
        raise InvalidBatchError(
            f"pair {k} (rows {2 * k}, {2 * k + 1}) mixes groups {int(g[2 * k])} and "
            f"{int(g[2 * k + 1])}: a pair answers one prompt"
        )
    old = logp.detach() if old_logp is None else old_logp.detach()
    ratio = sequence_log_ratio(logp, old, m)  # (B,)
    r = rewards.detach()
    if beta > 0:
        if ref_logp is None:
            raise InvalidBatchError(f"beta = {beta} > 0 needs ref_logp (the reference log-probs)")
        r = r - beta * (sequence_logprob(old, m) - sequence_logprob(ref_logp.detach(), m))
    residual = (ratio[0::2] - ratio[1::2]) - eta * (r[0::2] - r[1::2])  # (B/2,)
    return reduce_examples(residual**2, weights)


@register_loss(
    "refuel",
    summary="REFUEL: REBEL on one turn of two roll-outs branched from a shared prefix (Gao 2024).",
)
def refuel(
    logp: torch.Tensor,
    old_logp: torch.Tensor | None,
    ref_logp: torch.Tensor | None,
    mask: torch.Tensor,
    rewards: torch.Tensor,
    group: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    eta: float = 1.0,
) -> torch.Tensor:
    """Rows (2k, 2k+1): two roll-outs branched at one state h (the same prompt and prefix), the
    mask on the tokens of the turn chosen at h (the same positions in both rows), rewards the
    returns after it; the :func:`rebel` residual on the turn's log-ratios. No KL term (REFUEL's
    target is the per-state NPG step pi_t exp(eta Q^{pi_t}) / Z)."""
    m = check_tokens(mask, logp=logp)
    if m.shape[0] % 2 == 0 and bool((m[0::2] != m[1::2]).any()):
        k = int((m[0::2] != m[1::2]).any(dim=1).nonzero()[0, 0])
        raise InvalidBatchError(
            f"refuel: pair {k} (rows {2 * k}, {2 * k + 1}) masks different turns; the two "
            "roll-outs of a pair branch at one state and regress the same turn"
        )
    return rebel(logp, old_logp, ref_logp, mask, rewards, group, weights, eta=eta)


@register_loss(
    "tbrm",
    summary="TBRM: trajectory Bellman residual with logits as Q-values (Yuan et al. 2025).",
)
def tbrm(
    logp: torch.Tensor,
    ref_logp: torch.Tensor,
    mask: torch.Tensor,
    rewards: torch.Tensor,
    root_values: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    beta: float = 0.1,
) -> torch.Tensor:
    """mean_i (beta log pi(y_i|x_i)/ref(y_i|x_i) + V_theta(x_i) - R_i)^2 on responses from any
    behaviour policy; root_values (B,) V_theta(s_1) *with* gradient (:func:`tbrm_root_values`)."""
    return _ratio_regression(logp, ref_logp, mask, rewards, "root_values", root_values, weights,
                             beta)  # fmt: skip
