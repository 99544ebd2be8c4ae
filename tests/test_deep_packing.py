"""Padding-free completion log-probabilities (algorithms/deep/packing.py): the "buckets" and
"packed" layouts equal the padded computation (values and gradients; float64 to 1e-12, float32 to
1e-6) on GPT-2 and Llama configs, and a model that ignores restarting position ids is refused."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hypothesis import assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from theorylab.algorithms.deep.masking import InvalidBatchError  # noqa: E402
from theorylab.algorithms.deep.models import HFCausalLM, make_model  # noqa: E402
from theorylab.algorithms.deep.packing import (  # noqa: E402
    check_packing,
    completion_logprobs,
    pack,
    row_lengths,
)

V = 40
SPECS = ("gpt2-config:n_layer=2,n_embd=32", "llama-config:hidden_size=32,intermediate_size=64")
_MODELS: dict = {}


def model(spec: str, dtype) -> HFCausalLM:
    key = (spec, dtype)
    if key not in _MODELS:
        _MODELS[key] = make_model(spec, V, seed=0).to(dtype)
    return _MODELS[key]


def batch(lengths: list[int], P: int, T: int, seed: int):
    """Right-padded rows of the given lengths; the completion is every real token after P."""
    g = torch.Generator().manual_seed(seed)
    L = torch.tensor(lengths)
    ids = torch.randint(0, V, (len(lengths), T), generator=g)
    am = (torch.arange(T)[None] < L[:, None]).long()
    cm = am.clone()
    cm[:, :P] = 0
    return ids * am, am, cm


def naive(m, ids, am, cm, P):
    """log_softmax over the whole vocabulary of the padded batch's logits, in float64."""
    logits = m(ids, am).double()
    tok = torch.log_softmax(logits[:, P - 1 : -1], -1).gather(-1, ids[:, P:, None]).squeeze(-1)
    return tok * cm[:, P:]


def weighted_grad(m, tok, w):
    m.zero_grad(set_to_none=True)
    (tok * w).sum().backward()
    out = torch.cat([p.grad.flatten() for p in m.parameters()])
    m.zero_grad(set_to_none=True)
    return out


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("layout", ["buckets", "packed"])
def test_layout_equals_padded_in_float64(spec, layout):
    m = model(spec, torch.float64)
    P, T = 4, 16
    ids, am, cm = batch([16, 7, 12, 5, 16, 9], P, T, seed=1)
    want = naive(m, ids, am, cm, P)
    pad, mask = completion_logprobs(m, ids, am, cm, P)
    got, mask2 = completion_logprobs(m, ids, am, cm, P, layout=layout, n_buckets=3)
    assert torch.equal(mask, mask2)
    assert float((pad * mask - want).detach().abs().max()) < 1e-12
    assert float((got - want).detach().abs().max()) < 1e-12
    assert bool((got[mask == 0] == 0).all())  # nothing outside the completion
    w = torch.randn(got.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    g_pad, g_got = weighted_grad(m, pad * mask, w), weighted_grad(m, got, w)
    assert float((g_pad - g_got).abs().max()) < 1e-12


@settings(max_examples=12, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 14), min_size=1, max_size=7),
    P=st.integers(1, 5),
    n_buckets=st.integers(1, 4),
    spec=st.sampled_from(SPECS),
)
def test_layouts_agree_in_float32_for_any_lengths(lengths, P, n_buckets, spec):
    m = model(spec, torch.float32)
    T = max(max(lengths), P + 1)
    ids, am, cm = batch(lengths, P, T, seed=sum(lengths))
    assume(bool(cm.any()))  # something to score: a row longer than its prompt
    pad, mask = completion_logprobs(m, ids, am, cm, P)
    for layout in ("buckets", "packed"):
        got, _ = completion_logprobs(m, ids, am, cm, P, layout=layout, n_buckets=n_buckets)
        assert float((got - pad * mask).detach().abs().max()) < 1e-6, layout


def test_buckets_work_for_any_model_taking_an_attention_mask():
    """The project's tiny transformer (no position_ids, no logits_to_keep), right padding."""

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = make_model("tiny:d_model=16,n_layer=1,n_head=2,d_ff=32", V, seed=3)
            self.vocab_size = V

        def forward(self, ids, attention_mask=None):
            return self.inner(ids)

    m = Tiny().double()
    ids, am, cm = batch([9, 3, 6], 2, 9, seed=4)
    pad, mask = completion_logprobs(m, ids, am, cm, 2)
    got, _ = completion_logprobs(m, ids, am, cm, 2, layout="buckets", n_buckets=2)
    assert float((got - pad * mask).detach().abs().max()) < 1e-12
    with pytest.raises(InvalidBatchError, match="position_ids"):
        completion_logprobs(m, ids, am, cm, 2, layout="packed")


def test_pack_lays_real_tokens_end_to_end_with_restarting_positions():
    ids = torch.tensor([[5, 6, 7], [8, 9, 0], [1, 0, 0]])
    packed, positions, flat = pack(ids, torch.tensor([3, 2, 1]))
    assert packed.tolist() == [[5, 6, 7, 8, 9, 1]]
    assert positions.tolist() == [[0, 1, 2, 0, 1, 0]]
    assert flat.tolist() == [0, 1, 2, 3, 4, 6]


def test_a_model_that_ignores_restarting_positions_is_refused():
    """Negative control: a wrapper that drops position_ids lets packed rows attend to each other;
    check_packing must catch it (and the packed values would be wrong)."""

    class Ignores(HFCausalLM):
        def forward(self, input_ids, attention_mask=None, *, position_ids=None, logits_to_keep=0):
            return super().forward(input_ids, attention_mask, logits_to_keep=logits_to_keep)

    m = Ignores(make_model(SPECS[1], V, seed=0).model)
    with pytest.raises(InvalidBatchError, match="packed sequences apart"):
        check_packing(m)
    ids, am, cm = batch([8, 6], 2, 8, seed=5)
    m._packing_checked = True  # skip the check: the values are then wrong
    got, mask = completion_logprobs(m, ids, am, cm, 2, layout="packed")
    pad, _ = completion_logprobs(m, ids, am, cm, 2)
    assert float((got - pad * mask).detach().abs().max()) > 1e-3


def test_bad_batches_get_specific_errors():
    m = model(SPECS[0], torch.float32)
    ids, am, cm = batch([6, 4], 2, 6, seed=6)
    with pytest.raises(InvalidBatchError, match="unknown layout 'flat'"):
        completion_logprobs(m, ids, am, cm, 2, layout="flat")
    left = am.flip(1)
    with pytest.raises(InvalidBatchError, match="row 1 is not right-padded"):
        row_lengths(left)
    with pytest.raises(InvalidBatchError, match="not right-padded"):
        completion_logprobs(m, ids, left, cm * left, 2, layout="buckets")
    bad = cm.clone()
    bad[1, 5] = 1
    with pytest.raises(InvalidBatchError, match=r"completion_mask\[1, 5\] = 1 on padding"):
        completion_logprobs(m, ids, am, bad, 2, layout="packed")
    with pytest.raises(InvalidBatchError, match="n_buckets must be >= 1"):
        completion_logprobs(m, ids, am, cm, 2, layout="buckets", n_buckets=0)


@pytest.mark.gpu
def test_layouts_agree_on_cuda_in_bfloat16():
    m = make_model(SPECS[1], V, seed=0, device="cuda").to(torch.bfloat16)
    ids, am, cm = (t.cuda() for t in batch([12, 5, 9, 12], 3, 12, seed=7))
    pad, mask = completion_logprobs(m, ids, am, cm, 3)
    for layout in ("buckets", "packed"):
        got, _ = completion_logprobs(m, ids, am, cm, 3, layout=layout)
        # bf16 activations: the layouts' different matmul shapes round differently
        assert float((got - pad * mask).detach().abs().max()) < 5e-2, layout
