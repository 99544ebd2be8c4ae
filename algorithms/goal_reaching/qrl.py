r"""QRL: optimal goal reaching by quasimetric learning, solved exactly on tabular models.

Seed reference: ``seed-catalogue-000.md#65`` and ``seed-catalogue-001#73`` (one paper).
Paper: Tongzhou Wang, Antonio Torralba, Phillip Isola, Amy Zhang, "Optimal Goal-Reaching
Reinforcement Learning via Quasimetric Learning", ICML 2023, arXiv:2304.01203.

What was read [V] and what was reconstructed [A]/[M]:

* [V] from the authors' code (``quasimetric-learning/quasimetric-rl``,
  ``quasimetric_rl/modules/quasimetric_critic/losses/{global_push,local_constraint}.py``): the
  practical objective minimises ``E_{s, g random} softplus(offset - d(s, g); beta)`` (global push,
  defaults beta = 0.1, offset = 15) plus ``lambda (E_{(s, s') observed} relu(d(s, s') - c)^2 -
  eps^2)`` (local constraint, step cost c = 1, eps = 0.25, lambda = softplus of a raw parameter
  that ascends while d descends, initial lambda 0.01); d is an Interval Quasimetric Embedding
  (IQE), so the triangle inequality holds by construction.
* [A] the exact form, from the abstract and the catalogue rows (the paper's full text was not
  read): the objective is ``max_d E_{s, g}[d(s, g)]`` over quasimetrics d (d >= 0, d(s, s) = 0,
  d(s, g) <= d(s, w) + d(w, g)) subject to ``d(s, s') <= c`` for every observed transition. Its
  optimum is the shortest-path distance d*: every feasible d is <= d* pointwise (chain the local
  constraints along a shortest path with the triangle inequality), and d* is feasible. Here it is
  the linear programme (:func:`solve_qrl_lp`, scipy's HiGHS) over the S^2 entries with the S^3
  triangle constraints, with ``d <= cap`` (the role of the softplus offset: unreachable goals get
  cap; ``cap`` defaults to S c, above every finite distance).
* [M] the relaxation (:func:`fit_qrl_embedding`): the paper's Lagrangian on the tabular embedding
  ``d(s, g) = max_k relu(z_g[k] - z_s[k])`` (IQE with one-element components and the max
  reduction; with K = S dimensions it represents every quasimetric on S points: take
  ``z_x[w] = -d*(x, w)``), full-batch over all pairs and all observed transitions, gradient
  descent (Adam) on z and ascent on the raw multiplier.

Deterministic vs stochastic dynamics: the constraint ``d(s, s') <= c`` is imposed for every
*observed* s', so on a stochastic model the LP returns the shortest path of the support graph,
an optimistic distance (a lucky outcome taken as a choice) below the optimal expected cost-to-go;
``tests/test_goal_reaching.py`` and the claim measure the gap on ``digraph:slip=0.3``.

Deviations: c is the same positive step cost for every transition (the authors' ``step_cost``);
no actor is trained (the greedy policy ``argmin_a c + E d(s', g)`` of the runner takes its
place, as in the paper's discrete-action planning).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True)
class GoalData:
    """Observed transitions of a goal-reaching problem: M edges ``src[i] -> dst[i]`` on S
    states, each of step cost ``step_cost`` (duplicates allowed)."""

    S: int
    src: np.ndarray  # (M,) int
    dst: np.ndarray  # (M,) int


@dataclass(frozen=True)
class QuasimetricFit:
    """distances: ``(S, S)`` the learned d(s, g); cap, step_cost: the scale it was fitted on;
    config: the algorithm's parameters and diagnostics."""

    distances: np.ndarray  # (S, S)
    cap: float
    step_cost: float
    config: dict[str, Any] = field(default_factory=dict)


def check_step_cost(step_cost: float, cap: float | None, S: int) -> float:
    """The cap (S c when None), after checking c > 0 and cap >= c."""
    if not step_cost > 0:
        raise ValueError(f"step_cost must be positive, got step_cost={step_cost!r}")
    cap = S * step_cost if cap is None else float(cap)
    if not cap >= step_cost:
        raise ValueError(f"cap must be at least step_cost={step_cost!r}, got cap={cap!r}")
    return cap


# ------------------------------------------------------------------ exact: the linear programme
# Variables x = d.ravel() (entry (s, g) at s S + g); scipy's HiGHS returns a vertex, so the
# distances come back exact (integers for unit steps), not to an interior-point tolerance.
def quasimetric_equalities(S: int) -> sp.csr_array | None:
    """Equality rows on d beyond d(s, s) = 0: none, a quasimetric may be asymmetric."""
    return None


def triangle_rows(S: int) -> sp.csr_array:
    """``(S (S-1) (S-2), S^2)`` rows of ``d(s, g) - d(s, w) - d(w, g) <= 0`` over distinct
    s, w, g (the others hold trivially once d(s, s) = 0)."""
    s, w, g = np.meshgrid(np.arange(S), np.arange(S), np.arange(S), indexing="ij")
    keep = (s != w) & (w != g) & (s != g)
    s, w, g = s[keep], w[keep], g[keep]  # (T,)
    rows = np.repeat(np.arange(s.size), 3)
    cols = np.stack([s * S + g, s * S + w, w * S + g], axis=1).ravel()
    vals = np.tile([1.0, -1.0, -1.0], s.size)
    return sp.csr_array((vals, (rows, cols)), shape=(s.size, S * S))


def spread_weights(S: int) -> np.ndarray:
    """``(S^2,)`` QRL's max-spread objective: every pair's d counts once (the mean over pairs
    up to the factor S^2)."""
    return np.ones(S * S)


def solve_qrl_lp(data: GoalData, step_cost: float, cap: float) -> np.ndarray:
    """``(S, S)`` maximiser of the sum of d over quasimetrics d <= cap with d(s, s') <= c on the
    observed edges (the module docstring's [A] form)."""
    from scipy.optimize import linprog

    S = data.S
    upper = np.full((S, S), float(cap))  # (S, S)
    upper[data.src, data.dst] = np.minimum(upper[data.src, data.dst], step_cost)
    upper[np.diag_indices(S)] = 0.0
    eq = quasimetric_equalities(S)
    res = linprog(
        -spread_weights(S),
        A_ub=triangle_rows(S),
        b_ub=np.zeros(S * (S - 1) * (S - 2)),
        A_eq=eq,
        b_eq=None if eq is None else np.zeros(eq.shape[0]),
        bounds=np.stack([np.zeros(S * S), upper.ravel()], axis=1),
        method="highs",
    )
    if res.status != 0:
        raise RuntimeError(f"the QRL linear programme did not solve: {res.message}")
    return res.x.reshape(S, S)


def fit_qrl_lp(data: GoalData, step_cost: float = 1.0, cap: float | None = None) -> QuasimetricFit:
    """QRL solved exactly (the linear programme); see the module docstring."""
    cap = check_step_cost(step_cost, cap, data.S)
    d = solve_qrl_lp(data, step_cost, cap)
    return QuasimetricFit(d, cap, float(step_cost), {"method": "lp"})


# ---------------------------------------------------------- the paper's practical relaxation
def embedding_distances(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``d(s, g) = max_k relu(z[g, k] - z[s, k])`` for z ``(S, K)``: d ``(S, S)`` and the
    maximising k ``(S, S)``."""
    diff = z[None, :, :] - z[:, None, :]  # (S, G, K): z[g, k] - z[s, k]
    k = diff.argmax(axis=2)  # (S, G)
    top = np.take_along_axis(diff, k[:, :, None], axis=2)[:, :, 0]  # (S, G)
    return np.maximum(top, 0.0), k


def embedding_gradient(z: np.ndarray, k: np.ndarray, d: np.ndarray, G: np.ndarray) -> np.ndarray:
    """``(S, K)`` gradient of ``sum G[s, g] d(s, g)`` in z (d, k from :func:`embedding_distances`;
    a subgradient: relu'(0) = 0 and the argmax's k)."""
    S = z.shape[0]
    G = np.where(d > 0, G, 0.0)  # (S, G)
    grad = np.zeros_like(z)
    rows = np.broadcast_to(np.arange(S)[:, None], (S, S))  # s
    cols = np.broadcast_to(np.arange(S)[None, :], (S, S))  # g
    np.add.at(grad, (cols.ravel(), k.ravel()), G.ravel())
    np.add.at(grad, (rows.ravel(), k.ravel()), -G.ravel())
    return grad


def fit_qrl_embedding(
    data: GoalData,
    step_cost: float = 1.0,
    cap: float | None = None,
    steps: int = 4000,
    lr: float = 0.05,
    epsilon: float = 0.05,
    beta: float = 0.1,
    init_lambda: float = 0.01,
    lambda_lr: float = 0.05,
    dim: int = 0,
    init_scale: float = 1.0,
    seed: int = 0,
) -> QuasimetricFit:
    """QRL's Lagrangian (global push + local constraint, the authors' losses) on the tabular
    max-relu quasimetric embedding, full batch; see the module docstring's [V] and [M]."""
    cap = check_step_cost(step_cost, cap, data.S)
    for name, value in (("steps", steps), ("lr", lr), ("epsilon", epsilon), ("beta", beta)):
        if not value > 0:
            raise ValueError(f"{name} must be positive, got {name}={value!r}")
    if data.src.size == 0:
        raise ValueError("qrl-embedding needs at least one observed transition")
    S = data.S
    K = int(dim) or 4 * S
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=init_scale, size=(S, K))  # (S, K)
    m, v = np.zeros_like(z), np.zeros_like(z)  # Adam moments
    raw = np.log(np.expm1(init_lambda))  # softplus^-1
    off = ~np.eye(S, dtype=bool)
    n_pairs, n_edges = S * (S - 1), data.src.size
    b1, b2 = 0.9, 0.999
    for t in range(1, int(steps) + 1):
        d, k = embedding_distances(z)
        lam = np.log1p(np.exp(raw))
        # global push: d/dd softplus(cap - d; beta) = -sigmoid(beta (cap - d))
        G = np.where(off, -1.0 / (1.0 + np.exp(-beta * (cap - d))), 0.0) / n_pairs  # (S, S)
        excess = np.maximum(d[data.src, data.dst] - step_cost, 0.0)  # (M,)
        np.add.at(G, (data.src, data.dst), lam * 2.0 * excess / n_edges)
        grad = embedding_gradient(z, k, d, G)
        m = b1 * m + (1 - b1) * grad
        v = b2 * v + (1 - b2) * grad**2
        z -= lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + 1e-8)
        violation = float(np.mean(excess**2)) - epsilon**2
        raw += lambda_lr * violation / (1.0 + np.exp(-raw))  # ascent on the raw multiplier
    d, _ = embedding_distances(z)
    excess = np.maximum(d[data.src, data.dst] - step_cost, 0.0)
    config = {
        "method": "embedding",
        "lambda": float(np.log1p(np.exp(raw))),
        "local_violation_rms": float(np.sqrt(np.mean(excess**2))),
    }
    return QuasimetricFit(d, cap, float(step_cost), config)


# ------------------------------------------------------------------ data and the greedy policy
def support_data(P: np.ndarray) -> GoalData:
    """Every transition of a model's support: one edge s -> s' per (s, a, s') with P > 0."""
    s, _, t = np.nonzero(P > 0)
    return GoalData(P.shape[0], s.astype(np.int64), t.astype(np.int64))


def sampled_data(P: np.ndarray, n: int, rng: np.random.Generator) -> GoalData:
    """n transitions: (s, a) uniform, s' ~ P(. | s, a)."""
    S, A, _ = P.shape
    s = rng.integers(0, S, size=n)
    a = rng.integers(0, A, size=n)
    u = rng.random(n)
    t = (P[s, a].cumsum(axis=1) < u[:, None]).sum(axis=1)  # (n,)
    return GoalData(S, s.astype(np.int64), np.minimum(t, S - 1).astype(np.int64))


def greedy_goal_policy(P: np.ndarray, d: np.ndarray, step_cost: float) -> np.ndarray:
    """``(S, G)`` actions ``argmin_a c + sum_s' P(s' | s, a) d(s', g)`` (first index on ties)."""
    Q = step_cost + np.einsum("sat,tg->sag", P, d)  # (S, A, G)
    return Q.argmin(axis=1)
