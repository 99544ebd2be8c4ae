r"""Action grouping: a per-group plug-in model from a generative model, then planning.

Seed reference: ``seed-coverage.md`` row 001#8 (L25). Paper: Yining Li, Peizhong Ju, Ness Shroff,
"Achieving Sample and Computational Efficient Reinforcement Learning by Action Space Reduction via
Grouping", ICLR 2024, arXiv:2306.12981. Only the abstract could be read (stored pages of
openreview.net/forum?id=MOmqfJovQ6 and paperswithcode, searched 2026-11-28) [V]: actions are
partitioned into groups by similarity of transitions and rewards; treating the actions of a group
as identical causes an *approximation* error that falls as the grouping is refined, while the
*estimation* error of the plug-in model grows as it is refined at a fixed sample budget, so the
total loss is minimised at an intermediate grouping. The paper's linear decomposition model of
the intra-group differences, its bounds and its grouping-selection method are not implemented.

What is implemented [A] (reconstructed from the abstract and the catalogue row):

1. A generative model gives ``N`` draws ``(r, s')`` of every pair ``(s, a)``
   (:func:`sample_counts`; Bernoulli rewards of mean ``R[s, a]``).
2. A grouping ``labels (A,)`` in ``0..g-1`` (:func:`nested_groups`: contiguous equal blocks).
   The group model pools the draws of the group's actions, **per state**:
   ``P_hat(s' | s, G) = sum_{a in G} n(s, a, s') / (N |G|)`` and
   ``r_hat(s, G) = sum_{a in G} sum_i r_i(s, a) / (N |G|)`` (:func:`group_model`).
3. Plan on the ``(S, g)`` model by the library's value iteration; the greedy group is played by
   its representative, the group's lowest-index action (:func:`grouped_plugin_policy`) -- [A]:
   every action of a group is identical in the group model, so any fixed choice is a
   tie-break.
4. The loss is exact: ``mean_s V*(s) - V^pi(s)`` on the true MDP (:func:`suboptimality`).

``g = A`` is the ungrouped plug-in (certainty-equivalence) baseline; ``g = 1`` treats every action
as one. The instances (:func:`clustered_mdp`) have hierarchical clusters of actions, the
differences shrinking at each level, so the nested groupings ``g = 1, b_1, b_1 b_2, ...`` trade
approximation for estimation -- the trade-off the claim ``action-grouping-tradeoff``
(``validations/claims/action_grouping.py``) measures.
"""

from __future__ import annotations

import numpy as np

from theorylab.algorithms.planning.evaluation import evaluate_discounted
from theorylab.algorithms.planning.value_iteration import value_iteration
from theorylab.mdps.tabular import TabularMDP


def clustered_mdp(
    rng: np.random.Generator,
    S: int,
    branching: tuple[int, ...],
    weights: tuple[float, ...],
    gamma: float,
) -> TabularMDP:
    """A discounted MDP whose ``A = prod(branching)`` actions form a tree of clusters.

    Every ``(s, a)`` mixes a state's base model with one random component per tree level:
    ``P[s, a] = (1 - sum w) P_0[s] + sum_l w_l Q_l[s, prefix_l(a)]`` (Dirichlet(1) components),
    rewards likewise with uniform components; actions sharing a prefix of length ``l`` share the
    first ``l`` components, so they differ by at most ``sum_{k >= l} w_k`` in total variation.
    """
    if len(branching) != len(weights) or sum(weights) >= 1.0 or min(weights) < 0.0:
        raise ValueError(
            f"weights {weights!r}: expected one non-negative weight per level of branching "
            f"{branching!r}, summing below 1"
        )
    A = int(np.prod(branching))
    w0 = 1.0 - sum(weights)
    P = w0 * rng.dirichlet(np.ones(S), size=S)[:, None, :].repeat(A, 1)  # (S, A, S)
    R = w0 * rng.uniform(size=(S, 1)).repeat(A, 1)  # (S, A)
    block = A
    for b, w in zip(branching, weights, strict=True):
        block //= b
        n_nodes = A // block  # nodes at this level; action a sits under node a // block
        Q = rng.dirichlet(np.ones(S), size=(S, n_nodes))  # (S, n_nodes, S)
        U = rng.uniform(size=(S, n_nodes))  # (S, n_nodes)
        node = np.arange(A) // block  # (A,)
        P += w * Q[:, node]
        R += w * U[:, node]
    return TabularMDP(P, R, np.full(S, 1.0 / S), gamma=gamma, reward_model="bernoulli")


def nested_groups(A: int, g: int) -> np.ndarray:
    """(A,) labels: ``g`` contiguous groups of ``A // g`` actions (``g`` must divide ``A``)."""
    if g < 1 or A % g:
        raise ValueError(f"groups={g!r}: expected a divisor of the number of actions A={A}")
    return np.arange(A) // (A // g)


def sample_counts(
    mdp: TabularMDP, N: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """N generative-model draws of every pair: next-state counts ``(S, A, S)`` and reward sums
    ``(S, A)`` (Bernoulli rewards)."""
    if N < 1:
        raise ValueError(f"N={N!r}: expected a positive number of samples per pair")
    P = mdp.P_dense(0) if hasattr(mdp, "P_dense") else mdp.P
    counts = rng.multinomial(N, P)  # (S, A, S)
    rewards = rng.binomial(N, mdp.R).astype(float)  # (S, A)
    return counts, rewards


def group_model(
    counts: np.ndarray, rewards: np.ndarray, labels: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The pooled plug-in model of a grouping: ``P_hat (S, g, S)`` and ``r_hat (S, g)``."""
    g = int(labels.max()) + 1
    onehot = np.eye(g)[labels]  # (A, g)
    n = np.einsum("sat,ag->sgt", counts, onehot)  # (S, g, S) pooled next-state counts
    tot = n.sum(-1)  # (S, g) = N |G|
    return n / tot[..., None], (rewards @ onehot) / tot


def grouped_plugin_policy(
    counts: np.ndarray, rewards: np.ndarray, labels: np.ndarray, gamma: float
) -> np.ndarray:
    """(S,) actions: plan on the group model, play the greedy group's lowest-index action."""
    P_hat, r_hat = group_model(counts, rewards, labels)
    group = value_iteration(TabularMDP(P_hat, r_hat, gamma=gamma)).policy  # (S,)
    first = np.array([np.flatnonzero(labels == k)[0] for k in range(int(labels.max()) + 1)])
    return first[group]


def suboptimality(mdp: TabularMDP, policy: np.ndarray, V_star: np.ndarray) -> float:
    """Exact ``mean_s V*(s) - V^pi(s)`` (uniform initial distribution)."""
    return float(np.mean(V_star - evaluate_discounted(mdp, policy)))
