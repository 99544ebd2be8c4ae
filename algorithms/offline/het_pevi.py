r"""HetPEVI: pessimistic value iteration from K randomly perturbed data sources, tabular.

Seed reference: ``seed-catalogue-000.md#71`` (= 001#42) -- Shi, Xiong, Shen, Yang, "Provably
Efficient Offline Reinforcement Learning with Perturbed Data Sources", ICML 2023,
arXiv:2306.08364. Read [V]: the abstract (and the ICLR 2023 submission's abstract, "Offline RL
from randomly perturbed data sources") -- the sources are "randomly perturbed versions of the
target MDP"; HetPEVI "simultaneously considers two types of uncertainties: sample uncertainties
from a finite number of data samples per data source, and source uncertainties due to a finite
number of data sources ... the sample uncertainties from all data sources are jointly aggregated,
while an additional penalty term is specially constructed to compensate for the source
uncertainties"; a lower bound needs enough sources as well as samples; "efficient learning is
achievable as long as the sources collectively (instead of individually) provide a good data
coverage". The algorithm box, the penalty's constants and the theorem were not read.
Reconstructed [A]:

* the model of source k: ``P^k_h(.|s, a)`` random with mean the target's ``P_h(.|s, a)``
  (independent over k; the claim draws ``Dirichlet(alpha P_h(.|s, a))``), rewards the target's;
* the estimate: per (h, s, a), the average over the K_h(s, a) sources that have data there of
  each source's empirical model ``r_hat^k + P_hat^k V`` (sources weigh equally: each is one
  draw of the perturbation, whatever its sample count);
* the penalty, the sum of a jointly aggregated sample term and a source term,

      Gamma_h(s, a) = c_n H sqrt(iota / n_h(s, a)) + c_K H sqrt(iota / K_h(s, a)),
      n_h(s, a) = sum_k n^k_h(s, a),   iota = log(2 S A H K / delta)                 [A]

  (c_n = c_K = 1 [A]); pairs without data get Q = 0;
* pessimistic VI: ``Q_hat_h = min{ r_hat + P_hat V_hat_{h+1} - Gamma_h, H - h }^+``,
  ``V_hat_h = max_a Q_hat_h``, greedy policy (ties to the smallest index).

Sources are read from ``dataset.info["sources"]`` (``(B, N)`` int, the source of every row;
:func:`concat_sources` builds such a dataset); a dataset without it is one source (then the
source term alone is ``c_K H sqrt(iota)``: a single perturbed source is never trusted).
Predicted shape [A, from the abstract]: at fixed K the sub-optimality floors as n grows (the
source term does not shrink with n), and the floor falls with K.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from theorylab.algorithms.offline.dataset import InvalidDatasetError, OfflineDataset
from theorylab.algorithms.offline.empirical import require_data
from theorylab.algorithms.offline.result import OfflineResult, greedy, value_at_start


def concat_sources(datasets: list[OfflineDataset]) -> OfflineDataset:
    """One dataset of the rows of every source (same B, S, A, H), ``info["sources"] (B, N)``."""
    if not datasets:
        raise InvalidDatasetError("concat_sources needs at least one source dataset")
    first = datasets[0]
    for d in datasets:
        if (d.n_seeds, d.S, d.A, d.horizon) != (first.n_seeds, first.S, first.A, first.horizon):
            raise InvalidDatasetError("every source needs the same seeds, S, A and horizon")

    def cat(name):
        parts = [getattr(d, name) for d in datasets]
        return None if parts[0] is None else np.concatenate(parts, axis=1)

    src = np.concatenate(
        [np.full(d.states.shape, k, dtype=np.int64) for k, d in enumerate(datasets)], axis=1
    )
    ws = [d.weights if d.weights is not None else np.ones(d.states.shape) for d in datasets]
    return replace(
        first,
        states=cat("states"),
        actions=cat("actions"),
        rewards=cat("rewards"),
        next_states=cat("next_states"),
        stages=cat("stages"),
        weights=None if all(d.weights is None for d in datasets) else np.concatenate(ws, axis=1),
        n_episodes=None,
        kind="samples",
        behaviour=None,
        info={**first.info, "sources": src, "n_sources": len(datasets)},
    )


def het_pevi(
    dataset: OfflineDataset,
    *,
    delta: float = 0.1,
    c_n: float = 1.0,
    c_K: float = 1.0,
    single_source: int | None = None,
) -> OfflineResult:
    """HetPEVI (module docstring). ``single_source=k`` keeps source k's rows only (the
    single-source PEVI baseline: the same estimate and penalty on one source)."""
    if dataset.horizon is None:
        raise InvalidDatasetError("het-pevi is an episodic (finite-horizon) algorithm")
    require_data(dataset, "het-pevi")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"het-pevi: delta must lie in (0, 1), got {delta}")
    for name, c in (("c_n", c_n), ("c_K", c_K)):
        if not (c >= 0 and math.isfinite(c)):
            raise ValueError(f"het-pevi: {name} must be >= 0 and finite, got {c}")
    t0 = time.perf_counter()
    B, S, A, H = dataset.n_seeds, dataset.S, dataset.A, dataset.horizon
    src = dataset.info.get("sources")
    src = np.zeros(dataset.states.shape, dtype=np.int64) if src is None else np.asarray(src)
    K = int(src.max()) + 1 if src.size else 1
    w = np.ones(dataset.states.shape) if dataset.weights is None else dataset.weights
    if single_source is not None:
        w = np.where(src == single_source, w, 0.0)
    # per (b, k, h, s, a): counts, reward sums, next-state counts (one bincount each)
    b_idx = np.broadcast_to(np.arange(B)[:, None], src.shape)
    flat = (((b_idx * K + src) * H + dataset.stages) * S + dataset.states) * A + dataset.actions
    size = B * K * H * S * A
    n = np.bincount(flat.ravel(), w.ravel(), size).reshape(B, K, H, S, A)
    rs = np.bincount(flat.ravel(), (w * dataset.rewards).ravel(), size).reshape(n.shape)
    nxt = (flat * S + dataset.next_states).ravel()
    ps = np.bincount(nxt, w.ravel(), size * S).reshape(*n.shape, S)
    has = n > 0  # (B, K, H, S, A)
    K_sa = has.sum(axis=1)  # (B, H, S, A)
    n_sa = n.sum(axis=1)
    safe = np.where(has, n, 1.0)
    r_k = rs / safe  # per-source empirical reward (0 where no data)
    P_k = ps / safe[..., None]  # per-source empirical kernel
    iota = math.log(2 * S * A * H * max(K, 1) / delta)
    covered = K_sa > 0
    gamma = np.where(
        covered,
        c_n * H * np.sqrt(iota / np.where(covered, n_sa, 1.0))
        + c_K * H * np.sqrt(iota / np.where(covered, K_sa, 1.0)),
        np.inf,
    )  # (B, H, S, A)
    V = np.zeros((B, H + 1, S))
    Q = np.zeros((B, H, S, A))
    for h in range(H - 1, -1, -1):
        per_source = r_k[:, :, h] + np.einsum("bksat,bt->bksa", P_k[:, :, h], V[:, h + 1])
        est = (per_source * has[:, :, h]).sum(axis=1) / np.where(covered[:, h], K_sa[:, h], 1)
        Q[:, h] = np.where(covered[:, h], np.clip(est - gamma[:, h], 0.0, H - h), 0.0)
        V[:, h] = Q[:, h].max(axis=-1)
    return OfflineResult(
        algorithm="het-pevi",
        policy=greedy(Q),
        value_estimate=value_at_start(V[:, 0], dataset.mu0),
        V=V,
        Q=Q,
        pessimistic=True,
        params={"delta": delta, "c_n": c_n, "c_K": c_K, "single_source": single_source},
        info={"seconds": time.perf_counter() - t0, "sources": K, "iota": iota},
    )


__all__ = ["concat_sources", "het_pevi"]
