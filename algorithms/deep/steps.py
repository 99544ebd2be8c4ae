"""One optimiser step of a registered loss on a padded batch of token ids (any causal LM).

What the trainer (:mod:`theorylab.algorithms.deep.trainer`) does on token-tree sequences, for
general batches: prompts and completions of any length, right-padded, with an attention mask and a
completion mask (1 on the completion's tokens), as TRL's collators build them. The benchmark
against TRL (``theorylab bench llm``) times these functions.

* :func:`completion_logprobs` -- per-token log-probabilities (B, T-1) of ``input_ids[:, 1:]`` by
  the chunked logsumexp + gather of :mod:`theorylab.algorithms.deep.logprobs` (no full float32
  log-softmax), with the shifted completion mask (B, T-1);
* :func:`preference_step` -- DPO-family step: batch rows ``[chosen; rejected]`` (2B, T);
* :func:`group_step` -- GRPO-family step given sampled completions: rewards (B,) and group ids.
"""

from __future__ import annotations

import torch

from theorylab.algorithms.deep.logprobs import token_logprobs
from theorylab.algorithms.deep.masking import sequence_logprob


def completion_logprobs(model, input_ids, attention_mask, completion_mask, start: int = 1):
    """(per-token log-probabilities (B, T-start), completion mask (B, T-start)) of the tokens
    ``input_ids[:, start:]``.

    model: ``forward(input_ids, attention_mask) -> logits (B, T, W)``; input_ids, attention_mask,
    completion_mask: (B, T). Position t's logits predict token t + 1; positions before ``start - 1``
    (the prompt's) are not scored.
    """
    logits = model(input_ids, attention_mask)
    tok = token_logprobs(logits[:, start - 1 : -1], input_ids[:, start:])
    return tok, completion_mask[:, start:]


def _optimise(loss, model, optimizer, max_grad_norm: float) -> None:
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if max_grad_norm > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()


def preference_step(
    policy, reference, optimizer, loss_fn, input_ids, attention_mask, completion_mask,
    *, max_grad_norm: float = 1.0, step: bool = True,
) -> torch.Tensor:  # fmt: skip
    """Policy and reference forward on ``[chosen; rejected]`` rows (2B, T), the loss on the
    sequence log-probabilities, backward and optimiser step (``step=False``: the loss only).
    Returns the loss (detached when stepped)."""
    tok, mask = completion_logprobs(policy, input_ids, attention_mask, completion_mask)
    seq = sequence_logprob(tok, mask)  # (2B,)
    with torch.no_grad():
        ref_tok, _ = completion_logprobs(reference, input_ids, attention_mask, completion_mask)
        ref = sequence_logprob(ref_tok, mask)
    chosen, rejected = seq.chunk(2)
    ref_chosen, ref_rejected = ref.chunk(2)
    loss = loss_fn(chosen, rejected, ref_chosen, ref_rejected)
    if not step:
        return loss
    _optimise(loss, policy, optimizer, max_grad_norm)
    return loss.detach()


def group_step(
    policy, reference, optimizer, loss_fn, input_ids, attention_mask, completion_mask, rewards,
    group, *, prompt_length: int, max_grad_norm: float = 1.0, step: bool = True,
) -> torch.Tensor:  # fmt: skip
    """GRPO-family step given sampled completions: input_ids = [prompt (P tokens), completion]
    (B, T); only the completion's positions are scored (the loss's token axis is T - P).
    ``loss_fn(logp, old_logp, ref_logp, mask, rewards, group)`` (on-policy: old_logp None)."""
    args = (input_ids, attention_mask, completion_mask, prompt_length)
    tok, mask = completion_logprobs(policy, *args)
    with torch.no_grad():
        ref_tok, _ = completion_logprobs(reference, *args)
    loss = loss_fn(tok, None, ref_tok, mask, rewards, group)
    if not step:
        return loss
    _optimise(loss, policy, optimizer, max_grad_norm)
    return loss.detach()
