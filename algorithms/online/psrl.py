"""PSRL: posterior sampling for reinforcement learning.

Paper: Ian Osband, Daniel Russo, Benjamin Van Roy, "(More) efficient reinforcement learning via
posterior sampling", NeurIPS 2013, arXiv:1306.0940. Algorithm 1 (PSRL), episodic setting
M = (S, A, R, P, tau, rho) with stationary R, P, horizon tau = H and time-dependent policies.

    prior f over MDPs; for episode k = 1, 2, ...:
        sample M_k ~ f( . | H_k)                (the posterior given the history H_k)
        compute mu_k = an optimal policy of M_k (backward induction, H stages)
        play mu_k for one episode, append the observed transitions to H_k

Posterior used here (conjugate, independent over (s, a)):

* transitions: P(. | s, a) ~ Dirichlet(alpha0 + prior(s, a, .) + N(s, a, .)), where N counts the
  observed transitions pooled over the stages h (the paper's stationary P); ``stage_dependent``
  keeps one Dirichlet per (h, s, a) instead. It follows the environment by default: a
  stage-dependent MDP gets per-stage posteriors, and ``stage_dependent=False`` on one is refused
  (pooling would put the posterior on stationary models only, which exclude the true MDP; until
  issue 14 the default was False whatever the MDP, so PSRL silently pooled);
* rewards: the known mean rewards ``env.reward`` when the learner is given them; otherwise
  r(s, a) ~ Beta(1 + sum r, 1 + sum (1 - r)) over the observed rewards at (s, a), the conjugate
  posterior of a Bernoulli reward with a uniform prior.

A Dirichlet draw is a vector of independent Gamma(alpha_j, 1) variates divided by its sum, and a
Beta(a, b) draw is G_a / (G_a + G_b). Seed i draws its variates from ``rngs[i]`` only, in one fixed
pattern per episode (one ``standard_gamma`` call of shape ``([H,] S, A, S)`` for the transitions,
then, when rewards are unknown, one of shape ``(2, [H,] S, A)``), so seed i samples the same MDPs
alone or inside a batch. The loop over seeds is only around these draws; the normalisation,
planning and posterior updates are batched over B.

Bound carried: ``psrl-osband2013`` -- Theorem 1: Bayesian regret E[Regret(T)] = O(tau S sqrt(A T
log(S A T))) for any prior (expectation over the prior and the algorithm).

Deviations and choices:

* alpha0 = 1 (a uniform Dirichlet prior, as in TabulaRL's PSRL) by default; ``prior`` adds extra
  pseudo-counts ``(S, A, S)`` (or ``(H, S, A, S)``), e.g. a posterior concentrated on a known model.
* Observed rewards that are not 0/1 (deterministic fractional means) enter the Beta posterior as
  fractional pseudo-counts (a += r, b += 1 - r): exact for Bernoulli rewards, a standard heuristic
  otherwise. The paper leaves the reward prior general.
* The next episode's MDP is sampled at the end of ``update`` (and at construction), so
  ``policy()`` is a pure read; ``value_estimate()`` is the sampled MDP's optimal value
  V^{M_k}_1(mu0) -- *not* an upper bound on V*_1, but equal to V*_1 in expectation over the
  posterior (Osband et al., Lemma 1: E[V^{M_k}] = E[V^{M*}]).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from theorylab.agent import EnvSpec, read_only_copy
from theorylab.algorithms.online.empirical_model import EmpiricalModel, resolve_stage_dependence
from theorylab.algorithms.registry import register


def batched_backward_induction(
    P: np.ndarray, R: np.ndarray, H: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Optimal Q, V and a greedy policy of B finite-horizon MDPs at once.

    P: ``(B, S, A, S)`` stationary or ``(B, H, S, A, S)`` per-stage transitions.
    R: ``(B, H, S, A)`` mean rewards.
    Returns Q ``(B, H, S, A)``, V ``(B, H+1, S)`` (V[:, H] = 0), policy ``(B, H, S)`` int64
    (ties to the smallest action index, as ``backward_induction``).
    """
    B, _, S, A = R.shape
    V = np.zeros((B, H + 1, S))  # (B, H+1, S)
    Q = np.empty((B, H, S, A))  # (B, H, S, A)
    for h in range(H - 1, -1, -1):
        P_h = P[:, h] if P.ndim == 5 else P  # (B, S, A, S)
        # (P_h V_{h+1})(s, a) as a per-seed row sum (a BLAS product could round differently for
        # different B, and seed i must not depend on the batch it runs in)
        PV = (P_h * V[:, None, None, h + 1, :]).sum(axis=-1)  # (B, S, A)
        Q[:, h] = R[:, h] + PV
        V[:, h] = Q[:, h].max(axis=-1)
    return Q, V, Q.argmax(axis=-1)


@register("psrl", kind="online", problem="tabular", bounds=("psrl-osband2013",))
class PSRL:
    """Posterior sampling RL (Osband, Russo, Van Roy 2013), batched over B seeds.

    alpha0: Dirichlet prior pseudo-count on every next state (> 0).
    prior: optional extra Dirichlet pseudo-counts ``(S, A, S)`` / ``(H, S, A, S)``.
    stage_dependent: one posterior per stage h. Default (None): the environment's setting -- pooled
        over h (the paper's stationary P) on a stationary MDP, per stage on a stage-dependent one.
        ``False`` on a stage-dependent MDP is refused: pooling would sample from a model class
        that excludes the true MDP.
    episodes: accepted for the common constructor; PSRL does not need K.
    """

    name = "psrl"

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs: Sequence[np.random.Generator],
        *,
        episodes: int | None = None,
        alpha0: float = 1.0,
        prior: np.ndarray | None = None,
        stage_dependent: bool | None = None,
    ) -> None:
        if not (np.isfinite(alpha0) and alpha0 > 0):
            raise ValueError(f"alpha0 must be a finite number > 0, got {alpha0!r}")
        if len(rngs) != n_seeds:
            raise ValueError(f"got {len(rngs)} generators for n_seeds={n_seeds}")
        self.env = env
        self.n_seeds = B = int(n_seeds)
        self.rngs = list(rngs)
        self.stage_dependent = resolve_stage_dependence(env, stage_dependent, self.name)
        S, A, H = env.S, env.A, env.H
        cells = (H, S, A) if self.stage_dependent else (S, A)  # the posterior's index space
        self.alpha = np.full((*cells, S), float(alpha0))  # ([H,] S, A, S) prior pseudo-counts
        if prior is not None:
            prior = np.asarray(prior, dtype=np.float64)
            if prior.shape != self.alpha.shape:
                raise ValueError(f"prior must have shape {self.alpha.shape}, got {prior.shape}")
            if not np.all(np.isfinite(prior)) or (prior < 0).any():
                raise ValueError("prior pseudo-counts must be finite and >= 0")
            self.alpha = self.alpha + prior
        # observed counts N (B, [H,] S, A, S), N(s, a) and reward sums R_sum (B, [H,] S, A)
        self.model = EmpiricalModel(B, S, A, H, per_step=self.stage_dependent)
        self.known_rewards = env.reward is not None
        if self.known_rewards:
            R = np.asarray(env.reward, dtype=np.float64)  # (S, A) or (H, S, A)
            self.R_known = np.broadcast_to(R, (H, S, A))  # (H, S, A)

        self._sample_and_plan()

    # ------------------------------------------------------------------ posterior sampling
    def _sample_and_plan(self) -> None:
        """Draw M_k from the posterior of every seed, then solve it by backward induction."""
        B, S, A, H = self.n_seeds, self.env.S, self.env.A, self.env.H
        alpha_post = self.alpha[None] + self.model.N_sas  # (B, [H,] S, A, S)
        G = np.stack([rng.standard_gamma(a) for rng, a in zip(self.rngs, alpha_post, strict=True)])
        P = G / G.sum(axis=-1, keepdims=True)  # (B, [H,] S, A, S)  Dirichlet draws
        if self.known_rewards:
            R = np.broadcast_to(self.R_known, (B, H, S, A))  # (B, H, S, A)
        else:
            ab = self.reward_beta()  # (B, 2, [H,] S, A)
            G = np.stack([rng.standard_gamma(x) for rng, x in zip(self.rngs, ab, strict=True)])
            R = G[:, 0] / (G[:, 0] + G[:, 1])  # (B, [H,] S, A)  Beta draws
            R = np.broadcast_to(R if R.ndim == 4 else R[:, None], (B, H, S, A))
        self.P_sample, self.R_sample = P, R
        self.Q, self.V, self._policy = batched_backward_induction(P, R, H)

    def policy(self) -> np.ndarray:
        """The optimal policy ``(B, H, S)`` of each seed's sampled MDP M_k."""
        return read_only_copy(self._policy)

    def value_estimate(self) -> np.ndarray:
        """V^{M_k}_1(mu0) of the sampled MDPs, ``(B,)`` (unbiased for V*, not optimistic)."""
        return (self.V[:, 0] * self.env.mu0).sum(axis=-1)  # per-row sum: same alone or batched

    # ------------------------------------------------------------------ posterior update
    def reward_beta(self) -> np.ndarray:
        """Beta posterior parameters of the rewards, ``(B, 2, [H,] S, A)``: [1 + sum r,
        1 + sum (1 - r)] over the observed rewards (Beta(1, 1) prior)."""
        m = self.model
        return 1.0 + np.stack([m.R_sum, m.N_sa - m.R_sum], axis=1)

    def update(self, traj) -> None:
        """Add the episode's transitions (and rewards) to the posterior, then sample M_{k+1}.

        traj: Trajectories with ``(B, H)`` arrays.
        """
        if traj.states.shape[0] != self.n_seeds:
            raise ValueError(
                f"trajectories have {traj.states.shape[0]} seeds, agent has {self.n_seeds}"
            )
        self.model.update(traj)
        self._sample_and_plan()
