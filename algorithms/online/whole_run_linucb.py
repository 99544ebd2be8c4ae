r"""Whole-run compiled loop of LinUCB / OFUL at small d: K rounds in one numba call per segment.

The episode loop of ``theorylab.runners.online`` for :class:`~theorylab.algorithms.online.
linucb.LinUCB` (Abbasi-Yadkori, Pal, Szepesvari 2011, Algorithm 1 with the radius of Theorem 2;
the bound it carries, ``oful-abbasi2011``, is unchanged), parallel over seeds (``prange``). Each
round of a one-step (H = 1) linear bandit, with context s ~ mu0 and arms phi(s, .):

1. the value estimate sum_s mu0(s) max_a UCB_t(s, a);
2. the exact regret V* - sum_s mu0(s) r(s, pi_t(s)) of the optimistic arm pi_t(s) =
   argmax_a UCB_t(s, a) (first maximiser);
3. the round, from the environment's uniforms (1 + 3 per round, numpy's PCG64 stream stepped by
   :func:`~theorylab.kernels.pcg64.pcg64_random` exactly as the Python
   loop's ``rng.random(4)``): the context, a Bernoulli (or deterministic) reward;
4. the Sherman-Morrison update of V_t^{-1} with x = phi(s, a): u = V^{-1} x,
   V^{-1} <- V^{-1} - u u^T / (1 + x^T u), log det V_{t+1} = log det V_t + log(1 + x^T u)
   (matrix determinant lemma), sum x r <- sum x r + x r;
5. the next UCBs: theta_hat = V^{-1} sum x r, UCB(s, a) = <phi(s, a), theta_hat> +
   scale sqrt(beta_t) ||phi(s, a)||_{V^{-1}} with sqrt(beta_t) = R sqrt(2 (log det V_t / 2 -
   d log(lambda) / 2 + log(1 / delta))) + sqrt(lambda) S (:func:`~theorylab.algorithms.online.
   linucb.oful_radius`).

Agreement with the Python loop (tests/test_whole_run.py): the Python agent multiplies its small
matrices with numpy's ``matmul`` (BLAS or numpy's own loops, whose summation order depends on
the build, the CPU and the shapes), so the two agree to round-off, not bit for bit: V^{-1},
theta_hat and the UCBs to 1e-12, and the arms played, hence the rewards, the trajectories and
the exact regret (a function of the arms alone), are identical as long as no two arms' UCBs tie
to within round-off (the test checks identical trajectories and regret over hundreds of rounds).
Here every product is a left-to-right sum.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numba import njit, prange

from theorylab.algorithms.online.segmented_loop import SegmentedLoop
from theorylab.algorithms.online.whole_run_kernel import pairwise_sum
from theorylab.kernels.pcg64 import pcg64_random

STATE_FIELDS = ("V_inv", "xr", "logdet", "ucb")


@njit(cache=True, error_model="numpy")
def _ucbs(phi, V_inv, xr, logdet, consts, theta, ucb):
    """UCB(s, a) for every row of phi (SA, d) into ucb (SA,): the plan of ``LinUCB.plan``.
    consts = [R, log(1 / delta), sqrt(lambda) S, scale]."""
    SA, d = phi.shape
    for i in range(d):  # theta_hat = V^{-1} sum x r
        acc = 0.0
        for j in range(d):
            acc += V_inv[i, j] * xr[j]
        theta[i] = acc
    radius = consts[3] * (consts[0] * np.sqrt(2.0 * (0.5 * logdet + consts[1])) + consts[2])
    for r in range(SA):
        mean = 0.0
        quad = 0.0
        for j in range(d):
            mean += phi[r, j] * theta[j]
            xm = 0.0  # (x^T V^{-1})_j
            for i in range(d):
                xm += phi[r, i] * V_inv[i, j]
            quad += xm * phi[r, j]
        quad = quad if quad > 0.0 else 0.0  # clipped at 0 against round-off
        ucb[r] = mean + radius * np.sqrt(quad)


@njit(parallel=True, cache=True, error_model="numpy")
def run_linucb_segment(
    phi, consts, R, bernoulli, mu0, mu0_cdf, last_mu0, v_star, V_inv, xr, logdet, ucb, rng,
    regret, returns, estimates,
):  # fmt: skip
    """The next n rounds of every seed (module docstring), parallel over seeds.

    phi (S*A, d) arm features; consts as in :func:`_ucbs`; R (1, S, A) mean rewards; mu0,
    mu0_cdf (S,), last_mu0; v_star. State, in place: V_inv (B, d, d), xr (B, d), logdet (B,)
    (log det V_t - d log lambda), ucb (B, S*A). rng (B, 4) uint64 PCG64 states. Out: regret,
    returns, estimates (B, n).
    """
    B, n = regret.shape
    SA, d = phi.shape
    S = mu0.shape[0]
    A = SA // S
    for b in prange(B):
        w = np.zeros(S)
        u = np.zeros(d)
        theta = np.zeros(d)
        ub = ucb[b]
        Vb = V_inv[b]
        for k in range(n):
            # (1) value estimate and (2) exact regret of the optimistic arms
            for s in range(S):
                best = ub[s * A]
                for a in range(1, A):
                    best = ub[s * A + a] if ub[s * A + a] > best else best
                w[s] = best * mu0[s]
            estimates[b, k] = pairwise_sum(w, 0, S)
            for s in range(S):
                a = _argmax(ub, s * A, A)
                w[s] = (R[0, s, a] + 0.0) * mu0[s]  # V^pi_1(s) = r(s, pi(s)) + P V_2, V_2 = 0
            regret[b, k] = v_star - pairwise_sum(w, 0, S)

            # (3) the round from its 1 + 3 uniforms [context, (arm, next, reward)]
            u0 = pcg64_random(rng[b])
            pcg64_random(rng[b])  # a stochastic policy's action uniform (unused)
            pcg64_random(rng[b])  # the next state's uniform (one state after the round)
            u3 = pcg64_random(rng[b])
            c = 0
            for x in range(S):
                if mu0_cdf[x] <= u0:
                    c += 1
            s = min(c, last_mu0)
            a = _argmax(ub, s * A, A)
            mean = R[0, s, a]
            rwd = (1.0 if u3 < mean else 0.0) if bernoulli else mean
            returns[b, k] = rwd

            # (4) Sherman-Morrison: u = V^{-1} x, denom = 1 + x^T u
            row = s * A + a
            denom = 0.0
            for i in range(d):
                acc = 0.0
                for j in range(d):
                    acc += Vb[i, j] * phi[row, j]
                u[i] = acc
                denom += phi[row, i] * acc
            denom = 1.0 + denom
            for i in range(d):
                for j in range(d):
                    Vb[i, j] -= (u[i] * u[j]) / denom
            logdet[b] += np.log(denom)
            for i in range(d):
                xr[b, i] += phi[row, i] * rwd

            # (5) the next round's UCBs
            _ucbs(phi, Vb, xr[b], logdet[b], consts, theta, ub)


@njit(cache=True, error_model="numpy", inline="always")
def _argmax(x, lo, n):
    """First maximiser of ``x[lo : lo + n]`` (``ndarray.argmax``)."""
    best = x[lo]
    arg = 0
    for i in range(1, n):
        if x[lo + i] > best:
            best = x[lo + i]
            arg = i
    return arg


class LinUCBLoop(SegmentedLoop):
    """The state of B seeds of LinUCB on one linear bandit, advanced by the compiled kernel;
    the interface of :class:`~theorylab.algorithms.online.whole_run.CompiledLoop` (so
    :func:`~theorylab.algorithms.online.whole_run.run_whole` segments, checkpoints and resumes
    it). agent: a freshly constructed LinUCB (its constants and initial plan are read)."""

    STATE_FIELDS = STATE_FIELDS

    def __init__(self, agent, mdp, v_star: float, env_rngs: Sequence[np.random.Generator]):
        if mdp.horizon != 1:
            raise ValueError(f"linucb runs one-step bandits (H = 1), got H = {mdp.horizon}")
        B = agent.n_seeds
        if len(env_rngs) != B:
            raise ValueError(f"got {len(env_rngs)} environment generators for {B} seeds")
        self.B, self.env_rngs, self.v_star = B, list(env_rngs), float(v_star)
        self.episodes_done = 0
        self.incremental = True  # (the tabular loop's switch; nothing to skip here)
        self.phi = np.ascontiguousarray(agent.phi_flat, dtype=np.float64)  # (S*A, d)
        self.consts = np.array(
            [
                agent.noise,
                math.log(1.0 / agent.delta),
                math.sqrt(agent.lam) * agent.theta_norm,
                agent.scale,
            ]
        )
        from theorylab.backends import transition_model

        model = transition_model(mdp)  # the rollout's sampler, as CompiledLoop uses it
        _, _, mu0_cdf, last_mu0 = model.sampler()
        self.model_args = (
            np.ascontiguousarray(np.asarray(model.R, dtype=np.float64)[:1]),  # (1, S, A)
            bool(model.bernoulli), np.ascontiguousarray(model.mu0, dtype=np.float64), mu0_cdf,
            int(last_mu0), self.v_star,
        )  # fmt: skip
        self.state = {
            "V_inv": agent.V_inv.copy(),
            "xr": agent.xr.copy(),
            "logdet": agent.logdet_ratio.copy(),
            "ucb": np.ascontiguousarray(agent.ucb.reshape(B, -1), dtype=np.float64),
        }

    def _run_segment(self, rng: np.ndarray, out: dict[str, np.ndarray]) -> None:
        st = self.state
        run_linucb_segment(
            self.phi, self.consts, *self.model_args, st["V_inv"], st["xr"], st["logdet"],
            st["ucb"], rng, out["regret"], out["returns"], out["estimates"],
        )  # fmt: skip
