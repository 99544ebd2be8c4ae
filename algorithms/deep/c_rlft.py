"""C-RLFT (Wang et al. 2023, "OpenChat: Advancing Open-source Language Models with Mixed-Quality
Data", arXiv 2309.11235): the registered loss and its exact twin on a token tree with EOS. Seed
row 002-004#F7 (``seed-catalogue-002-004.md#F7``).

Setting (Sec. 3 of the paper, [A] reconstructed from the abstract, the catalogue row and a
secondary summary; the paper's text was not found in the search corpus): the data mixes C
sources of different quality, source c giving responses y ~ pi_c(.|x) with a *coarse* reward
r_c (expert 1, sub-optimal alpha < 1). The policy is class-conditioned, pi_theta(y | x, c) (the
class enters the prompt as a token), and the objective is KL-regularised to the class-conditioned
reference pi_c:

    max_theta E_c E_{y ~ pi_theta(.|x,c)} r_c - beta KL(pi_theta(.|x,c) || pi_c(.|x)),

with the optimum pi*(y|x,c) ∝ pi_c(y|x) exp(r_c / beta) [std]. Projecting pi* onto the policy
class by KL(pi* || pi_theta) gives a supervised, RL-free loss over the mixed data: the
reward-weighted, class-conditioned negative log-likelihood

    L(theta) = - E_{(x, c, y) ~ D} [ r_c log pi_theta(y | x, c) ]                       (C-RLFT)

(the paper's practical weight is r_c itself, [A]; log pi is summed over a response's tokens, EOS
included). What is checked (claim ``c-rlft-conditioned-optimum``):

* With a class-conditioned table, the minimiser of the loss's exact expectation (every (x, c, y)
  enumerated with probability p(c|x) pi_c(y|x)/P; L-BFGS) equals pi*(.|x, c) computed
  independently by soft value iteration on the tree whose reference is pi_c and whose reward is
  r_c. Because r_c is constant within a class the weights cancel inside each class: pi* = pi_c
  for every beta, and the *unweighted* conditioned MLE has the same minimiser (measured; the
  weights matter only across classes, i.e. through parameters shared between class tokens).
* Conditioning on the expert class at inference has the expert's accuracy, above the plain SFT
  on the mixture (the baseline the paper improves on) and above the r_c-weighted MLE without a
  class token (the minimiser ∝ sum_c p(c|x) r_c pi_c(y|x)).
* Controls (``validations/c_rlft_mutations.py``): the class token dropped (every example read
  under one class slot) and the log-likelihood averaged over a response's tokens; both move the
  minimiser off pi*.

Not reproduced: the Llama-2 fine-tuning, the GPT-4 / GPT-3.5 ShareGPT data, the benchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from theorylab.algorithms.deep.masking import (
    InvalidBatchError,
    check_tokens,
    check_vector,
    masked_sum,
    reduce_examples,
)
from theorylab.algorithms.deep.registry import register_loss

D = torch.float64


@register_loss(
    "c-rlft",
    summary="C-RLFT: class-reward-weighted, class-conditioned NLL on mixed data (OpenChat 2023).",
)
def c_rlft(
    logp: torch.Tensor,
    mask: torch.Tensor,
    rewards: torch.Tensor,
    weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """mean_b (or sum_b weights_b) of -r_{c_b} sum_t log pi_theta(y_b,t | x_b, c_b, y_b,<t).
    logp: (B, T) token log-probabilities under the class-conditioned prompt; mask: (B, T);
    rewards: (B,) the coarse reward r_c of each example's source (>= 0)."""
    m = check_tokens(mask, logp=logp)
    check_vector("rewards", rewards, logp.shape[0])
    r = rewards.detach().to(logp.dtype)
    if bool((r < 0).any()):
        raise InvalidBatchError("c-rlft needs rewards >= 0 (they weight a log-likelihood)")
    return reduce_examples(-r * masked_sum(logp, m), weights)


# --------------------------------------------------------------------------- the twin
@dataclass(frozen=True)
class MixedQualityData:
    """C sources on one tree: ``behaviour`` (C, P, N, V) the conditionals pi_c(a | x, h);
    ``class_prior`` (P, C) p(c | x); ``class_reward`` (C,) r_c (class 0 the expert)."""

    task: object
    behaviour: np.ndarray
    class_prior: np.ndarray
    class_reward: np.ndarray

    @property
    def n_classes(self) -> int:
        return int(self.behaviour.shape[0])


def mixed_quality_data(
    task, expert_share: float = 0.25, alpha: float = 0.1, expert_beta: float = 0.2,
    seed: int = 0,
) -> MixedQualityData:  # fmt: skip
    """Two sources: the expert pi*_{expert_beta} of the task (reward 1) and a random full-support
    table (reward ``alpha``), the expert a share ``expert_share`` of every prompt's data."""
    if not 0 < expert_share < 1:
        raise ValueError(f"expert_share must be in (0, 1), got {expert_share!r}")
    if not 0 <= alpha < 1:
        raise ValueError(f"alpha (the sub-optimal class reward) must be in [0, 1), got {alpha!r}")
    rng = np.random.default_rng(seed)
    expert = np.exp(task.soft_optimum(expert_beta).cond_logp)
    z = 0.7 * rng.standard_normal(task.ref_cond.shape)
    sub = np.exp(z - z.max(-1, keepdims=True))
    sub /= sub.sum(-1, keepdims=True)
    prior = np.tile([expert_share, 1 - expert_share], (task.n_prompts, 1))
    return MixedQualityData(task, np.stack([expert, sub]), prior, np.array([1.0, alpha]))


def class_prompt(x: torch.Tensor, c: torch.Tensor, n_classes: int) -> torch.Tensor:
    """The row of the class-conditioned table that reads prompt x under class token c."""
    return x * n_classes + c


def conditioned_task(data: MixedQualityData):
    """The tree with P C prompts (x, c) (row x C + c), reference pi_c and reward r_c: its soft
    optimum is pi*(.|x, c) ∝ pi_c exp(r_c / beta) (computed by soft value iteration)."""
    from dataclasses import replace

    task, C = data.task, data.n_classes
    P, Y = task.n_prompts, task.n_responses
    ref = np.transpose(data.behaviour, (1, 0, 2, 3)).reshape(P * C, task.n_nodes, task.V)
    r = np.repeat(np.tile(data.class_reward, P)[:, None], Y, axis=1)[..., None]  # (PC, Y, 1)
    return replace(task, reward_values=r, reward_probs=np.ones_like(r),
                   correct=np.repeat(task.correct, C, axis=0), ref_cond=ref)  # fmt: skip


def exact_objective(data: MixedQualityData, pol, spec: str = "c-rlft", weighted: bool = True):
    """E over (x, c, y), x uniform, c ~ p(c|x), y ~ pi_c(.|x), of the registered loss ``spec`` on
    the class-conditioned logit table ``pol`` (:class:`~theorylab.algorithms.deep.twins.
    LogitTable` with P C rows); ``weighted=False``: every r_c replaced by 1 (plain conditioned
    MLE). A torch scalar with the table's gradient."""
    from theorylab.algorithms.deep.registry import make_loss

    task, C = data.task, data.n_classes
    P, Y = task.n_prompts, task.n_responses
    seq = np.stack([task.sequence_logprobs(np.log(b)) for b in data.behaviour])  # (C, P, Y)
    w = np.exp(seq) * data.class_prior.T[..., None] / P  # (C, P, Y)
    c, x, y = (
        torch.as_tensor(a.reshape(-1))
        for a in np.meshgrid(np.arange(C), np.arange(P), np.arange(Y), indexing="ij")
    )
    r = torch.as_tensor(data.class_reward)[c] if weighted else torch.ones(c.shape[0], dtype=D)
    logp = pol.token_logp(pol.cond_logp(), class_prompt(x, c, C), y)
    return make_loss(spec)(logp, pol.mask[y], r, torch.as_tensor(w.reshape(-1)))


def minimise(data: MixedQualityData, weighted: bool = True, iters: int = 200) -> np.ndarray:
    """(P C, Y) the sequence log-probabilities of the exact loss's minimiser over a
    class-conditioned logit table (rows x C + c), by L-BFGS from the uniform table."""
    from theorylab.algorithms.deep.regression_twins import lbfgs
    from theorylab.algorithms.deep.twins import LogitTable

    task = data.task
    pol = LogitTable(conditioned_task(data), np.zeros((task.n_prompts * data.n_classes,
                                                       task.n_nodes, task.V)))  # fmt: skip
    lbfgs(pol, lambda: exact_objective(data, pol, weighted=weighted), iters)
    return pol.numpy_seq_logp()


def inference_logp(data: MixedQualityData, table_seq_logp: np.ndarray, c: int) -> np.ndarray:
    """(P, Y) the policy's responses to prompt x under class token c (the table's row for it)."""
    x = torch.arange(data.task.n_prompts)
    rows = class_prompt(x, torch.full_like(x, c), data.n_classes).numpy()
    return table_seq_logp[rows]


def mixture_mle(data: MixedQualityData, weights: np.ndarray) -> np.ndarray:
    """(P, Y) the minimiser of the per-class-weighted NLL with no class token, in closed form:
    ∝ sum_c p(c|x) w_c pi_c(y|x) (``weights`` = 1: plain SFT on the mixture)."""
    task = data.task
    seq = np.stack([np.exp(task.sequence_logprobs(np.log(b))) for b in data.behaviour])
    mix = np.einsum("pc,c,cpy->py", data.class_prior, np.asarray(weights, float), seq)
    return np.log(mix / mix.sum(1, keepdims=True))


# --------------------------------------------------------------------------- the trainer's data
OFFLINE_DATA = ("mixed-quality",)


@dataclass(frozen=True)
class ClassTaggedData:
    """The offline dataset the transformer trainer draws C-RLFT's batches from (``theorylab
    train c-rlft TASK --offline-data mixed-quality``): ``task`` the class-conditioned tree
    (:func:`conditioned_task`: prompt row x C + c is prompt x with class token c, its reference
    pi_c, its reward r_c, so its optimum is pi*(.|x, c)); ``behaviour_logp`` (P C, Y) log pi_c(y|x)
    the source's responses are drawn from; ``row_weight`` (P C,) p(c|x) / P, the share of row
    (x, c) in the data; ``row_reward`` (P C,) r_c."""

    task: object
    behaviour_logp: np.ndarray
    row_weight: np.ndarray
    row_reward: np.ndarray
    spec: str


def class_tagged_data(task, spec: str) -> ClassTaggedData:
    """``spec`` = "mixed-quality[:expert_share=..,alpha=..,expert_beta=..,seed=..]": the two
    sources of :func:`mixed_quality_data` on ``task``, as the trainer's class-tagged dataset."""
    from theorylab.registry import _convert, parse_spec

    name, raw = parse_spec(spec)
    if name not in OFFLINE_DATA:
        raise ValueError(f"offline_data {spec!r}: expected one of {', '.join(OFFLINE_DATA)} "
                         "(e.g. mixed-quality:expert_share=0.25,alpha=0.1)")  # fmt: skip
    defaults = {"expert_share": 0.25, "alpha": 0.1, "expert_beta": 0.2, "seed": 0}
    kw = {}
    for key, text in raw.items():
        if key not in defaults:
            raise ValueError(f"offline_data {spec!r} has no parameter {key!r}; parameters: "
                             f"{', '.join(f'{k}={v!r}' for k, v in defaults.items())}")  # fmt: skip
        kw[key] = _convert(text, defaults[key], key, name)
    data = mixed_quality_data(task, **kw)
    P = task.n_prompts
    ctask = conditioned_task(data)
    weight = (data.class_prior / P).reshape(-1)  # (P C,) row x C + c
    reward = np.tile(data.class_reward, P)
    return ClassTaggedData(ctask, ctask.ref_logprobs, weight, reward, spec)


def draw_class_tagged(data: ClassTaggedData, n: int, rng: np.random.Generator):
    """n examples per row (x, c): (rows (P C n,), responses (P C n,), rewards, weights), the
    weights p(c|x) / (P n) summing to 1, so the batch loss is unbiased for the exact one."""
    rows_n, Y = data.behaviour_logp.shape
    rows = np.repeat(np.arange(rows_n), n)
    cum = np.cumsum(np.exp(data.behaviour_logp[rows]), axis=1)
    y = np.minimum((rng.random(len(rows))[:, None] > cum).sum(axis=1), Y - 1)
    return rows, y, data.row_reward[rows], data.row_weight[rows] / n
