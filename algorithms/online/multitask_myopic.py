r"""Myopic (epsilon-greedy) exploration made efficient by a diverse set of tasks (001#12, tier B).

Seed reference: ``seed-catalogue-001.md#12``. Paper: Ziping Xu, Zifan Xu, Runxuan Jiang, Peter
Stone, Ambuj Tewari, "Sample Efficient Myopic Exploration Through Multitask Reinforcement
Learning with Diverse Tasks", ICLR 2024. Read: the abstract [V]: "when an agent is trained on a
sufficiently diverse set of tasks, a generic policy-sharing algorithm with myopic exploration
design like epsilon-greedy that are inefficient in general can be sample-efficient for MTRL".
Everything below the abstract is reconstructed [A]; the paper's diversity condition and its
bound were not read.

Setting. M tasks share the dynamics of one finite-horizon MDP and differ in their rewards, whose
functions the learner knows (goal-conditioned: the reward of task "reach x" is ``1{s' = x}``,
computable from any observed transition). The environment's own reward is one more task, the
*target* task: its reward is observed in the data. Tasks take turns (episode k serves task
``k mod M``), and everything is shared: one empirical model from every episode, every task
re-planned on it after every episode.

Algorithm (per seed; stages h = 0..H-1):

    model    n_h(x, a, x') counts of all episodes; P_hat_h = n / n(x, a) (0 rows where unseen);
             r_hat_h(x, a) the mean environment reward
    plan     per task t: Q^t_h = r^t_h + P_hat_h V^t_{h+1},  V^t_h = max_a Q^t_h   (no bonus)
             r^t_h(x, a) = P_hat_h(x' = x_t | x, a) for "reach x_t";  r_hat for the target task
    act      episode k serves task m = k mod M: its policy, epsilon-greedy, greedy ties split
             uniformly

Myopic: unseen pairs are worth 0, never optimistic; with the target task alone this is
epsilon-greedy on the target, which on a combination lock opens the lock with probability
exactly A^-H per episode until it first does (all Q are 0, so the policy is uniform):
episodes-to-solve is Geometric(A^-H) (the closed form the claim checks). With the "reach x"
tasks of every lock state, the task of depth d is solved by planning as soon as some episode
entered depth d; then its policy walks to depth d and epsilon takes the next step with
probability about epsilon / A: the lock is learned in polynomially many episodes.

What is shared is the data: every task plans on the model of all episodes (``POOLED``). Policy
sharing in the abstract's sense (each task exploring with the other tasks' policies) was
measured too: on combination locks it changed nothing (episodes-to-solve 7.2 / 12.6 / 21.1 /
41.4 / 69.7 with sharing against 8.1 / 10.6 / 18.6 / 36.0 / 49.1 without at H = 3 .. 11, 16
seeds), because the pooled model already carries one task's exploration to the next; it is not
an option here. The registered mutation ``multitask-data-unshared`` gives each task the model of
its own episodes only, and the diverse set loses its advantage.

``tasks``: ``"target"`` (the environment's reward only: the single hard task) or ``"reach"``
(one "reach x" task per state, plus the target task: a diverse set). ``value_estimate()`` is
the target task's V_0(mu0); ``target_q()`` its Q ``(B, H, S, A)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from theorylab.agent import EnvSpec, read_only_copy
from theorylab.algorithms.registry import register

TASK_SETS = ("target", "reach")


@register("multitask-epsilon-greedy", kind="online", problem="tabular", bounds=(),
          papers=("001#12",))  # fmt: skip
class MultitaskEpsilonGreedy:
    """Model-based epsilon-greedy over a set of goal-conditioned tasks (module docstring).

    tasks: ``"target"`` or ``"reach"``; epsilon in [0, 1]; episodes: accepted for the common
    constructor; unused.
    """

    name = "multitask-epsilon-greedy"
    POOLED = True  # every task plans on all episodes' data (False: the mutation's own-task data)

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs: Sequence[np.random.Generator],
        *,
        episodes: int | None = None,
        tasks: str = "reach",
        epsilon: float = 0.1,
    ) -> None:
        if tasks not in TASK_SETS:
            raise ValueError(f"tasks must be one of {TASK_SETS}, got {tasks!r}")
        if not (np.isfinite(epsilon) and 0.0 <= epsilon <= 1.0):
            raise ValueError(f"epsilon must lie in [0, 1], got {epsilon!r}")
        if len(rngs) != n_seeds:
            raise ValueError(f"got {len(rngs)} generators for n_seeds={n_seeds}")
        S, A, H = env.S, env.A, env.H
        self.env, self.n_seeds = env, int(n_seeds)
        self.rngs = list(rngs)
        self.tasks, self.epsilon = tasks, float(epsilon)
        self.M = 1 + (S if tasks == "reach" else 0)  # task 0: the target; task 1 + x: reach x
        B = self.n_seeds
        self.counts = np.zeros((B, self.M, H, S, A, S))  # (B, M, H, S, A, S) per serving task
        self.reward_sum = np.zeros((B, self.M, H, S, A))  # (B, M, H, S, A)
        self.Q = np.zeros((B, self.M, H, S, A))  # (B, M, H, S, A) every task's Q
        self.episode = 0  # episode k serves task k mod M

    # ------------------------------------------------------------------ acting
    def policy(self) -> np.ndarray:
        """``(B, H, S, A)``: the served task's epsilon-greedy policy (ties split uniformly)."""
        Q = self.Q[:, self.episode % self.M]  # (B, H, S, A)
        top = Q == Q.max(axis=-1, keepdims=True)
        greedy = top / top.sum(axis=-1, keepdims=True)
        return read_only_copy((1.0 - self.epsilon) * greedy + self.epsilon / self.env.A)

    def target_q(self) -> np.ndarray:
        """The target task's Q ``(B, H, S, A)``."""
        return read_only_copy(self.Q[:, 0])

    def value_estimate(self) -> np.ndarray:
        """The target task's V_0(mu0), ``(B,)``."""
        return self.Q[:, 0, 0].max(axis=-1) @ self.env.mu0

    # ------------------------------------------------------------------ learning
    def update(self, traj) -> None:
        """Add the episode to the model, re-plan every task, serve the next task."""
        B, H = self.n_seeds, self.env.H
        if traj.states.shape[0] != B:
            raise ValueError(f"trajectories have {traj.states.shape[0]} seeds, agent has {B}")
        b, m = np.arange(B), self.episode % self.M
        for h in range(H):
            x, a, y = traj.states[:, h], traj.actions[:, h], traj.next_states[:, h]
            self.counts[b, m, h, x, a, y] += 1.0
            self.reward_sum[b, m, h, x, a] += traj.rewards[:, h]
        self._plan()
        self.episode += 1

    def _plan(self) -> None:
        B, M, H, S = self.n_seeds, self.M, self.env.H, self.env.S
        if self.POOLED:  # one model from every episode, the same for every task
            counts = np.broadcast_to(self.counts.sum(axis=1, keepdims=True), self.counts.shape)
            rsum = np.broadcast_to(
                self.reward_sum.sum(axis=1, keepdims=True), self.reward_sum.shape
            )
        else:
            counts, rsum = self.counts, self.reward_sum
        n = counts.sum(axis=-1)  # (B, M, H, S, A)
        P_hat = counts / np.maximum(n, 1.0)[..., None]  # (B, M, H, S, A, S)
        rewards = rsum / np.maximum(n, 1.0)  # (B, M, H, S, A); the target task's (task 0)
        if M > 1:  # task 1 + x pays P_hat(x' = x): the expected indicator of entering x
            reach = np.moveaxis(P_hat[:, 1:], -1, 1)  # (B, S, M-1, H, S, A) -> pick x = task - 1
            rewards = rewards.copy()
            rewards[:, 1:] = reach[:, np.arange(S), np.arange(S)]  # (B, S, H, S, A)
        V = np.zeros((B, M, S))  # (B, M, S) V_{h+1}
        for h in range(H - 1, -1, -1):
            self.Q[:, :, h] = rewards[:, :, h] + np.einsum("bmsat,bmt->bmsa", P_hat[:, :, h], V)
            V = self.Q[:, :, h].max(axis=-1)


__all__ = ["MultitaskEpsilonGreedy", "TASK_SETS"]
