"""Data-parallel training for the token-tree trainer: ``torch.distributed`` DDP under ``torchrun``.

``theorylab train grpo tokentree:V=4,L=3 --nproc 2`` (or, equivalently,
``torchrun --nproc-per-node 2 -m theorylab.cli train grpo tokentree:V=4,L=3``) runs
:func:`theorylab.algorithms.deep.trainer.train` in 2 processes. Each process reads its place from
the environment that ``torchrun`` (and ``accelerate launch``) set (``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``), joins the process group (gloo on CPU, nccl on
CUDA, one GPU per local rank), wraps the policy in
``torch.nn.parallel.DistributedDataParallel`` and takes its shard of every batch:

* **What is split.** The trainer's flags give the *global* batch of one optimiser step, as in a
  1-process run: online losses P prompts x G responses (P * G rows), sampled preferences P x
  ``pairs_per_prompt`` pairs. Rank r takes the r-th of W contiguous equal shards of rows; an
  online shard holds whole groups (the losses normalise advantages within a group), so P must be
  divisible by W, and a preference batch P * pairs_per_prompt. Every loss the trainer runs is a
  mean over its rows (a mean over responses, or over pairs and their calibration samples), so the
  mean over the ranks of the shards' losses, which DDP's gradient all-reduce (an average) takes,
  is the global batch's loss: a W-process run *is* the 1-process run of the same global batch, up
  to the order of float additions. The exact preference mode (``preference="exact"``) has no
  batch: its loss is one forward pass over the whole prefix table, so it runs on one process.
* **Randomness.** Every rank draws the *whole* batch from the run's seed (the same streams as the
  1-process run: samples, rewards, pairs) and keeps its shard; no stream is seeded per rank. The
  draws cost forward passes without gradient on the replicated model; the gradient forward and
  backward, the step's cost, are split. Seeding per rank instead would make the samples, and so
  the result, depend on the number of processes.
* **What each rank reports.** The model is replicated (DDP broadcasts rank 0's weights at the
  start and averages the gradients, so every rank takes the same Adam step): the exact metrics are
  identical on every rank. The per-step loss is all-reduced (mean over ranks = the global batch's
  loss); only rank 0 prints progress and writes tables, figures and files.

The prompt-dataset trainer (:mod:`theorylab.algorithms.deep.prompt_trainer`, ``theorylab train
grpo arithmetic --nproc 2``) runs under DDP the same way: every rank draws the whole step and
keeps its shard of whole prompt groups of each micro-batch (its module docstring has the measured
gap).

``parallel="fsdp"`` shards the weights instead (FSDP2's ``fully_shard``, one unit per transformer
block and the root): each rank holds 1/W of every parameter, forwards all-gather them and the
backward reduce-scatters the averaged gradients, the same step as DDP. It pays off only for models
that do not fit one device; on token trees it is there to show that sharding the weights does not
change what is optimised.

Measured (``tests/test_deep_distributed.py``: 2 gloo processes against 1 process on the same
global batch, tiny model on tokentree:V=3,L=2, 12 steps): the largest gap over every per-step
loss and exact metric (KL(pi || pi*), KL(pi || pi_ref), accuracy) is 4.9e-8 for GRPO under DDP
and FSDP, 1.2e-7 for sampled-pair DPO; without the gradient all-reduce (the control) the gap is
above 1e-3. ``accelerate launch --multi_gpu --num_processes 2`` on CPU: 4.9e-8. CUDA/nccl: not
run (no GPU was lent).
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import socket
import subprocess
import sys

import torch


@dataclasses.dataclass(frozen=True)
class Place:
    """This process's place in the run: ``rank`` of ``world`` processes, on ``device``."""

    rank: int = 0
    world: int = 1
    device: torch.device = torch.device("cpu")
    strategy: str = "ddp"

    @property
    def main(self) -> bool:
        """Rank 0: the process that prints and writes."""
        return self.rank == 0

    def wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        """The model for gradient forwards when world > 1: DDP over the process group (its
        backward averages the gradients over the ranks), or with strategy "fsdp" ``model`` itself,
        sharded in place by FSDP2's ``fully_shard`` (each rank holds 1/W of every parameter;
        forwards all-gather them, backward reduce-scatters the averaged gradients), its
        transformer blocks (``blocks``, or Hugging Face ``layers``/``h`` lists) one unit each;
        ``model`` itself on one process."""
        if self.world == 1:
            return model
        if self.strategy == "fsdp":
            from torch.distributed.fsdp import fully_shard

            for blocks in _block_lists(model):
                for block in blocks:
                    fully_shard(block)
            return fully_shard(model)
        from torch.nn.parallel import DistributedDataParallel

        ids = [self.device.index] if self.device.type == "cuda" else None
        return DistributedDataParallel(model, device_ids=ids)

    def rows(self, n: int) -> slice:
        """This rank's contiguous shard of n rows (n divisible by world, :func:`check_batch`)."""
        size = n // self.world
        return slice(self.rank * size, (self.rank + 1) * size)

    def mean(self, value: float) -> float:
        """The mean of ``value`` over the ranks (all-reduce)."""
        if self.world == 1:
            return value
        t = torch.tensor([value], dtype=torch.float64, device=self.device)
        torch.distributed.all_reduce(t)
        return float(t) / self.world


ONE = Place()  # a 1-process run on the CPU
STRATEGIES = ("ddp", "fsdp")


def _block_lists(model: torch.nn.Module) -> list[torch.nn.ModuleList]:
    """The model's lists of transformer blocks: the tiny model's ``blocks``, GPT-2's ``h``,
    Llama's ``layers`` (FSDP's units)."""
    names = ("blocks", "h", "layers")
    return [
        m
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.ModuleList) and name.split(".")[-1] in names
    ]


def world_size() -> int:
    """``WORLD_SIZE`` as ``torchrun`` / ``accelerate launch`` set it (1 when unset)."""
    text = os.environ.get("WORLD_SIZE", "1")
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"WORLD_SIZE must be an integer, got {text!r}") from None


def join(device: torch.device, strategy: str = "ddp") -> Place:
    """Join the process group the environment describes (gloo on CPU, nccl on CUDA with one GPU
    per ``LOCAL_RANK``) and return this process's :class:`Place`; world 1 without one. A group
    the caller initialised already (e.g. ``accelerate``) is used as it is."""
    if strategy not in STRATEGIES:
        raise ValueError(f"parallel must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    world = world_size()
    if world == 1:
        return Place(device=device, strategy=strategy)
    import torch.distributed as dist

    if device.type == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
        atexit.register(dist.destroy_process_group)
    return Place(dist.get_rank(), dist.get_world_size(), device, strategy)


def check_batch(
    world: int, family: str, preference: str, n_prompts: int, pairs_per_prompt: int
) -> None:
    """One-line errors, before any work, for a batch the ``world`` processes cannot split
    (module docstring)."""
    if world == 1:
        return
    if family == "offline":
        raise ValueError(f"--nproc {world}: an offline-data loss (c-rlft) trains on one process")
    if family == "online":
        if n_prompts % world:
            raise ValueError(
                f"--nproc {world}: the online batch's {n_prompts} prompt groups (the task's "
                f"prompts, each with its G responses) do not split into {world} equal shards of "
                "whole groups; use a number of processes that divides the number of prompts"
            )
    elif preference == "exact":
        raise ValueError(
            f"--nproc {world}: the exact preference loss is one forward pass over the whole "
            "prefix table, not a batch to split; use --preference sampled (or one process)"
        )
    elif (n_prompts * pairs_per_prompt) % world:
        raise ValueError(
            f"--nproc {world}: the batch of {n_prompts} prompts x {pairs_per_prompt} pairs "
            f"(--pairs-per-prompt) = {n_prompts * pairs_per_prompt} pairs is not divisible by "
            f"{world} processes"
        )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (for ``--master-port``)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def without_flag(argv: list[str], flag: str) -> list[str]:
    """``argv`` without ``flag VALUE`` and ``flag=VALUE``."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == flag:
            skip = True
        elif not a.startswith(flag + "="):
            out.append(a)
    return out


def launch(argv: list[str], nproc: int) -> int:
    """Run ``theorylab <argv>`` in ``nproc`` processes with ``torchrun`` (single node, a free port
    on 127.0.0.1); the processes' output passes through. A failed run prints the processes'
    one-line ``theorylab ...: error:`` once (not torchrun's traceback). Returns the exit code."""
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node",
        str(nproc), "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
        "-m", "theorylab.cli", *argv,
    ]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run(cmd, stderr=subprocess.PIPE, text=True, env=env)
    lines = proc.stderr.splitlines()
    if proc.returncode == 0:
        noise = ("*****", "Setting OMP_NUM_THREADS")  # torchrun's thread-count banner
        kept = [ln for ln in lines if not ln.startswith(noise)]
        if kept:
            print("\n".join(kept), file=sys.stderr)
        return 0
    errors = list(dict.fromkeys(ln for ln in lines if ": error: " in ln and "theorylab" in ln))
    print("\n".join(errors or lines[-20:]), file=sys.stderr)
    return 2 if errors else proc.returncode
