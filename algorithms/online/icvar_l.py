r"""ICVaR-L and ICVaR-HF: iterated-CVaR RL with linear function approximation and human feedback.

Seed reference: ``seed-catalogue-001.md#48``. Paper: Yu Chen, Yihan Du, Pihe Hu, Siwei Wang,
Desheng Wu, Longbo Huang, "Provably Efficient Iterated CVaR Reinforcement Learning with Function
Approximation and Human Feedback", ICLR 2024 (arXiv:2307.02842); theory.md 4.4.

What was read. [A] the abstract (huggingface markdown of 2307.02842); [S] a public review summary
(theory.md 4.4: ICVaR-L is for **linear mixture** MDPs, uses "an epsilon-net approximation of the
CVaR operator" and "a CVaR-adapted ridge regression"; Theorem 1 regret
O~(sqrt(alpha^-(H+1) (d^2 H^4 + d H^6) K)); lower bound Omega(d sqrt(alpha^-(H-1) K)); ICVaR-HF
Theorem 3 O~(sqrt(K H^3 alpha^-(H+1)) (sqrt(H D_P) + sqrt(D_R / m)))). The algorithm boxes, the
confidence radii and the lower-bound instance were NOT read (the full text was not found within
the time box); everything below marked [M] is reconstructed here from those phrases and the
standard linear-mixture machinery (UCRL-VTR, Ayoub et al. 2020; OFUL's radius, Abbasi-Yadkori et
al. 2011).

Objective (Du, Wang, Huang 2023, the same as :mod:`.icvar_rm`; [V] there):
``Q_h(s, a) = r(s, a) + CVaR^alpha_{s' ~ P(.|s,a)}(V_{h+1}(s'))``, ``V_h = max_a Q_h``, V_H = 0
(0-based stages), regret ``sum_k V*_1(s_1) - V^{pi_k}_1(s_1)`` measured exactly every episode.

Model: ``P(s'|s,a) = <phi(s'|s,a), theta>`` with a known basis ``phi (d, S, A, S')``
(:mod:`theorylab.mdps.linear_mixture`); default the one-hot basis of a tabular model (d = S^2 A).

ICVaR-L as implemented [M]. CVaR in its dual form ``CVaR^alpha(V) = sup_x {x - E[(x - V)^+] /
alpha}``; for a fixed x, ``E[(x - V)^+] = <phi_{f_x}(s, a), theta>`` with ``f_x = (x - V)^+`` is
linear in theta (the value features). In episode k, for h = H-1, ..., 0::

    for every breakpoint x_j = V_{h+1}(s_j), j = 1..S:
        lower_j(s, a) = max{ <phi_{f_j}(s,a), theta_hat> - beta_k ||phi_{f_j}(s,a)||_{Sigma^-1}, 0 }
    Q_h(s, a) = min{ r(s, a) + max_j [ x_j - lower_j(s, a) / alpha ],  H - h }
    V_h(s) = max_a Q_h(s, a),  pi_h(s) = argmax_a (ties -> smallest index)

The map x -> x - E[(x - V)^+]/alpha is concave and piecewise linear with kinks at the values
V(s'), so on a finite state space its sup is attained at one of the S breakpoints: enumerating
them is the exact CVaR (the paper's epsilon-net over x in [0, H] is needed for its polynomial-time
claim on general state spaces; here it is not an approximation). With theta_hat = theta and
beta = 0 the backup is exactly iterated-CVaR value iteration (tested against
:func:`theorylab.algorithms.risk.iterated_cvar_planning` to 1e-12; at alpha = 1 against
risk-neutral backward induction).

CVaR-adapted ridge regression [M]: after the episode, for every step h with (s_h, a_h, s_{h+1}),
the regressor is ``phi_f(s_h, a_h)`` and the target ``f(s_{h+1})`` for
``f = (x_hat - V_{h+1})^+``, x_hat the breakpoint the plan chose at (s_h, a_h); Sigma = lambda I +
sum of the regressor outer products (Sherman-Morrison), theta_hat = Sigma^-1 sum (regressor
target). Whatever the regressors, the self-normalised bound (Abbasi-Yadkori et al. 2011, Thm 2)
gives, with the targets in [0, H] (noise sub-Gaussian with sigma = H/2),
``||theta||_2 <= S_theta`` and ``||phi||_2 <= L`` (L = H max_{s,a} ||sum_t phi(t|s,a)||_2 for a
nonnegative basis)::

    beta_k = bonus_scale * [ (H/2) sqrt( 2 log(1/delta) + d log(1 + n L^2 / (d lambda)) )
                             + sqrt(lambda) S_theta ],            n = (k - 1) H regressions

(:func:`icvar_l_beta`). S_theta = 1 for a simplex-weight basis (``linear-mixture`` family) and
sqrt(S A) for the tabular basis. The CVaR bonus is ``beta ||phi_f|| / alpha``: the 1/alpha of the
dual form is where the alpha^-1 factors of Theorem 1 come from.

ICVaR-HF as implemented (:class:`ICVaRHF`) [M]: rewards are unknown and are learned from one
trajectory-pair comparison per episode (episode k's trajectory against episode k-1's), drawn from
a Bradley-Terry-Luce oracle on the cumulative rewards, ``P(tau_k > tau_{k-1}) =
sigmoid(R(tau_k) - R(tau_{k-1}))`` (the paper's "cumulative-reward-based comparison feedback";
:func:`btl_oracle` is the environment side: the learner sees only the 1-bit label). The reward is
tabular, ``r = <e_(s,a), theta_r>``, the trajectory feature the visit counts; comparisons
identify theta_r only up to a shift, so it is fitted in the sum-zero set by the constrained BTL MLE
of :mod:`theorylab.algorithms.preference.mle` (norm bound ``sqrt(S A)``, at least the norm of
``r - mean(r)``). Optimism in the reward [M]: ``r_tilde(s, a) = clip(theta_r_hat(s,a) + gamma
||Q^T e_(s,a)||_{M^-1}, -1, 1) + 1`` with Q an orthonormal basis of 1^perp and ``M = lambda I +
sum Q^T x x^T Q`` over the comparison differences x; ``gamma = reward_bonus_scale * sqrt(d_R + log
(1/delta)) / kappa``, kappa = 1 / (2 + e^H + e^-H) (the BTL curvature over return differences in
[-H, H]; the form of Zhu, Jordan, Jiao 2023's radius, its constant not read). The +1 shift keeps
r_tilde in [0, 2] (the level of r is not identified, and a common shift changes no policy's
ranking: CVaR is translation-equivariant); the value range is then 2H (cap 2 (H - h) and 2H in
beta). The paper's ICVaR-HF maximises the optimistic value over a reward confidence set; the
per-pair bonus above is the linear-bandit relaxation of that step.

Deviations: ICVaR-HF refits the BTL MLE after each of the first ``REFIT_ALWAYS`` = 20
comparisons and then only when their number has grown by ``REFIT_GROWTH`` = 1.1 (a lazy,
geometric schedule: O(log K) refits, as in rarely-switching bandit algorithms; the Gram matrix
and the bonus are updated every episode). ``bonus_scale`` / ``reward_bonus_scale`` (default 1:
the radii above) multiply the radii; any value < 1 voids the guarantee and the claims that use
one say so. Known rewards are used by ICVaR-L when the learner is told them, else their
empirical means (1 for unvisited pairs). ICVaR-HF breaks ties of its optimistic Q at random and
plans without the H - h cap (see :meth:`ICVaRHF.argmax`). Stationary transitions only (the
linear mixture model has one theta): stage-dependent environments raise ValueError.

Bounds carried: ``chen2024-icvar-l-thm1`` (upper), ``chen2024-icvar-l-lower`` (lower),
none for ICVaR-HF (its bound is in eluder dimensions D_P, D_R, which have no card). Measured
(claims ``icvar-l-linear-mixture`` and ``icvar-hf-preference-regret``; the latter checks
sublinear regret on a large-gap instance only): see docs/algorithms/icvar-l.md. The d-dependence
(claim part (v), bonus_scale 0.1): on the hypercube ``icvar-linear-hypercube`` (d = 2m in
{2, ..., 10}, a fixed CVaR gap of 0.16 per wrong coordinate) R(K = 1500) grows like d^1.42 (95%
bootstrap CI [1.30, 1.54]; 1.46 [1.37, 1.56] at K = 3000): above the lower bound's d-power 1 and
below an OFUL-type gap-dependent power 2 ([A]; Theorem 1's minimax power, at most 1, is for the
minimax gap, not a fixed one). On the 0.187-gap
instance ``linear-mixture:S=2,A=2,d=2,H=2,seed=212,concentration=0.3`` (alpha = 0.25,
paper-form radii), linear at K = 20000 (slope 1.05), the compiled loop
(:mod:`.whole_run_icvar_hf`) ran K = 10^6 x 4 seeds: the regret bends after a burn-in of about
10^4 episodes (0.19 per episode over (10^3, 10^4], 0.023 over (10^4, 10^5], 0.0004 over
(10^5, 10^6]; R(10^6) = 4379; log-log slope over [3982, 10^6] 0.240, CI [0.208, 0.272]).
Root seed 1: 0.021 over (10^4, 10^5], 0.0005 over (10^5, 10^6], slope 0.242 [0.200, 0.273].

Compiled loop: ``tl.run(..., loop="compiled")`` (and ``"auto"`` from 20,000 seed-episodes)
runs ICVaR-HF in :mod:`.whole_run_icvar_hf` (the refits stay in Python, by ``btl_mle``): the
regret, returns, comparisons and labels bit for bit the Python loop's, the planned values to
round-off; unless a mutation has replaced one of the functions below
(:func:`compiled_loop_mirrors`).

State arrays carry a leading seed axis B; seeds are independent (no cross-seed randomness), so a
seed's run is the same alone or in a batch.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from theorylab.agent import EnvSpec
from theorylab.algorithms.linear.gram import elliptical_norm_sq, sherman_morrison
from theorylab.algorithms.online.lazy_plan import LazyPlan
from theorylab.algorithms.registry import register
from theorylab.algorithms.risk.iterated_cvar import _check_alpha
from theorylab.algorithms.risk.objectives import iterated_cvar_of
from theorylab.algorithms.risk.static_cvar_planning import first_argmax
from theorylab.mdps.linear_mixture import tabular_basis, value_features


def icvar_l_beta(
    d: int, H: float, n: int, lam: float, delta: float, L: float, theta_norm: float
) -> float:
    """``(H/2) sqrt(2 log(1/delta) + d log(1 + n L^2 / (d lam))) + sqrt(lam) theta_norm``:
    the self-normalised radius of the CVaR-adapted ridge regression (module docstring, [M])."""
    return (
        0.5 * H * math.sqrt(2.0 * math.log(1.0 / delta) + d * math.log(1.0 + n * L * L / (d * lam)))
        + math.sqrt(lam) * theta_norm
    )


def optimistic_cvar_backup(
    basis: np.ndarray,
    theta_hat: np.ndarray,
    inv: np.ndarray,
    V: np.ndarray,
    alpha: float,
    width: float,
) -> tuple[np.ndarray, np.ndarray]:
    """``max_j [x_j - max(<phi_fj, theta_hat> - width ||phi_fj||_{inv}, 0) / alpha]`` at every
    pair, the breakpoints ``x_j = V(s_j)`` and ``f_j = (x_j - V)^+``.

    basis ``(d, S, A, S')``; theta_hat ``(B, d)``; inv ``(B, d, d)``; V ``(B, S')``; width the
    radius beta (0 with the true theta: exact iterated-CVaR backup). Returns the optimistic CVaR
    ``(B, S, A)`` and the chosen breakpoint index ``(B, S, A)`` (ties -> smallest index).
    """
    f = np.maximum(V[:, :, None] - V[:, None, :], 0.0)  # (B, J, S'): f_j = (x_j - V)^+
    phi = value_features(basis, f)  # (B, J, S, A, d)
    B, J, S, A, d = phi.shape
    mean = np.einsum("bjsai,bi->bjsa", phi, theta_hat)  # (B, J, S, A)
    lower = mean
    if width > 0:
        norm = np.sqrt(elliptical_norm_sq(inv, phi.reshape(B, J * S * A, d))).reshape(B, J, S, A)
        lower = mean - width * norm
    g = V[:, :, None, None] - np.maximum(lower, 0.0) / alpha  # (B, J, S, A)
    j = first_argmax(g, axis=1)  # (B, S, A)
    return np.take_along_axis(g, j[:, None], axis=1)[:, 0], j


def resolve_basis(env: EnvSpec, basis) -> tuple[np.ndarray, float]:
    """The basis ``(d, S, A, S')`` and the norm bound S_theta: a given array (simplex weights:
    S_theta = 1), an MDP spec string naming a linear mixture MDP, or None (the tabular basis,
    S_theta = sqrt(S A))."""
    if basis is None:
        return tabular_basis(env.S, env.A), math.sqrt(env.S * env.A)
    if isinstance(basis, str):
        from theorylab.algorithms.linear.features import mdp_spec
        from theorylab.mdps import make

        mdp = make(mdp_spec(basis))
        if not hasattr(mdp, "basis"):
            raise ValueError(f"icvar-l: basis={basis!r} names an MDP that is no linear mixture")
        basis = mdp.basis
    arr = np.asarray(basis, dtype=np.float64)
    if arr.ndim != 4 or arr.shape[1:] != (env.S, env.A, env.S):
        raise ValueError(
            f"icvar-l: basis must have shape (d, S, A, S) = (d, {env.S}, {env.A}, {env.S}), "
            f"got {arr.shape}"
        )
    if not np.all(np.isfinite(arr)) or (arr < 0).any():
        raise ValueError("icvar-l: basis must be finite and nonnegative (transition kernels)")
    return arr, 1.0


@register(
    "icvar-l",
    kind="online",
    problem="tabular",
    bounds=("chen2024-icvar-l-thm1", "chen2024-icvar-l-lower"),
    objective=iterated_cvar_of,
    papers=("001#48",),
)
class ICVaRL(LazyPlan):
    """ICVaR-L (Chen et al. 2024; reconstructed, module docstring): optimistic iterated-CVaR
    value iteration on a linear mixture model fitted by CVaR-adapted ridge regression.

    ``value_estimate()`` is the planned ``V_1(mu0)`` (an upper bound on V*_1 on the good event).
    """

    name = "icvar-l"

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs,
        alpha: float = 0.25,
        delta: float = 0.1,
        episodes: int = 1000,
        lam: float = 1.0,
        bonus_scale: float = 1.0,
        basis=None,
    ) -> None:
        alpha = _check_alpha(alpha)
        if alpha == 0.0:
            raise ValueError("icvar-l: alpha = 0 is the worst-path problem: use 'maxwp'")
        if not 0.0 < delta < 1.0:
            raise ValueError(f"icvar-l: delta must lie in (0, 1), got {delta!r}")
        if not (lam > 0 and math.isfinite(lam)):
            raise ValueError(f"icvar-l: lam must be positive and finite, got {lam!r}")
        if not (bonus_scale >= 0 and math.isfinite(bonus_scale)):
            raise ValueError(f"icvar-l: bonus_scale must be finite and >= 0, got {bonus_scale!r}")
        if env.stage_dependent:
            raise ValueError(
                "icvar-l: a linear mixture model has one theta (stationary transitions); this "
                "environment has stage-dependent transitions"
            )
        self.env, self.n_seeds, self.rngs = env, n_seeds, rngs
        self.alpha, self.delta, self.K = alpha, float(delta), int(episodes)
        self.lam, self.bonus_scale = float(lam), float(bonus_scale)
        self.basis, self.theta_norm = resolve_basis(env, basis)
        self.d = self.basis.shape[0]
        self.L_phi = float(np.linalg.norm(self.basis.sum(axis=-1), axis=0).max())  # per unit f
        B, S, A = n_seeds, env.S, env.A
        self.inv = np.broadcast_to(np.eye(self.d) / self.lam, (B, self.d, self.d)).copy()
        self.xy = np.zeros((B, self.d))  # sum of regressor * target
        self.n_regressions = 0
        self.n = np.zeros((B, S, A))
        self.reward_sum = np.zeros((B, S, A))
        self._V: np.ndarray | None = None  # (B, H+1, S)
        self._pi: np.ndarray | None = None  # (B, H, S)
        self._x: np.ndarray | None = None  # (B, H, S, A) chosen breakpoints

    # ------------------------------------------------------------------ quantities
    @property
    def value_range(self) -> float:
        return float(self.env.H)

    @property
    def theta_hat(self) -> np.ndarray:
        """Ridge estimate ``(B, d)``."""
        return np.einsum("bij,bj->bi", self.inv, self.xy)

    @property
    def beta(self) -> float:
        """``bonus_scale * icvar_l_beta(...)`` at the current number of regressions."""
        H = self.value_range
        return self.bonus_scale * icvar_l_beta(
            self.d, H, self.n_regressions, self.lam, self.delta, H * self.L_phi, self.theta_norm
        )

    def cap(self, h: int) -> float:
        """The largest value from stage h on, ``H - h`` (rewards in [0, 1])."""
        return float(self.env.H - h)

    def rewards(self, h: int) -> np.ndarray:
        """Rewards planned with, ``(B, S, A)``: known means, else empirical (1 if unvisited)."""
        if self.env.reward is not None:
            return np.broadcast_to(self.env.reward_at(h), self.n.shape)
        return np.where(self.n > 0, self.reward_sum / np.maximum(self.n, 1), 1.0)

    # ------------------------------------------------------------------ planning
    def _plan(self) -> None:
        B, S, A, H = self.n_seeds, self.env.S, self.env.A, self.env.H
        theta, beta = self.theta_hat, self.beta
        V = np.zeros((B, H + 1, S))
        pi = np.empty((B, H, S), dtype=np.int64)
        xs = np.empty((B, H, S, A), dtype=np.int64)
        for h in range(H - 1, -1, -1):
            tail, xs[:, h] = optimistic_cvar_backup(
                self.basis, theta, self.inv, V[:, h + 1], self.alpha, beta
            )
            Q = np.minimum(self.rewards(h) + tail, self.cap(h))  # (B, S, A)
            pi[:, h] = self.argmax(Q)
            V[:, h] = np.take_along_axis(Q, pi[:, h, :, None], axis=2)[..., 0]
        self._V, self._pi, self._x = V, pi, xs

    def argmax(self, Q: np.ndarray) -> np.ndarray:
        """Greedy actions ``(B, S)`` of ``Q (B, S, A)``: ties -> the smallest index."""
        return first_argmax(Q, axis=2)

    # ------------------------------------------------------------------ learning
    def update(self, traj) -> None:
        if self._V is None:
            self._plan()
        B = self.n_seeds
        b = np.arange(B)
        s, a, s2 = traj.states, traj.actions, traj.next_states  # (B, T)
        np.add.at(self.n, (np.repeat(b, s.shape[1]), s.ravel(), a.ravel()), 1)
        np.add.at(self.reward_sum, (np.repeat(b, s.shape[1]), s.ravel(), a.ravel()),
                  traj.rewards.ravel())  # fmt: skip
        for h in range(s.shape[1]):
            Vn = self._V[:, h + 1]  # (B, S')
            x = np.take_along_axis(Vn, self._x[b, h, s[:, h], a[:, h]][:, None], axis=1)  # (B, 1)
            f = np.maximum(x - Vn, 0.0)  # (B, S')
            X = np.einsum("ibt,bt->bi", self.basis[:, s[:, h], a[:, h], :], f)  # (B, d)
            y = f[b, s2[:, h]]  # (B,)
            sherman_morrison(self.inv, X)
            self.xy += X * y[:, None]
        self.n_regressions += s.shape[1]
        self._x = None
        self.forget_plan()


REFIT_ALWAYS = 20
"""ICVaR-HF refits the reward MLE after every comparison up to this many ..."""
REFIT_GROWTH = 1.1
"""... and afterwards whenever the number of comparisons has grown by this factor."""


def btl_oracle(new_returns: np.ndarray, old_returns: np.ndarray, rngs) -> np.ndarray:
    """The simulated human: ``1`` w.p. ``sigmoid(R_new - R_old)`` per seed (BTL on returns)."""
    p = 1.0 / (1.0 + np.exp(-(np.asarray(new_returns) - np.asarray(old_returns))))
    return np.array([float(g.random() < pi) for g, pi in zip(rngs, p, strict=True)])


def sum_zero_frame(n: int) -> np.ndarray:
    """An orthonormal basis ``(n, n-1)`` of the sum-zero subspace (the preference MLE's)."""
    from theorylab.algorithms.preference.mle import sum_zero_basis

    return sum_zero_basis(n)


@register(
    "icvar-hf",
    kind="online",
    problem="tabular",
    bounds=(),
    objective=iterated_cvar_of,
    papers=("001#48",),
)
class ICVaRHF(ICVaRL):
    """ICVaR-HF (Chen et al. 2024; reconstructed, module docstring): ICVaR-L's transition learning
    with the reward learned from BTL trajectory comparisons (sum-zero MLE + elliptical bonus)."""

    name = "icvar-hf"

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs,
        alpha: float = 0.25,
        delta: float = 0.1,
        episodes: int = 1000,
        lam: float = 1.0,
        bonus_scale: float = 1.0,
        reward_bonus_scale: float = 1.0,
        basis=None,
    ) -> None:
        if not (reward_bonus_scale >= 0 and math.isfinite(reward_bonus_scale)):
            raise ValueError(
                f"icvar-hf: reward_bonus_scale must be finite and >= 0, got {reward_bonus_scale!r}"
            )
        blind = EnvSpec(env.S, env.A, env.H, None, env.mu0, env.stage_dependent)
        super().__init__(blind, n_seeds, rngs, alpha, delta, episodes, lam, bonus_scale, basis)
        self.reward_bonus_scale = float(reward_bonus_scale)
        dR = env.S * env.A
        self.frame = sum_zero_frame(dR)  # (dR, dR-1)
        self.M_inv = np.broadcast_to(np.eye(dR - 1) / lam, (n_seeds, dR - 1, dR - 1)).copy()
        self.diffs: list[np.ndarray] = []  # (B, dR) per comparison
        self.labels: list[np.ndarray] = []  # (B,)
        self._prev: tuple[np.ndarray, np.ndarray] | None = None  # (features (B, dR), returns)
        self.theta_r = np.zeros((n_seeds, dR))
        self._fitted_n = 0

    @property
    def value_range(self) -> float:
        return 2.0 * self.env.H

    def cap(self, h: int) -> float:
        """No cap: with every optimistic reward at its clip level, a cap on Q ties all actions
        and smallest-index tie-breaking never tries the others (measured: linear regret)."""
        return math.inf

    def argmax(self, Q: np.ndarray) -> np.ndarray:
        """Greedy actions, ties broken uniformly at random (each seed its own generator): while
        the reward bonus saturates, the optimistic Q ties, and a fixed tie-break would replay
        the same start pair forever, whose reward comparisons of two such trajectories cannot
        identify (their visit counts cancel in the difference; measured: linear regret)."""
        hi = Q.max(axis=2, keepdims=True)
        tied = Q >= hi - 1e-12 * (1.0 + np.abs(hi))  # (B, S, A)
        u = np.stack([g.random(Q.shape[1:]) for g in self.rngs])  # (B, S, A)
        return np.argmax(np.where(tied, u, -1.0), axis=2)

    @property
    def gamma(self) -> float:
        """``reward_bonus_scale * sqrt(d_R + log(1/delta)) / kappa``, kappa = 1/(2+e^H+e^-H)."""
        H, dR = self.env.H, self.env.S * self.env.A
        kappa = 1.0 / (2.0 + math.exp(H) + math.exp(-H))
        return self.reward_bonus_scale * math.sqrt(dR + math.log(1.0 / self.delta)) / kappa

    def rewards(self, h: int) -> np.ndarray:
        """``clip(theta_r_hat + gamma ||Q^T e||_{M^-1}, -1, 1) + 1``, ``(B, S, A)``."""
        B, S, A = self.n_seeds, self.env.S, self.env.A
        width = np.sqrt(elliptical_norm_sq(self.M_inv, self.frame))  # (B, dR): rows Q^T e_i
        r = np.clip(self.theta_r + self.gamma * width, -1.0, 1.0) + 1.0
        return r.reshape(B, S, A)

    def update(self, traj) -> None:
        from theorylab.algorithms.preference.mle import btl_mle

        B, S, A = self.n_seeds, self.env.S, self.env.A
        feats = np.zeros((B, S * A))
        b = np.repeat(np.arange(B), traj.states.shape[1])
        np.add.at(feats, (b, (traj.states * A + traj.actions).ravel()), 1.0)
        returns = traj.rewards.sum(axis=1)  # seen by the oracle only
        hidden = dataclasses.replace(traj, rewards=np.zeros_like(traj.rewards))
        super().update(hidden)  # transitions (ICVaR-L); rewards are not seen
        if self._prev is not None:
            x = feats - self._prev[0]  # (B, dR)
            self.diffs.append(x)
            self.labels.append(btl_oracle(returns, self._prev[1], self.rngs))
            sherman_morrison(self.M_inv, x @ self.frame)
            n = len(self.labels)
            if n <= REFIT_ALWAYS or n >= REFIT_GROWTH * self._fitted_n:  # lazy refits
                X = np.stack(self.diffs, axis=1)  # (B, n, dR)
                Y = np.stack(self.labels, axis=1)  # (B, n)
                self.theta_r = btl_mle(X, Y, math.sqrt(S * A))
                self._fitted_n = n
        self._prev = (feats, returns)


_MIRRORED = tuple(
    (owner, name, vars(owner)[name])
    for owner, names in (
        (ICVaRL, ("_plan", "update", "beta")),
        (ICVaRHF, ("argmax", "gamma", "rewards", "update", "cap", "value_range")),
    )
    for name in names
) + tuple(
    (None, name, globals()[name])
    for name in ("btl_oracle", "optimistic_cvar_backup", "icvar_l_beta", "sherman_morrison")
)
"""What the compiled ICVaR-HF loop (``whole_run_icvar_hf.py``) re-implements, as defined here."""


def compiled_loop_mirrors() -> bool:
    """Whether every function the compiled ICVaR-HF loop re-implements is still this module's
    own: a mutation (``validations/icvar_mutations.py``) replaces one, and then ``loop="auto"``
    takes the Python loop, which the mutation reaches, and ``loop="compiled"`` is refused."""
    here = globals()
    return all(
        (here.get(name) if owner is None else vars(owner).get(name)) is original
        for owner, name, original in _MIRRORED
    )
