"""Train a Hugging Face causal LM with a registered loss on a prompt dataset with a reward.

``theorylab train grpo arithmetic --model gpt2-config:n_layer=6,n_embd=512,n_head=8`` /
``train_prompts("gpt2-config:...", "arithmetic", "grpo")``. One optimiser step:

1. draw ``prompts_per_step`` training prompts without replacement (numpy generator of the state);
2. *online losses* (GRPO family): sample ``group_size`` completions of each prompt from the policy
   (:func:`~theorylab.algorithms.deep.sampling.sample_groups`, KV cache, the state's
   ``torch.Generator``), score them with the reward (exact match against the answer:
   :mod:`~theorylab.algorithms.deep.verifiable_rewards`; or a learned reward model:
   :mod:`~theorylab.algorithms.deep.reward_model`); *preference losses* (DPO family): sample two
   completions per prompt from the policy and label them by Bradley-Terry with the reward
   (online DPO: Guo et al. 2024, "Direct Language Model Alignment from Online AI Feedback",
   arXiv 2402.04792, Algorithm 1, with the annotator replaced by the reward);
3. split the prompts into ``micro_batches`` chunks (and each chunk into runs of equal prompt
   length: the sampler takes unpadded prompts), and for each sub-batch of n_i prompts call
   :func:`~theorylab.algorithms.deep.lm_training_state.accumulate` with weight n_i / n (a loss
   that averages over all tokens, ``aggregation="token-mean"`` as PPO-clip's default: the
   sub-batch's completion tokens / the step's): forward,
   the loss (:func:`~theorylab.algorithms.deep.steps.group_step` /
   :func:`~theorylab.algorithms.deep.steps.preference_step` with ``step=False``), backward;
4. :func:`~theorylab.algorithms.deep.lm_training_state.optimizer_step` (clip, Adam, schedule).

Sampling for a step happens before any backward of that step, so the micro-batches of a step see
the same samples as one big batch: the accumulated gradient equals the big batch's for row-mean
and token-mean losses (tests/test_lm_training.py measures the gap).

Every ``eval_every`` steps the held-out prompts (the last ``eval_prompts`` of a seeded
permutation of the dataset, never trained on) are decoded greedily and scored by exact match
(needs answers; else the mean reward of the greedy completion). Everything runs under the
``precision``'s autocast (sampling and evaluation included). ``checkpoint=DIR`` saves the
:class:`~theorylab.algorithms.deep.lm_training_state.LMTrainingState` every
``checkpoint_every`` steps and at the end, and a run started with a folder that holds a
checkpoint of the same configuration resumes from it; ``stop_after=k`` stops after k steps of
this call (a time-limited job; the checkpoint is written). ``tensorboard=DIR`` writes the
per-step scalars with ``torch.utils.tensorboard`` (the ``tensorboard`` package), purging events
after the resumed step. ``gradient_checkpointing`` recomputes activations in the backward pass
(``transformers``' ``gradient_checkpointing_enable``). ``lora="r=8,alpha=16"`` trains LoRA
adapters (Hu et al. 2021) through ``peft`` on the model's default target modules; the reference is
the frozen initial model.

Every dropout probability is set to 0 (the trained policy is the sampled and evaluated one).

**Several processes** (``theorylab train grpo arithmetic --nproc 2``, or under ``torchrun``):
as the token-tree trainer (:mod:`~theorylab.algorithms.deep.distributed`), every rank draws the
*whole* step from the same seeds (prompts, samples, rewards, Bradley-Terry labels: the same streams
as one process, on the replicated model) and keeps its contiguous shard of whole prompt groups of
each micro-batch (``prompts_per_step / micro_batches`` must be divisible by the number of
processes: :func:`check_prompt_shards`); the gradient forwards go through the DDP-wrapped policy
with weight (prompts of the sub-batch) / (prompts of the rank), ``no_sync`` on every backward of
the step but the last, so DDP's average over the ranks is the 1-process gradient. The per-step
loss is all-reduced; the reward, gradient norm and held-out accuracy are the same on every rank
(every rank scores the whole batch and evaluates the same replicated model). Rank 0 alone prints,
writes TensorBoard and the checkpoint (the unwrapped policy's, so a checkpoint resumes on any
number of processes). Measured (``tests/test_deep_distributed.py``, 2 gloo processes against 1,
1-layer GPT-2 on 2-digit arithmetic, 4 steps): largest gap over per-step loss, reward, gradient
norm and held-out accuracy 2.2e-9 for GRPO with 2 micro-batches, 6.0e-8 for online DPO; without
the all-reduce (the control) the gap is 0.6 (the ranks sample other completions).

**Losses.** The trainer passes the GRPO family the tensors it names from ``(logp, old_logp,
ref_logp, mask, rewards, group, advantages)`` (``advantages``: GRPO's std-normalised group
advantages, as the token-tree trainer's; so ``grpo``, ``dr-grpo``, ``cvar-grpo``, ``rebel``,
``rloo`` and ``ppo-clip`` run on prompts), and the DPO family ``(policy_chosen,
policy_rejected, ref_chosen, ref_rejected)`` by position; a loss that takes other tensors (A*-PO's
``v_star``, TBRM's ``root_values``, EXO's ``logratios``, VPO's calibration samples, ...) is
refused in one line before any work (:func:`check_prompt_loss`); they run on token trees.
"""

from __future__ import annotations

import copy
import inspect
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

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
from theorylab.algorithms.deep.lora import apply_lora, zero_dropout
from theorylab.algorithms.deep.models import ModelSpecError, make_model, resolve_device
from theorylab.algorithms.deep.prompt_data import PromptDataset, load_prompts
from theorylab.algorithms.deep.prompt_tokenizers import load_tokenizer
from theorylab.algorithms.deep.registry import make_loss
from theorylab.algorithms.deep.sampling import sample_groups
from theorylab.algorithms.deep.steps import group_step, preference_step
from theorylab.algorithms.deep.verifiable_rewards import REWARDS, exact_match_scores
from theorylab.registry import parse_spec
from theorylab.results.prompt_training import PromptTrainingResult


# --------------------------------------------------------------------------- options
@dataclass(frozen=True)
class PromptTrainingOptions:
    """The options of :func:`train_prompts` that shape the optimisation (checkpoint key)."""

    steps: int = 100
    lr: float = 1e-4
    prompts_per_step: int = 8
    group_size: int = 8
    micro_batches: int = 1
    max_new_tokens: int | None = None
    warmup_steps: int = 0
    schedule: str = "constant"
    precision: str = "fp32"
    lora: str | None = None
    max_grad_norm: float = 1.0
    eval_every: int = 10
    eval_prompts: int = 64
    temperature: float = 1.0

    def check(self) -> None:
        """One-line errors for the options of prompts (the scaling options: ScaleOptions)."""
        ints = (("steps", self.steps, 1), ("prompts_per_step", self.prompts_per_step, 1),
                ("group_size", self.group_size, 2), ("micro_batches", self.micro_batches, 1),
                ("eval_every", self.eval_every, 1),
                ("eval_prompts", self.eval_prompts, 1))  # fmt: skip
        for name, v, lo in ints:
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < lo:
                raise TrainingConfigError(f"{name} must be an integer >= {lo}, got {v!r}")
        if self.prompts_per_step % self.micro_batches:
            raise TrainingConfigError(
                f"micro_batches = {self.micro_batches} must divide prompts_per_step = "
                f"{self.prompts_per_step} (each micro-batch holds whole prompt groups)"
            )
        if self.max_new_tokens is not None and (
            int(self.max_new_tokens) != self.max_new_tokens or self.max_new_tokens < 1
        ):
            raise TrainingConfigError(
                f"max_new_tokens must be an integer >= 1, got {self.max_new_tokens!r}"
            )
        for name, v in (("lr", self.lr), ("max_grad_norm", self.max_grad_norm)):
            if not (isinstance(v, (int, float)) and np.isfinite(v) and v >= 0):
                raise TrainingConfigError(f"{name} must be a finite number >= 0, got {v!r}")
        if not (np.isfinite(self.temperature) and self.temperature > 0):
            raise TrainingConfigError(f"temperature must be > 0, got {self.temperature!r}")


# the tensors the prompt trainer passes a loss: the GRPO family by name (``call_loss``; the
# ``advantages`` are GRPO's std-normalised group advantages, as the token-tree trainer's), the DPO
# family by position (steps.preference_step)
SUPPLIED = {
    "online": ("logp", "old_logp", "ref_logp", "mask", "rewards", "group", "advantages"),
    "preference": ("policy_chosen", "policy_rejected", "ref_chosen", "ref_rejected"),
}


def runs_on_prompts(loss_fn, family: str) -> bool:
    """Whether the prompt trainer can call ``loss_fn``: GRPO family, every tensor argument without
    a default is one the trainer supplies (by name); DPO family, its tensor arguments start with
    the supplied ones, in order, and any further one has a default."""
    from theorylab.algorithms.deep.trainer import tensor_arguments

    args, supplied = tensor_arguments(loss_fn), SUPPLIED[family]
    params = inspect.signature(loss_fn.func).parameters
    if family == "online":
        return all(a in supplied or params[a].default is not inspect.Parameter.empty
                   for a in args)  # fmt: skip
    return tuple(args[: len(supplied)]) == supplied and all(
        params[a].default is not inspect.Parameter.empty for a in args[len(supplied) :]
    )


def token_mean(loss_fn) -> bool:
    """Whether ``loss_fn`` averages over all the batch's tokens (``aggregation="token-mean"``, PPO-
    clip's default): its micro-batches are then weighted by tokens, not by prompts."""
    params = inspect.signature(loss_fn.func).parameters
    if "aggregation" not in params:
        return False
    return loss_fn.keywords.get("aggregation", params["aggregation"].default) == "token-mean"


def check_prompt_loss(spec: str) -> None:
    """One-line error, before any work, for a loss that needs tensors the prompt trainer does not
    supply (A*-PO's ``v_star``, TBRM's ``root_values``, EXO's ``logratios``, ...)."""
    from theorylab.algorithms.deep.trainer import load_losses, loss_family, tensor_arguments

    load_losses()
    from theorylab.algorithms.deep.registry import LOSSES
    from theorylab.algorithms.deep.transformer_registrations import BRANCHED_LOSSES

    name, _ = parse_spec(spec)
    family = loss_family(name)
    if name in BRANCHED_LOSSES:
        raise TrainingConfigError(
            f"loss {name!r} trains on roll-outs branched from a shared prefix, which the prompt "
            "trainer does not draw (it samples whole responses); it runs on token trees "
            f"(theorylab train {name} tokentree-eos:V=3,L=3 --target-beta 0.1)"
        )
    fn = make_loss(spec)
    if runs_on_prompts(fn, family):
        return
    args, supplied = tensor_arguments(fn), SUPPLIED[family]
    params = inspect.signature(fn.func).parameters
    missing = [a for a in args if a not in supplied
               and params[a].default is inspect.Parameter.empty]  # fmt: skip
    fits = [n for n in LOSSES.names() if _family_or_none(n) == family
            and n not in BRANCHED_LOSSES and runs_on_prompts(make_loss(n), family)]  # fmt: skip
    raise TrainingConfigError(
        f"loss {name!r} takes the tensors ({', '.join(args)}); the prompt trainer supplies "
        f"({', '.join(supplied)})"
        + (" in that order" if family == "preference" else "")
        + (f", not {', '.join(missing)}" if missing else "")
        + f"; on a prompt dataset use one of {', '.join(fits)} (or a token-tree task)"
    )


def _family_or_none(name: str) -> str | None:
    from theorylab.algorithms.deep.masking import InvalidBatchError
    from theorylab.algorithms.deep.trainer import loss_family

    try:
        return loss_family(name)
    except InvalidBatchError:
        return None


def check_prompt_shards(world: int, prompts_per_step: int, micro_batches: int) -> None:
    """One-line error, before any work, when a micro-batch's prompts do not split into ``world``
    equal shards of whole prompt groups (data-parallel runs, module docstring)."""
    chunk = prompts_per_step // micro_batches
    if world > 1 and chunk % world:
        raise TrainingConfigError(
            f"--nproc {world}: each micro-batch's {chunk} prompts (prompts_per_step = "
            f"{prompts_per_step} / micro_batches = {micro_batches}) do not split into {world} "
            "equal shards of whole prompt groups; use a number of processes that divides them"
        )


# --------------------------------------------------------------------------- rewards
def resolve_reward(reward, dataset: PromptDataset):
    """``"exact-match"`` or a reward model -> ``f(prompts, completions, answers) -> (N,)``."""
    if isinstance(reward, str):
        if reward == "exact-match":
            if dataset.answers is None:
                raise TrainingConfigError(
                    f"reward 'exact-match' needs an answer column; dataset {dataset.name!r} "
                    "has none (name it with answer_key, or use a reward model)"
                )
            return lambda p, c, a: exact_match_scores(c, a)
        if reward.startswith("reward-model:"):
            from theorylab.algorithms.deep.reward_model import RewardModel

            reward = RewardModel.load(reward[len("reward-model:") :])
        else:
            raise TrainingConfigError(
                f"unknown reward {reward!r}; expected {', '.join(REWARDS)} or reward-model:PATH"
            )
    if hasattr(reward, "score_texts"):
        return lambda p, c, a: reward.score_texts(p, c)
    if callable(reward):
        return reward
    raise TrainingConfigError(f"reward must be a name, a RewardModel or a function, got {reward!r}")


def reward_name(reward) -> str:
    """The reward in a checkpoint's fingerprint: a function by its module and name (its repr holds
    an address that differs between processes, so a run could not resume in another one)."""
    if callable(reward) and hasattr(reward, "__qualname__"):
        return f"{reward.__module__}.{reward.__qualname__}"
    return str(reward)


# --------------------------------------------------------------------------- one step
def runs_of_equal_length(lengths: list[int]) -> list[list[int]]:
    """Positions 0..n-1 grouped into maximal runs of equal ``lengths`` (after a stable sort)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    runs: list[list[int]] = []
    for i in order:
        if runs and lengths[runs[-1][-1]] == lengths[i]:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


@dataclass
class SampledBatch:
    """Completions of n prompts of one length: rows ``[prompt, completion]`` (n G, P + C)."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    completion_mask: torch.Tensor
    rewards: torch.Tensor  # (n G,)
    prompt_length: int
    n_prompts: int
    u: np.ndarray | None = None  # preference losses: the uniforms of the Bradley-Terry labels


@torch.no_grad()
def sample_batch(
    state, prompt_ids: torch.Tensor, answers, prompt_texts, reward_fn, tokenizer,
    group_size: int, max_new_tokens: int, temperature: float,
) -> SampledBatch:  # fmt: skip
    """G completions of each prompt (n, P) and their rewards (under the state's autocast)."""
    model = state.model
    model.eval()
    with autocast(state.device, state.precision):
        completion, cmask = sample_groups(
            model, prompt_ids, group_size, max_new_tokens, eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id, generator=state.generator,
            temperature=temperature,
        )  # fmt: skip
    texts = [tokenizer.decode(row) for row in completion.tolist()]
    rep = lambda xs: [x for x in xs for _ in range(group_size)]  # noqa: E731
    r = reward_fn(rep(prompt_texts), texts, rep(answers) if answers is not None else None)
    prompts = prompt_ids.repeat_interleave(group_size, 0)
    return SampledBatch(
        input_ids=torch.cat([prompts, completion], 1),
        attention_mask=torch.cat([torch.ones_like(prompts), cmask], 1),
        completion_mask=torch.cat([torch.zeros_like(prompts), cmask], 1),
        rewards=torch.as_tensor(np.asarray(r, dtype=np.float32), device=state.device),
        prompt_length=prompt_ids.shape[1],
        n_prompts=prompt_ids.shape[0],
    )


def rows_of(batch: SampledBatch, prompts: list[int], group_size: int) -> SampledBatch:
    """The sub-batch of the given prompt positions (all their G rows)."""
    rows = torch.as_tensor([p * group_size + g for p in prompts for g in range(group_size)],
                           device=batch.input_ids.device)  # fmt: skip
    u = None if batch.u is None else batch.u[prompts]
    return SampledBatch(batch.input_ids[rows], batch.attention_mask[rows],
                        batch.completion_mask[rows], batch.rewards[rows], batch.prompt_length,
                        len(prompts), u)  # fmt: skip


def group_loss(reference, loss_fn, group_size: int, train_mode: bool):
    """``loss_of_batch(model, batch)`` of the GRPO family (for :func:`accumulate`); the loss gets
    the tensors it names (``SUPPLIED["online"]``)."""
    from theorylab.algorithms.deep.groups import group_advantages
    from theorylab.algorithms.deep.trainer import call_loss

    def by_name(logp, old_logp, ref_logp, mask, rewards, group):
        available = {
            "logp": logp, "old_logp": old_logp, "ref_logp": ref_logp, "mask": mask,
            "rewards": rewards, "group": group,
            "advantages": group_advantages(rewards, group, "std"),
        }  # fmt: skip
        return call_loss(loss_fn, available)

    def loss_of_batch(model, b: SampledBatch) -> torch.Tensor:
        model.train(train_mode)
        group = torch.arange(b.n_prompts, device=b.input_ids.device).repeat_interleave(group_size)
        return group_step(model, reference, None, by_name, b.input_ids, b.attention_mask,
                          b.completion_mask, b.rewards, group, prompt_length=b.prompt_length,
                          step=False)  # fmt: skip

    return loss_of_batch


def preference_loss(reference, loss_fn, train_mode: bool):
    """``loss_of_batch(model, batch)`` of the DPO family on the two completions of each prompt,
    labelled by Bradley-Terry: P(first wins) = sigmoid(r_first - r_second)."""

    def loss_of_batch(model, b: SampledBatch) -> torch.Tensor:
        model.train(train_mode)
        first = torch.arange(b.n_prompts, device=b.input_ids.device) * 2
        r = b.rewards.double().cpu().numpy()
        p_first = 1.0 / (1.0 + np.exp(-(r[first.cpu()] - r[first.cpu() + 1])))
        wins = torch.as_tensor(b.u < p_first, device=first.device)
        chosen = torch.where(wins, first, first + 1)
        rows = torch.cat([chosen, first + first + 1 - chosen])
        return preference_step(model, reference, None, loss_fn, b.input_ids[rows],
                               b.attention_mask[rows], b.completion_mask[rows],
                               step=False)  # fmt: skip

    return loss_of_batch


# --------------------------------------------------------------------------- evaluation
@torch.no_grad()
def greedy_completions(state, tokenizer, prompts: list[str], max_new_tokens: int) -> list[str]:
    """Greedy decoding (no cache: completions are short) of each prompt, in the given order."""
    model = state.model
    model.eval()
    encoded = [tokenizer.encode(p) for p in prompts]
    out: list[str] = [""] * len(prompts)
    for run in runs_of_equal_length([len(e) for e in encoded]):
        ids = torch.as_tensor([encoded[i] for i in run], device=state.device)
        alive = torch.ones(len(run), dtype=torch.bool, device=state.device)
        new = []
        for _ in range(max_new_tokens):
            with autocast(state.device, state.precision):
                logits = model(ids)[:, -1]
            nxt = logits.float().argmax(-1)
            nxt = torch.where(alive, nxt, torch.full_like(nxt, tokenizer.pad_token_id))
            new.append(nxt)
            alive &= nxt != tokenizer.eos_token_id
            if not bool(alive.any()):
                break
            ids = torch.cat([ids, nxt[:, None]], 1)
        rows = torch.stack(new, 1).tolist()
        for i, row in zip(run, rows, strict=True):
            out[i] = tokenizer.decode(row)
    return out


# --------------------------------------------------------------------------- training
def train_prompts(
    model: str | torch.nn.Module = "gpt2-config:n_layer=2,n_embd=64",
    data: str | PromptDataset = "arithmetic",
    loss: str = "grpo",
    *,
    tokenizer: str | None = None,
    reward: Any = "exact-match",
    steps: int = 100,
    lr: float = 1e-4,
    prompts_per_step: int = 8,
    group_size: int = 8,
    micro_batches: int = 1,
    max_new_tokens: int | None = None,
    warmup_steps: int = 0,
    schedule: str = "constant",
    precision: str = "fp32",
    gradient_checkpointing: bool = False,
    lora: str | None = None,
    max_grad_norm: float = 1.0,
    eval_every: int = 10,
    eval_prompts: int = 64,
    temperature: float = 1.0,
    checkpoint: str | None = None,
    checkpoint_every: int = 10,
    stop_after: int | None = None,
    tensorboard: str | None = None,
    prompt_key: str = "prompt",
    answer_key: str = "answer",
    seeds: int | list[int] = 1,
    seed: int = 0,
    device: str = "cpu",
    progress: bool = False,
    return_states: bool = False,
):
    """Train ``model`` on the prompts of ``data`` with ``loss`` and ``reward`` (module docstring).

    Returns a :class:`~theorylab.results.PromptTrainingResult` (with ``return_states``: and the
    final :class:`LMTrainingState` of every seed)."""
    from theorylab.algorithms.deep import distributed
    from theorylab.algorithms.deep.policy_gradient_losses import check_cvar_group_size
    from theorylab.algorithms.deep.trainer import loss_family
    from theorylab.seeding import seed_indices

    dev = resolve_device(device)
    opts = PromptTrainingOptions(
        steps=steps, lr=lr, prompts_per_step=prompts_per_step, group_size=group_size,
        micro_batches=micro_batches, max_new_tokens=max_new_tokens, warmup_steps=warmup_steps,
        schedule=schedule, precision=precision, lora=lora, max_grad_norm=max_grad_norm,
        eval_every=eval_every, eval_prompts=eval_prompts, temperature=temperature,
    )  # fmt: skip
    opts.check()
    check_prompt_shards(distributed.world_size(), opts.prompts_per_step, opts.micro_batches)
    ScaleOptions(precision, micro_batches, warmup_steps, schedule, lora, checkpoint_every,
                 stop_after).check(dev, steps, checkpoint)  # fmt: skip
    loss_name, _ = parse_spec(loss)
    family = loss_family(loss_name)
    if family == "preference" and group_size != 2:
        opts = PromptTrainingOptions(**{**opts.__dict__, "group_size": 2})
    check_prompt_loss(loss)
    loss_fn = make_loss(loss)
    check_cvar_group_size(loss_fn, opts.group_size)
    dataset = load_prompts(data, prompt_key=prompt_key, answer_key=answer_key)
    tok = load_tokenizer(tokenizer, dataset)
    reward_fn = resolve_reward(reward, dataset)
    if len(dataset) <= opts.eval_prompts:
        raise TrainingConfigError(
            f"the dataset {dataset.name!r} has {len(dataset)} prompts; eval_prompts = "
            f"{opts.eval_prompts} leaves none to train on (lower eval_prompts)"
        )
    if opts.max_new_tokens is None:
        longest = max((len(tok.encode(a)) for a in dataset.answers), default=15) if (
            dataset.answers is not None) else 15  # fmt: skip
        opts = PromptTrainingOptions(**{**opts.__dict__, "max_new_tokens": longest + 1})
    if tensorboard is not None:
        check_tensorboard()
    place = distributed.join(dev)
    dev = place.device
    indices = seed_indices(seeds)
    records: dict[str, list] = {k: [] for k in ("accuracy", "train_reward", "loss", "lr", "gn")}
    states, eval_steps = [], None
    t0 = time.perf_counter()
    model_name = model if isinstance(model, str) else type(model).__name__
    for i in indices:
        folder = per_seed_folder(checkpoint, i, len(indices))
        tb = per_seed_folder(tensorboard, i, len(indices)) if place.main else None
        fingerprint = {**opts.__dict__, "model": model_name, "data": dataset.name, "loss": loss,
                       "reward": reward_name(reward), "seed": seed, "seed_index": i,
                       "tokenizer": str(tokenizer)}  # fmt: skip
        out, state = _train_one_seed(
            model, dataset, tok, reward_fn, loss_fn, family, opts, dev, seed, i,
            gradient_checkpointing=gradient_checkpointing, folder=folder,
            checkpoint_every=checkpoint_every, stop_after=stop_after, tensorboard=tb,
            fingerprint=fingerprint, progress=progress and place.main, place=place,
        )  # fmt: skip
        eval_steps = out.pop("eval_steps")
        for k, v in out.items():
            records[k].append(v)
        states.append(state)
    result = PromptTrainingResult(
        steps=np.asarray(eval_steps),
        accuracy=np.array(records["accuracy"]),
        train_reward=np.array(records["train_reward"]),
        loss=np.array(records["loss"]),
        lr=np.array(records["lr"]),
        grad_norm=np.array(records["gn"]),
        wall_seconds=time.perf_counter() - t0,
        config={
            "algorithm": loss_name,
            "loss": loss,
            "family": family,
            "model": model_name,
            "data": dataset.name,
            "task": dataset.name,
            "reward": str(reward),
            "params": {
                **opts.__dict__,
                "gradient_checkpointing": gradient_checkpointing,
                "device": str(dev),
                "tokenizer": str(tokenizer),
                "processes": place.world,
            },
            "seeds": indices,
            "seed": seed,
            "versions": {"torch": torch.__version__},
        },  # fmt: skip
    )
    return (result, states) if return_states else result


def _build_policy(model, vocab_size: int, torch_seed: int, dev, lora, gradient_checkpointing):
    if isinstance(model, torch.nn.Module):
        policy = make_model(copy.deepcopy(model), vocab_size, device=dev, what="the tokenizer")
    else:
        policy = make_model(model, vocab_size, seed=torch_seed, device=dev, what="the tokenizer")
    if not getattr(policy, "supports_packing", False):
        raise ModelSpecError(
            f"the prompt trainer samples with a Hugging Face model's KV cache; model {model!r} is "
            "not one (use gpt2-config:..., llama-config:... or hf:PATH)"
        )
    zero_dropout(policy)
    reference = copy.deepcopy(policy).requires_grad_(False).eval()
    if lora is not None:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(torch_seed)
            apply_lora(policy, lora)
    if gradient_checkpointing:
        policy.model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": False}
        )
    return policy.to(dev), reference


def _train_one_seed(model, dataset, tok, reward_fn, loss_fn, family, opts, dev, seed, index, *,
                    gradient_checkpointing, folder, checkpoint_every, stop_after, tensorboard,
                    fingerprint, progress, place):  # fmt: skip
    from theorylab.algorithms.deep.trainer import gradient_sync

    ss = np.random.SeedSequence(seed, spawn_key=(index,))
    torch_seed, sample_seed, split_seed = (int(s) for s in ss.generate_state(3))
    order = np.random.default_rng(split_seed).permutation(len(dataset))
    held_out = dataset.subset(order[-opts.eval_prompts :])
    train_set = dataset.subset(order[: -opts.eval_prompts])
    if opts.prompts_per_step > len(train_set):
        raise TrainingConfigError(
            f"prompts_per_step = {opts.prompts_per_step} exceeds the {len(train_set)} training "
            "prompts"
        )
    encoded = [tok.encode(p) for p in train_set.prompts]
    policy, reference = _build_policy(model, tok.vocab_size, torch_seed, dev, opts.lora,
                                      gradient_checkpointing)  # fmt: skip
    learner = place.wrap(policy)  # gradient forwards (DDP over the ranks when world > 1)
    state = LMTrainingState.create(
        policy, lr=opts.lr, device=dev, precision=opts.precision, schedule=opts.schedule,
        warmup_steps=opts.warmup_steps, total_steps=opts.steps, sample_seed=sample_seed,
        rng=np.random.default_rng(ss.spawn(1)[0]),
    )  # fmt: skip
    eval_steps = np.unique(np.r_[np.arange(0, opts.steps + 1, opts.eval_every), opts.steps])
    resumed = resume_or_start(state, folder, fingerprint,
                              ("accuracy", "train_reward", "loss", "lr", "gn"))  # fmt: skip
    writer = open_writer(tensorboard, state.step if resumed else None)
    train_mode = bool(gradient_checkpointing)
    if family == "online":
        loss_of_batch = group_loss(reference, loss_fn, opts.group_size, train_mode)
    else:
        loss_of_batch = preference_loss(reference, loss_fn, train_mode)

    def evaluate() -> None:
        texts = greedy_completions(state, tok, list(held_out.prompts), opts.max_new_tokens)
        if held_out.answers is not None:
            acc = float(np.mean(exact_match_scores(texts, held_out.answers)))
        else:
            acc = float(np.mean(reward_fn(list(held_out.prompts), texts, None)))
        state.metrics["accuracy"].append(acc)
        if writer is not None:
            writer.add_scalar("eval/heldout_accuracy", acc, state.step)
        if progress:
            print(f"step {state.step}: held-out accuracy {acc:.3f}", flush=True)

    if not resumed:
        evaluate()
    n = opts.prompts_per_step
    chunk = n // opts.micro_batches
    shard = place.rows(chunk)  # this rank's prompts of each micro-batch (check_prompt_shards)
    by_tokens = family == "online" and token_mean(loss_fn)
    try:
        for _ in steps_of_this_call(state, opts.steps, stop_after):
            idx = state.rng.choice(len(train_set), n, replace=False)
            runs = runs_of_equal_length([len(encoded[i]) for i in idx])
            position = {}  # each chosen prompt -> (its run's batch, row within the run)
            batches = []
            for run in runs:
                ids = torch.as_tensor([encoded[idx[j]] for j in run], device=dev)
                answers = None if train_set.answers is None else [train_set.answers[idx[j]]
                                                                    for j in run]  # fmt: skip
                b = sample_batch(state, ids, answers, [train_set.prompts[idx[j]] for j in run],
                                 reward_fn, tok, opts.group_size, opts.max_new_tokens,
                                 opts.temperature)  # fmt: skip
                if family == "preference":  # Bradley-Terry label draws, one per prompt
                    b.u = state.rng.random(len(run))
                for k, j in enumerate(run):
                    position[j] = (len(batches), k)
                batches.append(b)
            work = []  # this rank's sub-batches of the step: (sub-batch, its prompts)
            order_in_step = [j for run in runs for j in run]
            for c in range(opts.micro_batches):
                members = order_in_step[c * chunk : (c + 1) * chunk][shard]
                by_batch: dict[int, list[int]] = {}
                for j in members:
                    bi, k = position[j]
                    by_batch.setdefault(bi, []).append(k)
                for bi, ks in by_batch.items():
                    b = batches[bi]
                    sub = b if len(ks) == b.n_prompts else rows_of(b, ks, opts.group_size)
                    work.append((sub, len(ks)))
            losses = []
            # each sub-batch's share of the step's loss (prompts, or tokens for a token-mean
            # loss; summing to 1 over all ranks), times world: DDP averages over the ranks
            tokens = float(sum(b.completion_mask.sum() for b in batches)) if by_tokens else 0.0
            for w, (sub, m) in enumerate(work):  # one all-reduce per step: the last backward
                share = float(sub.completion_mask.sum()) / tokens if by_tokens else m / n
                with gradient_sync(learner, w == len(work) - 1):
                    loss = accumulate(state, loss_of_batch, sub, share * place.world,
                                      model=learner)  # fmt: skip
                losses.append(loss * share * place.world)
            lr_now = state.lr
            gn = optimizer_step(state, opts.max_grad_norm)
            reward_mean = float(torch.cat([b.rewards for b in batches]).mean())
            for k, v in (("train_reward", reward_mean), ("loss", place.mean(sum(losses))),
                         ("lr", lr_now), ("gn", gn)):  # fmt: skip
                state.metrics[k].append(v)
                if writer is not None:
                    writer.add_scalar(f"train/{k if k != 'gn' else 'grad_norm'}", v, state.step)
            if state.step in eval_steps:
                evaluate()
            if place.main:  # every rank holds the same state (DDP); rank 0 writes it
                checkpoint_after_step(state, folder, fingerprint, checkpoint_every, opts.steps,
                                      stop_after)  # fmt: skip
    finally:
        if writer is not None:
            writer.close()
    out = {k: np.array(v) for k, v in state.metrics.items()}
    out["eval_steps"] = eval_steps[eval_steps <= state.step]  # stop_after: the steps done
    return out, state
