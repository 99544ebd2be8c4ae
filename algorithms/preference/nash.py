r"""General preferences: the von Neumann winner, the KL-regularised Nash equilibrium, and the
no-regret (online mirror descent) self-play of INPO / Nash-MD on a tabular game.

Papers (card: docs/algorithms/nash-preference.md):

* Wang, Liu, Jin, "Is RLHF More Difficult than Standard RL?", NeurIPS 2023, arXiv:2306.14111:
  with general preferences the target is the von Neumann winner ([A]).
* Zhang et al., "Iterative Nash Policy Optimization" (INPO), ICLR 2025, arXiv:2407.00617: self-play
  by online mirror descent on the KL-regularised game ([A]; the update below is [M] with the
  identities checked numerically in the reference and here).
* Munos et al., "Nash Learning from Human Feedback" (Nash-MD) uses the same regularised game.

One prompt, N responses, ``P[i, j] = P(i preferred to j)`` with ``P + P^T = 1``.

von Neumann winner (exact comparator): the symmetric equilibrium of max_p min_q p^T P q, by LP

    max_{p in simplex, v} v   s.t.   (P^T p)_j >= v  for every j;   the optimal v is 1/2.

KL-regularised game: J(pi, pi') = pi^T P pi' - tau KL(pi || pi_ref) + tau KL(pi' || pi_ref). Its
unique symmetric equilibrium solves pi* ∝ pi_ref exp(P pi* / tau). Duality gap at (pi, pi):

    gap(pi) = max_x J(x, pi) - min_y J(pi, y)
            = 2 [ tau log sum_i pi_ref(i) exp((P pi)_i / tau) - (1/2 - tau KL(pi || pi_ref)) ]

(using pi^T P y = 1 - y^T P pi and pi^T P pi = 1/2), computed exactly; at tau = 0 it is
2 (max_i (P pi)_i - 1/2) = 2 x exploitability, where exploitability(p) = 1/2 - min_j (P^T p)_j.

OMD / INPO update (exact preferences; eta tau < 1):

    pi_{t+1}(y) ∝ pi_t(y)^{1 - eta tau} pi_ref(y)^{eta tau} exp(eta P(y > pi_t))

whose fixed point is pi*. With tau > 0 the last iterate converges (linearly) to pi*; with tau = 0
it is Hedge self-play: the *average* iterate's gap falls like 1/sqrt(T) for eta ~ 1/sqrt(T) while
the last iterate cycles on intransitive games (the negative control). :func:`sampled_omd` runs the
same update with P(y > pi_t) estimated from m oracle comparisons of y against y' ~ pi_t per
response and iteration (queries counted by the oracle), the setting INPO's loss is built for.

INPO's loss (the reference's section 7.2, [M]): with

    h(pi, y, y') = log pi(y)/pi(y') - eta tau log pi_ref(y)/pi_ref(y')
                   - (1 - eta tau) log pi_t(y)/pi_t(y'),
    L_t(pi) = E_{y, y' ~ pi_t, (y_w, y_l) ~ P}[(h(pi, y_w, y_l) - eta/2)^2],

its population minimiser is the OMD step above (:func:`inpo_population_loss`, tested).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.special import logsumexp, softmax

from theorylab.errors import TheorylabError
from theorylab.mdps.preference import PreferenceMatrixOracle, validate_preference_matrix


class NashError(TheorylabError, ValueError):
    """Bad input to the game solvers (step sizes, temperatures, distributions) or a failed solve."""


def _check_distribution(p, N: int, name: str, full_support: bool = False) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    if p.shape != (N,):
        raise NashError(f"{name} must have shape ({N},), got {p.shape}")
    if (p < 0).any() or abs(p.sum() - 1.0) > 1e-9:
        raise NashError(f"{name} must be a probability vector, got {p.tolist()}")
    if full_support and (p <= 0).any():
        i = int(np.argwhere(p <= 0)[0, 0])
        raise NashError(f"{name} must have full support; {name}[{i}] = {p[i]}")
    return p


def von_neumann_winner(P) -> tuple[np.ndarray, float]:
    """A von Neumann winner ``p (N,)`` and the game value (1/2) by the LP (HiGHS)."""
    P = validate_preference_matrix(P)
    N = P.shape[0]
    c = np.zeros(N + 1)
    c[-1] = -1.0  # maximise v
    A_ub = np.hstack([-P.T, np.ones((N, 1))])  # v - (P^T p)_j <= 0
    A_eq = np.hstack([np.ones((1, N)), np.zeros((1, 1))])
    bounds = [(0, None)] * N + [(None, None)]
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(N), A_eq=A_eq, b_eq=[1.0], bounds=bounds)
    if res.status != 0:
        raise NashError(f"von Neumann winner LP failed: {res.message}")
    p = np.clip(res.x[:N], 0.0, None)
    return p / p.sum(), float(res.x[-1])


def exploitability(P, p) -> float:
    """1/2 - min_j P(p > j) >= 0; zero exactly at a von Neumann winner."""
    P = np.asarray(P, dtype=np.float64)
    p = _check_distribution(p, P.shape[0], "p")
    return float(0.5 - (P.T @ p).min())


def kl(p: np.ndarray, q: np.ndarray) -> float:
    """KL(p || q) with 0 log 0 = 0."""
    m = p > 0
    return float((p[m] * (np.log(p[m]) - np.log(q[m]))).sum())


def duality_gap(P, pi, pi_ref, tau: float) -> float:
    """Exact duality gap of the KL-regularised game at the symmetric profile (pi, pi)."""
    P = np.asarray(P, dtype=np.float64)
    g = P @ pi
    if tau == 0.0:
        return float(2.0 * (g.max() - 0.5))
    best = tau * logsumexp(g / tau, b=pi_ref)  # max_x x^T g - tau KL(x || pi_ref)
    return float(2.0 * (best - (0.5 - tau * kl(pi, pi_ref))))


def regularised_equilibrium(P, pi_ref, tau: float) -> np.ndarray:
    """pi* ∝ pi_ref exp(P pi* / tau), solved as a root of the logit equation (scipy ``hybr``),
    independently of the OMD iteration; residual checked to 1e-12."""
    from scipy.optimize import root

    P = validate_preference_matrix(P)
    ref = _check_distribution(pi_ref, P.shape[0], "pi_ref", full_support=True)
    if not tau > 0:
        raise NashError(f"tau must be > 0 for the regularised equilibrium, got {tau}")
    logref = np.log(ref)

    def F(z):
        pi = softmax(z)
        return z - logref - P @ pi / tau - (z - logref - P @ pi / tau).mean()

    sol = root(F, logref.copy(), method="hybr", tol=1e-15)
    pi = softmax(sol.x)
    resid = np.abs(pi - softmax(logref + P @ pi / tau)).max()
    if resid > 1e-12:
        raise NashError(f"regularised equilibrium: fixed-point residual {resid:.2e} > 1e-12")
    return pi


@dataclass
class Dynamics:
    """Iterates of the self-play: ``iterates (T+1, N)`` (or ``(B, T+1, N)`` sampled), the
    running ``average (.., T+1, N)``, exact duality gaps of both ``gap``, ``average_gap``
    ``(.., T+1)``; ``queries (B,)`` preference queries (sampled dynamics only)."""

    iterates: np.ndarray
    average: np.ndarray
    gap: np.ndarray
    average_gap: np.ndarray
    queries: np.ndarray | None = None


def _check_steps(tau: float, eta: float, T: int) -> None:
    if not tau >= 0:
        raise NashError(f"tau must be >= 0, got {tau}")
    if not eta > 0 or eta * tau >= 1:
        raise NashError(f"need eta > 0 and eta * tau < 1, got eta = {eta}, tau = {tau}")
    if isinstance(T, bool) or int(T) != T or T < 1:
        raise NashError(f"T must be a positive integer, got {T!r}")


def _gaps(P, iterates, pi_ref, tau):
    avg = np.cumsum(iterates, axis=-2) / np.arange(1, iterates.shape[-2] + 1)[:, None]
    flat_it = iterates.reshape(-1, iterates.shape[-1])
    flat_av = avg.reshape(-1, iterates.shape[-1])
    gap = np.array([duality_gap(P, p, pi_ref, tau) for p in flat_it]).reshape(iterates.shape[:-1])
    agap = np.array([duality_gap(P, p, pi_ref, tau) for p in flat_av]).reshape(avg.shape[:-1])
    return avg, gap, agap


def kl_pull_base(pi_t: np.ndarray, logref: np.ndarray, eta: float, tau: float) -> np.ndarray:
    """The log-prior of both updates: (1 - eta tau) log pi_t + eta tau log pi_ref, ``(.., N)``
    (-inf where pi_t underflowed to 0, which only tau = 0 allows: softmax keeps it at 0)."""
    with np.errstate(divide="ignore"):
        return (1 - eta * tau) * np.log(pi_t) + eta * tau * logref


def _exact_dynamics(P, pi_ref, tau: float, eta: float, T: int, pi0, step) -> Dynamics:
    """T steps ``pi_(t+1) = step(P, pi_t, log pi_ref)`` from ``pi0`` (default pi_ref); exact
    gaps at every iterate."""
    P = validate_preference_matrix(P)
    N = P.shape[0]
    ref = _check_distribution(pi_ref, N, "pi_ref", full_support=True)
    _check_steps(tau, eta, T)
    pi = ref.copy() if pi0 is None else _check_distribution(pi0, N, "pi0", full_support=True)
    it = np.empty((T + 1, N))
    it[0] = pi
    logref = np.log(ref)
    for t in range(T):
        it[t + 1] = step(P, it[t], logref)
    avg, gap, agap = _gaps(P, it, ref, tau)
    return Dynamics(it, avg, gap, agap)


def omd_dynamics(P, pi_ref, tau: float, eta: float, T: int, pi0=None) -> Dynamics:
    """T exact OMD steps from ``pi0`` (default pi_ref), gaps exact at every iterate: the
    reference the INPO loss's iterates are checked against."""

    def step(P, pi, logref):
        return softmax(kl_pull_base(pi, logref, eta, tau) + eta * (P @ pi))

    return _exact_dynamics(P, pi_ref, tau, eta, T, pi0, step)


def inpo_step(pi_t: np.ndarray, wins: np.ndarray, logref: np.ndarray, eta: float, tau: float):
    """argmin over pi of INPO's loss sum_{i,j} wins[i, j] (h(pi, i, j) - eta/2)^2, exactly.

    ``wins (N, N)``: the weight of the pairs won by response i over response j (population
    probabilities, or counts of sampled comparisons). With pi = softmax(base + u), base =
    :func:`kl_pull_base`, h(pi, i, j) = u_i - u_j, so the loss is a weighted least-squares
    problem in u (its minimiser unique up to a shift where the compared responses are
    connected): solved by ``lstsq`` on the rows sqrt(wins[i, j]) (e_i - e_j). Responses never
    compared keep u = 0 (the minimum-norm solution): pi_(t+1) ∝ base there."""
    N = pi_t.shape[0]
    i, j = np.nonzero((wins > 0) & ~np.eye(N, dtype=bool))  # y = y' pairs carry no signal
    rows = np.zeros((i.size, N))
    sw = np.sqrt(wins[i, j])
    rows[np.arange(i.size), i] = sw
    rows[np.arange(i.size), j] = -sw
    u = np.linalg.lstsq(rows, sw * (eta / 2.0), rcond=None)[0] if i.size else np.zeros(N)
    return softmax(kl_pull_base(pi_t, logref, eta, tau) + u)


def inpo_dynamics(P, pi_ref, tau: float, eta: float, T: int, pi0=None) -> Dynamics:
    """T iterations of INPO with exact expectations: each pi_(t+1) minimises the population
    loss L_t (pairs y, y' ~ pi_t x pi_t, the winner drawn by P: weight 2 pi_t(i) pi_t(j) P[i, j]
    on (y_w, y_l) = (i, j)) by :func:`inpo_step`, not by the OMD closed form."""

    def step(P, pi, logref):
        return inpo_step(pi, 2.0 * np.outer(pi, pi) * P, logref, eta, tau)

    return _exact_dynamics(P, pi_ref, tau, eta, T, pi0, step)


def _sampled_start(oracle: PreferenceMatrixOracle, pi_ref, tau: float, eta: float, T: int, m):
    """The checked inputs of a sampled dynamics and its iterate array started at pi_ref:
    ``(P, N, B, ref, it (B, T+1, N), log ref)``."""
    P = oracle.P
    N, B = P.shape[0], oracle.n_seeds
    ref = _check_distribution(pi_ref, N, "pi_ref", full_support=True)
    _check_steps(tau, eta, T)
    if isinstance(m, bool) or int(m) != m or m < 1:
        raise NashError(f"m (comparisons per response and iteration) must be >= 1, got {m!r}")
    it = np.empty((B, T + 1, N))
    it[:, 0] = ref
    return P, N, B, ref, it, np.log(ref)


def sampled_inpo(
    oracle: PreferenceMatrixOracle, pi_ref, tau: float, eta: float, T: int, m: int
) -> Dynamics:
    """INPO on sampled data: per iteration and seed, N m pairs y, y' ~ pi_t x pi_t, each
    labelled by one oracle comparison, and pi_(t+1) the exact minimiser of the empirical loss
    (:func:`inpo_step` on the win counts). Returns ``iterates (B, T+1, N)``."""
    P, N, B, ref, it, logref = _sampled_start(oracle, pi_ref, tau, eta, T, m)
    for t in range(T):
        draws = [rng.choice(N, size=(2, N * m), p=it[b, t]) for b, rng in enumerate(oracle.rngs)]
        y, y2 = (np.stack([d[k] for d in draws]) for k in (0, 1))  # (B, N m) each
        first = oracle.compare(y, y2).astype(bool)  # (B, N m): y preferred
        for b in range(B):
            w, lo = np.where(first[b], y[b], y2[b]), np.where(first[b], y2[b], y[b])
            wins = np.zeros((N, N))
            np.add.at(wins, (w, lo), 1.0)
            it[b, t + 1] = inpo_step(it[b, t], wins, logref, eta, tau)
    avg, gap, agap = _gaps(P, it, ref, tau)
    return Dynamics(it, avg, gap, agap, oracle.queries.copy())


def sampled_omd(
    oracle: PreferenceMatrixOracle, pi_ref, tau: float, eta: float, T: int, m: int
) -> Dynamics:
    """OMD with P(y > pi_t) estimated per seed from m comparisons of each response y against
    y' ~ pi_t (drawn from the oracle's generator of that seed); exact gaps per iterate.

    Per iteration and seed: N * m queries. Returns ``iterates (B, T+1, N)``."""
    P, N, B, ref, it, logref = _sampled_start(oracle, pi_ref, tau, eta, T, m)
    ys = np.tile(np.repeat(np.arange(N), m), (B, 1))  # (B, N m): each response m times
    for t in range(T):
        opp = np.stack([rng.choice(N, size=N * m, p=it[b, t]) for b, rng in enumerate(oracle.rngs)])
        wins = oracle.compare(ys, opp).reshape(B, N, m).mean(axis=-1)  # (B, N) estimates
        z = kl_pull_base(it[:, t], logref, eta, tau) + eta * wins
        it[:, t + 1] = softmax(z, axis=-1)
    avg, gap, agap = _gaps(P, it, ref, tau)
    return Dynamics(it, avg, gap, agap, oracle.queries.copy())


def inpo_population_loss(logits, pi_t, pi_ref, P, eta: float, tau: float) -> float:
    """INPO's L_t(pi) with exact expectations: pairs y, y' ~ pi_t x pi_t, the winner y_w drawn
    by P; ``logits (N,)`` parametrise pi = softmax(logits)."""
    logpi = logits - logsumexp(logits)
    P = np.asarray(P, dtype=np.float64)
    base = (1 - eta * tau) * np.log(pi_t) + eta * tau * np.log(pi_ref)
    h = (logpi[:, None] - logpi[None, :]) - (base[:, None] - base[None, :])  # h(y_w=i, y_l=j)
    w = np.outer(pi_t, pi_t) * P  # P(y = i, y' = j, i wins) summed over the two orders below
    return float((w * (h - eta / 2) ** 2).sum() + (w.T * (h.T - eta / 2) ** 2).sum())


@dataclass
class GameRun:
    """Output of a self-play algorithm: ``gap`` and ``queries`` ``(B, T + 1)`` (the exact duality
    gap of the output iterate and the comparisons asked by iteration t); ``extra``: named
    ``(B, T + 1)`` arrays; ``config``: what the run reports besides (tau, eta, m, output)."""

    gap: np.ndarray
    queries: np.ndarray
    extra: dict
    config: dict
