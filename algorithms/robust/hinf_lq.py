r"""H-infinity control of a linear-quadratic game by actor-disturber iteration (row 002-004#D4).

Seed row ``seed-catalogue-002.md#D4`` (tier B): Long, Yu, Li, Wang, Lin & Pang, "Learning
H-Infinity Locomotion Control", 2024, arXiv:2404.14405.

What was read [V] (the abstract and the project page): robust locomotion is learned as an
adversarial interaction between an actor and a learnable, state-conditioned *disturber*; the
disturber is optimised by maximising the cost (the gap between the task reward and its oracle);
an H-infinity constraint bounds the ratio of the cost to the intensity of the external forces to
keep the joint optimisation stable. The paper's experiments are deep RL on quadrupeds (PPO); no
equation of the paper was read.

Reconstructed [A] (the catalogue row's test (iii): "in a linear-quadratic instance, compare with
the analytic H-infinity controller" -- standard H-infinity theory, Basar & Bernhard 1995, not the
paper): on x' = A x + B u + D w (:class:`theorylab.mdps.lq_game.LQGame`) the H-infinity constraint
"cost <= gamma^2 |w|^2" enters as its Lagrangian, the soft-constrained zero-sum game

    min_u max_w  sum_t x_t'Q x_t + u_t'R u_t - gamma^2 |w_t|^2,   x_0 = x0,

whose saddle point is u = -K x, w = L x with P the stabilising solution of the game Riccati
equation (GARE)

    P = Q + A' Pt A - A' Pt B (R + B' Pt B)^{-1} B' Pt A,
    Pt = P + P D (gamma^2 I - D' P D)^{-1} D' P          (the disturber's best response, term
                                                           in gamma^-2 for large gamma),

valid iff gamma^2 I - D' P D > 0 and A - B K + D L is stable; it exists iff gamma > gamma*, the
optimal attenuation level. Then the closed loop's H-infinity norm from w to z = (Q^1/2 x,
R^1/2 u) is < gamma: cost <= gamma^2 |w|^2 for every l2 disturbance from x0 = 0 (the paper's ratio
constraint), and x0' P x0 is the game value. gamma -> inf gives LQR (Pt = P).

The learner (``hinf-lq``, the actor-disturber iteration [A]): from P_0 = 0, iteration k has the
disturber best-respond to the current value (w = L_k x, L_k = (gamma^2 I - D'P_k D)^{-1}
D' P_k (A - B K_k)) and the actor best-respond to the disturbed value Pt_k (K_k = (R + B'Pt_k
B)^{-1} B'Pt_k A), and the value P_{k+1} = Q + K_k'R K_k + (A - B K_k)' Pt_k (A - B K_k) is the
value of the (k+1)-step game under the pair: the model-based form of the zero-sum Q-learning /
HDP of Al-Tamimi, Lewis & Abu-Khalaf (Automatica 2007) -- no stabilising initial gain needed,
P_k increases monotonically to the GARE solution when gamma > gamma*. Below gamma* the
disturber's problem becomes unbounded: gamma^2 I - D' P_k D loses definiteness, or P_k diverges
(trace above 1e12 (1 + trace Q)); the run then stops and reports ``solvable = False`` (no error).

Independent answers (used by the claim ``hinf-lq-matches-analytic``, never by the learner):
:func:`analytic_game_riccati` (scipy's generalised discrete ARE with the stacked input (u, w) and
the indefinite weight diag(R, -gamma^2 I), solved by a QZ method, then checked for the saddle
conditions), :func:`lqr` (scipy's DARE), :func:`hinf_norm` (a frequency sweep of the closed
loop), :func:`worst_case_value` (the disturber's LQ maximisation for a fixed gain, scipy's DARE
with -Q_K) and the rollout sums of the claim.

Deviations: the paper learns both players by PPO from sampled returns; here both best responses
are exact (the model is known), so the gains can be compared with the analytic ones to 1e-8.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from theorylab.algorithms.policy_optimization.path import PolicyPath
from theorylab.algorithms.registry import register
from theorylab.mdps.lq_game import LQGame

PAPERS = ("002-004#D4",)


def _f(M) -> np.ndarray:
    return np.asarray(M, dtype=np.float64)


def spectral_radius(M: np.ndarray) -> float:
    return float(np.abs(np.linalg.eigvals(M)).max())


def worst_case_weight(P: np.ndarray, D: np.ndarray, gamma: float) -> np.ndarray | None:
    """Pt = P + P D (gamma^2 I - D'P D)^{-1} D'P (n, n): max_w (y + D w)'P (y + D w) - gamma^2
    |w|^2 = y' Pt y; None where gamma^2 I - D'P D is not positive definite (the maximum is +inf).
    gamma = inf gives P."""
    if np.isinf(gamma):
        return P.copy()
    M = gamma**2 * np.eye(D.shape[1]) - D.T @ P @ D  # (q, q)
    if np.linalg.eigvalsh((M + M.T) / 2).min() <= 0:
        return None
    Pt = P + P @ D @ np.linalg.solve(M, D.T @ P)
    return (Pt + Pt.T) / 2


def game_backup(game: LQGame, P: np.ndarray, gamma: float):
    """One actor-disturber round on the value P: (P', K (m, n), L (q, n)), or None where the
    disturber's response is unbounded."""
    A, B, D, Q, R = _f(game.A), _f(game.B), _f(game.D), _f(game.Q), _f(game.R)
    Pt = worst_case_weight(P, D, gamma)
    if Pt is None:
        return None
    K = np.linalg.solve(R + B.T @ Pt @ B, B.T @ Pt @ A)  # (m, n): the actor's response
    AK = A - B @ K
    if np.isinf(gamma):
        L = np.zeros((D.shape[1], A.shape[0]))
    else:
        L = np.linalg.solve(gamma**2 * np.eye(D.shape[1]) - D.T @ P @ D, D.T @ P @ AK)  # (q, n)
    P_next = Q + K.T @ R @ K + AK.T @ Pt @ AK
    return (P_next + P_next.T) / 2, K, L


def actor_disturber_iteration(game: LQGame, gamma: float, iterations: int, record=None):
    """P_0 = 0 and ``iterations`` game backups; record(k, P_k, K_k, L_k) after each. Returns
    (P, K, L, solvable, rounds): the last value and gains, and whether every round was bounded."""
    n = game.n
    P = np.zeros((n, n))
    K, L = np.zeros((game.m, n)), np.zeros((game.q, n))
    cap = 1e12 * (1.0 + float(np.trace(_f(game.Q))))
    for k in range(int(iterations)):
        out = game_backup(game, P, gamma)
        if out is None or not np.all(np.isfinite(out[0])) or np.trace(out[0]) > cap:
            return P, K, L, False, k
        P, K, L = out
        if record is not None:
            record(k + 1, P, K, L)
    return P, K, L, True, int(iterations)


def lqr(game: LQGame):
    """(P, K): scipy's DARE for the undisturbed problem (gamma = inf), u = -K x."""
    A, B, Q, R = _f(game.A), _f(game.B), _f(game.Q), _f(game.R)
    P = sla.solve_discrete_are(A, B, Q, R)
    return P, np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)


def analytic_game_riccati(game: LQGame, gamma: float):
    """(P, K, L) of the saddle point from scipy's generalised DARE with the stacked input (u, w)
    and the weight diag(R, -gamma^2 I), or None where no stabilising saddle solution exists
    (gamma <= gamma*): the solver fails, gamma^2 I - D'P D is not positive definite, P is not
    positive semidefinite, or A - B K + D L is not stable."""
    A, B, D, Q, R = _f(game.A), _f(game.B), _f(game.D), _f(game.Q), _f(game.R)
    if np.isinf(gamma):
        P, K = lqr(game)
        return P, K, np.zeros((game.q, game.n))
    Bs = np.hstack([B, D])  # (n, m + q)
    Rs = sla.block_diag(R, -(gamma**2) * np.eye(game.q))
    try:
        P = sla.solve_discrete_are(A, Bs, Q, Rs)
    except (np.linalg.LinAlgError, ValueError):
        return None
    if not np.all(np.isfinite(P)):
        return None
    P = (P + P.T) / 2
    G = np.linalg.solve(Rs + Bs.T @ P @ Bs, Bs.T @ P @ A)  # (m + q, n): (u, w) = -G x
    K, L = G[: game.m], -G[game.m :]
    ok = (
        np.linalg.eigvalsh(gamma**2 * np.eye(game.q) - D.T @ P @ D).min() > 0
        and np.linalg.eigvalsh(P).min() >= -1e-9
        and spectral_radius(A - B @ K + D @ L) < 1
    )
    return (P, K, L) if ok else None


def critical_gamma(game: LQGame, tol: float = 1e-6) -> float:
    """gamma*, the infimum of the gamma with a saddle solution, by bisection on
    :func:`analytic_game_riccati` (relative tolerance tol)."""
    hi = 1.0
    while analytic_game_riccati(game, hi) is None:
        hi *= 2.0
    lo = hi / 2.0
    while lo > 1e-12 and analytic_game_riccati(game, lo) is not None:
        lo /= 2.0
    while hi - lo > tol * hi:
        mid = (lo + hi) / 2.0
        if analytic_game_riccati(game, mid) is None:
            lo = mid
        else:
            hi = mid
    return hi


def hinf_norm(game: LQGame, K: np.ndarray, points: int = 4096) -> float:
    """The H-infinity norm of the closed loop x' = (A - B K) x + D w, z = (Q^1/2 x, R^1/2 u)
    (u = -K x): max over the unit circle of sigma_max(C (e^{i omega} I - A_K)^{-1} D), a grid of
    ``points`` frequencies in [0, pi] refined around its peak; inf where A - B K is unstable."""
    A, B, D, Q, R = _f(game.A), _f(game.B), _f(game.D), _f(game.Q), _f(game.R)
    AK = A - B @ K
    if spectral_radius(AK) >= 1:
        return float("inf")
    C = np.vstack([np.linalg.cholesky(Q).T, -np.linalg.cholesky(R).T @ K])  # (n + m, n)
    eye = np.eye(game.n)

    def gains(omega: np.ndarray) -> np.ndarray:
        M = np.exp(1j * omega)[:, None, None] * eye[None] - AK[None]  # (F, n, n)
        T = C[None] @ np.linalg.solve(M, np.broadcast_to(D, (omega.size, *D.shape)))
        return np.linalg.svd(T, compute_uv=False)[:, 0]  # (F,)

    omega = np.linspace(0.0, np.pi, points)
    g = gains(omega)
    i = int(np.argmax(g))
    h = np.pi / (points - 1)
    fine = np.linspace(max(0.0, omega[i] - h), min(np.pi, omega[i] + h), 2001)
    return float(max(g.max(), gains(fine).max()))


def worst_case_value(game: LQGame, K: np.ndarray, gamma: float) -> np.ndarray | None:
    """P_K (n, n): max over disturbances of sum x'(Q + K'R K) x - gamma^2 |w|^2 under u = -K x,
    x0' P_K x0 the gain's worst-case cost, by scipy's DARE for the disturber's minimisation of
    gamma^2 |w|^2 - x'Q_K x (so P_K = -X); None (worst case +inf) where the closed loop's
    H-infinity norm is >= gamma or the solution is not the disturber's stabilising one."""
    if hinf_norm(game, K) >= gamma:
        return None
    A, B, D, Q, R = _f(game.A), _f(game.B), _f(game.D), _f(game.Q), _f(game.R)
    AK, QK = A - B @ K, Q + K.T @ R @ K
    try:
        X = sla.solve_discrete_are(AK, D, -QK, gamma**2 * np.eye(game.q))
    except (np.linalg.LinAlgError, ValueError):
        return None
    P = -(X + X.T) / 2
    return P if np.linalg.eigvalsh(P).min() >= -1e-9 else None


def _gamma(value) -> float:
    numeric = (int, float, np.integer, np.floating)
    if isinstance(value, bool) or not isinstance(value, numeric) or np.isnan(value) or value <= 0:
        raise ValueError(f"hinf-lq: gamma must be a number > 0 (inf for LQR), got {value!r}")
    return float(value)


@register("hinf-lq", kind="policy-optimization", problem="lq-game", papers=PAPERS)
def hinf_lq(problem, iterations, gamma: float = 5.0):
    """Actor-disturber iteration on an LQ game at attenuation level gamma (module docstring);
    one round per iteration. objective: the k-round game value x0'P_k x0; target_gap:
    max |K_k - K*| against scipy's GARE gain (NaN where gamma <= gamma*); policies: the actor
    gains K_k (K+1, m, n)."""
    if not isinstance(problem, LQGame):
        raise ValueError(
            f"hinf-lq: problem must be an LQ game (e.g. 'lq-game:n=3,m=1,q=1'), got "
            f"{getattr(problem, 'name', type(problem).__name__)}"
        )
    g = _gamma(gamma)
    x0 = _f(problem.x0)
    star = analytic_game_riccati(problem, g)
    values, gains = [0.0], [np.zeros((problem.m, problem.n))]

    def record(k, P, K, L):
        values.append(float(x0 @ P @ x0))
        gains.append(K)

    P, K, L, solvable, rounds = actor_disturber_iteration(problem, g, iterations, record)
    pols = np.stack(gains)  # (rounds + 1, m, n)
    J = np.array(values)
    gap = np.full(J.size, np.nan)
    if star is not None:
        gap = np.abs(pols - star[1][None]).max(axis=(1, 2))
    return PolicyPath(
        objective=J,
        regularised=J.copy(),
        entropy=np.zeros(J.size),  # deterministic linear policies
        target_gap=gap,
        target_value=float(x0 @ star[0] @ x0) if star is not None else float("nan"),
        policies=pols,
        config={
            "gamma": g,
            "solvable": bool(solvable),
            "rounds": int(rounds),
            "value_matrix": P.tolist(),
            "disturber_gain": L.tolist(),
            "objective_is": "k-round game value x0'P_k x0 (a cost: lower is better)",
        },
    )
