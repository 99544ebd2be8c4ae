"""Exact Gaussian-process regression on a finite grid (ground floor; no project imports).

The GP learners of the library (NeoRL's dynamics model, ``algorithms/average_reward/neorl.py``;
CONFIG and MBTL on a grid of candidates, ``algorithms/gp_bandit/``) work on a finite set of m
grid points, where the posterior is exact: a Gaussian vector with the prior covariance
``K (m, m)``. This module holds that mathematics once:

* kernels on points ``X (m, d)``: squared exponential ``v exp(-r^2 / (2 l^2))`` and Matern with
  nu in {1/2, 3/2, 5/2} (``v (1 + sqrt(3) r / l) exp(-sqrt(3) r / l)`` for 3/2, ...);
* :func:`gp_posterior` (numba): the posterior of ``y = f(z) + noise eps`` given pooled
  observations (counts ``n`` and sums ``ysum`` per grid point: n repeated observations of one
  point with mean ybar are the same evidence as one observation ybar with variance noise^2 / n),
  by a Cholesky factor of ``K_OO + diag(noise^2 / n_O)`` on the observed points O;
* :func:`condition`: the same posterior one observation at a time, batched over seeds (a
  rank-one update of the mean ``(B, m)`` and covariance ``(B, m, m)``: O(B m^2) per round);
* :func:`prior_draws`: draws of f from the prior (a Cholesky factor with a small jitter);
* :func:`greedy_information_gain`: gamma_T, the maximum information gain
  ``max_{|A| = T} 1/2 log det(I + noise^-2 K_A)`` over multisets of T grid points, bracketed by
  the greedy value ``G_T <= gamma_T <= G_T / (1 - 1/e)`` (the information gain is monotone
  submodular: Nemhauser, Wolsey & Fisher 1978; Srinivas et al. 2010, Section 5).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

MATERN_NUS = (0.5, 1.5, 2.5)
KERNELS = ("se", "matern12", "matern32", "matern52")
_NU = {"matern12": 0.5, "matern32": 1.5, "matern52": 2.5}


def _distances(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Euclidean distances ``(n, m)`` between the rows of ``X (n, d)`` and ``Y (m, d)``."""
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
    d2 = ((X[:, None, :] - Y[None, :, :]) ** 2).sum(axis=-1)
    return np.sqrt(np.maximum(d2, 0.0))


def squared_exponential(X, Y, *, length: float, variance: float = 1.0) -> np.ndarray:
    """``v exp(-||x - y||^2 / (2 l^2))`` between the rows of X and Y: ``(n, m)``."""
    r = _distances(X, Y)
    return variance * np.exp(-(r**2) / (2.0 * length**2))


def matern(X, Y, *, nu: float, length: float, variance: float = 1.0) -> np.ndarray:
    """Matern kernel with nu in {1/2, 3/2, 5/2} (the half-integer closed forms): ``(n, m)``."""
    if nu not in MATERN_NUS:
        raise ValueError(f"matern: nu must be one of {MATERN_NUS}, got {nu!r}")
    s = math.sqrt(2.0 * nu) * _distances(X, Y) / length
    if nu == 0.5:
        poly = 1.0
    elif nu == 1.5:
        poly = 1.0 + s
    else:
        poly = 1.0 + s + s**2 / 3.0
    return variance * poly * np.exp(-s)


def kernel_matrix(kernel: str, X, *, length: float, variance: float = 1.0) -> np.ndarray:
    """The prior covariance ``(m, m)`` of the grid ``X (m, d)`` under ``kernel`` (one of
    :data:`KERNELS`)."""
    if kernel == "se":
        return squared_exponential(X, X, length=length, variance=variance)
    if kernel in _NU:
        return matern(X, X, nu=_NU[kernel], length=length, variance=variance)
    raise ValueError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")


def prior_draws(K: np.ndarray, rng: np.random.Generator, size: int, jitter: float = 1e-9):
    """``size`` draws ``(size, m)`` of a zero-mean Gaussian vector with covariance K (Cholesky
    of ``K + jitter v I``, v the largest prior variance)."""
    m = K.shape[0]
    L = np.linalg.cholesky(K + jitter * float(np.max(np.diag(K))) * np.eye(m))
    return rng.standard_normal((size, m)) @ L.T


@njit(cache=True)
def gp_posterior(prior, K, n, ysum, noise):
    """Exact posterior ``(mu (m,), sigma (m,))`` over the m grid points; ``prior (m,)`` the prior
    mean, ``K (m, m)``, ``n (m,)`` observation counts, ``ysum (m,)`` sums of the observed y."""
    m = prior.shape[0]
    idx = np.nonzero(n > 0)[0]
    k = idx.shape[0]
    mu = prior.copy()
    var = np.empty(m)
    for i in range(m):
        var[i] = K[i, i]
    if k == 0:
        return mu, np.sqrt(var)
    A = np.empty((k, k))
    resid = np.empty(k)
    for a in range(k):
        za = idx[a]
        resid[a] = ysum[za] / n[za] - prior[za]
        for b in range(k):
            A[a, b] = K[za, idx[b]]
        A[a, a] += noise * noise / n[za]
    L = np.linalg.cholesky(A)
    # alpha = A^-1 resid by two triangular solves; V = L^-1 K_(O, .) column by column
    z = np.empty(k)
    for a in range(k):
        acc = resid[a]
        for b in range(a):
            acc -= L[a, b] * z[b]
        z[a] = acc / L[a, a]
    alpha = np.empty(k)
    for a in range(k - 1, -1, -1):
        acc = z[a]
        for b in range(a + 1, k):
            acc -= L[b, a] * alpha[b]
        alpha[a] = acc / L[a, a]
    v = np.empty(k)
    for i in range(m):
        acc_mu = 0.0
        q = 0.0
        for a in range(k):
            acc = K[idx[a], i]
            for b in range(a):
                acc -= L[a, b] * v[b]
            v[a] = acc / L[a, a]
            q += v[a] * v[a]
            acc_mu += K[i, idx[a]] * alpha[a]
        mu[i] += acc_mu
        var[i] = max(var[i] - q, 0.0)
    return mu, np.sqrt(var)


def condition(mean: np.ndarray, cov: np.ndarray, idx: np.ndarray, y: np.ndarray, noise: float):
    """Condition B posteriors on one observation each, in place: ``mean (B, m)``, ``cov (B, m,
    m)``, ``idx (B,)`` the grid point observed, ``y (B,)`` the observation ``f + noise eps``.

    ``mean += s (y - mean_idx) / (s_idx + noise^2)``, ``cov -= s s^T / (s_idx + noise^2)`` with
    ``s = cov[:, :, idx]`` (Gaussian conditioning; the same posterior as :func:`gp_posterior`).
    """
    rows = np.arange(mean.shape[0])
    s = cov[rows, :, idx].copy()  # (B, m)
    denom = s[rows, idx] + noise * noise  # (B,)
    mean += s * ((y - mean[rows, idx]) / denom)[:, None]
    cov -= (s / denom[:, None])[:, :, None] * s[:, None, :]


def posterior_sd(cov: np.ndarray) -> np.ndarray:
    """``(B, m)`` posterior standard deviations from ``cov (B, m, m)`` (round-off clipped at 0)."""
    return np.sqrt(np.maximum(np.diagonal(cov, axis1=-2, axis2=-1), 0.0))


def greedy_information_gain(K: np.ndarray, noise: float, T: int) -> np.ndarray:
    """Greedy information gains ``G_t (T,)``, t = 1..T: each step observes the grid point of the
    largest posterior variance s^2 and adds ``1/2 log(1 + s^2 / noise^2)`` (the chain rule of
    ``1/2 log det(I + noise^-2 K_A)``). ``G_t <= gamma_t <= G_t / (1 - 1/e)``."""
    cov = np.array(K, dtype=np.float64)[None].copy()  # (1, m, m)
    mean = np.zeros((1, K.shape[0]))
    out = np.empty(int(T))
    total = 0.0
    for t in range(int(T)):
        var = np.maximum(np.diagonal(cov[0]), 0.0)
        i = int(np.argmax(var))
        total += 0.5 * math.log1p(var[i] / noise**2)
        out[t] = total
        condition(mean, cov, np.array([i]), np.zeros(1), noise)
    return out
