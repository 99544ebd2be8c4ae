"""Offline and dual losses: a CQL-style pessimistic Q loss and f-DVL's value loss.

CQL(H) (Kumar, Zhou, Tucker, Levine, NeurIPS 2020, arXiv 2006.04779, eq. (4)) adds
alpha (E_s logsumexp_a Q(s,a) - E_{(s,a)~D} Q(s,a)) to the TD regression: in the tabular case its
minimiser is Q(s,a) = y(s,a) - alpha (softmax Q(s, a) / mu(a|s) - 1) on the data's actions,
pessimistic where the data's mu is small relative to the learned policy.

f-DVL (Sikchi, Zheng, Zhang, Niekum, ICLR 2024, arXiv 2302.08560, the dual-V objective eq. (14)
with a temperature lambda; official code hari-sikchi/DVL ``offline/critic.py``): with x = Q - V on
dataset pairs, the code's practical losses (not the exact conjugates f*_p), defined once in
``theorylab.algorithms.dual.surrogate_losses`` and evaluated here on torch tensors:

* chi-square: lambda max(x + x^2/4, 0) - (1-lambda) x;
* total-variation: lambda max(x, 0) - (1-lambda) x;
* reverse-kl (Gumbel, XQL): e^{-m} (e^z - z - 1), z = x/lambda clipped at max_clip,
  m = stopgrad(max(max_batch z, -1)); its minimiser in V is lambda log E exp(Q/lambda).
"""

from __future__ import annotations

import torch

from theorylab.algorithms.deep.masking import (
    InvalidBatchError,
    check_nonnegative,
    check_positive,
    check_same_vectors,
    check_vector,
    reduce_examples,
)
from theorylab.algorithms.deep.registry import register_loss
from theorylab.algorithms.dual.surrogate_losses import DVL_LOSSES, dvl_value_loss

DVL_DIVERGENCES = DVL_LOSSES


@register_loss(
    "cql",
    summary="CQL(H): alpha [logsumexp Q - Q(s,a)] + TD regression (Kumar et al. 2020, eq. (4)).",
)
def cql(
    q_values: torch.Tensor,
    actions: torch.Tensor,
    td_targets: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    alpha: float = 1.0,
) -> torch.Tensor:
    """CQL(H): alpha [logsumexp_a Q(s,.) - Q(s,a)] + (Q(s,a) - y)^2 / 2 per dataset pair (Kumar et
    al. 2020, eq. (4) with the R = entropy regulariser). q_values: (B, A); actions: (B,) ints;
    td_targets: (B,) (constants: the caller's r + gamma V(s'))."""
    check_nonnegative("alpha", alpha)
    if q_values.ndim != 2:
        raise InvalidBatchError(f"q_values must be 2-D (B, A), got shape {tuple(q_values.shape)}")
    B, A = q_values.shape
    check_vector("actions", actions, B)
    check_vector("td_targets", td_targets, B)
    if actions.dtype.is_floating_point:
        raise InvalidBatchError(f"actions must be integers, got dtype {actions.dtype}")
    bad = (actions < 0) | (actions >= A)
    if bool(bad.any()):
        i = int(bad.nonzero()[0, 0])
        raise InvalidBatchError(f"actions[{i}] = {int(actions[i])} is outside 0..{A - 1}")
    q_data = q_values.gather(1, actions[:, None].to(torch.int64))[:, 0]
    gap = torch.logsumexp(q_values, dim=1) - q_data
    per = alpha * gap + 0.5 * (q_data - td_targets.detach()) ** 2
    return reduce_examples(per, weights)


@register_loss(
    "fdvl-value",
    summary="f-DVL's value loss on Q - V: the official code's surrogates (Sikchi et al. 2024).",
)
def fdvl_value(
    q: torch.Tensor,
    v: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    divergence: str = "chi-square",
    lam: float = 0.5,
    max_clip: float = 7.0,
) -> torch.Tensor:
    """f-DVL's value loss on x = Q - V (Sikchi et al., ICLR 2024, eq. (14); the official code's
    surrogates, see the module docstring). q: (B,) (treated as a constant); v: (B,) V(s) at the
    pairs' states."""
    check_same_vectors(q=q, v=v)
    if divergence not in DVL_DIVERGENCES:
        raise InvalidBatchError(
            f"unknown divergence {divergence!r}; expected one of {DVL_DIVERGENCES}"
        )
    if divergence in ("chi-square", "total-variation"):
        if not 0 <= lam <= 1:
            raise InvalidBatchError(f"lam must be in [0, 1] for {divergence}, got {lam!r}")
    else:
        check_positive("lam", lam)
    # the one definition of the formula, shared with the tabular f-DVL (numpy)
    per = dvl_value_loss(q.detach() - v, divergence, lam, max_clip, xp=torch)
    return reduce_examples(per, weights)
