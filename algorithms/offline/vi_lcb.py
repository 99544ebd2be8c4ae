r"""VI-LCB: value iteration with lower confidence bounds and data splitting (discounted MDPs).

Paper: Rashidinejad, Zhu, Ma, Jiao, Russell, "Bridging offline reinforcement learning and
imitation learning: a tale of pessimism", NeurIPS 2021 / IEEE-TIT 2022, arXiv:2103.12021,
Algorithm 3 (VI-LCB, discounted MDP). The paper's full text could not be obtained by this project
(theory.md section 11; the stored copies give only the abstract and introduction). Implemented
from theory.md 3.2 ([V] from the public code ``OfflineVI`` of the authors' d3rlpy fork) plus the
initial policy of Algorithm 3 **as recalled** in issue 14 ([M]):

1. ``T = floor(log N / (1 - gamma))`` iterations.
2. Split the N samples into T + 1 folds (contiguous; the samples are i.i.d., so this is a uniformly
   random split). Fold t (t = 1..T) drives iteration t alone, so V_{t-1} is independent of it.
3. ``pi_0(s) = argmax_a m_0(s, a)`` with m_0 the counts of fold 0: the most frequent action of
   each state in fold 0, i.e. behaviour cloning on fold 0 ([M], ``initial_policy="behaviour"``,
   the default). This is the fallback the near-expert results (C* < 2, the 1/N rate) rely on:
   where no lower bound ever rises above 0, VI-LCB plays the behaviour's action, not a random
   one. Ties (and states absent from fold 0) go to the smallest action index.
4. ``L = c_L log(2 (T + 1) S A / delta)`` with ``c_L = 2000`` (the code's ``Lc``) and
   ``V_max = 1 / (1 - gamma)``.
5. ``b_t(s, a) = V_max sqrt(L / max(m_t(s, a), 1))`` with m_t(s, a) the counts of fold t.
6. ``Q_t = r_hat_t - b_t + gamma P_hat_t V_{t-1}`` (r_hat_t, P_hat_t from fold t; pairs with
   m_t = 0 have r_hat_t = 0, P_hat_t V = 0).
7. Monotone update: ``V_t(s) = max(V_{t-1}(s), max_a Q_t(s, a))``; the policy changes only where V
   strictly increases. ``V_0 = 0``.

Bound carried: ``vi-lcb-upper`` (E[J(pi*) - J(pi_hat)] <~ min{1/(1-gamma),
sqrt(S C* log N / ((1-gamma)^5 N))}, [M]); lower bounds ``vi-lcb-lower`` (C* >= 2) and
``vi-lcb-lower-near-expert`` (1 <= C* < 2, the 1/N regime).

Constants and choices (parameters):

* ``c_L = 2000`` [V from code]: an analysis constant. With it b_t >= V_max (so Q_t <= 0 and
  nothing is learned) until a fold holds about 2000 log(2(T+1)SA/delta) samples of a pair --
  beyond any sample size a test can afford. ``c_L = 1/2`` is the exact Hoeffding width for
  targets ``r + gamma V(s') in [0, V_max]`` with the union bound over (t, s, a) in the log: the
  good event of the analysis still holds with probability >= 1 - delta, so the pessimism
  invariant ``V_T <= V^{pi_T}`` is kept. The claims use c_L = 1/2 and say so.
* ``initial_policy``: ``"behaviour"`` (default, step 3: argmax of fold 0's counts, [M]);
  ``"random"`` [V from the authors' code, which never reads fold 0 and starts from
  ``np.random.randint`` with the comment "TODO: check if it is better to set deterministic"]: a
  uniformly random deterministic pi_0, drawn per seed from ``theorylab.seeding``'s agent stream
  (seed i alone or batched draws the same pi_0); ``"uniform"``: the uniform stochastic policy
  where V never increased. Until issue 14 the default was ``"random"`` and the docstring said
  "Deviations: none". Measured on ``multiscale-bandit:gamma=0.5``, c_L = 1/2, 16 seeds, mean
  sub-optimality at N = 2000 / 20,000: near-expert data (C* = 1.05) behaviour start 0.0029 /
  0.0001, random start 0.166 / 0.0065 (behaviour cloning 0.016 / 0.017); generic adversarial
  data (C* = 4) behaviour start 0.307 / 0.266, random 0.166 / 0.151 -- cloning an adversarial
  behaviour is worse than a random start until the lower bounds rise (N = 200,000: 0.032 vs
  0.031). tests/test_offline_algorithms.py, ``test_vi_lcb_starts_from_the_behaviour_of_fold_0``.
* T uses the effective sample size (the sum of the weights for weighted/population data, whose
  rows are split by weight across folds, see ``empirical.fold_blocks``).

Deviations: none known in the recursion; step 3 is recalled, not read (see above), so the code's
random start stays available. The value estimate reported is ``V_T(mu0)``.

Batched over seeds; each fold is used once, so the whole run costs O(B N + T B S A).
"""

from __future__ import annotations

import math
import time

import numpy as np

from theorylab.algorithms.offline.dataset import InvalidDatasetError, OfflineDataset
from theorylab.algorithms.offline.empirical import fold_blocks, require_data
from theorylab.algorithms.offline.result import OfflineResult, greedy, value_at_start
from theorylab.seeding import AGENT_STREAM, generators

C_L_CODE = 2000.0
C_L_HOEFFDING = 0.5
INITIAL_POLICIES = ("behaviour", "random", "uniform")


def vi_lcb_iterations(n_samples: float, gamma: float) -> int:
    """``T = floor(log N / (1 - gamma))`` (0 when N <= 1)."""
    return int(math.floor(math.log(max(n_samples, 1.0)) / (1.0 - gamma)))


def vi_lcb(
    dataset: OfflineDataset,
    *,
    delta: float = 0.1,
    c_L: float = C_L_CODE,
    initial_policy: str = "behaviour",
    V_max: float | None = None,
) -> OfflineResult:
    """VI-LCB (module docstring) on a discounted dataset.

    Returns policy ``(B, S)`` int (``(B, S, A)`` with ``initial_policy="uniform"``), V ``(B, S)``,
    Q ``(B, S, A)`` (the last iteration's Q_T), value_estimate ``V_T(mu0)``; info has T, L, V_max,
    the fold size and how many states were ever updated.
    """
    if dataset.gamma is None or dataset.horizon is not None:
        raise InvalidDatasetError("vi-lcb is a discounted algorithm; this dataset is episodic")
    require_data(dataset, "vi-lcb")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"vi-lcb: delta must lie in (0, 1), got {delta}")
    if not (c_L > 0 and math.isfinite(c_L)):
        raise ValueError(f"vi-lcb: c_L must be positive and finite, got {c_L}")
    if initial_policy not in INITIAL_POLICIES:
        raise ValueError(
            f"initial_policy must be one of {', '.join(map(repr, INITIAL_POLICIES))}, "
            f"got {initial_policy!r}"
        )
    t0 = time.perf_counter()
    B, S, A, g = dataset.n_seeds, dataset.S, dataset.A, float(dataset.gamma)
    n_eff = float(dataset.total_weight[0])  # same N for every seed of a batch
    T = vi_lcb_iterations(n_eff, g)
    L = c_L * math.log(2 * (T + 1) * S * A / delta)
    vmax = 1.0 / (1.0 - g) if V_max is None else float(V_max)
    folds = fold_blocks(dataset, T + 1)
    V = np.zeros((B, S))
    Q = np.zeros((B, S, A))
    if initial_policy == "behaviour":
        policy = folds[0].counts().argmax(axis=-1).astype(np.int64)  # (B, S): argmax_a m_0(s, a)
    elif initial_policy == "random":
        rngs = generators(dataset.seed, dataset.seed_indices, AGENT_STREAM)
        policy = np.stack([r.integers(0, A, size=S) for r in rngs]).astype(np.int64)  # (B, S)
    else:
        policy = np.full((B, S), -1, dtype=np.int64)  # -1: never updated -> uniform
    updated = np.zeros((B, S), dtype=bool)
    for t in range(1, T + 1):
        blk = folds[t]
        m = blk.counts()  # (B, S, A)
        b = vmax * np.sqrt(L / np.maximum(m, 1.0))
        r_hat = blk.means(blk.reward, m)
        PV = blk.means(blk.next_values(V), m)  # P_hat_t V_{t-1}
        Q = r_hat - b + g * PV
        V_mid = Q.max(axis=-1)
        better = V_mid > V
        policy = np.where(better, greedy(Q), policy)
        V = np.where(better, V_mid, V)
        updated |= better
    if initial_policy == "uniform":
        det = np.maximum(policy, 0)
        pol = np.where((policy >= 0)[..., None], np.eye(A)[det], 1.0 / A)  # (B, S, A)
    else:
        pol = policy
    return OfflineResult(
        algorithm="vi-lcb",
        policy=pol,
        value_estimate=value_at_start(V, dataset.mu0),
        V=V,
        Q=Q,
        pessimistic=True,
        params={"delta": delta, "c_L": c_L, "initial_policy": initial_policy, "V_max": vmax},
        info={
            "seconds": time.perf_counter() - t0,
            "T": T,
            "L": L,
            "fold_size": dataset.N / (T + 1),
            "states_updated": updated.sum(axis=1).tolist(),
        },
    )
