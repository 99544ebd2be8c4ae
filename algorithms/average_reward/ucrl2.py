"""UCRL2 (Jaksch, Ortner & Auer 2010): optimism in the face of uncertainty for average reward.

Seed reference: the anchor of seed-coverage family 8 (issue 30; no catalogue row of its own).
Paper: T. Jaksch, R. Ortner, P. Auer, "Near-optimal regret bounds for reinforcement learning",
JMLR 11 (2010) 1563-1600. What was read: the paper's text was not found in the time box; the
algorithm below is written from the issue's brief (the two radii, doubling epochs, the bound
34 D S sqrt(A T log(T/delta))) and from memory of Figures 1-2 [M]; the radii are as the brief
and later papers (Bourel, Maillard & Talebi 2020, which restate UCRL2) print them [S].

Algorithm (Figure 1) [M/S]. Time t = 1, 2, ..., T; epochs k = 1, 2, ...

1. At the start t_k of epoch k: N_k(s, a) visits before t_k, empirical p_hat_k(.|s, a) and
   r_hat_k(s, a) (zero where N_k = 0). The plausible MDPs M_k are those with
   ``|r~(s,a) - r_hat(s,a)| <= sqrt(7 log(2 S A t_k / delta) / (2 max(1, N_k(s,a))))`` and
   ``||p~(.|s,a) - p_hat(.|s,a)||_1 <= sqrt(14 S log(2 A t_k / delta) / max(1, N_k(s,a)))``
   (:func:`radii`; the constants 14 and 7/2 pinned in tests/test_average_reward.py).
2. Extended value iteration (Figure 2) to accuracy eps_k = 1/sqrt(t_k) (:func:`extended_vi`):
   ``u_(i+1)(s) = max_a [r~(s,a) + max_{p in P(s,a)} p . u_i]`` with r~ = r_hat + its radius,
   the inner max putting ``min(1, p_hat(s'_1) + d/2)`` on the best state s'_1 and removing the
   excess from the worst states; stop when ``sp(u_(i+1) - u_i) < eps_k``; play the greedy
   policy pi~_k.
3. Play pi~_k while ``v_k(s_t, pi~_k(s_t)) < max(1, N_k(s_t, pi~_k(s_t)))`` (v_k: visits in
   epoch k): the count of one pair doubles, then a new epoch starts.

Regret ``Delta(T) = T g* - sum_t r(s_t, a_t)`` with the mean rewards of the pairs played
(pseudo-regret; the learner sees Bernoulli or deterministic draws as the model says). Theorem 2
[S, as the brief states it]: with probability >= 1 - delta, for all T > 1,
``Delta(T) <= 34 D S sqrt(A T log(T / delta))`` (bound card ``jaksch2010-ucrl2-thm2``).

Diagnostics per epoch (``StepRun.diagnostics``, ``(B, K)`` padded with NaN): ``epoch_start``
t_k; ``gain_upper`` / ``gain_lower``, ``max`` / ``min`` of ``u_(i+1) - u_i`` at EVI's stop (the
optimistic model's gain lies between them; on the good event M in M_k, so
``gain_upper >= g*``: the optimism check); ``covered`` 1 when the true model lies in M_k (both
radii hold at every pair: the coverage check); ``evi_iterations``.

Deviations: rewards r~ are not clipped to [0, 1] (the paper's set does not clip) [M]; EVI is
capped at ``evi_cap`` sweeps (default 10^6; a capped epoch is visible in ``evi_iterations``).
The loop is one numba kernel per seed (a Python loop took ~4 us per step; RiverSwim at
T = 10^6 and 20 seeds would take minutes).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from theorylab.algorithms.average_reward.run_record import StepRun, step_grid
from theorylab.algorithms.online.segmented_loop import pcg64_states
from theorylab.algorithms.planning.average_reward import model_arrays
from theorylab.algorithms.registry import register
from theorylab.kernels.pcg64 import pcg64_random

BOUND = "jaksch2010-ucrl2-thm2"


def radius_constants() -> tuple[float, float, float]:
    """``(c_p, c_r, n_power)`` of the radii: L1 ``sqrt(c_p S log(2 A t / delta)) / N^n_power``,
    reward ``sqrt(c_r log(2 S A t / delta)) / N^n_power``; the paper's (14, 7/2, 1/2)."""
    return 14.0, 3.5, 0.5


@njit(cache=True)
def radii(S, A, t, delta, N, c_p, c_r, n_power):
    """The L1 transition radius and the reward radius at time t after N visits."""
    n = max(1.0, N)
    rp = math.sqrt(c_p * S * math.log(2.0 * A * t / delta)) / n**n_power
    rr = math.sqrt(c_r * math.log(2.0 * S * A * t / delta)) / n**n_power
    return rp, rr


@njit(cache=True)
def optimistic_inner(p_hat, d, u, order, p):
    """``max p . u`` over distributions p with ``||p - p_hat||_1 <= d`` (Figure 2's inner
    step); ``order``: states by decreasing u; ``p`` ``(S,)`` scratch, left holding the max."""
    S = p_hat.shape[0]
    total = 0.0
    for j in range(S):
        p[j] = p_hat[j]
    top = order[0]
    p[top] = min(1.0, p_hat[top] + d / 2.0)
    for j in range(S):
        total += p[j]
    if total < 1.0:  # N = 0: p_hat = 0, every distribution is plausible
        p[top] += 1.0 - total
        total = 1.0
    ell = S - 1
    while total > 1.0 and ell > 0:
        j = order[ell]
        take = min(p[j], total - 1.0)
        p[j] -= take
        total -= take
        ell -= 1
    val = 0.0
    for j in range(S):
        val += p[j] * u[j]
    return val


@njit(cache=True)
def evi_sweep(p_hat, r_tilde, d, u, new, pol, p):
    """One sweep of extended VI: ``new (S,)`` and ``pol (S,)`` filled with
    ``max_a [r~(s,a) + max_(||p - p_hat||_1 <= d) p . u]`` and its argmax (``p``: scratch)."""
    S, A = r_tilde.shape
    order = np.argsort(-u)
    for s in range(S):
        best, arg = -np.inf, 0
        for a in range(A):
            val = r_tilde[s, a] + optimistic_inner(p_hat[s, a], d[s, a], u, order, p)
            if val > best:
                best, arg = val, a
        new[s] = best
        pol[s] = arg


@njit(cache=True)
def truncate(new, u, H):
    """One relative step of (extended) VI: SCAL's span truncation ``new <- min(new, min new +
    H)`` in place (H = inf: none, UCRL2's), returns ``(lo, hi)`` of ``new - u`` and leaves
    ``u <- new - min new``."""
    S = new.shape[0]
    m = new.min()
    lo, hi = np.inf, -np.inf
    for s in range(S):
        if new[s] > m + H:
            new[s] = m + H
        diff = new[s] - u[s]
        lo = min(lo, diff)
        hi = max(hi, diff)
    for s in range(S):
        u[s] = new[s] - m
    return lo, hi


@njit(cache=True)
def extended_vi(p_hat, r_tilde, d, eps, cap):
    """Extended value iteration: ``(policy (S,), gain_lower, gain_upper, sweeps)``."""
    S, A = r_tilde.shape
    u = np.zeros(S)
    new = np.zeros(S)
    pol = np.zeros(S, np.int64)
    p = np.zeros(S)
    lo, hi = 0.0, 0.0
    for it in range(1, cap + 1):
        evi_sweep(p_hat, r_tilde, d, u, new, pol, p)
        lo, hi = truncate(new, u, np.inf)
        if hi - lo < eps:
            return pol, lo, hi, it
    return pol, lo, hi, cap


@njit(cache=True)
def next_state(cdf_row, u):
    """Inverse-CDF draw from one cumulative row ``(S,)`` (clamped at its last positive)."""
    S = cdf_row.shape[0]
    last = S - 1
    while last > 0 and cdf_row[last] == cdf_row[last - 1]:
        last -= 1
    for j in range(S):
        if u < cdf_row[j]:
            return min(j, last)
    return last


@njit(cache=True)
def ucrl2_seed(P, cdf, R, bernoulli, T, delta, s0, rng_state, grid, consts, max_epochs, cap):
    """One seed of UCRL2 for T steps: ``(reward_sum (G,), epochs (5, max_epochs), n_epochs)``
    (epoch rows: start, gain_lower, gain_upper, covered, evi_iterations). Uniforms: the seed's
    PCG64 stream ``rng_state`` (uint64 ``(4,)``, :mod:`theorylab.kernels.pcg64`), two a step."""
    S, A = R.shape
    c_p, c_r, n_power = consts[0], consts[1], consts[2]
    N = np.zeros((S, A))
    v = np.zeros((S, A))
    counts = np.zeros((S, A, S))
    rsum = np.zeros((S, A))
    p_hat = np.zeros((S, A, S))
    r_tilde = np.zeros((S, A))
    d = np.zeros((S, A))
    out = np.zeros(grid.shape[0])
    epochs = np.full((5, max_epochs), np.nan)
    pol = np.zeros(S, np.int64)
    s, t, k, gi, cum = s0, 1, 0, 0, 0.0
    start = True
    while t <= T:
        if start:
            covered = 1.0
            for x in range(S):
                for a in range(A):
                    N[x, a] += v[x, a]
                    v[x, a] = 0.0
                    rp, rr = radii(S, A, t, delta, N[x, a], c_p, c_r, n_power)
                    l1 = 0.0
                    for y in range(S):
                        p_hat[x, a, y] = counts[x, a, y] / N[x, a] if N[x, a] > 0 else 0.0
                        l1 += abs(p_hat[x, a, y] - P[x, a, y])
                    r_hat = rsum[x, a] / N[x, a] if N[x, a] > 0 else 0.0
                    if l1 > rp or abs(r_hat - R[x, a]) > rr:
                        covered = 0.0
                    r_tilde[x, a] = r_hat + rr
                    d[x, a] = rp
            pol, lo, hi, it = extended_vi(p_hat, r_tilde, d, 1.0 / math.sqrt(t), cap)
            if k < max_epochs:
                epochs[0, k], epochs[1, k], epochs[2, k] = t, lo, hi
                epochs[3, k], epochs[4, k] = covered, it
            k += 1
            start = False
        a = pol[s]
        if v[s, a] >= max(1.0, N[s, a]):
            start = True
            continue
        r = R[s, a]
        u_r = pcg64_random(rng_state)  # drawn whatever the model, so both stay in step
        obs = (1.0 if u_r < r else 0.0) if bernoulli else r
        cum += r
        nxt = next_state(cdf[s, a], pcg64_random(rng_state))
        v[s, a] += 1.0
        counts[s, a, nxt] += 1.0
        rsum[s, a] += obs
        while gi < grid.shape[0] and grid[gi] == t:
            out[gi] = cum
            gi += 1
        s = nxt
        t += 1
    return out, epochs, k


def max_epochs(S: int, A: int, T: int) -> int:
    """An upper bound on UCRL2's number of epochs: ``S A (log2(8 T / (S A)) + 1) + 1``
    (Proposition 18 [M] gives ``m <= S A log2(8 T / (S A))`` for T >= S A)."""
    return int(S * A * (max(math.log2(8 * T / (S * A)), 1.0) + 1)) + 1


def start_state(mdp, S: int) -> int:
    """The model's start state when mu0 is a point mass (RiverSwim: 0), else state 0."""
    mu0 = getattr(mdp, "mu0", None)
    return int(np.argmax(mu0)) if mu0 is not None else 0


def run_seeds(mdp, steps: int, rngs, *, delta: float, evi_cap: int) -> StepRun:
    """UCRL2 on every seed (one generator each): a :class:`StepRun`."""
    P, R = model_arrays(mdp)
    S, A = R.shape
    cdf = np.cumsum(P, axis=2)
    bernoulli = getattr(mdp, "reward_model", "deterministic") == "bernoulli"
    grid = step_grid(steps)
    consts = np.asarray(radius_constants(), dtype=np.float64)
    K = max_epochs(S, A, steps)
    sums, epochs = [], []
    for rng in rngs:
        out, ep, n = ucrl2_seed(
            P,
            cdf,
            R,
            bernoulli,
            steps,
            delta,
            start_state(mdp, S),
            pcg64_states([rng])[0],
            grid,
            consts,
            K,
            evi_cap,
        )
        sums.append(out)
        epochs.append(ep)
    ep = np.stack(epochs)  # (B, 5, K)
    names = ("epoch_start", "gain_lower", "gain_upper", "covered", "evi_iterations")
    return StepRun(
        steps=grid,
        reward_sum=np.stack(sums),
        diagnostics={name: ep[:, i] for i, name in enumerate(names)},
        config={"delta": delta, "radius_constants": list(map(float, consts))},
    )


@register(
    "ucrl2",
    kind="average-reward",
    problem="tabular",
    bounds=(BOUND,),
    summary="UCRL2 (Jaksch, Ortner & Auer 2010): extended value iteration over L1 confidence "
    "sets, doubling epochs",
)
def ucrl2(mdp, steps, rngs, delta: float = 0.05, evi_cap: int = 1_000_000):
    """UCRL2 for ``steps`` steps per seed (delta: the confidence of Theorem 2)."""
    if not 0.0 < float(delta) < 1.0:
        raise ValueError(f"ucrl2: delta must be in (0, 1), got {delta!r}")
    if int(evi_cap) < 1:
        raise ValueError(f"ucrl2: evi_cap must be a positive integer, got {evi_cap!r}")
    return run_seeds(mdp, steps, rngs, delta=float(delta), evi_cap=int(evi_cap))
