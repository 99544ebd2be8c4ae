"""The runner of ``kind="transformer"``: train a causal LM on a token-tree task with a registered
loss and record exact metrics (:func:`theorylab.algorithms.deep.trainer.train`).

``tl.run("dpo-transformer", "tokentree:V=4,L=3", steps=125, beta=0.1, seeds=3)`` returns a
:class:`~theorylab.results.TrainingResult`.
"""

from __future__ import annotations

from typing import Any

from theorylab.results import TrainingResult
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
) -> TrainingResult:
    """Train ``entry``'s loss on ``problem`` (a TokenTreeTask or a spec) for ``steps`` steps."""
    from theorylab.algorithms.deep import load_losses
    from theorylab.algorithms.registry import ALGORITHMS

    load_losses()  # a clear error without torch
    from theorylab.algorithms.deep.trainer import train

    task = resolve_mdp(problem)
    cfg = ALGORITHMS.make(entry.name, task=task, **params)
    res = train(
        cfg.model,
        task,
        cfg.loss,
        steps=steps,
        eval_every=eval_every,
        seeds=seeds,
        seed=seed,
        device=device,
        progress=progress,
        **cfg.train_params,
    )
    res.config["algorithm"] = entry.name
    return res
