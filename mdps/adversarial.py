r"""Adversarial episodic MDPs with linear Q-functions: fixed transitions, a loss sequence.

The setting of Luo, Wei & Lee (2021) and Dai, Luo, Wei & Zimmert (2023, arXiv 2301.12942; seed
row 002-004#A1): the transitions ``P_h(s'|s, a) = <phi(s, a), mu_h(s')>`` are fixed and unknown,
and episode k has its own loss ``l_{k,h}(s, a) = <phi(s, a), theta_{k,h}>`` in [0, 1], chosen by an
oblivious adversary (the whole sequence is fixed before the first episode). Then for every policy
pi and every k the Q-function of the losses is linear in the known features,

    Q^pi_{k,h}(s, a) = <phi(s, a), theta_{k,h} + sum_{s'} mu_h(s') V^pi_{k,h+1}(s')>,

which is the linear-Q assumption of both papers. With one-hot features (d = S*A) every tabular
adversarial MDP is one of these.

:class:`AdversarialLinearMDP` holds ``phi (S, A, d)``, ``mu (H, d, S)`` (through a
:class:`~theorylab.mdps.linear.LinearMDP` of zero reward, which validates them), the initial
distribution ``mu0 (S,)`` and the adversary's loss parameters, and computes exactly what the
learner is scored by:

* :meth:`occupancy` ``q_h(s, a)`` of (batched) policies, forward from ``mu0``;
* :meth:`expected_loss` ``V^pi(l) = sum_h sum_{s,a} q_h(s, a) l_h(s, a)``;
* :meth:`best_fixed_policy`: ``argmin_pi sum_k V^pi(l_k)`` by backward induction on the summed
  losses (V^pi is linear in the loss, so the comparator of the regret
  ``sum_k V^{pi_k}(l_k) - min_pi sum_k V^pi(l_k)`` needs only ``sum_k l_k``);
* :meth:`covariance` ``Sigma_h = E_pi[phi(s_h, a_h) phi(s_h, a_h)^T]`` -- what a simulator
  returns for a policy (the exact answer of infinitely many roll-outs);
* :meth:`rollout`: one trajectory per seed under a given loss (bandit feedback: the learner sees
  only the losses of the pairs it visits).

Loss sequence (``losses="bernoulli"``): every stage h and feature coordinate i has a mean
``m_{h,i} ~ U[0, 1]`` (drawn once from the instance seed) and ``theta_{k,h,i} ~ Bernoulli(m_{h,i})``
independently over k (drawn from ``default_rng([seed, 3])``); with simplex features (rows of phi
on the simplex) every loss lies in [0, 1]. The sequence is oblivious: it depends on the instance
seed only, never on the learner, and :meth:`loss_parameters` returns the same first K' episodes
for every K >= K'.
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.linear import LinearMDP

LOSS_LAWS = ("bernoulli",)


class AdversarialLinearMDP:
    """Fixed linear transitions and an oblivious loss sequence ``l_{k,h} = phi theta_{k,h}``.

    phi: ``(S, A, d)`` features with rows on the simplex (entries >= 0 summing to 1, so that
    ``theta in [0, 1]^d`` gives losses in [0, 1]); mu: ``(H, d, S)``; mu0: ``(S,)``;
    loss_means: ``(H, d)`` in [0, 1]; seed: the adversary's stream.
    """

    def __init__(
        self,
        phi,
        mu,
        mu0,
        loss_means,
        *,
        horizon: int,
        seed: int = 0,
        losses: str = "bernoulli",
        name: str = "adversarial-linear",
    ) -> None:
        self.model = LinearMDP(phi, mu, np.zeros(np.shape(phi)[-1]), mu0, horizon=horizon)
        phi = self.model.phi
        if np.any(phi < 0) or np.any(np.abs(phi.sum(axis=-1) - 1.0) > 1e-9):
            s, a = (
                int(i) for i in np.argwhere((phi < 0).any(-1) | (np.abs(phi.sum(-1) - 1) > 1e-9))[0]
            )
            raise InvalidMDPError(
                f"{name}: phi({s}, {a}) must lie on the simplex (losses phi theta in [0, 1] for "
                f"theta in [0, 1]^d), got {phi[s, a].tolist()}"
            )
        m = np.asarray(loss_means, dtype=np.float64)
        if (
            m.shape != (horizon, self.model.d)
            or np.any(~np.isfinite(m))
            or np.any(m < 0)
            or np.any(m > 1)
        ):
            raise InvalidMDPError(
                f"{name}: loss_means must be an (H, d) = ({horizon}, {self.model.d}) array in "
                f"[0, 1], got shape {m.shape}"
            )
        if losses not in LOSS_LAWS:
            raise InvalidMDPError(f"{name}: losses must be one of {LOSS_LAWS}, got {losses!r}")
        self.loss_means = m  # (H, d)
        self.seed = int(seed)
        self.losses = losses
        self.name = name

    # ------------------------------------------------------------------ shapes
    @property
    def S(self) -> int:
        return self.model.S

    @property
    def A(self) -> int:
        return self.model.A

    @property
    def H(self) -> int:
        return int(self.model.horizon)

    horizon = H

    @property
    def d(self) -> int:
        return self.model.d

    @property
    def phi(self) -> np.ndarray:
        return self.model.phi  # (S, A, d)

    @property
    def features(self) -> np.ndarray:
        return self.model.phi

    @property
    def mu0(self) -> np.ndarray:
        return self.model.mu0  # (S,)

    @property
    def P(self) -> np.ndarray:
        """``(H, S, A, S)`` transitions (stage-dependent form)."""
        P = self.model.dense_P()
        return np.broadcast_to(P, (self.H, *P.shape[-3:])) if P.ndim == 3 else P

    def __repr__(self) -> str:
        return (
            f"AdversarialLinearMDP({self.name!r}, S={self.S}, A={self.A}, d={self.d}, H={self.H})"
        )

    # ------------------------------------------------------------------ the adversary
    def loss_parameters(self, K: int) -> np.ndarray:
        """``theta (K, H, d)`` of the first K episodes (the same prefix for every K)."""
        rng = np.random.default_rng([self.seed, 3])
        out = np.empty((K, self.H, self.d))
        for k in range(K):  # one draw per episode: a prefix does not depend on K
            out[k] = rng.random((self.H, self.d)) < self.loss_means
        return out

    def loss_tables(self, theta: np.ndarray) -> np.ndarray:
        """``l (..., H, S, A)`` of loss parameters ``theta (..., H, d)``."""
        return np.einsum("sad,...hd->...hsa", self.phi, theta)

    # ------------------------------------------------------------------ exact scoring
    def occupancy(self, policies: np.ndarray) -> np.ndarray:
        """``q (B, H, S, A)`` of stochastic policies ``(B, H, S, A)``, forward from mu0."""
        pol = np.asarray(policies, dtype=np.float64)
        P = self.P  # (H, S, A, S)
        q = np.empty(pol.shape)
        state = np.broadcast_to(self.mu0, (pol.shape[0], self.S))  # (B, S)
        for h in range(self.H):
            q[:, h] = state[:, :, None] * pol[:, h]
            if h + 1 < self.H:
                state = np.einsum("bsa,sat->bt", q[:, h], P[h])
        return q

    def expected_loss(self, policies: np.ndarray, loss: np.ndarray) -> np.ndarray:
        """``V^pi(l) (B,)``: expected total loss of each policy ``(B, H, S, A)`` under ``loss``
        ``(H, S, A)`` or one loss per policy ``(B, H, S, A)``."""
        q = self.occupancy(policies)
        return np.einsum("bhsa,...hsa->b", q, loss) if loss.ndim == 3 else (q * loss).sum((1, 2, 3))

    def best_fixed_policy(self, total_loss: np.ndarray) -> tuple[np.ndarray, float]:
        """``(pi (H, S) ints, min_pi V^pi(total_loss))`` by backward induction (ties: lowest
        action): the best fixed policy in hindsight for the summed losses ``(H, S, A)``."""
        P = self.P
        V = np.zeros(self.S)
        pi = np.zeros((self.H, self.S), dtype=np.int64)
        for h in range(self.H - 1, -1, -1):
            Q = total_loss[h] + P[h] @ V  # (S, A)
            pi[h] = Q.argmin(axis=1)
            V = Q.min(axis=1)
        return pi, float(self.mu0 @ V)

    def covariance(self, policies: np.ndarray) -> np.ndarray:
        """``Sigma (B, H, d, d) = sum_{s,a} q_h(s, a) phi(s, a) phi(s, a)^T``: the simulator's
        exact feature covariance under each policy."""
        q = self.occupancy(policies)
        return np.einsum("bhsa,sai,saj->bhij", q, self.phi, self.phi)

    def rollout(
        self, policies: np.ndarray, theta: np.ndarray | None, rngs
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One trajectory per seed: ``states, actions (B, H)`` ints and the observed losses
        ``(B, H)`` under loss parameters ``theta (H, d)`` (zeros when None: a simulator roll-out
        without losses). Seed b draws from ``rngs[b]`` only (2H uniforms)."""
        pol = np.asarray(policies, dtype=np.float64)
        B, H = pol.shape[0], self.H
        u = np.stack([g.random((H, 2)) for g in rngs])  # (B, H, 2)
        P = self.P
        b = np.arange(B)
        states = np.empty((B, H), dtype=np.int64)
        actions = np.empty((B, H), dtype=np.int64)
        s = np.minimum((np.cumsum(self.mu0)[None, :] <= u[:, 0, :1]).sum(axis=1), self.S - 1)
        for h in range(H):
            cdf_a = np.cumsum(pol[b, h, s], axis=1)  # (B, A)
            a = np.minimum((cdf_a <= u[:, h, 1:2]).sum(axis=1), self.A - 1)
            states[:, h], actions[:, h] = s, a
            if h + 1 < H:
                cdf_s = np.cumsum(P[h, s, a], axis=1)  # (B, S)
                s = np.minimum((cdf_s <= u[:, h + 1, 0:1]).sum(axis=1), self.S - 1)
        observed = (
            np.zeros((B, H))
            if theta is None
            else np.einsum("bhd,hd->bh", self.phi[states, actions], theta)
        )
        return states, actions, observed


class Simulator:
    """What a learner may ask of the MDP besides its own episode (Luo et al. 2021's simulator):
    roll-outs of any policy without losses, and (their limit) the exact feature covariance of a
    policy. The loss sequence stays hidden."""

    def __init__(self, mdp: AdversarialLinearMDP) -> None:
        self._mdp = mdp

    def covariance(self, policies: np.ndarray) -> np.ndarray:
        """``Sigma (B, H, d, d)`` of policies ``(B, H, S, A)`` (exact)."""
        return self._mdp.covariance(policies)

    def rollout(self, policies: np.ndarray, rngs) -> tuple[np.ndarray, np.ndarray]:
        """``states, actions (B, H)``: one loss-free roll-out per policy (b from ``rngs[b]``)."""
        states, actions, _ = self._mdp.rollout(policies, None, rngs)
        return states, actions
