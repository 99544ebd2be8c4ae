"""One optimiser step of a registered loss on a padded batch of token ids (any causal LM).

What the trainer (:mod:`theorylab.algorithms.deep.trainer`) does on token-tree sequences, for
general batches: prompts and completions of any length, right-padded, with an attention mask and a
completion mask (1 on the completion's tokens), as TRL's collators build them. The benchmark
against TRL (``theorylab bench llm``) times these functions.

* per-token log-probabilities come from
  :func:`theorylab.algorithms.deep.packing.completion_logprobs` (the chunked logsumexp + gather of
  :mod:`theorylab.algorithms.deep.logprobs`, no full float32 log-softmax) in one of its layouts:
  ``layout="padded"`` (default), ``"buckets"`` (variable-length chunks) or ``"packed"`` (one
  sequence with restarting position ids), the same values without compute on padding;
* :func:`preference_step` -- DPO-family step: batch rows ``[chosen; rejected]`` (2B, T);
* :func:`group_step` -- GRPO-family step given sampled completions: rewards (B,) and group ids;
* :func:`generation_group_step` -- a full GRPO-family step: G completions per prompt sampled with
  the KV cache (:mod:`theorylab.algorithms.deep.sampling`), their rewards, then :func:`group_step`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from theorylab.algorithms.deep.masking import InvalidBatchError, sequence_logprob
from theorylab.algorithms.deep.packing import completion_logprobs
from theorylab.algorithms.deep.sampling import sample_groups


def _optimise(loss, model, optimizer, max_grad_norm: float) -> None:
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if max_grad_norm > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()


def preference_step(
    policy, reference, optimizer, loss_fn, input_ids, attention_mask, completion_mask,
    *, max_grad_norm: float = 1.0, step: bool = True, layout: str = "padded",
) -> torch.Tensor:  # fmt: skip
    """Policy and reference forward on ``[chosen; rejected]`` rows (2B, T), the loss on the
    sequence log-probabilities, backward and optimiser step (``step=False``: the loss only).
    Returns the loss (detached when stepped)."""
    args = (input_ids, attention_mask, completion_mask)
    tok, mask = completion_logprobs(policy, *args, layout=layout)
    seq = sequence_logprob(tok, mask)  # (2B,)
    with torch.no_grad():
        ref_tok, _ = completion_logprobs(reference, *args, layout=layout)
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
    layout: str = "padded",
) -> torch.Tensor:  # fmt: skip
    """GRPO-family step given sampled completions: input_ids = [prompt (P tokens), completion]
    (B, T); only the completion's positions are scored (the loss's token axis is T - P).
    ``loss_fn(logp, old_logp, ref_logp, mask, rewards, group)`` (on-policy: old_logp None)."""
    args = (input_ids, attention_mask, completion_mask, prompt_length)
    tok, mask = completion_logprobs(policy, *args, layout=layout)
    with torch.no_grad():
        ref_tok, _ = completion_logprobs(reference, *args, layout=layout)
    loss = loss_fn(tok, None, ref_tok, mask, rewards, group)
    if not step:
        return loss
    _optimise(loss, policy, optimizer, max_grad_norm)
    return loss.detach()


def generation_group_step(
    policy, reference, optimizer, loss_fn, prompt_ids: torch.Tensor,
    reward_fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor], *,
    group_size: int, max_new_tokens: int, eos_token_id: int | None, pad_token_id: int,
    generator: torch.Generator, max_grad_norm: float = 1.0, step: bool = True,
    layout: str = "padded",
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:  # fmt: skip
    """One on-policy GRPO-family step with generation (Shao et al. 2024, Algorithm 1, one inner
    iteration): sample ``group_size`` completions of each of the n prompts (n, P) from the policy
    at temperature 1 (:func:`~theorylab.algorithms.deep.sampling.sample_groups`, KV cache), score
    them with ``reward_fn(prompt_ids (n G, P), completion_ids (n G, C), completion_mask (n G, C))
    -> rewards (n G,)``, then :func:`group_step` on ``[prompt, completion]`` rows.

    Prompts are unpadded (one length P). Returns (the loss, the batch: ``input_ids``,
    ``attention_mask``, ``completion_mask`` (n G, P + C), ``rewards``, ``group``).
    """
    if prompt_ids.ndim != 2:
        raise InvalidBatchError(
            f"prompt_ids must be 2-D (n, P) without padding, got shape {tuple(prompt_ids.shape)}"
        )
    training = policy.training
    policy.eval()  # no dropout while sampling (the configs used here have none anyway)
    completion, completion_mask = sample_groups(
        policy, prompt_ids, group_size, max_new_tokens, eos_token_id=eos_token_id,
        pad_token_id=pad_token_id, generator=generator,
    )  # fmt: skip
    policy.train(training)
    n, P = prompt_ids.shape
    prompts = prompt_ids.repeat_interleave(group_size, 0)  # (n G, P)
    rewards = reward_fn(prompts, completion, completion_mask).to(torch.float32)
    group = torch.arange(n, device=prompt_ids.device).repeat_interleave(group_size)
    batch = {
        "input_ids": torch.cat([prompts, completion], 1),
        "attention_mask": torch.cat([torch.ones_like(prompts), completion_mask], 1),
        "completion_mask": torch.cat([torch.zeros_like(prompts), completion_mask], 1),
        "rewards": rewards,
        "group": group,
    }
    loss = group_step(
        policy, reference, optimizer, loss_fn, batch["input_ids"], batch["attention_mask"],
        batch["completion_mask"], rewards, group, prompt_length=P, max_grad_norm=max_grad_norm,
        step=step, layout=layout,
    )  # fmt: skip
    return loss, batch
