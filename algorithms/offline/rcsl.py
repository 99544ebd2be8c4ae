r"""Return-conditioned supervised learning (RCSL) and its model-based form MBRCSL, tabular.

Seed reference: ``seed-catalogue-000.md#5`` -- Zhou, Zhu, Zhou, Cui, Gupta, Du, "Free from
Bellman Completeness: Trajectory Stitching via Model-based Return-conditioned Supervised
Learning" (ICLR 2024, arXiv:2310.19308; code github.com/zhaoyizhou1123/mbrcsl, not read). Read
[V]: the abstract and the project page -- RCSL "learns a return-conditioned distribution of
actions in each state by directly applying supervised learning on the trajectories in the
dataset ... conditioning the policy on high desired returns"; RCSL cannot "stitch together
segments from distinct trajectories"; MBRCSL "leverages learned dynamics models and forward
sampling to accomplish trajectory stitching", "augments offline datasets with ... potentially
optimal trajectories", with independently chosen "dynamics models, behavior policies, and output
policies". The paper's algorithm box and theorems were not read. Reconstructed [A]:

* **RCSL** (Markovian, context length 1): from whole episodes, the table
  ``pi(a | h, s, g) = n(h, s, g, a) / n(h, s, g)`` over the return-to-go
  ``g_h = sum_{t >= h} r_t`` of the episode at (h, s), with row weights. At test time, start at
  s_0 with ``g_0 = max`` return-to-go seen at (0, s_0) (the "high desired return"), take the
  most frequent action (ties to the smallest index) and set ``g_{h+1} = g_h - r_h``; at an
  (h, s, g) never seen the nearest seen g at (h, s) is used (ties to the larger), at an (h, s)
  never seen action 0. Returns are compared after rounding to ``RTG_DECIMALS`` places.
* **MBRCSL**: (1) the empirical model ``P_hat_h(s'|s, a)``, ``r_hat_h(s, a)`` and the
  empirical behaviour policy ``pi_b,h(a|s)`` (behaviour cloning) and start distribution;
  (2) rollouts of pi_b in the model -- ``rollouts="exact"`` enumerates every rollout with its
  probability (the infinite-rollout limit), an integer draws that many; (3) keep the rollouts
  whose return is at least the largest return in the data from the same start state (minus
  ``RTG_TOL``); (4) RCSL on the kept rollouts, falling back to the data where none is kept.
  ``rollouts=0`` is RCSL itself.

The policy returned is Markov ``(B, H, S)``: the action RCSL takes at (h, s) with the g it
carries there along its own path from each start state (the first start state that reaches
(h, s) wins; unreached pairs take the action of their largest seen g; the path follows the
most likely next state of the learned model). In a deterministic MDP
from one start state this is exactly the return-conditioned policy's behaviour.
``value_estimate`` is the conditioning return ``g_0(mu0)`` (what RCSL asks for, not a bound).
Finite horizon, trajectory data only; exact enumeration is for small models (``A^H`` paths at
most per start state).
"""

from __future__ import annotations

import itertools
import time

import numpy as np

from theorylab.algorithms.offline.dataset import InvalidDatasetError, OfflineDataset
from theorylab.algorithms.offline.empirical import require_data
from theorylab.algorithms.offline.result import OfflineResult
from theorylab.algorithms.offline.trajectory_weighting import episodes

RTG_DECIMALS = 9
RTG_TOL = 1e-9
MAX_ENUMERATED = 200_000  # rollouts enumerated per seed before "exact" refuses


def rcsl_table(s, a, r, w, A: int) -> dict:
    """``{(h, s, g): counts (A,)}`` of one seed's episodes ``s, a, r, w (K, H)``."""
    K, H = s.shape
    rtg = np.round(np.cumsum(r[:, ::-1], axis=1)[:, ::-1], RTG_DECIMALS)  # (K, H)
    table: dict = {}
    for k, h in itertools.product(range(K), range(H)):
        if w[k, h] > 0:
            key = (h, int(s[k, h]), float(rtg[k, h]))
            table.setdefault(key, np.zeros(A))[a[k, h]] += w[k, h]
    return table


def rcsl_policy(table: dict, reward: np.ndarray, next_state, S: int, H: int, starts) -> tuple:
    """Follow the return-conditioned table from each start state; ``reward (H, S, A)`` and
    ``next_state(h, s, a) -> s'`` are the model the path is followed in (the learned one).
    Returns the Markov policy ``(H, S)`` and the conditioning return per start state."""
    by_hs: dict = {}
    for h, s, g in table:
        by_hs.setdefault((h, s), []).append(g)
    policy = np.zeros((H, S), dtype=np.int64)
    for (h, s), gs in by_hs.items():  # unreached pairs: the action of the largest g
        policy[h, s] = int(np.argmax(table[(h, s, max(gs))]))
    taken = np.zeros((H, S), dtype=bool)
    g0 = {}
    for s0 in starts:
        gs = by_hs.get((0, int(s0)))
        if not gs:
            continue
        g, s = max(gs), int(s0)
        g0[int(s0)] = g
        for h in range(H):
            seen = by_hs.get((h, s))
            if not seen:
                break
            near = min(seen, key=lambda x: (abs(x - g), -x))
            act = int(np.argmax(table[(h, s, near)]))
            if not taken[h, s]:
                policy[h, s], taken[h, s] = act, True
            g = round(g - float(reward[h, s, act]), RTG_DECIMALS)
            s = next_state(h, s, act)
            if s is None:
                break
    return policy, g0


def empirical_model(s, a, r, w, S: int, A: int):
    """Counts-based model of one seed's episodes: ``P_hat (H, S, A, S)``, ``r_hat (H, S, A)``,
    behaviour ``pi_b (H, S, A)`` and start distribution ``(S,)`` (zeros where unseen)."""
    K, H = s.shape
    P = np.zeros((H, S, A, S))
    R = np.zeros((H, S, A))
    n = np.zeros((H, S, A))
    for h in range(H):
        np.add.at(n[h], (s[:, h], a[:, h]), w[:, h])
        np.add.at(R[h], (s[:, h], a[:, h]), w[:, h] * r[:, h])
        if h + 1 < H:
            np.add.at(P[h], (s[:, h], a[:, h], s[:, h + 1]), w[:, h])
    seen = n > 0
    R = np.where(seen, R / np.where(seen, n, 1.0), 0.0)
    P = P / np.where(seen, n, 1.0)[..., None]
    tot = n.sum(axis=-1, keepdims=True)
    pi_b = np.where(tot > 0, n / np.where(tot > 0, tot, 1.0), 0.0)
    mu = np.zeros(S)
    np.add.at(mu, s[:, 0], w[:, 0])
    return P, R, pi_b, mu / mu.sum()


def enumerate_rollouts(P, R, pi_b, mu, limit: int = MAX_ENUMERATED):
    """Every rollout of ``pi_b`` in the model (P, R) from ``mu`` with its probability:
    arrays ``s, a, r (K, H)`` and ``p (K,)``. The last stage's next state is not needed."""
    H = R.shape[0]
    paths = [((int(s0),), (), (), float(mu[s0])) for s0 in np.flatnonzero(mu > 0)]
    for h in range(H):
        nxt = []
        for ss, aa, rr, p in paths:
            st = ss[-1]
            for act in np.flatnonzero(pi_b[h, st] > 0):
                pa = p * pi_b[h, st, act]
                step = (aa + (int(act),), rr + (float(R[h, st, act]),))
                if h + 1 == H:
                    nxt.append((ss, *step, pa))
                    continue
                for s2 in np.flatnonzero(P[h, st, act] > 0):
                    nxt.append((ss + (int(s2),), *step, pa * P[h, st, act, s2]))
        paths = nxt
        if len(paths) > limit:
            raise InvalidDatasetError(
                f"mbrcsl: rollouts='exact' would enumerate over {limit} paths; pass rollouts=<int>"
            )
    s = np.array([ss for ss, _, _, _ in paths], dtype=np.int64)
    a = np.array([aa for _, aa, _, _ in paths], dtype=np.int64)
    r = np.array([rr for _, _, rr, _ in paths])
    return s, a, r, np.array([p for *_, p in paths])


def sample_rollouts(P, R, pi_b, mu, n: int, rng: np.random.Generator):
    """``n`` rollouts of ``pi_b`` in the model drawn with ``rng``: ``s, a, r (n, H)``, ``p``."""
    H, S, A = R.shape
    s = np.empty((n, H), dtype=np.int64)
    a = np.empty((n, H), dtype=np.int64)
    s[:, 0] = rng.choice(S, size=n, p=mu)
    for h in range(H):
        cdf = np.cumsum(pi_b[h, s[:, h]], axis=1)
        a[:, h] = np.minimum((rng.random((n, 1)) > cdf).sum(axis=1), A - 1)
        if h + 1 < H:
            cdf = np.cumsum(P[h, s[:, h], a[:, h]], axis=1)
            s[:, h + 1] = np.minimum((rng.random((n, 1)) > cdf).sum(axis=1), S - 1)
    r = R[np.arange(H), s, a]
    return s, a, r, np.full(n, 1.0 / n)


def _fit(dataset: OfflineDataset, name: str, rollouts, seed: int) -> OfflineResult:
    if dataset.horizon is None or dataset.kind != "trajectories":
        raise InvalidDatasetError(f"{name} needs finite-horizon trajectory data")
    if not (rollouts == "exact" or (isinstance(rollouts, int) and rollouts >= 0)):
        raise InvalidDatasetError(
            f"{name}: rollouts must be 'exact' or an integer >= 0, got {rollouts!r}"
        )
    require_data(dataset, name)
    t0 = time.perf_counter()
    S, A = dataset.S, dataset.A
    s, a, r, w = episodes(dataset)  # (B, K, H)
    B, K, H = s.shape
    policy = np.zeros((B, H, S), dtype=np.int64)
    estimate = np.zeros(B)
    kept = np.zeros(B)
    for b in range(B):
        P, R, pi_b, mu = empirical_model(s[b], a[b], r[b], w[b], S, A)
        table_data = (s[b], a[b], r[b], w[b])
        if rollouts != 0:
            if rollouts == "exact":
                rs, ra, rr, rp = enumerate_rollouts(P, R, pi_b, mu)
            else:
                rng = np.random.default_rng([seed, dataset.seed_indices[b], 5])
                rs, ra, rr, rp = sample_rollouts(P, R, pi_b, mu, rollouts, rng)
            top = np.full(S, np.inf)  # the data's best return from each start state
            live = w[b][:, 0] > 0
            top[np.unique(s[b][live, 0])] = -np.inf
            np.maximum.at(top, s[b][live, 0], r[b][live].sum(axis=1))
            keep = rr.sum(axis=1) >= top[rs[:, 0]] - RTG_TOL
            kept[b] = float(rp[keep].sum())
            if keep.any():
                wk = np.repeat(rp[keep][:, None], H, axis=1)
                table_data = (rs[keep], ra[keep], rr[keep], wk)
        table = rcsl_table(*table_data, A)

        def step(h, st, act, P=P):
            row = P[h, st, act] if h + 1 < H else None
            return None if row is None or row.sum() == 0 else int(np.argmax(row))

        policy[b], g0 = rcsl_policy(table, R, step, S, H, np.flatnonzero(mu > 0))
        estimate[b] = sum(mu[s0] * g for s0, g in g0.items())
    return OfflineResult(
        algorithm=name,
        policy=policy,
        value_estimate=estimate,
        V=None,
        Q=None,
        pessimistic=False,
        params={"rollouts": rollouts},
        info={"seconds": time.perf_counter() - t0, "kept_rollout_mass": kept},
    )


def rcsl(dataset: OfflineDataset) -> OfflineResult:
    """Markovian RCSL conditioned on the highest return-to-go seen (module docstring)."""
    return _fit(dataset, "rcsl", 0, 0)


def mbrcsl(dataset: OfflineDataset, *, rollouts="exact", seed: int = 0) -> OfflineResult:
    """MBRCSL: empirical model + behaviour cloning, rollouts, keep those with return at least
    the data's best, RCSL on them (module docstring). ``rollouts=0`` is RCSL."""
    return _fit(dataset, "mbrcsl", rollouts, seed)


__all__ = ["empirical_model", "enumerate_rollouts", "mbrcsl", "rcsl", "rcsl_policy", "rcsl_table"]
