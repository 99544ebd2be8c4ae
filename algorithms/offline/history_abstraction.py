r"""Offline VI on observation histories through a bisimulation abstraction learned from the data.

Seed reference: ``seed-catalogue-000.md#49``. Paper: Joey Hong, Anca Dragan, Sergey Levine,
"Offline RL with Observation Histories: Analyzing and Improving Sample Complexity", ICLR 2024.
Read [V]: the catalogue row and the abstract (standard offline RL conditioned on observation
histories "suffer[s] from poor sample complexity"; sufficient conditions for efficiency; a
bisimulation loss on the history representation "to aid worst-case sample complexity"). The
algorithm below is a tabular reconstruction [A]; the paper's loss, bound and constants were not
read.

The baseline is history-conditioned certainty-equivalent VI (``naive-vi`` on the history MDP,
``history-pomdp``): every history is its own state, so a history never seen in the data gets no
estimate and its sample need grows with the number of distinct histories.

``bisimulation-vi``: the encoder class is the functions of (stage t, last observation o_t) (the
learner knows its observation alphabet: ``observations`` = O, and the history layout of
``history_pomdp.history_layout``); within it the learner aggregates observations that are
statistically indistinguishable in reward and in the next block's law, backwards from the last
stage (a finite-horizon bisimulation by one backward pass):

1. per stage t, observation o and action a: counts n(t, o, a), mean reward r_hat, next-observation
   counts; at t the next observations are already grouped into the blocks of stage t + 1;
2. observations in decreasing order of data join the first block whose pooled estimate is within
   the confidence radii for every action (:func:`radius`): ``|r_hat_o - r_hat_B| <= e_r(n_o) +
   e_r(n_B)`` with ``e_r(n) = sqrt(log(2 U / delta) / (2 n))`` (Hoeffding), and
   ``||P_hat_o - P_hat_B||_1 <= e_p(n_o) + e_p(n_B)`` with ``e_p(n) = sqrt(2 (m log 2 +
   log(U / delta)) / n)`` (the L1 deviation bound of Weissman et al. 2003; m next blocks),
   U = H O A; an observation with an unseen action has radius infinity there; otherwise it opens a
   block;
3. the pooled model on blocks (counts of (block_t, a, block_{t+1}), mean rewards), backward VI,
   and the policy on every history h of stage t: argmax_a Q_hat_t(block_t(o_t(h)), a), also for
   histories never seen in the data.

When the observation shows the latent state next to irrelevant symbols (the ``history-pomdp``
family), the true bisimulation classes are the latents; the blocks converge to them, and the
sample need follows the latent states, not the histories nor the observations. The control
``bisimulation-no-merge`` sets the radii to 0 (every observation its own block): its sample need
then grows with the number of observations.
"""

from __future__ import annotations

import time

import numpy as np

from theorylab.algorithms.offline.dataset import OfflineDataset
from theorylab.algorithms.offline.empirical import require_data
from theorylab.algorithms.offline.result import OfflineResult, greedy
from theorylab.mdps.families.history_pomdp import history_layout


class HistoryAbstractionInputError(ValueError):
    """A parameter of bisimulation-vi does not fit the data (the message names it)."""


def radius(n: np.ndarray, n_blocks: int, U: int, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """Confidence radii ``(e_r, e_p)`` for counts n (any shape): Hoeffding for a mean in [0, 1]
    and the L1 bound for a law over ``n_blocks`` outcomes; infinity where n = 0."""
    with np.errstate(divide="ignore"):
        inv = np.where(n > 0, 1.0 / np.maximum(n, 1), np.inf)
    e_r = np.sqrt(np.log(2.0 * U / delta) / 2.0 * inv)
    e_p = np.sqrt(2.0 * (n_blocks * np.log(2.0) + np.log(U / delta)) * inv)
    return e_r, e_p


def aggregate(
    n: np.ndarray, r_sum: np.ndarray, nxt: np.ndarray, U: int, delta: float
) -> np.ndarray:
    """Block labels ``(O,)`` of one stage: n ``(O, A)`` counts, r_sum ``(O, A)`` reward sums,
    nxt ``(O, A, m)`` next-block counts (m = 0 at the last stage)."""
    O, A = n.shape
    m = nxt.shape[-1]
    labels = np.full(O, -1, dtype=np.int64)
    blocks: list[list[int]] = []
    for o in np.argsort(-n.sum(axis=1), kind="stable"):
        e_r, e_p = radius(n[o], m, U, delta)  # (A,)
        for j, members in enumerate(blocks):
            nb = n[members].sum(axis=0)  # (A,)
            f_r, f_p = radius(nb, m, U, delta)
            r_o = r_sum[o] / np.maximum(n[o], 1)
            r_b = r_sum[members].sum(axis=0) / np.maximum(nb, 1)
            ok = np.abs(r_o - r_b) <= e_r + f_r
            if m:
                p_o = nxt[o] / np.maximum(n[o], 1)[:, None]
                p_b = nxt[members].sum(axis=0) / np.maximum(nb, 1)[:, None]
                ok &= np.abs(p_o - p_b).sum(axis=-1) <= e_p + f_p
            if np.all(ok | (n[o] == 0) | (nb == 0)):
                members.append(int(o))
                labels[o] = j
                break
        else:
            blocks.append([int(o)])
            labels[o] = len(blocks) - 1
    return labels


def bisimulation_vi(
    dataset: OfflineDataset, observations: int | None = None, delta: float = 0.1
) -> OfflineResult:
    """Aggregate observations per stage, plan on the blocks, lift to histories (module
    docstring)."""
    t0 = time.perf_counter()
    require_data(dataset, "bisimulation-vi")
    if dataset.horizon is None:
        raise HistoryAbstractionInputError(
            "bisimulation-vi needs finite-horizon history data (e.g. history-pomdp), got "
            "discounted data"
        )
    H, S, A = int(dataset.horizon), dataset.S, dataset.A
    if isinstance(observations, bool) or not isinstance(observations, (int, np.integer)):
        raise HistoryAbstractionInputError(
            "bisimulation-vi: observations must be the number of observation symbols per step "
            f"(e.g. observations=4 for history-pomdp:N=2,K=2), got {observations!r}"
        )
    O = int(observations)
    layout = history_layout(O, H) if O >= 1 else None
    if layout is None or int(layout.offsets[-1]) != S:
        raise HistoryAbstractionInputError(
            f"bisimulation-vi: observations={observations!r} does not match the data: histories "
            f"of length <= H = {H} over O symbols number sum_t O^t, the data has S = {S} states"
        )
    if not (isinstance(delta, (int, float)) and 0.0 < delta < 1.0):
        raise HistoryAbstractionInputError(
            f"bisimulation-vi: delta must lie in (0, 1), got {delta!r}"
        )
    B = dataset.n_seeds
    U = H * O * A
    Q = np.zeros((B, H, S, A))
    V = np.zeros((B, H + 1, S))
    blocks = np.zeros((B, H, O), dtype=np.int64)
    w = np.ones(dataset.states.shape) if dataset.weights is None else dataset.weights
    for b in range(B):
        t = dataset.stages[b]
        o, a = layout.last[dataset.states[b]], dataset.actions[b]
        o2 = layout.last[dataset.next_states[b]]
        n = np.zeros((H, O, A))
        r_sum = np.zeros((H, O, A))
        np.add.at(n, (t, o, a), w[b])
        np.add.at(r_sum, (t, o, a), w[b] * dataset.rewards[b])
        v_next = np.zeros(1)  # block values of stage t + 1
        for h in range(H - 1, -1, -1):
            if h == H - 1:
                nxt = np.zeros((O, A, 0))
            else:
                m = int(blocks[b, h + 1].max()) + 1
                at = t == h
                nxt = np.zeros((O, A, m))
                np.add.at(nxt, (o[at], a[at], blocks[b, h + 1][o2[at]]), w[b][at])
            lab = aggregate(n[h], r_sum[h], nxt, U, delta)
            blocks[b, h] = lab
            k = int(lab.max()) + 1
            onehot = np.eye(k)[lab]  # (O, k)
            nb = onehot.T @ n[h]  # (k, A)
            r_hat = np.where(nb > 0, (onehot.T @ r_sum[h]) / np.maximum(nb, 1e-300), 0.0)
            if h == H - 1:
                Qb = r_hat
            else:
                cb = np.einsum("ok,oam->kam", onehot, nxt)  # (k, A, m)
                p = cb / np.maximum(nb, 1e-300)[..., None]
                Qb = r_hat + p @ v_next  # (k, A)
            v_next = Qb.max(axis=-1)
            hist = slice(int(layout.offsets[h]), int(layout.offsets[h + 1]))
            Q[b, h, hist] = Qb[lab[layout.last[hist]]]
            V[b, h, hist] = v_next[lab[layout.last[hist]]]
    return OfflineResult(
        "bisimulation-vi",
        greedy(Q),
        V[:, 0] @ dataset.mu0,
        V,
        Q,
        pessimistic=False,
        params={"observations": O, "delta": delta},
        info={"blocks": blocks, "seconds": time.perf_counter() - t0},
    )
