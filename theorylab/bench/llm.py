"""``theorylab bench llm``: theorylab's step functions (``algorithms/deep/steps.py``) against
TRL's ``DPOTrainer`` and ``GRPOTrainer`` on the same Hugging Face model, batch, dtype and sequence
lengths:

(a) one DPO step; (b) one GRPO step given sampled completions; (c) one full GRPO step with
generation. Rows (a) and (b) run theorylab in three batch layouts
(``algorithms/deep/packing.py``): ``padded`` (the right-padded batch as TRL's collators build it),
``buckets`` (rows sorted by length and cut into 4 variable-length chunks) and ``packed`` (one
sequence with restarting position ids); TRL runs its padded batch (its DPO ``padding_free`` is
disabled in TRL 1.16 and needs flash-attention). Row (c) runs theorylab padded and in buckets.

Needs TRL (the ``[bench]`` extra: ``pip install 'theorylab[bench]'``) for the comparison with TRL.
Without TRL (but with transformers, the ``[llm]`` extra) rows (a) and (b) run against a
**plain-PyTorch** peer instead, written out in this module (:func:`plain_dpo_loss`,
:func:`plain_grpo_loss`: one padded forward, ``log_softmax`` and ``gather``, the loss of the
paper's equation; no theorylab code): the same 1e-5 loss-and-gradient check, then the same
alternating timing, with ``peer = "plain PyTorch"`` in every row; row (c) (TRL's generation loop)
is skipped, and the command says which rows ran and that TRL is missing. Without transformers
nothing can run and the table says so.
The model is a random-init GPT-2 from a config (no network) and the text is random tokens of a
word-level tokenizer built here, so both trainers see identical token ids. Completion lengths vary
(uniform between a quarter of the maximum and the maximum), so that padding is part of the batch.

Before timing, both sides compute the loss and its gradient on the same batch at the same weights
(a policy perturbed away from the reference, so that neither is trivial) and must agree to 1e-5,
every theorylab layout against TRL. A bf16 run (the default on CUDA, size ``gpu``) first runs that
check at float32 on the same device, batches and seeds, then times at bf16 with a check that only
catches O(1) errors: bf16 rounds differently shaped products differently (:data:`TOLERANCE`).
DPO: TRL ``loss_type="sigmoid"``, beta 0.1, against theorylab's ``dpo``. GRPO: TRL
``loss_type="grpo"`` (per-sequence token mean, std-normalised group advantages, k3 KL with beta
0.04, clip 0.2) against theorylab's ``grpo`` (Shao et al. 2024, eq. (3)). TRL 1.16 multiplies the
KL term by the importance ratio by default (``use_bias_correction_kl=True``, after DeepSeek-V3.2):
the same loss value, a different gradient (the check measured a gap of 6.5e-4 on the quick batch);
the bench sets it to False so that both sides run eq. (3). Row (c) checks on TRL's own sampled
completions: TRL's ``_generate_and_score_completions`` samples and scores a batch, and theorylab's
loss on those completions (with its own rewards and advantages) must equal TRL's.

Rows (a) and (b) also time, on the same batch, **plain PyTorch** (:func:`plain_dpo_loss`,
:func:`plain_grpo_loss`, AdamW, clipping: about ten lines, no theorylab code) and **TRL with its
LM head unfused** (:class:`_UnfusedLogProb` in place of TRL's fused ``ChunkedLogProbFunction``,
whose CPU path folds (token x vocabulary) tiles in torch ops): the difference between the two TRL
rows is what TRL's CPU fallback of the fused head costs it. Both are checked against TRL's loss
and gradient to 1e-5 first.

Then every contender of a loss (the theorylab layouts, plain PyTorch, TRL, TRL unfused) is timed in
the same interleaved rounds (:func:`_time_alternately`): after ``warmup`` steps each, ``rounds``
rounds, in each of which every contender runs one timed sample of ``k`` consecutive steps, in an
order shuffled per round (seeded), so that whatever a neighbour does to a shared machine during a
round hits all of them and no trainer always follows another. ``k`` is set from the fastest
warm-up step so that every sample lasts at least ``MIN_SAMPLE_S`` = 0.1 s of CPU (a 30 ms step
alone is at the mercy of one scheduler tick). Each sample is read on three clocks:
``time.thread_time`` (CPU time of the calling thread, the ratios' clock on CPU; autograd's CPU
backward runs in this thread), ``time.process_time`` and ``time.perf_counter`` (wall); on a CUDA
device the ratios use wall time after ``torch.cuda.synchronize``. On CPU the bench runs with one
torch thread (OpenMP's idle workers spin, and spinning is CPU time that grows with the machine's
load) and, by default, with freed memory kept in the C heap (``allocator="heap"``,
:mod:`theorylab.bench.allocator`: under glibc's defaults a third of TRL's CPU step was page
faults, in an amount that moved between runs of one process); every sample also counts its minor
page faults. Python's cyclic garbage collector is off inside the timed rounds and runs between
them (a collection lands in whichever step crosses its allocation count, and costs more the more
the process holds). A ratio is the **median over rounds of the paired ratio** (TRL's or plain
PyTorch's sample over this row's sample of the same round, :func:`paired_ratio`), not a ratio of
medians: a slow stretch of the machine inflates both sides of a pair. Each row: the ratios (and
their quartiles and their value on every clock), the median and spread (min, max) of ms/step on
the ratios' clock and the wall-clock median (absolute times: load-dependent), tokens/s = real
(non-padding) tokens in the batch / median seconds, the clock, rounds and ``k``, the minor page
faults per step, the allocator setting, and the 1-minute load average when the timing began and
ended. ``bench_llm(runs=N)`` (``theorylab bench llm --runs N``) runs the whole
bench N times in one sitting, and :func:`reproducibility` reports each row's ratios across the
runs and their spread (max / min - 1), flagging rows over 10%.

What one step is, on both sides:

* DPO: policy forward on [chosen; rejected], reference forward (no grad), loss, backward, gradient
  norm clipped at 1, AdamW step (TRL: ``trainer.training_step``, the accelerator's clipping and
  ``trainer.optimizer.step``);
* GRPO given completions: reference per-token log-probs (no grad), group advantages, policy
  per-token log-probs, loss, backward, clipping, AdamW step (TRL:
  ``_get_per_token_logps_and_entropies`` on the reference model, its ``compute_loss``,
  ``accelerator.backward``, clipping, the optimiser step);
* GRPO with generation: G = 4 completions of each prompt sampled from the policy at temperature 1
  (theorylab: ``algorithms/deep/sampling.py``, the prompt encoded once and the KV cache repeated G
  times, one batched decode loop; TRL: ``_generate_and_score_completions``, which calls
  ``model.generate`` with the KV cache on the G-times repeated prompts, then scores the reference
  log-probs and rewards), the reward (the fraction of even token ids), then the step above.
  Sampled lengths differ between the two sides (each draws its own completions); with a
  vocabulary of thousands EOS is rare, so both nearly always sample the full length.
"""

from __future__ import annotations

import copy
import gc
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from typing import Any

from theorylab.bench.allocator import check_allocator, minor_faults, set_allocator

CONFIGS = {
    # vocabulary, layers, width, heads, prompt length, completion length, pairs / completions
    "quick": dict(vocab=2048, n_layer=2, n_embd=64, n_head=4, prompt=16, completion=32, batch=4),
    "default": dict(vocab=8192, n_layer=2, n_embd=128, n_head=4, prompt=32, completion=64, batch=8),
    # the size on a CUDA device (``bench_llm(device="cuda")`` without ``quick``): GPT-2 small's
    # shape, 12 layers x 768, with a 32768-word vocabulary: 110.4M parameters (tied head), at bf16
    "gpu": dict(vocab=32768, n_layer=12, n_embd=768, n_head=12, prompt=64, completion=192, batch=8),
}
GROUP_SIZE = 4


def _tokenizer(vocab: int):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = {"<pad>": 0, "<eos>": 1, **{f"t{i}": i for i in range(2, vocab)}}
    tk = Tokenizer(models.WordLevel(words, unk_token="<pad>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>")


def _model(cfg: dict, device: str, dtype):
    import torch
    from transformers import AutoModelForCausalLM, GPT2Config

    config = GPT2Config(
        vocab_size=cfg["vocab"], n_layer=cfg["n_layer"], n_embd=cfg["n_embd"],
        n_head=cfg["n_head"], n_positions=cfg["prompt"] + cfg["completion"] + 8,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=1, eos_token_id=1,
        pad_token_id=0,
    )  # fmt: skip
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return AutoModelForCausalLM.from_config(config).to(device=device, dtype=dtype)


def _perturbed(model, scale: float = 0.05):
    """A copy of ``model`` with seeded Gaussian noise on every weight: the policy must differ from
    the reference, or both losses are trivially log 2 (DPO) and 0 (GRPO) at the first step."""
    import torch

    out = copy.deepcopy(model)
    g = torch.Generator().manual_seed(123)
    with torch.no_grad():
        for p in out.parameters():
            noise = torch.randn(p.shape, generator=g).to(device=p.device, dtype=p.dtype)
            p.add_(scale * noise)
    return out


def _gradient_gap(ours_loss, ours_module, trl_loss, trl_module) -> tuple[float, float]:
    """Backpropagate both losses and return (max |grad_ours - grad_trl| over every weight of the
    two Hugging Face modules, ||grad_ours - grad_trl||_2 / ||grad_trl||_2 over all weights
    together); the gradients are zeroed again."""
    ours_loss.backward()
    trl_loss.backward()
    gap, diff_sq, ref_sq = 0.0, 0.0, 0.0
    for a, b in zip(ours_module.parameters(), trl_module.parameters(), strict=True):
        d = a.grad.float() - b.grad.float()
        gap = max(gap, float(d.abs().max()))
        diff_sq += float(d.square().sum())
        ref_sq += float(b.grad.float().square().sum())
    ours_module.zero_grad(set_to_none=True)
    trl_module.zero_grad(set_to_none=True)
    return gap, math.sqrt(diff_sq / ref_sq) if ref_sq > 0 else math.sqrt(diff_sq)


# What "the same loss and gradient" means, by the weights' dtype.
# float32: 1e-5 absolute on the loss and on every gradient entry (measured gaps <= 1.6e-7 on CPU).
# bfloat16 (8 significant bits, eps 2**-8 = 3.9e-3): the layouts multiply different matrix shapes
# and the peers reduce in other orders, so each side's bf16 logits round differently. Measured on
# this CPU with the quick config (theorylab's three layouts, plain PyTorch and unfused TRL against
# TRL): loss gaps <= 1.6e-4 (<= 3.1e-4 relative), relative gradient gaps <= 4.9e-3; on an H200 with
# the 110M ``gpu`` config, GRPO padded against TRL: 2.0e-3 relative loss gap and 2.75e-2 relative
# gradient gap (2026-11-28). So a bf16 run's check cannot be strict: ``bench_llm`` first checks
# every contender at float32 on the same device (the strict 1e-5), and the bf16 check only guards
# against O(1) errors (a sign, a missing term, a mask off by one move the loss and the gradient by
# their own size): relative loss gap <= 5e-2 (of max(|loss|, 1e-3)), relative gradient gap
# ||g - g_peer|| / ||g_peer|| <= 2e-1.
TOLERANCE = {"float32": ("absolute", 1e-5, 1e-5), "bfloat16": ("relative", 5e-2, 2e-1)}


def _check(name: str, ours: float, trl: float, grad_gap: float, grad_gap_rel: float = 0.0,
           dtype: str = "float32") -> None:  # fmt: skip
    kind, loss_tol, grad_tol = TOLERANCE.get(dtype, TOLERANCE["float32"])
    if kind == "absolute":
        ok = abs(ours - trl) <= loss_tol and grad_gap <= grad_tol
        want = f"both within {loss_tol:g}"
    else:
        ok = abs(ours - trl) <= loss_tol * max(abs(trl), 1e-3) and grad_gap_rel <= grad_tol
        want = f"relative loss gap <= {loss_tol:g} and relative gradient gap <= {grad_tol:g}"
    if not ok:
        raise AssertionError(
            f"{name}: the two trainers disagree on the same batch ({dtype}): loss {ours} vs {trl} "
            f"(TRL), max gradient difference {grad_gap:.3g}, relative gradient difference "
            f"{grad_gap_rel:.3g}; expected {want}"
        )


def _same_loss(name: str, ours_t, ours_module, trl_t, trl_module) -> tuple[float, float, float]:
    """(our loss, |loss gap|, max gradient gap) on the same batch against the peer's loss, checked
    by :func:`_check` at the tolerance of the weights' dtype (:data:`TOLERANCE`); the modules are
    the two Hugging Face models (``HFCausalLM.model``)."""
    ours, trl = float(ours_t), float(trl_t)
    dtype = str(next(ours_module.parameters()).dtype).replace("torch.", "")
    gap, rel = _gradient_gap(ours_t, ours_module, trl_t, trl_module)
    _check(name, ours, trl, gap, rel, dtype)
    return ours, abs(ours - trl), gap


def _text(g, vocab: int, n: int) -> str:
    import torch

    return " ".join(f"t{i}" for i in torch.randint(2, vocab, (n,), generator=g).tolist())


LAYOUTS = ("padded", "buckets", "packed")


# The clocks every timed sample is read on (the ratios use ``CLOCK``; the others are kept so that
# the clock can be chosen by measurement: ``reproducibility`` reports each clock's spread).
CLOCKS = {
    "thread_time": time.thread_time,  # CPU seconds of the calling thread (autograd runs here)
    "process_time": time.process_time,  # CPU seconds of the process, all its threads
    "perf_counter": time.perf_counter,  # wall clock
}
CLOCK = "thread_time"
MIN_SAMPLE_S = 0.1  # each timed sample runs a contender's step k times, >= 0.1 s of CPU in all
TRAINER_NAMES = {"plain": "plain PyTorch", "trl": "TRL", "trl-unfused": "TRL, LM head unfused"}


def _load() -> float:
    """The machine's 1-minute load average (nan where the OS has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def _time_alternately(fns: dict[str, Any], warmup: int, rounds: int, *,
                      min_sample_s: float = MIN_SAMPLE_S, seed: int = 0,
                      device: str = "cpu") -> dict[str, Any]:  # fmt: skip
    """Time every contender of one loss in the same interleaved rounds.

    Every step runs ``warmup`` times; the fastest warm-up step (on ``CLOCK``) sets ``k``, the
    number of consecutive steps in one timed sample, so that every sample is at least
    ``min_sample_s`` (a sample of a few ms is at the mercy of one scheduler tick or cache flush).
    Then ``rounds`` rounds; in each, every contender runs one sample, in an order shuffled per
    round (seeded: no trainer always follows another, and whatever a neighbour does to the machine
    during a round hits all of them). Each sample is read on every clock of ``CLOCKS`` and stored
    per step (sample / k), with the minor page faults of the sample per step
    (:func:`theorylab.bench.allocator.minor_faults`). Returns ``{"samples": {clock: {name: [s per
    step, one per round]}}, "faults": {name: [faults per step, one per round]},
    "steps_per_sample": k, "rounds", "load": (1-min load before, after)}``; sample ``i`` of two
    contenders comes from the same round, so their ratio is a paired ratio."""
    import random

    names = list(fns)
    # on a GPU the work is on the device: wall clock after a synchronisation is its clock
    clock = CLOCK if str(device) == "cpu" else "perf_counter"
    sync = _synchronizer(device)
    tick = CLOCKS[clock]
    fastest = float("inf")
    for _ in range(warmup):
        for name in names:
            sync()
            t0 = tick()
            fns[name]()
            sync()
            fastest = min(fastest, tick() - t0)
    k = max(1, math.ceil(min_sample_s / fastest)) if fastest < float("inf") else 1
    samples: dict[str, dict[str, list[float]]] = {c: {n: [] for n in names} for c in CLOCKS}
    faults: dict[str, list[float]] = {n: [] for n in names}  # minor page faults per step
    order = random.Random(seed)
    load_before = _load()
    # Python's cyclic garbage collector off while timing (as ``timeit`` does): a collection
    # starts after a count of allocations, so it lands more often in the steps that make more
    # Python objects (the bucket layout's four model calls), and its cost grows with everything
    # alive in the process (more in a later run of a sitting): a cost that is neither step's.
    # It runs between the rounds instead, untimed.
    gc_was_enabled = gc.isenabled()
    try:
        for _ in range(rounds):
            gc.collect()
            gc.disable()
            _one_round(fns, names, order, k, sync, samples, faults)
    finally:
        if gc_was_enabled:
            gc.enable()
    return {"samples": samples, "faults": faults, "clock": clock, "steps_per_sample": k,
            "rounds": rounds, "load": (load_before, _load())}  # fmt: skip


def _one_round(fns, names, order, k, sync, samples, faults) -> None:
    """One round of :func:`_time_alternately`: every contender one sample, in a shuffled order."""
    order.shuffle(names)
    for name in names:
        sync()
        f0 = minor_faults()
        t0 = {c: read() for c, read in CLOCKS.items()}
        for _ in range(k):
            fns[name]()
        sync()
        t1 = {c: read() for c, read in CLOCKS.items()}
        faults[name].append((minor_faults() - f0) / k)
        for c in CLOCKS:
            samples[c][name].append((t1[c] - t0[c]) / k)


def _synchronizer(device):
    """A no-op on CPU; ``torch.cuda.synchronize`` on a CUDA device (kernels run asynchronously)."""
    if not str(device).startswith("cuda"):
        return lambda: None
    import torch

    return torch.cuda.synchronize


def paired_ratio(reference: list[float], contender: list[float]) -> dict[str, float]:
    """The median over rounds of ``reference[i] / contender[i]`` (how many times faster the
    contender is than the reference, round by round) and its quartiles; nan without samples."""
    ratios = sorted(r / c for r, c in zip(reference, contender, strict=True) if c > 0)
    if not ratios:
        return {"median": float("nan"), "q1": float("nan"), "q3": float("nan")}
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    return {"median": statistics.median(ratios), "q1": q[0], "q3": q[2]}


def _rows(case: str, cfg: dict, tokens: int, timing: dict, checks: dict, device, dtype,
          peer: str = "TRL"):  # fmt: skip
    """One row per trainer (``timing``: :func:`_time_alternately`; keys: the theorylab layouts,
    ``plain``, ``trl``, ``trl-unfused``); ``checks[name] = (loss, |loss gap|, max gradient gap)``
    against the peer on the same batch. Ratios are medians of per-round paired ratios on
    ``CLOCK`` (:func:`paired_ratio`): ``ratio_vs_trl`` (TRL's time over this row's, round by
    round), ``ratio_vs_plain`` (plain PyTorch's); ``ratio_vs_peer`` is the first that exists;
    ``ratio_vs_trl_by_clock`` / ``ratio_vs_plain_by_clock`` hold the same on every clock.
    Absolute times (``ms_median`` etc.) depend on the machine's load; the ratios much less."""
    import torch

    samples, clock = timing["samples"], timing["clock"]
    ts_names = set(samples[clock])
    out = []
    for name, ts in samples[clock].items():
        loss, loss_gap, grad_gap = checks[name]
        ratios: dict[str, Any] = {}
        for k in ("trl", "plain"):
            by_clock = {
                c: (paired_ratio(samples[c][k], samples[c][name])["median"]
                    if k in samples[c] else float("nan"))
                for c in CLOCKS
            }  # fmt: skip
            main = paired_ratio(samples[clock][k], ts) if k in samples[clock] else None
            ratios[f"ratio_vs_{k}"] = main["median"] if main else float("nan")
            ratios[f"ratio_vs_{k}_iqr"] = [main["q1"], main["q3"]] if main else None
            ratios[f"ratio_vs_{k}_by_clock"] = by_clock
        med = statistics.median(ts)
        out.append(
            {
                "step": case,
                "peer": peer,
                "trainer": TRAINER_NAMES.get(name, f"theorylab {name}"),
                "device": str(device),
                "dtype": str(dtype).replace("torch.", ""),
                "model": f"gpt2 {cfg['n_layer']}x{cfg['n_embd']}, vocab {cfg['vocab']}",
                "batch": tokens,
                "clock": clock,
                "rounds": timing["rounds"],
                "steps_per_sample": timing["steps_per_sample"],
                "order": "shuffled per round",
                # absolute times: load-dependent (a neighbour's load slows a CPU second too)
                "ms_median": 1e3 * med,
                "ms_min": 1e3 * min(ts),
                "ms_max": 1e3 * max(ts),
                "ms_median_by_clock": {
                    c: 1e3 * statistics.median(samples[c][name]) for c in CLOCKS
                },
                "wall_ms_median": 1e3 * statistics.median(samples["perf_counter"][name]),
                # per-round samples (ms/step on ``clock``, round i of every row of this loss
                # paired): the ratios can be recomputed, and a drift within the run seen
                "samples_ms": [1e3 * t for t in ts],
                # minor page faults per step, median over the rounds (the allocator's cost:
                # ``theorylab.bench.allocator``)
                "faults_per_step": statistics.median(timing["faults"][name])
                if timing.get("faults")
                else float("nan"),
                "tokens_per_s": tokens / med,
                **ratios,
                "ratio_vs_peer": ratios["ratio_vs_trl" if "trl" in ts_names else "ratio_vs_plain"],
                "loss": loss,
                "loss_gap": loss_gap,
                "grad_gap": grad_gap,
                "load_1min": timing["load"][1],  # when the timing ended
                "load_1min_start": timing["load"][0],
                "torch_threads": torch.get_num_threads(),
            }
        )
    return out


def _lengths(g, n: int, longest: int):
    """n completion lengths, uniform in [longest // 4, longest]."""
    import torch

    return torch.randint(max(1, longest // 4), longest + 1, (n,), generator=g).tolist()


def _plain_slot(case: str, start, plain_loss, peer_loss, peer_module):
    """The plain-PyTorch trainer's step (``plain_loss(model)``: :func:`plain_dpo_loss` or
    :func:`plain_grpo_loss` on the same batch, AdamW, clipping at 1) on a copy of ``start``, and
    its check against the peer's loss (``peer_loss()``, on ``peer_module``)."""
    plain, step = _plain_step(start, plain_loss)
    name = f"{case} (plain PyTorch)"
    return step, _same_loss(name, plain_loss(plain), plain, peer_loss(), peer_module)


def _plain_step(start, plain_loss):
    """(a copy of ``start``, its plain-PyTorch step: ``plain_loss(model)``, backward, gradient norm
    clipped at 1, AdamW)."""
    import torch

    plain = copy.deepcopy(start)
    opt = torch.optim.AdamW(plain.parameters(), lr=1e-5, weight_decay=0.0)

    def step():
        plain_loss(plain).backward()
        torch.nn.utils.clip_grad_norm_(plain.parameters(), 1.0)
        opt.step()
        plain.zero_grad(set_to_none=True)

    return plain, step


class _UnfusedLogProb:
    """TRL's fused LM head (``trl.kernels.ChunkedLogProbFunction``: per-token log-probabilities in
    (token, vocabulary) tiles without materialising the logits; on CPU its tiles fold in torch ops,
    ``_forward_tile``) computed the plain way instead: the (N, V) logits, ``log_softmax``,
    ``gather``; the same five outputs (log-probs and entropy with gradient; log sum p^2, mean
    logit and top-1 without)."""

    @staticmethod
    def apply(hidden, weight, bias, targets, temperature, chunk_size, softcap, logit_scale,
              outputs):  # fmt: skip
        import torch

        z = hidden @ weight.t() + (0 if bias is None else bias)  # (N, V)
        z = z.float() * logit_scale
        if softcap:
            z = softcap * torch.tanh(z / softcap)
        z = z / temperature
        logp = torch.log_softmax(z, -1)
        out = logp.gather(-1, targets[:, None]).squeeze(-1)
        entropy = -(logp.exp() * logp).sum(-1) if "entropy" in outputs else None
        with torch.no_grad():
            sq = torch.logsumexp(2 * logp, -1) if "log_sum_sq_probs" in outputs else None
            mean = z.mean(-1) if "mean_logits" in outputs else None
            top1 = z.argmax(-1) == targets if "is_top1" in outputs else None
        return out, entropy, sq, mean, top1


class _unfused_lm_head:
    """Within the block, TRL's fused LM head runs :class:`_UnfusedLogProb` (the module global that
    ``trl.trainer.utils.add_fused_lm_head``'s forward looks up at each call is swapped)."""

    def __enter__(self):
        import trl.trainer.utils as tu

        self.saved = tu._ChunkedLogProbFunction
        tu._ChunkedLogProbFunction = _UnfusedLogProb

    def __exit__(self, *exc):
        import trl.trainer.utils as tu

        tu._ChunkedLogProbFunction = self.saved


def _unfused_slot(case: str, unfused_loss, unfused_module, fused_loss, fused_module, step):
    """TRL's step with its LM head unfused (``step()`` on a second trainer), and the check that
    its loss and gradient equal fused TRL's on the same batch: what TRL's CPU fallback of the
    fused head costs is the difference of the two rows' times."""
    with _unfused_lm_head():
        loss = unfused_loss()
    check = _same_loss(f"{case} (TRL, LM head unfused)", loss, unfused_module, fused_loss(),
                       fused_module)  # fmt: skip

    def unfused_step():
        with _unfused_lm_head():
            step()

    return unfused_step, check


def bench_dpo(cfg: dict, *, device: str = "cpu", dtype=None, warmup=2, rounds=10,
              min_sample_s=MIN_SAMPLE_S, layouts=LAYOUTS) -> list[dict]:  # fmt: skip
    import torch
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    from theorylab.algorithms.deep.models import HFCausalLM
    from theorylab.algorithms.deep.registry import make_loss
    from theorylab.algorithms.deep.steps import preference_step

    dtype = dtype or torch.float32
    tok = _tokenizer(cfg["vocab"])
    g = torch.Generator().manual_seed(0)
    lengths = _lengths(g, 2 * cfg["batch"], cfg["completion"])
    rows = [
        {
            "prompt": _text(g, cfg["vocab"], cfg["prompt"]),
            "chosen": " " + _text(g, cfg["vocab"], lengths[2 * i]),
            "rejected": " " + _text(g, cfg["vocab"], lengths[2 * i + 1]),
        }
        for i in range(cfg["batch"])
    ]
    base = _model(cfg, device, dtype)
    args = DPOConfig(
        output_dir="/tmp/theorylab-bench-trl", per_device_train_batch_size=cfg["batch"],
        learning_rate=1e-5, beta=0.1, loss_type=["sigmoid"], report_to=[],
        use_cpu=device == "cpu", logging_steps=10**9, save_strategy="no", max_grad_norm=1.0,
        max_length=None, bf16=dtype == torch.bfloat16,
    )  # fmt: skip
    start = _perturbed(base)
    trainer, trainer_u = (
        DPOTrainer(
            model=copy.deepcopy(start),
            ref_model=copy.deepcopy(base),
            args=args,
            train_dataset=Dataset.from_list(rows),
            processing_class=tok,
        )  # fmt: skip
        for _ in range(2)
    )
    batch = {k: v.to(device) for k, v in next(iter(trainer.get_train_dataloader())).items()}
    loss_fn = make_loss("dpo:beta=0.1")
    ids, am, cm = batch["input_ids"], batch["attention_mask"], batch["completion_mask"]
    reference = HFCausalLM(copy.deepcopy(base)).requires_grad_(False)
    fns, checks = {}, {}
    for layout in layouts:
        policy = HFCausalLM(copy.deepcopy(start))
        opt = torch.optim.AdamW(policy.parameters(), lr=1e-5, weight_decay=0.0)
        ours_t = preference_step(
            policy, reference, opt, loss_fn, ids, am, cm, step=False, layout=layout
        )
        trl_t = trainer.compute_loss(trainer.model, batch)
        checks[layout] = _same_loss(f"DPO ({layout})", ours_t, policy.model, trl_t, trainer.model)

        def ours_step(policy=policy, opt=opt, layout=layout):
            preference_step(policy, reference, opt, loss_fn, ids, am, cm, layout=layout)

        fns[layout] = ours_step

    fns["plain"], checks["plain"] = _plain_slot(
        "DPO", start, lambda m: plain_dpo_loss(m, reference.model, ids, am, cm, beta=0.1),
        lambda: trainer.compute_loss(trainer.model, batch), trainer.model,
    )  # fmt: skip
    for t in (trainer, trainer_u):
        t.create_optimizer()
        t.current_gradient_accumulation_steps = 1  # set by Trainer's own loop, not run here

    def trl_step(t=trainer):
        t.training_step(t.model, batch)
        t.accelerator.clip_grad_norm_(t.model.parameters(), 1.0)
        t.optimizer.step()
        t.model.zero_grad(set_to_none=True)

    checks["trl"] = (float(trainer.compute_loss(trainer.model, batch)), 0.0, 0.0)
    fns["trl"] = trl_step
    fns["trl-unfused"], checks["trl-unfused"] = _unfused_slot(
        "DPO", lambda: trainer_u.compute_loss(trainer_u.model, batch), trainer_u.model,
        lambda: trainer.compute_loss(trainer.model, batch), trainer.model,
        lambda: trl_step(trainer_u),
    )  # fmt: skip
    times = _time_alternately(fns, warmup, rounds, min_sample_s=min_sample_s, device=device)
    return _rows("DPO step", cfg, int(am.sum()), times, checks, device, dtype)


def _even_fraction(completion_ids) -> float:
    """The bench's reward: the fraction of a completion's token ids that are even."""
    return sum(1 for t in completion_ids if t % 2 == 0) / max(1, len(completion_ids))


def _trl_reward(completions, completion_ids, **kwargs):
    """TRL's reward function: :func:`_even_fraction` of each completion's ids."""
    return [_even_fraction(ids) for ids in completion_ids]


def _our_reward(prompts, completion_ids, completion_mask):
    """The same reward on a padded (B, C) batch: (B,)."""
    even = ((completion_ids % 2 == 0) & (completion_mask > 0)).sum(1)
    return even / completion_mask.sum(1).clamp(min=1)


def _grpo_trainer(cfg: dict, base, start, prompts: list[str], B: int, device: str, dtype):
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(
        output_dir="/tmp/theorylab-bench-trl", per_device_train_batch_size=B,
        num_generations=GROUP_SIZE, learning_rate=1e-5, beta=0.04, epsilon=0.2, loss_type="grpo",
        scale_rewards="group", max_completion_length=cfg["completion"], report_to=[],
        use_cpu=device == "cpu", logging_steps=10**9, save_strategy="no", max_grad_norm=1.0,
        bf16=dtype == torch.bfloat16, model_init_kwargs={"dtype": dtype},
        use_bias_correction_kl=False, temperature=1.0, top_p=1.0, top_k=0,
    )  # fmt: skip
    # TRL builds its reference model from the policy's path; the reference weights are then set
    path = tempfile.mkdtemp(prefix="theorylab-bench-llm-")
    start.save_pretrained(path)
    try:
        trainer = GRPOTrainer(
            model=path, reward_funcs=[_trl_reward], args=args,
            train_dataset=Dataset.from_list([{"prompt": p} for p in prompts]),
            processing_class=_tokenizer(cfg["vocab"]),
        )  # fmt: skip
    finally:
        shutil.rmtree(path, ignore_errors=True)
    trainer.create_optimizer()
    if trainer.ref_model is None:
        raise RuntimeError("TRL's GRPOTrainer built no reference model at beta = 0.04")
    trainer.ref_model.load_state_dict(base.state_dict())
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer's own loop, not run here
    return trainer


def _trl_grpo_update(trainer, inputs) -> None:
    loss = trainer.compute_loss(trainer.model, inputs)
    trainer.accelerator.backward(loss)
    trainer.accelerator.clip_grad_norm_(trainer.model.parameters(), 1.0)
    trainer.optimizer.step()
    trainer.model.zero_grad(set_to_none=True)


def bench_grpo(cfg: dict, *, device: str = "cpu", dtype=None, warmup=2, rounds=10,
               min_sample_s=MIN_SAMPLE_S, layouts=LAYOUTS) -> list[dict]:  # fmt: skip
    import torch

    from theorylab.algorithms.deep.groups import group_advantages
    from theorylab.algorithms.deep.models import HFCausalLM
    from theorylab.algorithms.deep.registry import make_loss
    from theorylab.algorithms.deep.steps import group_step

    dtype = dtype or torch.float32
    B, P, C, V = cfg["batch"] * GROUP_SIZE // 2, cfg["prompt"], cfg["completion"], cfg["vocab"]
    B = max(GROUP_SIZE, B - B % GROUP_SIZE)
    g = torch.Generator().manual_seed(1)
    prompts = [_text(g, V, P) for _ in range(B // GROUP_SIZE)]
    base = _model(cfg, device, dtype)
    start = _perturbed(base)
    trainer = _grpo_trainer(cfg, base, start, prompts, B, device, dtype)
    # the batch: B completions of C // 4 .. C tokens, right-padded
    prompt_ids = torch.randint(2, V, (B // GROUP_SIZE, P), generator=g).repeat_interleave(
        GROUP_SIZE, 0
    )
    completion_ids = torch.randint(2, V, (B, C), generator=g)
    lengths = torch.tensor(_lengths(g, B, C))
    completion_mask = (torch.arange(C)[None] < lengths[:, None]).to(torch.long)
    completion_ids = completion_ids.masked_fill(completion_mask == 0, 0)
    rewards = torch.rand(B, generator=g)
    group = torch.arange(B // GROUP_SIZE).repeat_interleave(GROUP_SIZE)
    dev = torch.device(device)
    prompt_ids, completion_ids, completion_mask = (
        t.to(dev) for t in (prompt_ids, completion_ids, completion_mask)
    )
    rewards, group = rewards.to(dev), group.to(dev)
    ids = torch.cat([prompt_ids, completion_ids], 1)
    am = torch.cat([torch.ones_like(prompt_ids), completion_mask], 1)
    cm = torch.cat([torch.zeros_like(prompt_ids), completion_mask], 1)

    def trl_inputs(t=trainer):
        with torch.no_grad():
            out = t._get_per_token_logps_and_entropies(t.ref_model, ids, am, C)
        ref_logps = out[0]
        adv = group_advantages(rewards, group, "std")  # (r - mean) / (std + 1e-4), as TRL's
        return {
            "prompt_ids": prompt_ids, "prompt_mask": torch.ones_like(prompt_ids),
            "completion_ids": completion_ids, "completion_mask": completion_mask,
            "advantages": adv, "ref_per_token_logps": ref_logps, "old_per_token_logps": None,
        }  # fmt: skip

    reference = HFCausalLM(copy.deepcopy(base)).requires_grad_(False)
    loss_fn = make_loss("grpo:beta=0.04,clip_eps=0.2")
    fns, checks = {}, {}
    for layout in layouts:
        policy = HFCausalLM(copy.deepcopy(start))
        opt = torch.optim.AdamW(policy.parameters(), lr=1e-5, weight_decay=0.0)
        kw = dict(prompt_length=P, layout=layout)
        ours_t = group_step(policy, reference, opt, loss_fn, ids, am, cm, rewards, group,
                            step=False, **kw)  # fmt: skip
        trl_t = trainer.compute_loss(trainer.model, trl_inputs())
        checks[layout] = _same_loss(f"GRPO ({layout})", ours_t, policy.model, trl_t, trainer.model)

        def ours_step(policy=policy, opt=opt, kw=kw):
            group_step(policy, reference, opt, loss_fn, ids, am, cm, rewards, group, **kw)

        fns[layout] = ours_step

    fns["plain"], checks["plain"] = _plain_slot(
        "GRPO", start,
        lambda m: plain_grpo_loss(m, reference.model, ids, am, cm, rewards, GROUP_SIZE, P),
        lambda: trainer.compute_loss(trainer.model, trl_inputs()), trainer.model,
    )  # fmt: skip
    checks["trl"] = (float(trainer.compute_loss(trainer.model, trl_inputs())), 0.0, 0.0)
    fns["trl"] = lambda: _trl_grpo_update(trainer, trl_inputs())
    trainer_u = _grpo_trainer(cfg, base, start, prompts, B, device, dtype)
    fns["trl-unfused"], checks["trl-unfused"] = _unfused_slot(
        "GRPO", lambda: trainer_u.compute_loss(trainer_u.model, trl_inputs(trainer_u)),
        trainer_u.model, lambda: trainer.compute_loss(trainer.model, trl_inputs()), trainer.model,
        lambda: _trl_grpo_update(trainer_u, trl_inputs(trainer_u)),
    )  # fmt: skip
    times = _time_alternately(fns, warmup, rounds, min_sample_s=min_sample_s, device=device)
    case = "GRPO step (given completions)"
    return _rows(case, cfg, int(am.sum()), times, checks, device, dtype)


def bench_grpo_generation(cfg: dict, *, device: str = "cpu", dtype=None, warmup=2, rounds=10,
                          min_sample_s=MIN_SAMPLE_S,
                          layouts=("padded", "buckets")) -> list[dict]:  # fmt: skip
    """Row (c): a full GRPO step with generation (module docstring)."""
    import torch

    from theorylab.algorithms.deep.models import HFCausalLM
    from theorylab.algorithms.deep.registry import make_loss
    from theorylab.algorithms.deep.steps import generation_group_step, group_step

    dtype = dtype or torch.float32
    B, P, C, V = cfg["batch"] * GROUP_SIZE // 2, cfg["prompt"], cfg["completion"], cfg["vocab"]
    B = max(GROUP_SIZE, B - B % GROUP_SIZE)
    n = B // GROUP_SIZE
    g = torch.Generator().manual_seed(2)
    prompts = [_text(g, V, P) for _ in range(n)]
    base = _model(cfg, device, dtype)
    start = _perturbed(base)
    trainer = _grpo_trainer(cfg, base, start, prompts, B, device, dtype)
    tok = _tokenizer(V)
    prompt_ids = torch.tensor([tok(p)["input_ids"] for p in prompts], device=device)  # (n, P)
    inputs = [{"prompt": p} for p in prompts for _ in range(GROUP_SIZE)]  # TRL's RepeatSampler
    eos, pad = tok.eos_token_id, tok.pad_token_id

    # the same-loss check on TRL's own sampled and scored batch
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        out = trainer._generate_and_score_completions(copy.deepcopy(inputs))
    if not torch.equal(out["prompt_ids"], prompt_ids.repeat_interleave(GROUP_SIZE, 0)):
        raise AssertionError("TRL tokenised the prompts differently from the bench's tokenizer")
    cmask = out["completion_mask"]
    ids = torch.cat([out["prompt_ids"], out["completion_ids"]], 1)
    am = torch.cat([out["prompt_mask"], cmask], 1)
    cm = torch.cat([torch.zeros_like(out["prompt_mask"]), cmask], 1)
    rewards = _our_reward(out["prompt_ids"], out["completion_ids"], cmask)
    group = torch.arange(n, device=ids.device).repeat_interleave(GROUP_SIZE)
    reference = HFCausalLM(copy.deepcopy(base)).requires_grad_(False)
    loss_fn = make_loss("grpo:beta=0.04,clip_eps=0.2")
    fns, checks, tokens = {}, {}, 0
    for layout in layouts:
        policy = HFCausalLM(copy.deepcopy(start))
        opt = torch.optim.AdamW(policy.parameters(), lr=1e-5, weight_decay=0.0)
        ours_t = group_step(policy, reference, opt, loss_fn, ids, am, cm, rewards, group,
                            prompt_length=P, step=False, layout=layout)  # fmt: skip
        trl_t = trainer.compute_loss(trainer.model, out)
        name = f"GRPO with generation ({layout})"
        checks[layout] = _same_loss(name, ours_t, policy.model, trl_t, trainer.model)
        gen = torch.Generator(device=device).manual_seed(4)

        def ours_step(policy=policy, opt=opt, layout=layout, gen=gen):
            generation_group_step(
                policy, reference, opt, loss_fn, prompt_ids, _our_reward,
                group_size=GROUP_SIZE, max_new_tokens=C, eos_token_id=eos, pad_token_id=pad,
                generator=gen, layout=layout,
            )  # fmt: skip

        fns[layout] = ours_step
        tokens = int(am.sum())

    def trl_step():
        _trl_grpo_update(trainer, trainer._generate_and_score_completions(copy.deepcopy(inputs)))

    checks["trl"] = (float(trainer.compute_loss(trainer.model, out)), 0.0, 0.0)
    fns["trl"] = trl_step
    times = _time_alternately(fns, warmup, rounds, min_sample_s=min_sample_s, device=device)
    return _rows("GRPO step with generation", cfg, tokens, times, checks, device, dtype)


# ------------------------------------------------------------------ without TRL: plain PyTorch
def _token_logprobs(model, ids, attention_mask, start: int):
    """log pi(ids[:, t] | ids[:, <t]) for t >= start, from one padded forward: (B, T - start)."""
    import torch

    logits = model(input_ids=ids, attention_mask=attention_mask).logits[:, start - 1 : -1]
    return torch.log_softmax(logits.float(), -1).gather(-1, ids[:, start:, None]).squeeze(-1)


def plain_dpo_loss(policy, reference, ids, attention_mask, completion_mask, beta: float = 0.1):
    """DPO (Rafailov et al. 2023, eq. (7)) in plain PyTorch on ``[chosen; rejected]`` rows (2B, T):
    ``-mean log sigmoid(beta ((c - c_ref) - (r - r_ref)))`` of the completions' summed log-probs."""
    import torch
    import torch.nn.functional as F

    mask = completion_mask[:, 1:].float()
    seq = (_token_logprobs(policy, ids, attention_mask, 1) * mask).sum(1)  # (2B,)
    with torch.no_grad():
        ref = (_token_logprobs(reference, ids, attention_mask, 1) * mask).sum(1)
    c, r = seq.chunk(2)
    c_ref, r_ref = ref.chunk(2)
    return -F.logsigmoid(beta * ((c - c_ref) - (r - r_ref))).mean()


def plain_grpo_loss(
    policy, reference, ids, attention_mask, completion_mask, rewards, group_size: int,
    prompt_length: int, beta: float = 0.04, clip_eps: float = 0.2, eps: float = 1e-4,
):  # fmt: skip
    """GRPO (Shao et al. 2024, eq. (3), on-policy) in plain PyTorch: rows are ``group_size``
    consecutive completions per prompt; A = (r - mean) / (std + eps) per group (std with n - 1);
    per token -min(rho A, clip(rho, 1 +- eps) A) + beta k3, k3 = exp(ref - logp) - (ref - logp) -
    1; mean over each completion's tokens, then over completions."""
    import torch

    P = prompt_length
    mask = completion_mask[:, P:].float()  # (B, C)
    logp = _token_logprobs(policy, ids, attention_mask, P)
    with torch.no_grad():
        ref = _token_logprobs(reference, ids, attention_mask, P)
    r = rewards.float().view(-1, group_size)
    adv = ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + eps)).view(-1, 1)
    rho = torch.exp(logp - logp.detach())  # 1, with the policy gradient's weight
    surrogate = torch.min(rho * adv, rho.clamp(1 - clip_eps, 1 + clip_eps) * adv)
    d = ref - logp
    per_token = -surrogate + beta * (torch.exp(d) - d - 1)
    return ((per_token * mask).sum(1) / mask.sum(1)).mean()


def _padded_batch(g, rows: list[tuple[int, int]], vocab: int, device):
    """Right-padded ids, attention and completion masks (B, T) for rows of (prompt length,
    completion length) random tokens; pad id 0."""
    import torch

    T = max(p + c for p, c in rows)
    ids = torch.zeros(len(rows), T, dtype=torch.long)
    am, cm = torch.zeros_like(ids), torch.zeros_like(ids)
    for i, (p, c) in enumerate(rows):
        ids[i, : p + c] = torch.randint(2, vocab, (p + c,), generator=g)
        am[i, : p + c] = 1
        cm[i, p : p + c] = 1
    return ids.to(device), am.to(device), cm.to(device)


def _plain_case(case, cfg, policy_loss, ours_loss, tokens, device, dtype, warmup, rounds,
                layouts, min_sample_s=MIN_SAMPLE_S) -> list[dict]:  # fmt: skip
    """Check and time one case against the plain-PyTorch peer (``policy_loss(model)``) and
    theorylab's step in each layout (``ours_loss(policy, opt, layout, step)``)."""
    import torch

    from theorylab.algorithms.deep.models import HFCausalLM

    base = _model(cfg, device, dtype)
    start = _perturbed(base)
    plain, plain_step = _plain_step(start, policy_loss)
    fns, checks = {}, {}
    for layout in layouts:
        policy = HFCausalLM(copy.deepcopy(start))
        opt = torch.optim.AdamW(policy.parameters(), lr=1e-5, weight_decay=0.0)
        ours_t = ours_loss(policy, opt, layout, False)
        name = f"{case} ({layout}, against plain PyTorch)"
        checks[layout] = _same_loss(name, ours_t, policy.model, policy_loss(plain), plain)

        def ours_step(policy=policy, opt=opt, layout=layout):
            ours_loss(policy, opt, layout, True)

        fns[layout] = ours_step

    checks["plain"] = (float(policy_loss(plain)), 0.0, 0.0)
    fns["plain"] = plain_step
    times = _time_alternately(fns, warmup, rounds, min_sample_s=min_sample_s, device=device)
    return _rows(case, cfg, tokens, times, checks, device, dtype, peer="plain PyTorch")


def bench_plain(cfg: dict, *, device: str = "cpu", dtype=None, warmup=2, rounds=10,
                min_sample_s=MIN_SAMPLE_S, layouts=LAYOUTS) -> list[dict]:  # fmt: skip
    """Rows (a) and (b) against plain PyTorch (no TRL): the same batches' shapes as with TRL."""
    import torch

    from theorylab.algorithms.deep.models import HFCausalLM
    from theorylab.algorithms.deep.registry import make_loss
    from theorylab.algorithms.deep.steps import group_step, preference_step

    dtype = dtype or torch.float32
    V, P, C, n = cfg["vocab"], cfg["prompt"], cfg["completion"], cfg["batch"]
    g = torch.Generator().manual_seed(0)
    lengths = _lengths(g, 2 * n, C)  # chosen and rejected rows share their pair's prompt
    ids, am, cm = _padded_batch(g, [(P, lengths[i]) for i in range(2 * n)], V, device)
    ids[n:, :P] = ids[:n, :P]
    reference = HFCausalLM(_model(cfg, device, dtype)).requires_grad_(False)
    dpo = make_loss("dpo:beta=0.1")
    rows = _plain_case(
        "DPO step", cfg,
        lambda m: plain_dpo_loss(m, reference.model, ids, am, cm, beta=0.1),
        lambda pol, opt, layout, step: preference_step(
            pol, reference, opt, dpo, ids, am, cm, step=step, layout=layout
        ),
        int(am.sum()), device, dtype, warmup, rounds, layouts, min_sample_s,
    )  # fmt: skip

    B = max(GROUP_SIZE, n * GROUP_SIZE // 2 - (n * GROUP_SIZE // 2) % GROUP_SIZE)
    g = torch.Generator().manual_seed(1)
    gids, gam, gcm = _padded_batch(g, [(P, c) for c in _lengths(g, B, C)], V, device)
    prompts = gids[::GROUP_SIZE, :P].repeat_interleave(GROUP_SIZE, 0)
    gids[:, :P] = prompts  # G completions of each prompt
    rewards = torch.rand(B, generator=g).to(device)
    group = torch.arange(B // GROUP_SIZE, device=gids.device).repeat_interleave(GROUP_SIZE)
    grpo = make_loss("grpo:beta=0.04,clip_eps=0.2")
    rows += _plain_case(
        "GRPO step (given completions)", cfg,
        lambda m: plain_grpo_loss(m, reference.model, gids, gam, gcm, rewards, GROUP_SIZE, P),
        lambda pol, opt, layout, step: group_step(
            pol, reference, opt, grpo, gids, gam, gcm, rewards, group, prompt_length=P,
            step=step, layout=layout,
        ),
        int(gam.sum()), device, dtype, warmup, rounds, layouts, min_sample_s,
    )  # fmt: skip
    return rows


NO_TRL = (
    "bench llm: TRL is not installed (pip install 'theorylab[bench]'), so nothing is compared "
    "with TRL: rows (a) DPO step and (b) GRPO step given completions run against plain PyTorch "
    "instead (the same loss-and-gradient check to 1e-5); row (c), GRPO with TRL's generation "
    "loop, is skipped."
)
NO_TRANSFORMERS = (
    "bench llm: transformers is not installed (pip install 'theorylab[llm]'): no model to time, "
    "no row ran."
)


# interleaved rounds per run (2 warm-up steps each before)
ROUNDS = {"quick": 25, "default": 15, "gpu": 10}
SPREAD_LIMIT = 0.10  # ``--runs``: a row whose ratio spreads more than this across runs is flagged


def bench_llm(quick: bool = False, device: str = "cpu", runs: int = 1, dtype=None,
              allocator: str = "heap") -> list[dict]:  # fmt: skip
    """Rows (a), (b), (c) against TRL; without TRL rows (a) and (b) against plain PyTorch, with a
    line on stderr saying so (module docstring); no row without transformers.

    runs: run the whole bench this many times one after another in this process (fresh models and
    batches each time, the same seeds); every row carries its ``run`` (1..runs), and
    :func:`format_table` adds the reproducibility table (:func:`reproducibility`).

    dtype: the weights' dtype of the timed run (default bfloat16 on CUDA, float32 on CPU); any
    other than float32 is first checked at float32 (:data:`TOLERANCE`).

    allocator: on CPU, ``"heap"`` (default) keeps freed memory in the C heap for the whole process
    (:func:`theorylab.bench.allocator.keep_freed_memory`: without it, glibc's mmap threshold makes
    a third of TRL's CPU step page faults, and the ratios move with the process's history);
    ``"system"`` leaves glibc's defaults. Every row records the setting (``allocator``) and its
    minor page faults per step (``faults_per_step``). On CUDA the setting is not applied (the
    device's own caching allocator serves the tensors)."""
    import importlib.util

    if not isinstance(runs, int) or isinstance(runs, bool) or runs < 1:
        raise ValueError(f"--runs must be a positive integer, got {runs!r}")
    check_allocator(allocator)
    if importlib.util.find_spec("transformers") is None:
        print(NO_TRANSFORMERS, file=sys.stderr)
        return []
    import torch

    from theorylab.algorithms.deep.models import resolve_device

    resolve_device(device)
    size = "quick" if quick else "gpu" if device.startswith("cuda") else "default"
    cfg = CONFIGS[size]
    if dtype is None:
        dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    reps = dict(warmup=2, rounds=ROUNDS[size])
    has_trl = importlib.util.find_spec("trl") is not None
    if not has_trl:
        print(NO_TRL, file=sys.stderr)
    else:
        try:  # TRL and its datasets must import, not only be present (a pyarrow too old, say)
            import datasets  # noqa: F401
            import trl  # noqa: F401
        except Exception as e:  # noqa: BLE001 - any failure to import means no TRL peer
            has_trl = False
            print(f"{NO_TRL} (TRL is installed but does not import: {type(e).__name__}: {e})",
                  file=sys.stderr)  # fmt: skip
    threads = torch.get_num_threads()
    malloc = "not applied (CUDA)"
    if device == "cpu":
        malloc = set_allocator(allocator)
        # one intra-op thread: OpenMP's idle workers spin while they wait, and on a loaded machine
        # that spinning (CPU time, no work) grows with the load; one thread's CPU time is its work
        torch.set_num_threads(1)

    def one_run(dtype, reps) -> list[dict]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if not has_trl:
                return bench_plain(cfg, device=device, dtype=dtype, **reps)
            return (
                bench_dpo(cfg, device=device, dtype=dtype, **reps)
                + bench_grpo(cfg, device=device, dtype=dtype, **reps)
                + bench_grpo_generation(cfg, device=device, dtype=dtype, **reps)
            )

    rows: list[dict] = []
    try:
        strict: dict[tuple[str, str], tuple[float, float]] = {}
        if dtype != torch.float32:
            # the agreement at float32 first, on the same device, batches and seeds (one short
            # untimed round): the strict check of the same code; the timed bf16 run's own check
            # only guards against O(1) errors (TOLERANCE)
            for r in one_run(torch.float32, dict(warmup=1, rounds=1)):
                strict[(r["step"], r["trainer"])] = (r["loss_gap"], r["grad_gap"])
        for run in range(1, runs + 1):
            if runs > 1:
                print(f"bench llm: run {run} of {runs} (load {_load():.1f})", file=sys.stderr)
            for r in one_run(dtype, reps):
                gaps = strict.get((r["step"], r["trainer"]))
                if gaps is not None:
                    r["float32_loss_gap"], r["float32_grad_gap"] = gaps
                rows.append(dict(r, run=run, allocator=malloc))
    finally:
        torch.set_num_threads(threads)
    return rows


def _spread(values: list[float]) -> float:
    """max / min - 1 of positive values (nan if any is nan or not positive)."""
    if not values or any(not (v > 0) for v in values):
        return float("nan")
    return max(values) / min(values) - 1


def reproducibility(rows: list[dict], limit: float = SPREAD_LIMIT) -> list[dict]:
    """Per (step, trainer) across the runs of :func:`bench_llm`: every run's ratio to TRL and to
    plain PyTorch, their spread (max / min - 1), the spread on every clock of ``CLOCKS`` (to choose
    the clock by measurement), the spread of the absolute time (load-dependent), and ``flag``
    when a ratio's spread on the row's clock exceeds ``limit``."""
    keys = list(dict.fromkeys((r["step"], r["trainer"]) for r in rows))
    out = []
    for step, trainer in keys:
        mine = sorted((r for r in rows if (r["step"], r["trainer"]) == (step, trainer)),
                      key=lambda r: r.get("run", 1))  # fmt: skip
        entry: dict[str, Any] = {"step": step, "trainer": trainer, "runs": len(mine),
                                 "clock": mine[0]["clock"]}  # fmt: skip
        flagged = []
        for peer in ("trl", "plain"):
            values = [r[f"ratio_vs_{peer}"] for r in mine]
            if all(v != v for v in values) or all(v == 1 for v in values):
                continue  # no such peer, or the peer's own row
            entry[f"ratio_vs_{peer}"] = values
            entry[f"spread_vs_{peer}"] = _spread(values)
            entry[f"spread_vs_{peer}_by_clock"] = {
                c: _spread([r[f"ratio_vs_{peer}_by_clock"][c] for r in mine]) for c in CLOCKS
            }
            if entry[f"spread_vs_{peer}"] > limit:
                flagged.append(peer)
        entry["ms_median"] = [r["ms_median"] for r in mine]
        entry["faults_per_step"] = [r.get("faults_per_step", float("nan")) for r in mine]
        entry["spread_ms"] = _spread(entry["ms_median"])
        entry["load"] = [(r["load_1min_start"], r["load_1min"]) for r in mine]
        entry["flag"] = flagged
        out.append(entry)
    return out


def format_reproducibility(entries: list[dict], limit: float = SPREAD_LIMIT) -> str:
    """The table of :func:`reproducibility`, and the worst spread on each clock."""
    from theorylab.table import from_dicts

    def runs(values) -> str:
        return " / ".join(f"{v:.2f}" for v in values) if values else ""

    def pct(x) -> str:
        return "" if x is None or x != x else f"{100 * x:.1f}%"

    table = from_dicts(
        [
            {
                "step": e["step"],
                "trainer": e["trainer"],
                "ratio vs TRL (runs)": runs(e.get("ratio_vs_trl")),
                "spread (TRL)": pct(e.get("spread_vs_trl")),
                "ratio vs plain (runs)": runs(e.get("ratio_vs_plain")),
                "spread (plain)": pct(e.get("spread_vs_plain")),
                "ms/step (runs, load-dependent)": " / ".join(f"{v:.1f}" for v in e["ms_median"]),
                "spread (ms)": pct(e["spread_ms"]),
                "faults/step (runs)": " / ".join(f"{v:.0f}" for v in e["faults_per_step"]),
                "flag": f"> {100 * limit:.0f}%" if e["flag"] else "",
            }
            for e in entries
        ]
    )
    worst = {
        c: max((e[f"spread_vs_{p}_by_clock"][c] for e in entries for p in ("trl", "plain")
                if f"spread_vs_{p}_by_clock" in e), default=float("nan"))
        for c in CLOCKS
    }  # fmt: skip
    flagged = sum(bool(e["flag"]) for e in entries)
    lines = [
        table,
        f"spread = max / min - 1 across {entries[0]['runs'] if entries else 0} runs of the "
        f"ratios (medians of per-round paired ratios on {entries[0]['clock'] if entries else ''}); "
        f"{flagged} of {len(entries)} rows over {100 * limit:.0f}%.",
        "worst ratio spread by clock: " + ", ".join(f"{c} {pct(v)}" for c, v in worst.items()),
    ]
    return "\n".join(lines)


def format_table(rows: list[dict]) -> str:
    from theorylab.table import from_dicts

    if not rows:
        return "(no rows: transformers is not installed)"
    peers = sorted({r.get("peer", "TRL") for r in rows})
    notes = [
        "ms/step: CPU time of the calling thread (time.thread_time; torch_threads in the JSON: 1 "
        "on CPU; wall clock after synchronising on a GPU) per step, median [min, max] over the "
        "rounds, load-dependent; wall: the median wall-clock time; rounds x k: interleaved rounds "
        "(order shuffled per round), k steps per timed sample; ratio vs TRL / plain: the median "
        "over rounds of that trainer's time over this row's in the same round; load: the 1-minute "
        "load average when the timing began and ended; faults/step: minor page faults per step "
        "(median over the rounds)."
    ]
    settings = sorted({r.get("allocator", "") for r in rows} - {""})
    if settings:
        notes.append("C allocator: " + "; ".join(settings) + " (theorylab.bench.allocator).")
    if "TRL" not in peers:
        notes.append(
            "TRL is not installed: the peer is plain PyTorch (one padded forward, log_softmax, "
            "the paper's loss); row (c), GRPO with TRL's generation loop, did not run."
        )

    def ratio(x: float) -> str:
        return "" if x != x else f"{x:.2f}"

    table = from_dicts(
        [
            {
                **({"run": str(r["run"])} if len({x.get("run", 1) for x in rows}) > 1 else {}),
                "step": r["step"],
                "trainer": r["trainer"],
                "model": r["model"],
                "device/dtype": f"{r['device']}/{r['dtype']}",
                "tokens": str(r["batch"]),
                "clock, rounds x k": f"{r['clock']} {r['rounds']}x{r['steps_per_sample']}",
                "ms/step median [min, max]": f"{r['ms_median']:.1f} [{r['ms_min']:.1f}, "
                f"{r['ms_max']:.1f}]",
                "wall ms": f"{r['wall_ms_median']:.1f}",
                "tokens/s": f"{r['tokens_per_s']:.0f}",
                "ratio vs TRL": ratio(r["ratio_vs_trl"]),
                "ratio vs plain": ratio(r["ratio_vs_plain"]),
                "faults/step": f"{r.get('faults_per_step', float('nan')):.0f}",
                "load": f"{r['load_1min_start']:.1f}-{r['load_1min']:.1f}",
                "loss (same batch)": f"{r['loss']:.7f}",
                "|loss gap|": f"{r['loss_gap']:.1e}",
                "max |grad gap|": f"{r['grad_gap']:.1e}",
            }
            for r in rows
        ]
    )
    out = [table, *notes]
    if len({r.get("run", 1) for r in rows}) > 1:
        out += ["", "Reproducibility across runs in one sitting:",
                format_reproducibility(reproducibility(rows))]  # fmt: skip
    return "\n".join(out)
