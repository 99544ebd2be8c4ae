r"""UCBVI: optimistic value iteration on the empirical model, in three anchored variants.

Papers (see /work/shared/reference/theory.md section 1 and docs/algorithms/ucbvi.md):

* Azar, Osband, Munos. "Minimax Regret Bounds for Reinforcement Learning", ICML 2017,
  arXiv:1703.05449. Algorithm 1 (UCBVI), Algorithm 2 (UCB-Q-values), Algorithm 3 (bonus_1,
  Chernoff-Hoeffding) and Algorithm 4 (bonus_2, Bernstein-Freedman).
* Agarwal, Jiang, Kakade, Sun (AJKS). "Reinforcement Learning: Theory and Algorithms", draft of
  Jan 31 2022, Chapter 7 (UCBVI with a per-step model), pp. 73-83.

Registered names, the bound each carries (names of ``theorylab.bounds``) and the update:

``ucbvi-hoeffding`` -- UCBVI-CH, Azar Alg. 1-3; bound ``azar2017-thm1`` (Theorem 1:
    Regret(K) <= 20 H^{3/2} L sqrt(SAK) + 250 H^2 S^2 A L^2 w.p. 1 - delta)::

        N(x,a,y), N(x,a) pooled over all steps h;  P_hat(y|x,a) = N(x,a,y) / N(x,a)
        L = ln(5 S A T / delta),  T = K H
        b(x,a) = 7 H L sqrt(1 / N(x,a))
        V_{k,H+1} = 0;  for h = H..1:
            Q_{k,h}(x,a) = min{ Q_{k-1,h}(x,a), H, r(x,a) + P_hat V_{k,h+1}(x,a) + b(x,a) }
                           if N(x,a) > 0, else H;           Q_{0,h} = H
            V_{k,h}(x)   = max_a Q_{k,h}(x,a)

``ucbvi-bernstein`` -- UCBVI-BF, Azar Alg. 1, 2, 4; bound ``azar2017-thm2`` (Theorem 2:
    Regret(K) <= 30 H L sqrt(SAK) + 2500 H^2 S^2 A L^2 + 4 H^{3/2} sqrt(KL)). Same recursion with::

        b_{k,h}(x,a) = sqrt(8 L Var_{y~P_hat(.|x,a)}[V_{k,h+1}(y)] / N)  +  14 H L / (3 N)
                     + sqrt(8 sum_y P_hat(y|x,a) min{100^2 H^3 S^2 A L^2 / N'_{k,h+1}(y), H^2} / N)

    N = N(x,a); N'_{k,h+1}(y) = visits of y at step h+1 in earlier episodes; min{.} = H^2 when
    N'_{k,h+1}(y) = 0. The printed constants are kept. theory.md 1.5 errata: Eq. (11) drops a
    factor 2 under a root, Appendix B.1 needs a typical-state threshold 4H^2 L (printed 2H^2 L),
    and the Lemma 13->14 calculation does not reproduce 2500 -- so the constants are the paper's
    claim, not a tight invariant; none of these touch the algorithm's bonus as printed.

``ucbvi-ajks`` -- AJKS Ch. 7; bounds ``ajks-thm7.1`` (expected regret <= 10 H^2 S
    sqrt(AK ln(SAH^2K^2)) + 2 for the algorithm run at delta = 1/(KH); the log is inside the
    root in the typeset PDF, p. 75), ``ajks-thm7.1-delta`` (the proof's form at any delta,
    10 H^2 S sqrt(AK ln(SAHK/delta)) + 2 delta K H, p. 78) and ``ajks-thm7.6``
    (8e H^2 sqrt(SAK) sqrt(ln(SAH^2K^2)) + 2e H^3 S^2 A ln K ln(SAH^2K^2))::

        N_h(s,a,s'), N_h(s,a) per step h;  P_hat_h(s'|s,a) = N_h(s,a,s') / N_h(s,a)
        L = ln(S A H K / delta);  b_h(s,a) = 2 H sqrt(L / N_h(s,a))
        V_H = 0;  Q_h(s,a) = min{ r_h(s,a) + b_h(s,a) + P_hat_h V_{h+1}(s,a), H } (no min with
        the previous episode);  Q_h(s,a) = H where N_h(s,a) = 0;  V_h = max_a Q_h

Constants are never mixed between variants (theory.md section 10, pitfalls).

Conventions and deviations (each deliberate):

* Steps are 0-based in code, h = 0..H-1 (papers: 1..H); ``V[:, H] = 0`` is the paper's V_{H+1}.
  Rewards lie in [0, 1], so values lie in [0, H]; Q is capped at H at *every* step, as printed
  (not at the tighter H - h).
* ``N'_{k,h+1}(y)`` (UCBVI-BF) counts ``x_{k,h+1} = y`` for h+1 = 1..H+1 (1-based), where
  ``x_{k,H+1}`` is the state reached after the last action; it comes from ``EmpiricalModel.N_hs``.
* Ties in argmax_a Q: the paper allows any maximiser. ``tie_break="first"`` (default) takes the
  smallest action index; ``tie_break="least-visited"`` takes, among the exact maximisers, the
  action with the fewest visits N(x, a) (N_h(s, a) for AJKS), then the smallest index. Early on
  many Q equal H exactly, so this decides which action is explored first: with "first" the
  agent repeats action 0 until its Q leaves the cap H (on RiverSwim: swims left for thousands
  of episodes); "least-visited" visits the tied actions in turn. Both are deterministic, so a
  seed behaves identically alone or in a batch.
* Known rewards: Azar et al. assume known deterministic rewards, given as ``env.reward``
  ((S, A) or (H, S, A)). When ``env.reward is None`` (deviation) the agent plugs in the empirical
  mean reward r_hat(x,a) (pooled over steps for the Azar variants, per step for AJKS) and adds no
  separate reward bonus; Q of unvisited pairs is still H.
* The Azar variants assume stationary transitions (P independent of h); constructing them on an
  env with ``stage_dependent=True`` raises (use ``ucbvi-ajks``, which estimates P_h per step).
* ``bonus_scale`` multiplies the whole bonus. 1.0 is the paper; any other value is NOT the paper's
  algorithm and carries no bound. 0.0 plans greedily on the empirical model (for Azar still with
  the min against Q_{k-1}): the exactness tests use it.
* Numerics (UCBVI-BF): Var = E[W^2] - E[W]^2 with W = V - max_y V (variance is shift-invariant;
  the shift makes rows whose successors all have V = H, or V = 0 at the last step, come out
  exactly 0), clipped at 0 against round-off.

Batched over seeds: every array has a leading seed axis B; the backward induction loops over h
only; products with P_hat go through ``EmpiricalModel.expected`` (``np.matmul`` per seed, or a
block-diagonal CSR over the observed entries for S >= 64), so seed i is bit-identical alone or
batched.

Backends and scale (parameters of every variant):

* ``backend`` ("numpy", the default, the reference numbers; "numba", "torch", "auto"; see
  theorylab.backends): the backend of the empirical model's products and count updates, and of
  the plan's fused stage (``optimistic_stage``: target, min, cap and max over actions in one
  pass, the same operations in the same order, so the same bits) and greedy argmax
  (``argmax_last``). numba reproduces numpy bit for bit on the CSR path (S >= 64) and to
  round-off on the dense BLAS path;
  an argmax tie broken differently by round-off can then change a trajectory, which is why the
  default stays numpy.
* ``storage`` ("auto", the default: dense N(x,a,y) arrays when they fit under
  ``empirical_model.MAX_MODEL_BYTES``, else the observed transitions only): with sparse storage
  plan() visits only the visited pairs (Q stays H on the others), so a plan costs
  O(H (nnz_observed + visited pairs)) (plus O(B H S) for UCBVI-BF's next-state terms) and the
  agent holds O(B H S A + nnz_observed) memory (Q itself is dense), so UCBVI runs on MDPs with
  S = 10^5 and more. The numbers are the same either way, bit for bit.
UCBVI is deterministic given the data: the per-seed generators ``rngs`` are kept but never drawn.
"""

from __future__ import annotations

import math

import numpy as np

from theorylab.agent import EnvSpec, read_only_copy
from theorylab.algorithms.online.empirical_model import EmpiricalModel
from theorylab.algorithms.registry import register
from theorylab.backends.numpy_backend import max_over_last as max_over_actions


def azar_log_term(S: int, A: int, H: int, episodes: int, delta: float) -> float:
    """L = ln(5 S A T / delta) with T = K H (Azar et al. Alg. 3-4, as printed in the bonus)."""
    return math.log(5 * S * A * episodes * H / delta)


def ajks_log_term(S: int, A: int, H: int, episodes: int, delta: float) -> float:
    """L = ln(S A H K / delta) (AJKS Ch. 7)."""
    return math.log(S * A * H * episodes / delta)


class _OptimisticTabularAgent:
    """Shared plumbing: checks, known/estimated rewards, greedy policy and value estimate."""

    name = "ucbvi"
    per_step_model = False  # AJKS: one model per step h
    stationary_only = False  # Azar et al.: the analysis assumes P independent of h

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs,
        *,
        episodes: int,
        delta: float = 0.1,
        bonus_scale: float = 1.0,
        tie_break: str = "first",
        backend: str = "numpy",
        storage: str = "auto",
    ) -> None:
        if isinstance(episodes, bool) or int(episodes) != episodes or episodes < 1:
            raise ValueError(
                f"{self.name}: episodes (K, it enters the confidence width L) must be a positive "
                f"integer, got {episodes!r}"
            )
        if not 0.0 < delta < 1.0:
            raise ValueError(f"{self.name}: delta must lie in (0, 1), got {delta!r}")
        if not (bonus_scale >= 0.0 and math.isfinite(bonus_scale)):
            raise ValueError(f"{self.name}: bonus_scale must be finite and >= 0, got {bonus_scale}")
        if tie_break not in ("first", "least-visited"):
            raise ValueError(
                f"{self.name}: tie_break must be 'first' or 'least-visited', got {tie_break!r}"
            )
        self.tie_break = tie_break
        if self.stationary_only and env.stage_dependent:
            raise ValueError(
                f"{self.name} (Azar et al. 2017) assumes stationary transitions, but this MDP's "
                "transitions depend on the step h; use 'ucbvi-ajks', which estimates P_h per step"
            )
        if len(rngs) != n_seeds:
            raise ValueError(f"{self.name}: got {len(rngs)} generators for n_seeds={n_seeds}")
        self.env = env
        self.n_seeds = B = int(n_seeds)
        self.rngs = rngs
        self.S, self.A, self.H = S, A, H = env.S, env.A, env.H
        self.episodes, self.delta = int(episodes), float(delta)
        self.bonus_scale = float(bonus_scale)
        self.mu0 = np.asarray(env.mu0, dtype=np.float64)  # mu0: (S,)
        self.known_rewards = env.reward is not None
        if self.known_rewards:  # r: (H, S, A), shared by all seeds
            self.r = np.broadcast_to(np.asarray(env.reward, dtype=np.float64), (H, S, A))
        self.model = EmpiricalModel(
            B, S, A, H, per_step=self.per_step_model, storage=storage, backend=backend
        )
        self.k = 0  # episodes seen so far
        self._Q = np.full((B, H, S, A), float(H))  # Q_{0,h} = H: (B, H, S, A)
        self._V = np.zeros((B, H + 1, S))  # V: (B, H+1, S), V[:, H] = 0
        if self.model.storage == "sparse":  # what plan() gives with no data, set once: only
            self._V[:, :H] = float(H)  # visited pairs change afterwards (_plan_observed)
            self._policy = np.zeros((B, H, S), np.int64)
            self._r_hat = None
        self.plan()

    # ------------------------------------------------------------------ protocol
    def reward(self, h: int) -> np.ndarray:
        """r_h: known ``(S, A)`` (broadcast over seeds) or estimated ``(B, S, A)``."""
        if self.known_rewards:
            return self.r[h]
        r_hat = self._r_hat  # (B, [H,] S, A), refreshed at the start of plan()
        if r_hat is None:  # sparse storage plans on the visited pairs only: compute on demand
            r_hat = self.model.mean_reward()
        return r_hat[:, h] if self.per_step_model else r_hat

    def policy(self) -> np.ndarray:
        """``(B, H, S)`` int: greedy in the optimistic Q (ties: see ``tie_break``)."""
        return read_only_copy(self._policy)

    def value_estimate(self) -> np.ndarray:
        """``(B,)``: V_{k,1}(mu0) = sum_s mu0(s) V_{k,1}(s), the optimistic value played next."""
        return (self._V[:, 0] * self.mu0).sum(axis=-1)

    @property
    def Q(self) -> np.ndarray:
        """Optimistic Q of the next episode, ``(B, H, S, A)``."""
        return self._Q

    @property
    def V(self) -> np.ndarray:
        """Optimistic V of the next episode, ``(B, H+1, S)`` with ``V[:, H] = 0``."""
        return self._V

    def update(self, traj) -> None:
        """Learn from one episode of every seed, then plan the next episode's Q."""
        self.model.update(traj)
        self.k += 1
        self.plan()

    def plan(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def greedy(self, Q: np.ndarray) -> np.ndarray:
        """Greedy policy ``(B, H, S)`` in ``Q (B, H, S, A)`` with this agent's tie-breaking rule."""
        if self.tie_break == "first":
            return self.model.backend.argmax_last(Q)  # first maximiser
        N = self.model.N_sa  # (B, S, A) pooled, or (B, H, S, A) per step
        N = N[:, None] if N.ndim == 3 else N  # broadcast over h: (B, 1|H, S, A)
        return self._greedy_actions(Q, N)

    def _greedy_actions(self, Q: np.ndarray, N: np.ndarray) -> np.ndarray:
        """argmax over the last axis of Q (..., A) with the tie-breaking rule; N: visits."""
        if self.tie_break == "first":
            return Q.argmax(axis=-1)  # first maximiser
        is_max = Q == Q.max(axis=-1, keepdims=True)  # exact maximisers
        return np.where(is_max, N, np.inf).argmin(axis=-1)  # fewest visits, then smallest index

    # ------------------------------------------------------------------ sparse storage
    # With the empirical model's sparse storage (large S), plan() touches only the visited pairs:
    # Q stays H on unvisited pairs (it starts at H and the full recursion writes H there), so
    # V_h(s) = H and the greedy action is 0 on every state without a visited pair at step h
    # (all Q equal H, all N equal 0). The visited pairs get exactly the expressions of the full
    # recursion, elementwise, so the numbers are the same bit for bit (tests/test_backends.py).
    # Cost per plan: O(H (nnz_observed + visited pairs)), plus O(B H S) for UCBVI-BF's g term.
    def _stage_index(self, rows: np.ndarray, h: int) -> np.ndarray:
        """Flat indices into ``(B, H, S, A)`` of the flat ``(B, S, A)`` rows at step h."""
        SA = self.S * self.A
        return rows + (rows // SA) * ((self.H - 1) * SA) + h * SA

    def _reward_rows(self, h: int, rows: np.ndarray) -> np.ndarray:
        """r_h at the flat ``(B, S, A)`` rows (known, or R_sum / max(N, 1) as mean_reward)."""
        if self.known_rewards:
            return self.r[h].reshape(-1)[rows % (self.S * self.A)]
        m = self.model
        idx = self._stage_index(rows, h) if self.per_step_model else rows
        return m.R_sum.reshape(-1)[idx] / np.maximum(m.N_sa.reshape(-1)[idx], 1.0)

    def _finish_stage_observed(self, h: int, rows: np.ndarray) -> None:
        """V_h = max_a Q_h and the greedy action on the states with a visited pair at step h."""
        S, A, H = self.S, self.A, self.H
        states = np.unique(rows // A)  # flat (seed * S + s)
        b, s = np.divmod(states, S)
        q_rows = (b * H + h) * S + s  # rows of Q viewed as (B*H*S, A)
        Q_s = self._Q.reshape(-1, A)[q_rows]  # (n, A)
        self._V.reshape(-1)[(b * (H + 1) + h) * S + s] = max_over_actions(Q_s)
        N = self.model.N_sa.reshape(-1, A)
        N_s = N[q_rows] if self.per_step_model else N[states]
        self._policy.reshape(-1)[q_rows] = self._greedy_actions(Q_s, N_s)


class UCBVI(_OptimisticTabularAgent):
    """Azar et al. 2017, Algorithms 1-2: backward induction on the pooled stationary model with
    Q_{k,h} = min{Q_{k-1,h}, H, r + P_hat V_{k,h+1} + b}. Subclasses give the bonus."""

    stationary_only = True

    @property
    def L(self) -> float:
        """L = ln(5 S A T / delta), T = K H."""
        return azar_log_term(self.S, self.A, self.H, self.episodes, self.delta)

    def backup(self, h: int, V_next: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(P_hat V_{k,h+1}, b_{k,h})``, both ``(B, S, A)``."""
        raise NotImplementedError

    def backup_observed(self, h: int, V_next: np.ndarray):
        """``(rows, P_hat V_{k,h+1}, b_{k,h})`` on the visited pairs (sparse storage)."""
        raise NotImplementedError

    def plan(self) -> None:
        """Algorithm 2 (UCB-Q-values) for all seeds: the loop runs over h only."""
        if self.model.storage == "sparse":
            self._plan_observed()
            return
        H = float(self.H)
        self._r_hat = None if self.known_rewards else self.model.mean_reward()
        visited = self.model.visited  # (B, S, A)
        Q, V = self._Q, self._V  # (B, H, S, A), (B, H+1, S)
        bk = self.model.backend
        for h in range(self.H - 1, -1, -1):
            PV, b = self.backup(h, V[:, h + 1])  # (B, S, A) each
            # target = r + P_hat V_{k,h+1} + b; Q_{k,h} = min{Q_{k-1,h}, H, target} where
            # visited, H elsewhere; V_{k,h} = max_a Q_{k,h} (one fused kernel, in place on Q[:, h])
            V_h = bk.optimistic_stage(
                Q[:, h], self.reward(h), PV, self.bonus_scale * b, visited, H, keep_min=True
            )
            V[:, h] = bk.to_numpy(V_h)
        self._policy = self.greedy(Q)  # (B, H, S)

    def _plan_observed(self) -> None:
        """plan() on the visited pairs only (sparse storage; see _stage_index's comment)."""
        H = float(self.H)
        Qf = self._Q.reshape(-1)
        for h in range(self.H - 1, -1, -1):
            rows, PV, b = self.backup_observed(h, self._V[:, h + 1])  # (n,) each
            target = self._reward_rows(h, rows) + PV + self.bonus_scale * b
            idx = self._stage_index(rows, h)
            Qf[idx] = np.minimum(np.minimum(Qf[idx], H), target)  # min{Q_{k-1,h}, H, target}
            self._finish_stage_observed(h, rows)


@register("ucbvi-hoeffding", kind="online", problem="tabular", bounds=("azar2017-thm1",))
class UCBVIHoeffding(UCBVI):
    """UCBVI-CH (Azar et al. 2017, Alg. 3): b = 7 H L sqrt(1/N(x,a)), pooled stationary model."""

    name = "ucbvi-hoeffding"

    def plan(self) -> None:
        if self.model.storage != "sparse":
            N = np.maximum(self.model.N_sa, 1.0)  # (B, S, A); unvisited pairs masked in plan
            self._bonus = 7.0 * self.H * self.L * np.sqrt(1.0 / N)  # (B, S, A), same for all h
        super().plan()

    def backup(self, h: int, V_next: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.model.expected(V_next), self._bonus

    def backup_observed(self, h: int, V_next: np.ndarray):
        rows, PV = self.model.expected_observed(V_next)
        N = np.maximum(self.model.N_sa.reshape(-1)[rows], 1.0)
        return rows, PV, 7.0 * self.H * self.L * np.sqrt(1.0 / N)


@register("ucbvi-bernstein", kind="online", problem="tabular", bounds=("azar2017-thm2",))
class UCBVIBernstein(UCBVI):
    """UCBVI-BF (Azar et al. 2017, Alg. 4): empirical-Bernstein bonus with the N'_{k,h+1} term."""

    name = "ucbvi-bernstein"

    def plan(self) -> None:
        H, L = float(self.H), self.L
        N_next = self.model.N_hs  # N'_{k,h}(y): (B, H+1, S), h = 0..H
        c = 100.0**2 * H**3 * self.S**2 * self.A * L**2
        # min{c / N'_{k,h}(y), H^2}, and H^2 where N'_{k,h}(y) = 0: (B, H+1, S)
        self._g = np.where(N_next > 0, np.minimum(c / np.maximum(N_next, 1.0), H**2), H**2)
        if self.model.storage != "sparse":
            self._N = np.maximum(self.model.N_sa, 1.0)  # (B, S, A); unvisited masked in plan
        self._F = np.empty((self.n_seeds, self.S, 4))  # the 4 functions P_hat is applied to
        super().plan()

    def _functions(self, h: int, V_next: np.ndarray) -> np.ndarray:
        """F (B, S, 4) = [V, W, W^2, g] with W = V - max_y V (shift for the variance)."""
        F = self._F
        F[..., 0] = V_next
        np.subtract(V_next, V_next.max(axis=-1, keepdims=True), out=F[..., 1])
        np.multiply(F[..., 1], F[..., 1], out=F[..., 2])
        F[..., 3] = self._g[:, h + 1]
        return F

    def _mean_and_bonus(self, E: np.ndarray, N: np.ndarray):
        """(P_hat V, b) from E = P_hat F (..., 4) and N = max(N(x, a), 1)."""
        H, L = float(self.H), self.L
        PV, PW, PW2, Pg = E[..., 0], E[..., 1], E[..., 2], E[..., 3]
        var = np.maximum(PW2 - PW * PW, 0.0)  # Var_{y~P_hat}[V_{k,h+1}(y)]
        b = np.sqrt(8.0 * L * var / N) + 14.0 * H * L / (3.0 * N) + np.sqrt(8.0 * Pg / N)
        return PV, b

    def backup_observed(self, h: int, V_next: np.ndarray):
        rows, E = self.model.expected_observed(self._functions(h, V_next))  # (n,), (n, 4)
        PV, b = self._mean_and_bonus(E, np.maximum(self.model.N_sa.reshape(-1)[rows], 1.0))
        return rows, PV, b

    def backup(self, h: int, V_next: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        F = self._functions(h, V_next)  # (B, S, 4): [V, W, W^2, g]
        E = self.model.expected(F)  # (B, S, A, 4): P_hat applied to each column
        return self._mean_and_bonus(E, self._N)  # N = max(N_k(x, a), 1): (B, S, A)


@register(
    "ucbvi-ajks",
    kind="online",
    problem="tabular",
    bounds=("ajks-thm7.1", "ajks-thm7.1-delta", "ajks-thm7.6"),
)
class UCBVIAJKS(_OptimisticTabularAgent):
    """UCBVI as in AJKS Ch. 7: per-step model P_hat_h, b = 2 H sqrt(L / N_h(s,a)), Q capped at H."""

    name = "ucbvi-ajks"
    per_step_model = True

    @property
    def L(self) -> float:
        """L = ln(S A H K / delta)."""
        return ajks_log_term(self.S, self.A, self.H, self.episodes, self.delta)

    def plan(self) -> None:
        if self.model.storage == "sparse":
            self._plan_observed()
            return
        H, L = float(self.H), self.L
        self._r_hat = None if self.known_rewards else self.model.mean_reward()
        visited = self.model.visited  # (B, H, S, A)
        N = np.maximum(self.model.N_sa, 1.0)  # (B, H, S, A)
        Q, V = self._Q, self._V  # (B, H, S, A), (B, H+1, S)
        bk = self.model.backend
        for h in range(self.H - 1, -1, -1):
            b = 2.0 * H * np.sqrt(L / N[:, h])  # (B, S, A)
            PV = self.model.expected(V[:, h + 1], h)  # P_hat_h V_{h+1}: (B, S, A)
            # Q_h = min{r_h + b_h + P_hat_h V_{h+1}, H} where visited, H elsewhere (fused)
            V_h = bk.optimistic_stage(
                Q[:, h], self.reward(h), self.bonus_scale * b, PV, visited[:, h], H, keep_min=False
            )
            V[:, h] = bk.to_numpy(V_h)
        self._policy = self.greedy(Q)  # (B, H, S)

    def _plan_observed(self) -> None:
        """plan() on the visited pairs only (sparse storage; see _stage_index's comment)."""
        H, L = float(self.H), self.L
        Qf = self._Q.reshape(-1)
        for h in range(self.H - 1, -1, -1):
            rows, PV = self.model.expected_observed(self._V[:, h + 1], h)  # (n,) each
            idx = self._stage_index(rows, h)
            b = 2.0 * H * np.sqrt(L / np.maximum(self.model.N_sa.reshape(-1)[idx], 1.0))
            Qf[idx] = np.minimum(self._reward_rows(h, rows) + self.bonus_scale * b + PV, H)
            self._finish_stage_observed(h, rows)
