"""Q# (Zhou et al. 2025, "Q#: Provably Optimal Distributional RL for LLM Post-Training", arXiv
2502.20548) as an exact twin on a token tree. Seed row 000#18 (``seed-catalogue-000.md#18``).

Q# guides the reference with the KL-regularised optimal Q: pi(a|h) ∝ ref(a|h) exp(Q*(h, a)/beta).
In a deterministic tree MDP with the reward at the end, Q*(h, a) = beta log E_ref[exp(R/beta) |
h, a] -- the certainty equivalent of the *return distribution of the reference* from (h, a) --
so Q* is learnt by distributional RL on reference roll-outs, with no bootstrapping on the
current policy. Read [V]: the abstract (guidance of ref by the optimal regularised Q, learnt by
distributional RL); the identity Q* = beta log E_ref exp(Z/beta) for deterministic dynamics is the
catalogue row's [standard identity]; the paper's network, its online data aggregation and its
no-regret reduction are not reproduced.

* :func:`return_distribution` -- the reference's return distribution from every (h, a), by
  enumerating the responses after (h, a) (P, N, V, Y, K) over the reward atoms;
* :func:`certainty_equivalent` -- beta log E exp(Z/beta) of a distribution (Q#'s Q*); its mean
  instead gives Q^ref, the *unregularised* value of the reference, whose guidance is not
  KL-optimal (the mutation ``qsharp-mean-return``);
* :func:`sampled_q` -- the plug-in estimate from n reference roll-outs per (h, a) (the empirical
  distribution, the tabular MLE of a categorical return model);
* :func:`guided_policy` -- ref(a|h) exp(Q(h, a)/beta) normalised per node.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from theorylab.kernels.sampling import draws_per_row


def return_distribution(task) -> tuple[np.ndarray, np.ndarray]:
    """(atoms (P, 1, 1, Y, K), probabilities (P, N, V, Y, K)) of the return after (x, h, a) when
    the reference completes the response: P(y | h, a) x P(reward atom k | x, y)."""
    cont = task.continuations(np.log(task.ref_cond))  # (P, N, V, Y)
    probs = cont[..., None] * task.reward_probs[:, None, None]  # (P, N, V, Y, K)
    return task.reward_values[:, None, None], probs


def certainty_equivalent(atoms: np.ndarray, probs: np.ndarray, beta: float) -> np.ndarray:
    """beta log E exp(Z / beta) over the last two axes (responses x atoms) -> (P, N, V)."""
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {beta!r}")
    a = np.broadcast_to(atoms, probs.shape)
    with np.errstate(divide="ignore"):
        return beta * logsumexp(a / beta + np.log(probs), axis=(-2, -1))


def qsharp_q(task, beta: float) -> np.ndarray:
    """(P, N, V) Q#'s Q*: the certainty equivalent of the reference's return distribution."""
    atoms, probs = return_distribution(task)
    return certainty_equivalent(atoms, probs, beta)


def sampled_q(task, beta: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """(P, N, V) the plug-in Q# from n reference roll-outs per (x, h, a): each draws a response y
    after (h, a) and a reward atom; the empirical distribution's certainty equivalent."""
    atoms, probs = return_distribution(task)
    P, N, V, Y, K = probs.shape
    flat = probs.reshape(-1, Y * K)
    idx = draws_per_row(rng, flat, n)  # (P N V, n)
    counts = np.zeros_like(flat)
    np.add.at(counts, (np.arange(flat.shape[0])[:, None], idx), 1.0)
    return certainty_equivalent(atoms, (counts / n).reshape(probs.shape), beta)


def guided_policy(task, q: np.ndarray, beta: float) -> np.ndarray:
    """(P, N, V) log pi(a|h) = log ref(a|h) + Q(h, a)/beta, normalised per node."""
    z = np.log(task.ref_cond) + q / beta
    return z - logsumexp(z, axis=-1, keepdims=True)
