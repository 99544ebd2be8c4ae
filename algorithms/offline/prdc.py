r"""PRDC: policy regularisation with a dataset constraint, on a metric-state tabular MDP.

Seed row ``seed-catalogue-002-004.md#C3``: Y. Ran, Y.-C. Li, F. Zhang, Z. Zhang, Y. Yu, "Policy
Regularization with Dataset Constraint for Offline Reinforcement Learning", ICML 2023
(arXiv:2306.06569).

What was read [V]: the abstract as quoted in the catalogue ("when updating the policy in a given
state, PRDC searches the entire dataset for the nearest state-action sample and then restricts
the policy with the action of this sample"; "distribution and support constraints are overly
conservative"; PRDC "can alleviate offline RL's fundamentally challenging value overestimation
issue with a bounded performance gap"), and public PRDC code (TD3+BC-based actor updates): a
KD-tree (``scipy.spatial.KDTree``) over the dataset's ``[beta * s, a]`` rows, queried with
``[beta * s, pi(s)]`` (k = 1, Euclidean); the actor's loss
``-(alpha / mean |Q(s, pi(s))|) Q(s, pi(s)) + ||pi(s) - a_NN||^2`` with alpha = 2.5 and
beta = 2 by default. Not read: the paper's theorems and their constants.

Reconstructed [A] (a tabular-metric version, as the issue allows):

* coordinates: state s is the point ``x_s = -1 + 2 s / (S - 1)``, action a the control
  ``u_a = -1 + 2 a / (A - 1)`` (the grids of ``point-mass`` and ``gp-dynamics``; on other tabular
  models, the index grid rescaled);
* the dataset constraint: for every grid pair (s, a) the nearest dataset sample
  (s_i, a_i) = argmin_i sqrt(beta^2 (x_s - x_i)^2 + (u_a - u_i)^2) (``scipy.spatial.cKDTree``
  over the rows ``[beta x_i, u_i]``), and the penalty ``pen(s, a) = (u_a - u_i)^2``; it depends on
  the data and beta only, so it is computed once;
* the critic (simplified [A]): a critic that is Lipschitz in the state and extrapolates to
  actions the data lack, as a network does -- at every grid state s a polynomial of degree
  ``degree_u`` (default 1: linear) in the control, ``Q(s, a) = sum_j w_{s,j} P_j(u_a)``
  (Legendre P_j), fit by ridge least squares (ridge 1e-6) to the TD targets
  ``r_i + gamma Q_k(s'_i, pi_k(s'_i))`` of the current policy (TD3's target without its noise),
  the samples weighted by a Gaussian kernel in the state, exp(-(x_s - x_i)^2 / (2 h^2)),
  h = ``bandwidth`` (default one grid spacing, 2 / (S - 1)): data at nearby states inform Q(s, .),
  which is what makes a neighbouring state's action "near" in PRDC's metric;
* the actor (simplified [A]): the exact minimiser of the per-state actor loss over the action
  grid instead of gradient steps, ``pi_{k+1}(s) = argmax_a lam Q_{k+1}(s, a) - pen(s, a)`` with
  TD3+BC's normalisation lam = alpha / mean_i |Q_{k+1}(s_i, pi_k(s_i))|;
* ``constraint=False`` drops the penalty (pi_{k+1} greedy in Q_{k+1}: the unregularised
  actor-critic, the control whose critic over-estimates the actions the data lack).

Returned: the policy (B, S), its Q on the grid (B, S, A), V_hat(s) = Q(s, pi(s)),
``value_estimate`` V_hat(mu0); ``info["q_max"] (B, K+1)`` the largest Q(s, pi_k(s)) over the
dataset's states per iteration, ``info["penalty"] (B, S, A)``.
"""

from __future__ import annotations

import numpy as np
from numpy.polynomial import legendre
from scipy.spatial import cKDTree

from theorylab.algorithms.offline.empirical import require_data
from theorylab.algorithms.offline.result import OfflineResult

ALPHA, BETA = 2.5, 2.0  # the public PRDC code's defaults


def grid_coordinates(n: int) -> np.ndarray:
    """The points -1 + 2 i / (n - 1), i = 0..n-1 (n,)."""
    return np.linspace(-1.0, 1.0, n)


def dataset_constraint_penalty(
    states: np.ndarray, actions: np.ndarray, S: int, A: int, beta: float
) -> np.ndarray:
    """pen (S, A): (u_a - u_NN)^2 with (s_NN, a_NN) the dataset sample nearest (s, a) in
    sqrt(beta^2 dx^2 + du^2) (module docstring). states, actions: one seed's (N,) samples."""
    x, u = grid_coordinates(S), grid_coordinates(A)
    tree = cKDTree(np.c_[beta * x[states], u[actions]])  # (N, 2) rows [beta x_i, u_i]
    qs = np.stack(np.meshgrid(beta * x, u, indexing="ij"), axis=-1).reshape(-1, 2)  # (S A, 2)
    _, idx = tree.query(qs, k=1)
    return ((qs[:, 1] - u[actions[idx]]) ** 2).reshape(S, A)


def action_features(A: int, degree_u: int) -> np.ndarray:
    """phi (A, F) = P_j(u_a), j = 0..degree_u."""
    return legendre.legvander(grid_coordinates(A), degree_u)


def fit_critic(
    phi: np.ndarray, s: np.ndarray, a: np.ndarray, y: np.ndarray, kernel: np.ndarray
) -> np.ndarray:
    """Q (S, A): at every state, ridge least squares of y on phi[a] over the samples weighted by
    ``kernel (S, N)`` (module docstring)."""
    F = phi.shape[1]
    X = phi[a]  # (N, F)
    gram = (kernel @ (X[:, :, None] * X[:, None, :]).reshape(len(a), F * F)).reshape(-1, F, F)
    rhs = kernel @ (y[:, None] * X)  # (S, F)
    coef = np.linalg.solve(gram + 1e-6 * np.eye(F)[None], rhs[..., None])[..., 0]  # (S, F)
    return coef @ phi.T


def state_kernel(s: np.ndarray, S: int, bandwidth: float, w: np.ndarray) -> np.ndarray:
    """K (S, N): exp(-(x_s - x_i)^2 / (2 h^2)) times the sample weights, 0 below 1e-12."""
    x = grid_coordinates(S)
    K = np.exp(-((x[:, None] - x[s][None, :]) ** 2) / (2.0 * bandwidth**2)) * w[None, :]
    return np.where(K > 1e-12, K, 0.0)


def check_prdc_inputs(dataset, beta, alpha, iterations, degree_u, bandwidth) -> None:
    """One-line errors for every bad input, before any work."""
    if dataset.gamma is None or dataset.stages is not None:
        raise ValueError("prdc is stated for discounted data (give a model with gamma=...)")
    require_data(dataset, "prdc")  # an empty dataset: one line, not an IndexError in the fit
    h = 1.0 if bandwidth is None else bandwidth
    for name, value in (("beta", beta), ("alpha", alpha), ("bandwidth", h)):
        ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
            value, bool
        )
        if not ok or not np.isfinite(value) or value <= 0:
            raise ValueError(f"prdc: {name} must be a finite number > 0, got {value!r}")
    for name, value, low in (
        ("iterations", iterations, 1),
        ("degree_u", degree_u, 0),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"prdc: {name} must be an integer >= {low}, got {value!r}")


def prdc(
    dataset,
    *,
    beta: float = BETA,
    alpha: float = ALPHA,
    iterations: int = 100,
    degree_u: int = 1,
    bandwidth: float | None = None,
    constraint: bool = True,
) -> OfflineResult:
    """PRDC's tabular-metric actor-critic on every seed of ``dataset`` (module docstring)."""
    check_prdc_inputs(dataset, beta, alpha, iterations, degree_u, bandwidth)
    S, A, g = dataset.S, dataset.A, float(dataset.gamma)
    h = 2.0 / (S - 1) if bandwidth is None else float(bandwidth)
    B, N = dataset.states.shape
    phi = action_features(A, int(degree_u))  # (A, F)
    policy, Qs, pens = np.zeros((B, S), dtype=np.int64), np.zeros((B, S, A)), np.zeros((B, S, A))
    q_max = np.zeros((B, int(iterations) + 1))
    for b in range(B):
        s, a = dataset.states[b], dataset.actions[b]
        r, s2 = dataset.rewards[b], dataset.next_states[b]
        w = np.ones(N) if dataset.weights is None else dataset.weights[b]
        near = dataset_constraint_penalty(s, a, S, A, float(beta))  # (S, A)
        pen = near if constraint else np.zeros((S, A))
        pi = np.argmin(near, axis=1)  # start: the action nearest the data
        K = state_kernel(s, S, h, w)  # (S, N)
        Q = np.zeros((S, A))
        seen = np.unique(s)
        for k in range(int(iterations)):
            Q = fit_critic(phi, s, a, r + g * Q[s2, pi[s2]], K)
            scale = np.abs(Q[s, pi[s]]).mean()
            lam = float(alpha) / scale if scale > 0 else float(alpha)
            pi = np.argmax(lam * Q - pen, axis=1)
            q_max[b, k + 1] = float(Q[seen, pi[seen]].max())
        policy[b], Qs[b], pens[b] = pi, Q, pen
    V_hat = np.take_along_axis(Qs, policy[..., None], axis=-1)[..., 0]  # (B, S)
    return OfflineResult(
        algorithm="prdc",
        policy=policy,
        value_estimate=V_hat @ dataset.mu0,
        V=V_hat,
        Q=Qs,
        pessimistic=False,
        params={
            "beta": float(beta),
            "alpha": float(alpha),
            "iterations": int(iterations),
            "degree_u": int(degree_u),
            "bandwidth": h,
            "constraint": bool(constraint),
        },
        info={"q_max": q_max, "penalty": pens},
    )
