r"""A state abstraction learned from the samples of every task of a hidden-parameter block MDP,
then one latent model per task.

Seed reference: ``seed-catalogue-001.md#31``. Paper: Amy Zhang, Shagun Sodhani, Khimya Khetarpal,
Joelle Pineau, "Learning Robust State Abstractions for Hidden-Parameter Block MDPs", ICLR 2021
(arXiv:2007.07206). Read [V]: the catalogue row and the abstract (HiP-BMDPs: a family of block MDPs
that share a latent state space and emission and differ through a hidden parameter; abstractions for
multi-task and meta RL; "transfer and generalization bounds based on task and state similarity,
along with sample complexity bounds that depend on the aggregate number of samples across tasks,
rather than the number of tasks") and the project page (the method's three parts: an encoder phi
from observations to a latent space, an environment encoder psi from a task identifier to the hidden
parameter theta, and a universal dynamics model conditioned on theta, trained on all tasks
together). The paper's theorems, losses and constants were not read. The tabular learner below is a
reconstruction [A]: the exact, count-based form of "one encoder for all tasks".

``hip-abstraction-vi`` (kind ``offline``, discounted data of ``hip-bmdp``; ``tasks`` = M and
``n_latent`` given):

1. per task m the counts C_m(x, a, x') of its rows (state s = m X + x);
2. ``pooled=True`` (the HiP-BMDP learner): the signature of observation x is the pooled
   next-observation law sum_m C_m(x, a, .) / sum_m C_m(x, a), concatenated over actions
   (``(X, A X)``); every task's row is constant on a block (P_m(x'|x, a) = T_m(z'|z(x), a)
   q(x'|z')), so the pooled row is too, and it is estimated from all N samples: the decoder's
   error depends on N, not on the number of tasks. ``pooled=False`` (the per-task baseline):
   each task clusters its own rows (N / M samples);
3. Ward clustering of the signatures into ``n_latent`` groups (``musik.cluster``, shared with
   MusIK and video-representation);
4. per task, the latent model T_hat_m(z'|z, a), r_hat_m from the counts of (phi(x), a, phi(x'))
   of its rows, discounted VI on it (``video_representation.latent_values``), and the policy
   pi(m X + x) = argmax_a Q_hat_m(phi_m(x), a).

``info["decoders"]`` ``(B, M, X)`` and ``info["latent_models"]`` ``(B, M, N, A, N)``. Deviation
from the paper: the task models are separate tabular fits (the paper learns a task embedding
shared through one network), so the model error per task still follows N / M; the claim measures
the abstraction (decoder) error, which the paper's bound ties to the aggregate samples.
"""

from __future__ import annotations

import time

import numpy as np

from theorylab.algorithms.offline.dataset import OfflineDataset
from theorylab.algorithms.offline.empirical import require_data
from theorylab.algorithms.offline.result import OfflineResult, greedy
from theorylab.algorithms.offline.video_representation import (
    check_n_latent,
    latent_values,
    transition_counts,
)
from theorylab.algorithms.online.musik import cluster


class HiPAbstractionInputError(ValueError):
    """A parameter of hip-abstraction-vi does not fit the data (the message names it)."""


def task_counts(C: np.ndarray, M: int) -> np.ndarray:
    """Per-task counts ``(M, X, A, X)`` from one seed's counts ``(S, A, S)``, S = M X (rows of
    one task that move to another task are impossible in a HiP-BMDP and dropped)."""
    S, A, _ = C.shape
    X = S // M
    idx = np.arange(M)
    return C.reshape(M, X, A, M, X)[idx, :, :, idx]  # (M, X, A, X)


def next_law_signatures(Cx: np.ndarray) -> np.ndarray:
    """Signatures ``(X, A X)``: the empirical next-observation law of every (x, a) from counts
    ``(X, A, X)``, concatenated over actions (zeros where (x, a) has no data)."""
    X, A, _ = Cx.shape
    law = Cx / np.maximum(Cx.sum(axis=-1, keepdims=True), 1e-300)
    return law.reshape(X, A * X)


def shared_decoder(Cm: np.ndarray, n_latent: int) -> np.ndarray:
    """One decoder for every task ``(M, X)`` from the pooled counts of ``Cm (M, X, A, X)``."""
    labels = cluster(next_law_signatures(Cm.sum(axis=0)), n_latent)  # (X,)
    return np.broadcast_to(labels, Cm.shape[:2]).copy()


def per_task_decoders(Cm: np.ndarray, n_latent: int) -> np.ndarray:
    """A decoder per task ``(M, X)``, each from its own counts (the baseline)."""
    return np.stack([cluster(next_law_signatures(c), n_latent) for c in Cm])


def check_parameters(tasks, n_latent, pooled, S: int) -> tuple[int, int, bool]:
    """The parameters validated, or a one-line error naming the bad one."""
    if (
        isinstance(tasks, bool)
        or not isinstance(tasks, (int, np.integer))
        or tasks < 1
        or S % tasks
    ):
        raise HiPAbstractionInputError(
            f"hip-abstraction-vi: tasks must be the number of tasks M, a divisor of S = {S} "
            f"(e.g. tasks=4 for hip-bmdp:M=4), got {tasks!r}"
        )
    X = S // int(tasks)
    check_n_latent(
        "hip-abstraction-vi", n_latent, X, "X (observations per task)", HiPAbstractionInputError
    )
    if not isinstance(pooled, bool):
        raise HiPAbstractionInputError(
            f"hip-abstraction-vi: pooled must be True or False, got {pooled!r}"
        )
    return int(tasks), int(n_latent), pooled


def hip_abstraction_vi(
    dataset: OfflineDataset, tasks: int | None = None, n_latent: int | None = None, pooled=True
) -> OfflineResult:
    """Decode (pooled over tasks or per task), then plan per task (module docstring)."""
    t0 = time.perf_counter()
    require_data(dataset, "hip-abstraction-vi")
    S, A = dataset.S, dataset.A
    M, N, pooled = check_parameters(tasks, n_latent, pooled, S)
    if dataset.horizon is not None or dataset.gamma is None:
        raise HiPAbstractionInputError(
            "hip-abstraction-vi needs discounted data (e.g. hip-bmdp), got a dataset with "
            f"horizon {dataset.horizon}"
        )
    X = S // M
    B = dataset.n_seeds
    w = np.ones(dataset.states.shape) if dataset.weights is None else dataset.weights
    decoders = np.zeros((B, M, X), dtype=np.int64)
    models = np.zeros((B, M, N, A, N))
    Q_obs = np.zeros((B, S, A))
    for b in range(B):
        Cm = task_counts(transition_counts(dataset.only(b))[0], M)  # (M, X, A, X), one seed
        decoders[b] = shared_decoder(Cm, N) if pooled else per_task_decoders(Cm, N)
        rew = np.zeros(S * A)
        np.add.at(rew, dataset.states[b] * A + dataset.actions[b], w[b] * dataset.rewards[b])
        rew = rew.reshape(M, X, A)
        for m in range(M):
            T_hat, _, Q = latent_values(Cm[m], rew[m], decoders[b, m], N, float(dataset.gamma))
            models[b, m] = T_hat
            Q_obs[b, m * X : (m + 1) * X] = Q[decoders[b, m]]
    V = Q_obs.max(axis=-1)  # (B, S)
    return OfflineResult(
        "hip-abstraction-vi",
        greedy(Q_obs),
        np.array([float(dataset.mu0 @ V[b]) for b in range(B)]),  # per seed: batch-invariant
        V,
        Q_obs,
        pessimistic=False,
        params={"tasks": M, "n_latent": N, "pooled": pooled},
        info={"decoders": decoders, "latent_models": models, "seconds": time.perf_counter() - t0},
    )
