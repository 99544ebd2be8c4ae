"""Train a causal transformer on a token-tree task with a registered loss, measured exactly.

One readable loop (CleanRL-style, but importable): :func:`train` builds the model, a frozen copy of
it as the reference, and the loss (``make_loss("grpo:beta=0.04")``); every step it

* online losses (GRPO family: grpo, dr-grpo, cvar-grpo, rloo, ppo-clip) -- samples a group of G
  responses per prompt from the current model, draws their rewards from the task, computes the
  policy's and the reference's per-token log-probabilities and calls the loss;
* preference losses (DPO family: dpo, ipo, rpo, vpo, xpo, chipo) -- ``preference="exact"``: the
  exact expected loss over *every* ordered pair (x, y_w, y_l), pairs drawn from ref x ref and
  labelled by Bradley-Terry P(y_w > y_l) = sigmoid(r(y_w) - r(y_l)) (the pairs and weights of the
  tabular twin, ``algorithms/deep/twins.py``), from the model's full sequence table;
  ``preference="sampled"``: ``pairs_per_prompt`` such pairs sampled afresh each step, scored by
  forward passes on the chosen and the rejected sequences (the usual DPO step);

then takes one optimiser step (Adam, gradient norm clipped). Every ``eval_every`` steps the model's
full log-probability table over the task's responses is computed (one forward pass on the
P x V^(L-1) longest prefixes gives every conditional of the prefix tree) and the task's exact
metrics are recorded: accuracy, expected reward, pass@k, KL(pi || pi_ref) and KL(pi || pi*_beta).

**Tokens.** Response symbols are token ids 0..V-1; prompt x is token id V + x; a sequence is
``[V + x, y_1, ..., y_L]``. The policy is the model's softmax restricted to the V symbol tokens
(constrained decoding to the task's alphabet), so a model with a large vocabulary defines a proper
distribution over the V^L responses; the model needs at least V + P token ids.

**The exact target.** The reference is the model at initialisation (frozen), as in RLHF, so the
optimum the KL-regularised losses target is pi*_beta(y|x) ∝ pi_0(y|x) exp(r(x,y)/beta) with pi_0
the *initial model's* table: it is computed exactly per seed by enumeration
(:meth:`TreeTask.optimum_by_enumeration` on the task with the initial model as reference).
beta is the loss's ``beta`` (``tau`` for IPO) unless ``target_beta`` is given (needed when the
loss's beta is 0). DPO's population minimiser with these labels is exactly pi*_beta (Rafailov et
al. 2023, eq. (4)-(7)); GRPO with the KL in the loss converges elsewhere (the tabular twins'
``fixed_points``), which the KL metric shows.

Deviations from TRL/verl's trainers, and why: one optimiser step per sampled batch (on-policy,
``old_logp = None``; no PPO epochs), no dropout (the evaluated policy is the trained one), no KV
cache in sampling (responses are a few tokens). The code is device-agnostic (``device="cuda"``
runs on a GPU; only CPU was tested here).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import inspect
import time
from typing import Any

import numpy as np
import torch

from theorylab.algorithms.deep import distributed
from theorylab.algorithms.deep.c_rlft import draw_class_tagged
from theorylab.algorithms.deep.groups import group_advantages
from theorylab.algorithms.deep.laser import response_and_token_logprobs
from theorylab.algorithms.deep.lm_training_state import (
    LMTrainingState,
    ScaleOptions,
    TrainingConfigError,
    accumulate,
    autocast,
    check_tensorboard,
    checkpoint_after_step,
    open_writer,
    optimizer_step,
    per_seed_folder,
    resume_or_start,
    steps_of_this_call,
)
from theorylab.algorithms.deep.logprobs import token_logprobs
from theorylab.algorithms.deep.lora import apply_lora
from theorylab.algorithms.deep.masking import InvalidBatchError
from theorylab.algorithms.deep.models import make_model, n_parameters, resolve_device
from theorylab.algorithms.deep.policy_gradient_losses import check_cvar_group_size
from theorylab.algorithms.deep.registry import load_losses, loss_parameters, make_loss
from theorylab.algorithms.deep.regression_losses import log_mean_exp_value, tbrm_root_values
from theorylab.algorithms.deep.rover_loss import response_and_mean_logprobs
from theorylab.algorithms.deep.transformer_registrations import (
    BRANCHED_LOSSES,
    OFFLINE_DATA_LOSSES,
    ONLINE_LOSSES,
    PREFERENCE_LOSSES,
)
from theorylab.mdps.token_tree import TreeTask
from theorylab.registry import parse_spec
from theorylab.results.training import TrainingResult
from theorylab.seeding import seed_indices


# --------------------------------------------------------------------------- tokens and tables
def sequence_ids(task: TreeTask, prompts: torch.Tensor, responses: torch.Tensor):
    """``[V + x, y_1..y_L]`` (n, L + 1) from prompts (n,) and response tokens (n, L)."""
    return torch.cat([(task.V + prompts)[:, None], responses], dim=1)


def deepest_prefixes(task: TreeTask) -> np.ndarray:
    """(R, L-1) the distinct length L-1 prefixes of the L-token responses, sorted: every node of
    the tree is a prefix of one of them (``tokentree``: all V^(L-1) prefixes; ``tokentree-eos``:
    the (V-1)^(L-1) EOS-free ones)."""
    full = task.tokens[task.token_mask.sum(axis=1) == task.L, : task.L - 1]
    return np.unique(full, axis=0)


def node_positions(task: TreeTask) -> tuple[np.ndarray, np.ndarray]:
    """(row, position), both (N,): node h's conditional is the model's output at ``position``
    (its depth) of the :func:`deepest_prefixes` row ``row`` that extends it."""
    at = {}
    for r, row in enumerate(deepest_prefixes(task)):
        for t in range(task.L):
            at.setdefault(tuple(row[:t]), (r, t))
    node_row = np.zeros(task.n_nodes, dtype=np.int64)
    node_pos = np.zeros(task.n_nodes, dtype=np.int64)
    lengths = task.token_mask.sum(axis=1).astype(np.int64)
    for y in range(task.n_responses):
        for t in range(lengths[y]):
            node_row[task.token_nodes[y, t]], node_pos[task.token_nodes[y, t]] = at[
                tuple(task.tokens[y, :t])
            ]
    return node_row, node_pos


def prefix_inputs(task: TreeTask, device) -> torch.Tensor:
    """Every prompt followed by every deepest prefix: (P * R, L) token ids (R: the number of
    :func:`deepest_prefixes`; V^(L-1) on ``tokentree``)."""
    prefixes = torch.as_tensor(deepest_prefixes(task), device=device)  # (R, L-1)
    R = prefixes.shape[0]
    prompts = torch.arange(task.n_prompts, device=device).repeat_interleave(R)
    return sequence_ids(task, prompts, prefixes.repeat(task.n_prompts, 1))


def conditional_table(
    model, task: TreeTask, inputs: torch.Tensor, dtype=torch.float32
) -> torch.Tensor:
    """log pi(a | x, h) for every prompt, node and symbol: (p, N, V), differentiable.

    inputs: :func:`prefix_inputs` (or the rows of p of its prompts). Position t of the row of a
    deepest prefix gives the conditional at its length-t prefix (:func:`node_positions`)."""
    node_row, node_pos = node_positions(task)
    R = len(deepest_prefixes(task))
    p = inputs.shape[0] // R
    logits = model(inputs)[..., : task.V].to(dtype)  # (p R, L, V)
    cond = torch.log_softmax(logits, dim=-1).reshape(p, R, task.L, task.V)
    dev = inputs.device
    return cond[:, torch.as_tensor(node_row, device=dev), torch.as_tensor(node_pos, device=dev)]


def sequence_table(
    model, task: TreeTask, inputs: torch.Tensor, dtype=torch.float32
) -> torch.Tensor:
    """log pi(y|x) for every prompt and response: (p, Y), differentiable: the sum of each
    response's conditionals over its real tokens (EOS included, padding not)."""
    return sequences_of(task, conditional_table(model, task, inputs, dtype))


def sequences_of(task: TreeTask, cond: torch.Tensor) -> torch.Tensor:
    """(p, N, V) conditional log-probabilities -> (p, Y) sequence log-probabilities (torch)."""
    dev, dtype = cond.device, cond.dtype
    nodes = torch.as_tensor(task.token_nodes, device=dev)  # (Y, L)
    tokens = torch.as_tensor(task.tokens, device=dev)
    mask = torch.as_tensor(task.token_mask, dtype=dtype, device=dev)
    return (cond[:, nodes, tokens] * mask).sum(-1)


def response_logp(model, ids: torch.Tensor, V: int) -> torch.Tensor:
    """Per-token log-probabilities (n, L) of ids[:, 1:] under the symbol-restricted policy."""
    logits = model(ids[:, :-1])[..., :V]  # (n, L, V): position t predicts token t + 1
    return token_logprobs(logits, ids[:, 1:])


@torch.no_grad()
def sample_responses(
    model, task: TreeTask, prompts: torch.Tensor, gen: torch.Generator, start=None
):
    """Autoregressive sampling of one response per prompt (n,): returns ids (n, L + 1). On a
    tree with an end-of-sequence token (``task.eos_token``) the tokens after a response's EOS
    are padding (the task's padding symbol 0); L tokens are drawn either way (the model is
    causal: the padding does not change the response's distribution). ``start`` (n, 1 + t):
    continue these prefixes (prompt and t EOS-free tokens) instead of starting at the prompt."""
    ids = (task.V + prompts)[:, None] if start is None else start
    for _ in range(task.L + 1 - ids.shape[1]):
        probs = torch.softmax(model(ids)[:, -1, : task.V].float(), dim=-1)
        nxt = torch.multinomial(probs, 1, generator=gen)
        ids = torch.cat([ids, nxt], dim=1)
    if task.eos_token is not None:
        ended = (ids[:, 1:] == task.eos_token).cumsum(dim=1) > 0  # at or after the first EOS
        after = torch.cat([torch.zeros_like(ended[:, :1]), ended[:, :-1]], dim=1)
        ids[:, 1:] = ids[:, 1:].masked_fill(after, 0)
    return ids


@torch.no_grad()
def branched_rollouts(model, task: TreeTask, prompts: torch.Tensor, gen: torch.Generator):
    """REFUEL's data (Gao et al. 2024): one roll-in y ~ pi(.|x) per prompt entry (n,) and, at
    every turn t of it (every token of y, EOS included), a second roll-out branched at the state
    h = (x, y_<t): a' ~ pi(.|h) and its continuation. Returns ids (2M, L + 1) with pair k in rows
    (2k, 2k + 1) = (the roll-in, the branch), the turn masks (2M, L) (one-hot at t) and the prompt
    of each row (2M,). Over the roll-ins, sum over the turns of a pair's loss is unbiased for the
    exact objective sum_h d(h) E_{a, a' ~ pi(.|h)} (:func:`~theorylab.algorithms.deep.
    regression_twins.refuel_objective`): the roll-in reaches h with probability d(h), and given
    that, it and the branch are independent completions from h."""
    ids = sample_responses(model, task, prompts, gen)  # (n, L + 1)
    lengths = task.token_mask[response_index(task, ids[:, 1:])].sum(axis=1).astype(np.int64)
    pairs, turns, who = [], [], []
    for t in range(task.L):
        rows = torch.as_tensor(np.flatnonzero(lengths > t), device=ids.device)
        if len(rows) == 0:
            continue
        branch = sample_responses(model, task, prompts[rows], gen, start=ids[rows, : 1 + t])
        pairs.append(torch.stack([ids[rows], branch], dim=1).reshape(-1, task.L + 1))
        turns.append(torch.full((2 * len(rows),), t, device=ids.device))
        who.append(prompts[rows].repeat_interleave(2))
    pair_ids, turn = torch.cat(pairs), torch.cat(turns)
    mask = torch.zeros(pair_ids.shape[0], task.L, device=ids.device)
    mask[torch.arange(len(turn), device=ids.device), turn] = 1.0
    return pair_ids, mask, torch.cat(who)


def response_index(task: TreeTask, responses: torch.Tensor) -> np.ndarray:
    """The index y (n,) of each response's padded tokens (n, L) in the task's table."""
    place = task.V ** np.arange(task.L - 1, -1, -1)
    code = (responses.cpu().numpy() * place).sum(axis=1)
    if task.eos_token is None:  # tokentree: the lexicographic index is the code
        return code
    lookup = np.full(task.V**task.L, -1, dtype=np.int64)
    lookup[(task.tokens * place).sum(axis=1)] = np.arange(task.n_responses)
    return lookup[code]


def draw_rewards(task: TreeTask, x: np.ndarray, y: np.ndarray, rng) -> np.ndarray:
    """A reward (n,) from each (x, y)'s finite reward distribution."""
    cum = np.cumsum(task.reward_probs[x, y], axis=-1)  # (n, K)
    k = (rng.random(len(x))[:, None] > cum).sum(axis=-1)
    k = np.minimum(k, task.reward_values.shape[-1] - 1)
    return task.reward_values[x, y, k]


def preference_pairs(task: TreeTask, ref_seq: np.ndarray):
    """Every ordered pair (x, y_w, y_l) and its probability (P Y^2,) when (a, b) ~ ref x ref is
    labelled by Bradley-Terry sigmoid(r(a) - r(b)); the weights sum to 1 (ref_seq: (P, Y))."""
    P, Y = ref_seq.shape
    x, yw, yl = (a.reshape(-1) for a in np.meshgrid(*map(np.arange, (P, Y, Y)), indexing="ij"))
    ref, r = np.exp(ref_seq), task.mean_reward
    w = 2.0 * ref[x, yw] * ref[x, yl] / (1.0 + np.exp(-(r[x, yw] - r[x, yl]))) / P
    return x, yw, yl, w


def with_reference(task: TreeTask, ref_cond: np.ndarray) -> TreeTask:
    """The task with its reference policy replaced by the conditional log-probabilities
    ``ref_cond`` (P, N, V) (:func:`conditional_table` of the initial model)."""
    cond = np.exp(ref_cond)
    return dataclasses.replace(task, ref_cond=cond / cond.sum(axis=-1, keepdims=True))


EXACT_NAMES = {"acc": "accuracy", "rew": "expected_reward", "klo": "kl_optimum",
               "klr": "kl_ref", "pk": "pass_at_k"}  # fmt: skip


# --------------------------------------------------------------------------- the loss
def loss_family(name: str, offline_data: str | None = None) -> str:
    """ "online" or "preference" for a registered loss (by its tensor arguments); "offline" for a
    loss of :data:`OFFLINE_DATA_LOSSES` given ``offline_data`` (refused without it)."""
    load_losses()
    from theorylab.algorithms.deep.registry import LOSSES

    fn = LOSSES.get(name)
    if name in OFFLINE_DATA_LOSSES:
        if offline_data is not None:
            return "offline"
        raise InvalidBatchError(
            f"loss {name!r} trains on {OFFLINE_DATA_LOSSES[name]}; the trainers sample "
            "on-policy unless given one: on a token tree pass offline_data='mixed-quality' "
            f"(theorylab train {name} tokentree-eos --offline-data mixed-quality); its exact "
            f"twin runs with tl.run('{name}-twin', 'tokentree-eos:...')"
        )
    if offline_data is not None:
        raise ValueError(
            f"offline_data applies to the losses that train on an offline dataset "
            f"({', '.join(OFFLINE_DATA_LOSSES)}), not to {name!r}, which samples on-policy"
        )
    params = tensor_arguments(fn)
    if "policy_chosen" in params:
        return "preference"
    if ("logp" in params or "logratios" in params) and (
        "rewards" in params or "advantages" in params
    ):
        return "online"
    raise InvalidBatchError(
        f"loss {name!r} is not a policy loss the trainer can run; online: "
        f"{', '.join(ONLINE_LOSSES)}; preference: {', '.join(PREFERENCE_LOSSES)}"
    )


def tensor_arguments(fn) -> list[str]:
    """The positional (tensor) arguments of a loss function."""
    sig = inspect.signature(getattr(fn, "func", fn))
    return [k for k, p in sig.parameters.items() if p.kind == p.POSITIONAL_OR_KEYWORD]


def call_loss(loss, available: dict[str, Any]) -> torch.Tensor:
    """Call ``loss`` with the tensors it names, from ``available``."""
    sig = inspect.signature(loss.func)
    kwargs = {}
    for name in tensor_arguments(loss):
        if name in available:
            kwargs[name] = available[name]
        elif sig.parameters[name].default is inspect.Parameter.empty:
            raise InvalidBatchError(f"the trainer cannot supply the loss's argument {name!r}")
    return loss(**kwargs)


def target_beta_of(spec: str, target_beta: float | None) -> float:
    if target_beta is not None:
        if not target_beta > 0:
            raise ValueError(f"target_beta must be > 0, got {target_beta}")
        return float(target_beta)
    name, _ = parse_spec(spec)
    hyper = {**loss_parameters(name), **make_loss(spec).keywords}
    beta = hyper.get("beta", hyper.get("tau"))
    if beta is None or not beta > 0:
        raise ValueError(
            f"loss {spec!r} has no beta > 0 to define pi*_beta; pass target_beta (e.g. 0.1)"
        )
    return float(beta)


# --------------------------------------------------------------------------- training
def train(
    model: str | torch.nn.Module = "tiny",
    task: str | TreeTask = "tokentree:V=4,L=3",
    loss: str = "grpo",
    *,
    steps: int = 300,
    lr: float = 1e-3,
    group_size: int = 8,
    eval_every: int = 10,
    pass_k: int = 4,
    target_beta: float | None = None,
    preference: str = "exact",
    pairs_per_prompt: int = 16,
    value_samples: int = 16,
    offline_data: str | None = None,
    max_grad_norm: float = 1.0,
    seeds: int = 1,
    seed: int = 0,
    device: str = "cpu",
    progress: bool = False,
    parallel: str = "ddp",
    precision: str = "fp32",
    micro_batches: int = 1,
    warmup_steps: int = 0,
    schedule: str = "constant",
    lora: str | None = None,
    checkpoint: str | None = None,
    checkpoint_every: int = 10,
    stop_after: int | None = None,
    tensorboard: str | None = None,
    return_states: bool = False,
) -> TrainingResult:
    """Train ``model`` on ``task`` with ``loss`` for ``steps`` steps per seed (module docstring).

    Returns a :class:`TrainingResult` with the exact metrics at steps 0, eval_every, ..., steps
    (with ``stop_after``: the steps done; with ``return_states``: and the final
    :class:`~theorylab.algorithms.deep.lm_training_state.LMTrainingState` of every seed).
    A model given as an ``nn.Module`` is deep-copied per seed (its initialisation is shared).
    Under ``torchrun`` the batch is split across the processes, ``parallel`` "ddp" or "fsdp"
    (:mod:`theorylab.algorithms.deep.distributed`); each micro-batch's chunk is split the same
    way (its prompts must divide by the number of processes).

    Scaling options (:mod:`theorylab.algorithms.deep.lm_training_state`): ``precision`` (fp32,
    bf16, fp16 on CUDA), ``micro_batches`` (gradient accumulation over prompt chunks: online and
    exact-preference losses; at most the task's number of prompts), ``warmup_steps`` and
    ``schedule``, ``lora`` (``"r=8,alpha=16"``, Hugging Face models), ``checkpoint`` (a folder:
    save every ``checkpoint_every`` steps and resume from it), ``stop_after`` (stop after that
    many steps of this call, checkpoint written), ``tensorboard`` (a folder: the loss per step
    and the exact metrics per evaluation as TensorBoard scalars).
    """
    if isinstance(task, str):
        from theorylab.mdps.registry import make as make_task

        task = make_task(task)
    if not isinstance(task, TreeTask):
        raise ValueError(
            f"the trainer runs on a token-tree task (e.g. tokentree:V=4,L=3 or "
            f"tokentree-eos:V=3,L=3), got "
            f"{type(task).__name__} {getattr(task, 'name', '')!r}"
        )
    positive = (("steps", steps, 1), ("group_size", group_size, 2), ("eval_every", eval_every, 1),
                ("pass_k", pass_k, 1), ("pairs_per_prompt", pairs_per_prompt, 1),
                ("value_samples", value_samples, 1))  # fmt: skip
    for name, v, lo in positive:
        if int(v) != v or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    if not lr >= 0:
        raise ValueError(f"lr must be >= 0, got {lr!r}")
    if preference not in ("exact", "sampled"):
        raise ValueError(f"preference must be 'exact' or 'sampled', got {preference!r}")
    loss_name, _ = parse_spec(loss)
    family = loss_family(loss_name, offline_data)
    loss_fn = make_loss(loss)
    offline = None
    if family == "offline":  # C-RLFT: the class-conditioned tree and its class-tagged data
        from theorylab.algorithms.deep.c_rlft import class_tagged_data

        offline = class_tagged_data(task, offline_data)
        task = offline.task
        if target_beta is None:  # pi*(.|x,c) = pi_c for every beta (r_c constant in a class)
            target_beta = 1.0
    if family == "online":
        check_cvar_group_size(loss_fn, group_size)
    if "rebel" == loss_name and group_size % 2:
        raise ValueError(f"rebel pairs the responses of a prompt: group_size must be even, got "
                         f"{group_size}")  # fmt: skip
    token = loss_fn.keywords.get("token", 0)
    if "z_logp" in tensor_arguments(loss_fn) and not 0 <= token < task.V:
        raise ValueError(
            f"loss {loss!r}: token={token} must be a symbol 0..{task.V - 1} of {task.name}"
        )
    beta = target_beta_of(loss, target_beta)
    dist_world = distributed.world_size()  # > 1 under torchrun: DDP (distributed.py)
    distributed.check_batch(dist_world, family, preference, task.n_prompts, pairs_per_prompt)
    if loss_name == "tbrm" and dist_world > 1:  # its root value is scored outside DDP's forward
        raise ValueError(f"tbrm trains on one process only, got {dist_world} processes")
    if family == "offline" and (dist_world > 1 or micro_batches > 1):
        raise TrainingConfigError(
            f"{loss_name} with offline_data trains on one process in one batch, got "
            f"{dist_world} processes and micro_batches = {micro_batches}"
        )
    if loss_name in BRANCHED_LOSSES and (dist_world > 1 or micro_batches > 1):
        raise TrainingConfigError(
            f"{loss_name}'s branched roll-outs train on one process in one batch, got {dist_world} "
            f"processes and micro_batches = {micro_batches}"
        )
    chunk_sizes = {len(c) for c in np.array_split(np.arange(task.n_prompts), micro_batches)}
    if dist_world > 1 and any(n % dist_world for n in chunk_sizes):
        raise TrainingConfigError(
            f"--nproc {dist_world} with micro_batches = {micro_batches}: the micro-batches of "
            f"{sorted(chunk_sizes)} prompts do not split into {dist_world} equal shards; use "
            "micro_batches dividing the prompts into chunks the processes divide"
        )
    if dist_world > 1 and checkpoint is not None and parallel == "fsdp":
        raise TrainingConfigError(
            "checkpoint applies to one process or --parallel ddp (FSDP's parameters are sharded)"
        )
    dev = resolve_device(device)
    scale = ScaleOptions(precision, micro_batches, warmup_steps, schedule, lora, checkpoint_every,
                         stop_after)  # fmt: skip
    scale.check(dev, steps, checkpoint)
    if tensorboard is not None:
        check_tensorboard()
    if micro_batches > task.n_prompts:
        raise TrainingConfigError(
            f"micro_batches = {micro_batches} exceeds the task's {task.n_prompts} prompts "
            "(a micro-batch holds whole prompts)"
        )
    if micro_batches > 1 and family == "preference" and preference == "sampled":
        raise TrainingConfigError(
            "micro_batches > 1 applies to online losses and preference='exact'; sampled "
            "preference pairs are drawn in one batch"
        )
    place = distributed.join(dev, parallel)
    dev = place.device
    indices = seed_indices(seeds)
    eval_steps = np.unique(np.r_[np.arange(0, steps + 1, eval_every), steps])
    records: dict[str, list] = {
        k: [] for k in ("acc", "rew", "klo", "klr", "pk", "loss", "oa", "or")
    }
    t0 = time.perf_counter()
    model_name = model if isinstance(model, str) else type(model).__name__
    states = []
    for i in indices:
        ss = np.random.SeedSequence(seed, spawn_key=(i,))
        torch_seed, sample_seed = (int(s) for s in ss.generate_state(2))
        rng = np.random.default_rng(ss.spawn(1)[0])
        folder = per_seed_folder(checkpoint, i, len(indices))
        fingerprint = {
            **scale.key(), "model": model_name, "task": task.name, "loss": loss, "steps": steps,
            "lr": lr, "group_size": group_size, "target_beta": beta, "preference": preference,
            "pairs_per_prompt": pairs_per_prompt, "value_samples": value_samples,
            "offline_data": offline_data, "max_grad_norm": max_grad_norm, "seed": seed,
            "seed_index": i,
            "processes": place.world, "parallel": parallel,
        }  # fmt: skip
        out = _train_one_seed(
            model, task, loss_fn, family, beta, dev, rng, torch_seed, sample_seed,
            steps=steps, lr=lr, group_size=group_size, eval_steps=eval_steps, pass_k=pass_k,
            preference=preference, pairs_per_prompt=pairs_per_prompt,
            value_samples=value_samples, max_grad_norm=max_grad_norm, offline=offline,
            branched=loss_name in BRANCHED_LOSSES,
            progress=progress and place.main, scale=scale, folder=folder,
            fingerprint=fingerprint, place=place,
            tensorboard=per_seed_folder(tensorboard, i, len(indices)) if place.main else None,
        )  # fmt: skip
        states.append(out.pop("state"))
        for k, v in out.items():
            records[k].append(v)
    eval_steps = eval_steps[eval_steps <= states[0].step]  # stop_after: the steps done
    result = TrainingResult(
        steps=eval_steps,
        accuracy=np.array(records["acc"]),
        expected_reward=np.array(records["rew"]),
        kl_optimum=np.array(records["klo"]),
        kl_ref=np.array(records["klr"]),
        pass_at_k=np.array(records["pk"]),
        loss=np.array(records["loss"]),
        optimum_accuracy=np.array(records["oa"]),
        optimum_reward=np.array(records["or"]),
        wall_seconds=time.perf_counter() - t0,
        config={
            "algorithm": loss_name,
            "loss": loss,
            "family": family,
            "model": model_name,
            "task": task.name,
            "target_beta": beta,
            "params": {
                "steps": steps,
                "lr": lr,
                "group_size": group_size,
                "eval_every": eval_every,
                "pass_k": pass_k,
                "target_beta": beta,
                "preference": preference,
                "pairs_per_prompt": pairs_per_prompt,
                "value_samples": value_samples,
                "offline_data": offline_data,
                "max_grad_norm": max_grad_norm,
                "device": str(dev),
                "processes": place.world,
                "parallel": parallel,
                **scale.key(),
            },  # fmt: skip
            "seeds": indices,
            "seed": seed,
            "versions": {"torch": torch.__version__},
        },
    )
    return (result, states) if return_states else result


def _train_one_seed(
    model_spec, task, loss_fn, family, beta, dev, rng, torch_seed, sample_seed, *,
    steps, lr, group_size, eval_steps, pass_k, preference, pairs_per_prompt, value_samples,
    max_grad_norm, progress, scale, folder, fingerprint, tensorboard, place=distributed.ONE,
    offline=None, branched=False,
) -> dict[str, Any]:  # fmt: skip
    P, V = task.n_prompts, task.V
    what = f"the task ({V} symbol tokens + {P} prompt tokens)"
    if isinstance(model_spec, torch.nn.Module):
        policy = make_model(copy.deepcopy(model_spec), V + P, device=dev, what=what)
    else:
        policy = make_model(model_spec, V + P, max_len=task.L + 1, seed=torch_seed, device=dev,
                            what=what)  # fmt: skip
    policy.eval()  # no dropout: the evaluated policy is the trained one
    reference = copy.deepcopy(policy).requires_grad_(False)
    if scale.lora is not None:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(torch_seed)
            apply_lora(policy, scale.lora)
        policy.eval()
    learner = place.wrap(policy)  # gradient forwards (DDP / FSDP over the ranks when world > 1)
    inputs = prefix_inputs(task, dev)
    with torch.no_grad():
        ref_cond = conditional_table(reference, task, inputs, torch.float64)  # (P, N, V)
        ref_seq_t = sequences_of(task, ref_cond)
    ref_seq = ref_seq_t.cpu().numpy()
    # the target's reference: the initial model (RLHF); the data's sources pi_c (C-RLFT)
    exact_task = task if offline is not None else with_reference(task, ref_cond.cpu().numpy())
    optimum = exact_task.optimum_by_enumeration(beta)
    state = LMTrainingState.create(
        policy, lr=lr, device=dev, precision=scale.precision, schedule=scale.schedule,
        warmup_steps=scale.warmup_steps, total_steps=steps, sample_seed=sample_seed, rng=rng,
    )  # fmt: skip
    wanted = set(tensor_arguments(loss_fn))
    sig = inspect.signature(loss_fn.func).parameters
    loss_beta = loss_fn.keywords.get("beta", getattr(sig.get("beta"), "default", None))
    z_token = loss_fn.keywords.get("token", getattr(sig.get("token"), "default", 0))
    if "v_star" in wanted:  # A*-PO's stage 1: V* from value_samples reference responses
        # before resume_or_start: a resumed run draws the same V* and then restores the generators
        v_star = stage_one_values(
            reference, task, loss_beta, value_samples, state.generator, state.rng, dev
        )
    k = scale.micro_batches
    chunks = np.array_split(np.arange(P), k)  # prompts of each micro-batch
    if family == "preference" and preference == "exact":
        pairs = preference_pairs(task, ref_seq)
        ref_seq_f = ref_seq_t.to(torch.float32)
        R = len(deepest_prefixes(task))
        exact_batches = []
        for c in chunks:
            keep = (pairs[0] >= c[0]) & (pairs[0] <= c[-1])
            local = [torch.as_tensor(a[keep], device=dev) for a in pairs]
            local[0] = local[0] - int(c[0])
            exact_batches.append((inputs[c[0] * R : (c[-1] + 1) * R], local,
                                  ref_seq_f[c[0] : c[-1] + 1]))  # fmt: skip
    resumed = resume_or_start(
        state, folder, fingerprint, ("acc", "rew", "klo", "klr", "pk", "loss")
    )
    metrics = state.metrics
    writer = open_writer(tensorboard, state.step if resumed else None)

    def evaluate() -> None:  # the fp32 model's exact table (also after bf16 training)
        with torch.no_grad():
            seq = sequence_table(policy, task, inputs, torch.float64).cpu().numpy()
        metrics["acc"].append(exact_task.accuracy(seq).mean())
        metrics["rew"].append(exact_task.expected_reward(seq).mean())
        metrics["klo"].append(exact_task.kl(seq, optimum).mean())
        metrics["klr"].append(exact_task.kl(seq, ref_seq).mean())
        metrics["pk"].append(exact_task.pass_at_k(seq, pass_k).mean())
        if writer is not None:
            for name in ("acc", "rew", "klo", "klr", "pk"):
                writer.add_scalar(f"exact/{EXACT_NAMES[name]}", metrics[name][-1], state.step)

    def online_loss(model, batch) -> torch.Tensor:
        ids, rewards, prompts, mask = batch  # this rank's whole groups of one micro-batch
        extra = {}
        if "z_logp" in wanted:  # LaSeR: the pre-specified token's log-probability after y_t
            logp, z_logp = response_and_token_logprobs(model, ids, V, z_token)
            with torch.no_grad():
                ref_logp, ref_z = response_and_token_logprobs(reference, ids, V, z_token)
            extra = {"z_logp": z_logp, "ref_z_logp": ref_z}
        elif "mean_logp" in wanted:  # ROVER: the vocabulary mean of log pi(.|s_t) too
            logp, mean_logp = response_and_mean_logprobs(model, ids, V)
            with torch.no_grad():
                ref_logp = response_logp(reference, ids, V)
            extra = {"mean_logp": mean_logp, "old_mean_logp": None}  # on-policy: old = theta
        else:
            logp = response_logp(model, ids, V)  # (n, L)
            with torch.no_grad():
                ref_logp = response_logp(reference, ids, V)
        group = prompts - prompts[0]  # group ids 0.. on this shard
        available = {
            "logp": logp, "old_logp": None, "ref_logp": ref_logp,
            "mask": mask, "rewards": rewards, "group": group,
            "advantages": group_advantages(rewards, group, "std"), **extra,
        }  # fmt: skip
        if "logratios" in wanted:  # EXO: the group's K = G responses, (n,) -> (n / G, G)
            available["logratios"] = ((logp - ref_logp) * mask).sum(-1).reshape(-1, group_size)
            available["rewards"] = rewards.reshape(-1, group_size)
        if branched:  # each roll-in's pairs summed, averaged over the P G roll-ins
            available["weights"] = torch.full((len(ids) // 2,), 1.0 / (P * group_size),
                                              device=dev)  # fmt: skip
        if "v_star" in wanted:
            available["v_star"] = v_star[prompts]
        if "root_values" in wanted:  # TBRM: V_theta(s_1) from the first-token logits
            root_ids = (task.V + prompts)[:, None]
            with torch.no_grad():
                ref_root = reference(root_ids)[:, -1, :V]
            available["root_values"] = tbrm_root_values(
                model(root_ids)[:, -1, :V], ref_root, loss_beta
            )
        return call_loss(loss_fn, available)

    def offline_loss(model, _batch) -> torch.Tensor:  # group_size examples per row (x, c)
        rows, y, r, w = draw_class_tagged(offline, group_size, rng)
        ids = sequence_ids(task, torch.as_tensor(rows, device=dev),
                           torch.as_tensor(task.tokens[y], device=dev))  # fmt: skip
        available = {
            "logp": response_logp(model, ids, V),
            "mask": torch.as_tensor(task.token_mask[y], dtype=torch.float32, device=dev),
            "rewards": torch.as_tensor(r, dtype=torch.float32, device=dev),
            "weights": torch.as_tensor(w, dtype=torch.float32, device=dev),
        }
        return call_loss(loss_fn, available)

    def exact_loss(model, batch) -> torch.Tensor:
        chunk_inputs, chunk_pairs, chunk_ref = batch
        return call_loss(loss_fn, _exact_pairs(model, task, chunk_inputs, chunk_pairs, chunk_ref))

    def sampled_loss(model, _batch) -> torch.Tensor:
        return call_loss(
            loss_fn,
            _sampled_pairs(model, reference, task, ref_seq, pairs_per_prompt, rng, dev, place),
        )

    if not resumed:
        evaluate()
    for _ in steps_of_this_call(state, steps, scale.stop_after):
        total = 0.0
        if family == "online":
            prompts = torch.arange(P, device=dev).repeat_interleave(group_size)  # (P G,)
            with autocast(dev, scale.precision):
                if branched:  # REFUEL: pairs branched at every turn of each roll-in
                    ids, mask, prompts = branched_rollouts(policy, task, prompts, state.generator)
                else:
                    ids = sample_responses(policy, task, prompts, state.generator)  # (P G, L+1)
            x, y = prompts.cpu().numpy(), response_index(task, ids[:, 1:])
            r = draw_rewards(task, x, y, rng)
            rewards = torch.as_tensor(r, dtype=torch.float32, device=dev)
            if branched:  # one batch, one process (train's checks)
                total = accumulate(state, online_loss, (ids, rewards, prompts, mask), 1.0,
                                   model=learner)  # fmt: skip
            mask = torch.as_tensor(task.token_mask[y], dtype=torch.float32, device=dev)
            for j, c in enumerate(chunks if not branched else ()):
                rows = np.arange(int(c[0]) * group_size, (int(c[-1]) + 1) * group_size)
                rows = torch.as_tensor(rows[place.rows(len(rows))], device=dev)  # rank's groups
                batch = (ids[rows], rewards[rows], prompts[rows], mask[rows])
                with gradient_sync(learner, j == k - 1):
                    loss = accumulate(state, online_loss, batch, len(c) / P, model=learner)
                total += loss * len(c) / P
        elif family == "offline":  # one batch, one process (train's checks)
            total = accumulate(state, offline_loss, None, 1.0, model=learner)
        elif preference == "exact":  # pair weights carry the normalisation: chunk weights 1
            for batch in exact_batches:  # one process (distributed.check_batch)
                total += accumulate(state, exact_loss, batch, 1.0)
        else:
            total = accumulate(state, sampled_loss, None, 1.0, model=learner)
        total = place.mean(total)
        optimizer_step(state, max_grad_norm)
        metrics["loss"].append(total)
        if writer is not None:
            writer.add_scalar("train/loss", total, state.step)
            writer.add_scalar("train/lr", state.lr, state.step)
        if state.step in eval_steps:
            evaluate()
            if progress:
                print(f"step {state.step}: accuracy {metrics['acc'][-1]:.4f} "
                      f"KL(pi||pi*) {metrics['klo'][-1]:.4g}")  # fmt: skip
        if place.main:  # every rank holds the same state (DDP); rank 0 writes it
            checkpoint_after_step(state, folder, fingerprint, scale.checkpoint_every, steps,
                                  scale.stop_after)  # fmt: skip
    if writer is not None:
        writer.close()
    return {
        **{k: np.array(v) for k, v in metrics.items() if k != "loss"},
        "loss": np.array(metrics["loss"]),
        "oa": exact_task.accuracy(optimum).mean(),
        "or": exact_task.expected_reward(optimum).mean(),
        "state": state,
    }


def gradient_sync(learner: torch.nn.Module, sync: bool):
    """DDP's ``no_sync()`` for a micro-batch whose gradients are not yet all-reduced (all but the
    last: their gradients add up locally and the last backward reduces the sum); a no-op context
    for one process and FSDP (whose backward reduces every micro-batch: the same sum)."""
    no_sync = getattr(learner, "no_sync", None)
    return contextlib.nullcontext() if sync or no_sync is None else no_sync()


@torch.no_grad()
def stage_one_values(reference, task, beta, n, gen, rng, dev) -> torch.Tensor:
    """A*-PO's stage 1 (Brantley et al. 2025): n responses per prompt sampled from the reference,
    their rewards drawn, V^(x) = beta log-mean-exp(r / beta) (P,)."""
    prompts = torch.arange(task.n_prompts, device=dev).repeat_interleave(n)
    ids = sample_responses(reference, task, prompts, gen)
    r = draw_rewards(task, prompts.cpu().numpy(), response_index(task, ids[:, 1:]), rng)
    r = torch.as_tensor(r, dtype=torch.float64).reshape(task.n_prompts, n)
    return log_mean_exp_value(r, beta).to(torch.float32).to(dev)


def _exact_pairs(policy, task, inputs, pairs, ref_seq_f) -> dict[str, torch.Tensor]:
    """The preference losses' tensors for their exact expectation: every ordered pair with its
    probability (``pairs``: :func:`preference_pairs` on the device), RPO's baseline = the chosen
    responses (Liu et al. 2024, Remark 5.4), VPO's calibration and XPO's reference samples =
    every response weighted by pi_ref(y|x) / P."""
    x, yw, yl, w = pairs
    seq = sequence_table(policy, task, inputs)  # (p, Y) with gradient: p prompts of a chunk
    flat_w = (torch.exp(ref_seq_f) / task.n_prompts).reshape(-1)
    return {
        "policy_chosen": seq[x, yw], "policy_rejected": seq[x, yl],
        "ref_chosen": ref_seq_f[x, yw], "ref_rejected": ref_seq_f[x, yl],
        "weights": w.to(torch.float32),
        "baseline_logp": seq[x, yw], "baseline_weights": w.to(torch.float32),
        "calibration_logp": seq.reshape(-1), "calibration_weights": flat_w,
        "ref_sample_logp": seq.reshape(-1), "ref_sample_weights": flat_w,
    }  # fmt: skip


def _sampled_pairs(
    policy, reference, task, ref_seq, n, rng, dev, place=distributed.ONE
) -> dict[str, torch.Tensor]:
    """n Bradley-Terry-labelled pairs per prompt from ref x ref, scored by forward passes; RPO's
    baseline samples are the chosen responses (as in :func:`_exact_pairs`), and VPO's calibration
    / XPO's reference samples are n fresh responses per prompt from pi_ref (Xie et al. 2025,
    Alg. 1: y~ ~ pi_ref; Cen et al. 2025: y ~ pi_cal = pi_ref here), so that the sampled loss
    is an unbiased estimate of the exact mode's objective. Every rank draws all P n pairs and
    scores its shard (``place``, :mod:`distributed`)."""
    P, Y = ref_seq.shape
    probs = np.exp(ref_seq)
    probs /= probs.sum(axis=1, keepdims=True)
    x = np.repeat(np.arange(P), n)
    cum = np.cumsum(probs[x], axis=1)  # (P n, Y) inverse-CDF sampling of a and b
    a, b, c = ((rng.random(len(x))[:, None] > cum).sum(axis=1) for _ in range(3))
    a, b, c = np.minimum(a, Y - 1), np.minimum(b, Y - 1), np.minimum(c, Y - 1)
    r = task.mean_reward
    a_wins = rng.random(len(x)) < 1.0 / (1.0 + np.exp(-(r[x, a] - r[x, b])))
    yw, yl = np.where(a_wins, a, b), np.where(a_wins, b, a)
    mine = place.rows(len(x))
    x, yw, yl, c = x[mine], yw[mine], yl[mine], c[mine]
    xt = torch.as_tensor(np.r_[x, x, x], device=dev)
    resp = torch.as_tensor(task.tokens[np.r_[yw, yl, c]], device=dev)
    ids = sequence_ids(task, xt, resp)  # (3 n P, L + 1): chosen, rejected, ref samples
    mask = torch.as_tensor(task.token_mask[np.r_[yw, yl, c]], dtype=torch.float32, device=dev)
    seq = (response_logp(policy, ids, task.V) * mask).sum(-1)  # padding after EOS left out
    m = len(x)
    with torch.no_grad():
        ref = (response_logp(reference, ids[: 2 * m], task.V) * mask[: 2 * m]).sum(-1)
    return {
        "policy_chosen": seq[:m], "policy_rejected": seq[m : 2 * m],
        "ref_chosen": ref[:m], "ref_rejected": ref[m:],
        "baseline_logp": seq[:m],
        "calibration_logp": seq[2 * m :], "ref_sample_logp": seq[2 * m :],
    }  # fmt: skip


__all__ = ["ONLINE_LOSSES", "PREFERENCE_LOSSES", "n_parameters", "train"]
