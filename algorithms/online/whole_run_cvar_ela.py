r"""Whole-run compiled loop of CVaR-ELA: the whole episode (EM, plan, scoring, rollout) in numba.

The episode loop of ``theorylab.runners.online`` for :class:`~theorylab.algorithms.online.
cvar_ela.CVaRELA` (Zhao et al. ICLR 2024, reconstructed; the equations and what was read are in
``cvar_ela.py``'s docstring), parallel over seeds (``prange``). Each episode k of one seed:

1. the plan (``CVaRELA.plan`` on ``RepUCB.learned_model``): phi_hat = Phi[j*],
   P_hat_h = phi_hat mu_{j*,h} ``(SA, S)``, Sigma_h = sum_{sa} N_h(sa) phi_hat phi_hat^T +
   lambda I, the width ||phi_hat(sa)||_{Sigma_h^{-1}} (clipped at 0 before the root),
   frac = min(alpha width, 1); from U_H(s, j) = j eta, for h = H-1..0,
   W(s', s, a, j) = 0.0 + sum_k q_h(k|s,a) U_{h+1}(s', max(j - i_h(s,a,k), 0)),
   Q_h = max{sum_{s'} P_hat W - frac j eta, 0} (summed left to right from 0.0, as ``expect``),
   pi_h(s, j) = first argmin_a within 1e-12 (relative), and
   j_1 = first argmax_j {j eta - mu0 . U_0(., j) / tau}; the value estimate is that maximum;
2. the exact regret CVaR*_tau - CVaR_tau(Z^{pi_k}) of the augmented policy on the true model
   (:func:`~theorylab.algorithms.online.whole_run_cvar.static_cvar_of_policy`, CVaR-UCBVI's
   kernel: the same ``return_distribution`` and ``cvar`` of the Python runner), recomputed only
   when the actions or j_1 changed (it is a function of them alone);
3. the rollout from the environment's ``1 + 3H`` uniforms (``budget_rollout``'s rules, CVaR-UCBVI's
   kernel's :func:`~theorylab.algorithms.online.whole_run_cvar.budget_rollout_seed`), the counts
   C_h(s, a, s') += 1;
4. the MLE oracle (``RepUCB.update`` / ``em_steps``): ``em_iters`` warm-started EM updates of
   mu_{j,h} for every candidate j and step h (ratio C / max(P, 1e-12) on the observed entries,
   G = Phi^T ratio, mu <- max(mu G, 0) normalised, a row without mass uniform, floored at
   MU_FLOOR and renormalised), the log-likelihood of the result, and j* = the first argmax over
   j of sum_h loglik_{j,h}.

The agent draws no random numbers; the environment's PCG64 streams are stepped in the kernel.

Agreement with the Python loop (tests/test_whole_run_cvar_ela.py): the Python agent forms P_hat,
Sigma, its inverse (LAPACK), the widths and the EM products with ``matmul`` (BLAS, whose summation
order and fused multiply-adds belong to the build and the CPU) and numpy's pairwise reductions; here
they are left-to-right loops and ``np.linalg.inv`` of numba (LAPACK). So the learned model, mu, the
widths and the value estimates agree to round-off (measured up to 2.5e-12 on the estimates, whose
shortfall is divided by tau), not bit for bit, and the integer trajectory (selected candidate,
augmented actions, j_1, visited states) is the same as long as no comparison is decided by round-off
(ties are taken within 1e-12 relative, the candidates' log-likelihoods differ by O(1) or more on the
claims' instances). The exact regret and the returns are functions of the trajectory alone (the
regret of (pi_k, j_1) on the true model, by the same kernel as CVaR-UCBVI's, which is bit for bit
``StaticCVaR.policy_values``), so they agree bit for bit; the tests check both.
fastmath is off.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit, prange

from theorylab.algorithms.linear.mle import MU_FLOOR
from theorylab.algorithms.online.segmented_loop import SegmentedLoop
from theorylab.algorithms.online.whole_run_cvar import (
    budget_rollout_seed,
    static_cvar_of_policy,
    true_rows,
)

STATE_FIELDS = ("counts", "mu", "selected")
TIE_TOL = 1e-12  # algorithms/risk/static_cvar_planning.py: first_argmin / first_argmax


@njit(cache=True, error_model="numpy")
def em_seed(Phi, mu, counts, n_iter, P, ratio, loglik):
    """``em_steps`` for one seed: ``n_iter`` EM updates of mu (H, M, d, S) in place on counts
    (H, SA, S); loglik (H, M) receives the log-likelihood of the result. Scratch P (d, S) (the
    iterate before the update), ratio (SA, S). Phi (M, SA, d).

    An update that leaves mu bit for bit where it was is a fixed point of this arithmetic (the
    update is a function of mu and the counts alone), so the remaining iterations would repeat
    it: they are skipped, which changes no bit (on the claims' classes EM is exact after one
    update, and this skip is most of the kernel's speed)."""
    H, M, d, S = mu.shape
    SA = Phi.shape[1]
    for h in range(H):
        for j in range(M):
            m = mu[h, j]
            for _ in range(n_iter):
                for i in range(d):
                    for y in range(S):
                        P[i, y] = m[i, y]
                for sa in range(SA):
                    for y in range(S):
                        acc = 0.0
                        for i in range(d):
                            acc += Phi[j, sa, i] * m[i, y]
                        c = counts[h, sa, y]
                        ratio[sa, y] = c / (acc if acc > MU_FLOOR else MU_FLOOR) if c > 0 else 0.0
                for i in range(d):
                    tot = 0.0
                    for y in range(S):
                        g = 0.0
                        for sa in range(SA):
                            g += Phi[j, sa, i] * ratio[sa, y]
                        v = m[i, y] * g
                        m[i, y] = v if v > 0.0 else 0.0
                        tot += m[i, y]
                    den = tot if tot > 1e-300 else 1e-300
                    tot2 = 0.0
                    for y in range(S):
                        m[i, y] = m[i, y] / den
                        tot2 += m[i, y]
                    tot3 = 0.0
                    for y in range(S):
                        v = m[i, y] if tot2 > 0 else 1.0 / S
                        v = v if v > MU_FLOOR else MU_FLOOR
                        m[i, y] = v
                        tot3 += v
                    for y in range(S):
                        m[i, y] = m[i, y] / tot3
                same = True
                for i in range(d):
                    for y in range(S):
                        if m[i, y] != P[i, y]:
                            same = False
                if same:
                    break
            ll = 0.0
            for sa in range(SA):
                for y in range(S):
                    c = counts[h, sa, y]
                    if c > 0:
                        acc = 0.0
                        for i in range(d):
                            acc += Phi[j, sa, i] * m[i, y]
                        ll += c * np.log(acc)
            loglik[h, j] = ll


@njit(cache=True, error_model="numpy")
def plan_ela_seed(Phi, sel, mu, counts, alpha, lam, tau, levels, inc, q, mu0, act, P, frac,
                  Sig, U, Qa, obj):  # fmt: skip
    """One seed's plan (``CVaRELA.plan``): actions into act (H, S, J); returns
    ``(j_1, estimate, changed)``, changed true when act differs from what it held.

    Phi (M, SA, d); sel the selected candidate; mu (H, M, d, S); counts (H, SA, S); alpha, lam,
    tau; levels (J,); inc, q (H, S, A, K) the agent's lattice; mu0 (S,). Scratch: P (SA, S),
    frac (SA,), Sig (d, d), U (2, S, J), Qa (A, J), obj (J,)."""
    H, S, J = act.shape
    A = Qa.shape[0]
    d = Phi.shape[2]
    K = inc.shape[3]
    SA = S * A
    changed = False
    cur = 0
    for s in range(S):
        for j in range(J):
            U[cur, s, j] = levels[j]
    for h in range(H - 1, -1, -1):
        m = mu[h, sel]
        for sa in range(SA):  # P_hat_h = phi_hat mu_hat
            for y in range(S):
                acc = 0.0
                for i in range(d):
                    acc += Phi[sel, sa, i] * m[i, y]
                P[sa, y] = acc
        for i in range(d):  # Sigma_h = sum N phi phi^T + lam I
            for i2 in range(d):
                acc = 0.0
                for sa in range(SA):
                    n = 0.0
                    for y in range(S):
                        n += counts[h, sa, y]
                    acc += (n * Phi[sel, sa, i]) * Phi[sel, sa, i2]
                Sig[i, i2] = acc + (lam if i == i2 else 0.0)
        inv = np.linalg.inv(Sig)
        for sa in range(SA):  # frac = min(alpha ||phi||_{Sigma^-1}, 1)
            quad = 0.0
            for i2 in range(d):
                acc = 0.0
                for i in range(d):
                    acc += Phi[sel, sa, i] * inv[i, i2]
                quad += acc * Phi[sel, sa, i2]
            quad = quad if quad > 0.0 else 0.0
            f = alpha * np.sqrt(quad)
            frac[sa] = f if f < 1.0 else 1.0
        nxt = 1 - cur
        for s in range(S):
            for a in range(A):
                sa = s * A + a
                for j in range(J):
                    acc = 0.0  # expect: sum over s' from 0 of P_hat(s') W(s', s, a, j)
                    for y in range(S):
                        w = 0.0
                        for k in range(K):
                            jj = j - inc[h, s, a, k]
                            jj = jj if jj > 0 else 0
                            w = w + q[h, s, a, k] * U[cur, y, jj]
                        acc += P[sa, y] * w
                    t = acc - frac[sa] * levels[j]
                    Qa[a, j] = t if t > 0.0 else 0.0
            for j in range(J):  # first_argmin over the actions, within TIE_TOL
                lo = Qa[0, j]
                for a in range(1, A):
                    lo = Qa[a, j] if Qa[a, j] < lo else lo
                thr = lo + TIE_TOL * (1.0 + np.abs(lo))
                best = 0
                for a in range(A):
                    if Qa[a, j] <= thr:
                        best = a
                        break
                if act[h, s, j] != best:
                    changed = True
                    act[h, s, j] = best
                U[nxt, s, j] = Qa[best, j]
        cur = nxt
    for j in range(J):  # levels - (sum_s mu0[s] U_0[s]) / tau, s left to right
        acc = 0.0
        for s in range(S):
            acc += mu0[s] * U[cur, s, j]
        obj[j] = levels[j] - acc / tau
    hi = obj[0]
    for j in range(1, J):
        hi = obj[j] if obj[j] > hi else hi
    floor = hi - TIE_TOL * (1.0 + np.abs(hi))
    j1 = 0
    for j in range(J):
        if obj[j] >= floor:
            j1 = j
            break
    return j1, obj[j1], changed


@njit(parallel=True, cache=True, error_model="numpy")
def run_cvar_ela_segment(
    Phi, alpha, lam, tau, n_iter, levels, inc_p, q_p, mu0_agent, inc_e, q_e, stride, spent,
    g_ptr, g_u, g_lo, g_states, values, indptr, indices, data, cum, n_pstages, R, bernoulli,
    lattice_bern, mu0, mu0_cum, v_star, counts, mu, selected, act, j1, cvar_pi, evaluated, rng,
    regret, returns, estimates,
):  # fmt: skip
    """The next n episodes of every seed (module docstring), parallel over seeds.

    Agent: Phi (M, SA, d), alpha, lam, tau, n_iter (em_iters), the lattice levels (J,), inc_p,
    q_p (H, S, A, K), mu0_agent (S,). Evaluation and true model: as ``run_cvar_segment``'s.
    State, in place: counts (B, H, SA, S), mu (B, H, M, d, S), selected (B,) int64; act
    (B, H, S, J), j1 (B,) the last plan; cvar_pi (B,), evaluated (B,) int8. rng (B, 4) PCG64
    states. Out: regret, returns, estimates (B, n).
    """
    B, n_ep = regret.shape
    H, S, J = act.shape[1], act.shape[2], act.shape[3]
    A = inc_p.shape[2]
    M, SA, d = Phi.shape
    C = spent.shape[0]
    n_ret = values.shape[0]
    for b in prange(B):
        P = np.empty((max(SA, d), S))
        ratio = np.empty((SA, S))
        frac = np.empty(SA)
        Sig = np.empty((d, d))
        U = np.empty((2, S, J))
        Qa = np.zeros((A, J))
        obj = np.empty(J)
        loglik = np.empty((H, M))
        dd = np.empty((S, C))
        out = np.empty((S, C))
        blk = np.empty((S, C))
        pf = np.empty(C)
        probs = np.empty(n_ret)
        terms = np.empty(n_ret)
        w = np.empty(1 + 3 * H)
        rew = np.empty(H)
        states = np.empty(H + 1, np.int64)
        actions = np.empty(H, np.int64)
        for k in range(n_ep):
            jb, est, changed = plan_ela_seed(
                Phi, selected[b], mu[b], counts[b], alpha, lam, tau, levels, inc_p, q_p,
                mu0_agent, act[b], P, frac, Sig, U, Qa, obj,
            )  # fmt: skip
            if jb != j1[b]:
                changed = True
                j1[b] = jb
            estimates[b, k] = est
            if changed or evaluated[b] == 0:
                cvar_pi[b] = static_cvar_of_policy(
                    tau, act[b], jb, inc_e, q_e, stride, spent, g_ptr, g_u, g_lo, g_states,
                    indptr, indices, data, n_pstages, mu0, values, dd, out, blk, pf, probs,
                    terms,
                )  # fmt: skip
                evaluated[b] = 1
            regret[b, k] = v_star - cvar_pi[b]
            returns[b, k] = budget_rollout_seed(
                rng[b], act[b], jb, inc_p, R, bernoulli, lattice_bern, indptr, indices, cum,
                n_pstages, mu0_cum, w, rew, states, actions,
            )  # fmt: skip
            for t in range(H):  # C_h(s, a, s') += 1 (RepUCB.update)
                counts[b, t, states[t] * A + actions[t], states[t + 1]] += 1.0
            em_seed(Phi, mu[b], counts[b], n_iter, P, ratio, loglik)
            best, arg = 0.0, 0
            for j in range(M):  # argmax_j sum_h loglik (first maximum)
                tot = 0.0
                for h in range(H):
                    tot += loglik[h, j]
                if j == 0 or tot > best:
                    best, arg = tot, j
            selected[b] = arg


class CVaRELALoop(SegmentedLoop):
    """The state of B seeds of CVaR-ELA on one MDP, advanced by the compiled kernel; the
    interface of :class:`~theorylab.algorithms.online.whole_run.CompiledLoop`, so that
    :func:`~theorylab.algorithms.online.whole_run.run_whole` segments, checkpoints and resumes
    it. agent: a freshly constructed :class:`CVaRELA` (its constants are read). mdp: the true
    finite-horizon TabularMDP. v_star: CVaR*_tau. env_rngs: one numpy Generator per seed."""

    STATE_FIELDS = STATE_FIELDS
    CARRIED = ("act", "j1", "cvar_pi", "evaluated")  # the last plan and its exact CVaR

    def __init__(self, agent, mdp, v_star: float, env_rngs: Sequence[np.random.Generator]):
        from theorylab.algorithms.online.cvar_ela import CVaRELA
        from theorylab.algorithms.online.whole_run_cvar import evaluation_args

        if type(agent) is not CVaRELA:
            raise ValueError(f"{type(agent).__name__} is not CVaRELA; run it with loop='python'")
        if mdp.horizon is None:
            raise ValueError(f"{mdp!r} has no finite horizon; online episodic runs need one")
        B = agent.n_seeds
        if len(env_rngs) != B:
            raise ValueError(f"got {len(env_rngs)} environment generators for {B} seeds")
        if agent.k != 0:
            raise ValueError("the compiled CVaR-ELA loop starts from a freshly built agent")
        env = agent.env
        if (env.S, env.A, env.H) != (mdp.S, mdp.A, mdp.horizon):
            raise ValueError(
                f"the agent was built for (S, A, H) = {(env.S, env.A, env.H)}, the MDP has "
                f"{(mdp.S, mdp.A, mdp.horizon)}"
            )
        agent.policy().check_for(mdp)  # the Python loop's check (reward model, shapes)
        self.B, self.env_rngs, self.v_star = B, list(env_rngs), float(v_star)
        self.episodes_done = 0
        H, S = mdp.horizon, mdp.S
        lat = agent.lattice
        J = lat.n_levels
        self.agent_args = (
            np.ascontiguousarray(agent.Phi), float(agent.alpha), agent.lam, agent.tau,
            agent.em_iters, np.ascontiguousarray(lat.levels),
            np.ascontiguousarray(lat.increments, dtype=np.int64),
            np.ascontiguousarray(lat.probs, dtype=np.float64),
            np.ascontiguousarray(env.mu0, dtype=np.float64),
        )  # fmt: skip
        self.eval_args = evaluation_args(lat, mdp)
        indptr, indices, data, cum, n_st = true_rows(mdp)
        R = np.stack([np.asarray(mdp.reward(t), dtype=np.float64) for t in range(H)])
        mu0 = np.ascontiguousarray(mdp.mu0, dtype=np.float64)
        self.model_args = (
            indptr, indices, data, cum, int(n_st), R, mdp.reward_model == "bernoulli",
            lat.reward_model == "bernoulli", mu0, np.cumsum(mu0), self.v_star,
        )  # fmt: skip
        self.state = {
            "counts": agent.counts.copy(),
            "mu": agent.mu.copy(),
            "selected": agent.selected.astype(np.int64).copy(),
        }
        self.act = np.zeros((B, H, S, J), np.int64)
        self.j1 = np.zeros(B, np.int64)
        self.cvar_pi = np.zeros(B)
        self.evaluated = np.zeros(B, np.int8)

    def plan(self, b: int) -> tuple[np.ndarray, int, float]:
        """The kernel's plan of seed b from its current state: ``(actions (H, S, J), j_1,
        value estimate)`` (for tests: it must equal ``CVaRELA.plan`` on the same state)."""
        H, S, J = self.act.shape[1:]
        Phi = self.agent_args[0]
        A, SA, d = self.agent_args[6].shape[2], Phi.shape[1], Phi.shape[2]
        act = np.zeros((H, S, J), np.int64)
        st = self.state
        j1, est, _ = plan_ela_seed(
            Phi, int(st["selected"][b]), st["mu"][b], st["counts"][b], *self.agent_args[1:4],
            *self.agent_args[5:], act, np.empty((SA, S)), np.empty(SA), np.empty((d, d)),
            np.empty((2, S, J)), np.zeros((A, J)), np.empty(J),
        )  # fmt: skip
        return act, int(j1), float(est)

    def _run_segment(self, rng: np.ndarray, out: dict[str, np.ndarray]) -> None:
        st = self.state
        run_cvar_ela_segment(
            *self.agent_args, *self.eval_args, *self.model_args, st["counts"], st["mu"],
            st["selected"], self.act, self.j1, self.cvar_pi, self.evaluated, rng,
            out["regret"], out["returns"], out["estimates"],
        )  # fmt: skip
