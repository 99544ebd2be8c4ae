r"""Whole-run compiled loop of ICVaR-HF: the episodes between two reward refits in one numba call.

The episode loop of ``theorylab.runners.online`` for :class:`~theorylab.algorithms.online.
icvar_l.ICVaRHF` (Chen et al. ICLR 2024, reconstructed; the equations and what was read are in
``icvar_l.py``'s docstring), parallel over seeds (``prange``). Each episode k of one seed:

1. the plan (``ICVaRL._plan``): theta_hat = Sigma^{-1} sum X y; the optimistic reward
   r~(s, a) = clip(theta_r_hat(s, a) + gamma ||Q^T e_(s,a)||_{M^{-1}}, -1, 1) + 1; for
   h = H-1..0 and every pair, the S breakpoints x_j = V_{h+1}(s_j), f_j = (x_j - V_{h+1})^+,
   phi_j = sum_t basis[:, s, a, t] f_j(t), lower_j = max{<phi_j, theta_hat> - beta_k
   ||phi_j||_{Sigma^{-1}}, 0}, the first breakpoint within 1e-12 (relative) of
   max_j [x_j - lower_j / alpha] (``first_argmax``), Q_h = r~ + that maximum (no cap), and the
   greedy action with ties (within 1e-12 relative) broken by S A uniforms of the seed's agent
   stream per stage (``ICVaRHF.argmax``: ``rng.random((S, A))``, the largest uniform among the
   tied actions);
2. the value estimate sum_s mu0(s) V_0(s) (numpy's pairwise order) and the exact regret under the
   iterated CVaR at alpha of the greedy policy on the true model (the sorting evaluation of the
   ICVaR-RM kernel, ``whole_run_kernel._cvar_sorted``);
3. the rollout from the environment's 1 + 3H uniforms (the Python loop's ``rng.random(1 + 3H)``);
4. the CVaR-adapted ridge regression (``ICVaRL.update``): per step h, f = (x_hat - V_{h+1})^+ at
   the chosen breakpoint, X = sum_t basis[:, s_h, a_h, t] f(t), Sherman-Morrison on Sigma^{-1}
   with X, sum X y += X f(s_{h+1});
5. the comparison (``ICVaRHF.update``): the trajectory's visit counts minus the previous
   episode's, a BTL label from one uniform of the agent stream (``btl_oracle``: 1 iff u <
   sigmoid(R_k - R_{k-1}), the true returns), and Sherman-Morrison on M^{-1} with Q^T x.

The reward MLE is refitted (``btl_mle``, Python) after each of the first 20 comparisons and then
whenever their number has grown by 1.1 (``REFIT_ALWAYS``, ``REFIT_GROWTH``): :meth:`ICVaRHFLoop.
advance` runs the kernel up to the next refit episode, refits in Python with the very function
and data of the Python agent (the comparisons stored as int8/int16 count differences and 0/1
labels: exact), and goes on. O(log K) refits; their cost grows with the number of comparisons
(``btl_loss`` merges identical rows first).

Agreement with the Python loop (tests/test_whole_run_icvar_hf.py). The Python agent forms
theta_hat, the value features, the elliptical norms and Q^T x with ``einsum`` / ``matmul``,
whose summation order belongs to numpy's build and the CPU (SIMD widths, BLAS); here every
product is a left-to-right sum. So the two agree to round-off (1e-12) on the planned values and
the value estimates, and exactly on everything decided by comparisons: the greedy actions (ties
are within 1e-12 relative on both sides), the agent's and the environment's uniforms (the same
PCG64 streams, stepped here by :func:`~theorylab.kernels.pcg64.pcg64_random`), hence the
trajectories, the labels, the returns, the comparisons the MLE is fitted to (so theta_r_hat is
the same bits) and the exact regret (a function of the played policy alone). The BTL
probability uses ``np.exp`` in the Python agent and libm's ``exp`` here: a label could differ only
if a uniform fell within one ulp of it. Tested over hundreds of episodes on several linear
mixture MDPs and seeds; a 1-ulp change of alpha or the environment's stream in place of the
agent's fails the comparison.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import numpy as np
from numba import njit, prange

from theorylab.algorithms.online.segmented_loop import (
    CURVES,
    SegmentedLoop,
    pcg64_states,
    set_pcg64_states,
    true_model_args,
)
from theorylab.algorithms.online.whole_run_kernel import (
    TIE_TOL,
    _search,
    _sort_values,
    cvar_of_true_row,
    pairwise_sum,
)
from theorylab.kernels.pcg64 import pcg64_random

STATE_FIELDS = ("inv", "xy", "M_inv", "theta_r", "nsa", "prev_feats", "prev_ret")


@njit(cache=True, error_model="numpy", inline="always")
def _quad(M, x):
    """``max(x^T M x, 0)``: the row ``x^T M`` first, then its product with x, left to right."""
    n = x.shape[0]
    quad = 0.0
    for j in range(n):
        xm = 0.0
        for i in range(n):
            xm += x[i] * M[i, j]
        quad += xm * x[j]
    return quad if quad > 0.0 else 0.0


@njit(cache=True, error_model="numpy", inline="always")
def _value_features(basis, s, a, Vn, x, out):
    """``out_i = sum_t basis[i, s, a, t] (x - Vn(t))^+`` (``value_features`` at one pair)."""
    for i in range(basis.shape[0]):
        acc = 0.0
        for t in range(Vn.shape[0]):
            f = x - Vn[t]
            acc += basis[i, s, a, t] * (f if f > 0.0 else 0.0)
        out[i] = acc


@njit(cache=True, error_model="numpy")
def _plan(basis, frame, alpha, gamma, beta, inv, xy, M_inv, theta_r, rng, V, xs, pol, theta,
          rt, phi, g, u, Q):  # fmt: skip
    """One seed's optimistic plan (step 1 of the module docstring) into V (H+1, S), xs (H, S, A)
    chosen breakpoints and pol (H, S); draws H S A uniforms of the agent stream rng (4,).
    Scratch: theta (d,), rt (dR,), phi (d,), g (S,), u (S*A,), Q (S*A,)."""
    d, S, A = basis.shape[0], basis.shape[1], basis.shape[2]
    H = V.shape[0] - 1
    dR = frame.shape[0]
    for i in range(d):  # theta_hat = Sigma^{-1} sum X y
        acc = 0.0
        for j in range(d):
            acc += inv[i, j] * xy[j]
        theta[i] = acc
    for e in range(dR):  # r~ = clip(theta_r + gamma ||Q^T e||_{M^-1}, -1, 1) + 1
        r = theta_r[e] + gamma * np.sqrt(_quad(M_inv, frame[e]))
        r = -1.0 if r < -1.0 else (1.0 if r > 1.0 else r)
        rt[e] = r + 1.0
    for s in range(S):
        V[H, s] = 0.0
    for h in range(H - 1, -1, -1):
        for s in range(S):
            for a in range(A):
                for jj in range(S):  # breakpoint x_j = V_{h+1}(s_j)
                    x = V[h + 1, jj]
                    _value_features(basis, s, a, V[h + 1], x, phi)
                    mean = 0.0
                    for i in range(d):
                        mean += phi[i] * theta[i]
                    lower = mean
                    if beta > 0:
                        lower = mean - beta * np.sqrt(_quad(inv, phi))
                    g[jj] = x - (lower if lower > 0.0 else 0.0) / alpha
                hi = g[0]
                for jj in range(1, S):
                    hi = g[jj] if g[jj] > hi else hi
                thr = hi - TIE_TOL * (1.0 + abs(hi))
                j_star = 0
                while g[j_star] < thr:
                    j_star += 1
                xs[h, s, a] = j_star
                Q[s * A + a] = rt[s * A + a] + g[j_star]
        for i in range(S * A):  # ICVaRHF.argmax: rng.random((S, A)) per stage
            u[i] = pcg64_random(rng)
        for s in range(S):
            hi = Q[s * A]
            for a in range(1, A):
                hi = Q[s * A + a] if Q[s * A + a] > hi else hi
            thr = hi - 1e-12 * (1.0 + abs(hi))
            best, arg = -2.0, 0
            for a in range(A):
                key = u[s * A + a] if Q[s * A + a] >= thr else -1.0
                if key > best:
                    best, arg = key, a
            pol[h, s] = arg
            V[h, s] = Q[s * A + arg]


@njit(cache=True, error_model="numpy", inline="always")
def _sherman_morrison(inv, x, u):
    """In place ``inv <- (inv^{-1} + x x^T)^{-1}`` (u: scratch of x's length)."""
    n = x.shape[0]
    denom = 0.0
    for i in range(n):
        acc = 0.0
        for j in range(n):
            acc += inv[i, j] * x[j]
        u[i] = acc
        denom += x[i] * acc
    denom = 1.0 + denom
    for i in range(n):
        for j in range(n):
            inv[i, j] -= (u[i] * u[j]) / denom


@njit(parallel=True, cache=True, error_model="numpy")
def run_icvar_hf_segment(
    basis, frame, alpha, gamma, betas, H,
    indptr, indices, data, cum, last, n_stages, R, bernoulli, mu0, mu0_cdf, last_mu0, v_star,
    inv, xy, M_inv, theta_r, nsa, prev_feats, prev_ret, diffs, labels, k0,
    env_rng, agent_rng, regret, returns, estimates,
):  # fmt: skip
    """Episodes k0 .. k0+n-1 of every seed (module docstring), parallel over seeds; no refit.

    basis (d, S, A, S); frame (dR, dR-1) the sum-zero basis Q; alpha; gamma the reward radius;
    betas (n,) the transition radius of each episode; H the horizon. True model as
    ``run_segment``'s. State, in place: inv (B, d, d), xy (B, d), M_inv (B, dR-1, dR-1),
    theta_r (B, dR), nsa (B, S, A), prev_feats (B, dR), prev_ret (B,); the comparisons diffs
    (B, cap, dR) and labels (B, cap) (int; comparison i is written at i = episode - 1).
    env_rng, agent_rng (B, 4) PCG64 states. Out: regret, returns, estimates (B, n).
    """
    B, n_ep = regret.shape
    d, S, A = basis.shape[0], basis.shape[1], basis.shape[2]
    dR, m = frame.shape
    n_R = R.shape[0]
    for b in prange(B):
        V = np.zeros((H + 1, S))
        xs = np.zeros((H, S, A), np.int64)
        pol = np.zeros((H, S), np.int64)
        theta, phi, rt = np.zeros(d), np.zeros(d), np.zeros(dR)
        g, uu, Q = np.zeros(S), np.zeros(S * A), np.zeros(S * A)
        vpi = np.zeros((H + 1) * S)
        F = np.zeros(4 * S)
        w = np.zeros(S + 1 + 3 * H + H)
        X, z, sm = np.zeros(d), np.zeros(m), np.zeros(max(d, m))
        feats = np.zeros(dR)
        states = np.zeros(H + 1, np.int64)
        acts = np.zeros(H, np.int64)
        for k in range(n_ep):
            kg = k0 + k  # episodes before this one
            _plan(basis, frame, alpha, gamma, betas[k], inv[b], xy[b], M_inv[b], theta_r[b],
                  agent_rng[b], V, xs, pol, theta, rt, phi, g, uu, Q)  # fmt: skip
            for s in range(S):
                w[s] = V[0, s] * mu0[s]
            estimates[b, k] = pairwise_sum(w, 0, S)
            # exact iterated CVaR^alpha of the greedy policy on the true model
            for s in range(S):
                vpi[H * S + s] = 0.0
            for h in range(H - 1, -1, -1):
                base = min(h, n_stages - 1) * S * A
                hr = min(h, n_R - 1)
                _sort_values(vpi, (h + 1) * S, S, F)
                for s in range(S):
                    a = pol[h, s]
                    vpi[h * S + s] = R[hr, s, a] + cvar_of_true_row(
                        alpha, indptr, indices, data, base + s * A + a, S, F
                    )
            for s in range(S):
                w[s] = vpi[s] * mu0[s]
            regret[b, k] = v_star - pairwise_sum(w, 0, S)
            # rollout from [mu0, (action, next, reward) x H]
            ub = S + H  # the uniforms in w[ub : ub + 1 + 3H], the rewards in w[S : S + H]
            for i in range(1 + 3 * H):
                w[ub + i] = pcg64_random(env_rng[b])
            c = 0
            for x in range(S):
                if mu0_cdf[x] <= w[ub]:
                    c += 1
            s = min(c, last_mu0)
            for t in range(H):
                a = pol[t, s]
                mean = R[min(t, n_R - 1), s, a]
                if bernoulli:
                    w[S + t] = 1.0 if w[ub + 3 + 3 * t] < mean else 0.0
                else:
                    w[S + t] = mean
                states[t], acts[t] = s, a
                s = _search(indptr, indices, cum, last, min(t, n_stages - 1) * S * A + s * A + a,
                            w[ub + 2 + 3 * t])  # fmt: skip
            states[H] = s
            ret = pairwise_sum(w, S, H)
            returns[b, k] = ret
            # CVaR-adapted ridge regression (ICVaRL.update)
            for t in range(H):
                s, a, y = states[t], acts[t], states[t + 1]
                nsa[b, s, a] += 1.0
                x = V[t + 1, xs[t, s, a]]
                _value_features(basis, s, a, V[t + 1], x, X)
                fy = x - V[t + 1, y]
                fy = fy if fy > 0.0 else 0.0
                _sherman_morrison(inv[b], X, sm)
                for i in range(d):
                    xy[b, i] += X[i] * fy
            # the comparison with the previous trajectory (ICVaRHF.update)
            for e in range(dR):
                feats[e] = 0.0
            for t in range(H):
                feats[states[t] * A + acts[t]] += 1.0
            if kg > 0:
                u_lab = pcg64_random(agent_rng[b])
                p = 1.0 / (1.0 + np.exp(-(ret - prev_ret[b])))
                labels[b, kg - 1] = 1 if u_lab < p else 0
                for e in range(dR):
                    diffs[b, kg - 1, e] = int(feats[e] - prev_feats[b, e])
                for j in range(m):  # x @ Q
                    acc = 0.0
                    for e in range(dR):
                        acc += (feats[e] - prev_feats[b, e]) * frame[e, j]
                    z[j] = acc
                _sherman_morrison(M_inv[b], z, sm)
            for e in range(dR):
                prev_feats[b, e] = feats[e]
            prev_ret[b] = ret


def next_refit(k: int, fitted_n: int) -> int:
    """The first episode index ``kg >= k`` (0-based; after its update there are kg comparisons)
    after which ``ICVaRHF.update`` refits: ``kg >= 1`` and (``kg <= REFIT_ALWAYS`` or
    ``kg >= REFIT_GROWTH * fitted_n``), the agent's own float comparison."""
    from theorylab.algorithms.online.icvar_l import REFIT_ALWAYS, REFIT_GROWTH

    c = max(k, 1)
    if c <= REFIT_ALWAYS:
        return c
    t = max(c, math.ceil(REFIT_GROWTH * fitted_n))
    while t > c and t - 1 >= REFIT_GROWTH * fitted_n:
        t -= 1
    while t < REFIT_GROWTH * fitted_n:
        t += 1
    return t


class ICVaRHFLoop(SegmentedLoop):
    """The state of B seeds of ICVaR-HF on one linear mixture MDP, advanced by the compiled
    kernel between the reward refits (made in Python by ``btl_mle``); the interface of
    :class:`~theorylab.algorithms.online.whole_run.CompiledLoop`, so that
    :func:`~theorylab.algorithms.online.whole_run.run_whole` segments, checkpoints and resumes
    it. agent: a freshly constructed ICVaRHF (its constants and initial state are read; its
    agent generators are stepped by the kernel)."""

    STATE_FIELDS = STATE_FIELDS

    def __init__(self, agent, mdp, v_star: float, env_rngs: Sequence[np.random.Generator]):
        if mdp.horizon is None:
            raise ValueError(f"{mdp!r} has no finite horizon; online episodic runs need one")
        B = agent.n_seeds
        if len(env_rngs) != B:
            raise ValueError(f"got {len(env_rngs)} environment generators for {B} seeds")
        if agent._V is not None or agent._prev is not None:
            raise ValueError("the compiled ICVaR-HF loop starts from a freshly built agent")
        self.agent = agent
        self.B, self.env_rngs, self.v_star = B, list(env_rngs), float(v_star)
        self.agent_rngs = list(agent.rngs)
        self.H = H = int(mdp.horizon)
        self.episodes_done = 0
        self.fitted_n = 0
        self.basis = np.ascontiguousarray(agent.basis, dtype=np.float64)  # (d, S, A, S)
        self.frame = np.ascontiguousarray(agent.frame, dtype=np.float64)  # (dR, dR-1)
        self.alpha, self.gamma = float(agent.alpha), float(agent.gamma)
        self.model_args = true_model_args(mdp, self.v_star)
        dR = self.frame.shape[0]
        self.diff_dtype = np.int8 if H <= 127 else np.int32  # count differences in [-H, H]
        self.diffs = np.zeros((B, 0, dR), self.diff_dtype)  # (B, capacity, dR)
        self.labels = np.zeros((B, 0), np.int8)  # (B, capacity)
        self.state = {
            "inv": agent.inv.copy(),
            "xy": agent.xy.copy(),
            "M_inv": agent.M_inv.copy(),
            "theta_r": agent.theta_r.copy(),
            "nsa": agent.n.copy(),
            "prev_feats": np.zeros((B, dR)),
            "prev_ret": np.zeros(B),
        }

    def betas(self, k0: int, n: int) -> np.ndarray:
        """beta_k of episodes k0 .. k0+n-1 (``ICVaRL.beta`` after k H regressions), ``(n,)``."""
        from theorylab.algorithms.online.icvar_l import icvar_l_beta

        a, Hv = self.agent, self.agent.value_range
        return np.array(
            [
                a.bonus_scale
                * icvar_l_beta(a.d, Hv, k * self.H, a.lam, a.delta, Hv * a.L_phi, a.theta_norm)
                for k in range(k0, k0 + n)
            ],
            dtype=np.float64,
        )

    def _reserve(self, n: int) -> None:
        """Room for ``n`` comparisons in ``diffs`` / ``labels`` (doubling)."""
        cap = self.labels.shape[1]
        if n <= cap:
            return
        new = max(n, 2 * cap, 1024)
        diffs = np.zeros((self.B, new, self.diffs.shape[2]), self.diff_dtype)
        labels = np.zeros((self.B, new), np.int8)
        diffs[:, :cap], labels[:, :cap] = self.diffs, self.labels
        self.diffs, self.labels = diffs, labels

    def _refit(self) -> None:
        """``ICVaRHF.update``'s refit: the BTL MLE on every comparison so far."""
        from theorylab.algorithms.preference.mle import btl_mle

        n = self.episodes_done - 1
        S, A = self.basis.shape[1], self.basis.shape[2]
        X = self.diffs[:, :n].astype(np.float64)  # (B, n, dR)
        Y = self.labels[:, :n].astype(np.float64)  # (B, n)
        self.state["theta_r"][...] = btl_mle(X, Y, math.sqrt(S * A))
        self.fitted_n = n

    def _kernel(self, n: int, out: dict[str, np.ndarray], lo: int) -> None:
        st = self.state
        env, agt = pcg64_states(self.env_rngs), pcg64_states(self.agent_rngs)
        k0 = self.episodes_done
        self._reserve(k0 + n)
        cut = {name: np.empty((self.B, n)) for name in CURVES}
        run_icvar_hf_segment(
            self.basis, self.frame, self.alpha, self.gamma, self.betas(k0, n), self.H,
            *self.model_args,
            st["inv"], st["xy"], st["M_inv"], st["theta_r"], st["nsa"], st["prev_feats"],
            st["prev_ret"], self.diffs, self.labels, k0, env, agt,
            cut["regret"], cut["returns"], cut["estimates"],
        )  # fmt: skip
        set_pcg64_states(self.env_rngs, env)
        set_pcg64_states(self.agent_rngs, agt)
        for name in CURVES:
            out[name][:, lo : lo + n] = cut[name]
        self.episodes_done += n

    def advance(self, n: int) -> dict[str, np.ndarray]:
        """Run the next ``n`` episodes of every seed, refitting the reward where the agent does;
        returns ``regret``, ``returns`` and ``estimates``, each ``(B, n)`` (n = 0 compiles)."""
        out = {name: np.empty((self.B, n)) for name in CURVES}
        if n == 0:
            self._kernel(0, out, 0)
            return out
        ran = 0
        while ran < n:
            stop = next_refit(self.episodes_done, self.fitted_n)  # refit after this episode
            m = min(n - ran, stop - self.episodes_done + 1)
            self._kernel(m, out, ran)
            ran += m
            if self.episodes_done == stop + 1:
                self._refit()
        return out

    # ------------------------------------------------------------------ checkpoints
    def snapshot(self) -> dict[str, np.ndarray]:
        n = max(self.episodes_done - 1, 0)
        return {
            **super().snapshot(),
            "diffs": self.diffs[:, :n].copy(),
            "labels": self.labels[:, :n].copy(),
            "fitted_n": np.array(self.fitted_n),
            "agent_rng_states": np.array(
                json.dumps([g.bit_generator.state for g in self.agent_rngs])
            ),
        }

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        super().restore(arrays)
        n = max(self.episodes_done - 1, 0)
        if arrays["diffs"].shape[:2] != (self.B, n) or arrays["labels"].shape != (self.B, n):
            raise ValueError(
                f"checkpoint arrays 'diffs' / 'labels': found {arrays['diffs'].shape} and "
                f"{arrays['labels'].shape}, this run needs {n} comparisons per seed"
            )
        self.diffs = np.zeros((self.B, 0, self.diffs.shape[2]), self.diff_dtype)
        self.labels = np.zeros((self.B, 0), np.int8)
        self._reserve(n)
        self.diffs[:, :n], self.labels[:, :n] = arrays["diffs"], arrays["labels"]
        self.fitted_n = int(arrays["fitted_n"])
        states = json.loads(str(arrays["agent_rng_states"]))
        for g, state in zip(self.agent_rngs, states, strict=True):
            g.bit_generator.state = state
