"""The runner of ``kind="deep"``: train a tabular twin on a token-tree task, exact metrics per step.

``tl.run("grpo-twin", "tokentree:V=4,L=3", steps=1500)`` builds the twin's config from the
registry, trains the logit table with :func:`theorylab.algorithms.deep.twins.train_twin` and
returns a :class:`~theorylab.results.DeepResult`. Exact mode (the default) is deterministic, so it
runs once whatever ``seeds`` says (B = 1, recorded in the config); sampled mode runs once per seed.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.mdps.eos_tree import EosTokenTree
from theorylab.mdps.token_tree import TokenTreeTask
from theorylab.results import DeepResult
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
    mode: str = "exact",
    batch: int = 64,
    record_every: int = 0,
) -> DeepResult:
    """Train the twin ``entry`` on ``problem`` (a TokenTreeTask or a spec such as
    ``"tokentree:V=4,L=3"``, or ``"tokentree-eos:..."`` whose responses have 1..L tokens) for
    ``steps`` gradient steps (Q#, RTO, REFUEL, EXO: ``algorithms/deep/regression_runs.py``)."""
    from theorylab.algorithms.deep import load_losses
    from theorylab.algorithms.registry import ALGORITHMS

    load_losses()  # a clear error without torch
    from theorylab.algorithms.deep.regression_runs import RUNS, run_twin
    from theorylab.algorithms.deep.twins import train_twin

    t0 = time.perf_counter()
    task = resolve_mdp(problem)
    if not isinstance(task, (TokenTreeTask, EosTokenTree)):
        raise ValueError(
            f"{entry.name} runs on a token-tree task (e.g. tokentree:V=4,L=3), got "
            f"{type(task).__name__} {getattr(task, 'name', problem)!r}"
        )
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if mode == "sampled" and (
        isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1
    ):
        raise ValueError(f"batch (examples per prompt, sampled mode) must be >= 1, got {batch!r}")
    cfg = ALGORITHMS.make(entry.name, task=task, **params)
    run_seeds = list(seeds) if mode == "sampled" else list(seeds[:1])
    train = run_twin if cfg.twin in RUNS else train_twin
    traces = [
        train(
            task,
            cfg.twin,
            steps=int(steps),
            mode=mode,
            batch=batch,
            seed=seed + s,
            record_every=record_every,
            **cfg.params,
        )  # fmt: skip
        for s in run_seeds
    ]

    def stack(name):
        return np.stack([getattr(tr, name) for tr in traces])

    first = traces[0]
    return DeepResult(
        steps=first.steps,
        tv_predicted=stack("tv_predicted"),
        kl_predicted=stack("kl_predicted"),
        kl_optimum=stack("kl_optimum"),
        expected_reward=stack("expected_reward"),
        accuracy=stack("accuracy"),
        pass_at_k=stack("pass_at_k"),
        final_seq_logp=stack("final_seq_logp"),
        predicted_seq_logp=first.predicted_seq_logp,
        optimum_seq_logp=first.optimum_seq_logp,
        wall_seconds=time.perf_counter() - t0,
        config={
            "task": task.name,
            "twin": cfg.twin,
            "mode": mode,
            "steps": int(steps),
            "batch": batch if mode == "sampled" else None,
            "run_seeds": run_seeds,
            "twin_params": first.params,
            "k": first.params["k"],
        },
    )
