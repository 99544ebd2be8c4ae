r"""Offline-RL instances: where naive planning fails, where the rates show, and a linear MDP.

Three registered families, each with a known data story (the dataset itself is drawn by
``theorylab.algorithms.offline.make_dataset`` from a behaviour mixture ``w pi* + (1 - w) other``).

``tempting-arms`` -- partial coverage: naive model-based VI fails, pessimism succeeds
----------------------------------------------------------------------------------------
States: 0 = start, 1 = lane, 2 = jackpot, 3 = dud. Actions: A = K + 1; actions 0..K-1 are the K
*tempting* arms, action K is the *safe* arm (the last index, so that no tie-breaking rule that
prefers small indices can favour it).

* start, safe arm: to lane with probability 1, reward 0;
* start, tempting arm i: to jackpot with probability p, to dud with 1 - p, reward 0;
* lane / jackpot / dud are absorbing for every action and pay r_safe / 1 / 0 per step.

Finite horizon H (``gamma = 0``): V*(start) = (H - 1) r_safe, a tempting arm is worth (H - 1) p;
discounted (``gamma > 0``, no horizon): gamma r_safe / (1 - gamma) against gamma p / (1 - gamma).
With p < r_safe the safe arm is the unique optimal action at start and every tempting arm costs
``Delta = (H - 1)(r_safe - p)`` (resp. ``gamma (r_safe - p) / (1 - gamma)``).

The data: ``tempting_arms_coverage(N, m, ...)`` gives the coverage weight w at which the behaviour
mixture ``w pi* + (1 - w) uniform`` tries each tempting arm m times in expectation (m = 2 by
default) -- the long tail of rarely tried actions. Then C* -> 1 as N grows (near-expert data), yet:

*Claim.* Naive model-based VI (certainty equivalence, ``naive-vi``) has expected sub-optimality
at least ``(1 - (1 - q_m)^K) Delta - o(1)`` for every N, where
``q_m = sum_{n >= 1} e^{-m} m^n / n! * Pr[Bin(n, p) / n >= r_safe]`` (``naive_failure_limit``).

*Proof sketch.* Rewards and the lane are deterministic, so naive VI's estimates of the safe arm and
of the jackpot value are exact once those states appear in the data (probability -> 1); its Q-value
of tempting arm i is the empirical jackpot frequency j_i / n_i times the jackpot value. It picks a
tempting arm whenever some arm has j_i / n_i >= r_safe (ties go to the smaller index, a tempting
arm). As N -> infinity with m fixed the counts n_i become independent Poisson(m) (Poisson limit of
the multinomial), so that event has probability 1 - (1 - q_m)^K > 0 -- a constant, not a function
of N. With K = 20, m = 2, p = 0.3, r_safe = 0.6: q_m = 0.153 and the failure probability is 0.964.
The data never shows that the tempting arms are bad: each is tried twice, and with K of them some
arm looks at least as good as the safe one by luck (the winner's curse over a long tail).

Pessimism: a tempting arm's penalty with n_i ~ 2 samples is of the order of the value range (its
lower confidence bound is clipped at 0), while the safe arm, tried about N / H times, has a
penalty of order 1/sqrt(N) (Hoeffding) or log(N)/N (Bernstein, zero variance): once the safe
arm's lower bound is positive, every pessimistic algorithm picks it, so its sub-optimality is
exactly 0 for all large N. *Why N-dependent coverage is necessary* (a fact worth stating): for a
fixed data distribution, naive VI is consistent whenever C* < infinity -- its estimates converge
to the MDP restricted to the covered pairs, whose optimal value equals V* because pi* is covered --
so "naive fails for every N" needs the long tail to thin out as N grows, which is exactly what
m fixed does (the same device as Rashidinejad et al.'s near-expert lower bounds).

``multiscale-bandit`` -- a fixed instance on which the minimax rates are visible
--------------------------------------------------------------------------------
A contextual bandit run as an MDP: every step a context s ~ rho is drawn regardless of the action
(``P(s'|s, a) = rho(s')``, ``mu0 = rho``), two actions, r(s, a*) = (1 + Delta_s) / 2 and
r(s, other) = (1 - Delta_s) / 2 (Bernoulli rewards by default; a* alternates between 0 and 1 over
contexts). Two groups of contexts:

* *gap scales*: ``n_gap`` contexts of equal mass ``p_gap / n_gap`` with gaps
  ``Delta_k = gap_max * gap_ratio^k`` (log-uniform);
* *mass scales*: ``n_mass`` contexts with gap ``mass_gap`` and masses proportional to
  ``mass_ratio^k`` (log-uniform), total ``1 - p_gap``.

``junk=True`` adds one context that the environment never draws (rho = 0, rewards 0): a data
distribution may put mass there (``make_dataset(..., data_distribution=mu)``), which shifts the
data away from pi*'s contexts -- covariate shift. ``covariate_shift_distribution(mdp, C)`` gives the
data distribution ``mu(s, a) = rho(s) / (2 c)`` on the real contexts (both actions alike) and
``1 - 1/c`` on the junk context, whose concentrability is exactly C* = 2 c: the *only* thing that
changes with C* is the amount of data at pi*'s contexts (N / C*), with no change in which action
is better covered.

Why: on a fixed instance with one gap Delta, every sensible algorithm's sub-optimality eventually
decays exponentially (once the confidence width drops below Delta), so no power law in N is
visible; the minimax rates are statements about the hardest instance *at each N*. Putting one
context at every scale makes the hardest scale present at every N of a sweep: a context with gap
Delta is mis-ranked while ``Delta < c sqrt(C* / (N rho))`` (penalty bias on generic data, noise
otherwise), which summed over log-uniform gaps gives ~ sqrt(C* / N) (the sqrt(S C* / N) term of
Rashidinejad et al.); a context of mass rho is unseen (or seen too rarely for its lower bound to
be positive) while ``N rho < c``, which summed over log-uniform masses gives ~ 1/N (the missing-mass
term S (C* - 1) / N of the near-expert regime). Generic data shows the first, near-expert data
(C* close to 1, where a* dominates every context's data) only the second.

``offline-linear`` -- a linear MDP with simplex features (for PEVI and VW-PEVI)
-------------------------------------------------------------------------------
``phi(s, a) ~ Dirichlet(alpha 1_d)`` (on the simplex, so ||phi||_2 <= 1), ``mu_j ~ Dirichlet(1_S)``
for j = 1..d, ``theta ~ U[0, 1]^d``; ``P(s'|s, a) = <phi(s, a), mu(s')>`` and ``r = <phi, theta>``
are then a valid MDP. Returned as a TabularMDP with the features attached as ``mdp.phi (S, A, d)``
(the attribute name of ``theorylab.mdps.linear.LinearMDP``).

Every family takes ``gamma``: 0 (default) means finite horizon H; gamma > 0 makes the instance
discounted (no horizon).
"""

from __future__ import annotations

import math

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.registry import register
from theorylab.mdps.sizes import check_dense_size
from theorylab.mdps.tabular import TabularMDP

START, LANE, JACKPOT, DUD = 0, 1, 2, 3


def _objective_name(H: int | None, gamma: float) -> str:
    """The objective part of a name: ``H=3`` (finite horizon) or ``gamma=0.9`` (discounted: the
    model has no horizon then, so the name does not show one)."""
    return f"gamma={float(gamma)!r}" if gamma > 0 else f"H={H}"


def _objective(H: int, gamma: float) -> dict:
    if not 0.0 <= gamma < 1.0:
        raise InvalidMDPError(f"gamma must lie in [0, 1) (0 = finite horizon), got {gamma}")
    if gamma > 0:
        return {"horizon": None, "gamma": gamma}
    if H < 1:
        raise InvalidMDPError(f"H must be >= 1, got {H}")
    return {"horizon": H, "gamma": None}


@register("tempting-arms")
def tempting_arms(
    K: int = 20, p: float = 0.3, r_safe: float = 0.6, H: int = 3, gamma: float = 0.0
) -> TabularMDP:
    """Partial coverage: K rarely-tried tempting arms (jackpot w.p. p) vs a safe arm (r_safe)."""
    if K < 1:
        raise InvalidMDPError(f"tempting-arms needs K >= 1 tempting arms, got {K}")
    if not (0.0 <= p < r_safe <= 1.0):
        raise InvalidMDPError(
            f"tempting-arms needs 0 <= p < r_safe <= 1, got p={p}, r_safe={r_safe}"
        )
    A = K + 1
    check_dense_size("tempting-arms", f"K={K}", 4, A)
    P = np.zeros((4, A, 4))
    R = np.zeros((4, A))
    P[START, :K, JACKPOT] = p
    P[START, :K, DUD] = 1.0 - p
    P[START, K, LANE] = 1.0
    for s in (LANE, JACKPOT, DUD):
        P[s, :, s] = 1.0
    R[LANE, :] = r_safe
    R[JACKPOT, :] = 1.0
    return TabularMDP(
        P,
        R,
        **_objective(H, gamma),
        name=f"tempting-arms:K={K},p={p},r_safe={r_safe},{_objective_name(H, gamma)}",
        state_names=["start", "lane", "jackpot", "dud"],
    )


def tempting_arms_coverage(
    N: int, m: float = 2.0, K: int = 20, *, H: int | None = 3, gamma: float = 0.0
) -> float:
    """Coverage weight w at which ``w pi* + (1 - w) uniform`` tries each tempting arm m times in
    expectation in N transitions: ``w = 1 - m (K + 1) / n_start`` with n_start = N / H (finite
    horizon: one start visit per episode, or a stage-0 sample w.p. 1/H) or (1 - gamma) N
    (discounted samples: d(start) = 1 - gamma). Raises ValueError if N is too small (w < 0)."""
    n_start = (1.0 - gamma) * N if gamma > 0 else N / H
    w = 1.0 - m * (K + 1) / n_start
    if w < 0:
        raise ValueError(
            f"N = {N} is too small to try each of K = {K} arms only m = {m} times (w = {w:.3f})"
        )
    return w


def naive_failure_limit(
    m: float = 2.0, K: int = 20, p: float = 0.3, r_safe: float = 0.6, n_max: int = 200
) -> float:
    """``1 - (1 - q_m)^K``: the N -> infinity probability that naive VI picks a tempting arm
    (module docstring), with ``q_m = sum_{n>=1} Pois(n; m) Pr[Bin(n, p) >= r_safe n]``."""
    from scipy import stats

    n = np.arange(1, n_max + 1)
    j_min = np.ceil(r_safe * n - 1e-12)  # j / n >= r_safe
    tail = stats.binom.sf(j_min - 1, n, p)
    q = float(np.sum(stats.poisson.pmf(n, m) * tail))
    return 1.0 - (1.0 - q) ** K


@register("multiscale-bandit")
def multiscale_bandit(
    n_gap: int = 12,
    gap_max: float = 1.0,
    gap_ratio: float = 0.5,
    n_mass: int = 20,
    mass_ratio: float = 0.5,
    mass_gap: float = 0.2,
    p_gap: float = 0.5,
    H: int = 1,
    gamma: float = 0.0,
    rewards: str = "bernoulli",
    junk: bool = False,
) -> TabularMDP:
    """Contextual bandit with log-uniform gaps and log-uniform context masses (rate instance)."""
    if n_gap < 0 or n_mass < 0 or n_gap + n_mass < 1:
        raise InvalidMDPError(
            f"need n_gap, n_mass >= 0 and at least one context, got {n_gap}, {n_mass}"
        )
    if not (0 < gap_max <= 1 and 0 < gap_ratio <= 1 and 0 < mass_ratio <= 1 and 0 < mass_gap <= 1):
        raise InvalidMDPError("gaps in (0, 1] and ratios in (0, 1] are required")
    if not 0.0 <= p_gap <= 1.0:
        raise InvalidMDPError(f"p_gap must lie in [0, 1], got {p_gap}")
    if rewards not in ("bernoulli", "deterministic"):
        raise InvalidMDPError(f"rewards must be 'bernoulli' or 'deterministic', got {rewards!r}")
    gaps = [gap_max * gap_ratio**k for k in range(n_gap)] + [mass_gap] * n_mass
    mass_w = np.array([mass_ratio**k for k in range(n_mass)])
    rho = np.concatenate(
        [
            np.full(n_gap, p_gap / n_gap if n_gap else 0.0),
            (1.0 - p_gap) * mass_w / mass_w.sum() if n_mass else np.zeros(0),
        ]
    )
    if n_gap == 0 or n_mass == 0:
        rho = rho / rho.sum()
    S = n_gap + n_mass + int(junk)
    check_dense_size("multiscale-bandit", f"n_gap={n_gap},n_mass={n_mass}", S, 2)
    R = np.zeros((S, 2))  # the junk context (last, rho = 0) pays 0
    for s, gap in enumerate(gaps):
        best = s % 2  # a* alternates over contexts
        R[s, best] = (1.0 + gap) / 2.0
        R[s, 1 - best] = (1.0 - gap) / 2.0
    if junk:
        rho = np.concatenate([rho, [0.0]])
    P = np.broadcast_to(rho, (S, 2, S)).copy()
    return TabularMDP(
        P,
        R,
        rho,
        **_objective(H, gamma),
        reward_model=rewards,
        name=(
            f"multiscale-bandit:n_gap={n_gap},gap_max={gap_max},gap_ratio={gap_ratio},"
            f"n_mass={n_mass},mass_ratio={mass_ratio},mass_gap={mass_gap},p_gap={p_gap},"
            f"{_objective_name(H, gamma)},rewards={rewards},junk={junk}"
        ),
    )


def covariate_shift_distribution(mdp: TabularMDP, C_star: float) -> np.ndarray:
    """Data distribution ``(S, A)`` (or ``(H, S, A)``) with concentrability exactly C* >= 2 on a
    ``multiscale-bandit:junk=true`` instance (module docstring)."""
    if not C_star >= 2.0:
        raise ValueError(f"covariate shift with both actions alike needs C* >= 2, got {C_star}")
    rho = np.asarray(mdp.mu0, dtype=np.float64)
    if rho[-1] != 0.0:
        raise ValueError("the instance needs a junk context (multiscale-bandit:junk=true)")
    c = C_star / 2.0
    mu = np.repeat((rho / c)[:, None] / 2.0, 2, axis=1)  # (S, 2)
    mu[-1, :] = (1.0 - 1.0 / c) / 2.0
    if mdp.horizon is not None:
        return np.broadcast_to(mu, (mdp.horizon, *mu.shape)).copy()
    return mu


@register("offline-linear")
def offline_linear(
    S: int = 20,
    A: int = 4,
    d: int = 4,
    H: int = 4,
    alpha: float = 0.3,
    gamma: float = 0.0,
    seed: int = 0,
) -> TabularMDP:
    """Linear MDP with simplex features phi ~ Dirichlet(alpha); ``mdp.phi`` holds (S, A, d)."""
    if min(S, A, d) < 1:
        raise InvalidMDPError(f"offline-linear needs S, A, d >= 1, got {S}, {A}, {d}")
    check_dense_size("offline-linear", f"S={S},A={A}", S, A)
    if not (alpha > 0 and math.isfinite(alpha)):
        raise InvalidMDPError(f"alpha must be positive, got {alpha}")
    rng = np.random.default_rng(seed)
    # Dirichlet rows via normalised Gamma draws (a row that underflows falls back to uniform)
    g = rng.gamma(alpha, size=(S, A, d))
    tot = g.sum(axis=-1, keepdims=True)
    phi = np.where(tot > 0, g / np.where(tot > 0, tot, 1.0), 1.0 / d)
    mu = rng.gamma(1.0, size=(d, S))
    mu /= mu.sum(axis=1, keepdims=True)
    theta = rng.random(d)
    P = np.einsum("sad,dt->sat", phi, mu)
    P /= P.sum(axis=-1, keepdims=True)  # exact rows up to round-off
    R = np.clip(phi @ theta, 0.0, 1.0)
    mdp = TabularMDP(
        P,
        R,
        **_objective(H, gamma),
        name=(
            f"offline-linear:S={S},A={A},d={d},{_objective_name(H, gamma)},alpha={alpha},"
            f"seed={seed}"
        ),
    )
    mdp.phi = phi  # (S, A, d): the learner's features
    return mdp
