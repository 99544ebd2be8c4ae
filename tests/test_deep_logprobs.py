"""Chunked logsumexp + gather log-probabilities against the naive full log_softmax."""

import pytest

torch = pytest.importorskip("torch")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from theorylab.algorithms.deep.logprobs import response_logprobs, token_logprobs  # noqa: E402
from theorylab.algorithms.deep.masking import InvalidBatchError  # noqa: E402


def naive(logits, tokens):
    return torch.log_softmax(logits.float(), dim=-1).gather(-1, tokens[..., None]).squeeze(-1)


@settings(max_examples=25, deadline=None)
@given(
    B=st.integers(1, 4),
    T=st.integers(1, 7),
    W=st.integers(2, 300),
    chunk=st.integers(1, 2000),
    seed=st.integers(0, 10_000),
)
def test_values_and_gradients_match_the_naive_log_softmax(B, T, W, chunk, seed):
    g = torch.Generator().manual_seed(seed)
    logits64 = (3 * torch.randn(B, T, W, generator=g, dtype=torch.float64)).requires_grad_()
    tokens = torch.randint(0, W, (B, T), generator=g)
    weights = torch.randn(B, T, generator=g, dtype=torch.float64)
    # float64 logits: the same numbers as the naive log_softmax up to float64 round-off
    ours = token_logprobs(logits64, tokens, max_chunk_elements=chunk)
    (gy,) = torch.autograd.grad((ours * weights).sum(), logits64)
    ref = torch.log_softmax(logits64, -1).gather(-1, tokens[..., None]).squeeze(-1)
    (gn,) = torch.autograd.grad((ref * weights).sum(), logits64)
    assert torch.allclose(ours, ref, atol=1e-12, rtol=0)
    assert torch.allclose(gy, gn, atol=1e-12, rtol=0)
    # float32 logits: within 1e-6 of the exact (float64) answer, relative to its size (a few
    # float32 ulps; the naive float32 log_softmax is no closer), gradients within 1e-6
    logits = logits64.detach().float().requires_grad_()
    ours32 = token_logprobs(logits, tokens, max_chunk_elements=chunk)
    (g32,) = torch.autograd.grad((ours32 * weights.float()).sum(), logits)
    assert ours32.dtype == torch.float32
    assert ((ours32.double() - ref).abs() <= 1e-6 * ref.abs().clamp(min=1)).all()
    assert torch.allclose(g32.double(), gn, atol=1e-6, rtol=0)


def test_float64_gradcheck():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 3, 5, dtype=torch.float64, generator=g, requires_grad=True)
    tokens = torch.randint(0, 5, (2, 3), generator=g)
    assert torch.autograd.gradcheck(
        lambda z: token_logprobs(z, tokens, max_chunk_elements=7), logits
    )


def test_bfloat16_logits_give_float32_logprobs_and_bf16_gradients():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(3, 4, 1000, generator=g).to(torch.bfloat16).requires_grad_()
    tokens = torch.randint(0, 1000, (3, 4), generator=g)
    ours = token_logprobs(logits, tokens, max_chunk_elements=3000)
    assert ours.dtype == torch.float32
    assert torch.allclose(ours, naive(logits, tokens), atol=1e-5, rtol=0)
    ours.sum().backward()
    assert logits.grad.dtype == torch.bfloat16


def test_response_logprobs_shift_by_one():
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(2, 5, 11, generator=g)
    ids = torch.randint(0, 11, (2, 5), generator=g)
    out = response_logprobs(logits, ids, start=2)
    assert torch.allclose(out, naive(logits[:, 1:4], ids[:, 2:]), atol=1e-6)


def test_bad_input_is_named():
    logits = torch.zeros(2, 3, 4)
    with pytest.raises(InvalidBatchError, match=r"tokens\[1, 2\] = 4 is outside the vocabulary"):
        token_logprobs(logits, torch.tensor([[0, 1, 2], [0, 1, 4]]))
    with pytest.raises(InvalidBatchError, match="expected \\(2, 3\\)"):
        token_logprobs(logits, torch.zeros(2, 2, dtype=torch.long))
    with pytest.raises(InvalidBatchError, match="start must be in 1..2"):
        response_logprobs(logits, torch.zeros(2, 3, dtype=torch.long), start=3)
