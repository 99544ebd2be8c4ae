r"""REGIME (Zhan, Uehara, Sun, Lee 2024): explore without rewards, query one batch, fit, plan.

Paper: Zhan, Uehara, Sun, Lee, "Provable Reward-Agnostic Preference-Based Reinforcement
Learning", ICLR 2024, arXiv:2305.18505, Algorithm 1 (REGIME, the tabular / linear-reward
instance). Card: docs/algorithms/regime.md. Bound carried: ``zhan2024-regime-queries`` [M] -- an
eps-optimal policy from O~(kappa^2 d^2 / eps^2) preference queries after poly(S, A, H) / eps^2
reward-free exploration episodes (kappa = 1 / inf sigma' over trajectory-reward differences). The
abstract [A] and the review thread [S] fix the structure below (exploration before any feedback;
one batch of queries on selected trajectory pairs; BTL MLE; plan); the step details are [M], our
reconstruction, listed as deviations.

Setting: the runner's trajectory oracle (``compares="trajectories"``,
:class:`~theorylab.mdps.preference.TrajectoryBTLOracle`), P(tau1 preferred to tau0) =
sigma(<r*, psi(tau1) - psi(tau0)>) with psi the SA visit counts (d = SA) and r* the mean rewards,
transitions unknown. The learner plays duels (two policies per round, as Dueling RL,
:mod:`theorylab.algorithms.preference.dueling`) in three phases:

1. **Reward-free exploration** (rounds 1..``explore``, no query): both trajectories of a round
   follow pi_e = argmax_pi H <F_hat_pi, xi>, the policy whose model error bound is largest under
   the current empirical model P_hat (xi: Weissman's L1 width of P_hat(. | s, a), as in Dueling
   RL; F_hat_pi = E^{P_hat}_pi psi). After the phase P_hat is frozen: the model of step 2 and 4.
2. **Design** (rounds ``explore`` + 1 .. ``explore`` + N): the N pairs are chosen greedily,
   (pi0_n, pi1_n) = argmax ||F_hat_pi0 - F_hat_pi1||_{Sigma_n^{-1}}, Sigma_{n+1} = Sigma_n +
   (F_hat_pi0 - F_hat_pi1)(.)^T, Sigma_1 = lambda I (an optimal-design-style choice over the
   enumerated deterministic policies, :mod:`theorylab.algorithms.preference.policy_features`);
   each pair is rolled out once.
3. **One batch of N queries** after the last design round: tau1_n against tau0_n, all at once.
   theta_hat = the constrained BTL MLE on x_n = psi(tau1_n) - psi(tau0_n) over Theta_B =
   {1^T theta = 0, ||theta|| <= B} (``mle.btl_mle``, the library's MLE; B = sqrt(SA) / 2).
4. **Plan**: pi_hat = argmax_pi <theta_hat, F_hat_pi>, by backward induction on P_hat with the
   reward theta_hat (exact VI; equal to the enumeration's argmax, tests/test_preference_dueling.py).
   Every later round plays (pi_hat, pi_hat): its regret is the exact sub-optimality of pi_hat.

Deviations, and why: step 1 uses the model-error-maximising policy as the reward-free oracle (the
paper calls a generic reward-free exploration algorithm; this one plans on the error bound, as
RF-UCRL-type methods do) and counts two trajectories per round; step 2's greedy design is the
reference's "optimal-design-style" description, not a verified copy of the paper's rule; plain
MLE, no pessimism (the paper's step 4 may add a confidence-set maximin: not recovered).
"""

from __future__ import annotations

import math

import numpy as np

from theorylab.agent import EnvSpec, read_only_copy
from theorylab.algorithms.preference.dueling import l1_width
from theorylab.algorithms.preference.mle import btl_mle
from theorylab.algorithms.preference.policy_features import (
    DEFAULT_LIMIT,
    deterministic_policies,
    empirical_model,
    expected_features,
    trajectory_counts,
)
from theorylab.algorithms.registry import register
from theorylab.mdps.preference import TrajectoryBTLOracle
from theorylab.mdps.tabular import Trajectories


def greedy_design(F: np.ndarray, n_pairs: int, lam: float) -> np.ndarray:
    """Step 2 for one model: ``F (N, d)`` features -> ``(n_pairs, 2)`` policy indices, each the
    pair maximising ||F_i - F_j||_{Sigma^{-1}} given the pairs before it (Sherman-Morrison)."""
    N, d = F.shape
    Sinv = np.eye(d) / lam
    out = np.empty((n_pairs, 2), np.int64)
    for n in range(n_pairs):
        G = F @ Sinv @ F.T
        g = np.diag(G)
        W = g[:, None] + g[None, :] - 2.0 * G  # squared norms
        k = int(np.argmax(W))  # ties: first in row-major order
        i, j = divmod(k, N)
        out[n] = i, j
        x = F[i] - F[j]
        Sx = Sinv @ x
        Sinv -= np.outer(Sx, Sx) / (1.0 + x @ Sx)
    return out


def plan(P: np.ndarray, reward: np.ndarray, H: int) -> np.ndarray:
    """Backward induction on ``P (S, A, S)`` with the stationary ``reward (S, A)``: ``(H, S)``.
    Ties go to the smallest action."""
    S = P.shape[0]
    V = np.zeros(S)
    pol = np.empty((H, S), np.int64)
    for h in range(H - 1, -1, -1):
        Q = reward + P @ V
        pol[h] = Q.argmax(axis=1)
        V = Q.max(axis=1)
    return pol


@register(
    "regime",
    kind="preference",
    problem="tabular",
    bounds=("zhan2024-regime-queries",),
    compares="trajectories",
    papers=("000#52", "001#55"),
)
class REGIME:
    """REGIME: reward-free exploration, one batch of trajectory comparisons, BTL fit, plan."""

    name = "regime"
    duel = True

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs,
        oracle: TrajectoryBTLOracle,
        *,
        episodes: int,
        explore: int = 200,
        queries: int = 100,
        lam: float = 1.0,
        delta: float = 0.1,
        B: float | None = None,
        max_policies: int = DEFAULT_LIMIT,
    ) -> None:
        S, A, H = env.S, env.A, env.H
        d = S * A
        if not isinstance(oracle, TrajectoryBTLOracle) or oracle.H != H:
            raise ValueError(
                "regime compares whole trajectories: it needs a TrajectoryBTLOracle of horizon "
                f"H = {H} (the runner's for compares='trajectories'), got {oracle!r}"
            )
        for name, v, lo in (("explore", explore, 0), ("queries", queries, 1)):
            if isinstance(v, bool) or int(v) != v or v < lo:
                raise ValueError(f"regime: {name} must be an integer >= {lo}, got {v!r}")
        if episodes <= explore + queries:
            raise ValueError(
                f"regime: episodes = {episodes} leaves no round for the output policy: it must "
                f"exceed explore + queries = {explore} + {queries} (the rounds after them play "
                "the learned policy, whose regret is its exact sub-optimality)"
            )
        if not 0.0 < delta < 1.0 or not lam > 0:
            raise ValueError(f"regime: need 0 < delta < 1 and lam > 0, got {delta!r}, {lam!r}")
        self.S, self.A, self.H, self.d = S, A, H, d
        self.n_seeds, self.oracle = n_seeds, oracle
        self.explore, self.n_queries, self.lam, self.delta = int(explore), int(queries), lam, delta
        self.B = math.sqrt(d) / 2.0 if B is None else float(B)
        self.mu0 = np.asarray(env.mu0, dtype=np.float64)
        self.policies = deterministic_policies(S, A, H, max_policies)  # (N, H, S)
        self.counts_sas = np.zeros((n_seeds, S, A, S))  # exploration transitions only
        self.t = 0
        self.P_hat = None  # (B, S, A, S), frozen after exploration
        self.pairs = None  # (B, N, 2) policy indices of the design
        self.psi = np.zeros((2, n_seeds, self.n_queries, d))  # the designed rollouts' counts
        self.rollouts = np.zeros((2, 2, n_seeds, self.n_queries, H), np.int64)  # (tau, s/a, ...)
        self.wins = None  # (B, N) the batch's answers
        self.theta_hat = None  # (B, d)
        self.output_policy = None  # (B, H, S)
        if self.explore == 0:
            self._freeze_and_design()

    @property
    def queries(self) -> np.ndarray:
        return self.oracle.queries

    @property
    def phase(self) -> str:
        if self.t < self.explore:
            return "explore"
        return "design" if self.t < self.explore + self.n_queries else "output"

    # ----------------------------------------------------------------------------- phases
    def exploration_policies(self) -> np.ndarray:
        """Step 1: pi_e = argmax_pi H <F_hat_pi, xi> per seed: ``(B,)`` policy indices."""
        P_hat = empirical_model(self.counts_sas)
        F = expected_features(P_hat, self.mu0, self.policies)  # (B, N, d)
        n = self.counts_sas.sum(axis=-1).reshape(self.n_seeds, self.d)
        xi = l1_width(n, self.S, self.A, max(self.explore, 1), self.delta)  # (B, d)
        return np.einsum("bnd,bd->bn", F, xi).argmax(axis=1)

    def design_model(self) -> np.ndarray:
        """P_hat after exploration ``(B, S, A, S)`` (uniform rows where unvisited)."""
        return empirical_model(self.counts_sas)

    def _freeze_and_design(self) -> None:
        self.P_hat = self.design_model()
        F = expected_features(self.P_hat, self.mu0, self.policies)  # (B, N, d)
        self.pairs = np.stack(
            [greedy_design(F[b], self.n_queries, self.lam) for b in range(self.n_seeds)]
        )

    def _query_fit_plan(self) -> None:
        """Steps 3-4: one batch of N comparisons, the BTL MLE, backward induction on P_hat."""
        (s0, a0), (s1, a1) = self.rollouts  # each (B, N, H)
        ask = np.ones(self.n_seeds, dtype=bool)
        self.wins = np.stack(  # (B, N): 1 when tau1_n (pi1_n's) won; N queries per seed
            [self.oracle.compare(s1[:, n], a1[:, n], s0[:, n], a0[:, n], ask)
             for n in range(self.n_queries)], axis=1
        )  # fmt: skip
        self.theta_hat = btl_mle(self.psi[1] - self.psi[0], self.wins, self.B)
        r = self.theta_hat.reshape(self.n_seeds, self.S, self.A)
        self.output_policy = np.stack(
            [plan(self.P_hat[b], r[b], self.H) for b in range(self.n_seeds)]
        )

    # ----------------------------------------------------------------------------- protocol
    def policy_pair(self) -> tuple[np.ndarray, np.ndarray]:
        """Two ``(B, H, S)`` policies for the next round (see the phases above)."""
        if self.phase == "explore":
            pi = self.policies[self.exploration_policies()]
            return read_only_copy(pi), read_only_copy(pi)
        if self.phase == "design":
            idx = self.pairs[:, self.t - self.explore]  # (B, 2)
            return read_only_copy(self.policies[idx[:, 0]]), read_only_copy(
                self.policies[idx[:, 1]]
            )
        return read_only_copy(self.output_policy), read_only_copy(self.output_policy)

    def update_pair(self, tau1: Trajectories, tau2: Trajectories) -> None:
        phase = self.phase
        if phase == "explore":
            seeds = np.arange(self.n_seeds)[:, None]
            for tau in (tau1, tau2):
                np.add.at(self.counts_sas, (seeds, tau.states, tau.actions, tau.next_states), 1.0)
        elif phase == "design":
            n = self.t - self.explore
            for k, tau in enumerate((tau1, tau2)):
                self.rollouts[k, 0, :, n], self.rollouts[k, 1, :, n] = tau.states, tau.actions
                self.psi[k, :, n] = trajectory_counts(tau.states, tau.actions, self.S, self.A)
        self.t += 1
        if phase == "explore" and self.t == self.explore:
            self._freeze_and_design()
        if phase == "design" and self.t == self.explore + self.n_queries:
            self._query_fit_plan()
