"""Token-level masking and batch checks, in one place for every loss.

A batch of responses is a padded ``(B, T)`` tensor of per-token log-probabilities and a ``(B, T)``
mask (1 on the response's tokens, 0 on padding). :func:`sequence_logprob` turns it into the
sequence log-probabilities ``log pi(y|x) = sum_t mask_t log pi(y_t | x, y_<t)`` the direct-alignment
losses use; :func:`aggregate` reduces a per-token loss the three ways the policy-gradient papers do
(verl calls these ``loss_agg_mode``):

* ``"seq-mean-token-mean"``: mean over each response's tokens, then over responses (GRPO,
  Shao et al. 2024, the 1/|o_i| of eq. (3));
* ``"token-mean"``: sum over all tokens / number of tokens in the batch (DAPO);
* ``"seq-mean-token-sum-norm"``: sum over all tokens / (B * max_length), a constant (Dr. GRPO,
  Liu et al. 2025, which removes the length bias of the 1/|o_i|).

Bad input raises :class:`InvalidBatchError` naming the argument, the index and what was expected.
"""

from __future__ import annotations

import torch

from theorylab.errors import TheorylabError

AGGREGATIONS = ("seq-mean-token-mean", "token-mean", "seq-mean-token-sum-norm")


class InvalidBatchError(TheorylabError, ValueError):
    """A loss's tensors do not fit together (shapes, masks, groups) or a hyper-parameter is out of
    range."""


def check_positive(name: str, value: float) -> None:
    if not value > 0:
        raise InvalidBatchError(f"{name} must be > 0, got {value!r}")


def check_nonnegative(name: str, value: float) -> None:
    if not value >= 0:
        raise InvalidBatchError(f"{name} must be >= 0, got {value!r}")


def check_vector(name: str, x: torch.Tensor, n: int | None = None) -> int:
    """``x`` must be a non-empty 1-D tensor (of length ``n`` when given); returns its length."""
    if not isinstance(x, torch.Tensor):
        raise InvalidBatchError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim != 1:
        raise InvalidBatchError(f"{name} must be 1-D (B,), got shape {tuple(x.shape)}")
    if x.shape[0] == 0:
        raise InvalidBatchError(f"{name} is empty (B = 0): a loss needs at least one example")
    if n is not None and x.shape[0] != n:
        raise InvalidBatchError(f"{name} has {x.shape[0]} entries, expected B = {n}")
    return int(x.shape[0])


def check_same_vectors(**tensors: torch.Tensor) -> int:
    """All tensors 1-D, non-empty, of one length B; returns B."""
    n = None
    for name, x in tensors.items():
        if x is None:
            continue
        if n is None:
            n = check_vector(name, x)
        else:
            check_vector(name, x, n)
    assert n is not None
    return n


def check_mask(mask: torch.Tensor, shape: tuple[int, ...] | None = None) -> torch.Tensor:
    """A (B, T) mask of 0/1 with at least one token per row; returned as the float dtype used."""
    if not isinstance(mask, torch.Tensor):
        raise InvalidBatchError(f"mask must be a torch.Tensor, got {type(mask).__name__}")
    if mask.ndim != 2:
        raise InvalidBatchError(f"mask must be 2-D (B, T), got shape {tuple(mask.shape)}")
    if shape is not None and tuple(mask.shape) != tuple(shape):
        raise InvalidBatchError(
            f"mask has shape {tuple(mask.shape)}, expected the token tensors' shape {tuple(shape)}"
        )
    if mask.shape[0] == 0 or mask.shape[1] == 0:
        raise InvalidBatchError(f"mask is empty (shape {tuple(mask.shape)})")
    m = mask.to(torch.float64) if mask.dtype == torch.bool else mask
    bad = (m != 0) & (m != 1)
    if bool(bad.any()):
        i, t = (int(v) for v in bad.nonzero()[0])
        raise InvalidBatchError(f"mask[{i}, {t}] = {float(m[i, t])}, expected 0 or 1")
    empty = m.sum(dim=1) == 0
    if bool(empty.any()):
        i = int(empty.nonzero()[0, 0])
        raise InvalidBatchError(f"mask row {i} has no token: every response needs at least one")
    return m


def check_tokens(mask: torch.Tensor, **tensors: torch.Tensor) -> torch.Tensor:
    """Token tensors (B, T) of one shape with a valid mask of that shape; returns the float mask."""
    shape = None
    for name, x in tensors.items():
        if x is None:
            continue
        if not isinstance(x, torch.Tensor):
            raise InvalidBatchError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
        if x.ndim != 2:
            raise InvalidBatchError(f"{name} must be 2-D (B, T), got shape {tuple(x.shape)}")
        if shape is None:
            shape = tuple(x.shape)
        elif tuple(x.shape) != shape:
            raise InvalidBatchError(
                f"{name} has shape {tuple(x.shape)}, expected {shape} like the other token tensors"
            )
    m = check_mask(mask, shape)
    first = next(x for x in tensors.values() if x is not None)
    return m.to(first.dtype)


def sequence_logprob(token_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``log pi(y|x) = sum_t mask[b, t] * token_logp[b, t]``.

    token_logp: (B, T) per-token log-probabilities; mask: (B, T) 0/1, >= 1 token per row.
    Returns (B,). Padding positions may hold anything finite or not: they are zeroed, not summed.
    """
    m = check_tokens(mask, token_logp=token_logp)
    return torch.where(m > 0, token_logp, torch.zeros_like(token_logp)).sum(dim=1)


def masked_sum(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-row sum over the masked tokens: (B, T) -> (B,)."""
    return torch.where(mask > 0, x, torch.zeros_like(x)).sum(dim=1)


def aggregate(
    token_loss: torch.Tensor,
    mask: torch.Tensor,
    mode: str = "seq-mean-token-mean",
    max_length: int = 0,
    weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """Reduce a (B, T) per-token loss to a scalar (see the module docstring for ``mode``).

    max_length: the constant of ``"seq-mean-token-sum-norm"`` (0: the padded length T).
    weights: (B,) optional per-response weights summing to the batch's probability mass (an
    exact expectation over enumerated responses); ``None`` is the uniform 1/B.
    """
    B, T = token_loss.shape
    per_row = masked_sum(token_loss, mask)  # (B,)
    lengths = mask.sum(dim=1)  # (B,)
    if mode == "seq-mean-token-mean":
        per_seq = per_row / lengths
    elif mode == "seq-mean-token-sum-norm":
        if max_length < 0:
            raise InvalidBatchError(f"max_length must be >= 0, got {max_length}")
        L = max_length or T
        if bool((lengths > L).any()):
            raise InvalidBatchError(f"a response is longer than max_length = {L}")
        per_seq = per_row / L
    elif mode == "token-mean":
        if weights is not None:
            raise InvalidBatchError("aggregation 'token-mean' does not take per-response weights")
        return per_row.sum() / lengths.sum()
    else:
        raise InvalidBatchError(f"unknown aggregation {mode!r}; expected one of {AGGREGATIONS}")
    return reduce_examples(per_seq, weights)


def reduce_examples(per_example: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
    """Mean over examples, or ``sum_b weights[b] * per_example[b]`` (an exact expectation when the
    batch enumerates every example with its probability)."""
    if weights is None:
        return per_example.mean()
    check_vector("weights", weights, per_example.shape[0])
    if bool((weights < 0).any()):
        i = int((weights < 0).nonzero()[0, 0])
        raise InvalidBatchError(f"weights[{i}] = {float(weights[i])} is negative")
    return (weights * per_example).sum()
