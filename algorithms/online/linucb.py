r"""LinUCB / OFUL: optimism in the face of uncertainty for stochastic linear bandits.

Paper: Yasin Abbasi-Yadkori, David Pal, Csaba Szepesvari, "Improved Algorithms for Linear
Stochastic Bandits", NeurIPS 2011. Algorithm 1 (OFUL) with the confidence set of Theorem 2 [M:
from memory, not in theory.md; check against the paper before hard-coding constants]. Round t,
arms x in a finite set with known features::

    V_t       = lambda I + sum_{s<t} x_s x_s^T,         theta_hat_t = V_t^{-1} sum_{s<t} x_s r_s
    sqrt(beta_t) = R sqrt( 2 log( det(V_t)^{1/2} det(lambda I)^{-1/2} / delta ) ) + lambda^{1/2} S
    x_t       = argmax_x  <theta_hat_t, x> + sqrt(beta_t) ||x||_{V_t^{-1}}

(for a finite arm set the optimistic choice over the ellipsoid C_t = {theta : ||theta -
theta_hat_t||_{V_t} <= sqrt(beta_t)} has this closed form). R: sub-Gaussian constant of the
noise; S: bound on ||theta*||; ||x|| <= L = 1 is assumed (features are checked).

Bound carried: ``oful-abbasi2011`` (Theorem 3, with lambda = S = L = R = 1 substituted; [M]):
R_T <= 4 sqrt(T d log(1 + T/d)) (1 + sqrt(2 log(1/delta) + d log(1 + T/d))) w.p. 1 - delta.
The defaults here (R = 1/2, S = 1) satisfy the card's assumptions (a 1/2-sub-Gaussian noise is
1-sub-Gaussian and the bound grows with R), so the card bounds this algorithm's regret too.

Setting in theorylab: a linear bandit is a one-step episodic MDP (H = 1,
``theorylab.mdps.linear.LinearBandit``); one episode = one round, so T = K. With S > 1 states
the initial state is a context drawn from mu0 and the features phi(s, a) are the context's arms
(a contextual linear bandit; the analysis of Theorem 2 holds for any sequence of arm sets).
Registered name ``linucb``.

Parameters: ``features`` (the arm table ``(S, A, d)``; default one-hot, i.e. independent arms),
``lam`` (lambda = 1), ``delta`` (0.1), ``noise`` (R = 1/2: any reward in [0, 1] is 1/2-sub-Gaussian
by Hoeffding's lemma), ``theta_norm`` (S = 1), ``scale`` (multiplies sqrt(beta_t); 1 is the
paper, other values carry no bound).

Computation (batched over seeds, no loop over rounds or arms): V_t^{-1} by Sherman-Morrison,
log det V_t by the matrix determinant lemma (log det V_{t+1} = log det V_t + log(1 + x^T V_t^{-1}
x)), the widths ||x||_{V^{-1}} of all arms as one stacked matmul.
"""

from __future__ import annotations

import math

import numpy as np

from theorylab.agent import EnvSpec, read_only_copy
from theorylab.algorithms.linear.features import resolve_features
from theorylab.algorithms.linear.gram import elliptical_norm_sq, sherman_morrison
from theorylab.algorithms.registry import register


def oful_radius(
    logdet_ratio: np.ndarray, *, noise: float, delta: float, lam: float, theta_norm: float
) -> np.ndarray:
    """sqrt(beta_t) = R sqrt(2 log(det(V)^{1/2} det(lambda I)^{-1/2} / delta)) + sqrt(lambda) S.

    logdet_ratio: ``log det V_t - d log lambda`` per seed ``(B,)``.
    """
    return (
        noise * np.sqrt(2.0 * (0.5 * logdet_ratio + math.log(1.0 / delta)))
        + math.sqrt(lam) * theta_norm
    )


@register("linucb", kind="online", problem="linear", bounds=("oful-abbasi2011",))
class LinUCB:
    """OFUL (Abbasi-Yadkori, Pal, Szepesvari 2011): ridge estimate + self-normalised ellipsoid."""

    name = "linucb"

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs,
        *,
        features=None,
        lam: float = 1.0,
        delta: float = 0.1,
        noise: float = 0.5,
        theta_norm: float = 1.0,
        scale: float = 1.0,
    ) -> None:
        if env.H != 1:
            raise ValueError(
                f"linucb is a bandit algorithm: it needs H = 1 (one round per episode), got "
                f"H = {env.H}; use lsvi-ucb for linear MDPs"
            )
        if not 0.0 < delta < 1.0:
            raise ValueError(f"linucb: delta must lie in (0, 1), got {delta!r}")
        for pname, val in (("lam", lam), ("noise", noise), ("theta_norm", theta_norm)):
            if not (val >= 0 and math.isfinite(val)) or (pname == "lam" and val == 0):
                raise ValueError(f"linucb: {pname} must be finite and > 0, got {val!r}")
        if not (scale >= 0 and math.isfinite(scale)):
            raise ValueError(f"linucb: scale must be finite and >= 0, got {scale!r}")
        if len(rngs) != n_seeds:
            raise ValueError(f"linucb: got {len(rngs)} generators for n_seeds={n_seeds}")
        self.env, self.rngs = env, rngs
        self.n_seeds = B = int(n_seeds)
        self.S, self.A = env.S, env.A
        self.lam, self.delta, self.noise = float(lam), float(delta), float(noise)
        self.theta_norm, self.scale = float(theta_norm), float(scale)
        self.phi = resolve_features(env, features, agent=self.name)  # (S, A, d)
        self.d = d = self.phi.shape[-1]
        self.phi_flat = np.ascontiguousarray(self.phi.reshape(self.S * self.A, d))  # (SA, d)
        self.mu0 = np.asarray(env.mu0, dtype=np.float64)  # (S,)
        self.V_inv = np.broadcast_to(np.eye(d) / self.lam, (B, d, d)).copy()  # V_t^{-1}
        self.xr = np.zeros((B, d))  # sum_s x_s r_s: (B, d)
        self.logdet_ratio = np.zeros(B)  # log det V_t - d log lambda: (B,)
        self.t = 0
        self.plan()

    @property
    def theta_hat(self) -> np.ndarray:
        """Ridge estimate ``V_t^{-1} sum x r``: ``(B, d)``."""
        return np.matmul(self.V_inv, self.xr[..., None])[..., 0]

    @property
    def radius(self) -> np.ndarray:
        """sqrt(beta_t) per seed, ``(B,)`` (times ``scale``)."""
        return self.scale * oful_radius(
            self.logdet_ratio,
            noise=self.noise,
            delta=self.delta,
            lam=self.lam,
            theta_norm=self.theta_norm,
        )

    def plan(self) -> None:
        """UCB of every arm: <theta_hat, x> + sqrt(beta_t) ||x||_{V^-1}, ``(B, S, A)``."""
        B = self.n_seeds
        mean = np.matmul(self.phi_flat, self.theta_hat[..., None])[..., 0]  # (B, SA)
        width = np.sqrt(elliptical_norm_sq(self.V_inv, self.phi_flat))  # (B, SA)
        self.ucb = (mean + self.radius[:, None] * width).reshape(B, self.S, self.A)
        self._policy = self.ucb.argmax(axis=-1)[:, None, :]  # (B, 1, S)

    def policy(self) -> np.ndarray:
        """``(B, 1, S)`` int: the optimistic arm of every context."""
        return read_only_copy(self._policy)

    def value_estimate(self) -> np.ndarray:
        """``(B,)``: sum_s mu0(s) max_a UCB(s, a) (>= V* when theta* lies in the ellipsoid)."""
        return (self.ucb.max(axis=-1) * self.mu0).sum(axis=-1)

    def update(self, traj) -> None:
        sa = traj.states[:, 0] * self.A + traj.actions[:, 0]  # (B,)
        x = self.phi_flat[sa]  # (B, d)
        denom = sherman_morrison(self.V_inv, x)  # (B,)
        self.logdet_ratio += np.log(denom)
        self.xr += x * traj.rewards[:, :1]
        self.t += 1
        self.plan()
