r"""PEVI: pessimistic value iteration for offline RL in linear MDPs, and its tabular (one-hot) case.

Paper: Jin, Yang, Wang, "Is pessimism provably efficient for offline RL?", ICML 2021,
arXiv:2012.15085, Algorithm 1 (PEVI, general MDP) and Algorithm 2 (PEVI, linear MDP); theory.md
3.1. The paper's full text was not available to this project: **every formula here is [M]**
(recalled, to be checked against arXiv:2012.15085), as the theory.md entry and the bound cards say.

Bounds carried: ``pevi-linear`` (SubOpt <= 2 beta sum_h E_{pi*}||phi(s_h, a_h)||_{Lambda_h^{-1}}
with
probability 1 - xi, the data-dependent bound; the coverage term is
``coverage.pevi_coverage``) and ``pevi-well-explored`` (c' d^{3/2} H^2 sqrt(zeta / K)).

Algorithm 2 (0-based stages h = 0..H-1; V_hat_H = 0), for h = H-1, ..., 0, on the stage-h samples
tau = 1..K_h of the dataset (weighted when the dataset is):

    Lambda_h = sum_tau phi(s^tau_h, a^tau_h) phi(s^tau_h, a^tau_h)^T + lambda I             (d, d)
    w_h      = Lambda_h^{-1} sum_tau phi(s^tau_h, a^tau_h) (r^tau_h + V_hat_{h+1}(s^tau_{h+1}))
    Gamma_h(s, a) = beta ||phi(s, a)||_{Lambda_h^{-1}} = beta sqrt(phi^T Lambda_h^{-1} phi)
    Q_bar_h  = phi^T w_h - Gamma_h
    Q_hat_h  = min{ Q_bar_h, H - h }^+            (papers, 1-based: min{Q_bar_h, H - h + 1}^+)
    pi_hat_h(s) = argmax_a Q_hat_h(s, a),   V_hat_h(s) = max_a Q_hat_h(s, a)

with ``lambda = 1`` and ``beta = c_beta d H sqrt(zeta)``, ``zeta = log(2 d H K / xi)`` ([M]; c_beta
is an unspecified absolute constant of the paper, default 1, a parameter; ``beta=`` overrides the
formula). K is the number of trajectories (N / H for sampled data).

Tabular PEVI (``pevi-tabular``) is the same algorithm with one-hot features phi(s, a) = e_{(s,a)},
d = S A: Lambda_h = diag(n_h(s, a) + lambda), so in closed form

    (phi^T w_h)(s, a) = sum_tau 1{(s,a)} (r + V_hat_{h+1}(s')) / (n_h(s, a) + lambda)
    Gamma_h(s, a)     = beta / sqrt(n_h(s, a) + lambda)

(the ridge estimate shrinks towards 0 by n / (n + lambda); this is not r_hat + P_hat V). theory.md
3.1 writes Gamma_h = beta / sqrt(N_h + 1), i.e. lambda = 1. The claim ``pevi-one-hot-equals-
tabular`` runs the linear code with explicit one-hot features against this closed form.

Computation: phi depends on (h, s, a) only, so the regression's sufficient statistics are the
per-pair (weighted) counts n_h(s, a) and target sums y_h(s, a) = sum_tau (r + V_hat_{h+1}(s'))
(one bincount each, ``empirical``): ``Lambda_h = Phi_h^T diag(n_h) Phi_h + lambda I`` and
``sum_tau phi y = Phi_h^T y_h``. This is an exact rewriting, O(S A d^2) per stage and seed instead
of O(N d^2); the B d-by-d systems of a stage are solved together (``np.linalg.solve``).
Deviations: ties in argmax within round-off go to the smallest index (``result.greedy``).
"""

from __future__ import annotations

import math
import time

import numpy as np

from theorylab.algorithms.offline.coverage import elliptical_norms, gram_matrices, stage_features
from theorylab.algorithms.offline.dataset import InvalidDatasetError, OfflineDataset
from theorylab.algorithms.offline.empirical import require_data, stage_blocks
from theorylab.algorithms.offline.result import OfflineResult, greedy, value_at_start

MAX_DENSE_FEATURES = 4096  # above this d, one-hot features must use pevi-tabular


def one_hot_features(S: int, A: int) -> np.ndarray:
    """phi(s, a) = e_{s*A + a}: ``(S, A, S*A)``."""
    return np.eye(S * A).reshape(S, A, S * A)


def pevi_beta(d: int, H: int, K: float, xi: float, c_beta: float = 1.0) -> float:
    """``beta = c_beta d H sqrt(zeta)``, ``zeta = log(2 d H K / xi)`` ([M], Jin et al. 2021)."""
    return c_beta * d * H * math.sqrt(math.log(2.0 * d * H * max(K, 1.0) / xi))


def _check(dataset: OfflineDataset, who: str, lam: float, xi: float) -> None:
    if dataset.horizon is None:
        raise InvalidDatasetError(f"{who} is an episodic (finite-horizon) algorithm")
    require_data(dataset, who)
    if not (lam > 0 and math.isfinite(lam)):
        raise ValueError(f"{who}: lambda must be positive and finite, got {lam}")
    if not 0.0 < xi < 1.0:
        raise ValueError(f"{who}: xi must lie in (0, 1), got {xi}")


def pessimistic_q(fit: np.ndarray, gamma: np.ndarray, cap: float) -> np.ndarray:
    """Algorithm 2, line 5: Q_bar_h = min{phi^T w_h - Gamma_h, H - h + 1}^+ (the penalty is
    subtracted; ``(B, S, A)`` arrays). One function for both forms so that the known-bug mutation
    ``pevi-penalty-sign`` of theorylab.validations.mutations can flip the sign of both."""
    return np.clip(fit - gamma, 0.0, cap)


_pessimistic_q_reference = pessimistic_q  # compiled_sweep: a patched pessimistic_q runs in Python


def _resolve_beta(beta, c_beta, d, H, K, xi) -> float:
    if beta is not None:
        if not (beta >= 0 and math.isfinite(beta)):
            raise ValueError(f"beta must be finite and >= 0, got {beta}")
        return float(beta)
    return pevi_beta(d, H, K, xi, c_beta)


def pevi_tabular(
    dataset: OfflineDataset,
    *,
    xi: float = 0.1,
    c_beta: float = 1.0,
    beta: float | None = None,
    lam: float = 1.0,
) -> OfflineResult:
    """Tabular PEVI: PEVI with one-hot features in closed form (module docstring).

    d = S A enters beta. Returns policy ``(B, H, S)``, V ``(B, H+1, S)``, Q ``(B, H, S, A)``.
    """
    _check(dataset, "pevi-tabular", lam, xi)
    t0 = time.perf_counter()
    B, S, A, H = dataset.n_seeds, dataset.S, dataset.A, dataset.horizon
    bval = _resolve_beta(beta, c_beta, S * A, H, dataset.episodes_per_stage, xi)
    blocks = stage_blocks(dataset)
    V = np.zeros((B, H + 1, S))
    Q = np.empty((B, H, S, A))
    for h in range(H - 1, -1, -1):
        blk = blocks[h]
        n = blk.counts()  # (B, S, A)
        y = blk.sums(blk.reward + blk.next_values(V[:, h + 1]))  # (B, S, A) target sums
        fit = y / (n + lam)  # phi^T w_h
        gamma_h = bval * np.sqrt(1.0 / (n + lam))
        Q[:, h] = pessimistic_q(fit, gamma_h, H - h)
        V[:, h] = Q[:, h].max(axis=-1)
    return OfflineResult(
        algorithm="pevi-tabular",
        policy=greedy(Q),
        value_estimate=value_at_start(V[:, 0], dataset.mu0),
        V=V,
        Q=Q,
        pessimistic=True,
        params={"xi": xi, "c_beta": c_beta, "beta": bval, "lam": lam},
        info={"seconds": time.perf_counter() - t0, "d": S * A},
    )


def pevi(
    dataset: OfflineDataset,
    *,
    phi: np.ndarray | None = None,
    xi: float = 0.1,
    c_beta: float = 1.0,
    beta: float | None = None,
    lam: float = 1.0,
) -> OfflineResult:
    """PEVI for linear MDPs (Algorithm 2; module docstring) with features ``phi``.

    phi: ``(S, A, d)`` or ``(H, S, A, d)`` (a stationary map is used at every stage); None means
    one-hot features built explicitly (d = S A; use ``pevi_tabular`` for large S A).
    Returns policy ``(B, H, S)``, V ``(B, H+1, S)``, Q ``(B, H, S, A)``; info has beta and d.
    """
    _check(dataset, "pevi", lam, xi)
    t0 = time.perf_counter()
    B, S, A, H = dataset.n_seeds, dataset.S, dataset.A, dataset.horizon
    if phi is None:
        if S * A > MAX_DENSE_FEATURES:
            raise ValueError(
                f"one-hot features of S A = {S * A} > {MAX_DENSE_FEATURES} dimensions: "
                "use pevi-tabular (the same algorithm in closed form)"
            )
        phi = one_hot_features(S, A)
    phi_all = stage_features(phi, H)  # (H, S, A, d)
    if phi_all.shape[1:3] != (S, A):
        raise ValueError(f"phi must be (S, A, d) = ({S}, {A}, d), got {np.shape(phi)}")
    d = phi_all.shape[-1]
    bval = _resolve_beta(beta, c_beta, d, H, dataset.episodes_per_stage, xi)
    blocks = stage_blocks(dataset)
    V = np.zeros((B, H + 1, S))
    Q = np.empty((B, H, S, A))
    for h in range(H - 1, -1, -1):
        blk = blocks[h]
        phi_h = phi_all[h]  # (S, A, d)
        n = blk.counts()  # (B, S, A)
        y = blk.sums(blk.reward + blk.next_values(V[:, h + 1]))  # (B, S, A)
        gram = gram_matrices(n, phi_h, lam)  # (B, d, d)  Lambda_h
        rhs = np.einsum("sad,bsa->bd", phi_h, y)  # (B, d)  sum_tau phi (r + V)
        w = np.linalg.solve(gram, rhs[..., None])[..., 0]  # (B, d)
        fit = np.einsum("sad,bd->bsa", phi_h, w)  # (B, S, A)
        gamma_h = bval * elliptical_norms(gram, phi_h)
        Q[:, h] = pessimistic_q(fit, gamma_h, H - h)
        V[:, h] = Q[:, h].max(axis=-1)
    return OfflineResult(
        algorithm="pevi",
        policy=greedy(Q),
        value_estimate=value_at_start(V[:, 0], dataset.mu0),
        V=V,
        Q=Q,
        pessimistic=True,
        params={"xi": xi, "c_beta": c_beta, "beta": bval, "lam": lam},
        info={"seconds": time.perf_counter() - t0, "d": d},
    )
