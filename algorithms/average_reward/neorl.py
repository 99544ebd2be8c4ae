"""NeoRL (Sukhija, Treven, Dorfler, Coros & Krause 2024): optimistic planning over hallucinated
controls with a Gaussian-process dynamics model, one trajectory without resets, average cost.

Seed reference: ``seed-catalogue-000.md#38`` (tier A). Paper: B. Sukhija, L. Treven,
F. Dorfler, S. Coros, A. Krause, "NeoRL: Efficient Exploration for Nonepisodic RL", NeurIPS 2024,
arXiv:2406.01175. What was read: the abstract and review summaries [V] (optimism over the
epistemic uncertainty of a well-calibrated probabilistic model; regret ``O(beta_T sqrt(T
Gamma_T))`` / ``O(Gamma_T sqrt(T))`` for GP dynamics; the average-cost criterion; convergence to
the optimal average cost in experiments). The paper's algorithm box, its re-planning schedule and
beta_T were not read: reconstructed [A] below on the grid system ``gp-dynamics``
(:mod:`theorylab.mdps.families.gp_dynamics`), where the GP posterior is exact.

Algorithm [A]. Known: the grid, the prior mean ``m0(x, u)``, the kernel K, the noise sigma_n and
the cost. Observed after each step: ``y_t = f(x_t, u_t) + sigma_n eps_t`` (the next state is
y's grid cell).

1. **Exact GP posterior** on the grid pairs (:func:`theorylab.kernels.gp.gp_posterior`, the
   library's one exact GP, shared with CONFIG and MBTL; by a Cholesky factor): with ``n_z``
   observations and mean ``ybar_z`` at each observed pair z, ``mu = m0 + K_(.,O) (K_OO +
   diag(sigma_n^2 / n_O))^-1 (ybar_O - m0_O)`` and ``sigma^2 = diag K - diag(K_(.,O) (...)^-1
   K_(O,.))`` (repeated inputs pooled: the same posterior as conditioning on every y).
2. **Hallucinated control.** The optimistic model has actions ``(u, eta)``, ``eta`` on an even
   grid of ``[-1, 1]`` (``n_eta`` points): ``f~(x, u, eta) = mu(x, u) + beta sigma(x, u) eta``
   and the next cell drawn as y ~ N(f~, sigma_n^2) would be. Relative value iteration on it
   (aperiodicity transform tau = 0.5, to ``sp(diff) < 1/sqrt(t)``) maximises the average reward
   ``1 - c / c_max``, i.e. minimises the average cost, jointly over u and eta; play the u part.
3. **Re-planning** when ``prod_z (1 + n_z)`` doubles (the information of the pooled
   observations; as LOOP's tabular rule), so O(nx nu log T) plans.

Constants: beta = 2 (NeoRL's beta_T grows with sqrt(Gamma_T + log(1/delta)); a constant is
used here [A]), n_eta = 5. Diagnostics: ``replans (B, G)``; per plan ``plan_start``,
``gain_upper`` (the optimistic gain, 1 - optimistic average cost / c_max), ``calibrated`` (1
when ``|f - mu| <= beta sigma`` at every grid pair: the well-calibration NeoRL assumes),
``rvi_iterations``. One numba kernel per seed.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from theorylab.algorithms.average_reward.run_record import StepRun, recorded_run, step_grid
from theorylab.algorithms.average_reward.ucrl2 import start_state, truncate
from theorylab.algorithms.online.segmented_loop import pcg64_states
from theorylab.algorithms.registry import register
from theorylab.kernels.gp import gp_posterior
from theorylab.kernels.pcg64 import pcg64_random

BOUND = "sukhija2024-neorl-regret"
DOUBLING = math.log(2.0)
MAX_RECORDED = 4096


def beta_scale() -> float:
    """A multiplier on beta (1: as given)."""
    return 1.0


@njit(cache=True)
def cell_mass(mean, noise, bounds, out):
    """``out (nx,)``: the mass of each cell under N(mean, noise^2) (bounds ``(nx + 1,)``)."""
    nx = out.shape[0]
    prev = 0.0
    for i in range(nx):
        b = bounds[i + 1]
        c = 1.0 if b == np.inf else 0.5 * (1.0 + math.erf((b - mean) / (noise * math.sqrt(2.0))))
        out[i] = c - prev
        prev = c


@njit(cache=True)
def optimistic_rvi(mu, sigma, beta, etas, R, noise, bounds, eps, cap, tau):
    """Relative VI over actions (u, eta): ``(u-policy (nx,), gain_lower, gain_upper, sweeps)``;
    ``mu, sigma (nx, nu)``."""
    nx, nu = R.shape
    ne = etas.shape[0]
    Pt = np.zeros((nx, nu, ne, nx))
    for s in range(nx):
        for a in range(nu):
            for e in range(ne):
                cell_mass(mu[s, a] + beta * sigma[s, a] * etas[e], noise, bounds, Pt[s, a, e])
    h = np.zeros(nx)
    new = np.zeros(nx)
    pol = np.zeros(nx, np.int64)
    lo, hi = 0.0, 0.0
    for it in range(1, cap + 1):
        for s in range(nx):
            best, arg = -np.inf, 0
            for a in range(nu):
                for e in range(ne):
                    val = R[s, a]
                    for y in range(nx):
                        val += Pt[s, a, e, y] * h[y]
                    if val > best:
                        best, arg = val, a
            new[s] = (1.0 - tau) * h[s] + tau * best
            pol[s] = arg
        lo, hi = truncate(new, h, np.inf)
        lo, hi = lo / tau, hi / tau
        if hi - lo < eps:
            return pol, lo, hi, it
    return pol, lo, hi, cap


@njit(cache=True)
def normal(rng_state):
    """One N(0, 1) draw by Box-Muller from two PCG64 uniforms."""
    u1 = max(pcg64_random(rng_state), 1e-300)
    u2 = pcg64_random(rng_state)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@njit(cache=True)
def neorl_seed(f, P, prior, K, R, noise, bounds, beta, etas, T, s0, rng_state, grid, cap, max_rec):
    """One seed: ``(reward_sum (G,), replans (G,), recs (4, max_rec), n_plans)``; ``f, P``
    the true system (simulation and the calibration diagnostic only)."""
    nx, nu = R.shape
    m = nx * nu
    n = np.zeros(m)
    ysum = np.zeros(m)
    out = np.zeros(grid.shape[0])
    plans_out = np.zeros(grid.shape[0])
    recs = np.full((4, max_rec), np.nan)
    pol = np.zeros(nx, np.int64)
    logdet, last = 0.0, 0.0
    s, gi, cum, n_pl = s0, 0, 0.0, 0
    for t in range(1, T + 1):
        if n_pl == 0 or logdet - last >= DOUBLING:
            mu, sd = gp_posterior(prior, K, n, ysum, noise)
            calibrated = 1.0
            for z in range(m):
                if abs(f[z // nu, z % nu] - mu[z]) > beta * sd[z]:
                    calibrated = 0.0
            pol, lo, hi, it = optimistic_rvi(
                mu.reshape(nx, nu), sd.reshape(nx, nu), beta, etas, R, noise, bounds,
                1.0 / math.sqrt(t), cap, 0.5,
            )  # fmt: skip
            if n_pl < max_rec:
                recs[0, n_pl], recs[1, n_pl], recs[2, n_pl], recs[3, n_pl] = t, hi, calibrated, it
            n_pl += 1
            last = logdet
        a = pol[s]
        cum += R[s, a]
        while True:  # y ~ N(f, noise^2), redrawn in a cut cell (P is exactly the chain)
            y = f[s, a] + noise * normal(rng_state)
            nxt = nx - 1
            for i in range(nx):
                if y < bounds[i + 1]:
                    nxt = i
                    break
            if P[s, a, nxt] > 0.0:
                break
        z = s * nu + a
        logdet += math.log(2.0 + n[z]) - math.log(1.0 + n[z])
        n[z] += 1.0
        ysum[z] += y
        while gi < grid.shape[0] and grid[gi] == t:
            out[gi] = cum
            plans_out[gi] = n_pl
            gi += 1
        s = nxt
    return out, plans_out, recs, n_pl


def run_seeds(mdp, steps: int, rngs, *, beta: float, n_eta: int, rvi_cap: int) -> StepRun:
    """NeoRL on every seed (one generator each): a :class:`StepRun`."""
    from theorylab.mdps.families.gp_dynamics import cell_bounds

    P = np.ascontiguousarray(mdp.P, dtype=np.float64)  # (nx, nu, nx)
    R = np.ascontiguousarray(mdp.R, dtype=np.float64)  # (nx, nu)
    nx, nu = R.shape
    bounds = cell_bounds(mdp.gp_x)
    b = float(beta) * float(beta_scale())
    etas = np.linspace(-1.0, 1.0, n_eta) if n_eta > 1 else np.zeros(1)
    grid = step_grid(steps)
    prior = np.ascontiguousarray(mdp.gp_prior_mean, dtype=np.float64).ravel()  # (m,)
    K = np.ascontiguousarray(mdp.gp_kernel, dtype=np.float64)  # (m, m)
    f = np.ascontiguousarray(mdp.gp_f, dtype=np.float64)  # (nx, nu)
    s0 = start_state(mdp, nx)
    sums, plans, recs = [], [], []
    for rng in rngs:
        out, pl, rec, _ = neorl_seed(
            f, P, prior, K, R, float(mdp.gp_noise), bounds, b, etas, steps, s0,
            pcg64_states([rng])[0], grid, rvi_cap, min(MAX_RECORDED, steps),
        )  # fmt: skip
        sums.append(out)
        plans.append(pl)
        recs.append(rec)
    names = ("plan_start", "gain_upper", "calibrated", "rvi_iterations")
    return recorded_run(
        grid,
        sums,
        recs,
        names,
        {"replans": plans},
        {"beta": b, "n_eta": int(n_eta), "cost_scale": float(mdp.gp_cost_scale)},
    )


@register(
    "neorl",
    kind="average-reward",
    problem="tabular",
    bounds=(BOUND,),
    papers=("000#38",),
    summary="NeoRL (Sukhija et al. 2024): exact GP posterior, optimistic average-cost planning "
    "over hallucinated controls eta in [-1, 1], re-planning when prod(1 + n) doubles",
)
def neorl(mdp, steps, rngs, beta: float = 2.0, n_eta: int = 5, rvi_cap: int = 100_000):
    """NeoRL on a GP-dynamics model (``gp-dynamics``); ``beta``: the confidence multiplier,
    ``n_eta``: hallucinated-control grid points (1: eta = 0, the mean model only)."""
    if getattr(mdp, "gp_kernel", None) is None:
        raise ValueError(
            f"neorl: the model {getattr(mdp, 'name', mdp)!r} carries no GP prior (gp_kernel); "
            "use gp-dynamics, e.g. gp-dynamics:nx=21,nu=5"
        )
    if not (float(beta) >= 0.0 and math.isfinite(float(beta))):
        raise ValueError(f"neorl: beta must be a finite number >= 0, got {beta!r}")
    if int(n_eta) < 1:
        raise ValueError(f"neorl: n_eta must be a positive integer, got {n_eta!r}")
    if int(rvi_cap) < 1:
        raise ValueError(f"neorl: rvi_cap must be a positive integer, got {rvi_cap!r}")
    return run_seeds(mdp, steps, rngs, beta=float(beta), n_eta=int(n_eta), rvi_cap=int(rvi_cap))
