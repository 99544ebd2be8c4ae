r"""Whole-run compiled loop of CVaR-UCBVI: K episodes of static-CVaR learning in one numba call.

The episode loop of ``theorylab.runners.online`` for :class:`~theorylab.algorithms.online.
cvar_ucbvi.CVaRUCBVI` (Wang, Kallus, Sun, "Near-Minimax-Optimal Risk-Sensitive Reinforcement
Learning with CVaR", ICML 2023; the algorithm, its bonus and the bounds it carries --
``wang2023-cvar-general``, ``wang2023-cvar-continuous``, ``wang2023-cvar-lower`` -- are the Python
agent's, unchanged, and its docstring says what is the paper's and what is this library's [M]),
parallel over seeds (``prange``). Each episode k of a seed:

1. the plan on the budget-augmented state (s, j), budget ``b = j eta`` on the agent's reward
   lattice (``CVaRUCBVI._plan``): from ``Ulo_H = Uhi_H = j eta``, for h = H-1..0,
   ``W(s, a, s', j) = sum_k q_h(k|s,a) U_{h+1}(s', max(j - i_h(s,a,k), 0))``,
   ``Qlo = max{P_hat W_lo - bonus, 0}``, ``Qhi = min{P_hat W_hi + bonus, j eta}`` (0 and j eta on
   unvisited pairs), ``pi_h(s, j) = first argmin_a Qlo``, and the initial budget
   ``j_1 = first argmax_j {j eta - mu0 . Ulo_0(., j) / tau}``; the bonus is the agent's
   (``bernstein``: ``c [sqrt(2 Var L / n) + sqrt(2 E(W_hi - W_lo)^2 L / n) + r_c j eta L / n]``,
   ``hoeffding``: ``c M eta sqrt(2 L / n)``);
2. the value estimate ``j_1 eta - mu0 . Ulo_0(., j_1) / tau``;
3. the exact regret ``CVaR*_tau - CVaR_tau(Z^{pi_k})`` of the played augmented policy, from its
   exact return law on the true model (``return_distribution``: the push-forward of the mass on
   (state, return index) through the stages, the policy reading its remaining budget
   ``max(j_1 - spent, 0)``; on a coarser agent lattice both indices are tracked, packed as
   ``c = j_return * stride + j_spent``) and ``cvar`` of that law (tail masses of the sorted atoms,
   pairwise sum, / tau). It is a function of (pi_k, j_1) alone, so an episode whose plan gives
   the previous episode's actions and budget reuses the previous value (the same number);
4. one rollout of the augmented policy from the episode's ``1 + 3H`` uniforms
   (``budget_rollout``'s rules: the initial state and each next state are the count of
   cumulative probabilities ``<= u`` clamped to S - 1, a Bernoulli reward is ``u < mean``, the
   budget moves by the realised outcome's increment on the agent's lattice);
5. the count update n(s, a), n(s, a, s') (per stage for a stage-dependent model, else pooled).

Bit-for-bit agreement with the Python loop (tests/test_whole_run.py). Every floating-point
expression is the reference's, operation for operation and in its order:

* the plan's ``einsum("bsap,bpsaj->bsaj", p_hat, .)`` and ``einsum("s,bsj->bj", mu0, U)`` are
  numpy's own loops (no BLAS): for every output element a left-to-right sum over the reduced
  index starting from 0, which is what the kernel does (the zero entries of P_hat add exact
  zeros and are skipped). ``W`` is ``0.0 + q_0 U(.) + q_1 U(.)`` in that order; ``x**2`` is
  ``x * x``; the bonus is evaluated left to right with the agent's constants L, c, r_c;
* the return law: per stage, per action a, outcome k and distinct increment u (ascending, as
  ``np.unique``), the states with that increment push ``P_h(s'|s,a) * (d(s,c) q_h(k|s,a))`` in
  ascending order of s into a fresh block, which is then added to the next stage's mass: the
  order of scipy's CSC product ``Psel.T @ flat`` on a true model stored sparse. The marginal
  sums over states left to right (``d.sum(axis=1)``), over the packed spent index in numpy's
  pairwise order, and the CVaR's cumulative sum and its final pairwise sum as ``cvar`` does;
* the environment's uniforms are numpy's PCG64 stream, stepped in the kernel
  (:func:`~theorylab.kernels.pcg64.pcg64_random`), ``1 + 3H`` per episode.

On a *dense* true model the reference multiplies ``Psel.T @ flat`` through BLAS (a CPU-dependent
order), so there the exact regret agrees to round-off (1e-12), not bit for bit; the plan, the
value estimates and the trajectories (returns) do not involve that product and stay bit for bit.

The agent draws no random numbers and assumes the reward distribution known (Wang et al.'s
setting; the Python agent refuses estimated rewards), so there is no estimated-reward path.
fastmath is off (no reassociation, no fused multiply-add).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit, prange

from theorylab.algorithms.online.segmented_loop import SegmentedLoop
from theorylab.algorithms.online.whole_run_kernel import pairwise_sum
from theorylab.kernels.pcg64 import pcg64_random

STATE_FIELDS = ("n", "n_next")
TIE_TOL = 1e-12  # algorithms/risk/static_cvar_planning.py: first_argmin / first_argmax


@njit(cache=True, error_model="numpy")
def plan_cvar_seed(
    tau, L, c, rc, bern, levels, inc_p, q_p, mu0, n, n_next, act, U, Qlo, Qhi, sup, psup, obj
):  # fmt: skip
    """One seed's plan (``CVaRUCBVI._plan``): the augmented actions into act (H, S, J); returns
    ``(j_1, estimate, changed)`` with changed true when act or j_1 differ from what act held.

    tau, L, c (bonus_scale), rc (range_constant), bern (the Bernstein bonus, else Hoeffding):
    the agent's constants. levels (J,) = eta * arange(J); inc_p, q_p (H, S, A, K): the agent's
    lattice; mu0 (S,). Counts: n (G, S, A), n_next (G, S, A, S) int64 (G = H per stage, else 1).
    Scratch: U (2, 2, S, J) (lo / hi, two stages), Qlo, Qhi (A, J), sup (S,) int64, psup (S,),
    obj (J,). ``j_1`` is returned separately so that the caller compares it.
    """
    H, S, A, J = act.shape[0], act.shape[1], Qlo.shape[0], levels.shape[0]
    K = inc_p.shape[3]
    G = n.shape[0]
    changed = False
    cur = 0  # U[:, cur] = U_{h+1}; U[:, 1 - cur] receives U_h
    for s in range(S):
        for j in range(J):
            U[0, cur, s, j] = levels[j]  # Ulo_H = Uhi_H = (b)^+ = j eta
            U[1, cur, s, j] = levels[j]
    for h in range(H - 1, -1, -1):
        g = h if G > 1 else 0
        nxt = 1 - cur
        for s in range(S):
            for a in range(A):
                cnt = n[g, s, a]
                visited = cnt > 0
                inv_n = 1.0 / max(cnt, 1)  # 1.0 / np.maximum(n, 1)
                ns = 0  # P_hat's support, ascending: p_hat = n_next / max(n, 1)
                for y in range(S):
                    if n_next[g, s, a, y] > 0:
                        sup[ns] = y
                        psup[ns] = n_next[g, s, a, y] / max(cnt, 1)
                        ns += 1
                for j in range(J):
                    mean = 0.0  # einsum(p_hat, W_lo)
                    sq = 0.0  # einsum(p_hat, W_lo**2)
                    gap = 0.0  # einsum(p_hat, (W_hi - W_lo)**2)
                    phi = 0.0  # einsum(p_hat, W_hi)
                    for i in range(ns):
                        y = sup[i]
                        p = psup[i]
                        wl = 0.0  # W = 0.0 + q_0 U(y, j - i_0) + q_1 U(y, j - i_1) ...
                        wh = 0.0
                        for k in range(K):
                            jj = j - inc_p[h, s, a, k]
                            jj = jj if jj > 0 else 0
                            wl = wl + q_p[h, s, a, k] * U[0, cur, y, jj]
                            if bern:
                                wh = wh + q_p[h, s, a, k] * U[1, cur, y, jj]
                        mean += p * wl
                        if bern:
                            sq += p * (wl * wl)
                            d = wh - wl
                            gap += p * (d * d)
                            phi += p * wh
                    if bern:
                        var = sq - mean * mean
                        var = var if var > 0.0 else 0.0  # np.maximum(., 0.0)
                        bonus = c * (
                            (np.sqrt(2.0 * var * L * inv_n) + np.sqrt(2.0 * gap * L * inv_n))
                            + rc * levels[j] * L * inv_n
                        )
                    else:  # c * levels[-1] * np.sqrt(2.0 * L * inv_n) * np.ones_like(levels)
                        bonus = c * levels[J - 1] * np.sqrt(2.0 * L * inv_n) * 1.0
                    if visited:
                        t = mean - bonus
                        Qlo[a, j] = t if t > 0.0 else 0.0
                        if bern:
                            t = phi + bonus
                            Qhi[a, j] = t if t < levels[j] else levels[j]
                    else:
                        Qlo[a, j] = 0.0
                        Qhi[a, j] = levels[j]
            for j in range(J):  # first_argmin over the actions, within TIE_TOL
                lo = Qlo[0, j]
                for a in range(1, A):
                    lo = Qlo[a, j] if Qlo[a, j] < lo else lo
                thr = lo + TIE_TOL * (1.0 + np.abs(lo))
                best = 0
                for a in range(A):
                    if Qlo[a, j] <= thr:
                        best = a
                        break
                if act[h, s, j] != best:
                    changed = True
                    act[h, s, j] = best
                U[0, nxt, s, j] = Qlo[best, j]
                if bern:
                    U[1, nxt, s, j] = Qhi[best, j]
        cur = nxt
    for j in range(J):  # levels - einsum("s,bsj->bj", mu0, Ulo) / tau
        acc = 0.0
        for s in range(S):
            acc += mu0[s] * U[0, cur, s, j]
        obj[j] = levels[j] - acc / tau
    hi = obj[0]
    for j in range(1, J):
        hi = obj[j] if obj[j] > hi else hi
    floor = hi - TIE_TOL * (1.0 + np.abs(hi))
    j1 = 0
    for j in range(J):  # first_argmax within TIE_TOL
        if obj[j] >= floor:
            j1 = j
            break
    return j1, obj[j1], changed


@njit(cache=True, error_model="numpy")
def static_cvar_of_policy(
    tau, act, j1, inc_e, q_e, stride, spent, g_ptr, g_u, g_lo, g_states, indptr, indices, data,
    n_pstages, mu0, values, d, out, blk, pf, probs, terms,
):  # fmt: skip
    """``CVaR_tau`` of the return of one seed's augmented policy (act (H, S, J), budget index
    j1) on the true model: ``StaticCVaR.policy_values`` (``return_distribution`` then ``cvar``).

    inc_e, q_e (H, S, A, K_E): the evaluation lattice's increments (packed with the agent's when
    stride > 1) and outcome probabilities; spent (C,): the budget spent at each packed index.
    Groups of the push-forward, for stage h, action a and outcome k (index (h A + a) K_E + k):
    g_ptr[.] .. g_ptr[. + 1] in the group table, each with its increment g_u and its states
    g_states[g_lo[i] : g_lo[i + 1]] (ascending). True model: CSR rows (n_pstages S A), positive
    entries in column order. mu0 (S,), values (M_E + 1,) the lattice returns. Scratch: d, out,
    blk (S, C); pf (C,); probs, terms (M_E + 1,).
    """
    H, S = act.shape[0], act.shape[1]
    A = inc_e.shape[2]
    K = inc_e.shape[3]
    C = d.shape[1]
    n_ret = probs.shape[0]
    for s in range(S):
        for cc in range(C):
            d[s, cc] = 0.0
        d[s, 0] = mu0[s]
    for h in range(H):
        base = min(h, n_pstages - 1) * S * A
        for s in range(S):
            for cc in range(C):
                out[s, cc] = 0.0
        for a in range(A):
            for k in range(K):
                hak = (h * A + a) * K + k
                for gi in range(g_ptr[hak], g_ptr[hak + 1]):
                    u = g_u[gi]
                    width = C - u  # the top u indices are unreachable
                    if width <= 0:
                        continue
                    used = False
                    for i in range(g_lo[gi], g_lo[gi + 1]):  # Psel.T @ flat, sel ascending
                        s = g_states[i]
                        q = q_e[h, s, a, k]
                        row = base + s * A + a
                        for cc in range(width):
                            if d[s, cc] == 0.0:
                                continue
                            jb = j1 - spent[cc]
                            jb = jb if jb > 0 else 0
                            if act[h, s, jb] != a:
                                continue  # one-hot weight 0: a zero mass
                            m = d[s, cc] * q  # (d * w) * q with w = 1
                            if not used:
                                for y in range(S):
                                    for c2 in range(width):
                                        blk[y, c2] = 0.0
                                used = True
                            for e in range(indptr[row], indptr[row + 1]):
                                blk[indices[e], cc] += data[e] * m
                    if used:  # out[:, :, u:] += nxt
                        for y in range(S):
                            for c2 in range(width):
                                out[y, u + c2] += blk[y, c2]
        for s in range(S):
            for cc in range(C):
                d[s, cc] = out[s, cc]
    for cc in range(C):  # d.sum(axis=1): left to right over the states
        acc = 0.0
        for s in range(S):
            acc += d[s, cc]
        pf[cc] = acc
    for jr in range(n_ret):  # .reshape(M + 1, stride).sum(axis=1): pairwise
        probs[jr] = pf[jr] if stride == 1 else pairwise_sum(pf, jr * stride, stride)
    cum = 0.0  # cvar: tail_masses(probs, tau) * values, pairwise, / tau
    for jr in range(n_ret):
        p = probs[jr]
        cum = p if jr == 0 else cum + p  # np.cumsum
        t = tau - (cum - p)
        t = t if t > 0.0 else 0.0  # np.maximum(tau - F_prev, 0.0)
        m = p if p < t else t  # np.minimum(p, .)
        terms[jr] = m * values[jr]
    return pairwise_sum(terms, 0, n_ret) / tau


@njit(cache=True, error_model="numpy")
def budget_rollout_seed(
    rng, act, jb, inc_p, R, bernoulli, lattice_bern, indptr, indices, cum, n_pstages, mu0_cum,
    w, rew, states, actions,
):  # fmt: skip
    """One rollout of an augmented policy (act (H, S, J), initial budget index jb) from the
    seed's PCG64 state rng (4,), ``1 + 3H`` uniforms (``budget_rollout``'s rules: the initial
    state and each next state are the count of cumulative probabilities ``<= u`` clamped to
    S - 1, a Bernoulli reward is ``u < mean``, the budget moves by the realised outcome's
    increment on the agent's lattice inc_p (H, S, A, K)). Fills states (H + 1,), actions (H,)
    and the rewards rew (H,); returns the return (pairwise sum). w: scratch (1 + 3H,)."""
    H, S = act.shape[0], act.shape[1]
    A = inc_p.shape[2]
    for i in range(1 + 3 * H):
        w[i] = pcg64_random(rng)
    cnt = 0
    for x in range(S):
        if mu0_cum[x] <= w[0]:
            cnt += 1
    s = cnt if cnt < S - 1 else S - 1
    jr = jb
    for t in range(H):
        a = act[t, s, jr]
        mean = R[t, s, a]
        if bernoulli:
            r = 1.0 if w[3 + 3 * t] < mean else 0.0
        else:
            r = mean
        row = min(t, n_pstages - 1) * S * A + s * A + a
        u = w[2 + 3 * t]  # next state: #{s' : cumsum(P row)[s'] <= u}, <= S - 1
        y = S
        for e in range(indptr[row], indptr[row + 1]):
            if cum[e] > u:  # the first positive entry past u: s' < it count
                y = indices[e]
                break
        y = y if y < S - 1 else S - 1
        kk = 1 if (lattice_bern and r > 0.5) else 0
        jr = jr - inc_p[t, s, a, kk]
        jr = jr if jr > 0 else 0
        rew[t] = r
        states[t], actions[t] = s, a
        s = y
    states[H] = s
    return pairwise_sum(rew, 0, H)


@njit(parallel=True, cache=True, error_model="numpy")
def run_cvar_segment(
    tau, L, c, rc, bern, levels, inc_p, q_p, mu0_agent, inc_e, q_e, stride, spent, g_ptr, g_u,
    g_lo, g_states, values, indptr, indices, data, cum, n_pstages, R, bernoulli, lattice_bern,
    mu0, mu0_cum, v_star, n, n_next, act, j1, cvar_pi, evaluated, rng, regret, returns,
    estimates,
):  # fmt: skip
    """The next n episodes of every seed (module docstring), parallel over seeds.

    Agent: tau, L, c, rc, bern, levels (J,), inc_p, q_p (H, S, A, K), mu0_agent (S,)
    (:func:`plan_cvar_seed`). Evaluation: inc_e, q_e, stride, spent, the group table, values
    (:func:`static_cvar_of_policy`). True model: CSR rows (n_pstages S A) of positive entries
    (indptr, indices, data) and ``cum`` the rows' cumulative sums at them (np.cumsum of the dense
    row); R (H, S, A) mean rewards; bernoulli (the MDP pays Bernoulli rewards); lattice_bern (the
    agent's lattice reads outcome k = r > 0.5); mu0, mu0_cum = np.cumsum(mu0) (S,); v_star.
    State, in place: n (B, G, S, A), n_next (B, G, S, A, S) int64; act (B, H, S, J), j1 (B,)
    the last plan; cvar_pi (B,) CVaR of the last evaluated policy, evaluated (B,) int8 (0:
    evaluate the next policy whatever it is). rng (B, 4) uint64 PCG64 states. Out: regret,
    returns, estimates (B, n).
    """
    B, n_ep = regret.shape
    H, S, J = act.shape[1], act.shape[2], act.shape[3]
    A = inc_p.shape[2]
    G = n.shape[1]
    C = spent.shape[0]
    n_ret = values.shape[0]
    for b in prange(B):
        U = np.empty((2, 2, S, J))
        Qlo = np.zeros((A, J))
        Qhi = np.zeros((A, J))
        sup = np.zeros(S, np.int64)
        psup = np.zeros(S)
        obj = np.empty(J)
        d = np.empty((S, C))
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
            # (1)-(2) the plan and its value estimate
            jb, est, changed = plan_cvar_seed(
                tau, L, c, rc, bern, levels, inc_p, q_p, mu0_agent, n[b], n_next[b], act[b],
                U, Qlo, Qhi, sup, psup, obj,
            )  # fmt: skip
            if jb != j1[b]:
                changed = True
                j1[b] = jb
            estimates[b, k] = est

            # (3) exact regret of the played augmented policy (a function of act and j1 alone)
            if changed or evaluated[b] == 0:
                cvar_pi[b] = static_cvar_of_policy(
                    tau, act[b], jb, inc_e, q_e, stride, spent, g_ptr, g_u, g_lo, g_states,
                    indptr, indices, data, n_pstages, mu0, values, d, out, blk, pf, probs,
                    terms,
                )  # fmt: skip
                evaluated[b] = 1
            regret[b, k] = v_star - cvar_pi[b]

            # (4) rollout with the budget (budget_rollout), (5) counts (CVaRUCBVI.update)
            returns[b, k] = budget_rollout_seed(
                rng[b], act[b], jb, inc_p, R, bernoulli, lattice_bern, indptr, indices, cum,
                n_pstages, mu0_cum, w, rew, states, actions,
            )  # fmt: skip
            for t in range(H):
                g = t if G > 1 else 0
                s, a = states[t], actions[t]
                n[b, g, s, a] += 1
                n_next[b, g, s, a, states[t + 1]] += 1


@njit(cache=True, error_model="numpy")
def _row_cumsums(indptr, data):
    """Each CSR row's running sum at its entries, left to right (np.cumsum of the dense row
    there: the zeros between them add nothing)."""
    out = np.empty(data.shape[0])
    for r in range(indptr.shape[0] - 1):
        acc = 0.0
        for e in range(indptr[r], indptr[r + 1]):
            acc = data[e] if e == indptr[r] else acc + data[e]
            out[e] = acc
    return out


def true_rows(mdp) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """``(indptr, indices, data, cum, n_stages)``: every stage's ``mdp.P_flat(h)`` stacked,
    positive entries only, in column order, and the rows' cumulative sums at them."""
    import scipy.sparse as sp

    n_st = mdp.horizon if mdp.stage_dependent else 1
    mats = []
    for h in range(n_st):
        M = mdp.P_flat(h)
        mats.append(sp.csr_array(M) if not sp.issparse(M) else sp.csr_array(M, copy=True))
    P = sp.vstack(mats, format="csr")
    P.sum_duplicates()
    P.sort_indices()
    P.eliminate_zeros()
    indptr = P.indptr.astype(np.int64)
    data = np.ascontiguousarray(P.data, dtype=np.float64)
    return indptr, P.indices.astype(np.int64), data, _row_cumsums(indptr, data), n_st


def evaluation_args(lat, mdp) -> tuple:
    """The evaluation arguments of :func:`static_cvar_of_policy` for an agent lattice ``lat`` on
    ``mdp`` (``StaticCVaR.policy_values``' ``return_distribution``): ``(inc_e, q_e, stride,
    spent, g_ptr, g_u, g_lo, g_states, values)``."""
    from theorylab.algorithms.risk.return_distribution import joint_index
    from theorylab.algorithms.risk.reward_lattice import reward_lattice

    H = mdp.horizon
    # the evaluation lattice of StaticCVaR.policy_values (return_distribution)
    E = reward_lattice(mdp)
    stride, inc_e, C, spent = joint_index(lat, E)
    g_ptr, g_u, g_lo, g_states = [0], [], [0], []
    A, K_E = mdp.A, inc_e.shape[-1]
    for h in range(H):  # the push-forward's groups: (h, a, k), then u ascending
        for a in range(A):
            for k in range(K_E):
                col = inc_e[h, :, a, k]
                for u in np.unique(col):
                    g_u.append(int(u))
                    g_states.extend(np.flatnonzero(col == u).tolist())
                    g_lo.append(len(g_states))
                g_ptr.append(len(g_u))
    return (
        np.ascontiguousarray(inc_e, dtype=np.int64),
        np.ascontiguousarray(E.probs, dtype=np.float64), int(stride),
        spent.astype(np.int64), np.array(g_ptr, np.int64), np.array(g_u, np.int64),
        np.array(g_lo, np.int64), np.array(g_states, np.int64),
        np.ascontiguousarray(E.levels, dtype=np.float64),
    )  # fmt: skip


class CVaRUCBVILoop(SegmentedLoop):
    """The state of B seeds of CVaR-UCBVI on one MDP, advanced by the compiled kernel; the
    interface of :class:`~theorylab.algorithms.online.whole_run.CompiledLoop` (so
    :func:`~theorylab.algorithms.online.whole_run.run_whole` segments, checkpoints and resumes
    it). agent: a freshly constructed :class:`CVaRUCBVI` (its constants are read). mdp: the true
    finite-horizon TabularMDP. v_star: CVaR*_tau. env_rngs: one numpy Generator per seed."""

    STATE_FIELDS = STATE_FIELDS
    CARRIED = ("act", "j1", "cvar_pi", "evaluated")  # the last plan and its exact CVaR

    def __init__(self, agent, mdp, v_star: float, env_rngs: Sequence[np.random.Generator]):
        from theorylab.algorithms.online.cvar_ucbvi import CVaRUCBVI

        if type(agent) is not CVaRUCBVI:
            raise ValueError(f"{type(agent).__name__} is not CVaRUCBVI; run it with loop='python'")
        if mdp.horizon is None:
            raise ValueError(f"{mdp!r} has no finite horizon; online episodic runs need one")
        B = agent.n_seeds
        if len(env_rngs) != B:
            raise ValueError(f"got {len(env_rngs)} environment generators for {B} seeds")
        env = agent.env
        if (env.S, env.A, env.H) != (mdp.S, mdp.A, mdp.horizon):
            raise ValueError(
                f"the agent was built for (S, A, H) = {(env.S, env.A, env.H)}, the MDP has "
                f"{(mdp.S, mdp.A, mdp.horizon)}"
            )
        agent.policy().check_for(mdp)  # the Python loop's check (reward model, shapes)
        self.B, self.env_rngs, self.v_star = B, list(env_rngs), float(v_star)
        self.episodes_done = 0
        self.incremental = True  # (the tabular loop's switch; the plan is always in full)
        H, S = mdp.horizon, mdp.S
        lat = agent.lattice
        J = lat.n_levels
        self.agent_args = (
            agent.tau, float(agent.L), agent.bonus_scale, agent.range_constant,
            agent.bonus_kind == "bernstein", np.ascontiguousarray(lat.levels),
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
        self.state = {"n": agent.n.copy(), "n_next": agent.n_next.copy()}
        self.act = np.zeros((B, H, S, J), np.int64)
        self.j1 = np.zeros(B, np.int64)
        self.cvar_pi = np.zeros(B)
        self.evaluated = np.zeros(B, np.int8)

    def plan(self, b: int) -> tuple[np.ndarray, int, float]:
        """The kernel's plan of seed b from its current counts: ``(actions (H, S, J), j_1,
        value estimate)`` (for tests: it must equal ``CVaRUCBVI`` on the same counts)."""
        H, S, J = self.act.shape[1:]
        A = self.agent_args[6].shape[2]
        act = np.zeros((H, S, J), np.int64)
        j1, est, _ = plan_cvar_seed(
            *self.agent_args, self.state["n"][b], self.state["n_next"][b], act,
            np.empty((2, 2, S, J)), np.zeros((A, J)), np.zeros((A, J)), np.zeros(S, np.int64),
            np.zeros(S), np.empty(J),
        )  # fmt: skip
        return act, int(j1), float(est)

    def static_cvar(self, actions: np.ndarray, j1: int) -> float:
        """The kernel's exact ``CVaR_tau`` of the augmented policy (actions ``(H, S, J)``,
        budget index j1) on the true model (for tests: it must equal ``StaticCVaR``'s)."""
        S = actions.shape[1]
        C = self.eval_args[3].shape[0]
        n_ret = self.eval_args[-1].shape[0]
        indptr, indices, data, _, n_st = self.model_args[:5]
        return float(
            static_cvar_of_policy(
                self.agent_args[0], np.ascontiguousarray(actions, dtype=np.int64), int(j1),
                *self.eval_args[:-1], indptr, indices, data, n_st, self.model_args[8],
                self.eval_args[-1], np.empty((S, C)), np.empty((S, C)), np.empty((S, C)),
                np.empty(C), np.empty(n_ret), np.empty(n_ret),
            )
        )  # fmt: skip

    def _run_segment(self, rng: np.ndarray, out: dict[str, np.ndarray]) -> None:
        st = self.state
        run_cvar_segment(
            *self.agent_args, *self.eval_args, *self.model_args, st["n"], st["n_next"],
            self.act, self.j1, self.cvar_pi, self.evaluated, rng, out["regret"],
            out["returns"], out["estimates"],
        )  # fmt: skip
