"""JSRL: Jump-Start RL -- a guide rolls in, a Q-learner explores after, the switch moves back.

Seed reference: ``seed-catalogue-000.md#3`` (row 000#3; the same paper is row 001#9).
Paper: Ikechukwu Uchendu, Ted Xiao, Yao Lu, Banghua Zhu, Mengyuan Yan, Josephine Simon, Matthew
Bennice, Chuyuan Fu, Cong Ma, Jiantao Jiao, Sergey Levine, Karol Hausman, "Jump-Start
Reinforcement Learning", ICML 2023, arXiv:2204.02372.

What was read: the seed file's abstract, the catalogue row and (searched, time-boxed) the title,
author list, abstract and the opening of the introduction on a public copy of arXiv:2204.02372
[V]: "with the help of a
guide-policy, one can improve the sample complexity for non-optimism exploration methods from
exponential in horizon to polynomial"; the guide acts for the first h steps, the exploration
policy afterwards, and a curriculum moves h backward. The paper's full text (Algorithm 1, the
switching rule, the appendix theorem and its constants) was not available here; everything below
the abstract is reconstructed [A].

Algorithm (reconstructed [A]), per seed, stages h = 0..H-1, switch point ``s`` (the first stage
the learner acts on), starting at s = H - 1 with a guide and at s = 0 without one:

    play    a_h = guide[h, x_h]                                        for h < s
            a_h ~ (1 - eps) Unif(argmax_a Q_h(x_h, .)) + eps Unif(A)   for h >= s
    learn   for h = H-1 down to s (backward order, alpha = lr):
                Q_h(x_h, a_h) <- (1 - alpha) Q_h(x_h, a_h) + alpha [r_h + max_a Q_{h+1}(x_{h+1}, a)]
            with Q_H = 0 and Q = 0 initially.
    switch  s <- max(0, s - 1) if the episode's return >= ``target`` (the curriculum's success
            test) or after ``wait`` episodes at the same s without success (a timeout);
            wait starts at ``patience`` and doubles after every timeout.

Choices and deviations [A]:

* the learner is the non-optimistic epsilon-greedy tabular Q-learning the abstract names; its
  updates run backward over the episode, so one successful episode carries the reward to every
  learner stage at once (with forward updates the backup would need one more success per stage;
  the exponential-vs-polynomial contrast is the same, the baseline's closed form below is exact
  only with backward updates);
* the learner updates only its own stages h >= s (the theory's exploration algorithm acts on the
  suffix after the roll-in); guide steps are not learned from;
* greedy ties are broken uniformly at random (inside the stochastic policy, so the environment
  draws the action): with ties to the smallest index, a lock whose combination is action 0
  everywhere would be "solved" by the tie-break;
* the timeout is this library's addition: without it a guide that never reaches the goal would
  freeze the switch forever. Its wait doubles after every timeout (the doubling trick) so that a
  guide right only on the first m steps is not walked past: after H - 1 - m timeouts the wait is
  patience 2^(H-1-m), enough to find the A^-(H-m) event the learner then faces, and the cost is
  about patience 2^(H-1-m) + A^(H-m) -- half the exponent for m = H / 2, the interpolation the
  catalogue asks for. A random guide pays patience 2^(H-1) in timeouts: worse than the baseline
  for A = 2, and exponential in H either way;
* ``guide=None`` is the baseline: s = 0 from the first episode, i.e. epsilon-greedy Q-learning.

Closed form for the baseline on ``combination-lock`` (deterministic, A actions, reward only at the
end): until the first success every Q is 0, so the played policy is uniform and opens the lock with
probability exactly A^-H; one success makes the greedy policy optimal (backward updates, lr = 1).
Episodes-to-solve is therefore Geometric(A^-H) with mean A^H: exponential, log-slope log A in H.
With a guide that is right everywhere, each stage is learned after about A / (1 - eps)^(H - s)
episodes, so JSRL needs about A H episodes: polynomial in H.

``value_estimate()`` is the learner's own V_0(mu0) = sum_x mu0(x) max_a Q_0(x, a).
``learner_policy()`` is the learner's greedy policy ``(B, H, S)`` (the JSRL output once s = 0).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from theorylab.agent import EnvSpec, read_only_copy
from theorylab.algorithms.registry import register


@register("jsrl", kind="online", problem="tabular", bounds=(), papers=("000#3", "001#9"))
class JumpStartQLearning:
    """JSRL with an epsilon-greedy Q-learning explorer (see the module docstring).

    guide: the guide's actions, ``(H, S)`` or ``(S,)`` ints in [0, A), or None (no guide: the
        epsilon-greedy Q-learning baseline).
    epsilon: exploration weight of the learner's policy, in [0, 1].
    lr: the Q-learning step size alpha, in (0, 1].
    target: the return that counts as a success for the curriculum (the guide's return).
    patience: the first timeout: episodes at one switch point without success before the switch
        moves anyway; doubled after every timeout (0: never; the switch moves only on success).
    episodes: accepted for the common constructor; unused.
    """

    name = "jsrl"

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs: Sequence[np.random.Generator],
        *,
        episodes: int | None = None,
        guide=None,
        epsilon: float = 0.1,
        lr: float = 1.0,
        target: float = 1.0,
        patience: int = 10,
    ) -> None:
        if not (np.isfinite(epsilon) and 0.0 <= epsilon <= 1.0):
            raise ValueError(f"epsilon must lie in [0, 1], got {epsilon!r}")
        if not (np.isfinite(lr) and 0.0 < lr <= 1.0):
            raise ValueError(f"lr must lie in (0, 1], got {lr!r}")
        if not np.isfinite(target):
            raise ValueError(f"target must be a finite return, got {target!r}")
        if isinstance(patience, bool) or int(patience) != patience or patience < 0:
            raise ValueError(f"patience must be an integer >= 0, got {patience!r}")
        if len(rngs) != n_seeds:
            raise ValueError(f"got {len(rngs)} generators for n_seeds={n_seeds}")
        S, A, H = env.S, env.A, env.H
        self.env = env
        self.n_seeds = B = int(n_seeds)
        self.rngs = list(rngs)  # unused: the environment draws the actions
        self.epsilon, self.lr, self.target = float(epsilon), float(lr), float(target)
        self.patience = int(patience)
        self.guide = None if guide is None else _check_guide(guide, H, S, A)  # (H, S) int
        self.Q = np.zeros((B, H + 1, S, A))  # (B, H+1, S, A); Q_H = 0
        start = 0 if self.guide is None else H - 1
        self.switch = np.full(B, start, dtype=np.int64)  # (B,) first stage the learner acts on
        self.stalled = np.zeros(B, dtype=np.int64)  # (B,) episodes at this switch without success
        self.wait = np.full(B, self.patience, dtype=np.int64)  # (B,) current patience, doubling

    # ------------------------------------------------------------------ acting
    def learner_policy(self) -> np.ndarray:
        """The learner's greedy policy ``(B, H, S)`` (ties to the smallest index)."""
        return read_only_copy(self.Q[:, :-1].argmax(axis=-1))

    def policy(self) -> np.ndarray:
        """The policy every seed plays next, ``(B, H, S, A)``: guide before the switch, the
        learner's epsilon-greedy (uniform over greedy ties) from the switch on."""
        H, A = self.env.H, self.env.A
        Q = self.Q[:, :-1]  # (B, H, S, A)
        top = Q == Q.max(axis=-1, keepdims=True)  # (B, H, S, A) greedy ties
        learner = (1.0 - self.epsilon) * top / top.sum(axis=-1, keepdims=True) + self.epsilon / A
        if self.guide is None:
            return read_only_copy(learner)
        guided = np.eye(A)[self.guide]  # (H, S, A)
        before = np.arange(H)[None, :] < self.switch[:, None]  # (B, H)
        return read_only_copy(np.where(before[:, :, None, None], guided[None], learner))

    def value_estimate(self) -> np.ndarray:
        """The learner's V_0(mu0) = sum_x mu0(x) max_a Q_0(x, a), ``(B,)``."""
        return self.Q[:, 0].max(axis=-1) @ self.env.mu0

    # ------------------------------------------------------------------ learning
    def update(self, traj) -> None:
        """Backward Q-learning on the learner's stages, then the curriculum step.
        traj: Trajectories with ``(B, H)`` arrays."""
        B, H = self.n_seeds, self.env.H
        if traj.states.shape[0] != B:
            raise ValueError(f"trajectories have {traj.states.shape[0]} seeds, agent has {B}")
        rows = np.arange(B)
        for h in range(H - 1, -1, -1):
            own = h >= self.switch  # (B,) the learner acted at stage h
            x, a = traj.states[:, h], traj.actions[:, h]  # (B,)
            nxt = self.Q[rows, h + 1, traj.next_states[:, h]].max(axis=-1)  # (B,)
            old = self.Q[rows, h, x, a]  # (B,)
            new = (1.0 - self.lr) * old + self.lr * (traj.rewards[:, h] + nxt)
            self.Q[rows, h, x, a] = np.where(own, new, old)
        self._move_switch(traj)

    def _move_switch(self, traj) -> None:
        """The curriculum: s <- s - 1 on success (return >= target) or after ``wait`` episodes
        at s without one (then the wait doubles)."""
        success = traj.rewards.sum(axis=1) >= self.target  # (B,)
        self.stalled = np.where(success, 0, self.stalled + 1)
        timeout = (self.patience > 0) & (self.stalled >= self.wait)  # (B,)
        move = (success | timeout) & (self.switch > 0)
        self.switch = np.where(move, self.switch - 1, self.switch)
        self.stalled = np.where(move, 0, self.stalled)
        self.wait = np.where(timeout & move, 2 * self.wait, self.wait)  # the doubling trick


def _check_guide(guide, H: int, S: int, A: int) -> np.ndarray:
    """The guide as ``(H, S)`` int actions, or ValueError naming what was wrong."""
    g = np.asarray(guide)
    if g.shape == (S,):
        g = np.broadcast_to(g, (H, S))
    if g.shape != (H, S):
        raise ValueError(f"guide must have shape (H, S) = ({H}, {S}) or (S,), got {g.shape}")
    if not np.issubdtype(g.dtype, np.integer) or g.min() < 0 or g.max() >= A:
        raise ValueError(f"guide must hold integer actions in [0, {A}), got {g.dtype} values")
    return np.ascontiguousarray(g, dtype=np.int64)
