r"""N-VR-PG: the stochastic general-utility policy gradient -- sampled truncated trajectories,
recursive-momentum (STORM) estimates of the occupancy and of the gradient, importance weights,
normalised steps.

Seed reference: ``seed-catalogue-000.md#14`` (= ``seed-catalogue-001.md#65``). Paper: Barakat,
Fatkhullin, He, "Reinforcement Learning with General Utilities: Simpler Variance Reduction and
Large State-Action Space", ICML 2023 (arXiv:2306.01854). What was read [V]: the abstract -- a
single-loop, parameter-free normalised PG with recursive-momentum variance reduction, O~(eps^-3)
samples for eps-first-order stationarity and O~(eps^-2) for eps-global optimality with concave F
"under adequate assumptions". The paper's text was not found in a time-boxed search (corpora
``pages`` and ``code``; the companion paper arXiv:2302.01734, N-PG-IGT / N-HARPG by the same
authors, was). Everything below is reconstructed [A] from the abstract, the catalogue row and
the STORM template (Cutkosky and Orabona 2019); the exact machinery (utilities, exact
occupancy, F* by cvxpy and Frank-Wolfe) is :mod:`theorylab.algorithms.dual.general_utilities`.

Algorithm [A] (softmax tabular policy, one trajectory per iteration, R independent runs):

* tau_t = (s_0, a_0, ..., s_{H-1}, a_{H-1}) ~ pi_{theta_t} from mu0, truncated at
  ``H = ceil(log(eps) / log(gamma))`` (discounted mass beyond H <= eps);
* occupancy estimate ``lambda_hat(tau) = (1 - gamma) sum_h gamma^h e_{(s_h, a_h)}`` (S, A);
* GPOMDP estimate of ``grad_theta <lambda^theta, z>`` (the chain rule: = grad F(lambda^theta)
  at ``z = grad F(lambda^theta)``): ``g(tau, theta, z) = sum_k (e_{a_k} - pi(.|s_k)) G_k`` in
  row s_k, ``G_k = (1 - gamma) sum_{h >= k} gamma^h z(s_h, a_h)``;
* importance weight ``w_t = prod_h pi_{t-1}(a_h|s_h) / pi_t(a_h|s_h)`` (transitions cancel), so
  ``E_{tau ~ pi_t}[w_t f(tau)] = E_{tau ~ pi_{t-1}}[f(tau)]``;
* recursions (eta_t the momentum weight):
  ``lambda_t = eta_t lambda_hat + (1 - eta_t)(lambda_{t-1} + (1 - w_t) lambda_hat)``,
  ``d_t = eta_t g(tau_t, theta_t, z_{t-1}) + (1 - eta_t)(d_{t-1} + g(tau_t, theta_t, z_{t-1})
  - w_t g(tau_t, theta_{t-1}, z_{t-2}))``, then ``z_t = grad F(max(lambda_t, floor))``;
* normalised step ``theta_{t+1} = theta_t + alpha_t d_t / ||d_t||``.

The pseudo-rewards in d_t are *lagged* (z_{t-1}, z_{t-2}: computed before tau_t is drawn). This
matters, measured: with ``z_t`` from the same trajectory (``LAGGED = False``, the registered
mutation ``vrpg-same-sample-reward``) the correction term is correlated with its own reward, a
bias of order eta_t + |1 - w_t| per step that the recursion accumulates to O(1): d_t shrinks
towards 0 and turns away from the gradient (cosine -0.4 to -0.9 after 200 iterations on the
entropy utility), and the gap stalls.

Schedules [A] (the paper's were not read; O(1/t) for both is what makes a STORM error
O(t^-1/2)): ``alpha_t = alpha0 / (t + t0)``, ``eta_t = min(1, eta0 / (t + t0))``
(:func:`schedules`). ``eta0 = inf`` gives eta_t = 1: plain normalised stochastic PG, one
trajectory per step (the baseline without variance reduction). Deviations: the first d_0,
lambda_0 from tau_0 alone; grad F is taken at ``max(lambda_t, floor)`` (kl-expert's gradient is
unbounded at the boundary and a STORM estimate can leave the simplex); H-truncation biases the
estimates by O(eps).

Measured (``nvr-pg-global-rate``; random:S=4,A=2,gamma=0.5, kl-expert, defaults): the
seed-mean gap falls with log-log slope about -1 over T = 10^3..3*10^4 (64 runs: -0.997
[-1.080, -0.915] on MDP seed 0; 16 runs, T = 10^4: -1.12 to -1.17 on seeds 1-3), faster than the
theorem's T^-1/2: at an interior optimum the gap is quadratic in the distance, and the distance
falls like the estimator error, t^-1/2. The same normalised steps with exact gradients reach
1e-8 by T = 333 (slope -2.5), so the noise sets the rate. On random:S=5,A=3,gamma=0.7 the slope
over T = 333..10^4 is -0.75 (final gap 2.8e-2, still in transit). Variants at 32 runs,
T = 3*10^4 (slope, final mean gap; N-VR-PG: -1.04, 4.5e-4): eta_t = 1 (no variance reduction)
-0.08, 4.9e-2; momentum without the STORM correction -0.11, 3.8e-2; no importance weights
(w = 1) +0.17, 0.12; same-sample pseudo-reward +0.13, 0.62. Where F* sits at a vertex (the
entropy utility on this model), large early steps saturate the softmax at a wrong vertex (gap
stuck at 0.084): not claimed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
from scipy.special import softmax

from theorylab.algorithms.dual.general_utilities import Utility, make_utility
from theorylab.algorithms.planning.lp import occupancy_measure
from theorylab.algorithms.policy_optimization.path import PolicyPath, check_iterations, check_number

WHO = "general-utility-vr-pg"
KINDS = {"entropy": 0, "kl-expert": 1, "linear": 2}
LAGGED = True  # the pseudo-rewards of d_t computed before tau_t (False: the mutation)


@numba.njit(cache=True)
def _pseudo_reward(kind, lam, expert, reward, floor, out):
    """``out (S, A) = grad F(max(lambda, floor))`` for the utility ``kind`` (KINDS)."""
    S, A = lam.shape
    for s in range(S):
        d = 0.0
        for a in range(A):
            d += lam[s, a]
        for a in range(A):
            if kind == 0:
                out[s, a] = -(math.log(max(d, floor)) + 1.0)
            elif kind == 1:
                out[s, a] = -(math.log(max(lam[s, a], floor) / expert[s, a]) + 1.0)
            else:
                out[s, a] = reward[s, a]


@numba.njit(cache=True)
def _softmax_rows(theta, pi):
    S, A = theta.shape
    for s in range(S):
        m = theta[s].max()
        total = 0.0
        for a in range(A):
            pi[s, a] = math.exp(theta[s, a] - m)
            total += pi[s, a]
        for a in range(A):
            pi[s, a] /= total


@numba.njit(cache=True)
def _sample(pi, cumP, cum_mu, u, states, actions):
    """One truncated trajectory under ``pi (S, A)`` into ``states, actions (H,)``, driven by the
    uniforms ``u (2H,)``."""
    S, A = pi.shape
    s = min(np.searchsorted(cum_mu, u[0], side="right"), S - 1)
    for h in range(states.shape[0]):
        a = 0
        acc = pi[s, 0]
        while acc <= u[2 * h + 1] and a < A - 1:
            a += 1
            acc += pi[s, a]
        states[h] = s
        actions[h] = a
        if h + 1 < states.shape[0]:
            s = min(np.searchsorted(cumP[s, a], u[2 * h + 2], side="right"), S - 1)


@numba.njit(cache=True)
def _occupancy_estimate(states, actions, gamma, out):
    """``out (S, A) = (1 - gamma) sum_h gamma^h e_{(s_h, a_h)}``."""
    out[:] = 0.0
    for h in range(states.shape[0]):
        out[states[h], actions[h]] += (1.0 - gamma) * gamma**h


@numba.njit(cache=True)
def _gradient_estimate(states, actions, pi, z, gamma, out):
    """GPOMDP ``out (S, A)`` of ``grad_theta <lambda^theta, z>`` at the softmax ``pi (S, A)``."""
    out[:] = 0.0
    G = 0.0
    for k in range(states.shape[0] - 1, -1, -1):
        s, a = states[k], actions[k]
        G += (1.0 - gamma) * gamma**k * z[s, a]
        for b in range(pi.shape[1]):
            out[s, b] -= G * pi[s, b]
        out[s, a] += G


@numba.njit(cache=True)
def _importance_weight(states, actions, pi_old, pi):
    """``prod_h pi_old(a_h|s_h) / pi(a_h|s_h)``."""
    lw = 0.0
    for h in range(states.shape[0]):
        lw += math.log(pi_old[states[h], actions[h]]) - math.log(pi[states[h], actions[h]])
    return math.exp(lw)


@numba.njit(cache=True)
def _run(cumP, cum_mu, gamma, kind, expert, reward, floor, alpha, eta, lagged, cps, U):
    """One N-VR-PG run of T = len(alpha) iterations driven by the uniforms ``U (T, 2H)``;
    thetas ``(C, S, A)`` after the iterations ``cps (C,)`` (increasing, in 1..T)."""
    S, A = expert.shape
    T, C, H = alpha.shape[0], cps.shape[0], U.shape[1] // 2
    thetas = np.zeros((C, S, A))
    states = np.empty(H, np.int64)
    actions = np.empty(H, np.int64)
    theta = np.zeros((S, A))
    pi, pi_old = np.empty((S, A)), np.empty((S, A))
    lam, lam_hat, d = np.zeros((S, A)), np.zeros((S, A)), np.zeros((S, A))
    z, z_old = np.zeros((S, A)), np.zeros((S, A))
    g_new, g_old = np.zeros((S, A)), np.zeros((S, A))
    _softmax_rows(theta, pi)
    c = 0
    for t in range(T):
        _sample(pi, cumP, cum_mu, U[t], states, actions)
        _occupancy_estimate(states, actions, gamma, lam_hat)
        if t == 0:
            lam[:] = lam_hat
            _pseudo_reward(kind, lam, expert, reward, floor, z)
            _gradient_estimate(states, actions, pi, z, gamma, d)
            z_old[:] = z
        else:
            e = eta[t]
            w = _importance_weight(states, actions, pi_old, pi)
            lam[:] = e * lam_hat + (1.0 - e) * (lam + (1.0 - w) * lam_hat)
            if not lagged:  # the mutation: z_t from tau_t itself
                z_old[:] = z
                _pseudo_reward(kind, lam, expert, reward, floor, z)
            _gradient_estimate(states, actions, pi, z, gamma, g_new)
            _gradient_estimate(states, actions, pi_old, z_old, gamma, g_old)
            d[:] = e * g_new + (1.0 - e) * (d + g_new - w * g_old)
            if lagged:
                z_old[:] = z
                _pseudo_reward(kind, lam, expert, reward, floor, z)
        norm = math.sqrt((d * d).sum())
        pi_old[:] = pi
        if norm > 0.0:
            theta += alpha[t] * d / norm
        _softmax_rows(theta, pi)
        while c < C and cps[c] == t + 1:
            thetas[c] = theta
            c += 1
    return thetas


def schedules(T: int, alpha0: float, t0: float, eta0: float) -> tuple[np.ndarray, np.ndarray]:
    """``(alpha_t, eta_t)`` for t = 0..T-1: ``alpha0 / (t + t0)``, ``min(1, eta0 / (t + t0))``."""
    t = np.arange(T, dtype=np.float64)
    return alpha0 / (t + t0), np.minimum(1.0, eta0 / (t + t0))


def horizon(gamma: float, eps: float) -> int:
    """``H = ceil(log(eps) / log(gamma))``: the discounted mass beyond H is gamma^H <= eps."""
    return max(1, int(math.ceil(math.log(eps) / math.log(gamma))))


def trajectory_estimates(
    states: np.ndarray,
    actions: np.ndarray,
    pi: np.ndarray,
    pi_old: np.ndarray,
    z: np.ndarray,
    gamma: float,
) -> tuple[np.ndarray, np.ndarray, float]:
    """The per-trajectory pieces (for tests): ``(lambda_hat (S, A), g(tau, pi, z) (S, A), w)``
    with ``w = P(tau | pi_old) / P(tau | pi)``."""
    states = np.ascontiguousarray(states, dtype=np.int64)
    actions = np.ascontiguousarray(actions, dtype=np.int64)
    lam, g = np.zeros(pi.shape), np.zeros(pi.shape)
    _occupancy_estimate(states, actions, gamma, lam)
    _gradient_estimate(states, actions, pi, np.asarray(z, dtype=np.float64), gamma, g)
    return lam, g, float(_importance_weight(states, actions, pi_old, pi))


@dataclass(frozen=True)
class VRPath:
    """R runs scored exactly: F(lambda^{theta_t}) ``(R, C)`` after the iterations
    ``checkpoints (C,)`` (one trajectory each), and the thetas there ``(R, C, S, A)``."""

    values: np.ndarray
    checkpoints: np.ndarray
    thetas: np.ndarray


def nvr_pg(
    mdp,
    F: Utility,
    iterations: int,
    *,
    runs: int = 1,
    alpha0: float = 1.0,
    t0: float = 10.0,
    eta0: float = 2.0,
    eps: float = 1e-7,
    floor: float = 1e-6,
    checkpoints: np.ndarray | None = None,
    seed: int = 0,
) -> VRPath:
    """N-VR-PG from theta = 0, ``runs`` independent runs of T = ``iterations``; F(lambda^theta)
    scored exactly (linear solve) at ``checkpoints`` (default 1..T)."""
    S, A, g = mdp.S, mdp.A, F.gamma
    cps = np.arange(1, iterations + 1) if checkpoints is None else np.asarray(checkpoints)
    cps = np.unique(cps.astype(np.int64))
    P = mdp.P_flat(0).reshape(S, A, S)
    alpha, eta = schedules(iterations, alpha0, t0, eta0)
    expert = F.expert if F.expert is not None else np.ones((S, A))
    reward = F.gradient(np.ones((S, A))) if F.name == "linear" else np.zeros((S, A))
    H = horizon(g, eps)
    args = (
        np.cumsum(P, axis=-1),
        np.cumsum(mdp.mu0),
        g,
        KINDS[F.name],
        np.ascontiguousarray(expert, dtype=np.float64),
        np.ascontiguousarray(reward, dtype=np.float64),
        floor,
        alpha,
        eta,
        LAGGED,
        cps,
    )
    streams = np.random.SeedSequence(seed).spawn(runs)  # run r's stream: independent of R
    thetas = np.stack(
        [_run(*args, np.random.default_rng(ss).random((iterations, 2 * H))) for ss in streams]
    )  # (R, C, S, A)
    values = np.array(
        [
            [F.value(occupancy_measure(mdp, softmax(th, axis=-1), gamma=g)) for th in run]
            for run in thetas
        ]
    )
    return VRPath(values, cps, thetas)


def run_vr_pg(
    mdp,
    iterations: int,
    utility: str = "kl-expert",
    alpha0: float = 1.0,
    t0: float = 10.0,
    eta0: float = 2.0,
    eps: float = 1e-7,
    seed: int = 0,
    expert_seed: int = 0,
) -> PolicyPath:
    """The registered entry (one run): checks, then :func:`nvr_pg`, scored every iteration
    (objective[k] = F(lambda^{pi_k}), k = 0..T, pi_0 uniform)."""
    T = check_iterations(WHO, iterations)
    alpha0 = check_number(WHO, "alpha0", alpha0)
    t0 = check_number(WHO, "t0", t0)
    eta0 = check_number(WHO, "eta0", eta0)
    eps = check_number(WHO, "eps", eps)
    if eps >= 1:
        raise ValueError(f"{WHO}: eps must be in (0, 1), got {eps!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"{WHO}: seed must be a non-negative integer, got {seed!r}")
    F = make_utility(mdp, utility, expert_seed)
    path = nvr_pg(mdp, F, T, alpha0=alpha0, t0=t0, eta0=eta0, eps=eps, seed=int(seed))
    uniform = np.full((mdp.S, mdp.A), 1.0 / mdp.A)
    values = np.concatenate(
        [[F.value(occupancy_measure(mdp, uniform, gamma=F.gamma))], path.values[0]]
    )
    return PolicyPath(
        objective=values,
        regularised=values,
        entropy=np.full(T + 1, np.nan),
        target_gap=np.full(T + 1, np.nan),
        target_value=float("nan"),
        policies=np.log(
            softmax(np.concatenate([np.zeros((1, mdp.S, mdp.A)), path.thetas[0]]), axis=-1)
        ),
        config={
            "utility": utility,
            "alpha0": alpha0,
            "t0": t0,
            "eta0": eta0,
            "eps": eps,
            "seed": int(seed),
            "samples_per_iteration": 1,
        },
    )
