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
    "grpo", "dr-grpo", "cvar-grpo", "rloo", "ppo-clip", "astar-po", "rebel", "tbrm", "exo",
)  # fmt: skip
PREFERENCE_LOSSES = ("dpo", "ipo", "rpo", "vpo", "xpo", "chipo")
# the seed-catalogue rows whose loss a run trains (docs/papers.md): XPO, VPO, RPO
LOSS_PAPERS = {
    "xpo": ("001#52",), "vpo": ("002-004#E7",), "rpo": ("002-004#E8",),
    "astar-po": ("000#2", "001#57"), "rebel": ("000#16",), "tbrm": ("000#42",),
    "exo": ("000#11",),
}  # fmt: skip


@dataclass(frozen=True)
class TransformerRun:
    """What to train: the loss spec ("dpo:beta=0.1"), the model spec and the trainer's keywords."""

    loss: str
    model: str
    task: Any
    train_params: dict[str, Any] = field(default_factory=dict)


def _factory(loss: str, family: str):
    def factory(
        task,
        model: str = "tiny",
        lr: float = 1e-3,
        group_size: int = 8,
        pass_k: int = 4,
        target_beta: float | None = None,
        preference: str = "exact",
        pairs_per_prompt: int = 16,
        max_grad_norm: float = 1.0,
        beta: float | None = None,
        tau: float | None = None,
        alpha: float | None = None,
        eta: float | None = None,
        value_samples: int = 16,
    ) -> TransformerRun:
        pairs = (("beta", beta), ("tau", tau), ("alpha", alpha), ("eta", eta))
        hyper = {k: v for k, v in pairs if v is not None}
        spec = loss + (":" + ",".join(f"{k}={v}" for k, v in hyper.items()) if hyper else "")
        params = dict(lr=lr, group_size=group_size, pass_k=pass_k, target_beta=target_beta,
                      preference=preference, pairs_per_prompt=pairs_per_prompt,
                      max_grad_norm=max_grad_norm, value_samples=value_samples)  # fmt: skip
        return TransformerRun(spec, model, task, params)

    what = "G sampled responses per prompt" if family == "online" else "preference pairs"
    factory.__doc__ = (
        f"{loss} on a causal LM (tiny, gpt2-config:..., hf:PATH) over {what}; exact metrics; "
        "beta/tau/alpha/eta: the loss's hyper-parameters; value_samples: A*-PO's stage-1 "
        "reference samples per prompt."
    )
    factory.__name__ = f"{loss.replace('-', '_')}_transformer"
    return factory


for _loss in ONLINE_LOSSES:
    register(
        f"{_loss}-transformer",
        kind="transformer",
        problem="token-tree",
        papers=LOSS_PAPERS.get(_loss, ()),
    )(_factory(_loss, "online"))
for _loss in PREFERENCE_LOSSES:
    register(
        f"{_loss}-transformer",
        kind="transformer",
        problem="token-tree",
        papers=LOSS_PAPERS.get(_loss, ()),
    )(_factory(_loss, "preference"))
