"""The tiny transformer and Hugging Face causal LMs behind one interface (no network)."""

import pytest

torch = pytest.importorskip("torch")

from theorylab.algorithms.deep.models import (  # noqa: E402
    DeviceUnavailableError,
    ModelSpecError,
    TinyTransformer,
    make_model,
    n_parameters,
    resolve_device,
)


def _causal(model, vocab):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (3, 6), generator=g)
    logits = model(ids)
    assert logits.shape == (3, 6, model.vocab_size)
    changed = ids.clone()
    changed[:, 4:] = (changed[:, 4:] + 1) % vocab
    with torch.no_grad():
        again = model(changed)
    # a causal model: positions before the change see the same prefix, hence the same logits
    assert torch.allclose(logits[:, :4], again[:, :4], atol=1e-5)
    assert not torch.allclose(logits[:, 4:], again[:, 4:], atol=1e-5)


def test_tiny_transformer_is_causal_small_and_seeded():
    m = make_model("tiny", 8, seed=3)
    assert isinstance(m, TinyTransformer)
    assert 50_000 < n_parameters(m) < 500_000
    _causal(m, 8)
    again = make_model("tiny", 8, seed=3)
    assert all(torch.equal(a, b) for a, b in zip(m.parameters(), again.parameters(), strict=True))
    other = make_model("tiny:d_model=32,n_layer=1,n_head=2,d_ff=64", 8, seed=4)
    assert n_parameters(other) < n_parameters(m)


def test_tiny_spec_errors():
    with pytest.raises(ModelSpecError, match="tiny has no parameter 'width'"):
        make_model("tiny:width=3", 8)
    with pytest.raises(ModelSpecError, match="not divisible by n_head"):
        make_model("tiny:d_model=30,n_head=4", 8)
    with pytest.raises(ModelSpecError, match="unknown model 'bert'"):
        make_model("bert", 8)


def test_vocabulary_smaller_than_the_task_is_refused():
    m = TinyTransformer(6)
    with pytest.raises(ModelSpecError, match="vocabulary has 6 tokens but the task needs 8"):
        make_model(m, 8)


def test_cuda_without_cuda_is_a_specific_error():
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(DeviceUnavailableError, match="CUDA is not available"):
        resolve_device("cuda")
    with pytest.raises(DeviceUnavailableError, match="CUDA is not available"):
        make_model("tiny", 8, device="cuda:0")
    with pytest.raises(DeviceUnavailableError, match="unknown device"):
        resolve_device("gpu0")


@pytest.mark.parametrize(
    "spec", ["gpt2-config:n_layer=2,n_embd=64", "llama-config:num_hidden_layers=1,hidden_size=32"]
)
def test_hf_configs_random_init(spec):
    pytest.importorskip("transformers")
    m = make_model(spec, 12, seed=0)
    assert m.vocab_size == 12
    _causal(m.eval(), 12)
    again = make_model(spec, 12, seed=0)
    assert all(torch.equal(a, b) for a, b in zip(m.parameters(), again.parameters(), strict=True))


def test_hf_spec_errors(tmp_path):
    pytest.importorskip("transformers")
    with pytest.raises(ModelSpecError, match="GPT2Config has no attribute 'n_lay'"):
        make_model("gpt2-config:n_lay=2", 12)
    with pytest.raises(ModelSpecError, match="is not a directory"):
        make_model(f"hf:{tmp_path / 'missing'}", 12)


def test_hf_local_path_round_trip(tmp_path):
    pytest.importorskip("transformers")
    m = make_model("gpt2-config:n_layer=1,n_embd=32,n_head=2", 10, seed=1)
    m.model.save_pretrained(tmp_path)
    loaded = make_model(f"hf:{tmp_path}", 10)
    ids = torch.tensor([[1, 2, 3]])
    with torch.no_grad():
        assert torch.allclose(m.eval()(ids), loaded.eval()(ids), atol=1e-6)
