"""Optimistic Q-learning: Q-learning with UCB-Hoeffding and UCB-Bernstein bonuses.

Paper: Chi Jin, Zeyuan Allen-Zhu, Sebastien Bubeck, Michael I. Jordan, "Is Q-learning provably
efficient?", NeurIPS 2018, arXiv:1807.03765.

Implements Algorithm 1 (Q-learning with UCB-Hoeffding) and Algorithm 2 (Q-learning with
UCB-Bernstein). Papers index stages h = 1..H; the code uses h = 0..H-1 and V_H = 0 for the
paper's V_{H+1} = 0. Both algorithm boxes, Lemma 4.1 and Theorems 1-2 were checked against a
full-text extraction of the paper [V] (arXiv version not identified; its displayed formulas were
not decoded, so (4.4) and (C.1)-(C.3) could not be read).

Algorithm 1 (UCB-Hoeffding), for every episode k and step h, after observing x_{h+1}:

    t = N_h(x_h, a_h) <- N_h(x_h, a_h) + 1
    alpha_t = (H + 1) / (H + t)                                   (learning rate, Section 3)
    b_t = c sqrt(H^3 iota / t),   iota = log(S A T / p),  T = K H
    Q_h(x_h, a_h) <- (1 - alpha_t) Q_h(x_h, a_h) + alpha_t [r_h(x_h, a_h) + V_{h+1}(x_{h+1}) + b_t]
    V_h(x_h) <- min{H, max_a' Q_h(x_h, a')}

with Q_h(x, a) = H and N_h(x, a) = 0 initially, and the action a_h = argmax_a' Q_h(x_h, a').

Algorithm 2 (UCB-Bernstein) keeps, per (x, a, h), the running sums mu_h = sum V_{h+1}(x_{h+1})
and sigma_h = sum V_{h+1}(x_{h+1})^2 of the next-state values it has seen, and replaces b_t by

    W_t(x, a, h) = sigma_h / t - (mu_h / t)^2      (empirical variance of V_{h+1}(x_{h+1}))
    beta_t = min{ c1 ( sqrt(H/t (W_t + H) iota) + sqrt(H^7 S A) iota / t ),  c2 sqrt(H^3 iota / t) }
    b_t = ( beta_t - (1 - alpha_t) beta_{t-1} ) / (2 alpha_t),      beta_0 = 0,

so that beta_t = 2 sum_i alpha_t^i b_i exactly (the bonus-sum the analysis controls).

Bounds carried (bound registry names):

* ``jin2018-ucb-hoeffding`` -- Theorem 1: for some absolute c > 0, with probability 1 - p the
  regret is O(sqrt(H^4 S A T iota)).
* ``jin2018-ucb-bernstein`` -- Theorem 2: for some absolute c1, c2 > 0, with probability 1 - p
  the regret is O(sqrt(H^3 S A T iota) + sqrt(H^9 S^3 A^3) iota^2).

Optimism (Lemma 4.2 / 4.3 on the good event): Q^k_h >= Q*_h for every k, h, so
V^k_1(x_1) >= V*_1(x_1); ``value_estimate()`` returns V^k_1 . mu0 so ``theorylab.run`` records it.

Online updates from a whole-episode ``update(traj)``. The paper updates Q_h right after step h and
picks a_{h+1} greedily w.r.t. the Q at that moment. Within an episode the only change to Q_{h+1}
before a_{h+1} is chosen would come from step h+1's own update, which happens *after* a_{h+1} is
chosen; steps 1..h only change Q_1..Q_h. Hence the greedy policy pi_h(x) = argmax_a Q_h(x, a)
computed once at the start of the episode picks exactly the actions of the online algorithm, and
replaying the H updates in the order h = 0, 1, ..., H-1 (each reading V_{h+1} before step h+1's
update changes it) reproduces the online algorithm's Q, V and N exactly. tests check this against
a literal step-by-step implementation.

Constants and deviations:

* c (Hoeffding): the paper gives it only as "an absolute constant" (Theorem 1; Lemma 4.3 proves
  (4.4) "for some absolute constant c" and takes b_t with "the same constant c"), with no number
  [V]. The default c = 2 is this library's own derivation, not the paper's value: Azuma-Hoeffding
  on ``sum_i alpha_t^i [(P_hat - P) V*](x, a)``, whose terms lie in [-alpha_t^i H, alpha_t^i H] with
  sum_i (alpha_t^i)^2 <= 2H/t (Lemma 4.1(b)), union-bounded over the S A T indices, gives a
  deviation <= 2 sqrt(H^3 (iota + log 2) / t), and sum_i alpha_t^i b_i >= c sqrt(H^3 iota / t)
  (Lemma 4.1(a)); c = 2 covers it up to the log 2. A secondary source (Yang, Yang & Du 2021,
  restating Algorithm 1 with iota = log(S A T^2)) says c "can be set to 4" [S].
* c1, c2 (Bernstein): likewise "absolute constants" with no number in the paper (Theorem 2;
  Lemma C.2 takes c2 "large enough", Lemma C.4 c1 "sufficiently large") [V]. The defaults
  c1 = 1, c2 = 4 are this library's choice: with c2 = 4 the Hoeffding branch of the min gives
  sum_i alpha_t^i b_i = beta_t / 2 = 2 sqrt(H^3 iota / t), the same deviation budget as the
  Hoeffding default above; c1 = 1 has no derivation behind it. The second term's form
  sqrt(H^7 S A) * iota / t (iota outside the root), b_t from beta_t with beta_0 = 0, and mu,
  sigma updated before beta_t are as in Algorithm 2's box (lines 2 and 8-11) [V].
* W_t = sigma / t - (mu / t)^2, the empirical variance of the next-state values, clipped at 0
  against round-off. This follows the paper's text, which calls W_t (C.1) "an empirical version of
  variance that can be computed by the algorithm". Algorithm 2's printed line-10 expression is
  ambiguous in the extraction read: the fraction is over t, but its nesting cannot be seen, and
  read literally ((sigma - mu^2) / t with the running sums) it is not a variance.
* p is called ``delta`` (the name every theorylab algorithm uses for the failure probability).
* The reward is the observed one, r_h(x_h, a_h) (model-free; the paper assumes deterministic
  rewards, where observed = mean). Known mean rewards in ``env.reward`` are not used.
* As printed, Q is not clipped at H (only V is). With the theoretical constants a tried action's
  Q sits far above H for many visits while untried actions stay at H, so exploration is slow: on
  RiverSwim (S=6, H=20) both variants have linear regret up to K = 2000. It is the constants, not
  the rate, that are loose; ``c=0`` (optimistic initialisation alone) learns RiverSwim quickly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from theorylab.agent import EnvSpec, read_only_copy
from theorylab.algorithms.registry import register


class OptimisticQLearning:
    """Q-learning with UCB exploration (Jin et al. 2018), batched over B seeds.

    bonus: "hoeffding" (Algorithm 1) or "bernstein" (Algorithm 2).
    episodes: K (enters iota = log(S A K H / delta)).
    delta: failure probability p.
    c: Hoeffding constant; c1, c2: Bernstein constants (see the module docstring).
    """

    name = "optimistic-q"

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs: Sequence[np.random.Generator],
        *,
        episodes: int,
        bonus: str = "hoeffding",
        delta: float = 0.1,
        c: float = 2.0,
        c1: float = 1.0,
        c2: float = 4.0,
    ) -> None:
        if bonus not in ("hoeffding", "bernstein"):
            raise ValueError(f"bonus must be 'hoeffding' or 'bernstein', got {bonus!r}")
        if isinstance(episodes, bool) or int(episodes) != episodes or episodes < 1:
            raise ValueError(f"episodes must be a positive integer (K), got {episodes!r}")
        if not 0.0 < delta < 1.0:
            raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
        for label, value in (("c", c), ("c1", c1), ("c2", c2)):
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"{label} must be a finite number >= 0, got {value!r}")
        if len(rngs) != n_seeds:
            raise ValueError(f"got {len(rngs)} generators for n_seeds={n_seeds}")
        self.env = env
        self.n_seeds = B = int(n_seeds)
        self.rngs = list(rngs)  # unused: the algorithm is deterministic given the data
        self.bonus = bonus
        self.delta, self.c, self.c1, self.c2 = float(delta), float(c), float(c1), float(c2)
        S, A, H = env.S, env.A, env.H
        T = int(episodes) * H
        self.iota = float(np.log(S * A * T / self.delta))  # iota = log(SAT/p)

        self.Q = np.full((B, H, S, A), float(H))  # (B, H, S, A)   Q_h(x, a) <- H
        self.V = np.full((B, H + 1, S), float(H))  # (B, H+1, S)   V_h(x) = min(H, max_a Q_h)
        self.V[:, H] = 0.0  # V_{H+1} = 0
        self.N = np.zeros((B, H, S, A), dtype=np.int64)  # (B, H, S, A) visit counts N_h(x, a)
        if bonus == "bernstein":
            self.mu = np.zeros((B, H, S, A))  # (B, H, S, A)  sum of V_{h+1}(x_{h+1})
            self.sigma = np.zeros((B, H, S, A))  # (B, H, S, A)  sum of V_{h+1}(x_{h+1})^2
            self.beta = np.zeros((B, H, S, A))  # (B, H, S, A)  beta_{t}(x, a, h), beta_0 = 0

    # ------------------------------------------------------------------ acting
    def policy(self) -> np.ndarray:
        """Greedy policy ``(B, H, S)``: a_h = argmax_a Q_h(x, a) (ties to the smallest index)."""
        return read_only_copy(self.Q.argmax(axis=-1))

    def value_estimate(self) -> np.ndarray:
        """The optimistic estimate V_1(mu0) = sum_x mu0(x) V_1(x), ``(B,)``."""
        return (self.V[:, 0] * self.env.mu0).sum(axis=-1)  # per-row sum: same alone or batched

    # ------------------------------------------------------------------ learning
    def _bonus(
        self, idx: tuple[np.ndarray, ...], t: np.ndarray, alpha: np.ndarray, v_next: np.ndarray
    ) -> np.ndarray:
        """b_t for the B visited (x_h, a_h, h), ``(B,)``; updates the Bernstein statistics."""
        H, S, A, iota = self.env.H, self.env.S, self.env.A, self.iota
        hoeffding = np.sqrt(H**3 * iota / t)  # (B,)  sqrt(H^3 iota / t)
        if self.bonus == "hoeffding":
            return self.c * hoeffding  # b_t = c sqrt(H^3 iota / t)
        self.mu[idx] += v_next  # mu_h(x_h, a_h) <- mu_h + V_{h+1}(x_{h+1})
        self.sigma[idx] += v_next**2  # sigma_h(x_h, a_h) <- sigma_h + V_{h+1}(x_{h+1})^2
        W = np.maximum(self.sigma[idx] / t - (self.mu[idx] / t) ** 2, 0.0)  # (B,) W_t(x, a, h)
        beta_prev = self.beta[idx]  # (B,) beta_{t-1}(x, a, h)
        beta = np.minimum(
            self.c1 * (np.sqrt(H / t * (W + H) * iota) + np.sqrt(H**7 * S * A) * iota / t),
            self.c2 * hoeffding,
        )  # (B,) beta_t(x, a, h)
        self.beta[idx] = beta
        return (beta - (1.0 - alpha) * beta_prev) / (2.0 * alpha)  # (B,) b_t

    def update(self, traj) -> None:
        """Replay the episode's H online updates in order h = 0..H-1 (see the module docstring).

        traj: Trajectories with ``(B, H)`` arrays states, actions, rewards, next_states.
        """
        H = self.env.H
        if traj.states.shape != (self.n_seeds, H):
            raise ValueError(
                f"expected trajectories of shape (B, H) = ({self.n_seeds}, {H}), "
                f"got {traj.states.shape}"
            )
        seeds = np.arange(self.n_seeds)  # (B,)
        for h in range(H):
            x, a = traj.states[:, h], traj.actions[:, h]  # (B,), (B,)
            r, x_next = traj.rewards[:, h], traj.next_states[:, h]  # (B,), (B,)
            idx = (seeds, np.full_like(x, h), x, a)  # one (h, x_h, a_h) per seed: no collisions
            self.N[idx] += 1
            t = self.N[idx].astype(np.float64)  # (B,)  t = N_h(x_h, a_h)
            alpha = (H + 1.0) / (H + t)  # (B,)  alpha_t = (H+1)/(H+t)
            v_next = self.V[seeds, h + 1, x_next]  # (B,)  V_{h+1}(x_{h+1}) before its update
            b = self._bonus(idx, t, alpha, v_next)  # (B,)  b_t
            self.Q[idx] = (1.0 - alpha) * self.Q[idx] + alpha * (r + v_next + b)
            self.V[seeds, h, x] = np.minimum(H, self.Q[seeds, h, x].max(axis=-1))


@register(
    "optimistic-q-hoeffding", kind="online", problem="tabular", bounds=("jin2018-ucb-hoeffding",)
)
class OptimisticQHoeffding(OptimisticQLearning):
    """Q-learning with UCB-Hoeffding (Jin et al. 2018, Algorithm 1); O(sqrt(H^4 SAT iota))."""

    name = "optimistic-q-hoeffding"

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs: Sequence[np.random.Generator],
        *,
        episodes: int,
        delta: float = 0.1,
        c: float = 2.0,
    ) -> None:
        super().__init__(env, n_seeds, rngs, episodes=episodes, bonus="hoeffding", delta=delta, c=c)


@register(
    "optimistic-q-bernstein", kind="online", problem="tabular", bounds=("jin2018-ucb-bernstein",)
)
class OptimisticQBernstein(OptimisticQLearning):
    """Q-learning with UCB-Bernstein (Jin et al. 2018, Algorithm 2); O(sqrt(H^3 SAT iota))."""

    name = "optimistic-q-bernstein"

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs: Sequence[np.random.Generator],
        *,
        episodes: int,
        delta: float = 0.1,
        c1: float = 1.0,
        c2: float = 4.0,
    ) -> None:
        super().__init__(
            env, n_seeds, rngs, episodes=episodes, bonus="bernstein", delta=delta, c1=c1, c2=c2
        )
