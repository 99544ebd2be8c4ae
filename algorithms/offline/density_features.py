r"""Low-rank MDPs with known density features: off-policy occupancy by forward recursion.

Seed reference ``seed-catalogue-001.md#28`` (tier B). Paper: Huang, Chen & Jiang, *Reinforcement
Learning in Low-Rank MDPs with Density Features* (ICML 2023, arXiv:2302.02252).

Setting [V] (abstract and catalogue row): ``P_h(s' | s, a) = < phi_h(s, a), mu_h(s') >`` with the
right factor ``mu_h (d, S)`` -- the *density features* -- known and ``phi`` unknown. From offline
data that need not be exploratory, the occupancy ``d^pi_h`` of any target policy is estimated by a
forward recursion through the density features; the paper's point is that the natural analysis
turns an additive occupancy error into a multiplicative one in the next step's importance
weights, so the error bound blows up exponentially in h, and that this can be avoided.

The estimator [A] (reconstructed from the abstract; the paper's algorithm and its clipping or
normalisation steps were not read). Since ``d^pi_{h+1}(s') = sum_{s,a} d^pi_h(s) pi_h(a|s)
P_h(s'|s, a) = < E_{d^pi_h x pi_h}[phi_h], mu_h(s') >``, ``d^pi_{h+1}`` lies in the row span of
``mu_h``. With stage-h samples ``(s_i, a_i, s'_i)`` drawn from the data distribution
``nu_h(s, a)`` (known exactly for the library's datasets, ``dataset.data_distribution``):

    rho_i       = d_hat_h(s_i) pi_h(a_i | s_i) / nu_h(s_i, a_i)   (marginal importance weight)
    g(s')       = sum_i w_i rho_i 1{s'_i = s'} / sum_i w_i          (unbiased for P^pi d_hat_h)
    d_hat_{h+1} = mu_h^T (mu_h mu_h^T)^+ mu_h g                    (L2 projection on span mu_h)

``d_hat_0 = mu0``. With the population data (every triple weighted by ``nu_h(s, a) P_h(s'|s, a)``)
``g = P^pi d_hat_h`` exactly and the projection keeps it, so the recursion returns the exact
``d^pi_h`` at every h (the claim checks it to 1e-12). With ``mu = I_S`` the projection is the
identity: the unstructured (tabular) recursion, whose noise lives in S dimensions instead of d.
The weights use the *marginal* ratio ``d_hat_h / nu_h``, never a product over the trajectory:
trajectory-wise importance sampling (:func:`trajectory_is_occupancy`, the baseline) multiplies
``pi / pi_b`` along the path and its variance grows like ``(E[(pi / pi_b)^2])^h``.

``density-model-vi`` (the offline algorithm, ``tl.run``) [M]: the density features applied to
the transition model. With simplex features (``lowrank-simplex``: every ``phi(s, a)`` a
probability vector, ``mu_h`` row-stochastic) each visited pair's next-state law is the mixture
``phi^T mu_h``; its d weights are fitted by maximum likelihood (EM, :func:`mixture_weights`)
instead of S - 1 free probabilities, and backward induction plans on ``P_hat = phi_hat^T mu_h``
(``naive-vi``'s conventions: no data, no backup). The L2 projection of a single pair's empirical
law was tried first and discarded: unbiased, but ``Pi_h V`` leaves V's range and the backup's
variance rose above naive VI's (measured: sub-optimality 0.15 vs 0.02 at N = 3000). The density
features come from the problem (``LowRankMDP.density_features``), as the setting assumes them
known.
"""

from __future__ import annotations

import time

import numpy as np

from theorylab.algorithms.offline.dataset import OfflineDataset
from theorylab.algorithms.offline.empirical import require_data, stage_blocks
from theorylab.algorithms.offline.result import OfflineResult, greedy, value_at_start


def stage_features(mu: np.ndarray, H: int, S: int) -> np.ndarray:
    """``mu`` as ``(H, d, S)`` (a stationary ``(d, S)`` repeated); one-line errors otherwise."""
    mu = np.asarray(mu, dtype=float)
    if mu.ndim == 2:
        mu = np.broadcast_to(mu, (H, *mu.shape))
    if mu.ndim != 3 or mu.shape[0] != H or mu.shape[2] != S:
        raise ValueError(f"density features mu must have shape (H, d, S) = ({H}, d, {S}) or "
                         f"(d, {S}), got {np.shape(mu)}")  # fmt: skip
    return mu


def span_projector(mu_h: np.ndarray) -> np.ndarray:
    """``Pi (S, S) = mu_h^T (mu_h mu_h^T)^+ mu_h``: the L2 projection onto the row span of mu_h."""
    return mu_h.T @ np.linalg.pinv(mu_h @ mu_h.T) @ mu_h


def importance_weights(d_s: np.ndarray, pi_sa: np.ndarray, nu_sa: np.ndarray) -> np.ndarray:
    """The marginal weights ``rho = d_hat_h(s) pi_h(a|s) / nu_h(s, a)`` per sample (0 where
    ``nu = 0``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(nu_sa > 0, d_s * pi_sa / nu_sa, 0.0)


def _split(blk, S: int, A: int):
    pair = blk.sa % (S * A)
    w = np.ones(blk.size) if blk.weight is None else blk.weight
    return pair // A, pair % A, blk.nxt % S, w


def density_occupancy(
    dataset: OfflineDataset, policy: np.ndarray, mu: np.ndarray, nu: np.ndarray | None = None
) -> np.ndarray:
    """Forward-recursion occupancy estimate ``d_hat (B, H, S)`` (module docstring).

    policy: ``(H, S, A)`` target; mu: ``(H, d, S)`` or ``(d, S)`` density features (``np.eye(S)``:
    the unstructured recursion); nu: ``(H, S, A)`` the data's stage distributions (default
    ``dataset.data_distribution``).
    """
    if dataset.horizon is None:
        raise ValueError("density_occupancy: finite-horizon data only (the dataset is discounted)")
    require_data(dataset, "density_occupancy")
    B, S, A, H = dataset.n_seeds, dataset.S, dataset.A, dataset.horizon
    mu = stage_features(mu, H, S)
    nu = dataset.data_distribution if nu is None else np.asarray(nu, dtype=float)
    if nu is None:
        raise ValueError("density_occupancy: the data distribution nu is unknown; give nu=")
    pi = np.asarray(policy, dtype=float)
    d_hat = np.zeros((B, H, S))
    d_hat[:, 0] = np.asarray(dataset.mu0, dtype=float)
    for h, blk in enumerate(stage_blocks(dataset)[: H - 1]):
        s, a, s2, w = _split(blk, S, A)
        rho = importance_weights(d_hat[blk.seed, h, s], pi[h, s, a], nu[h, s, a])  # (n,)
        tot = np.bincount(blk.seed, weights=w, minlength=B)  # (B,)
        g = np.bincount(blk.seed * S + s2, weights=w * rho, minlength=B * S).reshape(B, S)
        g /= np.maximum(tot, 1e-300)[:, None]
        d_hat[:, h + 1] = g @ span_projector(mu[h])  # Pi symmetric
    return d_hat


def trajectory_is_occupancy(
    dataset: OfflineDataset, policy: np.ndarray, behaviour: np.ndarray | None = None
) -> np.ndarray:
    """Trajectory-wise importance sampling: ``d_hat_h(s) = mean_k W_{k,h} 1{s_{k,h} = s}``,
    ``W_{k,h} = prod_{t<h} pi_t(a_t|s_t) / pi_b,t(a_t|s_t)``; ``(B, H, S)`` (the baseline)."""
    if dataset.kind != "trajectories" or dataset.n_episodes is None:
        raise ValueError("trajectory_is_occupancy needs trajectory data (kind='trajectories')")
    beh = dataset.behaviour if behaviour is None else np.asarray(behaviour, dtype=float)
    if beh is None:
        raise ValueError("trajectory_is_occupancy: the behaviour policy is unknown; give it")
    B, S, H, K = dataset.n_seeds, dataset.S, dataset.horizon, dataset.n_episodes
    st = dataset.states[:, : K * H].reshape(B, K, H)
    ac = dataset.actions[:, : K * H].reshape(B, K, H)
    hh = np.arange(H)[None, None, :]
    ratio = np.asarray(policy, dtype=float)[hh, st, ac] / beh[hh, st, ac]  # (B, K, H)
    W = np.concatenate([np.ones((B, K, 1)), np.cumprod(ratio, axis=2)[:, :, :-1]], axis=2)
    d_hat = np.zeros((B, H, S))
    for h in range(H):
        idx = np.arange(B)[:, None] * S + st[:, :, h]  # (B, K) flat (seed, state)
        counts = np.bincount(idx.ravel(), weights=W[:, :, h].ravel(), minlength=B * S)
        d_hat[:, h] = counts.reshape(B, S) / K
    return d_hat


def mixture_weights(counts: np.ndarray, mu_h: np.ndarray, *, iters: int = 200,
                    tol: float = 1e-8) -> np.ndarray:  # fmt: skip
    """Maximum-likelihood simplex weights ``phi_hat (n, d)`` of next-state counts ``(n, S)`` under
    ``P(.) = phi^T mu_h`` (``mu_h (d, S)`` row-stochastic), by EM from the uniform weights.

    EM step: ``phi_k <- phi_k sum_s' C(s') mu_k(s') / q(s') / sum_s' C(s')``, ``q = phi^T mu_h``;
    the log-likelihood never decreases. Rows without counts keep the uniform weights.
    """
    n_pairs, d = counts.shape[0], mu_h.shape[0]
    phi = np.full((n_pairs, d), 1.0 / d)
    tot = counts.sum(axis=1, keepdims=True)  # (n, 1)
    for _ in range(iters):
        q = phi @ mu_h  # (n, S)
        ratio = np.where(counts > 0, counts / np.maximum(q, 1e-300), 0.0)
        new = np.where(tot > 0, phi * (ratio @ mu_h.T) / np.maximum(tot, 1e-300), phi)
        done = np.abs(new - phi).max() <= tol
        phi = new
        if done:
            break
    return phi


def density_model_vi(dataset: OfflineDataset, mu: np.ndarray) -> OfflineResult:
    """Backward induction on the density-feature model ``P_hat_h(.|s, a) = phi_hat^T mu_h``
    (mixture MLE per visited pair, :func:`mixture_weights`; module docstring)."""
    if dataset.horizon is None:
        raise ValueError("density-model-vi: finite-horizon data only (the dataset is discounted)")
    require_data(dataset, "density-model-vi")
    t0 = time.perf_counter()
    B, S, A, H = dataset.n_seeds, dataset.S, dataset.A, dataset.horizon
    mu = stage_features(mu, H, S)
    if mu.min() < 0 or not np.allclose(mu.sum(axis=2), 1.0, atol=1e-9):
        raise ValueError("density-model-vi: density features mu must be row-stochastic (d, S) "
                         "rows (simplex features, as lowrank-simplex has)")  # fmt: skip
    V = np.zeros((B, H + 1, S))
    Q = np.empty((B, H, S, A))
    for h, blk in reversed(list(enumerate(stage_blocks(dataset)))):
        n = blk.counts()  # (B, S, A)
        w = np.ones(blk.size) if blk.weight is None else blk.weight
        s2 = blk.nxt % S
        C = np.bincount(blk.sa * S + s2, weights=w, minlength=B * S * A * S).reshape(-1, S)
        C = C.reshape(B, S * A, S)
        # per seed (EM stops on its own seed's rows, and every product has one seed's shape: a
        # seed's answer is the same alone or batched, bit for bit)
        PV = np.stack([mixture_weights(C[b], mu[h]) @ (mu[h] @ V[b, h + 1]) for b in range(B)])
        Q[:, h] = blk.means(blk.reward, n) + np.where(n > 0, PV.reshape(B, S, A), 0.0)
        V[:, h] = Q[:, h].max(axis=-1)
    return OfflineResult(
        algorithm="density-model-vi",
        policy=greedy(Q),
        value_estimate=value_at_start(V[:, 0], dataset.mu0),
        V=V,
        Q=Q,
        pessimistic=False,
        params={"d": int(mu.shape[1])},
        info={"seconds": time.perf_counter() - t0},
    )
