"""Completion log-probabilities without compute on padding: length buckets and packed sequences.

A right-padded batch (B, T) of prompt + completion rows of different lengths spends the model's
forward and backward passes, and the LM head over the whole vocabulary, on its padding. Three
layouts compute the same per-token log-probabilities (:func:`completion_logprobs`):

* ``"padded"`` -- one forward pass on the (B, T) batch, the LM head and the chunked logsumexp +
  gather (:mod:`theorylab.algorithms.deep.logprobs`) on every position from ``start - 1`` on;
* ``"buckets"`` -- the rows sorted by length and cut into at most ``n_buckets`` runs of similar
  length, each run trimmed to its own longest row (variable-length chunks; any model with
  ``forward(input_ids, attention_mask)``). Padding is left only inside a run;
* ``"packed"`` -- every row's real tokens laid end to end in one (1, N) sequence with position ids
  that restart at 0 at each row (N = the number of real tokens). The model must keep the rows
  apart: Hugging Face models do (``transformers`` turns restarting position ids into a
  block-diagonal causal mask when no attention mask is given, and flash-attention uses them as
  sequence boundaries); :func:`check_packing` verifies it on a two-row probe before first use.

In ``"buckets"`` and ``"packed"`` the LM head is applied only where it is needed
(``logits_to_keep`` of Hugging Face models: the completion positions), and every position outside
the completion mask is returned as 0, computed or not.

Why two layouts: packing removes all padding but its attention is a dense N x N masked product
on CPU (``scaled_dot_product_attention`` with a block mask), while buckets keep per-row attention
cost (T_k^2 per row) and leave a little padding. Which pays depends on the device and the length
spread; ``theorylab bench llm`` measures both (docs/benchmarks.md). Equality with the padded
computation is a test (``tests/test_deep_packing.py``): float32 round-off, 1e-12 in float64.

Assumption, checked: the attention mask is right-padded (each row's ones come first), as
:mod:`theorylab.algorithms.deep.steps` builds batches. Left-padded prompts must be shifted first.
"""

from __future__ import annotations

import torch

from theorylab.algorithms.deep.logprobs import token_logprobs
from theorylab.algorithms.deep.masking import InvalidBatchError

LAYOUTS = ("padded", "buckets", "packed")


def check_layout(layout: str) -> str:
    if layout not in LAYOUTS:
        raise InvalidBatchError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
    return layout


def row_lengths(attention_mask: torch.Tensor) -> torch.Tensor:
    """The length (B,) of each row of a right-padded 0/1 attention mask (B, T); raises on a row
    whose ones are not a prefix."""
    if attention_mask.ndim != 2:
        raise InvalidBatchError(
            f"attention_mask must be 2-D (B, T), got shape {tuple(attention_mask.shape)}"
        )
    m = attention_mask.to(torch.int64)
    lengths = m.sum(dim=1)
    prefix = torch.arange(m.shape[1], device=m.device)[None] < lengths[:, None]  # (B, T)
    bad = (m != prefix.to(torch.int64)).any(dim=1)
    if bool(bad.any()):
        b = int(bad.nonzero()[0, 0])
        raise InvalidBatchError(
            f"attention_mask row {b} is not right-padded (its ones must come first, then zeros): "
            f"{m[b].tolist()}"
        )
    return lengths


def _uses_hf_kwargs(model) -> bool:
    """Models that take ``position_ids`` and ``logits_to_keep`` (HFCausalLM)."""
    return bool(getattr(model, "supports_packing", False))


def _padded(model, input_ids, attention_mask, start):
    logits = model(input_ids, attention_mask)  # (B, T, W)
    return token_logprobs(logits[:, start - 1 : -1], input_ids[:, start:])


def _buckets(model, input_ids, attention_mask, start, lengths, n_buckets):
    B, T = input_ids.shape
    order = torch.argsort(lengths, stable=True)
    pieces = []
    for rows in order.chunk(min(n_buckets, B)):
        Tk = max(int(lengths[rows].max()), start + 1)  # (rows of length <= start score nothing)
        ids, am = input_ids[rows, :Tk], attention_mask[rows, :Tk]
        if _uses_hf_kwargs(model):  # the LM head on positions start - 1 .. Tk - 1 only
            logits = model(ids, am, logits_to_keep=Tk - start + 1)[:, :-1]
        else:
            logits = model(ids, am)[:, start - 1 : -1]
        tok = token_logprobs(logits, ids[:, start:])  # (b, Tk - start)
        pieces.append(torch.nn.functional.pad(tok, (0, T - Tk)))  # (b, T - start)
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(B, device=order.device)
    return torch.cat(pieces)[inverse]


def pack(input_ids: torch.Tensor, lengths: torch.Tensor):
    """(packed ids (1, N), position ids (1, N), flat index (N,) into the (B, T) batch) of the real
    tokens of a right-padded batch, rows end to end."""
    B, T = input_ids.shape
    real = torch.arange(T, device=input_ids.device)[None] < lengths[:, None]  # (B, T)
    flat = real.flatten().nonzero().squeeze(1)  # (N,)
    positions = (flat % T)[None]
    return input_ids.flatten()[flat][None], positions, flat


def _packed(model, input_ids, attention_mask, completion_mask, start, lengths):
    if not _uses_hf_kwargs(model):
        raise InvalidBatchError(
            f"layout 'packed' needs a model that takes position_ids (a Hugging Face model in "
            f"HFCausalLM); {type(model).__name__} does not: use layout 'buckets'"
        )
    check_packing(model)
    B, T = input_ids.shape
    ids, positions, flat = pack(input_ids, lengths)
    # packed position j predicts batch token flat[j] + 1: keep the j whose target is scored
    scored = torch.zeros(B, T, dtype=torch.bool, device=input_ids.device)
    scored[:, start - 1 : -1] = completion_mask[:, start:] > 0
    keep = scored.flatten()[flat].nonzero().squeeze(1)  # (K,) positions in the packed sequence
    targets = flat[keep] + 1  # (K,) flat indices of the scored tokens
    logits = model(ids, None, position_ids=positions, logits_to_keep=keep)  # (1, K, W)
    tok = token_logprobs(logits, input_ids.flatten()[targets][None])[0]  # (K,)
    out = torch.zeros(B * T, dtype=tok.dtype, device=tok.device).index_put((targets,), tok)
    return out.view(B, T)[:, start:]


def completion_logprobs(
    model, input_ids: torch.Tensor, attention_mask: torch.Tensor,
    completion_mask: torch.Tensor, start: int = 1, *, layout: str = "padded", n_buckets: int = 4,
) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """(per-token log-probabilities (B, T-start), completion mask (B, T-start)) of the tokens
    ``input_ids[:, start:]`` in the given ``layout`` (module docstring).

    model: ``forward(input_ids, attention_mask) -> logits (B, T, W)``; input_ids, attention_mask
    (right-padded), completion_mask: (B, T). Position t's logits predict token t + 1; positions
    before ``start - 1`` (the prompt's) are not scored.
    """
    check_layout(layout)
    if input_ids.ndim != 2 or attention_mask.shape != input_ids.shape:
        raise InvalidBatchError(
            f"input_ids {tuple(input_ids.shape)} and attention_mask "
            f"{tuple(attention_mask.shape)} must both be (B, T)"
        )
    if completion_mask.shape != input_ids.shape:
        raise InvalidBatchError(
            f"completion_mask has shape {tuple(completion_mask.shape)}, expected "
            f"{tuple(input_ids.shape)} like input_ids"
        )
    if not 1 <= start < input_ids.shape[1]:
        raise InvalidBatchError(
            f"start must be in 1..{input_ids.shape[1] - 1} (the first scored position), got {start}"
        )
    if n_buckets < 1:
        raise InvalidBatchError(f"n_buckets must be >= 1, got {n_buckets}")
    mask = completion_mask[:, start:]
    if layout == "padded":
        return _padded(model, input_ids, attention_mask, start), mask
    lengths = row_lengths(attention_mask)
    outside = (completion_mask > 0) & (attention_mask == 0)
    if bool(outside.any()):
        b, t = (int(v) for v in outside.nonzero()[0])
        raise InvalidBatchError(
            f"completion_mask[{b}, {t}] = 1 on padding (attention_mask[{b}, {t}] = 0)"
        )
    if layout == "buckets":
        tok = _buckets(model, input_ids, attention_mask, start, lengths, n_buckets)
    else:
        tok = _packed(model, input_ids, attention_mask, completion_mask, start, lengths)
    return torch.where(mask > 0, tok, torch.zeros_like(tok)), mask


def check_packing(model, tol: float = 1e-4) -> None:
    """Raise unless ``model`` keeps packed rows apart: the logits of two rows (3 and 2 tokens)
    packed into one sequence must equal those of each row alone. Checked once per model."""
    if getattr(model, "_packing_checked", False):
        return
    p = next(model.parameters())
    ids = torch.tensor([[1, 2, 3], [4, 5, 0]], device=p.device) % model.vocab_size
    lengths = torch.tensor([3, 2], device=p.device)
    packed, positions, flat = pack(ids, lengths)
    with torch.no_grad():
        alone = torch.cat([model(ids[:1], None)[0], model(ids[1:, :2], None)[0]])  # (5, W)
        together = model(packed, None, position_ids=positions)[0]  # (5, W)
    gap = float((alone.float() - together.float()).abs().max())
    if not gap <= tol * max(1.0, float(alone.float().abs().max())):
        raise InvalidBatchError(
            f"{type(getattr(model, 'model', model)).__name__} does not keep packed sequences apart "
            f"(logits differ by {gap:.3g} from the rows run alone; its attention ignores "
            "restarting position ids): use layout 'buckets'"
        )
    model._packing_checked = True
