"""ROVER (He et al. 2025, "Random Policy Valuation is Enough for LLM Reasoning with Verifiable
Rewards", arXiv 2509.24981) as an exact twin on a token tree. Seed rows 000#17 and 002-004#G1
(the same paper; ``seed-catalogue-000.md#17``, ``seed-catalogue-002-004.md#G1``).

Read [V] (the abstract and third-party summaries quoting it): "the optimal action can be
recovered from the Q-function of a fixed uniformly random policy" -- Theorem 3.1: in a
finite-horizon MDP with deterministic transitions, tree-structured states and binary terminal
rewards R(s) in {0, R}, the greedy policy argmax_a Q^{pi_u}(s, a) of the uniform policy pi_u is
optimal; ROVER "samples actions from a softmax over these uniform-policy Q-values". Q^{pi_u}(s, a)
is the probability that acting uniformly at random after (s, a) ends on a correct leaf, given by
the Bellman recursion Q(s, a) = r(s, a) + (1/|A|) sum_a' Q(s', a') (the authors' verl code
regresses a Q parametrised by the policy's log-ratio onto this target with the mean-centred
reward broadcast to every token; that practical estimator is not reproduced here).

On a token tree (a response is a leaf, EOS ends it: responses of 1..L tokens) everything is
exact:

* :func:`uniform_q` -- Q^{pi_u} by the tree backup (the Bellman recursion above);
* :func:`uniform_q_by_enumeration` -- the same number written independently, as a sum over the
  responses through (h, a): sum_y V^{-(|y| - t - 1)} r(y), t the position of (h, a) in y (the
  uniform policy picks each of the remaining |y| - t - 1 tokens with probability 1/V). A response
  that ends sooner gets *more* weight; the plain fraction of correct responses below (h, a)
  (the mutation ``rover-leaf-fraction``) is not Q^{pi_u} when lengths differ;
* :func:`optimal_q_by_enumeration` -- Q*(h, a) = max over the responses through (h, a) of r;
* :func:`greedy_policy` (argmax of Q, uniform over ties) and :func:`rover_policy` (softmax of
  Q / rho, the paper's sampling rule at temperature rho);
* :func:`random_binary_tree` -- a tree whose responses are correct i.i.d. with probability p
  (the "random trees" of the catalogue row); ``graded=True`` gives i.i.d. U(0, 1) rewards, where
  Theorem 3.1's hypothesis fails.

Why binary rewards matter: Q^{pi_u}(h, a) > 0 exactly when a correct leaf lies below (h, a), and
Q*(h, a) is 1 then, 0 otherwise; so argmax Q^{pi_u} keeps the response in a solvable subtree.
With graded rewards the mean below (h, a) can favour a subtree whose best leaf is worse.
"""

from __future__ import annotations

import numpy as np

from theorylab.kernels.sampling import draws_per_row
from theorylab.mdps.eos_tree import EosTokenTree, eos_tree_structure


def _positions(task):
    """Yield (y, t, h, a, remaining) for every token of every response: node h, token a at
    position t, and the number of tokens after it."""
    lengths = task.token_mask.sum(axis=1).astype(np.int64)
    for y in range(task.n_responses):
        for t in range(lengths[y]):
            yield y, t, task.token_nodes[y, t], task.tokens[y, t], lengths[y] - t - 1


def uniform_q(task) -> np.ndarray:
    """(P, N, V) Q^{pi_u}(h, a) = E[r | h, a, then uniform] by the tree backup."""
    log_u = np.full((task.n_prompts, task.n_nodes, task.V), -np.log(task.V))
    return task.backup(log_u, task.mean_reward, soft=None)


def uniform_q_by_enumeration(task) -> np.ndarray:
    """(P, N, V) sum over the responses y through (h, a) of V^{-(tokens after a)} r(y)."""
    q = np.zeros((task.n_prompts, task.n_nodes, task.V))
    r = task.mean_reward
    for y, _, h, a, rest in _positions(task):
        q[:, h, a] += float(task.V) ** (-rest) * r[:, y]
    return q


def optimal_q_by_enumeration(task) -> np.ndarray:
    """(P, N, V) Q*(h, a) = max over the responses y through (h, a) of r(y)."""
    q = np.full((task.n_prompts, task.n_nodes, task.V), -np.inf)
    r = task.mean_reward
    for y, _, h, a, _ in _positions(task):
        q[:, h, a] = np.maximum(q[:, h, a], r[:, y])
    return q


def greedy_policy(q: np.ndarray, tol: float = 1e-12) -> np.ndarray:
    """(P, N, V) probabilities of argmax_a q(h, a), uniform over the actions within tol of it."""
    best = q >= q.max(axis=-1, keepdims=True) - tol
    return best / best.sum(axis=-1, keepdims=True)


def rover_policy(q: np.ndarray, rho) -> np.ndarray:
    """(P, N, V) probabilities of ROVER's sampling rule softmax_a(q(h, a) / rho); rho a float or
    an array broadcasting against q (a temperature per prompt: (P, 1, 1))."""
    if not np.all(np.asarray(rho) > 0):
        raise ValueError(f"rho (ROVER's temperature) must be > 0, got {rho!r}")
    z = q / rho
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def sequence_probs(task, cond: np.ndarray) -> np.ndarray:
    """(P, Y) pi(y|x) from conditional probabilities (P, N, V) (zeros allowed)."""
    picked = cond[:, task.token_nodes, task.tokens]  # (P, Y, L)
    return np.where(task.token_mask[None] > 0, picked, 1.0).prod(axis=-1)


def greedy_violations(task, q: np.ndarray, tol: float = 1e-12) -> tuple[int, int]:
    """(nodes where argmax q is not an optimal action, nodes counted): every (prompt, node)."""
    q_star = optimal_q_by_enumeration(task)
    best = q >= q.max(axis=-1, keepdims=True) - tol
    optimal = q_star >= q_star.max(axis=-1, keepdims=True) - tol
    bad = (best & ~optimal).any(axis=-1)
    return int(bad.sum()), int(bad.size)


def expected_distinct_correct(task, seq_p: np.ndarray, k: int) -> np.ndarray:
    """(P,) E[# distinct correct responses among k i.i.d. draws] = sum_{y correct} 1 - (1 -
    pi(y))^k."""
    return (task.correct * (1.0 - (1.0 - seq_p) ** k)).sum(axis=1)


def random_binary_tree(
    V: int, L: int, prompts: int, p: float, seed: int, graded: bool = False
) -> EosTokenTree:
    """A tokentree-eos tree whose responses are correct i.i.d. with probability p (reward
    1{correct}; a prompt with none gets one response, drawn uniformly, made correct) or,
    ``graded``, whose rewards are i.i.d. U(0, 1) (the best response correct); ref uniform."""
    if not 0 < p < 1:
        raise ValueError(f"p (the probability a response is correct) must be in (0, 1), got {p}")
    prefixes, responses = eos_tree_structure(V, L)
    rng = np.random.default_rng(seed)
    Y = len(responses)
    if graded:
        r = rng.uniform(size=(prompts, Y))
        correct = r >= r.max(axis=1, keepdims=True)
    else:
        correct = rng.random((prompts, Y)) < p
        none = ~correct.any(axis=1)  # a problem with no correct answer gives no signal: plant one
        correct[none, rng.integers(0, Y, size=int(none.sum()))] = True
        r = correct.astype(np.float64)
    return EosTokenTree(
        V,
        L,
        r[..., None],
        np.ones_like(r)[..., None],
        correct,
        np.full((prompts, len(prefixes), V), 1.0 / V),
        name=f"rover-random-tree:V={V},L={L},prompts={prompts},p={p:g},graded={graded},seed={seed}",
    )


def rover_at_accuracy(task, q: np.ndarray, target: float, iters: int = 60) -> np.ndarray:
    """(P, Y) ROVER's softmax policy at, per prompt, the largest temperature rho whose accuracy
    is >= target (bisection on log rho over [1e-4, 10]; accuracy falls as rho grows)."""
    lo = np.full(task.n_prompts, 1e-4)
    hi = np.full(task.n_prompts, 10.0)
    for _ in range(iters):
        mid = np.sqrt(lo * hi)
        seq = sequence_probs(task, rover_policy(q, mid[:, None, None]))
        ok = (seq * task.correct).sum(1) >= target
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    return sequence_probs(task, rover_policy(q, lo[:, None, None]))


def policy_gradient_at_accuracy(
    task, target: float, lr: float = 5.0, max_steps: int = 5000
) -> np.ndarray:
    """(P, Y) the baseline ROVER improves on: exact policy-gradient ascent on the accuracy
    J(theta) = sum_y pi_theta(y) 1{y correct} of a softmax logit table from the uniform policy,
    each prompt's policy taken at the first step where its accuracy is >= target."""
    import torch

    from theorylab.algorithms.deep.twins import LogitTable

    pol = LogitTable(task)
    correct = torch.as_tensor(task.correct, dtype=torch.float64)
    out = np.full((task.n_prompts, task.n_responses), np.nan)
    for _ in range(max_steps):
        seq = pol.seq_logp(pol.cond_logp()).exp()
        acc = (seq * correct).sum(1)
        hit = np.isnan(out[:, 0]) & (acc.detach().numpy() >= target)
        out[hit] = seq.detach().numpy()[hit]
        if not np.isnan(out[:, 0]).any():
            return out
        (g,) = torch.autograd.grad(acc.sum(), pol.theta)
        with torch.no_grad():
            pol.theta += lr * g
    raise RuntimeError(f"policy gradient did not reach accuracy {target} in {max_steps} steps")


def sampled_uniform_q(task, n: int, rng: np.random.Generator) -> np.ndarray:
    """(P, N, V) the Monte Carlo estimate of Q^{pi_u}: at every (x, h, a), the mean reward of n
    responses completed by the uniform policy after (h, a) (ROVER's evaluation by roll-outs)."""
    if n < 1:
        raise ValueError(f"n (roll-outs per (h, a)) must be >= 1, got {n!r}")
    log_u = np.full((task.n_prompts, task.n_nodes, task.V), -np.log(task.V))
    cont = task.continuations(log_u)  # (P, N, V, Y)
    P, N, V, Y = cont.shape
    flat = cont.reshape(-1, Y)
    idx = draws_per_row(rng, flat, n)  # (P N V, n)
    r = np.repeat(task.mean_reward, N * V, axis=0)  # (P N V, Y)
    return np.take_along_axis(r, idx, axis=1).mean(axis=1).reshape(P, N, V)
