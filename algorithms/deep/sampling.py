"""Sampling a group of completions per prompt from a Hugging Face causal LM, with its KV cache.

GRPO (Shao et al. 2024, Algorithm 1, step "sample G outputs o_i ~ pi_old(. | q) for each
question q") needs G completions of every prompt. :func:`sample_groups` draws all of them in one
batched loop:

1. *prefill*: one forward pass over the n distinct prompts (n, P), which fills the model's KV
   cache (``past_key_values``); the cache and the last position's logits are then repeated G
   times (``batch_repeat_interleave``), so a prompt is encoded once, not G times;
2. *decode*: one token per step for all n G rows: sample from ``softmax(logits / temperature)``
   with a caller-given ``torch.Generator`` (reproducible, and independent of the global RNG), feed
   the (n G, 1) new tokens with the cache, stop when every row has produced ``eos_token_id`` or
   after ``max_new_tokens``.

A row's completion is its tokens up to and including its first EOS (mask 1), then padding (mask
0, token ``pad_token_id``), as TRL's ``GRPOTrainer`` masks them. Plain ancestral sampling: no top-k,
top-p or repetition penalty (TRL's defaults: top_k 0, top_p 1, repetition_penalty 1).

Left-padded prompts (``prompt_mask`` with zeros first) are supported: their position ids count
only real tokens. The cache is whatever the model's ``forward(use_cache=True)`` builds
(``DynamicCache`` for GPT-2 and Llama in ``transformers`` 5).
"""

from __future__ import annotations

import torch

from theorylab.algorithms.deep.masking import InvalidBatchError


@torch.no_grad()
def sample_groups(
    model, prompt_ids: torch.Tensor, group_size: int, max_new_tokens: int, *,
    eos_token_id: int | None, pad_token_id: int, generator: torch.Generator,
    temperature: float = 1.0, prompt_mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """G = ``group_size`` completions of each prompt: (completion_ids (n G, C), completion_mask
    (n G, C)), rows ``i G .. i G + G - 1`` from prompt i, C <= ``max_new_tokens`` (the longest
    completion). model: an ``HFCausalLM``; prompt_ids, prompt_mask: (n, P) (mask 0/1, left-padded,
    or None for no padding)."""
    hf = getattr(model, "model", None)
    if not getattr(model, "supports_packing", False) or hf is None:
        raise InvalidBatchError(
            f"sample_groups needs a Hugging Face causal LM wrapped in HFCausalLM (it uses the "
            f"model's KV cache); got {type(model).__name__}"
        )
    if prompt_ids.ndim != 2 or prompt_ids.shape[0] == 0 or prompt_ids.shape[1] == 0:
        raise InvalidBatchError(
            f"prompt_ids must be a non-empty 2-D (n, P) tensor, got shape {tuple(prompt_ids.shape)}"
        )
    if group_size < 1 or max_new_tokens < 1:
        raise InvalidBatchError(
            f"group_size and max_new_tokens must be >= 1, got {group_size} and {max_new_tokens}"
        )
    if not temperature > 0:
        raise InvalidBatchError(f"temperature must be > 0, got {temperature!r}")
    if prompt_mask is None:
        prompt_mask = torch.ones_like(prompt_ids)
    elif prompt_mask.shape != prompt_ids.shape:
        raise InvalidBatchError(
            f"prompt_mask has shape {tuple(prompt_mask.shape)}, expected "
            f"{tuple(prompt_ids.shape)} like prompt_ids"
        )
    n, G = prompt_ids.shape[0], group_size
    mask = prompt_mask.to(torch.int64)
    positions = (mask.cumsum(1) - 1).clamp(min=0)  # (n, P): left padding does not count
    out = hf(input_ids=prompt_ids, attention_mask=mask, position_ids=positions, use_cache=True)
    cache = out.past_key_values
    cache.batch_repeat_interleave(G)
    logits = out.logits[:, -1].repeat_interleave(G, 0)  # (n G, W)
    mask = mask.repeat_interleave(G, 0)
    next_position = positions[:, -1:].repeat_interleave(G, 0) + 1  # (n G, 1)
    tokens, alive = [], torch.ones(n * G, dtype=torch.bool, device=prompt_ids.device)
    for t in range(max_new_tokens):
        probs = torch.softmax(logits.float() / temperature, dim=-1)
        nxt = torch.multinomial(probs, 1, generator=generator).squeeze(1)  # (n G,)
        nxt = torch.where(alive, nxt, torch.full_like(nxt, pad_token_id))
        tokens.append(nxt)
        if eos_token_id is not None:
            alive = alive & (nxt != eos_token_id)
        if t + 1 == max_new_tokens or not bool(alive.any()):
            break
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
        out = hf(
            input_ids=nxt[:, None], attention_mask=mask, position_ids=next_position,
            past_key_values=cache, use_cache=True,
        )  # fmt: skip
        cache, logits, next_position = out.past_key_values, out.logits[:, -1], next_position + 1
    completion = torch.stack(tokens, dim=1)  # (n G, C)
    return completion, completion_mask_of(completion, eos_token_id)


def completion_mask_of(completion_ids: torch.Tensor, eos_token_id: int | None) -> torch.Tensor:
    """1 on each row's tokens up to and including its first EOS, 0 after: (B, C) -> (B, C)."""
    if eos_token_id is None:
        return torch.ones_like(completion_ids)
    is_eos = (completion_ids == eos_token_id).to(torch.int64)
    before = is_eos.cumsum(1) - is_eos  # number of EOS strictly before each position
    return (before == 0).to(torch.int64)
