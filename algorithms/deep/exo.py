"""EXO (Ji et al. 2024, "Towards Efficient and Exact Optimization of Language Model Alignment",
arXiv 2402.00856): the registered loss and its exact twin on a token tree. Seed row 000#11
(``seed-catalogue-000.md#11``).

For K responses y_1..y_K to a prompt (drawn from the reference here), EXO matches two
distributions over the K indices: p_theta(i) ∝ exp(log pi_theta(y_i)/ref(y_i)) (the policy's
implicit reward) and p_r(i) ∝ exp(r(y_i)/beta), by the *reverse* KL(p_theta || p_r). As K grows
the K-sample distributions tend to pi_theta and pi*_beta, so E[L_K] -> KL(pi_theta || pi*_beta)
= -(J_beta(pi_theta) - J_beta(pi*))/beta: EXO's gradient points along the KL-regularised RL
gradient (the paper's claim, "in the same direction as the RL algorithms asymptotically"). DPO
corresponds to the *forward* KL(p_r || p_theta) (K = 2 with preference labels), whose limit
KL(pi* || pi_theta) is mode-covering: its direction differs. Read [V]: the abstract; the K-sample
form with p_theta's temperature equal to p_r's (beta_pi = beta_r) is reconstructed [A] from the
paper's description and TRL's pairwise ``loss_type="exo_pair"`` (its K = 2, label-smoothed form).
The misspecified-class comparison with DPO is not reproduced.

Tensors: ``logratios`` (B, K) log pi/ref of each prompt's K responses (sequence sums),
``rewards`` (B, K); ``weights`` (B,) for an exact expectation.
"""

from __future__ import annotations

import itertools

import numpy as np
import torch

from theorylab.algorithms.deep.masking import InvalidBatchError, check_positive, reduce_examples
from theorylab.algorithms.deep.registry import register_loss


def exo_divergence(log_p_theta: torch.Tensor, log_p_r: torch.Tensor) -> torch.Tensor:
    """KL(p_theta || p_r) per row (B,) of (B, K) log-distributions (EXO's reverse KL)."""
    return (log_p_theta.exp() * (log_p_theta - log_p_r)).sum(-1)


@register_loss(
    "exo",
    summary="EXO: reverse KL between the policy's and the reward's K-sample softmax (Ji 2024).",
)
def exo(
    logratios: torch.Tensor,
    rewards: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    beta: float = 0.1,
) -> torch.Tensor:
    """mean_b KL(softmax_i logratios[b, i] || softmax_i rewards[b, i] / beta)."""
    check_positive("beta", beta)
    if logratios.ndim != 2 or logratios.shape != rewards.shape or logratios.shape[1] < 2:
        raise InvalidBatchError(
            f"logratios {tuple(logratios.shape)} and rewards {tuple(rewards.shape)} must both be "
            "(B, K) with K >= 2 responses per prompt"
        )
    log_p_theta = torch.log_softmax(logratios, dim=-1)
    log_p_r = torch.log_softmax(rewards.detach() / beta, dim=-1)
    return reduce_examples(exo_divergence(log_p_theta, log_p_r), weights)


def exo_expectation(task, seq_logp: torch.Tensor, K: int, beta: float) -> torch.Tensor:
    """E over K i.i.d. reference responses per prompt of the registered exo loss (every ordered
    K-tuple with its probability; prompts averaged): a torch scalar with seq_logp's gradient."""
    from theorylab.algorithms.deep.registry import make_loss

    P, Y = task.n_prompts, task.n_responses
    if Y**K * P > 2_000_000:
        raise ValueError(f"{P} x {Y}^{K} K-tuples is too many to enumerate")
    tup = torch.as_tensor(np.array(list(itertools.product(range(Y), repeat=K))))  # (M, K)
    ref = torch.as_tensor(task.ref_logprobs)
    r = torch.as_tensor(task.mean_reward)
    rows = torch.arange(P).repeat_interleave(len(tup))
    tt = tup.repeat(P, 1)
    w = ref.exp()[rows[:, None], tt].prod(1) / P
    logratios = (seq_logp - ref)[rows[:, None], tt]
    return make_loss("exo", beta=beta)(logratios, r[rows[:, None], tt], w)
