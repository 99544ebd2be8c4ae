"""RTO (Zhong et al. 2024, "DPO Meets PPO: Reinforced Token Optimization for RLHF", arXiv
2404.18922) as an exact twin on a token tree. Seed row 002-004#E6 (``seed-catalogue-002-004.md``).

RTO reads a token-wise reward off a DPO policy, r(h, a) = beta log pi_DPO(a|h)/ref(a|h) (the
catalogue row's [std DPO implicit reward]; read [V] from the abstract: "DPO ... provides us with a
token-wise characterization of response quality, which is ... incorporated into our subsequent
PPO training stage"), and optimises the token-level MDP with a KL penalty beta2 to ref. Exact
statements on a tree (responses of different lengths: ``tokentree-eos``):

* the token rewards along a response telescope to the sequence-level implicit reward
  beta log pi_DPO(y)/ref(y), which is r(y) - beta log Z(x) when pi_DPO is DPO's population
  minimiser pi*_beta (:func:`implicit_return`);
* the soft-optimal policy of the token MDP (soft value iteration with the reward *per token*,
  :func:`token_soft_vi`, written independently of the tree's terminal-reward soft VI) is the
  sentence-level KL-regularised optimum pi*_beta2 of r.

The PPO stage (which approximates that optimum) and the paper's sample-complexity comparison are
not reproduced; DPO's minimiser is taken in closed form (the claim
``preference-twins-closed-form`` checks that DPO's exact loss reaches it).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp


def token_rewards(task, dpo_cond: np.ndarray, beta: float) -> np.ndarray:
    """(P, N, V) r(h, a) = beta (log pi_DPO(a|h) - log ref(a|h))."""
    return beta * (dpo_cond - np.log(task.ref_cond))


def implicit_return(task, tok_reward: np.ndarray) -> np.ndarray:
    """(P, Y) the sum of a response's token rewards (every token, EOS included)."""
    x = np.arange(task.n_prompts)[:, None, None]
    picked = tok_reward[x, task.token_nodes[None], task.tokens[None]]  # (P, Y, L)
    return (picked * task.token_mask[None]).sum(-1)


def token_soft_vi(task, tok_reward: np.ndarray, beta: float) -> np.ndarray:
    """(P, N, V) the soft-optimal policy of the token MDP with per-token rewards and KL beta to
    ref: Q(h, a) = r(h, a) + V(child), V(h) = beta log sum_a ref(a|h) exp(Q(h, a)/beta), V = 0
    after a response ends; pi(a|h) = ref(a|h) exp((Q - V)/beta)."""
    child_node, _ = task.children()
    log_ref = np.log(task.ref_cond)
    P, N, V = log_ref.shape
    v = np.zeros((P, N))
    q = np.zeros((P, N, V))
    for h in range(N - 1, -1, -1):  # children first
        nxt = np.where(child_node[h] >= 0, v[:, np.maximum(child_node[h], 0)], 0.0)
        q[:, h] = tok_reward[:, h] + nxt
        v[:, h] = beta * logsumexp(log_ref[:, h] + q[:, h] / beta, axis=-1)
    return log_ref + (q - v[..., None]) / beta
