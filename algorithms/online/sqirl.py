"""SQIRL: shallow Q-iteration via reinforcement imitation learning -- random rollouts, then
k - 1 steps of fitted Q-iteration, one stage at a time.

Seed reference: ``seed-catalogue-000.md#4`` (rows 000#4, 001#10, 002-004#A3). Cassidy Laidlaw,
Banghua Zhu, Stuart Russell, Anca Dragan, "The Effective Horizon Explains Deep RL Performance in
Stochastic Environments" (ICLR 2024); the deterministic precursor GORP is in Laidlaw, Russell,
Dragan, "Bridging RL Theory and Practice with the Effective Horizon" (NeurIPS 2023).

What was read: the catalogue rows (exact Q of the uniform policy, k steps of value iteration,
regression = tabular averaging, samples ~ exp(k) not exp(H)). The paper's Algorithm 1 and its
constants were not available here; the loop below is reconstructed [A].

Algorithm (reconstructed [A]), stages i = 0 .. H-1 in order, ``rollouts`` = m episodes each:

    collect  m episodes: the learned pi_t for t < i, uniformly random actions for t >= i;
    regress  Q^1_{e}(s, a) = mean of the Monte Carlo return-to-go from (e, s, a),
             e = min(i + k - 1, H - 1)  (an unbiased estimate of Q^{pi_rand}_e);
    iterate  for t = e - 1 down to i (fitted Q-iteration, tabular averaging):
                 Q_t(s, a) = mean over samples at (t, s, a) of r + max_a' Q_{t+1}(s', a');
    improve  pi_i(s) = argmax_a Q_i(s, a)  (ties to the smallest index).

Pairs never sampled get Q = 0 (rewards lie in [0, 1]: an unseen action never looks better than
a seen one that paid). After the H-th stage the agent plays the learned deterministic policy.
Total episodes H m; on an MDP whose effective horizon is k* <= k the paper's bound needs m of
order A^k (up to logs and the variance term), so samples grow like A^k, not A^H.

``k`` is the lookahead (the paper's hyper-parameter; SQIRL succeeds when k >= k*).
``value_estimate()`` is the learner's max_a Q_0(s, a) at mu0 (0 before stage 0 finishes).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from theorylab.agent import EnvSpec, read_only_copy
from theorylab.algorithms.registry import register


@register(
    "sqirl", kind="online", problem="tabular", bounds=(), papers=("000#4", "001#10", "002-004#A3")
)
class SQIRL:
    """SQIRL with tabular regression (see the module docstring).

    k: lookahead, the number of Q-iterates (k - 1 fitted backups on the random-policy Q), >= 1.
    rollouts: episodes per stage m, >= 1 (H m episodes in all).
    episodes: accepted for the common constructor; unused.
    """

    name = "sqirl"

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs: Sequence[np.random.Generator],
        *,
        episodes: int | None = None,
        k: int = 2,
        rollouts: int = 32,
    ) -> None:
        if isinstance(k, bool) or int(k) != k or k < 1:
            raise ValueError(f"k must be an integer >= 1, got k={k!r}")
        if isinstance(rollouts, bool) or int(rollouts) != rollouts or rollouts < 1:
            raise ValueError(f"rollouts must be an integer >= 1, got rollouts={rollouts!r}")
        if len(rngs) != n_seeds:
            raise ValueError(f"got {len(rngs)} generators for n_seeds={n_seeds}")
        S, A, H = env.S, env.A, env.H
        self.env = env
        self.n_seeds = B = int(n_seeds)
        self.rngs = list(rngs)  # unused: the environment draws the random actions
        self.k, self.rollouts = int(k), int(rollouts)
        self.stage = 0  # the stage being learned (H: done)
        self.seen = 0  # episodes collected at this stage
        self.learned = np.zeros((B, H, S), dtype=np.int64)  # (B, H, S) pi_t for t < stage
        self.Q0 = np.zeros((B, S, A))  # (B, S, A) the stage-0 Q estimate
        self._reset_stats()

    def _reset_stats(self) -> None:
        B, S, A, H = self.n_seeds, self.env.S, self.env.A, self.env.H
        self.count = np.zeros((B, H, S, A))  # (B, H, S, A) visits
        self.reward_sum = np.zeros((B, H, S, A))  # (B, H, S, A) sum of r
        self.return_sum = np.zeros((B, H, S, A))  # (B, H, S, A) sum of return-to-go
        self.next_count = np.zeros((B, H, S, A, S))  # (B, H, S, A, S) transitions

    # ------------------------------------------------------------------ acting
    def policy(self) -> np.ndarray:
        """``(B, H, S, A)``: learned one-hot actions before the current stage, uniform after."""
        H, S, A = self.env.H, self.env.S, self.env.A
        onehot = np.eye(A)[self.learned]  # (B, H, S, A)
        before = (np.arange(H) < self.stage)[None, :, None, None]  # (1, H, 1, 1)
        return read_only_copy(np.where(before, onehot, np.full((1, H, S, A), 1.0 / A)))

    def learned_policy(self) -> np.ndarray:
        """The learned deterministic policy ``(B, H, S)`` (meaningful for t < stage)."""
        return read_only_copy(self.learned)

    @property
    def done(self) -> bool:
        return self.stage >= self.env.H

    def value_estimate(self) -> np.ndarray:
        """max_a Q_0(s, a) at mu0, ``(B,)``."""
        return self.Q0.max(axis=-1) @ self.env.mu0

    # ------------------------------------------------------------------ learning
    def update(self, traj) -> None:
        """Add the episode to this stage's statistics; after ``rollouts`` episodes, fit and
        improve stage ``stage``. traj: Trajectories with ``(B, H)`` arrays."""
        B, H = self.n_seeds, self.env.H
        if traj.states.shape[0] != B:
            raise ValueError(f"trajectories have {traj.states.shape[0]} seeds, agent has {B}")
        if self.done:
            return
        rows = np.arange(B)
        togo = np.cumsum(traj.rewards[:, ::-1], axis=1)[:, ::-1]  # (B, H) return-to-go
        for t in range(self.stage, H):
            x, a = traj.states[:, t], traj.actions[:, t]  # (B,)
            self.count[rows, t, x, a] += 1
            self.reward_sum[rows, t, x, a] += traj.rewards[:, t]
            self.return_sum[rows, t, x, a] += togo[:, t]
            self.next_count[rows, t, x, a, traj.next_states[:, t]] += 1
        self.seen += 1
        if self.seen >= self.rollouts:
            self._improve()
            self.stage += 1
            self.seen = 0
            self._reset_stats()

    def _improve(self) -> None:
        """Q^1 at the last stage of the window by Monte Carlo, k - 1 fitted backups to ``stage``."""
        i, H = self.stage, self.env.H
        end = min(i + self.k - 1, H - 1)
        n = np.maximum(self.count, 1.0)  # (B, H, S, A); unseen pairs give 0
        Q = self.return_sum[:, end] / n[:, end]  # (B, S, A) Q^1_end
        for t in range(end - 1, i - 1, -1):
            nxt = Q.max(axis=-1)  # (B, S)
            backed = np.einsum("bsat,bt->bsa", self.next_count[:, t], nxt)  # (B, S, A)
            Q = (self.reward_sum[:, t] + backed) / n[:, t]
        self.learned[:, i] = Q.argmax(axis=-1)
        if i == 0:
            self.Q0 = Q
