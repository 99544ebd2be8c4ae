r"""Contrasts without pessimism: naive model-based VI and behaviour cloning.

``naive-vi`` (certainty equivalence): plan in the empirical MDP (r_hat, P_hat from the data; pairs
with no data have r_hat = 0 and an empty P_hat row, so Q = r_hat + P_hat V = 0 there -- the same
convention as the pessimistic algorithms, so the only difference is the penalty).

* finite horizon: backward induction ``Q_h = r_hat_h + P_hat_h V_{h+1}``, ``V_h = max_a Q_h``,
  per-stage estimates (stage-dependent model, as the pessimistic algorithms use);
* discounted: value iteration on the pooled empirical model, ``Q = r_hat + gamma P_hat V``, with
  the planner's stopping rule (stop when ``||V_{k+1} - V_k||_inf <= tol (1 - gamma) / gamma``),
  applied per seed so a seed stops at the same iterate alone or in a batch.

Its value estimate V_hat(mu0) is *not* a lower bound: with little data it is optimistically biased
(the maximum over noisy estimates). It is the algorithm that fails on the partial-coverage
instances (``mdps/families/offline_instances.py``).

``behaviour-cloning``: the empirical behaviour policy ``pi_hat_h(a|s) = n_h(s, a) / n_h(s)``
(finite horizon, per stage; discounted, pooled), uniform at states without data. Its value estimate
is the plug-in evaluation of pi_hat on the empirical model (not pessimistic). With expert data
(coverage 1) it imitates pi*; it cannot improve on the behaviour policy.

Both are deterministic given the data and batched over seeds.
"""

from __future__ import annotations

import time

import numpy as np

from theorylab.algorithms.offline.dataset import OfflineDataset
from theorylab.algorithms.offline.empirical import all_samples, compress, require_data, stage_blocks
from theorylab.algorithms.offline.result import OfflineResult, greedy, value_at_start


def _empirical_finite(dataset: OfflineDataset):
    """Per stage: (counts, r_hat, block) for the backward passes."""
    out = []
    for blk in stage_blocks(dataset):
        n = blk.counts()
        out.append((n, blk.means(blk.reward, n), blk))
    return out


def _discounted_iteration(model, step, B, S, gamma, tol, max_iter):
    """Iterate ``V <- step(V)`` per seed until its own stopping rule holds. Returns (V, iters)."""
    V = np.zeros((B, S))
    active = np.ones(B, dtype=bool)
    iters = np.zeros(B, dtype=np.int64)
    threshold = tol * (1.0 - gamma) / gamma if gamma > 0 else np.inf
    for _ in range(max_iter):
        V_new = step(V)
        delta = np.abs(V_new - V).max(axis=1)
        V = np.where(active[:, None], V_new, V)
        iters += active
        active &= ~(delta <= threshold)
        if not active.any():
            break
    return V, iters


def naive_vi(
    dataset: OfflineDataset, *, tol: float = 1e-10, max_iter: int = 1_000_000
) -> OfflineResult:
    """Certainty-equivalent planning on the empirical model (module docstring)."""
    require_data(dataset, "naive-vi")
    t0 = time.perf_counter()
    B, S, A = dataset.n_seeds, dataset.S, dataset.A
    if dataset.horizon is not None:
        H = dataset.horizon
        V = np.zeros((B, H + 1, S))
        Q = np.empty((B, H, S, A))
        stats = _empirical_finite(dataset)
        for h in range(H - 1, -1, -1):
            n, r_hat, blk = stats[h]
            Q[:, h] = r_hat + blk.means(blk.next_values(V[:, h + 1]), n)
            V[:, h] = Q[:, h].max(axis=-1)
        V0, info = V[:, 0], {}
    else:
        g = float(dataset.gamma)
        model = compress(all_samples(dataset))

        def bellman(V):
            return (model.r_hat + g * model.expected_next(V)).max(axis=-1)

        V, iters = _discounted_iteration(model, bellman, B, S, g, tol, max_iter)
        Q = model.r_hat + g * model.expected_next(V)
        V0, info = V, {"iterations": iters.tolist()}
    return OfflineResult(
        algorithm="naive-vi",
        policy=greedy(Q),
        value_estimate=value_at_start(V0, dataset.mu0),
        V=V,
        Q=Q,
        pessimistic=False,
        params={"tol": tol} if dataset.horizon is None else {},
        info={"seconds": time.perf_counter() - t0, **info},
    )


def _cloned(n: np.ndarray) -> np.ndarray:
    """``n (..., S, A)`` -> pi_hat(a|s) = n / sum_a n, uniform where sum_a n = 0."""
    tot = n.sum(axis=-1, keepdims=True)
    return np.where(tot > 0, n / np.maximum(tot, 1e-300), 1.0 / n.shape[-1])


def plug_in_values(stats, pol: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Plug-in ``V (B, H+1, S)`` and ``Q (B, H, S, A)`` of a stochastic policy ``pol (B, H, S, A)``
    on the empirical model ``stats`` (:func:`_empirical_finite`), by backward recursion."""
    B, H, S, A = pol.shape
    V = np.zeros((B, H + 1, S))
    Q = np.empty((B, H, S, A))
    for h in range(H - 1, -1, -1):
        n, r_hat, blk = stats[h]
        Q[:, h] = r_hat + blk.means(blk.next_values(V[:, h + 1]), n)
        V[:, h] = np.einsum("bsa,bsa->bs", pol[:, h], Q[:, h])
    return V, Q


def behaviour_cloning(
    dataset: OfflineDataset, *, tol: float = 1e-10, max_iter: int = 1_000_000
) -> OfflineResult:
    """The empirical behaviour policy and its plug-in value (module docstring)."""
    require_data(dataset, "behaviour-cloning")
    t0 = time.perf_counter()
    B, S = dataset.n_seeds, dataset.S
    if dataset.horizon is not None:
        stats = _empirical_finite(dataset)
        pol = np.stack([_cloned(n) for n, _, _ in stats], axis=1)  # (B, H, S, A)
        V, Q = plug_in_values(stats, pol)
        V0 = V[:, 0]
    else:
        g = float(dataset.gamma)
        model = compress(all_samples(dataset))
        pol = _cloned(model.counts)  # (B, S, A)

        def evaluate(V):
            return np.einsum("bsa,bsa->bs", pol, model.r_hat + g * model.expected_next(V))

        V, _ = _discounted_iteration(model, evaluate, B, S, g, tol, max_iter)
        Q = model.r_hat + g * model.expected_next(V)
        V0 = V
    return OfflineResult(
        algorithm="behaviour-cloning",
        policy=pol,
        value_estimate=value_at_start(V0, dataset.mu0),
        V=V,
        Q=Q,
        pessimistic=False,
        params={},
        info={"seconds": time.perf_counter() - t0},
    )


__all__ = ["behaviour_cloning", "naive_vi"]
