"""LoRA adapters (Hu et al. 2021, arXiv 2106.09685) on a Hugging Face model through ``peft``.

``lora="r=8,alpha=16,targets=all-linear"``: ``peft.LoraConfig(r, lora_alpha, lora_dropout=0,
target_modules, task_type="CAUSAL_LM")``. ``targets``: ``all-linear`` (default: every linear layer
but the output head, as QLoRA, Dettmers et al. 2023, sec. 4, found necessary to match full
fine-tuning) or ``default`` (peft's per-architecture choice: GPT-2 ``c_attn``; Llama/Qwen2
``q_proj``, ``v_proj``). LayerNorms and the (tied) output head stay frozen, which bounds the
logit gaps a small model can reach: measured on tokentree:V=2,L=2 with exact DPO, a 1-layer
GPT-2 of width 64 (beta 1, lr 3e-3, r 8, all-linear) goes from KL(pi||pi*) 0.12 to 7.1e-5 in 60
steps, while at width 32 and beta 0.5 LoRA stalls near 0.16 (default targets) to 0.3 (all-linear)
where full fine-tuning reaches 1.3e-6 (|ln_f(h)| ~ sqrt(d) and |w_0 - w_1| ~ 0.02 sqrt(2 d) cap
the gap below what pi*_0.5 needs). The base weights are frozen, B is initialised to 0 so the
adapted model starts as the base model (the reference of a KL-regularised loss is unchanged).
``peft`` is the ``[lora]`` extra.
"""

from __future__ import annotations

from typing import Any

import torch

from theorylab.errors import TrainingConfigError
from theorylab.registry import convert_parameters, parse_spec

LORA_DEFAULTS = {"r": 8, "alpha": 16, "targets": "all-linear"}


def parse_lora(spec: str) -> dict[str, Any]:
    """``"r=8,alpha=16"`` (or ``"lora:r=8"``; ``"default"``) -> LoRA keywords, checked."""
    if spec in ("", "default", "lora"):
        return dict(LORA_DEFAULTS)
    name, raw = parse_spec(spec if ":" in spec or "=" not in spec else f"lora:{spec}")
    if name != "lora":
        raise TrainingConfigError(f"lora must look like 'r=8,alpha=16', got {spec!r}")
    try:
        out = {**LORA_DEFAULTS, **convert_parameters(name, "LoRA spec", raw, LORA_DEFAULTS)}
    except ValueError as exc:
        raise TrainingConfigError(str(exc)) from None
    if out["targets"] not in ("all-linear", "default"):
        raise TrainingConfigError(
            f"lora targets must be all-linear or default, got {out['targets']!r}"
        )
    if int(out["r"]) != out["r"] or out["r"] < 1 or not out["alpha"] > 0:
        raise TrainingConfigError(f"lora needs an integer r >= 1 and alpha > 0, got {spec!r}")
    return out


def apply_lora(model: torch.nn.Module, spec: str) -> torch.nn.Module:
    """Wrap an ``HFCausalLM``'s transformers model in ``peft`` LoRA adapters (in place)."""
    kw = parse_lora(spec)
    try:
        import peft
    except ModuleNotFoundError:
        raise TrainingConfigError("lora needs peft: pip install 'theorylab[lora]'") from None
    inner = getattr(model, "model", None)
    if inner is None or not hasattr(inner, "config"):
        raise TrainingConfigError(
            f"lora applies to Hugging Face models (gpt2-config, llama-config, hf:PATH), got "
            f"{type(model).__name__}"
        )
    targets = None if kw["targets"] == "default" else kw["targets"]
    config = peft.LoraConfig(r=int(kw["r"]), lora_alpha=kw["alpha"], lora_dropout=0.0,
                             target_modules=targets, task_type="CAUSAL_LM")  # fmt: skip
    try:
        model.model = peft.get_peft_model(inner, config)
    except ValueError as exc:
        raise TrainingConfigError(f"lora {spec!r}: {str(exc).splitlines()[0]}") from None
    return model


def zero_dropout(model: torch.nn.Module) -> None:
    """Every ``nn.Dropout`` to p = 0 (the trained policy is the sampled and evaluated one)."""
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
