"""The training state of an LM run in one object, its optimiser step, precision and checkpoints.

Both trainers (token trees, :mod:`theorylab.algorithms.deep.trainer`; prompt datasets,
:mod:`theorylab.algorithms.deep.prompt_trainer`) keep what a resumed run needs in one
:class:`LMTrainingState`: the model, the Adam optimiser, the learning-rate scheduler, the
gradient scaler (fp16 only), the step, the sampler's ``torch.Generator``, the numpy generator and
the metrics recorded so far. One training step is

1. :func:`accumulate` once per micro-batch: forward + loss + ``backward(loss * weight)`` under
   :func:`autocast` (gradients add up in ``.grad``; the weights of a step sum to 1);
2. :func:`optimizer_step`: unscale (fp16), clip the gradient norm, ``optimizer.step()``,
   ``scheduler.step()``, zero the gradients, ``step += 1``.

Under ``torch.nn.parallel.DistributedDataParallel`` the same two functions run unchanged (the
caller wraps ``state.model`` and uses ``no_sync()`` on all but the last micro-batch).

**Gradient accumulation is exact for row-mean losses.** With rows split into micro-batches
b_1..b_k of n_1..n_k rows and weights n_i / n, sum_i (n_i/n) grad mean_{b_i} = grad mean_{all}:
GRPO (seq-mean-token-mean), RLOO, DPO-family means, and the exact preference expectation (whose
pair weights are split so that each micro-batch carries its share). Losses normalised by a
batch-wide token count or the padded length (Dr. GRPO with ``max_length=0``) are not row means;
their accumulated gradient is close but not equal.

**Precision.** ``"fp32"`` (default), ``"bf16"`` (``torch.autocast`` with bfloat16: CPU, and CUDA
devices with bf16 support) and ``"fp16"`` (CUDA only, with ``torch.amp.GradScaler``). Parameters,
gradients and Adam's moments stay float32 (autocast casts the matmul inputs), so the optimiser
step is the fp32 one.

**Schedules.** :func:`make_scheduler`: linear warm-up over ``warmup_steps`` from lr/warmup to lr,
then ``"constant"``, ``"linear"`` (to 0 at ``total_steps``) or ``"cosine"`` (to 0), the schedules
of ``transformers.get_*_schedule_with_warmup`` written as one ``LambdaLR``.

**Checkpoints.** :func:`save_checkpoint` writes ``state.pt`` (model, optimiser, scheduler, scaler,
step, every RNG state, metrics, a config fingerprint) atomically; :func:`load_checkpoint` restores
them into a freshly built state. A run stopped after any step and resumed continues
bit-identically (tests/test_lm_training.py compares every parameter with ``torch.equal``): the
sampler and numpy generators carry all the randomness, CPU kernels are deterministic, and the
global torch RNG state is saved too.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from theorylab.errors import TrainingConfigError  # noqa: F401 (re-exported: trainers import it here)

PRECISIONS = ("fp32", "bf16", "fp16")
SCHEDULES = ("constant", "linear", "cosine")
CHECKPOINT_FILE = "state.pt"


# --------------------------------------------------------------------------- precision
def check_precision(precision: str, device: torch.device) -> None:
    """One-line error when ``precision`` is unknown or the device cannot autocast to it."""
    if precision not in PRECISIONS:
        raise TrainingConfigError(
            f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}"
        )
    if precision == "fp16" and device.type != "cuda":
        raise TrainingConfigError(
            f"precision 'fp16' needs a CUDA device (loss scaling), got device {str(device)!r}; "
            "use precision 'bf16' on CPU"
        )
    if precision == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise TrainingConfigError(
            f"precision 'bf16': the CUDA device {str(device)!r} has no bfloat16 support; use fp16"
        )


def autocast(device: torch.device, precision: str):
    """The autocast context of ``precision`` on ``device`` (a null context for fp32)."""
    if precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


# --------------------------------------------------------------------------- schedules
def check_schedule(schedule: str, warmup_steps: int, total_steps: int) -> None:
    if schedule not in SCHEDULES:
        raise TrainingConfigError(
            f"schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}"
        )
    if int(warmup_steps) != warmup_steps or not 0 <= warmup_steps <= total_steps:
        raise TrainingConfigError(
            f"warmup_steps must be an integer in 0..steps = 0..{total_steps}, got {warmup_steps!r}"
        )


def lr_factor(step: int, schedule: str, warmup_steps: int, total_steps: int) -> float:
    """The multiplier of the base learning rate for optimiser step ``step`` (0-based)."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if schedule == "constant":
        return 1.0
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    if schedule == "linear":
        return max(0.0, 1.0 - progress)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def make_scheduler(optimizer, schedule: str, warmup_steps: int, total_steps: int):
    """A ``LambdaLR`` for :func:`lr_factor` (its state is the step count: checkpointable)."""
    check_schedule(schedule, warmup_steps, total_steps)
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_factor(s, schedule, warmup_steps, total_steps)
    )


# --------------------------------------------------------------------------- the options
@dataclass(frozen=True)
class ScaleOptions:
    """How a run is scaled (precision, accumulation, schedule, LoRA, checkpoints): options that
    must not change what is optimised (tests/test_lm_training.py checks on token trees)."""

    precision: str = "fp32"
    micro_batches: int = 1
    warmup_steps: int = 0
    schedule: str = "constant"
    lora: str | None = None
    checkpoint_every: int = 10
    stop_after: int | None = None

    def check(self, device: torch.device, steps: int, checkpoint) -> None:
        """One-line errors, before any work."""
        check_precision(self.precision, device)
        check_schedule(self.schedule, self.warmup_steps, steps)
        for name, v in (("micro_batches", self.micro_batches),
                        ("checkpoint_every", self.checkpoint_every),
                        ("stop_after", self.stop_after)):  # fmt: skip
            if v is not None and (not isinstance(v, (int, np.integer)) or v < 1):
                raise TrainingConfigError(f"{name} must be an integer >= 1, got {v!r}")
        if self.stop_after is not None and checkpoint is None:
            raise TrainingConfigError("stop_after needs a checkpoint folder to resume from")
        if self.lora is not None:
            from theorylab.algorithms.deep.lora import parse_lora

            parse_lora(self.lora)

    def key(self) -> dict[str, Any]:
        """The options a resumed run must share (stop_after, checkpoint_every may differ)."""
        return {k: getattr(self, k) for k in ("precision", "micro_batches", "warmup_steps",
                                               "schedule", "lora")}  # fmt: skip


# --------------------------------------------------------------------------- the state
@dataclass
class LMTrainingState:
    """Everything a resumed run needs (module docstring). ``metrics``: lists by name."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: Any
    generator: torch.Generator
    rng: np.random.Generator
    device: torch.device
    precision: str = "fp32"
    scaler: Any = None
    step: int = 0
    metrics: dict[str, list] = field(default_factory=dict)
    steps_this_call: int = 0  # optimiser steps since this process built the state (not saved)

    @classmethod
    def create(
        cls, model, *, lr: float, device, precision: str = "fp32", schedule: str = "constant",
        warmup_steps: int = 0, total_steps: int = 1, sample_seed: int = 0,
        rng: np.random.Generator | None = None,
    ) -> LMTrainingState:  # fmt: skip
        """Adam on the model's trainable parameters, the schedule, generators from the seeds."""
        device = torch.device(device)
        check_precision(precision, device)
        params = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.Adam(params, lr=lr)
        scheduler = make_scheduler(optimizer, schedule, warmup_steps, total_steps)
        scaler = torch.amp.GradScaler("cuda") if precision == "fp16" else None
        return cls(
            model=model, optimizer=optimizer, scheduler=scheduler,
            generator=torch.Generator(device=device).manual_seed(sample_seed),
            rng=rng if rng is not None else np.random.default_rng(sample_seed),
            device=device, precision=precision, scaler=scaler,
        )  # fmt: skip

    @property
    def lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])


def accumulate(
    state: LMTrainingState, loss_of_batch, batch, weight: float = 1.0, model=None
) -> float:
    """Forward + loss + backward of one micro-batch: ``loss_of_batch(model, batch)`` under
    autocast, ``backward(loss * weight)`` (gradients add to ``.grad``). Returns the loss.
    ``model``: the module for the gradient forward when it is not ``state.model`` itself (the
    DDP wrapper of it, :mod:`theorylab.algorithms.deep.distributed`)."""
    with autocast(state.device, state.precision):
        loss = loss_of_batch(state.model if model is None else model, batch)
    scaled = loss.float() * weight
    if state.scaler is not None:
        scaled = state.scaler.scale(scaled)
    scaled.backward()
    return float(loss.detach())


def optimizer_step(state: LMTrainingState, max_grad_norm: float = 1.0) -> float:
    """Clip (after unscaling, fp16), step the optimiser and the schedule, zero the gradients,
    ``state.step += 1``. Returns the gradient norm before clipping (NaN when not clipped)."""
    params = [p for g in state.optimizer.param_groups for p in g["params"]]
    if state.scaler is not None:
        state.scaler.unscale_(state.optimizer)
    norm = float("nan")
    if max_grad_norm > 0:
        norm = float(torch.nn.utils.clip_grad_norm_(params, max_grad_norm))
    if state.scaler is not None:
        state.scaler.step(state.optimizer)
        state.scaler.update()
    else:
        state.optimizer.step()
    state.scheduler.step()
    state.optimizer.zero_grad(set_to_none=True)
    state.step += 1
    state.steps_this_call += 1
    return norm


# --------------------------------------------------------------------------- checkpoints
def _trainable_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def save_checkpoint(state: LMTrainingState, folder: str | os.PathLike, fingerprint: dict) -> Path:
    """Write the state to ``folder/state.pt`` atomically (a kill mid-write keeps the old one)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    payload = {
        "fingerprint": fingerprint,
        "step": state.step,
        "model": _trainable_state(state.model),
        "optimizer": state.optimizer.state_dict(),
        "scheduler": state.scheduler.state_dict(),
        "scaler": state.scaler.state_dict() if state.scaler is not None else None,
        "generator": state.generator.get_state(),
        "numpy": state.rng.bit_generator.state,
        "torch_cpu": torch.get_rng_state(),
        "torch_cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        "python": random.getstate(),
        "metrics": state.metrics,
    }
    target = folder / CHECKPOINT_FILE
    tmp = folder / f".{CHECKPOINT_FILE}.{os.getpid()}.tmp"
    torch.save(payload, tmp)
    os.replace(tmp, target)
    return target


def has_checkpoint(folder: str | os.PathLike | None) -> bool:
    return folder is not None and (Path(folder) / CHECKPOINT_FILE).is_file()


def load_checkpoint(state: LMTrainingState, folder: str | os.PathLike, fingerprint: dict) -> None:
    """Restore ``folder/state.pt`` into ``state``; a checkpoint of another configuration is
    refused in one line naming the first key that differs."""
    payload = torch.load(Path(folder) / CHECKPOINT_FILE, map_location=state.device,
                         weights_only=False)  # fmt: skip
    saved = payload["fingerprint"]
    for key in sorted(set(saved) | set(fingerprint)):
        if saved.get(key) != fingerprint.get(key):
            raise TrainingConfigError(
                f"checkpoint {str(folder)!r} was written by a run with {key}={saved.get(key)!r}, "
                f"this run has {key}={fingerprint.get(key)!r}; use another --checkpoint folder"
            )
    state.model.load_state_dict(payload["model"])
    state.optimizer.load_state_dict(payload["optimizer"])
    state.scheduler.load_state_dict(payload["scheduler"])
    if state.scaler is not None and payload["scaler"] is not None:
        state.scaler.load_state_dict(payload["scaler"])
    state.generator.set_state(payload["generator"].to("cpu"))
    state.rng.bit_generator.state = payload["numpy"]
    torch.set_rng_state(payload["torch_cpu"].to("cpu"))
    if payload["torch_cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(payload["torch_cuda"])
    random.setstate(payload["python"])
    state.step = int(payload["step"])
    state.metrics = payload["metrics"]


def resume_or_start(state: LMTrainingState, folder, fingerprint: dict, names) -> bool:
    """Restore ``folder``'s checkpoint into ``state`` when it holds one (True), else start empty
    metric lists ``names`` (False)."""
    if has_checkpoint(folder):
        load_checkpoint(state, folder, fingerprint)
        return True
    state.metrics = {k: [] for k in names}
    return False


def steps_of_this_call(state: LMTrainingState, total: int, stop_after: int | None):
    """The training loop: yields while ``state.step < total`` and, with ``stop_after``, until
    that many steps were taken in this call (the body must advance ``state.step``)."""
    while state.step < total and (stop_after is None or state.steps_this_call < stop_after):
        yield state.step


def checkpoint_after_step(state: LMTrainingState, folder, fingerprint: dict, every: int,
                          total: int, stop_after: int | None) -> None:  # fmt: skip
    """Save every ``every`` steps, at the last step, and where ``stop_after`` ends this call."""
    if folder is None:
        return
    stopping = stop_after is not None and state.steps_this_call >= stop_after
    if state.step % every == 0 or state.step == total or stopping:
        save_checkpoint(state, folder, fingerprint)


def per_seed_folder(folder: str | None, index: int, n_seeds: int) -> str | None:
    """``folder`` for a one-seed run, ``folder/seed-{index}`` for each seed of several."""
    if folder is None:
        return None
    return folder if n_seeds == 1 else f"{folder}/seed-{index}"


# --------------------------------------------------------------------------- TensorBoard
def check_tensorboard() -> None:
    """One line when ``torch.utils.tensorboard`` cannot be used (the tensorboard package)."""
    try:
        importlib.import_module("torch.utils.tensorboard")
    except ModuleNotFoundError:
        raise TrainingConfigError(
            "tensorboard logging needs the tensorboard package: "
            "pip install 'theorylab[tensorboard]'"
        ) from None


def open_writer(folder: str | None, purge_step: int | None):
    """A ``SummaryWriter`` on ``folder`` (None: no logging); a resumed run passes its step as
    ``purge_step`` so that events logged after the checkpoint by the killed run are dropped."""
    if folder is None:
        return None
    from torch.utils.tensorboard import SummaryWriter

    return SummaryWriter(folder, purge_step=purge_step)
