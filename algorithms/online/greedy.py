"""Certainty-equivalent greedy and epsilon-greedy: the contrasts without a regret guarantee.

No paper and no bound: these are the baselines whose regret grows *linearly* in K on
hard-exploration MDPs such as RiverSwim, next to the sqrt(K) of UCBVI, optimistic Q-learning and
PSRL (Osband, Russo, Van Roy 2013, Section 6, and the folklore discussed in AJKS Ch. 7 intro:
"exploration must be strategic").

``greedy`` (certainty equivalence). Episode k:

    N_k(s, a, s') = transitions seen so far (pooled over h; ``stage_dependent`` keeps N_{k,h})
    P_hat_k(s' | s, a) = N_k(s, a, s') / N_k(s, a)                     where N_k(s, a) > 0
    r_hat_k(s, a)      = r(s, a) if the rewards are known, else the empirical mean reward
    V_H = 0,  Q_h(s, a) = r_hat_k(s, a) + P_hat_k V_{h+1}(s, a)        where N_k(s, a) > 0
              Q_h(s, a) = unvisited_value                            where N_k(s, a) = 0
              V_h(s) = max_a Q_h(s, a)
    play pi_h(s) = argmax_a Q_h(s, a) (ties to the smallest action index).

Choice for unvisited pairs: Q = ``unvisited_value`` = 0 by default -- no optimism at all, so an
action never tried is never preferred to one that looked non-negative. On RiverSwim the learner
then swims left forever (r(0, left) = 0.005 > 0) and pays the same regret every episode.
``unvisited_value = H`` gives optimistic initialisation instead: every pair is tried once, but a
single visit removes its optimism, so on RiverSwim the regret is still linear (about half of the
default's at S=6, H=20) -- optimism has to shrink with the counts, as UCB bonuses do.

``epsilon-greedy``: the same plan, played as the stochastic policy

    pi_h(a | s) = (1 - eps_k) 1{a = argmax Q_h(s, .)} + eps_k / A,
    eps_k = epsilon ("constant") or min(1, epsilon / sqrt(k)) ("inv-sqrt"), k = 1, 2, ...

The statistics (counts, P_hat, reward sums) are kept by the shared ``EmpiricalModel``.
The agents draw no random numbers (the environment samples the actions of the stochastic
policy), so seed i behaves the same alone or inside a batch. ``value_estimate()`` is the value of
the played policy in the empirical model, V_hat^{pi_k}_1(mu0).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from theorylab.agent import EnvSpec, read_only_copy
from theorylab.algorithms.online.empirical_model import EmpiricalModel, resolve_stage_dependence
from theorylab.algorithms.registry import register


@register("greedy", kind="online", problem="tabular", bounds=())
class CertaintyEquivalentGreedy:
    """Plan on the empirical model and play its greedy policy (no exploration).

    unvisited_value: Q_h(s, a) for pairs never tried (0: no optimism; H: optimistic init).
    stage_dependent: estimate one P_hat_h per stage. Default (None): the environment's setting;
        ``False`` on a stage-dependent MDP is refused (pooling would estimate a model that is not
        the MDP's).
    episodes: accepted for the common constructor; unused.
    """

    name = "greedy"

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs: Sequence[np.random.Generator],
        *,
        episodes: int | None = None,
        unvisited_value: float = 0.0,
        stage_dependent: bool | None = None,
    ) -> None:
        if not np.isfinite(unvisited_value):
            raise ValueError(f"unvisited_value must be finite, got {unvisited_value!r}")
        if len(rngs) != n_seeds:
            raise ValueError(f"got {len(rngs)} generators for n_seeds={n_seeds}")
        self.env = env
        self.n_seeds = B = int(n_seeds)
        self.rngs = list(rngs)  # unused: the agent draws no random numbers
        self.unvisited_value = float(unvisited_value)
        self.stage_dependent = resolve_stage_dependence(env, stage_dependent, self.name)
        self.episode = 0  # episodes seen so far (k - 1 before episode k)
        S, A, H = env.S, env.A, env.H
        # counts N (B, [H,] S, A, S), N(s, a), reward sums and P_hat, shared with UCBVI
        self.model = EmpiricalModel(B, S, A, H, per_step=self.stage_dependent)
        self.known_rewards = env.reward is not None
        if self.known_rewards:
            self.R_known = np.broadcast_to(np.asarray(env.reward, dtype=np.float64), (H, S, A))
        self._plan()

    # ------------------------------------------------------------------ planning
    def _backup(self, h: int, V_next: np.ndarray) -> np.ndarray:
        """Certainty-equivalent Q_h = r_hat_h + P_hat V_{h+1} on visited pairs, else
        ``unvisited_value``. V_next: ``(B, S)``; returns ``(B, S, A)``."""
        m = self.model
        step = h if self.stage_dependent else None
        PV = m.expected(V_next, step)  # (B, S, A), 0 on unvisited rows
        visited = m.visited[:, h] if self.stage_dependent else m.visited  # (B, S, A)
        if self.known_rewards:
            r_hat = self.R_known[h]  # (S, A)
        else:
            r_hat = m.mean_reward()  # (B, [H,] S, A)
            r_hat = r_hat[:, h] if self.stage_dependent else r_hat  # (B, S, A)
        return np.where(visited, r_hat + PV, self.unvisited_value)

    def _played_policy(self, greedy: np.ndarray) -> np.ndarray:
        return greedy  # (B, H, S) int

    def _plan(self) -> None:
        B, S, A, H = self.n_seeds, self.env.S, self.env.A, self.env.H
        # backward induction on the empirical model: V_H = 0, V_h = max_a Q_h
        V = np.zeros((B, H + 1, S))  # (B, H+1, S)
        self.Q = np.empty((B, H, S, A))  # (B, H, S, A)
        for h in range(H - 1, -1, -1):
            self.Q[:, h] = self._backup(h, V[:, h + 1])
            V[:, h] = self.Q[:, h].max(axis=-1)
        self._policy = self._played_policy(self.Q.argmax(axis=-1))
        # V_hat^{pi_k}: the played policy evaluated on the same empirical model
        pi = self._policy
        pi = np.eye(A)[pi] if pi.ndim == 3 else pi  # (B, H, S, A)
        V_pi = np.zeros((B, H + 1, S))  # (B, H+1, S)
        for h in range(H - 1, -1, -1):
            V_pi[:, h] = (pi[:, h] * self._backup(h, V_pi[:, h + 1])).sum(axis=-1)
        self._value = (V_pi[:, 0] * self.env.mu0).sum(axis=-1)  # (B,)

    # ------------------------------------------------------------------ protocol
    def policy(self) -> np.ndarray:
        """The policy every seed plays next: ``(B, H, S)`` int (greedy)."""
        return read_only_copy(self._policy)

    def value_estimate(self) -> np.ndarray:
        """V_hat^{pi_k}_1(mu0) on the empirical model, ``(B,)`` (not a confidence bound)."""
        return self._value

    def update(self, traj) -> None:
        """Add the episode to the counts and re-plan. traj: Trajectories with ``(B, H)`` arrays."""
        if traj.states.shape[0] != self.n_seeds:
            raise ValueError(
                f"trajectories have {traj.states.shape[0]} seeds, agent has {self.n_seeds}"
            )
        self.model.update(traj)
        self.episode += 1
        self._plan()


@register("epsilon-greedy", kind="online", problem="tabular", bounds=())
class EpsilonGreedy(CertaintyEquivalentGreedy):
    """Certainty-equivalent greedy mixed with the uniform policy (weight eps_k).

    epsilon: the mixing weight (or the constant c of eps_k = min(1, c / sqrt(k))).
    schedule: "constant" or "inv-sqrt".
    """

    name = "epsilon-greedy"

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs: Sequence[np.random.Generator],
        *,
        episodes: int | None = None,
        epsilon: float = 0.1,
        schedule: str = "constant",
        unvisited_value: float = 0.0,
        stage_dependent: bool | None = None,
    ) -> None:
        if schedule not in ("constant", "inv-sqrt"):
            raise ValueError(f"schedule must be 'constant' or 'inv-sqrt', got {schedule!r}")
        if not (np.isfinite(epsilon) and epsilon >= 0):
            raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
        if schedule == "constant" and epsilon > 1:
            raise ValueError(f"a constant epsilon must lie in [0, 1], got {epsilon!r}")
        self.epsilon = float(epsilon)
        self.schedule = schedule
        super().__init__(
            env,
            n_seeds,
            rngs,
            episodes=episodes,
            unvisited_value=unvisited_value,
            stage_dependent=stage_dependent,
        )

    def epsilon_at(self, k: int) -> float:
        """eps_k for episode k = 1, 2, ..."""
        if self.schedule == "constant":
            return self.epsilon
        return min(1.0, self.epsilon / np.sqrt(k))

    def _played_policy(self, greedy: np.ndarray) -> np.ndarray:
        A = self.env.A
        eps = self.epsilon_at(self.episode + 1)
        return (1.0 - eps) * np.eye(A)[greedy] + eps / A  # (B, H, S, A)

    def policy(self) -> np.ndarray:
        """The policy every seed plays next: ``(B, H, S, A)`` float (greedy mixed with uniform)."""
        return read_only_copy(self._policy)
