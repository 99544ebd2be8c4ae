r"""Non-dominated policies against a finite set of observation attacks, and EXP3 over them.

Seed row ``seed-catalogue-002-004.md#D3``: X. Liu, C. Deng, Y. Sun, Y. Liang, F. Huang, "Beyond
Worst-case Attacks: Robust RL with Adaptive Defense via Non-dominated Policies" (ICLR 2024,
arXiv:2402.12673; the PROTECTED framework).

What was read [V] (the abstract, the project page and the caption of the paper's Figure 1,
through the search tool): test-time defence against state-adversarial attacks is posed as regret
minimisation against the best policy of a class; sublinear regret is hard for a continuous class
Pi, so a finite class Pi~ is built at training time by iteratively discovering *non-dominated*
policies, where "dominated policies are those that are outperformed by at least one (mixed)
policy in Pi~ across the specified range of attackers"; at test time an adversarial-bandit
subroutine adapts the weights of the policies of Pi~.

Reconstructed [A] (the exact tabular version the catalogue row asks for, not the paper's deep
iterative discovery): a discounted tabular MDP; a finite set of m *observation attacks*, maps
nu: S -> S (row 0 the identity, "no attack"), under which a deterministic policy pi plays
pi(nu(s)) in state s (the state-adversarial model); J(pi, nu) = V^{pi o nu}(mu0), exact by a
linear solve, for all A^S deterministic policies.

* Filter (:func:`nondominated`): pi is kept iff it is the *unique* best response to some attack
  distribution w in the simplex, i.e. the LP ``max_{w, t} t s.t. w . (J(pi) - J(pi')) >= t for
  every pi' with J(pi') != J(pi)`` has t* > tol (one representative per repeated value vector).
  These are the exposed vertices of the upper hull of {J(pi)}: a policy outperformed by a
  mixture of others is never a unique best response (LP duality), and max_{kept} w . J =
  max_{all} w . J for every w, so the best fixed policy in hindsight against any attack
  sequence is in the kept set (the "near-optimal and minimal" class, with delta = 0 here).
* Test time (:func:`exp3`): EXP3 (Auer, Cesa-Bianchi, Freund & Schapire 2002, Fig. 1 and
  Corollary 3.2 [M, the standard algorithm, written from the paper's statement]) over the K
  kept policies, against an oblivious attack sequence nu_1..nu_T: p_i = (1 - g) w_i / sum w + g /
  K; play I_t ~ p; observe x_{I_t}; w_{I_t} *= exp(g x_{I_t} / (p_{I_t} K)). With g =
  min(1, sqrt(K ln K / ((e - 1) T))) the expected regret against the best fixed arm is
  <= 2 sqrt(e - 1) sqrt(T K ln K) (Corollary 3.2 with g >= G_max, g = T): the constant pinned in
  ``tests/test_robust.py``. The reward of a round is J(pi, nu_t) rescaled affinely to [0, 1] by
  the smallest and largest J over all policies x attacks (a known range), observed exactly (no
  episode sampling: the bandit's noise is its own randomisation).

Deviations: the paper's training-time discovery (iterated best responses against learned
attackers) is replaced by the exact LP filter over all deterministic policies; attacks are maps
of the state, not l_p perturbations of a continuous observation.

Registered as ``nondominated-exp3`` (kind ``policy-optimization``; ``iterations`` = T EXP3
rounds, numbered 0..T): the path's objective[t] is the seed-mean expected value sum_i p_t(i)
J(pi_i, nu_t) of round t, ``regularised`` the seed-mean cumulative expected regret up to t
against the best fixed policy over *all* deterministic policies (brute force), ``target_gap``
that regret / (t + 1), ``target_value`` the best fixed policy's mean value, ``policies`` the
seed-mean distributions p_t (T + 1, K), config the kept set and the printed bound.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import linprog

from theorylab.algorithms.policy_optimization.path import PolicyPath, check_iterations
from theorylab.algorithms.registry import register
from theorylab.algorithms.robust.finite_sets import all_deterministic_policies, static_values

PAPERS = ("002-004#D3",)
SCHEDULES = ("random", "blocks")
EXP3_CONSTANT = 2.0 * math.sqrt(math.e - 1.0)  # Auer et al. 2002, Corollary 3.2


def observation_attacks(S: int, m: int, strength: float, seed: int) -> np.ndarray:
    """(m, S) int: the identity map and m - 1 attacks, each moving every state's observation to a
    uniformly drawn other state with probability ``strength``."""
    rng = np.random.default_rng(seed)
    out = [np.arange(S)]
    for _ in range(m - 1):
        nu = np.arange(S)
        moved = rng.random(S) < strength
        for s in np.flatnonzero(moved):
            nu[s] = (s + 1 + rng.integers(S - 1)) % S
        out.append(nu)
    return np.stack(out)


def attack_values(mdp, policies: np.ndarray, attacks: np.ndarray) -> np.ndarray:
    """J(pi, nu) (B, m) = V^{pi o nu}(mu0) for deterministic policies (B, S) and attacks (m, S)."""
    composed = policies[:, attacks]  # (B, m, S): pi(nu(s))
    B, m, S = composed.shape
    P = mdp.dense_P()[None]  # (1, S, A, S)
    return static_values(mdp, P, composed.reshape(B * m, S))[:, 0].reshape(B, m)


def unique_best_response_margin(values: np.ndarray, i: int) -> tuple[float, np.ndarray]:
    """max over w in the simplex of min_{j: J_j != J_i} w . (J_i - J_j), and the maximising w:
    > 0 iff policy i is the unique best response to some attack distribution."""
    others = values[np.any(np.abs(values - values[i]) > 1e-12, axis=1)]  # (B', m)
    m = values.shape[1]
    if others.shape[0] == 0:
        return math.inf, np.full(m, 1.0 / m)
    D = values[i][None] - others  # (B', m)
    # variables (w_1..w_m, t); maximise t: minimise -t
    c = np.zeros(m + 1)
    c[-1] = -1.0
    A_ub = np.hstack([-D, np.ones((D.shape[0], 1))])  # t - w . D_j <= 0
    b_ub = np.zeros(D.shape[0])
    A_eq = np.hstack([np.ones((1, m)), np.zeros((1, 1))])
    bounds = [(0.0, 1.0)] * m + [(None, None)]
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=[1.0], bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"nondominated: the margin LP of policy {i} failed: {res.message}")
    return float(-res.fun), np.asarray(res.x[:m])


def nondominated(values: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """Indices (K,) of the policies kept by the filter (module docstring): one representative
    per distinct value vector, kept iff its unique-best-response margin exceeds tol."""
    _, first = np.unique(np.round(values, 12), axis=0, return_index=True)
    kept = [int(i) for i in np.sort(first) if unique_best_response_margin(values, int(i))[0] > tol]
    return np.array(kept, dtype=np.int64)


def attack_schedule(m: int, T: int, schedule: str, seed: int) -> np.ndarray:
    """(T,) the attack of each round: ``random`` (i.i.d. uniform) or ``blocks`` (m equal blocks
    in the order 0..m-1)."""
    if schedule == "random":
        return np.random.default_rng(seed).integers(m, size=T)
    return np.minimum(np.arange(T) * m // T, m - 1)


def exp3_gamma(K: int, T: int) -> float:
    """Corollary 3.2's exploration rate min(1, sqrt(K ln K / ((e - 1) T)))."""
    return min(1.0, math.sqrt(K * math.log(K) / ((math.e - 1.0) * T)))


def exp3_bound(K: int, T: int) -> float:
    """Corollary 3.2: expected regret <= 2 sqrt(e - 1) sqrt(T K ln K)."""
    return EXP3_CONSTANT * math.sqrt(T * K * math.log(K))


def exp3(x: np.ndarray, n_seeds: int, seed: int, gamma: float | None = None) -> np.ndarray:
    """EXP3 on the reward table x (T, K) in [0, 1], n_seeds independent runs: the distributions
    p_t (n_seeds, T, K) it played from."""
    T, K = x.shape
    g = exp3_gamma(K, T) if gamma is None else float(gamma)
    rng = np.random.default_rng(seed)
    logw = np.zeros((n_seeds, K))
    rows = np.arange(n_seeds)
    out = np.empty((n_seeds, T, K))
    for t in range(T):
        w = np.exp(logw - logw.max(axis=1, keepdims=True))
        p = (1.0 - g) * w / w.sum(axis=1, keepdims=True) + g / K  # (n, K)
        out[:, t] = p
        arm = (p.cumsum(axis=1) > rng.random((n_seeds, 1))).argmax(axis=1)  # (n,)
        logw[rows, arm] += g * x[t, arm] / (p[rows, arm] * K)
    return out


def _check_int(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"nondominated-exp3: {name} must be an integer >= {low}, got {value!r}")
    return int(value)


@register(
    "nondominated-exp3",
    kind="policy-optimization",
    problem="tabular-discounted",
    bounds=("auer2002-exp3-cor3.2",),
    papers=PAPERS,
)
def nondominated_exp3_path(
    problem,
    iterations,
    attacks: int = 4,
    strength: float = 0.5,
    schedule: str = "random",
    attack_seed: int = 0,
    exp3_seeds: int = 8,
    exp3_seed: int = 0,
):
    """Non-dominated filter + EXP3 (Liu, Deng, Sun, Liang & Huang 2024) on observation attacks."""
    T = check_iterations("nondominated-exp3", iterations) + 1
    m = _check_int("attacks", attacks, 1)
    n = _check_int("exp3_seeds", exp3_seeds, 1)
    if not (isinstance(strength, (int, float)) and not isinstance(strength, bool)
            and 0 <= strength <= 1):  # fmt: skip
        raise ValueError(
            f"nondominated-exp3: strength must be a number in [0, 1], got {strength!r}"
        )
    if schedule not in SCHEDULES:
        raise ValueError(f"nondominated-exp3: schedule must be random or blocks, got {schedule!r}")
    if problem.S < 2 or problem.A**problem.S > 1 << 14:
        raise ValueError(
            f"nondominated-exp3 enumerates the A^S = {problem.A}^{problem.S} deterministic "
            "policies; give a model with S >= 2 and A^S <= 16384"
        )
    pols = all_deterministic_policies(problem.S, problem.A)
    nus = observation_attacks(problem.S, m, float(strength), int(attack_seed))
    J = attack_values(problem, pols, nus)  # (B, m)
    kept = nondominated(J)
    seq = attack_schedule(m, T, schedule, int(attack_seed))  # (T,)
    lo, hi = float(J.min()), float(J.max())
    scale = hi - lo if hi > lo else 1.0
    x_all = (J[:, seq].T - lo) / scale  # (T, B) rescaled rewards of every policy
    K = int(kept.size)
    if K == 1:
        p = np.ones((n, T, 1))
    else:
        p = exp3(x_all[:, kept], n, int(exp3_seed))
    played = (p * x_all[None, :, kept]).sum(axis=2)  # (n, T) expected reward per round
    best = int(np.argmax(x_all.sum(axis=0)))  # best fixed policy over all, brute force
    regret = np.cumsum(x_all[:, best][None] - played, axis=1).mean(axis=0)  # (T,)
    p_mean = p.mean(axis=0)
    entropy = -(np.where(p_mean > 0, p_mean * np.log(np.where(p_mean > 0, p_mean, 1.0)), 0.0)
                ).sum(axis=1)  # fmt: skip
    return PolicyPath(
        objective=lo + scale * played.mean(axis=0),
        regularised=regret,
        entropy=entropy,
        target_gap=regret / np.arange(1, T + 1),
        target_value=float(lo + scale * x_all[:, best].mean()),
        policies=p_mean,
        config={
            "attacks": m,
            "strength": float(strength),
            "schedule": schedule,
            "attack_seed": int(attack_seed),
            "exp3_seeds": n,
            "kept": kept.tolist(),
            "kept_policies": pols[kept].tolist(),
            "policies_total": int(pols.shape[0]),
            "best_fixed": int(best),
            "best_fixed_kept": bool(best in set(kept.tolist()))
            or bool(np.isclose(x_all[:, kept].sum(axis=0).max(), x_all[:, best].sum(), atol=1e-9)),
            "reward_range": [lo, hi],
            "rounds": T,
            "exp3_gamma": exp3_gamma(K, T) if K > 1 else 0.0,
            "exp3_bound": exp3_bound(K, T) if K > 1 else 0.0,
            "gamma": float(problem.gamma),
        },
    )
