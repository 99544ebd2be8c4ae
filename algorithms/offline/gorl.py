r"""GORL: per-sample policy-constraint weights set by a few expert demonstrations (tabular).

Seed: ``seed-catalogue-000.md#9`` (tier B). Paper: Yang, Wang, Zhang, Huang, Song, "Hundreds
Guide Millions: Adaptive Offline Reinforcement Learning with Expert Guidance", IEEE TNNLS 2023
(arXiv:2309.01448). Read: the abstract [V for: existing methods keep "a single
improvement-constraint balance for all the samples"; "different samples should be treated with
different policy constraint intensities"; "a guiding network, along with only a few expert
demonstrations, to adaptively determine the relative importance of the policy improvement and
policy constraint for every sample"; "the guidance provided by our method is rational and
near-optimal"]. The guiding network's training rule (a meta-gradient through the policy update
towards the demonstrations, as recalled, not read), the base algorithm (TD3+BC) and the theorem
were not read; the tabular algorithm below is reconstructed [M].

Problem: finite horizon H, offline trajectories ``(h, s_i, a_i, r_i, s'_i)`` of mixed quality and a
few expert episodes (the demonstrations). Per sample i a weight ``w_i in [0, 1]`` splits the
actor's loss between policy improvement and a behaviour-cloning constraint (TD3+BC's squared
error, on probability vectors):

    J_h,s(pi) = sum_{i at (h, s)} [ (1 - w_i) <pi, Q_hat_h(s, .)> - alpha w_i ||pi - e_{a_i}||^2 ].

With ``m = sum_i (1 - w_i)``, ``W = sum_i w_i`` and ``c_a = sum_{i: a_i = a} w_i`` this is
``m <pi, q> + 2 alpha <pi, c> - alpha W ||pi||^2 + const``, a concave quadratic whose maximiser on
the simplex is the Euclidean projection (:func:`project_simplex`)

    pi_h(. | s) = Proj_simplex( c / W + m q / (2 alpha W) )      (W > 0)
    pi_h(. | s) = greedy(q)                                       (W = 0: no constraint)

i.e. the weighted behaviour-cloning distribution moved along Q by the ratio improvement /
constraint. States without data play the uniform policy. The critic is exact actor-critic in one
backward pass on the empirical model: ``Q_hat_h = r_hat_h + P_hat_h V_{h+1}`` on pairs with data
(0 elsewhere: rewards are >= 0), ``V_h(s) = <pi_h(. | s), Q_hat_h(s, .)>``.

Weights (``weights=``):

* ``"constant"``: ``w_i = w`` for every sample (the "one-size-fits-all" baseline);
* ``"guided"`` [M, the guiding network in its tabular limit]: the demonstrations' empirical
  action distribution at the sample's stage and state, ``w_i = pi_E_hat_h(a_i | s_i)``; samples
  at (h, s) the demonstrations never visit get ``w``. A sample the expert agrees with is held by
  the constraint (imitated); one it disagrees with is left to policy improvement.

Control (registered mutation ``gorl-weights-inverted``): ``w_i -> 1 - w_i`` for the guided weights.

Deviations: tabular, exact actor step (the maximiser, not a gradient step); one critic pass.
"""

from __future__ import annotations

import math
import time

import numpy as np

from theorylab.algorithms.offline.dataset import InvalidDatasetError, OfflineDataset
from theorylab.algorithms.offline.result import OfflineResult, value_at_start

WEIGHTS = ("constant", "guided")
UNSEEN = ("optimistic", "zero")


def project_simplex(y: np.ndarray) -> np.ndarray:
    """Euclidean projection of every row of ``y (..., A)`` onto the probability simplex
    (sort-based: ``max(y - theta, 0)`` with theta from the largest rho such that
    ``u_rho > (sum_{j <= rho} u_j - 1) / rho``, u sorted decreasingly)."""
    u = -np.sort(-y, axis=-1)  # (..., A) decreasing
    css = np.cumsum(u, axis=-1) - 1.0
    k = np.arange(1, y.shape[-1] + 1)
    rho = (u - css / k > 0).sum(axis=-1, keepdims=True)  # (..., 1) >= 1
    theta = np.take_along_axis(css, rho - 1, axis=-1) / np.maximum(rho, 1)
    return np.maximum(y - theta, 0.0)


def guided_weights(dataset: OfflineDataset, demos: OfflineDataset, w: float) -> np.ndarray:
    """``w_i (B, N)``: the demonstrations' empirical action frequency at (h, s_i) for a_i, or
    ``w`` where the demonstrations never visit (h, s_i)."""
    B, S, A, H = dataset.n_seeds, dataset.S, dataset.A, dataset.horizon
    n = np.zeros((B, H, S, A))
    b = np.broadcast_to(np.arange(B)[:, None], demos.states.shape)
    np.add.at(n, (b, demos.stages, demos.states, demos.actions), 1.0)
    tot = n.sum(axis=-1, keepdims=True)  # (B, H, S, 1)
    freq = np.where(tot > 0, n / np.maximum(tot, 1.0), np.nan)  # (B, H, S, A)
    bb = np.broadcast_to(np.arange(B)[:, None], dataset.states.shape)
    wi = freq[bb, dataset.stages, dataset.states, dataset.actions]  # (B, N)
    return np.where(np.isnan(wi), w, wi)


def gorl_actor(q: np.ndarray, c: np.ndarray, m: np.ndarray, W: np.ndarray, alpha: float):
    """The actor's maximiser ``pi (..., A)`` from ``q, c (..., A)``, ``m, W (...)`` (module
    docstring): projection where W > 0, greedy (ties to the smallest index) where W = 0."""
    A = q.shape[-1]
    # W = 0 rows take the greedy branch below; dividing by 1 there (not by 1e-300) keeps their
    # discarded projection finite instead of overflowing
    safe = np.where(W > 0, np.maximum(W, 1e-300), 1.0)[..., None]
    proj = project_simplex(c / safe + m[..., None] * q / (2.0 * alpha * safe))
    greedy = np.eye(A)[q.argmax(axis=-1)]
    return np.where((W > 0)[..., None], proj, greedy)


def gorl(
    dataset: OfflineDataset,
    *,
    demos: OfflineDataset | None = None,
    weights: str = "guided",
    w: float = 0.5,
    alpha: float = 1.0,
    unseen: str = "optimistic",
    sample_weights: np.ndarray | None = None,
) -> OfflineResult:
    """GORL's tabular actor-critic (module docstring). ``sample_weights (B, N)`` overrides the
    rule (for tests and controls). Returns a stochastic policy ``(B, H, S, A)``."""
    _check(dataset, demos, weights, w, alpha)
    if unseen not in UNSEEN:
        raise ValueError(f"gorl: unseen must be one of {UNSEEN}, got {unseen!r}")
    t0 = time.perf_counter()
    B, S, A, H = dataset.n_seeds, dataset.S, dataset.A, dataset.horizon
    if sample_weights is not None:
        wi = np.asarray(sample_weights, dtype=float)
    elif weights == "guided":
        wi = guided_weights(dataset, demos, w)
    else:
        wi = np.full(dataset.states.shape, float(w))
    wi = transform_weights(wi)
    rows = np.ones(dataset.states.shape) if dataset.weights is None else dataset.weights  # (B, N)
    b = np.broadcast_to(np.arange(B)[:, None], dataset.states.shape)
    idx = (b, dataset.stages, dataset.states, dataset.actions)
    n = np.zeros((B, H, S, A))
    r_sum = np.zeros((B, H, S, A))
    N = np.zeros((B, H, S, A, S))
    c = np.zeros((B, H, S, A))
    np.add.at(n, idx, rows)
    np.add.at(r_sum, idx, rows * dataset.rewards)
    np.add.at(N, (*idx, dataset.next_states), rows)
    np.add.at(c, idx, rows * wi)
    W = c.sum(axis=-1)  # (B, H, S)
    m = n.sum(axis=-1) - W  # (B, H, S)
    safe = np.maximum(n, 1.0)
    V = np.zeros((B, H + 1, S))
    Q = np.zeros((B, H, S, A))
    pi = np.empty((B, H, S, A))
    for h in range(H - 1, -1, -1):
        PV = np.einsum("bsat,bt->bsa", N[:, h], V[:, h + 1]) / safe[:, h]
        fill = float(H - h) if unseen == "optimistic" else 0.0
        Q[:, h] = np.where(n[:, h] > 0, r_sum[:, h] / safe[:, h] + PV, fill)
        act = gorl_actor(Q[:, h], c[:, h], m[:, h], W[:, h], alpha)
        seen = n[:, h].sum(axis=-1) > 0  # (B, S)
        pi[:, h] = np.where(seen[..., None], act, 1.0 / A)
        V[:, h] = (pi[:, h] * Q[:, h]).sum(axis=-1)
    return OfflineResult(
        algorithm="gorl",
        policy=pi,
        value_estimate=value_at_start(V[:, 0], dataset.mu0),
        V=V,
        Q=Q,
        pessimistic=False,
        params={"weights": weights, "w": w, "alpha": alpha, "unseen": unseen},
        info={"seconds": time.perf_counter() - t0, "sample_weights": wi},
    )


def transform_weights(wi: np.ndarray) -> np.ndarray:
    """The weights as used (the identity; the control ``gorl-weights-inverted`` patches it)."""
    return wi


def _check(dataset, demos, weights, w, alpha) -> None:
    if dataset.horizon is None or dataset.stages is None:
        raise InvalidDatasetError(
            f"gorl needs finite-horizon data (stages), got horizon={dataset.horizon}"
        )
    if weights not in WEIGHTS:
        raise ValueError(f"gorl: weights must be one of {WEIGHTS}, got {weights!r}")
    if not (isinstance(w, (int, float)) and 0.0 <= w <= 1.0):
        raise ValueError(f"gorl: w must lie in [0, 1], got {w!r}")
    if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"gorl: alpha must be a finite number > 0, got {alpha!r}")
    if weights == "guided":
        if not isinstance(demos, OfflineDataset):
            raise ValueError(
                "gorl: weights='guided' needs demos= (an OfflineDataset of expert episodes), "
                f"got {type(demos).__name__}"
            )
        got = (demos.S, demos.A, demos.horizon, demos.n_seeds)
        want = (dataset.S, dataset.A, dataset.horizon, dataset.n_seeds)
        if got != want or demos.stages is None:
            raise ValueError(f"gorl: demos have (S, A, H, seeds) = {got}, the dataset has {want}")


__all__ = ["gorl", "gorl_actor", "guided_weights", "project_simplex", "transform_weights"]
