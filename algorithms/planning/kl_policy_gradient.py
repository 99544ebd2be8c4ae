r"""The exact gradient of the KL-regularised objective of a softmax policy on a token tree.

A token-tree task (:mod:`theorylab.mdps.token_tree`) is a deterministic tree MDP: the state is the
prefix, the action the next token, the reward ``r(x, y)`` arrives at the leaf. A tabular softmax
policy has one logit per (prompt, node, token), ``pi(a | x, h) = softmax(theta[x, h])[a]``. Its
KL-regularised objective per prompt is

    F_beta(pi) = E_{y ~ pi} r(x, y) - beta KL(pi(.|x) || ref(.|x)),      beta >= 0,

and the sequence KL is the sum over the tree of the per-node KLs weighted by the node's
probability under pi, so F_beta is the value of the tree MDP whose every step pays
``-beta log(pi(a|h) / ref(a|h))``. Its exact gradient (the policy-gradient theorem for the
softmax parametrisation with the entropy-like term differentiated too; Agarwal et al. 2021,
Lemma C.1, read for the unregularised case [V], with the regularised term derived here [A]) is

    dF / d theta[x, h, a] = P_pi(h) pi(a|h) (Q(h, a) - V(h)),
    Q(h, a) = V(ha) - beta log(pi(a|h) / ref(a|h)),    V(h) = sum_a pi(a|h) Q(h, a),

with ``V(leaf) = r`` and ``P_pi(h)`` the probability that pi writes the prefix h. (The term
``-beta sum_a pi(a|h) d log pi(a|h) / d theta`` that differentiating the log-ratio adds is
``-beta (pi(a|h) - pi(a|h)) = 0``.) One backward pass for V and Q, one forward pass for P_pi:
O(P N V). Checked against the score-function gradient written by enumeration of the responses
(tests/test_policy_optimization.py).

The maximiser over all policies is pi*_beta(y|x) = ref(y|x) exp(r(x, y)/beta) / Z(x)
(:meth:`TokenTreeTask.soft_optimum`); the algorithms of the policy-optimisation family run
gradient ascent on this gradient (:mod:`theorylab.algorithms.policy_optimization`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from theorylab.mdps.token_tree import TokenTreeTask


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Normalised log-probabilities along the last axis."""
    return logits - logsumexp(logits, axis=-1, keepdims=True)


def regularised_gradient(task: TokenTreeTask, logits: np.ndarray, beta: float) -> np.ndarray:
    """``dF_beta / d theta`` (P, N, V) at the softmax policy of ``logits`` (P, N, V) (module
    docstring); beta = 0 gives the unregularised policy gradient of E r."""
    P, V = task.n_prompts, task.V
    logp = log_softmax(np.asarray(logits, dtype=np.float64))  # (P, N, V)
    pi = np.exp(logp)
    log_ref = np.log(task.ref_cond)
    local = np.empty_like(pi)  # pi(a|h) (Q(h, a) - V(h))
    values = task.mean_reward  # (P, V^L) the leaves
    for t in range(task.L - 1, -1, -1):
        lo, hi = task.level_offset(t), task.level_offset(t + 1)
        q = values.reshape(P, V**t, V) - beta * (logp[:, lo:hi] - log_ref[:, lo:hi])
        values = (pi[:, lo:hi] * q).sum(axis=-1)  # (P, V^t)
        local[:, lo:hi] = pi[:, lo:hi] * (q - values[..., None])
    reach = np.ones((P, 1))  # P_pi(h) of the nodes of level t: (P, V^t)
    grad = np.empty_like(pi)
    for t in range(task.L):
        lo, hi = task.level_offset(t), task.level_offset(t + 1)
        grad[:, lo:hi] = reach[..., None] * local[:, lo:hi]
        reach = (reach[..., None] * pi[:, lo:hi]).reshape(P, V ** (t + 1))
    return grad


def sequence_entropy(seq_logp: np.ndarray) -> np.ndarray:
    """H(pi(.|x)) per prompt (P,) from a (P, Y) table of sequence log-probabilities (nats)."""
    p = np.exp(seq_logp)
    return -np.where(p > 0, p * np.where(p > 0, seq_logp, 0.0), 0.0).sum(axis=1)


def weighted_score(task: TokenTreeTask, logits: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``sum_y weights[x, y] * d log pi(y|x) / d theta[x]`` (P, N, V) at the softmax policy of
    ``logits`` (P, N, V), for any (P, Y) table of weights: the score-function form shared by
    every surrogate and estimator written as ``c(y) grad log pi(y)`` (RPG, max@k). On a tree,
    ``d log pi(y) / d theta[h, b] = 1[h on y's path] (1[y_t = b] - pi(b|h))``, so the sum is the
    weights pushed onto the tokens of each path minus the node's total weight times pi(.|h)."""
    logp = log_softmax(np.asarray(logits, dtype=np.float64))  # (P, N, V)
    w = np.asarray(weights, dtype=np.float64)  # (P, Y)
    P, N, V = logp.shape
    on_token = np.zeros((task.n_responses, N * V))  # (Y, N V): 1 per (node, token) of the path
    on_node = np.zeros((task.n_responses, N))  # (Y, N): 1 per node of the path
    rows = np.arange(task.n_responses)
    for t in range(task.L):
        on_token[rows, task.token_nodes[:, t] * V + task.tokens[:, t]] += task.token_mask[:, t]
        on_node[rows, task.token_nodes[:, t]] += task.token_mask[:, t]
    return (w @ on_token).reshape(P, N, V) - (w @ on_node)[..., None] * np.exp(logp)
