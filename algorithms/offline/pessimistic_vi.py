r"""Pessimistic model-based value iteration for finite-horizon offline RL (Hoeffding and Bernstein).

Paper: Li, Shi, Chen, Chi, Wei, "Settling the sample complexity of model-based offline
reinforcement learning", arXiv:2204.05275 (Annals of Statistics 2024), Section 3: Algorithm 2
(VI-LCB for finite-horizon MDPs), the Bernstein-style penalty Eq. (55), Algorithm 3 (two-fold
subsampling). Sources: a full-text extraction of the revised arXiv version (Feb 2024) in which the
algorithm boxes and prose are readable but the displayed equations are not decoded [V for the
structure: Algorithm 2's lines 3-9 read "Q_hat_h(s, a) = max{r_h(s, a) + P_hat_{h,s,a} V_hat_{h+1}
- b_h(s, a), 0}", V_hat_h = max_a Q_hat_h, pi_hat_h = argmax; "for some universal constant c_b > 0
(e.g., c_b = 16)"; Remark 4: "c_b >= 16 and c_k = 12800 c_b"]; the form of Eq. (55) itself is
[S]: the authors' public code (github.com/Laixishi/Model-based-VI-LCB, notebook
``gambler-offline-model-based.ipynb``, finite horizon) computes
``min{H - h, c_b H / n + sqrt(c_b Var / n)}``, a SUM of the variance term and the 1/n term
(log folded into c_b), and a third-party reimplementation of Algorithm 2 [S] uses
``min{sqrt(c_b log(NH/delta) Var / n) + c_b H log(NH/delta) / n, H}``.

Registered names and the bound each carries (``theorylab.bounds``):

* ``pessimistic-vi-bernstein`` -- bound ``li2022-offline-finite-horizon``
  (sample complexity O~(H^4 S C*_clipped / eps^2), any eps, no burn-in; Theorem 3);
* ``pessimistic-vi-hoeffding`` -- the Hoeffding-penalty variant (the "VI-LCB" of the earlier
  analyses that Li et al. improve on; sub-optimality O~(H^2 sqrt(S C* / N)) up to logs [M]). It
  carries no registered card.

Algorithm (0-based stages h = 0..H-1, papers write 1..H; V_hat_H = 0). With the dataset's
per-stage counts n_h(s, a) (weighted when the dataset is), r_hat_h, P_hat_h from the stage-h
samples (``empirical.stage_blocks``) and ``L = log(N H / delta)``, N = samples per seed:

    for h = H-1, ..., 0:
        b_h(s, a) = min{ c_h H sqrt(L / n_h(s, a)), H }                                   Hoeffding
        b_h(s, a) = min{ sqrt(c_b L Var_{P_hat_h(s,a)}(V_hat_{h+1}) / n_h(s, a))
                         + c_b H L / n_h(s, a),  H }                     Bernstein, Eq. (55) [S]
        b_h(s, a) = H                                          where n_h(s, a) = 0 (no data)
        Q_hat_h(s, a) = max{ r_hat_h(s, a) + (P_hat_h V_hat_{h+1})(s, a) - b_h(s, a), 0 }
        V_hat_h(s) = max_a Q_hat_h(s, a);   pi_hat_h(s) = argmax_a Q_hat_h(s, a)

``bernstein_form="max"`` keeps the form this module used until issue 14,
``min{max{sqrt(c_b L Var / n), 2 c_b H L / n}, H}``: the shape of the paper's DISCOUNTED penalty
Eq. (28) (as recalled in theory.md, ``max{...} + 5/N`` there) carried over to finite horizon.
With a = the variance term and b = c_b H L / n the two are within a factor 2 of each other
(a + b <= 2 max{a, 2b} and max{a, 2b} <= 2 (a + b)): the sum is larger where the variance term
dominates (a >= b), the max form where the 1/n term does (b > a). Kept as an option.

Constants (parameters): ``c_b = 16`` (the paper's example value and Remark 4's sufficient
``c_b >= 16`` [V]); ``c_h = 1`` (Hoeffding: H sqrt(log(2/delta')/(2n)) is the exact width for
targets in [0, H], so c_h = 1 is valid up to the union bound folded into L; [M], this variant is
the library's baseline); the value range H (the authors' code clips at H - h, which gives the same
Q: any b >= H - h already sends Q_hat to 0); the form of L ([S], not read in the paper).

Two-fold subsampling (Algorithm 3; the split into the first and last K/2 trajectories is [V], the
formula (56) for n_trim is not decoded in the text read and is [M]; ``subsample=True``): for
trajectory data the paper decouples the
Markovian dependence by splitting the episodes into a main and an auxiliary half, computing
``n_trim_h(s) = max{n_aux_h(s) - c_trim sqrt(n_aux_h(s) log(H S / delta)), 0}`` (c_trim = 10) on
the auxiliary half and keeping, for every (h, s), only the first min{n_trim_h(s), n_main_h(s)}
main-half samples. Implemented as 0/1 sample weights. Off by default (deviation): it discards at
least half the data and, with c_trim = 10, every sample of a stage-state visited fewer than about
100 log(HS/delta) times, which removes all data at the sample sizes of the claims; i.i.d.
``"samples"`` datasets do not need it at all.

Deviations: rewards are estimated from the data (r_hat); ties in argmax go to the smallest index
within round-off (``result.greedy``); Var uses the shifted second moment
``E[(V - c)^2] - E[V - c]^2`` with c = (H - h - 1) / 2, clipped at 0.

Batched over seeds: statistics are bincounts over all B seeds at once (``empirical``); the loop
runs over h only. Cost O(B N) for the whole backward induction.
"""

from __future__ import annotations

import math
import time

import numpy as np

from theorylab.algorithms.offline.dataset import InvalidDatasetError, OfflineDataset
from theorylab.algorithms.offline.empirical import require_data, stage_blocks
from theorylab.algorithms.offline.result import OfflineResult, greedy, value_at_start

PENALTIES = ("hoeffding", "bernstein")
BERNSTEIN_FORMS = ("sum", "max")  # Eq. (55) as implemented by the authors / the former max form


def _check_finite_horizon(ds: OfflineDataset, who: str) -> None:
    if ds.horizon is None:
        raise InvalidDatasetError(
            f"{who} is a finite-horizon algorithm; this dataset is discounted (use vi-lcb)"
        )


def two_fold_subsample(ds: OfflineDataset, delta: float, c_trim: float = 10.0) -> OfflineDataset:
    """Li et al.'s two-fold subsampling of trajectory data, as 0/1 weights (module docstring)."""
    from dataclasses import replace

    if ds.kind != "trajectories" or ds.n_episodes is None:
        raise InvalidDatasetError("two-fold subsampling applies to trajectory datasets")
    B, S, H, K = ds.n_seeds, ds.S, ds.horizon, ds.n_episodes
    k_main = K // 2
    states = ds.states.reshape(B, K, H)
    weights = np.zeros((B, K, H))
    log_term = math.log(H * S / delta)
    b_idx = np.repeat(np.arange(B), k_main)
    for h in range(H):
        aux = states[:, k_main:, h]  # (B, K - k_main)
        n_aux = np.stack([np.bincount(row, minlength=S) for row in aux]).astype(float)  # (B, S)
        n_trim = np.maximum(n_aux - c_trim * np.sqrt(n_aux * log_term), 0.0)
        main = states[:, :k_main, h].reshape(-1)  # (B * k_main,) seed-major, episode order
        key = b_idx * S + main
        order = np.argsort(key, kind="stable")
        sorted_key = key[order]
        first = np.searchsorted(sorted_key, sorted_key, side="left")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size) - first  # position within its (b, s) group
        keep = rank < n_trim.reshape(-1)[key]
        weights[:, :k_main, h] = keep.reshape(B, k_main)
    info = dict(ds.info, subsampled=True, c_trim=c_trim)
    return replace(ds, weights=weights.reshape(B, K * H), info=info)


def pessimistic_vi(
    dataset: OfflineDataset,
    *,
    penalty: str = "bernstein",
    delta: float = 0.1,
    c_b: float = 16.0,
    c_h: float = 1.0,
    subsample: bool = False,
    c_trim: float = 10.0,
    bernstein_form: str = "sum",
) -> OfflineResult:
    """Finite-horizon pessimistic VI with a Hoeffding or Bernstein penalty (module docstring).

    Returns an :class:`OfflineResult` with policy ``(B, H, S)``, V ``(B, H+1, S)``,
    Q ``(B, H, S, A)`` and value_estimate ``V_hat_0(mu0)`` (pessimistic).
    """
    name = f"pessimistic-vi-{penalty}"
    if penalty not in PENALTIES:
        raise ValueError(f"penalty must be one of {PENALTIES}, got {penalty!r}")
    if bernstein_form not in BERNSTEIN_FORMS:
        raise ValueError(
            f"{name}: bernstein_form must be one of {BERNSTEIN_FORMS}, got {bernstein_form!r}"
        )
    _check_finite_horizon(dataset, name)
    require_data(dataset, name)
    if not 0.0 < delta < 1.0:
        raise ValueError(f"{name}: delta must lie in (0, 1), got {delta}")
    for cname, c in (("c_b", c_b), ("c_h", c_h), ("c_trim", c_trim)):
        if not (c >= 0 and math.isfinite(c)):
            raise ValueError(f"{name}: {cname} must be finite and >= 0, got {c}")
    t0 = time.perf_counter()
    N = dataset.total_weight  # (B,) samples per seed, before subsampling
    if subsample:
        dataset = two_fold_subsample(dataset, delta, c_trim)
    B, S, A, H = dataset.n_seeds, dataset.S, dataset.A, dataset.horizon
    L = np.log(np.maximum(N, 1.0) * H / delta)[:, None, None]  # (B, 1, 1)
    blocks = stage_blocks(dataset)
    V = np.zeros((B, H + 1, S))
    Q = np.empty((B, H, S, A))
    bonus_mean = np.empty(H)
    for h in range(H - 1, -1, -1):
        blk = blocks[h]
        n = blk.counts()  # (B, S, A)
        n1 = np.maximum(n, 1.0)
        r_hat = blk.means(blk.reward, n)  # (B, S, A)
        v_next = blk.next_values(V[:, h + 1])  # (n_samples,)
        PV = blk.means(v_next, n)  # (P_hat V)(s, a); 0 where n = 0
        if penalty == "hoeffding":
            b = np.minimum(c_h * H * np.sqrt(L / n1), H)
        else:
            y = v_next - (H - h - 1) / 2.0  # shifted: less cancellation in E[y^2] - E[y]^2
            m1 = blk.means(y, n)
            var = np.maximum(blk.means(y * y, n) - m1 * m1, 0.0)
            width = np.sqrt(c_b * L * var / n1)  # the variance (Bernstein) term
            if bernstein_form == "sum":  # Eq. (55) [S]
                b = np.minimum(width + c_b * H * L / n1, H)
            else:  # the former max form (the discounted Eq. (28)'s shape)
                b = np.minimum(np.maximum(width, 2.0 * c_b * H * L / n1), H)
        b = np.where(n > 0, b, float(H))
        Q[:, h] = np.maximum(r_hat + PV - b, 0.0)
        V[:, h] = Q[:, h].max(axis=-1)
        bonus_mean[h] = float(b.mean())
    policy = greedy(Q)  # (B, H, S)
    return OfflineResult(
        algorithm=name,
        policy=policy,
        value_estimate=value_at_start(V[:, 0], dataset.mu0),
        V=V,
        Q=Q,
        pessimistic=True,
        params={
            "penalty": penalty,
            "delta": delta,
            "c_b": c_b,
            "c_h": c_h,
            "subsample": subsample,
            "c_trim": c_trim,
            "bernstein_form": bernstein_form,
        },
        info={"seconds": time.perf_counter() - t0, "mean_penalty_per_stage": bonus_mean.tolist()},
    )


def pessimistic_vi_hoeffding(dataset: OfflineDataset, **params) -> OfflineResult:
    """Pessimistic VI with the Hoeffding penalty c_h H sqrt(L / n) (Li et al. 2022 baseline)."""
    return pessimistic_vi(dataset, penalty="hoeffding", **params)


def pessimistic_vi_bernstein(dataset: OfflineDataset, **params) -> OfflineResult:
    """Pessimistic VI with the Bernstein penalty of Li et al. 2022 (finite horizon)."""
    return pessimistic_vi(dataset, penalty="bernstein", **params)
