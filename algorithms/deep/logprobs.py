"""Per-token log-probabilities of given tokens from a causal LM's logits, without a full float32
log-softmax over the vocabulary.

``log pi(y_t | h) = logits[y_t] - logsumexp(logits)``: only the (B, T) log-normalisers and the
(B, T) gathered logits are kept. The naive ``log_softmax(logits.float()).gather(...)`` materialises
a (B, T, W) float32 tensor (W the vocabulary: 4 bytes x 32k-150k per token) and autograd keeps it
for the backward pass. Here the forward pass works on chunks of the sequence (at most
``max_chunk_elements`` float32 numbers at a time) and the backward pass recomputes each chunk's
softmax instead of storing it, writing the gradient ``g (onehot(y_t) - softmax(logits))`` straight
into a tensor of the logits' own dtype. The arithmetic is float32 (float64 logits stay float64).
This is the "logsumexp + gather" form that TRL's ``selective_log_softmax`` and verl's
``logprobs_from_logits`` use in their forward pass; the chunked recomputing backward is ours.

No Python loop over samples: one loop over sequence chunks (a single iteration when the whole
batch fits the element budget).
"""

from __future__ import annotations

import torch

from theorylab.algorithms.deep.masking import InvalidBatchError

#: float32 numbers per chunk (2^24 = 64 MiB): bounds the temporary of every step.
MAX_CHUNK_ELEMENTS = 1 << 24


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _chunks(B: int, T: int, W: int, max_elements: int):
    step = max(1, max_elements // max(B * W, 1))
    for start in range(0, T, step):
        yield start, min(T, start + step)


class _GatherLogprob(torch.autograd.Function):
    """logits (B, T, W), tokens (B, T) -> log-probabilities (B, T); backward recomputes."""

    @staticmethod
    def forward(ctx, logits, tokens, max_elements):
        B, T, W = logits.shape
        cdt = _compute_dtype(logits.dtype)
        out = torch.empty((B, T), dtype=cdt, device=logits.device)
        lse = torch.empty((B, T), dtype=cdt, device=logits.device)
        for s, e in _chunks(B, T, W, max_elements):
            chunk = logits[:, s:e].to(cdt)  # (B, c, W)
            lse[:, s:e] = torch.logsumexp(chunk, dim=-1)
            out[:, s:e] = chunk.gather(-1, tokens[:, s:e, None]).squeeze(-1) - lse[:, s:e]
        ctx.save_for_backward(logits, tokens, lse)
        ctx.max_elements = max_elements
        return out

    @staticmethod
    def backward(ctx, grad_out):
        logits, tokens, lse = ctx.saved_tensors
        B, T, W = logits.shape
        cdt = lse.dtype
        grad = torch.empty_like(logits)
        for s, e in _chunks(B, T, W, ctx.max_elements):
            g = grad_out[:, s:e].to(cdt)  # (B, c)
            probs = torch.exp(logits[:, s:e].to(cdt) - lse[:, s:e, None])  # (B, c, W)
            chunk = -probs * g[..., None]
            chunk.scatter_add_(-1, tokens[:, s:e, None], g[..., None])
            grad[:, s:e] = chunk.to(logits.dtype)
        return grad, None, None


def token_logprobs(
    logits: torch.Tensor, tokens: torch.Tensor, *, max_chunk_elements: int = MAX_CHUNK_ELEMENTS
) -> torch.Tensor:
    """``log softmax(logits)[b, t, tokens[b, t]]`` (B, T), differentiable in ``logits``.

    logits: (B, T, W) any float dtype; tokens: (B, T) integer ids in 0..W-1. Returns float32
    (float64 for float64 logits). Equal to the naive log_softmax + gather to float32 round-off.
    """
    if logits.ndim != 3:
        raise InvalidBatchError(f"logits must be 3-D (B, T, W), got shape {tuple(logits.shape)}")
    if tokens.shape != logits.shape[:2]:
        raise InvalidBatchError(
            f"tokens has shape {tuple(tokens.shape)}, expected {tuple(logits.shape[:2])} "
            "(the logits' batch and sequence axes)"
        )
    if tokens.dtype.is_floating_point or tokens.dtype == torch.bool:
        raise InvalidBatchError(f"tokens must hold integer ids, got dtype {tokens.dtype}")
    W = logits.shape[-1]
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= W):
        bad = ((tokens < 0) | (tokens >= W)).nonzero()[0].tolist()
        raise InvalidBatchError(
            f"tokens[{bad[0]}, {bad[1]}] = {int(tokens[bad[0], bad[1]])} is outside the "
            f"vocabulary 0..{W - 1}"
        )
    if max_chunk_elements < 1:
        raise InvalidBatchError(f"max_chunk_elements must be >= 1, got {max_chunk_elements}")
    return _GatherLogprob.apply(logits, tokens.to(torch.int64), int(max_chunk_elements))


def response_logprobs(
    logits: torch.Tensor, input_ids: torch.Tensor, start: int, **kwargs
) -> torch.Tensor:
    """Log-probabilities (B, T - start) of the tokens ``input_ids[:, start:]`` given their
    prefixes, from a causal LM's logits (B, T, W) (position t predicts token t + 1)."""
    if not 1 <= start < input_ids.shape[1]:
        raise InvalidBatchError(
            f"start must be in 1..{input_ids.shape[1] - 1} (the first response position), got "
            f"{start}"
        )
    return token_logprobs(logits[:, start - 1 : -1], input_ids[:, start:], **kwargs)
