"""Group sampling with the KV cache (algorithms/deep/sampling.py) and the full GRPO step with
generation (steps.generation_group_step): the cached sampler draws exactly what a cache-free
sampler draws from the same generator, its frequencies fit the model's softmax (chi-square), EOS
masking is TRL's, and the step's loss is group_step's on the sampled batch."""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from scipy import stats  # noqa: E402

from theorylab.algorithms.deep.masking import InvalidBatchError  # noqa: E402
from theorylab.algorithms.deep.models import make_model  # noqa: E402
from theorylab.algorithms.deep.registry import make_loss  # noqa: E402
from theorylab.algorithms.deep.sampling import completion_mask_of, sample_groups  # noqa: E402
from theorylab.algorithms.deep.steps import generation_group_step, group_step  # noqa: E402

SPECS = ("gpt2-config:n_layer=2,n_embd=32", "llama-config:hidden_size=32,intermediate_size=64")


def no_cache_sample(m, prompts, prompt_mask, G, C, eos, pad, gen):
    """The reference sampler: every step recomputes the logits of each prompt's G rows from their
    real tokens alone (no cache, no padding), then draws all rows with one multinomial call as
    sample_groups does."""
    blocks = [p[k.bool()].repeat(G, 1) for p, k in zip(prompts, prompt_mask, strict=True)]
    alive = torch.ones(G * len(blocks), dtype=torch.bool)
    drawn = []
    for _ in range(C):
        with torch.no_grad():
            logits = torch.cat([m(b)[:, -1] for b in blocks])  # (n G, W)
        nxt = torch.multinomial(torch.softmax(logits.float(), -1), 1, generator=gen).squeeze(1)
        nxt = torch.where(alive, nxt, torch.full_like(nxt, pad))
        drawn.append(nxt)
        alive = alive & (nxt != eos)
        blocks = [torch.cat([b, t[:, None]], 1) for b, t in zip(blocks, nxt.split(G), strict=True)]
        if not bool(alive.any()):
            break
    return torch.stack(drawn, 1)


@pytest.mark.parametrize("spec", SPECS)
def test_cached_sampling_draws_what_the_cache_free_sampler_draws(spec):
    """Same generator, same draws: the KV cache, the repeated prefill and the left padding change
    no probability (float64 model, so no draw sits on a rounding boundary)."""
    V = 30
    m = make_model(spec, V, seed=1).double()
    prompts = torch.tensor([[3, 4, 5, 6, 7], [0, 0, 9, 10, 11]])  # row 1 left-padded to 5
    mask = torch.tensor([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]])
    kw = dict(eos_token_id=2, pad_token_id=0)
    got, got_mask = sample_groups(
        m, prompts, 3, 9, generator=torch.Generator().manual_seed(5), prompt_mask=mask, **kw
    )
    want = no_cache_sample(m, prompts, mask, 3, 9, 2, 0, torch.Generator().manual_seed(5))
    assert torch.equal(got, want)
    assert torch.equal(got_mask, completion_mask_of(want, 2))


def test_sampled_frequencies_fit_the_models_softmax():
    """6000 one-token completions of one prompt against softmax(logits / temperature), chi-square
    at the 0.1% level, at temperatures 1 and 2; the control (temperature 1's draws against
    temperature 2's probabilities) must be rejected."""
    V = 6
    m = make_model("llama-config:hidden_size=32,intermediate_size=64", V, seed=2)
    with torch.no_grad():
        m.model.lm_head.weight.mul_(40.0)  # a peaked distribution, so the control can fail
        logits = m(torch.tensor([[1, 2, 3]]))[0, -1].double()
    prompt = torch.tensor([[1, 2, 3]])
    counts, probs = {}, {}
    for temp in (1.0, 2.0):
        draws, _ = sample_groups(
            m, prompt, 6000, 1, eos_token_id=None, pad_token_id=0,
            generator=torch.Generator().manual_seed(6), temperature=temp,
        )  # fmt: skip
        counts[temp] = np.bincount(draws[:, 0].numpy(), minlength=V)
        probs[temp] = torch.softmax(logits / temp, -1).numpy()

    def p_value(c, p):
        return stats.chisquare(c, 6000 * p).pvalue

    assert p_value(counts[1.0], probs[1.0]) > 1e-3
    assert p_value(counts[2.0], probs[2.0]) > 1e-3
    assert p_value(counts[1.0], probs[2.0]) < 1e-6  # the control


def test_completions_stop_at_eos_and_pad_after_it():
    m = make_model(SPECS[0], 5, seed=3)
    ids, mask = sample_groups(
        m, torch.tensor([[1, 2], [3, 4]]), 8, 12, eos_token_id=4, pad_token_id=0,
        generator=torch.Generator().manual_seed(7),
    )  # fmt: skip
    assert ids.shape[0] == 16 and ids.shape[1] <= 12
    for row, mrow in zip(ids.tolist(), mask.tolist(), strict=True):
        if 4 in row:
            k = row.index(4)
            assert mrow == [1] * (k + 1) + [0] * (len(row) - k - 1)
            assert row[k + 1 :] == [0] * (len(row) - k - 1)
        else:
            assert mrow == [1] * len(row)
    assert (mask.sum(1) < ids.shape[1]).any()  # some row did stop early (p(eos) ~ 1/5 a step)


def test_completion_mask_of_keeps_the_first_eos():
    ids = torch.tensor([[5, 2, 7, 2], [5, 6, 7, 8], [2, 2, 0, 0]])
    assert completion_mask_of(ids, 2).tolist() == [[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]]
    assert completion_mask_of(ids, None).tolist() == [[1] * 4] * 3


def test_bad_sampler_input_gets_specific_errors():
    tiny = make_model("tiny:d_model=16,n_layer=1,n_head=2,d_ff=32", 8)
    g = torch.Generator()
    with pytest.raises(InvalidBatchError, match="HFCausalLM"):
        sample_groups(tiny, torch.tensor([[1]]), 2, 2, eos_token_id=1, pad_token_id=0, generator=g)
    m = make_model(SPECS[0], 8)
    with pytest.raises(InvalidBatchError, match="group_size and max_new_tokens must be >= 1"):
        sample_groups(m, torch.tensor([[1]]), 0, 2, eos_token_id=1, pad_token_id=0, generator=g)
    with pytest.raises(InvalidBatchError, match="temperature must be > 0"):
        sample_groups(m, torch.tensor([[1]]), 1, 2, eos_token_id=1, pad_token_id=0, generator=g,
                      temperature=0.0)  # fmt: skip
    with pytest.raises(InvalidBatchError, match="prompt_mask has shape"):
        sample_groups(m, torch.tensor([[1, 2]]), 1, 2, eos_token_id=1, pad_token_id=0,
                      generator=g, prompt_mask=torch.ones(1, 3))  # fmt: skip


def _even(prompts, completion, mask):
    return ((completion % 2 == 0) & (mask > 0)).sum(1) / mask.sum(1)


@pytest.mark.parametrize("layout", ["padded", "buckets", "packed"])
def test_generation_step_is_group_step_on_the_sampled_batch(layout):
    V = 20
    policy = make_model(SPECS[1], V, seed=4)
    reference = make_model(SPECS[1], V, seed=5).requires_grad_(False)
    twin = copy.deepcopy(policy)
    loss_fn = make_loss("grpo:beta=0.04")
    prompts = torch.tensor([[1, 2, 3], [4, 5, 6]])
    kw = dict(group_size=4, max_new_tokens=6, eos_token_id=7, pad_token_id=0)
    opt = torch.optim.SGD(policy.parameters(), lr=0.0)
    loss, b = generation_group_step(policy, reference, opt, loss_fn, prompts, _even, step=False,
                                    generator=torch.Generator().manual_seed(8), layout=layout,
                                    **kw)  # fmt: skip
    assert b["input_ids"].shape[0] == 8 and torch.equal(b["input_ids"][:4, :3], prompts[[0] * 4])
    assert torch.equal(
        b["rewards"], _even(None, b["input_ids"][:, 3:], b["completion_mask"][:, 3:])
    )
    args = (b["input_ids"], b["attention_mask"], b["completion_mask"], b["rewards"], b["group"])
    want = group_step(twin, reference, opt, loss_fn, *args, prompt_length=3, step=False)
    assert abs(float(loss.detach()) - float(want.detach())) < 1e-6
    before = [p.detach().clone() for p in policy.parameters()]
    opt = torch.optim.SGD(policy.parameters(), lr=0.5)
    gen = torch.Generator().manual_seed(9)
    generation_group_step(policy, reference, opt, loss_fn, prompts, _even, generator=gen,
                          layout=layout, **kw)  # fmt: skip
    assert any(not torch.equal(a, p) for a, p in zip(before, policy.parameters(), strict=True))


@pytest.mark.gpu
def test_sampling_and_the_generation_step_run_on_cuda():
    V = 20
    policy = make_model(SPECS[1], V, seed=4, device="cuda")
    reference = make_model(SPECS[1], V, seed=5, device="cuda").requires_grad_(False)
    prompts = torch.tensor([[1, 2, 3], [4, 5, 6]], device="cuda")
    gen = torch.Generator(device="cuda").manual_seed(0)
    opt = torch.optim.AdamW(policy.parameters(), lr=1e-3)
    loss, b = generation_group_step(
        policy, reference, opt, make_loss("grpo:beta=0.04"), prompts, _even, group_size=4,
        max_new_tokens=6, eos_token_id=7, pad_token_id=0, generator=gen, layout="packed",
    )  # fmt: skip
    assert b["input_ids"].is_cuda and torch.isfinite(loss)
