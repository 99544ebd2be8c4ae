"""Causal language models for the deep trainer: the project's own tiny transformer (pure torch) and
any Hugging Face causal LM (``transformers``, the ``[llm]`` extra), behind one interface.

Every model is a ``torch.nn.Module`` with ``forward(input_ids (B, T) int64) -> logits (B, T, W)``
and an integer ``vocab_size`` (W). Specs (:func:`make_model`):

* ``tiny`` / ``tiny:d_model=64,n_layer=2,n_head=4,d_ff=256`` -- :class:`TinyTransformer`;
* ``gpt2-config:n_layer=2,n_embd=64`` / ``llama-config:hidden_size=64,...`` -- a random-init
  ``transformers`` model from a config (no network); keys are the config's attributes;
* ``hf:/path/to/model`` (or an existing directory) -- ``AutoModelForCausalLM.from_pretrained`` with
  ``local_files_only=True``.

:class:`TinyTransformer` is a GPT-style decoder (Radford et al. 2019; pre-LayerNorm blocks,
learned positions, causal scaled-dot-product attention, tied input/output embeddings) written
here; it has no dropout. Config-built HF models get every dropout probability set to 0: RL
fine-tuning with exact evaluation needs the policy that is evaluated to be the one that is trained
(TRL's trainers disable dropout for the same reason).
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from theorylab.errors import TheorylabError
from theorylab.registry import _convert, parse_spec


class ModelSpecError(TheorylabError, ValueError):
    """A model spec that cannot be built, or a model that does not fit the task."""


class DeviceUnavailableError(TheorylabError, RuntimeError):
    """A device was requested that this torch cannot use (e.g. CUDA without CUDA)."""


def resolve_device(device: str | torch.device = "cpu") -> torch.device:
    """``"cpu"``, ``"cuda"``, ``"cuda:1"`` -> a torch.device, checked to be usable."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise DeviceUnavailableError(
            f"unknown device {device!r}; expected 'cpu' or 'cuda[:i]'"
        ) from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceUnavailableError(
                f"device {str(device)!r} requested but CUDA is not available to this torch "
                f"({torch.__version__}); use device='cpu'"
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise DeviceUnavailableError(
                f"device {str(device)!r} requested but only {torch.cuda.device_count()} CUDA "
                "device(s) are visible"
            )
    elif dev.type != "cpu":
        raise DeviceUnavailableError(f"device {str(device)!r}: expected 'cpu' or 'cuda[:i]'")
    return dev


# --------------------------------------------------------------------------- the tiny transformer
class _Block(nn.Module):
    def __init__(self, d_model: int, n_head: int, d_ff: int) -> None:
        super().__init__()
        self.n_head = n_head
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # h: (B, T, D)
        B, T, D = h.shape
        q, k, v = self.qkv(self.ln1(h)).split(D, dim=-1)
        q, k, v = (z.view(B, T, self.n_head, D // self.n_head).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, D/H)
        h = h + self.proj(a.transpose(1, 2).reshape(B, T, D))
        return h + self.ff(self.ln2(h))


class TinyTransformer(nn.Module):
    """A small GPT-style causal transformer (see the module docstring).

    d_model 64, 2 layers, 4 heads, d_ff 256 and a vocabulary of 8: about 100K parameters.
    """

    def __init__(
        self,
        vocab_size: int,
        max_len: int = 64,
        d_model: int = 64,
        n_layer: int = 2,
        n_head: int = 4,
        d_ff: int = 256,
    ) -> None:
        super().__init__()
        for name, v in (("vocab_size", vocab_size), ("max_len", max_len), ("d_model", d_model)):
            if v < 1:
                raise ModelSpecError(f"tiny: {name} must be >= 1, got {v}")
        if n_layer < 1 or n_head < 1 or d_ff < 1:
            raise ModelSpecError(
                f"tiny: need n_layer, n_head, d_ff >= 1; got {n_layer}, {n_head}, {d_ff}"
            )
        if d_model % n_head:
            raise ModelSpecError(f"tiny: d_model = {d_model} is not divisible by n_head = {n_head}")
        self.vocab_size, self.max_len = vocab_size, max_len
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(_Block(d_model, n_head, d_ff) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d_model)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
                if isinstance(m, nn.Linear):
                    nn.init.zeros_(m.bias)
        for blk in self.blocks:  # GPT-2's 1/sqrt(2 n_layer) scaling of the residual projections
            nn.init.normal_(blk.proj.weight, std=0.02 / math.sqrt(2 * n_layer))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        """input_ids (B, T) -> logits (B, T, vocab_size)."""
        T = input_ids.shape[1]
        if T > self.max_len:
            raise ModelSpecError(
                f"sequence length {T} exceeds the model's max_len = {self.max_len}"
            )
        pos = torch.arange(T, device=input_ids.device)
        h = self.tok(input_ids) + self.pos(pos)[None]
        for blk in self.blocks:
            h = blk(h)
        return self.ln_f(h) @ self.tok.weight.T


# --------------------------------------------------------------------------- Hugging Face models
class HFCausalLM(nn.Module):
    """A ``transformers`` causal LM as ``forward(input_ids, attention_mask) -> logits``.

    Also takes ``position_ids`` (packed rows: :mod:`theorylab.algorithms.deep.packing`) and
    ``logits_to_keep`` (the LM head on the last k positions, or on the positions of a 1-D index
    tensor). The KV cache is used only by the sampler (:mod:`theorylab.algorithms.deep.sampling`),
    which calls the wrapped ``model`` itself.
    """

    supports_packing = True

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0])

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        position_ids: torch.Tensor | None = None,
        logits_to_keep: int | torch.Tensor = 0,
    ) -> torch.Tensor:
        """input_ids (B, T), attention_mask (B, T) 0/1 or None, position_ids (B, T) or None ->
        logits (B, T, W) (B, k, W with ``logits_to_keep``: 0 keeps every position)."""
        kw = {"logits_to_keep": logits_to_keep} if not _keeps_all(logits_to_keep) else {}
        return self.model(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
            use_cache=False, **kw,
        ).logits  # fmt: skip


def _keeps_all(logits_to_keep: int | torch.Tensor) -> bool:
    return isinstance(logits_to_keep, int) and logits_to_keep == 0


HF_CONFIGS = {
    # name: (config class name, defaults beyond vocab_size)
    "gpt2-config": (
        "GPT2Config",
        {
            "n_layer": 2,
            "n_embd": 64,
            "n_head": 4,
            "n_positions": 64,
            "bos_token_id": None,  # GPT-2's 50256 lies outside a small vocabulary
            "eos_token_id": None,
        },
    ),
    "llama-config": (
        "LlamaConfig",
        {
            "hidden_size": 64,
            "intermediate_size": 192,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "max_position_embeddings": 64,
        },
    ),
}
_DROPOUTS = ("resid_pdrop", "embd_pdrop", "attn_pdrop", "attention_dropout", "hidden_dropout")


def _transformers():
    try:
        import transformers
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "Hugging Face models need transformers: pip install 'theorylab[llm]'"
        ) from None
    return transformers


def hf_from_config(name: str, raw: dict[str, str], vocab_size: int) -> HFCausalLM:
    transformers = _transformers()
    cls_name, defaults = HF_CONFIGS[name]
    cls = getattr(transformers, cls_name)
    blank = cls()
    kwargs: dict[str, Any] = {**defaults, "vocab_size": vocab_size}
    for key, text in raw.items():
        if not hasattr(blank, key):
            raise ModelSpecError(
                f"{name}: {cls_name} has no attribute {key!r}; e.g. {', '.join(defaults)}"
            )
        kwargs[key] = _convert(text, getattr(blank, key), key, name)
    for key in _DROPOUTS:
        if hasattr(blank, key):
            kwargs[key] = 0.0
    config = cls(**kwargs)
    model = transformers.AutoModelForCausalLM.from_config(config)
    return HFCausalLM(model)


def hf_from_path(path: str) -> HFCausalLM:
    transformers = _transformers()
    if not os.path.isdir(path):
        raise ModelSpecError(f"hf: {path!r} is not a directory holding a saved model")
    model = transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
    return HFCausalLM(model)


MODEL_SPECS = ("tiny", *HF_CONFIGS, "hf")


def make_model(
    spec: str | nn.Module,
    vocab_size: int,
    *,
    max_len: int = 64,
    seed: int = 0,
    device: str | torch.device = "cpu",
    what: str = "the task",
) -> nn.Module:
    """The model of ``spec`` (module docstring) with at least ``vocab_size`` tokens, initialised
    from ``seed`` (the global torch RNG is left as it was), on ``device``.

    ``spec`` may also be an ``nn.Module`` with ``vocab_size`` (used as it is, moved to device) or
    an unwrapped ``transformers`` causal LM (``GPT2LMHeadModel``, ``LlamaForCausalLM``,
    ``Qwen2ForCausalLM``, ...), which is wrapped in :class:`HFCausalLM`.
    """
    dev = resolve_device(device)
    if isinstance(spec, nn.Module):
        model = wrap_transformers_model(spec)
    else:
        if isinstance(spec, str) and (spec.startswith("hf:") or os.path.isdir(spec)):
            path = spec[3:] if spec.startswith("hf:") else spec
            model = hf_from_path(path)
        else:
            name, raw = parse_spec(spec)
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                if name == "tiny":
                    defaults = {"d_model": 64, "n_layer": 2, "n_head": 4, "d_ff": 256}
                    kw = {}
                    for key, text in raw.items():
                        if key not in defaults:
                            raise ModelSpecError(
                                f"tiny has no parameter {key!r}; parameters: "
                                + ", ".join(f"{k}={v}" for k, v in defaults.items())
                            )
                        kw[key] = _convert(text, defaults[key], key, "tiny")
                    model = TinyTransformer(vocab_size, max_len, **{**defaults, **kw})
                elif name in HF_CONFIGS:
                    model = hf_from_config(name, raw, vocab_size)
                else:
                    raise ModelSpecError(
                        f"unknown model {name!r}; expected one of {', '.join(MODEL_SPECS)} "
                        "(e.g. 'tiny', 'gpt2-config:n_layer=2,n_embd=64', 'hf:/path')"
                    )
    check_vocab(model, vocab_size, what)
    return model.to(dev)


def wrap_transformers_model(model: nn.Module) -> nn.Module:
    """An unwrapped ``transformers`` model -> :class:`HFCausalLM` (its forward returns an output
    object, not logits); any other module is returned as it is."""
    if isinstance(model, (HFCausalLM, TinyTransformer)):
        return model
    try:
        from transformers import PreTrainedModel
    except ModuleNotFoundError:
        return model
    if not isinstance(model, PreTrainedModel):
        return model
    head = model.get_output_embeddings()
    if head is None or not hasattr(head, "weight"):
        raise ModelSpecError(
            f"{type(model).__name__} has no language-model head; pass a *ForCausalLM model "
            "(e.g. LlamaForCausalLM, not LlamaModel)"
        )
    return HFCausalLM(model)


def check_vocab(model: nn.Module, needed: int, what: str = "the task") -> None:
    have = getattr(model, "vocab_size", None)
    if not isinstance(have, int):
        raise ModelSpecError(
            f"{type(model).__name__} has no integer vocab_size; wrap a transformers model in "
            "HFCausalLM"
        )
    if have < needed:
        raise ModelSpecError(
            f"the model's vocabulary has {have} tokens but {what} needs {needed} token ids"
        )


def n_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
