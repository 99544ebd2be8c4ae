r"""Representation learning from videos vs from action-labelled data, tabular and exact.

Seed reference: ``seed-catalogue-001.md#30``. Paper: Dipendra Misra, Akanksha Saran, Tengyang Xie,
Alex Lamb, John Langford, "Towards Principled Representation Learning from Videos for
Reinforcement Learning", ICLR 2024 (arXiv:2403.13765). Read [V]: the catalogue row and the
abstract (pre-training from action-free video; autoencoding, temporal contrastive learning and
forward modelling analysed; "upper bounds for temporal contrastive learning and forward modeling
in the presence of only iid noise"; with exogenous noise "the sample complexity of learning from
video data can be exponentially worse than learning from action-labeled trajectory data"). The
objectives below are their tabular, exactly fitted forms, reconstructed [A]; the paper's function
classes, bottlenecks and constants were not read.

Every objective fits a decoder phi: observations -> {0 .. n_latent-1} (the bottleneck) by the
Bayes-optimal predictor of its target, computed from counts, then Ward clustering of the
predictor's rows into n_latent groups (``musik.cluster``, shared with MusIK):

* ``forward`` (video: pairs (x, x'), actions unused): the forward model P_hat(x'|x); the row of
  x is its signature;
* ``contrastive`` (video): the temporal-contrastive optimum, the density ratio
  P_hat(x, x') / (P_hat(x) P_hat(x')) = P_hat(x'|x) / P_hat(x') of real pairs against pairs from
  the product of marginals;
* ``inverse-kinematics`` (action-labelled): the inverse model P_hat(a | x, x'), with a Dirichlet
  prior of total weight ``prior`` toward the data's action frequencies (pairs without data get the
  prior); the signature of x is the table over (x', a).

Why (in a block MDP with latent z and exogenous e): the forward law factorises,
P(x'|x) = T^pi(z'|z) K(e'|e) q(x'|z', e'); if e is iid, K(.|e) is the same for every e and the
signature depends on z only (video succeeds); if e persists, the signatures differ in e as much as
(or more than) in z, and a bottleneck of n_latent groups can spend itself on e (video fails). In
the inverse model K(e'|e) cancels: P(a | x, x') = pi(a) T(z'|z, a) / sum_b pi(b) T(z'|z, b)
depends on x only through z, whatever e does.

Downstream RL (``video-representation``, kind ``offline``, discounted data): the latent model
T_hat(z'|z, a), r_hat(z, a) from the counts of (phi(x), a, phi(x')), discounted value iteration
on it, and the policy pi(x) = argmax_a Q_hat(phi(x), a); ``value_estimate`` is the latent value
from mu0. Decoders are in ``info["decoders"] (B, S)``.
"""

from __future__ import annotations

import time

import numpy as np

from theorylab.algorithms.offline.dataset import OfflineDataset
from theorylab.algorithms.offline.empirical import require_data
from theorylab.algorithms.offline.result import OfflineResult, greedy
from theorylab.algorithms.online.musik import cluster

OBJECTIVES = ("forward", "contrastive", "inverse-kinematics")
VIDEO_OBJECTIVES = ("forward", "contrastive")


class VideoRepresentationInputError(ValueError):
    """A parameter of the video-representation learners is invalid (the message names it)."""


def transition_counts(dataset: OfflineDataset) -> np.ndarray:
    """C(x, a, x') ``(B, S, A, S)`` (weighted rows count their weight)."""
    B, S, A = dataset.n_seeds, dataset.S, dataset.A
    w = np.ones(dataset.states.shape) if dataset.weights is None else dataset.weights
    C = np.zeros((B, S * A * S))
    for b in range(B):
        idx = (dataset.states[b] * A + dataset.actions[b]) * S + dataset.next_states[b]
        C[b] = np.bincount(idx, weights=w[b], minlength=S * A * S)
    return C.reshape(B, S, A, S)


def signatures(C: np.ndarray, objective: str, prior: float = 1.0) -> np.ndarray:
    """The rows clustered by ``objective`` for one seed, from counts C ``(S, A, S)``: ``(S, S)``
    for the video objectives, ``(S, S A)`` for inverse kinematics (module docstring)."""
    S, A, _ = C.shape
    if objective in VIDEO_OBJECTIVES:
        pairs = C.sum(axis=1)  # (S, S): the action-free video pairs
        rows = pairs / np.maximum(pairs.sum(axis=1, keepdims=True), 1e-300)  # P_hat(x'|x)
        if objective == "contrastive":
            marginal = pairs.sum(axis=0) / max(pairs.sum(), 1e-300)  # P_hat(x') (S,)
            rows = rows / np.maximum(marginal, 1e-300)[None, :]
        return rows
    if objective == "inverse-kinematics":
        freq = C.sum(axis=(0, 2)) / max(C.sum(), 1e-300)  # action frequencies (A,)
        post = (C + prior * freq[None, :, None]) / (C.sum(axis=1, keepdims=True) + prior)
        return np.swapaxes(post, 1, 2).reshape(S, S * A)  # P_hat(a | x, x') over (x', a)
    raise VideoRepresentationInputError(
        f"video-representation: objective must be one of {OBJECTIVES}, got {objective!r}"
    )


def decode(C: np.ndarray, objective: str, n_latent: int, prior: float = 1.0) -> np.ndarray:
    """Decoders ``(B, S)`` in 0 .. n_latent-1 from counts C ``(B, S, A, S)``."""
    return np.stack([cluster(signatures(C[b], objective, prior), n_latent) for b in range(len(C))])


def latent_values(
    C: np.ndarray, rewards: np.ndarray, labels: np.ndarray, n_latent: int, gamma: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One seed's latent model and its Q: counts C ``(S, A, S)``, reward sums ``(S, A)``, decoder
    labels ``(S,)``. Returns ``(T_hat (N, A, N), r_hat (N, A), Q_hat (N, A))``; latent pairs
    without data keep a self-loop with reward 0."""
    N, A = n_latent, C.shape[1]
    onehot = np.eye(N)[labels]  # (S, N)
    Cz = np.einsum("sn,sat,tm->nam", onehot, C, onehot)  # (N, A, N)
    n = Cz.sum(axis=-1)  # (N, A)
    T_hat = np.where(n[..., None] > 0, Cz / np.maximum(n, 1e-300)[..., None], 0.0)
    T_hat[n == 0] = np.eye(N)[np.nonzero(n == 0)[0]]
    r_hat = np.where(n > 0, (onehot.T @ rewards) / np.maximum(n, 1e-300), 0.0)
    Q = np.zeros((N, A))
    for _ in range(int(np.ceil(np.log(1e-12) / np.log(gamma))) + 1):  # gamma^k <= 1e-12
        Q = r_hat + gamma * T_hat @ Q.max(axis=-1)
    return T_hat, r_hat, Q


def check_n_latent(who: str, n_latent, limit: int, name: str, error: type[ValueError]) -> None:
    """A decoder bottleneck must be an integer in 1 .. limit (``name`` = limit in the message),
    else a one-line ``error`` naming it."""
    if (
        n_latent is None
        or isinstance(n_latent, bool)
        or not isinstance(n_latent, (int, np.integer))
        or not 1 <= n_latent <= limit
    ):
        raise error(
            f"{who}: n_latent must be an integer in 1 .. {name} = {limit} (the decoder's "
            f"bottleneck, e.g. n_latent=4), got {n_latent!r}"
        )


def check_parameters(objective, n_latent, prior, S: int) -> tuple[str, int, float]:
    """The parameters validated, or a one-line error naming the bad one."""
    if objective not in OBJECTIVES:
        raise VideoRepresentationInputError(
            f"video-representation: objective must be one of {OBJECTIVES}, got {objective!r}"
        )
    check_n_latent("video-representation", n_latent, S, "S", VideoRepresentationInputError)
    if isinstance(prior, bool) or not isinstance(prior, (int, float)) or not prior > 0:
        raise VideoRepresentationInputError(
            f"video-representation: prior must be a positive number, got {prior!r}"
        )
    return objective, int(n_latent), float(prior)


def video_representation(
    dataset: OfflineDataset, objective: str, n_latent: int, prior: float = 1.0
) -> OfflineResult:
    """Decode with ``objective``, then plan in the decoded latent model (module docstring)."""
    t0 = time.perf_counter()
    require_data(dataset, "video-representation")
    S, A = dataset.S, dataset.A
    objective, N, prior = check_parameters(objective, n_latent, prior, S)
    if dataset.horizon is not None or dataset.gamma is None:
        raise VideoRepresentationInputError(
            "video-representation needs discounted data (an MDP with gamma and no horizon, e.g. "
            "exo-block), got a dataset with horizon " + str(dataset.horizon)
        )
    C = transition_counts(dataset)  # (B, S, A, S)
    labels = decode(C, objective, N, prior)  # (B, S)
    B = dataset.n_seeds
    policy = np.zeros((B, S), dtype=np.int64)
    Q_obs = np.zeros((B, S, A))
    V_hat = np.zeros(B)
    w = np.ones(dataset.states.shape) if dataset.weights is None else dataset.weights
    for b in range(B):
        rew = np.zeros(S * A)
        np.add.at(rew, dataset.states[b] * A + dataset.actions[b], w[b] * dataset.rewards[b])
        _, _, Q = latent_values(C[b], rew.reshape(S, A), labels[b], N, float(dataset.gamma))
        Q_obs[b] = Q[labels[b]]
        policy[b] = greedy(Q_obs[b])
        V_hat[b] = float(dataset.mu0 @ Q_obs[b].max(axis=-1))
    return OfflineResult(
        "video-representation",
        policy,
        V_hat,
        Q_obs.max(axis=-1),
        Q_obs,
        pessimistic=False,
        params={"objective": objective, "n_latent": N, "prior": prior},
        info={"decoders": labels, "seconds": time.perf_counter() - t0},
    )
