"""The deep trainer's runs in the one algorithm registry (``kind="transformer"``,
``problem="token-tree"``): ``tl.run("grpo-transformer", "tokentree:V=4,L=3", steps=150)``.

One entry per policy loss the trainer can run (``{loss}-transformer``); each factory takes the task
(supplied by the runner), the model spec and the trainer's and the loss's hyper-parameters, and
returns a :class:`TransformerRun`; the runner (``theorylab.runners.transformer``) trains it with
:func:`theorylab.algorithms.deep.trainer.train`. Importing this module does not import torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from theorylab.algorithms.registry import register

ONLINE_LOSSES = (
    "grpo", "dr-grpo", "cvar-grpo", "rloo", "ppo-clip", "astar-po", "rebel", "refuel", "tbrm",
    "exo", "pacs", "p3o", "laser", "rover",
)  # fmt: skip
PREFERENCE_LOSSES = ("dpo", "ipo", "rpo", "vpo", "xpo", "chipo")
# losses of methods that train on a fixed offline dataset, not on the model's samples: the tree
# trainer draws it from the task when given offline_data (C-RLFT: "mixed-quality", an expert and
# a sub-optimal source whose prompts carry a class token); without it they are refused by name
# rather than run as something else (C-RLFT on the model's own samples, without its class
# tokens, is reward-weighted fine-tuning)
OFFLINE_DATA_LOSSES = {
    "c-rlft": "an offline mixed-quality dataset whose prompts carry a source-class token",
}
# losses whose batch is roll-outs branched from a shared prefix (REFUEL): the tree trainer draws
# them (trainer.branched_rollouts); the prompt trainer samples whole responses and refuses them
BRANCHED_LOSSES = ("refuel",)
# the seed-catalogue rows whose loss a run trains (docs/papers.md): XPO, VPO, RPO
LOSS_PAPERS = {
    "xpo": ("001#52",), "vpo": ("002-004#E7",), "rpo": ("002-004#E8",),
    "astar-po": ("000#2", "001#57"), "rebel": ("000#16",), "refuel": ("002-004#E5",),
    "tbrm": ("000#42",),
    "exo": ("000#11",), "pacs": ("002-004#G5",),
    "p3o": ("002-004#E3",), "laser": ("002-004#F5",), "c-rlft": ("002-004#F7",),
    "rover": ("000#17", "002-004#G1"),
}  # fmt: skip


@dataclass(frozen=True)
class TransformerRun:
    """What to train: the loss spec ("dpo:beta=0.1"), the model spec and the trainer's keywords."""

    loss: str
    model: str
    task: Any
    train_params: dict[str, Any] = field(default_factory=dict)


# the scaling options of both trainers and the options of one trainer only (None: its default)
SCALE_OPTIONS = ("precision", "micro_batches", "warmup_steps", "schedule", "lora", "checkpoint",
                 "checkpoint_every", "stop_after", "tensorboard", "lr", "group_size",
                 "max_grad_norm")  # fmt: skip
TREE_OPTIONS = ("pass_k", "target_beta", "preference", "pairs_per_prompt", "value_samples",
                "offline_data")  # fmt: skip
PROMPT_OPTIONS = ("tokenizer", "reward", "prompts_per_step", "max_new_tokens", "eval_prompts",
                  "temperature", "gradient_checkpointing", "prompt_key", "answer_key")  # fmt: skip


def _factory(loss: str, family: str):
    def factory(
        task,
        model: str = "tiny",
        lr: float | None = None,
        group_size: int | None = None,
        pass_k: int | None = None,
        target_beta: float | None = None,
        preference: str | None = None,
        pairs_per_prompt: int | None = None,
        max_grad_norm: float | None = None,
        beta: float | None = None,
        tau: float | None = None,
        alpha: float | None = None,
        precision: str | None = None,
        micro_batches: int | None = None,
        warmup_steps: int | None = None,
        schedule: str | None = None,
        lora: str | None = None,
        checkpoint: str | None = None,
        checkpoint_every: int | None = None,
        stop_after: int | None = None,
        tensorboard: str | None = None,
        tokenizer: str | None = None,
        reward: str | None = None,
        prompts_per_step: int | None = None,
        max_new_tokens: int | None = None,
        eval_prompts: int | None = None,
        temperature: float | None = None,
        gradient_checkpointing: bool | None = None,
        prompt_key: str | None = None,
        answer_key: str | None = None,
        eta: float | None = None,
        rho: float | None = None,
        value_samples: int | None = None,
        offline_data: str | None = None,
    ) -> TransformerRun:
        pairs = (("beta", beta), ("tau", tau), ("alpha", alpha), ("eta", eta), ("rho", rho))
        hyper = {k: v for k, v in pairs if v is not None}
        spec = loss + (":" + ",".join(f"{k}={v}" for k, v in hyper.items()) if hyper else "")
        given = locals()
        params = {k: given[k] for k in (*SCALE_OPTIONS, *TREE_OPTIONS, *PROMPT_OPTIONS)
                  if given[k] is not None}  # fmt: skip
        return TransformerRun(spec, model, task, params)

    what = {"online": "G sampled responses per prompt", "preference": "preference pairs",
            "offline": "an offline class-tagged dataset (offline_data)"}[family]  # fmt: skip
    factory.__doc__ = (
        f"{loss} on a causal LM (tiny, gpt2-config:..., hf:PATH) over {what} on a token tree "
        "(exact metrics) or a prompt dataset (arithmetic, JSONL, Parquet, datasets folder; "
        "held-out accuracy); beta/tau/alpha: the loss's hyper-parameters; precision, "
        "micro_batches, warmup_steps, schedule, lora, checkpoint, tensorboard: the scaling "
        "options (docs/tutorials/llm-training.md)."
    )
    factory.__name__ = f"{loss.replace('-', '_')}_transformer"
    return factory


for _family, _losses in (("online", ONLINE_LOSSES), ("preference", PREFERENCE_LOSSES),
                         ("offline", tuple(OFFLINE_DATA_LOSSES))):  # fmt: skip
    for _loss in _losses:
        register(
            f"{_loss}-transformer",
            kind="transformer",
            problem="token-tree",
            papers=LOSS_PAPERS.get(_loss, ()),
        )(_factory(_loss, _family))
