r"""DNO (Direct Nash Optimization): self-play by regression on win rates against the current
policy, exactly on a tabular preference game.

Seed reference: ``seed-catalogue-002-004.md#E1``. Paper: Rosset, Cheng, Mitra, Santacroce,
Awadallah, Xie, "Direct Nash Optimization: Teaching Language Models to Self-Improve with General
Preferences", arXiv:2404.03715, 2024. Card: docs/algorithms/dno.md.

What was read [V]: the abstract and the catalogue row (general, possibly intransitive
preferences; "a batched on-policy algorithm using a regression-based objective"; "monotonic
improvement across iterations"). The objective below is reconstructed [M] from the conceptual
algorithm the paper builds on (soft policy iteration on the win rate against the current policy,
as in SPO); its exact form in the paper was not read.

One prompt, N responses, P[i, j] = P(i preferred to j) (:class:`PreferenceGame`). Iteration t:
the reward is the win rate against the current policy, r_t(y) = P(y > pi_t) = (P pi_t)_y, and

    pi_(t+1) = argmax_pi E_{y~pi} r_t(y) - eta KL(pi || pi_t)   ∝  pi_t exp(r_t / eta),

reached by DNO's regression: with u = log pi - log pi_t,

    L_t(pi) = E_{y, y' ~ pi_t x pi_t} [ (eta (u(y) - u(y')) - (r_t(y) - r_t(y')))^2 ],

a weighted least-squares problem in u whose minimiser (unique up to a shift on the support of
pi_t) is u = r_t / eta: :func:`dno_step` solves it by ``lstsq``, not by the closed form.

Monotonic improvement (exact): pi_(t+1) maximises E_pi r_t - eta KL(pi || pi_t), whose value at
pi = pi_t is E_{pi_t} r_t = pi_t^T P pi_t = 1/2, so the win rate of pi_(t+1) over pi_t is

    P(pi_(t+1) > pi_t) = pi_(t+1)^T P pi_t >= 1/2 + eta KL(pi_(t+1) || pi_t) >= 1/2.

Convergence: the update is Hedge with step 1 / eta on the self-play game, so the *average*
iterate's exploitability 1/2 - min_j (P^T p)_j falls to 0 (no regret), measured against the von
Neumann winner of :func:`nash.von_neumann_winner` (LP); the last iterate cycles on intransitive
P. With m > 0 the win rates r_t are estimated from m oracle comparisons per response (N m
queries per iteration), the regression then solved exactly.
"""

from __future__ import annotations

import numpy as np
from scipy.special import softmax

from theorylab.algorithms.preference import nash
from theorylab.algorithms.registry import register
from theorylab.mdps.preference import PreferenceMatrixOracle


def dno_step(pi_t: np.ndarray, r_t: np.ndarray, eta: float) -> np.ndarray:
    """argmin of DNO's regression loss L_t (module docstring) over pi, by weighted least squares
    on the rows sqrt(pi_t(i) pi_t(j)) eta (e_i - e_j) with targets r_t(i) - r_t(j); ``(N,)``."""
    N = pi_t.size
    i, j = np.nonzero(np.outer(pi_t, pi_t) * ~np.eye(N, dtype=bool))
    w = np.sqrt(pi_t[i] * pi_t[j])
    rows = np.zeros((i.size, N))
    rows[np.arange(i.size), i] = w * eta
    rows[np.arange(i.size), j] = -w * eta
    u = np.linalg.lstsq(rows, w * (r_t[i] - r_t[j]), rcond=None)[0]
    with np.errstate(divide="ignore"):
        return softmax(np.log(pi_t) + u)


def win_rates(P: np.ndarray, iterates: np.ndarray) -> np.ndarray:
    """P(pi_(t+1) > pi_t) = pi_(t+1)^T P pi_t for every t: ``iterates (.., T+1, N)`` ->
    ``(.., T)``."""
    return np.einsum("...ti,ij,...tj->...t", iterates[..., 1:, :], P, iterates[..., :-1, :])


def dno_dynamics(P, pi_ref, eta: float, T: int) -> nash.Dynamics:
    """T exact DNO iterations from pi_ref (win rates exact), gaps at every iterate."""
    if not eta > 0:
        raise nash.NashError(f"dno: eta (the KL weight to pi_t) must be > 0, got {eta!r}")

    def step(P, pi, logref):
        return dno_step(pi, P @ pi, eta)

    return nash._exact_dynamics(P, pi_ref, 0.0, 1.0 / eta, T, None, step)


def sampled_dno(oracle: PreferenceMatrixOracle, pi_ref, eta: float, T: int, m: int):
    """DNO with r_t(y) estimated per seed from m comparisons of y against y' ~ pi_t."""
    P, N, B, ref, it, _ = nash._sampled_start(oracle, pi_ref, 0.0, 1.0 / eta, T, m)
    ys = np.tile(np.repeat(np.arange(N), m), (B, 1))  # (B, N m)
    for t in range(T):
        opp = np.stack([rng.choice(N, size=N * m, p=it[b, t]) for b, rng in enumerate(oracle.rngs)])
        r = oracle.compare(ys, opp).reshape(B, N, m).mean(axis=-1)  # (B, N)
        for b in range(B):
            it[b, t + 1] = dno_step(it[b, t], r[b], eta)
    avg, gap, agap = nash._gaps(P, it, ref, 0.0)
    return nash.Dynamics(it, avg, gap, agap, oracle.queries.copy())


@register(
    "dno",
    kind="preference-game",
    problem="pref-game",
    bounds=(),
    feedback=("matrix",),
    papers=("002-004#E1",),
)
def dno(game, oracle, iterations: int, eta: float = 20.0, m: int = 0) -> nash.GameRun:
    """DNO (Rosset et al. 2024): each iterate the exact minimiser of the regression on win rates
    against the current policy; output the average iterate (its exact duality gap = 2 x
    exploitability); ``extra``: ``win_rate`` P(pi_t > pi_(t-1)) (1/2 at t = 0), ``last_gap``,
    ``exploitability`` of the average, ``distance`` of the average to the LP's von Neumann
    winner."""
    if isinstance(m, bool) or int(m) != m or m < 0:
        raise ValueError(f"m (comparisons per response and iteration) must be >= 0, got {m!r}")
    if not (isinstance(eta, (int, float)) and eta > 0):
        raise ValueError(f"dno: eta (the KL weight to pi_t) must be > 0, got {eta!r}")
    B, N, T = oracle.n_seeds, game.N, iterations
    if m == 0:
        dyn = dno_dynamics(game.P, game.pi_ref, float(eta), T)
        it = np.broadcast_to(dyn.iterates, (B, T + 1, N))
        avg = np.broadcast_to(dyn.average, (B, T + 1, N))
        gap, last = (np.broadcast_to(a, (B, T + 1)) for a in (dyn.average_gap, dyn.gap))
        queries = np.zeros((B, T + 1), np.int64)
    else:
        dyn = sampled_dno(oracle, game.pi_ref, float(eta), T, int(m))
        it, avg, gap, last = dyn.iterates, dyn.average, dyn.average_gap, dyn.gap
        queries = np.broadcast_to(N * int(m) * np.arange(T + 1), (B, T + 1)).copy()
    win = np.concatenate([np.full((B, 1), 0.5), win_rates(game.P, it)], axis=1)
    winner = nash.von_neumann_winner(game.P)[0]
    extra = {
        "win_rate": win,
        "last_gap": np.array(last, dtype=float),
        "exploitability": 0.5 - np.einsum("btn,nj->btj", avg, game.P).min(-1),
        "distance": np.abs(avg - winner).max(-1),
    }
    config = {"eta": float(eta), "m": int(m), "output": "average"}
    return nash.GameRun(np.array(gap, dtype=float), queries, extra, config)
