r"""Variance-weighted pessimistic LSVI for linear MDPs, in the form of Xiong et al.'s LinPEVI-ADV+.

Paper implemented: Xiong, Zhong, Shi, Shen, Wang, Zhang, "Nearly Minimax Optimal Offline
Reinforcement Learning with Linear Function Approximation: Single-Agent MDP and Markov Game",
ICLR 2023, arXiv:2205.15512, LinPEVI-ADV+ (variance-weighted pessimistic value iteration with
the reference-advantage decomposition). The paper itself could not be read here; what is known of
it is [S], from a later paper that runs it as a subroutine (Hybrid RL in linear MDPs, its
Algorithm 1 and the proof sketch of its Theorem 1): "LinPEVI-ADV+ ... with hyperparameters
lambda = 1/H^2, beta_2 = O~(sqrt(d))", "invoking Theorem 2 from Xiong et al. with N > Omega(d^2
H^6), lambda = 1/H^2, beta = O(sqrt(d))", bound sqrt(d) sum_h E_{pi*}||phi(s_h, a_h)||_{Sigma*_h^-1}
(the card ``xiong2023-linpevi-adv-plus``), and "runs in O~(d^3 H N |A|) time".

Until issue 14 this module cited Di, Zhao, Cai, Gu, "Pessimistic Nonlinear Least-Squares Value
Iteration" (PNLSVI; seed catalogue 000, row 26 [A]: "variance-based weighted regression,
variance-estimation subroutine, pessimistic value-iteration planning"), whose linear
specialisation has the same three parts; only PNLSVI's abstract was available and it carries no
readable bound, so the module now follows, names and carries the linear paper. PNLSVI's
qualitative guarantee (1/sqrt(N), and variance weighting beating unweighted pessimism on
heteroscedastic data) is held by the claim ``vw-pevi-heteroscedastic-rate`` (issue 31; control:
the mutation ``vw-pevi-weights-inverted``), with the pilot at ``c_beta_ref = 1 / (sqrt(d) H)``:
at the default 1 the pilot's width d H sqrt(zeta) clips V_ref to 0 on that instance and every
sigma2 falls to the floor up to N = 10^6 (measured; docs/algorithms/pevi.md).

Algorithm (0-based stages; the data of every seed is split by rows into two halves, D_var then
D_main, episodes kept whole for trajectory data):

1. **Reference values** on D_var: unweighted PEVI (``pevi.pevi`` with its lambda = 1,
   beta = c d H sqrt(zeta), ``c_beta_ref``) gives V_ref_h for h = 1..H. [M] deviation:
   LinPEVI-ADV+ takes its pilot values from the reference-advantage variant (LinPEVI-ADV), whose
   formulas were not read; plain PEVI is a valid pessimistic pilot, only less sharp.
2. **Variance estimation** on D_var, per stage h: ridge regressions (lambda) of the target
   ``y = r + V_ref_{h+1}(s')`` and of ``y^2`` on phi give ``E_hat[y | s, a] = phi^T w1`` and
   ``E_hat[y^2 | s, a] = phi^T w2``; then

       ``sigma2_h(s, a) = max{ sigma2_min, [phi^T w2]_{[0, (H-h)^2]} - ([phi^T w1]_{[0, H-h]})^2 }``

   (sigma2_min = 1 [M]: the floor of LinPEVI-ADV+'s max{1, .} as recalled; the paper's
   additional -O~(d H^3 / sqrt(K kappa)) correction of the estimate is not applied).
3. **Variance-weighted pessimistic LSVI** on D_main, for h = H-1..0:

       Lambda_h = sum_tau phi phi^T / sigma2_h(s^tau, a^tau) + lambda I
       w_h      = Lambda_h^{-1} sum_tau phi (r^tau + V_hat_{h+1}(s'^tau)) / sigma2_h(s^tau, a^tau)
       Q_hat_h  = min{ phi^T w_h - beta ||phi||_{Lambda_h^{-1}}, H - h }^+,  V_hat_h = max_a Q_hat_h

   with ``lambda = 1/H^2`` ([S], the default; until issue 14 lambda = 1, PEVI's) and
   ``beta = c_beta sqrt(d zeta)``, ``zeta = log(2 d H K / xi)`` ([S] for the order O~(sqrt(d)),
   [M] for the log and c_beta = 1). The regression on r + V_hat_{h+1} equals the sum of the
   reference regression (on r + V_ref) and the advantage regression (on V_hat - V_ref) over the
   same samples: the reference-advantage decomposition changes the analysis (the width beta), not
   this estimate.

Because sigma2_h, like phi, depends on (h, s, a) only, the weighted statistics are again per-pair
sums (``Phi^T diag(n / sigma2) Phi``), so the cost is that of two PEVI passes plus two extra
regressions per stage. With ``split=False`` both steps use all the data (not the analysed
algorithm; for ablations).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from theorylab.algorithms.offline.coverage import elliptical_norms, gram_matrices, stage_features
from theorylab.algorithms.offline.dataset import InvalidDatasetError, OfflineDataset
from theorylab.algorithms.offline.empirical import require_data, stage_blocks
from theorylab.algorithms.offline.pevi import MAX_DENSE_FEATURES, one_hot_features, pevi
from theorylab.algorithms.offline.result import OfflineResult, greedy, value_at_start


def vw_beta(d: int, H: int, K: float, xi: float, c_beta: float = 1.0) -> float:
    """``beta = c_beta sqrt(d zeta)``, ``zeta = log(2 d H K / xi)`` ([M])."""
    return c_beta * math.sqrt(d * math.log(2.0 * d * H * max(K, 1.0) / xi))


def split_halves(ds: OfflineDataset) -> tuple[OfflineDataset, OfflineDataset]:
    """The first and second half of every seed's rows (whole episodes for trajectory data)."""
    if ds.kind == "trajectories" and ds.n_episodes is not None:
        k1 = ds.n_episodes // 2
        cut = k1 * ds.horizon
        n1, n2 = k1, ds.n_episodes - k1
    else:
        cut = ds.N // 2
        n1 = n2 = None

    def part(sl, n_ep):
        def take(a):
            return None if a is None else np.ascontiguousarray(a[:, sl])

        return replace(
            ds,
            states=take(ds.states),
            actions=take(ds.actions),
            rewards=take(ds.rewards),
            next_states=take(ds.next_states),
            stages=take(ds.stages),
            weights=take(ds.weights),
            n_episodes=n_ep,
        )

    if ds.weights is not None:  # population data: halve the weights instead of the rows
        half = replace(ds, weights=ds.weights / 2.0)
        return half, half
    return part(slice(0, cut), n1), part(slice(cut, None), n2)


def _ridge_fit(n, y, phi_h, lam):
    """Ridge fit phi^T w of per-pair target sums y with (weighted) counts n: ``(B, S, A)``."""
    gram = gram_matrices(n, phi_h, lam)
    rhs = np.einsum("sad,bsa->bd", phi_h, y)
    w = np.linalg.solve(gram, rhs[..., None])[..., 0]
    return np.einsum("sad,bd->bsa", phi_h, w), gram


def estimate_variances(
    ds_var: OfflineDataset, phi_all: np.ndarray, V_ref: np.ndarray, lam: float, sigma2_min: float
) -> np.ndarray:
    """Step 2: ``sigma2 (B, H, S, A)`` from reference values ``V_ref (B, H+1, S)``."""
    B, S, A, H = ds_var.n_seeds, ds_var.S, ds_var.A, ds_var.horizon
    sigma2 = np.empty((B, H, S, A))
    for h, blk in enumerate(stage_blocks(ds_var)):
        n = blk.counts()
        y = blk.reward + blk.next_values(V_ref[:, h + 1])
        m1, _ = _ridge_fit(n, blk.sums(y), phi_all[h], lam)
        m2, _ = _ridge_fit(n, blk.sums(y * y), phi_all[h], lam)
        top = float(H - h)
        var = np.clip(m2, 0.0, top * top) - np.clip(m1, 0.0, top) ** 2
        sigma2[:, h] = np.maximum(var, sigma2_min)
    return sigma2


def vw_pevi(
    dataset: OfflineDataset,
    *,
    phi: np.ndarray | None = None,
    xi: float = 0.1,
    c_beta: float = 1.0,
    beta: float | None = None,
    c_beta_ref: float = 1.0,
    lam: float | None = None,
    sigma2_min: float = 1.0,
    split: bool = True,
) -> OfflineResult:
    """Variance-weighted pessimistic LSVI, LinPEVI-ADV+ form (module docstring). phi: ``(S, A, d)``
    / ``(H, S, A, d)`` or None (one-hot). lam: ridge parameter of every regression (default
    1/H^2). Returns policy ``(B, H, S)``, V, Q, value_estimate ``V_hat_0(mu0)``;
    ``info["sigma2"]`` holds the estimated variances ``(B, H, S, A)``."""
    if dataset.horizon is None:
        raise InvalidDatasetError("vw-pevi is an episodic (finite-horizon) algorithm")
    require_data(dataset, "vw-pevi")
    if not 0.0 < xi < 1.0:
        raise ValueError(f"vw-pevi: xi must lie in (0, 1), got {xi}")
    if not (sigma2_min > 0 and math.isfinite(sigma2_min)):
        raise ValueError(f"vw-pevi: sigma2_min must be positive, got {sigma2_min}")
    t0 = time.perf_counter()
    B, S, A, H = dataset.n_seeds, dataset.S, dataset.A, dataset.horizon
    lam = 1.0 / H**2 if lam is None else float(lam)  # LinPEVI-ADV+'s lambda = 1/H^2 [S]
    if not (lam > 0 and math.isfinite(lam)):
        raise ValueError(f"vw-pevi: lam must be positive and finite, got {lam}")
    if phi is None:
        if S * A > MAX_DENSE_FEATURES:
            raise ValueError(f"one-hot features of S A = {S * A} dimensions are too many")
        phi = one_hot_features(S, A)
    phi_all = stage_features(phi, H)
    d = phi_all.shape[-1]
    ds_var, ds_main = split_halves(dataset) if split else (dataset, dataset)
    if ds_var.N == 0 or ds_main.N == 0:
        raise InvalidDatasetError("vw-pevi splits the data in two halves: it needs N >= 2 (H)")
    ref = pevi(ds_var, phi=phi, xi=xi, c_beta=c_beta_ref, lam=1.0)  # PEVI's own lambda = 1
    sigma2 = estimate_variances(ds_var, phi_all, ref.V, lam, sigma2_min)
    bval = (
        float(beta) if beta is not None else vw_beta(d, H, ds_main.episodes_per_stage, xi, c_beta)
    )
    V = np.zeros((B, H + 1, S))
    Q = np.empty((B, H, S, A))
    for h, blk in reversed(list(enumerate(stage_blocks(ds_main)))):
        inv_var = 1.0 / sigma2[:, h]  # (B, S, A)
        n_w = blk.counts() * inv_var
        y_w = blk.sums(blk.reward + blk.next_values(V[:, h + 1])) * inv_var
        fit, gram = _ridge_fit(n_w, y_w, phi_all[h], lam)
        Q[:, h] = np.clip(fit - bval * elliptical_norms(gram, phi_all[h]), 0.0, H - h)
        V[:, h] = Q[:, h].max(axis=-1)
    return OfflineResult(
        algorithm="vw-pevi",
        policy=greedy(Q),
        value_estimate=value_at_start(V[:, 0], dataset.mu0),
        V=V,
        Q=Q,
        pessimistic=True,
        params={
            "xi": xi,
            "c_beta": c_beta,
            "beta": bval,
            "c_beta_ref": c_beta_ref,
            "lam": lam,
            "sigma2_min": sigma2_min,
            "split": split,
        },
        info={"seconds": time.perf_counter() - t0, "d": d, "sigma2": sigma2},
    )
