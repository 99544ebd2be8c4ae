r"""WSRL: warm-start online fine-tuning that does not retain the offline data (tabular, batched).

Seed: ``seed-catalogue-002-004.md#C8`` (tier B). Paper: Zhou, Peng, Li, Levine, Kumar, "Efficient
Online Reinforcement Learning Fine-Tuning Need Not Retain Offline Data", ICLR 2025
(arXiv:2412.07762). Read: the catalogue row's quotes only [V for: retaining offline data may "in
principle, also limit the performance improvement possible because of constraints or pessimism
on offline data"; "continued training on offline data is mostly useful for preventing a sudden
divergence in the value function at the onset of fine-tuning"; "WSRL employs a warmup phase that
seeds the online RL run with a very small number of rollouts from the pre-trained policy"]. The
paper's algorithm box, its deep-RL learner (pre-trained CQL/Cal-QL, fine-tuned with SAC-style
updates) and its constants were not read; the tabular learner below is reconstructed [M].

Algorithm (finite horizon H, 0-based stages, known or estimated rewards):

1. Offline pre-training: Hoeffding pessimistic VI (``pessimistic-vi-hoeffding``, Li et al.'s
   Algorithm 2 with ``b = min(c_h H sqrt(L / n), H)``) on the dataset gives ``Q_off (B, H, S, A)``
   and its greedy policy ``pi_off``.
2. Warm-up: the first W online episodes play ``pi_off`` (``warmup_policy="offline"``; the
   control ``"uniform"`` plays the uniform policy) and only fill the online buffer; the Q
   function is not trained during them (it stays Q_off).
3. Online fine-tuning, after every episode k > W: Q is refit on the online buffer by backward
   induction -- the fixed point of Q-learning on the replay buffer [M] --

       Q_h(s, a) = r_hat_h(s, a) + P_hat^on_h V_{h+1}(s, a)    where n^on_h(s, a) > 0
       Q_h(s, a) = Q_off_h(s, a)                                 elsewhere (the warm start)
       V_h(s) = max_a Q_h(s, a)

   and the next episode plays ``(1 - epsilon) greedy(Q) + epsilon uniform``.
   ``retain=True`` is the baseline WSRL argues against: the offline data stays in the buffer and
   the pessimistic training continues on the union (pessimistic VI on offline + online counts,
   ``L = log(max(N_off + k H, 1) H / delta)``); with no online data yet it IS step 1.

The "dip": unpenalised one-sample estimates on the pairs first visited online sit next to the
pessimistic values of Q_off elsewhere, so early refits can prefer a poorly estimated action over
the offline policy's (pessimistically valued) one; the greedy policy's true value then falls
below V^{pi_off}. Warm-up rollouts from pi_off first calibrate the offline policy's own pairs.

Measured (claim ``wsrl-warmup-dip-no-retention``, quick, 384 seeds): dip 0.091 without warm-up,
0.048 at W = 4, 0.025 at W = 16; final value 4.274 without retention vs 4.158 with it.

Deviations: tabular and exact (no function approximation, so no divergence in the deep-RL
sense: the dip here is the tabular mechanism above); per-stage counts (``stage_dependent=True``)
so the online counts add to pessimistic VI's per-stage offline counts; epsilon-greedy exploration
instead of SAC's entropy bonus.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from theorylab.agent import EnvSpec, read_only_copy
from theorylab.algorithms.offline.result import greedy
from theorylab.algorithms.online.greedy import EpsilonGreedy
from theorylab.algorithms.registry import register

WARMUP_POLICIES = ("offline", "uniform")


def offline_counts(dataset) -> tuple[np.ndarray, np.ndarray]:
    """Per-stage offline statistics: transition counts ``(B, H, S, A, S)`` and reward sums
    ``(B, H, S, A)`` (weighted when the dataset is)."""
    B, S, A, H = dataset.n_seeds, dataset.S, dataset.A, dataset.horizon
    N = np.zeros((B, H, S, A, S))
    R = np.zeros((B, H, S, A))
    w = np.ones(dataset.states.shape) if dataset.weights is None else dataset.weights  # (B, N)
    b = np.broadcast_to(np.arange(B)[:, None], dataset.states.shape)
    idx = (b, dataset.stages, dataset.states, dataset.actions)
    np.add.at(N, (*idx, dataset.next_states), w)
    np.add.at(R, idx, w * dataset.rewards)
    return N, R


def warmup_policy(which: str, offline_policy: np.ndarray, A: int) -> np.ndarray:
    """The warm-up rollouts' policy ``(B, H, S, A)``: pi_off one-hot, or uniform."""
    if which == "uniform":
        return np.full((*offline_policy.shape, A), 1.0 / A)
    return np.eye(A)[offline_policy]


@register("wsrl", kind="online", problem="tabular", bounds=(), papers=("002-004#C8",))
class WSRL(EpsilonGreedy):
    """Warm-start RL (module docstring): pessimistic offline Q, W warm-up rollouts, then
    epsilon-greedy fine-tuning on the online buffer alone (``retain=False``) or pessimistic
    training on offline + online data (``retain=True``).

    dataset: an OfflineDataset of finite-horizon data with one seed per online seed (required).
    warmup: W >= 0 warm-up episodes; warmup_policy: "offline" (pi_off) or "uniform".
    c_h, delta: the Hoeffding penalty's constant and confidence (``pessimistic-vi-hoeffding``).
    """

    name = "wsrl"

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs: Sequence[np.random.Generator],
        *,
        dataset=None,
        warmup: int = 0,
        warmup_policy: str = "offline",
        retain: bool = False,
        epsilon: float = 0.1,
        c_h: float = 1.0,
        delta: float = 0.1,
        episodes: int | None = None,
    ) -> None:
        from theorylab.algorithms.offline.pessimistic_vi import pessimistic_vi

        _check(env, n_seeds, dataset, warmup, warmup_policy, retain, c_h, delta)
        self.warmup = int(warmup)
        self.warmup_policy = warmup_policy
        self.retain = bool(retain)
        self.c_h, self.delta = float(c_h), float(delta)
        off = pessimistic_vi(dataset, penalty="hoeffding", c_h=c_h, delta=delta)
        self.Q_off = off.Q  # (B, H, S, A)
        self.offline_policy = greedy(self.Q_off)  # (B, H, S)
        self.n_offline = float(np.asarray(dataset.total_weight).max())
        self.N_off, self.R_off = offline_counts(dataset)  # (B, H, S, A, S), (B, H, S, A)
        super().__init__(
            env, n_seeds, rngs, episodes=episodes, epsilon=epsilon, stage_dependent=True
        )

    def _backup(self, h: int, V_next: np.ndarray) -> np.ndarray:
        if self.episode < self.warmup:  # no training during the warm-up
            return self.Q_off[:, h]
        if not self.retain:
            Q = super()._backup(h, V_next)  # unvisited_value there, replaced by the warm start
            return np.where(self.model.visited[:, h], Q, self.Q_off[:, h])
        m, H = self.model, self.env.H
        n = m.N_sa[:, h] + self.N_off[:, h].sum(axis=-1)  # (B, S, A)
        counts = m.N_sas[:, h] + self.N_off[:, h]  # (B, S, A, S)
        safe = np.maximum(n, 1.0)
        PV = np.einsum("bsat,bt->bsa", counts, V_next) / safe
        if self.known_rewards:
            r_hat = np.broadcast_to(self.R_known[h], n.shape)
        else:
            r_hat = (m.R_sum[:, h] + self.R_off[:, h]) / safe
        L = math.log(max(self.n_offline + self.episode * H, 1.0) * H / self.delta)
        b = np.minimum(self.c_h * H * np.sqrt(L / safe), float(H))
        return np.where(n > 0, np.maximum(r_hat + PV - b, 0.0), 0.0)

    def _played_policy(self, greedy_actions: np.ndarray) -> np.ndarray:
        A = self.env.A
        if self.episode < self.warmup:
            return warmup_policy(self.warmup_policy, self.offline_policy, A)
        return super()._played_policy(greedy(self.Q))

    def greedy_policy(self) -> np.ndarray:
        """The current greedy policy ``(B, H, S)`` int (ties to the smallest index): the policy
        whose exact value the claim tracks after every episode."""
        return read_only_copy(greedy(self.Q))


def _check(env, n_seeds, dataset, warmup, warmup_policy, retain, c_h, delta) -> None:
    from theorylab.algorithms.offline.dataset import OfflineDataset

    if not isinstance(dataset, OfflineDataset):
        raise ValueError(
            "wsrl: dataset must be an OfflineDataset (theorylab.algorithms.offline.dataset."
            f"make_dataset), got {type(dataset).__name__}"
        )
    if dataset.horizon is None or dataset.stages is None:
        raise ValueError("wsrl: dataset must hold finite-horizon data (stages), got discounted")
    got = (dataset.S, dataset.A, dataset.horizon, dataset.n_seeds)
    want = (env.S, env.A, env.H, int(n_seeds))
    if got != want:
        raise ValueError(f"wsrl: dataset has (S, A, H, seeds) = {got}, the online run has {want}")
    if isinstance(warmup, bool) or not isinstance(warmup, (int, np.integer)) or warmup < 0:
        raise ValueError(f"wsrl: warmup must be an integer >= 0, got {warmup!r}")
    if warmup_policy not in WARMUP_POLICIES:
        raise ValueError(f"wsrl: warmup_policy must be one of {WARMUP_POLICIES}, got "
                         f"{warmup_policy!r}")  # fmt: skip
    if not isinstance(retain, bool):
        raise ValueError(f"wsrl: retain must be True or False, got {retain!r}")
    if not (math.isfinite(c_h) and c_h >= 0):
        raise ValueError(f"wsrl: c_h must be finite and >= 0, got {c_h!r}")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"wsrl: delta must lie in (0, 1), got {delta!r}")


__all__ = ["WSRL", "offline_counts", "warmup_policy"]
