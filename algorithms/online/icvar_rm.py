"""ICVaR-RM and MaxWP: iterated-CVaR and worst-path regret minimisation (Du, Wang, Huang 2023).

Paper: Yihan Du, Siwei Wang, Longbo Huang, "Provably Efficient Risk-Sensitive Reinforcement
Learning: Iterated CVaR and Worst Path", ICLR 2023 (arXiv:2206.02678); theory.md section 4.3 [V].

ICVaR-RM (Algorithm 1). Inputs delta, alpha; delta' = delta / 5, L = log(K H S A / delta').
In episode k, for h = H, ..., 1 (0-based here: H-1, ..., 0) and every (s, a):

    Qbar_h(s, a) = min{ r(s, a) + CVaR^alpha_{s' ~ phat_k(.|s,a)}( Vbar_{h+1}(s') )
                        + (H / alpha) sqrt( L / n_k(s, a) ),  H },
    Vbar_h(s) = max_a Qbar_h(s, a),   pi^k_h(s) = argmax_a Qbar_h(s, a),   Vbar_{H+1} = 0,

then play pi^k. n_k(s, a) counts visits before episode k *pooled over h* and phat_k is the
empirical transition (stationary p). The empirical CVaR sorts the next-state values once per stage
(O(S log S)), :func:`theorylab.algorithms.risk.cvar_next`.

Bound carried: Theorem 1 (bounds registry ``du2023-icvar-thm1``), with probability >= 1 - delta

    R(K) = O( min{ 1/sqrt(min_{pi,h,s: w>0} w_{pi,h}(s)), 1/sqrt(alpha^{H-1}) } * H S sqrt(K H A)
              / alpha * log(K H S A / delta) ),

and the lower bounds of Theorem 2 (``du2023-icvar-lower-visitation``,
``du2023-icvar-lower-exponential``) on the ``icvar-lower-bound`` family. MaxWP carries Theorem 4
(``du2023-maxwp``).
Regret is measured exactly every episode under the iterated-CVaR objective
(:class:`theorylab.algorithms.risk.IteratedCVaR`): ``V*_1(mu0) - V^{pi_k}_1(mu0)``.
The proof's optimism ``Vbar^k_1 >= V*_1`` is exposed as ``value_estimate()`` and tested.

MaxWP (Algorithm 2, worst path, alpha -> 0). No bonus:

    Qhat_h(s, a) = r(s, a) + min_{s' observed after (s, a)} Vhat_{h+1}(s'),   pi = argmax.

Theorem 4: regret
O( sum_{(s,a)} H log(SA/delta) / (min_pi v_pi(s,a) * min_{s' in supp} p(s'|s,a)) ), constant in
K. Because the observed successors are a subset of the support, Vhat >= V* holds surely (not only
with high probability); a test checks it.

Deviations (and why):
* ``bonus_scale`` (default 1, the paper) multiplies the bonus: the paper's (H/alpha) sqrt(L/n) keeps
  Qbar at its cap H for thousands of visits, so short demonstrations use a smaller scale. Any
  scale < 1 voids Theorem 1's guarantee; the docs say so where it is used.
* Unvisited pairs: n = 0 makes the bonus infinite, so Qbar = H (the paper's cap). In MaxWP the min
  over an empty set of observed successors is taken as ``H - h`` (0-based h), the largest value any
  policy can collect from stage h, so that unvisited actions are over-estimated and get tried, which
  is the exploration mechanism the paper describes.
* Rewards: known mean rewards r(s, a) are used when the learner is given them (Du et al.'s
  deterministic r); otherwise the empirical mean of the observed rewards (exact after one visit for
  deterministic rewards).
* The initial state may be drawn from mu0; ``value_estimate`` is ``mu0 . Vbar_1``.
* Stationary transitions only (the counts are pooled over h, as in the paper): a stage-dependent
  environment raises ValueError.

Ties go to the smallest action index. State arrays carry a leading seed axis B; planning and
updates are vectorised over seeds (no randomness, so seed i is identical alone or in a batch).
"""

from __future__ import annotations

import math

import numpy as np

from theorylab.agent import EnvSpec
from theorylab.algorithms.online.lazy_plan import LazyPlan
from theorylab.algorithms.registry import register
from theorylab.algorithms.risk.iterated_cvar import _check_alpha, cvar_next
from theorylab.algorithms.risk.objectives import iterated_cvar_of, worst_path_of
from theorylab.algorithms.risk.static_cvar_planning import first_argmax


class _PooledCounts:
    """Visit counts pooled over stages, batched over seeds: n (B, S, A), n_next (B, S, A, S)."""

    def __init__(self, env: EnvSpec, n_seeds: int, who: str) -> None:
        if env.stage_dependent:
            raise ValueError(
                f"{who} (Du et al. 2023) assumes stationary transitions and pools counts over h; "
                f"this environment has stage-dependent transitions"
            )
        self.env = env
        B, S, A = n_seeds, env.S, env.A
        self.n = np.zeros((B, S, A), dtype=np.int64)
        self.n_next = np.zeros((B, S, A, S), dtype=np.int64)
        self.reward_sum = np.zeros((B, S, A))

    def update(self, traj) -> None:
        B, T = traj.states.shape
        b = np.repeat(np.arange(B), T)
        s, a, s2 = traj.states.ravel(), traj.actions.ravel(), traj.next_states.ravel()
        np.add.at(self.n, (b, s, a), 1)
        np.add.at(self.n_next, (b, s, a, s2), 1)
        np.add.at(self.reward_sum, (b, s, a), traj.rewards.ravel())

    def p_hat(self) -> np.ndarray:
        """Empirical transitions ``(B, S, A, S)``; all-zero rows for unvisited pairs."""
        return self.n_next / np.maximum(self.n, 1)[..., None]

    def rewards(self, h: int) -> np.ndarray:
        """Mean rewards of stage h, ``(B, S, A)``: known ones, else the empirical means."""
        if self.env.reward is not None:
            return np.broadcast_to(self.env.reward_at(h), self.n.shape)
        return self.reward_sum / np.maximum(self.n, 1)


class _PlanFromCounts(LazyPlan):
    """:class:`LazyPlan` over the pooled counts: subclasses set ``self.counts``."""

    def update(self, traj) -> None:
        self.counts.update(traj)
        self.forget_plan()


@register(
    "icvar-rm",
    kind="online",
    problem="tabular",
    bounds=(
        "du2023-icvar-thm1",
        "du2023-icvar-lower-visitation",
        "du2023-icvar-lower-exponential",
    ),
    objective=iterated_cvar_of,
)
class ICVaRRM(_PlanFromCounts):
    """ICVaR-RM (Du, Wang, Huang 2023, Algorithm 1): optimistic iterated-CVaR value iteration.

    ``value_estimate()`` is ``Vbar^k_1(mu0)``: an upper bound on V*_1 w.p. >= 1 - delta."""

    name = "icvar-rm"

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs,
        alpha: float = 0.2,
        delta: float = 0.1,
        episodes: int = 1000,
        bonus_scale: float = 1.0,
    ) -> None:
        alpha = _check_alpha(alpha)
        if alpha == 0.0:
            raise ValueError("alpha = 0 is the worst-path problem: use 'maxwp' (Algorithm 2)")
        if not (0.0 < delta < 1.0):
            raise ValueError(f"delta must lie in (0, 1), got {delta}")
        self.env, self.n_seeds, self.rngs = env, n_seeds, rngs
        self.alpha, self.delta, self.K, self.bonus_scale = alpha, delta, int(episodes), bonus_scale
        self.L = math.log(self.K * env.H * env.S * env.A / (delta / 5))  # delta' = delta / 5
        self.counts = _PooledCounts(env, n_seeds, "ICVaR-RM")
        self._V: np.ndarray | None = None  # (B, H+1, S) optimistic values of the next episode
        self._pi: np.ndarray | None = None  # (B, H, S)

    def bonus(self) -> np.ndarray:
        """``bonus_scale * (H / alpha) sqrt(L / n(s, a))``, ``(B, S, A)``; +inf where n = 0."""
        n = self.counts.n
        width = np.sqrt(self.L / np.maximum(n, 1))
        return np.where(n > 0, self.bonus_scale * (self.env.H / self.alpha) * width, np.inf)

    def _plan(self) -> None:
        B, S, A, H = self.n_seeds, self.env.S, self.env.A, self.env.H
        p_hat = self.counts.p_hat().reshape(B, S * A, S)  # (B, S*A, S')
        bonus = self.bonus()  # (B, S, A)
        V = np.zeros((B, H + 1, S))
        pi = np.empty((B, H, S), dtype=np.int64)
        for h in range(H - 1, -1, -1):
            tail = cvar_next(p_hat, V[:, h + 1], self.alpha).reshape(B, S, A)
            Q = np.minimum(self.counts.rewards(h) + tail + bonus, H)  # (B, S, A)
            pi[:, h] = first_argmax(Q, axis=2)
            V[:, h] = np.take_along_axis(Q, pi[:, h, :, None], axis=2)[..., 0]
        self._V, self._pi = V, pi


@register(
    "maxwp", kind="online", problem="tabular", bounds=("du2023-maxwp",), objective=worst_path_of
)
class MaxWP(_PlanFromCounts):
    """MaxWP (Du, Wang, Huang 2023, Algorithm 2): greedy worst-path planning on seen successors.

    ``value_estimate()`` is ``Vhat^k_1(mu0)``: never below the worst-path V*_1 (module docstring).
    """

    name = "maxwp"

    def __init__(self, env: EnvSpec, n_seeds: int, rngs) -> None:
        self.env, self.n_seeds, self.rngs = env, n_seeds, rngs
        self.counts = _PooledCounts(env, n_seeds, "MaxWP")
        self._V: np.ndarray | None = None
        self._pi: np.ndarray | None = None

    def _plan(self) -> None:
        B, S, A, H = self.n_seeds, self.env.S, self.env.A, self.env.H
        seen = (self.counts.n_next > 0).reshape(B, S * A, S)  # observed successors
        visited = self.counts.n > 0  # (B, S, A)
        V = np.zeros((B, H + 1, S))
        pi = np.empty((B, H, S), dtype=np.int64)
        for h in range(H - 1, -1, -1):
            worst = cvar_next(seen.astype(np.float64), V[:, h + 1], 0.0).reshape(B, S, A)
            Q = np.where(visited, self.counts.rewards(h) + worst, float(H - h))  # (B, S, A)
            pi[:, h] = first_argmax(Q, axis=2)
            V[:, h] = np.take_along_axis(Q, pi[:, h, :, None], axis=2)[..., 0]
        self._V, self._pi = V, pi
