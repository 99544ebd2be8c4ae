"""The runner of ``kind="transformer"``: train a causal LM on a token-tree task with a registered
loss and record exact metrics (:func:`theorylab.algorithms.deep.trainer.train`).

``tl.run("dpo-transformer", "tokentree:V=4,L=3", steps=125, beta=0.1, seeds=3)`` returns a
:class:`~theorylab.results.TrainingResult`; on a prompt dataset (``"arithmetic"``, a JSONL or
Parquet file, a ``datasets`` folder: :func:`~theorylab.algorithms.deep.prompt_data.is_prompt_spec`)
the prompt trainer (:mod:`theorylab.algorithms.deep.prompt_trainer`) runs and returns a
:class:`~theorylab.results.PromptTrainingResult`.
"""

from __future__ import annotations

from typing import Any

from theorylab.results import PromptTrainingResult, TrainingResult
from theorylab.runners.problems import resolve_mdp


def run(
    entry,
    problem,
    *,
    seeds: list[int],
    seed: int,
    progress: bool,
    params: dict[str, Any],
    steps: int,
    eval_every: int = 10,
    device: str = "cpu",
) -> TrainingResult | PromptTrainingResult:
    """Train ``entry``'s loss on ``problem`` (a token-tree task or spec, or a prompt dataset)
    for ``steps`` steps."""
    from theorylab.algorithms.deep import load_losses
    from theorylab.algorithms.deep.prompt_data import DEFAULT_PROMPT_MODEL, is_prompt_spec
    from theorylab.algorithms.deep.transformer_registrations import PROMPT_OPTIONS, TREE_OPTIONS
    from theorylab.algorithms.registry import ALGORITHMS

    load_losses()  # a clear error without torch
    prompts = is_prompt_spec(problem)
    task = problem if prompts else resolve_mdp(problem)
    cfg = ALGORITHMS.make(entry.name, task=task, **params)
    other = TREE_OPTIONS if prompts else PROMPT_OPTIONS
    wrong = [k for k in other if k in cfg.train_params]
    if wrong:
        where = "token-tree tasks" if prompts else "prompt datasets"
        raise ValueError(f"{wrong[0]} applies to {where}, not to {problem!r}")
    common = dict(steps=steps, eval_every=eval_every, seeds=seeds, seed=seed, device=device,
                  progress=progress, **cfg.train_params)  # fmt: skip
    if prompts:
        from theorylab.algorithms.deep.prompt_trainer import train_prompts

        model = DEFAULT_PROMPT_MODEL if cfg.model == "tiny" else cfg.model
        res = train_prompts(model, task, cfg.loss, **common)
    else:
        from theorylab.algorithms.deep.trainer import train

        res = train(cfg.model, task, cfg.loss, **common)
    res.config["algorithm"] = entry.name
    return res
