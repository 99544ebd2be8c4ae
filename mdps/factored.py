r"""Factored MDPs over n binary state variables with a causal graph (seed row
``seed-catalogue-001.md#72``, C-PSRL; used by ``algorithms/online/c_psrl.py``).

A state is the bit vector ``x = (x_0, ..., x_{n-1})`` encoded as ``s = sum_i x_i 2^i`` (S = 2^n).
Variable i has a parent set ``W_i`` (a tuple of state-variable indices, the causal graph's edges
``j -> i`` for j in W_i; the action is a parent of every variable) and a conditional probability
table ``theta_i (U_i, A)``, U_i = 2^{|W_i|}: given the current state s and action a,

    Pr(x'_i = 1 | s, a) = theta_i[u_i(s), a],   u_i(s) = sum_k x_{W_i[k]}(s) 2^k,

independently over i, so ``P(s' | s, a) = prod_i theta_i^{x'_i} (1 - theta_i)^{1 - x'_i}``.

* :func:`state_bits` ``(S, n)`` the bits of every state;
* :func:`config_index` ``(S,)`` u_W(s) for a parent set W;
* :func:`product_transition` the product above from per-variable probabilities ``(..., S, A, n)``
  (batched: the learner builds B sampled models at once with it);
* :func:`random_factored_mdp` an instance drawn from the prior C-PSRL assumes: parent sets
  uniform among the Z-subsets of the n variables, ``theta ~ Beta(beta, beta)`` per cell, known
  rewards ``r(s) = popcount(s) / n`` (every variable is worth switching on), start at s = 0.
"""

from __future__ import annotations

import itertools

import numpy as np

from theorylab.mdps.tabular import TabularMDP


def state_bits(n: int) -> np.ndarray:
    """``(S, n)`` int64: bit i of state s (S = 2^n)."""
    return (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1


def config_index(parents: tuple[int, ...], n: int) -> np.ndarray:
    """``(S,)`` int64: the configuration u_W(s) = sum_k x_{W[k]}(s) 2^k of parent set W."""
    bits = state_bits(n)  # (S, n)
    u = np.zeros(2**n, dtype=np.int64)
    for k, j in enumerate(parents):
        u += bits[:, j] << k
    return u


def product_transition(p1: np.ndarray) -> np.ndarray:
    """``(..., S, A, S)`` transitions prod_i p1^{x'_i} (1 - p1)^{1 - x'_i} from the per-variable
    probabilities ``p1 (..., S, A, n)`` of x'_i = 1."""
    n = p1.shape[-1]
    bits = state_bits(n).astype(bool)  # (S', n)
    P = np.ones((*p1.shape[:-1], 2**n))  # (..., S, A, S')
    for i in range(n):
        q = p1[..., i, None]  # (..., S, A, 1)
        P *= np.where(bits[:, i], q, 1.0 - q)
    return P


def random_factored_mdp(
    n: int, A: int, Z: int, H: int, rng: np.random.Generator, *, beta: float = 1.0
) -> tuple[TabularMDP, tuple[tuple[int, ...], ...]]:
    """An instance from the C-PSRL prior and its true parent sets ``(W_0, ..., W_{n-1})``.

    Parent sets: uniform among the Z-subsets of {0, ..., n-1} (a variable may be its own
    parent), independently over i; CPTs ``theta_i (2^Z, A)`` i.i.d. Beta(beta, beta); rewards
    ``r(s, a) = popcount(s) / n``; mu0 = the all-zero state. Draw pattern: per variable one
    ``rng.choice`` then one ``rng.beta`` of shape ``(2^Z, A)``.
    """
    if not (1 <= Z <= n):
        raise ValueError(f"degree Z must be in [1, n={n}], got {Z!r}")
    subsets = list(itertools.combinations(range(n), Z))
    parents, p1 = [], np.empty((2**n, A, n))  # (S, A, n)
    for i in range(n):
        W = subsets[int(rng.choice(len(subsets)))]
        theta = rng.beta(beta, beta, size=(2**Z, A))  # (U, A)
        parents.append(W)
        p1[:, :, i] = theta[config_index(W, n)]
    P = product_transition(p1)  # (S, A, S)
    R = np.repeat(state_bits(n).mean(axis=1)[:, None], A, axis=1)  # (S, A)
    mu0 = np.zeros(2**n)
    mu0[0] = 1.0
    mdp = TabularMDP(P, R, mu0, horizon=H, name=f"factored:n={n},A={A},Z={Z},H={H}")
    return mdp, tuple(parents)
