r"""Whole-run compiled loop of the tabular optimistic family: K episodes in one numba call.

What it implements
------------------
``run_segment`` runs episodes ``k0 .. k0+n-1`` of B independent seeds (parallel over seeds,
``prange``), each episode exactly as ``theorylab.runners.online``'s Python loop does it:

1. the value estimate V_{k,1}(mu0) of the plan made after the previous episode;
2. the exact regret ``V*_1(mu0) - V^{pi_k}_1(mu0)`` of the greedy policy pi_k, by backward
   induction on the true model (``evaluate_policies``), from the largest step whose action
   changed since the last evaluation (above it V^{pi_k}_h is the stored V^{pi_{k-1}}_h);
3. one rollout of pi_k on the true model from pre-drawn uniforms (``TabularMDP.rollout``'s rule);
4. the count update of the empirical model (``EmpiricalModel.update``);
5. the next plan, the algorithm's optimistic backward induction, recomputing only what the
   new counts can change: the visited pairs and, below a changed V_{k,h+1}, the pairs with an
   observed successor whose value changed (:func:`plan_seed`). At the papers' constants most
   Q values sit at their cap H for a long burn-in, so most stages are unchanged (RiverSwim
   S = 100, H = 50: about 10x faster than a full plan; about 2.7x once values move).

Algorithms (``VARIANT_*``; each is the plan of ``algorithms/online/ucbvi.py`` / ``greedy.py``,
whose docstrings carry the papers' equations; the bound each carries is unchanged):

* ``VARIANT_CH`` -- UCBVI-CH, Azar, Osband, Munos 2017, Algorithms 1-3: pooled stationary model,
  ``b(x,a) = 7 H L sqrt(1/N(x,a))`` (Alg. 3), Q_{k,h} = min{Q_{k-1,h}, H, r + P_hat V_{k,h+1} + b}
  (Alg. 2), L = ln(5 S A T / delta).
* ``VARIANT_BF`` -- UCBVI-BF, Azar et al. Algorithm 4: the empirical-Bernstein bonus
  ``sqrt(8 L Var_{P_hat} V_{k,h+1} / N) + 14 H L / (3 N) + sqrt(8 sum_y P_hat(y) min{100^2 H^3
  S^2 A L^2 / N'_{k,h+1}(y), H^2} / N)``, the same recursion as CH.
* ``VARIANT_AJKS`` -- AJKS Ch. 7: per-step model P_hat_h, ``b_h = 2 H sqrt(L / N_h(s,a))``,
  Q_h = min{r_h + b_h + P_hat_h V_{h+1}, H} (no min with the previous episode), L = ln(SAHK/delta).
* ``VARIANT_GREEDY`` -- certainty-equivalent greedy (no bonus, no cap; unvisited pairs get
  ``unvisited_value``), the linear-regret contrast.
* ``VARIANT_EPS`` -- epsilon-greedy (``greedy.py``): greedy's plan, played as
  pi_h(a | s) = (1 - eps_k) 1{a = argmax Q_h(s, .)} + eps_k / A with eps_k = epsilon or
  min(1, epsilon / sqrt(k)); its exact regret averages over the actions,
  sum_a pi_h(a | s) (R_h + P_h V^pi_{h+1})(s, a), its rollout draws the action from the
  episode's action uniform (the same rule as ``TabularMDP.rollout``), and its value estimate is
  the played policy's value on the empirical model.
* ``VARIANT_MAXWP`` -- MaxWP, Du, Wang, Huang 2023, Algorithm 2 (``icvar_rm.py``): pooled
  counts, Qhat_h(s, a) = r(s, a) + min over the observed successors of Vhat_{h+1} (H - h on
  unvisited pairs, 0-based h), ties within ``first_argmax``'s relative tolerance 1e-12 to the
  smallest action; its regret is under the worst-path objective, V^pi_h(s) = r_h(s, pi_h(s)) +
  min over the support of P_h(. | s, pi_h(s)) of V^pi_{h+1} (``evaluate_iterated_cvar`` at
  alpha = 0), so every quantity is a min or one addition: bit for bit on dense models too.
* ``VARIANT_ICVAR`` -- ICVaR-RM, Du, Wang, Huang 2023, Algorithm 1 (``icvar_rm.py``): pooled
  counts, Qbar_h(s, a) = min{r + CVaR^alpha_{s' ~ P_hat(.|s,a)}(Vbar_{h+1}(s')) +
  c (H / alpha) sqrt(L / n), H} (H on unvisited pairs), the empirical CVaR by sorting
  Vbar_{h+1} once per stage (stable) and summing the tail masses times the sorted values over
  all S positions in numpy's pairwise order (``cvar_next``), ties as MaxWP's; its regret is
  under the iterated CVaR at the same alpha, evaluated the same way on the true rows.
* ``VARIANT_QH``, ``VARIANT_QB`` -- optimistic Q-learning, Jin, Allen-Zhu, Bubeck, Jordan 2018,
  Algorithm 1 (UCB-Hoeffding: b_t = c sqrt(H^3 iota / t)) and Algorithm 2 (UCB-Bernstein: b_t
  from beta_t = min{c1 (sqrt(H/t (W_t + H) iota) + sqrt(H^7 S A) iota / t), c2 sqrt(H^3 iota/t)}),
  alpha_t = (H + 1) / (H + t), Q_h <- (1 - alpha_t) Q_h + alpha_t (r + V_{h+1}(x') + b_t),
  V_h = min{H, max_a Q_h} (``algorithms/online/optimistic_q.py``): model-free, so steps (4)-(5)
  are replaced by the H updates of the episode, made right after each step, which is the order
  of the paper and of the Python agent's replay.

Unvisited pairs have Q = H (UCBVI) and are never multiplied through P_hat (whose row is zero).

Bit-for-bit agreement with the Python loop (tests/test_whole_run.py)
---------------------------------------------------------------------
Every floating-point expression is the reference's, operation for operation and in its order:

* products with P_hat and P sum the observed (stored) entries left to right in column order:
  the order of scipy's CSR products, which the reference uses for the empirical model when
  S >= 64 or ``storage="sparse"``, and for the true model when it is stored sparse;
* bonuses use the constants the Python agent computes (``7.0 * H * L`` etc., passed in) and the
  same elementwise operations; ``min``/``max``/``argmax`` are exact;
* sums over states of ``V * mu0`` (value estimate, regret) and over steps of the rewards
  (returns) are numpy's pairwise summation (:func:`pairwise_sum`), as ``ndarray.sum`` does;
* the environment's uniforms are the same stream: each seed's numpy PCG64 generator is advanced
  inside the kernel (:func:`pcg64_random`, numpy's algorithm) by 1 + 3H doubles per episode,
  exactly the Python loop's ``rng.random(1 + 3H)``, and its state is handed back afterwards.

Dense products (a dense true model, or the empirical model at S < 64 with dense storage) go
through BLAS in the reference, whose summation order depends on the CPU and the call (gemv or
gemm); there the two agree to round-off (1e-12 relative), not bit for bit.

fastmath is off (no reassociation, no fused multiply-add).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from theorylab.kernels.pcg64 import pcg64_random

VARIANT_CH, VARIANT_BF, VARIANT_AJKS, VARIANT_GREEDY = 0, 1, 2, 3
VARIANT_QH, VARIANT_QB = 4, 5  # optimistic Q-learning, Hoeffding / Bernstein (model-free)
VARIANT_EPS = 6  # epsilon-greedy: greedy's plan, played mixed with the uniform policy
VARIANT_MAXWP = 7  # MaxWP (Du, Wang, Huang 2023, Alg. 2): worst path over seen successors
VARIANT_ICVAR = 8  # ICVaR-RM (Du, Wang, Huang 2023, Alg. 1): optimistic iterated CVaR
VARIANT_LINUCB = 9  # LinUCB / OFUL: its own kernel (algorithms/online/whole_run_linucb.py)
VARIANT_LSVI_UCB = 10  # LSVI-UCB: its own kernel (algorithms/online/whole_run_lsvi.py)
VARIANT_CVAR = 11  # CVaR-UCBVI: its own kernel (algorithms/online/whole_run_cvar.py)
VARIANT_ICVAR_HF = 12  # ICVaR-HF: its own kernel (algorithms/online/whole_run_icvar_hf.py)
VARIANT_CVAR_ELA = 13  # CVaR-ELA: its own kernel (algorithms/online/whole_run_cvar_ela.py)
TIE_FIRST, TIE_LEAST_VISITED, TIE_WITHIN_TOL = 0, 1, 2
TIE_TOL = 1e-12  # algorithms/risk/static_cvar_planning.py: first_argmax's relative tolerance


@njit(cache=True, error_model="numpy")
def _pairwise_block(x, lo, n):
    """numpy's pairwise summation of ``x[lo:lo+n]`` for n <= 128: sequential below 8 terms,
    else 8 running partial sums combined as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)), then the
    remainder in order."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += x[lo + i]
        return res
    r0, r1, r2, r3 = x[lo], x[lo + 1], x[lo + 2], x[lo + 3]
    r4, r5, r6, r7 = x[lo + 4], x[lo + 5], x[lo + 6], x[lo + 7]
    i = 8
    stop = n - n % 8
    while i < stop:
        r0 += x[lo + i]
        r1 += x[lo + i + 1]
        r2 += x[lo + i + 2]
        r3 += x[lo + i + 3]
        r4 += x[lo + i + 4]
        r5 += x[lo + i + 5]
        r6 += x[lo + i + 6]
        r7 += x[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += x[lo + i]
        i += 1
    return res


@njit(cache=True, error_model="numpy")
def pairwise_sum(x, lo, n):
    """``x[lo:lo+n].sum()`` in numpy's order (pairwise summation, numpy/_core/src/umath/
    loops_utils.h.src): blocks of at most 128 terms (:func:`_pairwise_block`); a longer range is
    split at n2 = n/2 rounded down to a multiple of 8 and the halves' sums are added. The
    recursion is unrolled onto an explicit stack (numba's cache cannot store recursive
    functions)."""
    if n <= 128:
        return _pairwise_block(x, lo, n)
    depth = 64
    f_lo = np.empty(depth, np.int64)
    f_n = np.empty(depth, np.int64)
    phase = np.zeros(depth, np.int64)  # 0: left half next, 1: right half next, 2: add
    left = np.zeros(depth)
    right = np.zeros(depth)
    f_lo[0], f_n[0], phase[0] = lo, n, 0
    sp = 1
    result = 0.0
    while sp > 0:
        top = sp - 1
        m = f_n[top]
        n2 = m // 2
        n2 -= n2 % 8
        if m <= 128 or phase[top] == 2:
            v = _pairwise_block(x, f_lo[top], m) if m <= 128 else left[top] + right[top]
            sp -= 1
            if sp == 0:
                result = v
            elif phase[sp - 1] == 1:
                left[sp - 1] = v
            else:
                right[sp - 1] = v
        elif phase[top] == 0:
            phase[top] = 1
            f_lo[sp], f_n[sp], phase[sp] = f_lo[top], n2, 0
            sp += 1
        else:
            phase[top] = 2
            f_lo[sp], f_n[sp], phase[sp] = f_lo[top] + n2, m - n2, 0
            sp += 1
    return result


@njit(cache=True, error_model="numpy")
def _search(indptr, indices, cum, last, r, u):
    """Next state of true-model row r for the uniform u: the first stored entry with cumulative
    probability > u, clamped to the row's last positive entry (theorylab.kernels.sampling)."""
    lo = indptr[r]
    hi = indptr[r + 1] - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if cum[mid] > u:
            hi = mid
        else:
            lo = mid + 1
    return indices[min(lo, last[r])]


@njit(cache=True, error_model="numpy", inline="always")
def _plan_q(
    variant, H, known, r_known, bonus_scale, c_bonus, L, c_g, unvisited,
    S, A, Hm, cap, h, hr, s, a, nsa, rsum, pc, succ, nsucc, Q, V, F, bon,
):  # fmt: skip
    """Q_{k,h}(s, a) of one seed, written into Q (the body of :func:`plan_seed`)."""
    m = h if Hm > 1 else 0
    nv = (h + 1) * S  # V_{k,h+1} = V[nv : nv + S]
    row = (m * S + s) * A + a  # the pair's row of the counts
    q_at = (h * S + s) * A + a
    n = nsa[row]
    if n > 0:
        # r(x, a) known, or r_hat = R_sum / max(N, 1)
        r = r_known[hr, s, a] if known else rsum[row] / max(n, 1.0)
        j0 = row * cap
        j1 = j0 + nsucc[row]
        if variant == VARIANT_MAXWP:  # Qhat_h = r + min_{s' observed after (s, a)} Vhat_{h+1}
            worst = np.inf
            for j in range(j0, j1):
                v = V[nv + succ[j]]
                worst = v if v < worst else worst
            Q[q_at] = r + worst
            return
        if variant == VARIANT_ICVAR:  # min{r + CVaR^alpha_{P_hat}(Vbar_{h+1}) + bonus, H}
            for i in range(S):  # P_hat's row in the order of sorted V_{h+1} (F[3S:4S])
                F[i] = 0.0
            for j in range(j0, j1):
                F[int(F[3 * S + succ[j]])] = pc[j]
            tail = _cvar_sorted(c_g, S, F)
            t = (r + tail) + c_bonus * np.sqrt(L / n)  # (H / alpha) sqrt(L / n), scaled
            Q[q_at] = t if t <= H else H
            return
        if variant == VARIANT_BF:  # P_hat applied to [V, W, W^2, g]
            e0 = 0.0
            e1 = 0.0
            e2 = 0.0
            e3 = 0.0
            for j in range(j0, j1):
                p = pc[j]
                y4 = 4 * succ[j]
                e0 += p * F[y4]
                e1 += p * F[y4 + 1]
                e2 += p * F[y4 + 2]
                e3 += p * F[y4 + 3]
            PV = e0
            var = e2 - e1 * e1  # Var_{y~P_hat}[V_{k,h+1}(y)], clipped at 0
            var = var if var > 0.0 else 0.0
            bonus = np.sqrt(c_bonus * var / n) + (14.0 * H * L) / (3.0 * n) + np.sqrt(8.0 * e3 / n)
        else:
            PV = 0.0  # P_hat V_{k,h+1}(x, a): observed successors, left to right
            for j in range(j0, j1):
                PV += pc[j] * V[nv + succ[j]]
            if variant == VARIANT_CH:
                bonus = bon[s * A + a]
            elif variant == VARIANT_AJKS:
                bonus = c_bonus * np.sqrt(L / n)  # b_h = 2 H sqrt(L / N_h(s, a))
            else:
                bonus = 0.0
        if variant == VARIANT_CH or variant == VARIANT_BF:
            # Q_{k,h} = min{Q_{k-1,h}, H, (r + P_hat V_{k,h+1}) + b}
            t = (r + PV) + bonus_scale * bonus
            q = Q[q_at]
            q = H if H < q else q
            q = t if t < q else q
        elif variant == VARIANT_AJKS:  # Q_h = min{(r_h + b_h) + P_hat_h V_{h+1}, H}
            t = (r + bonus_scale * bonus) + PV
            q = H if H < t else t
        else:  # greedy: Q_h = r + P_hat V_{h+1}
            q = r + PV
    elif variant == VARIANT_MAXWP:
        q = H - h  # the most any policy collects from step h (0-based): unvisited, tried
    elif variant == VARIANT_ICVAR:
        q = H  # an infinite bonus, capped
    else:
        q = unvisited  # H for UCBVI
    Q[q_at] = q


@njit(cache=True, error_model="numpy", inline="always")
def _greedy(tie, S, A, Hm, h, s, nsa, Q, V, pol):
    """V_{k,h}(s) = max_a Q_{k,h}(s, a) and the greedy action (the first maximiser, or the
    least-visited one), in place; returns ``(changed_value, changed_action)`` against what V
    and pol held before."""
    q0 = (h * S + s) * A
    best = Q[q0]
    act = 0
    for a in range(1, A):  # strict: the first maximiser
        if Q[q0 + a] > best:
            best = Q[q0 + a]
            act = a
    if tie == TIE_WITHIN_TOL:  # first_argmax: the first a with Q >= max - tol (1 + |max|)
        floor = best - TIE_TOL * (1.0 + np.abs(best))
        for a in range(A):
            if Q[q0 + a] >= floor:
                act = a
                best = Q[q0 + a]
                break
    elif tie != TIE_FIRST:
        n0 = ((h if Hm > 1 else 0) * S + s) * A
        fewest = np.inf
        for a in range(A):
            if Q[q0 + a] == best and nsa[n0 + a] < fewest:
                fewest = nsa[n0 + a]
                act = a
    i = h * S + s
    changed_value = V[i] != best
    changed_action = pol[i] != act
    V[i] = best
    pol[i] = act
    return changed_value, changed_action


@njit(cache=True, error_model="numpy")
def plan_seed(
    variant, tie, H, known, r_known, bonus_scale, c_bonus, L, c_g, unvisited,
    S, A, Hm, nsa, rsum, nhs, pc, succ, nsucc, Q, V, pol, F, g, bon, full, vis, n_vis, mark,
):  # fmt: skip
    """The plan of one seed after its counts changed: Q, V and the greedy policy, in place.
    Returns the largest step h at which the greedy action of some state changed (-1: none).

    One seed's arrays, flattened (C order): nsa, rsum (Hm, S, A) with Hm = H (per-step model:
    AJKS) or 1 (pooled: Azar et al.); succ, pc (Hm, S, A, cap): the observed successors of each
    pair in ascending order and P_hat(succ_j | s, a) at position j (the first nsucc (Hm, S, A)
    entries of a row are used; cap = the true model's longest row, which bounds what can be
    observed); nhs (H+1, S): N'_{k,h}; Q (H, S, A); V (H+1, S), V[H] = 0;
    pol (H, S). Scratch: F (S, 4) (BF: [V, W, W^2, g]; ICVaR-RM: a probability row in sorted
    order, its tail terms, the sorted values, each state's sorted position), g (H+1, S), bon
    (S, A). Constants: c_bonus = 7 H L (CH), 8 L (BF), 2 H (AJKS), bonus_scale H / alpha
    (ICVaR-RM); c_g = 100^2 H^3 S^2 A L^2 (BF), alpha (ICVaR-RM); L (BF, AJKS, ICVaR-RM);
    r_known (n_R, S, A).

    Incremental (``full`` false): Q, V and pol hold the previous episode's plan, and the counts
    changed only at the pairs the episode visited, ``vis`` (2, H): pooled model, the ``n_vis``
    distinct pairs ``s * A + a`` in vis[0] and their distinct states in vis[1] (n_vis[1] of
    them); per-step model, the pair ``vis[0, h]`` of state ``vis[1, h]`` at step h. A stage h
    whose V_{k,h+1} equals V_{k-1,h+1} entry for entry recomputes only those pairs' Q and their
    states' V and greedy action: every other Q_{k,h}(s, a) is a function of unchanged inputs
    (counts, rewards, V_{k,h+1}), so recomputing it would give its old value again (for CH/BF,
    min{Q_{k-1,h}, H, t} with the same t returns Q_{k-1,h}, which is already <= H and <= t). A
    stage below a changed V recomputes the visited pairs and every pair with an observed
    successor whose V_{k,h+1} changed, and the greedy action of their states (``mark``, int8
    (Hm S A + 2 S): 1 at the visited pairs' rows, then two rows of S flags for the changed
    entries of V_{k,h+1} and V_{k,h}; the flags are zero on entry and on return). The result is
    the full plan's, bit for bit (tests/test_whole_run.py); UCBVI-BF, whose bonus reads
    N'_{k,h+1} and max V_{k,h+1}, always plans in full, and ICVaR-RM (whose CVaR reads the order
    of all of V_{k,h+1}) recomputes every pair below a changed V.
    """
    n_R = r_known.shape[0]
    n_steps = Q.shape[0] // (S * A)
    cap = pc.shape[0] // (Hm * S * A)  # successors stored per pair
    H2 = H * H
    if variant == VARIANT_BF:  # Alg. 4: g(y) = min{c / N'_{k,h}(y), H^2}; H^2 where N' = 0
        full = True
        for i in range(nhs.shape[0]):
            n = nhs[i]
            if n > 0:
                v = c_g / max(n, 1.0)
                g[i] = v if v < H2 else H2
            else:
                g[i] = H2
    if variant == VARIANT_CH:  # Alg. 3: b(x, a) = 7 H L sqrt(1 / N(x, a)), the same for all h
        for j in range(S * A if full else n_vis[0]):
            i = j if full else vis[0, j]  # only the visited pairs' counts changed
            n = nsa[i]
            if n > 0:
                bon[i] = c_bonus * np.sqrt(1.0 / n)
    policy_from = -1
    n_changed = 0  # entries of V_{k,h+1} that changed (V_{k,H+1} = 0 never does)
    flags = Hm * S * A  # mark[cur : cur + S], mark[new : new + S]: V_{k,h+1}, V_{k,h} changed
    cur, new = flags, flags + S
    n_stale = 0  # flags still set in mark[new : new + S] (those of V_{k,h+2})
    for h in range(n_steps - 1, -1, -1):  # Alg. 2 (UCB-Q-values): h = H..1, V_{k,H+1} = 0
        nv = (h + 1) * S
        if variant == VARIANT_BF:  # F = [V, W, W^2, g] with W = V - max_y V (Var is shift-free)
            vmax = V[nv]
            for y in range(1, S):
                if V[nv + y] > vmax:
                    vmax = V[nv + y]
            for y in range(S):
                w = V[nv + y] - vmax
                F[4 * y] = V[nv + y]
                F[4 * y + 1] = w
                F[4 * y + 2] = w * w
                F[4 * y + 3] = g[nv + y]
        if variant == VARIANT_ICVAR:
            _sort_values(V, nv, S, F)
        hr = min(h, n_R - 1)
        stage_full = full or (n_changed > 0 and variant == VARIANT_ICVAR)
        by_successor = not stage_full and n_changed > 0
        if n_stale > 0:  # clear V_{k,h+2}'s flags (most stages have none to clear)
            for s in range(S):
                mark[new + s] = 0
        n_stale = n_changed  # mark[cur] becomes mark[new] at the next stage
        n_changed = 0
        if stage_full or by_successor:
            m = h if Hm > 1 else 0
            for s in range(S):
                redo = stage_full
                for a in range(A):
                    row = (m * S + s) * A + a
                    need = stage_full or mark[row] != 0  # a visited pair
                    if not need:  # or one whose observed successor's value changed
                        for j in range(row * cap, row * cap + nsucc[row]):
                            if mark[cur + succ[j]] != 0:
                                need = True
                                break
                    if need:
                        redo = True
                        _plan_q(
                            variant, H, known, r_known, bonus_scale, c_bonus, L, c_g,
                            unvisited, S, A, Hm, cap, h, hr, s, a, nsa, rsum, pc, succ, nsucc,
                            Q, V, F, bon,
                        )  # fmt: skip
                if not redo:
                    continue
                changed_value, changed_action = _greedy(tie, S, A, Hm, h, s, nsa, Q, V, pol)
                if changed_value:
                    n_changed += 1
                    mark[new + s] = 1
                if changed_action and h > policy_from:
                    policy_from = h
            cur, new = new, cur
            continue
        if Hm > 1:  # per-step model: only the pair visited at step h changed
            p_lo, p_hi, s_lo, s_hi = h, h + 1, h, h + 1
        else:
            p_lo, p_hi, s_lo, s_hi = 0, n_vis[0], 0, n_vis[1]
        for i in range(p_lo, p_hi):
            pair = vis[0, i]
            _plan_q(
                variant, H, known, r_known, bonus_scale, c_bonus, L, c_g, unvisited,
                S, A, Hm, cap, h, hr, pair // A, pair % A, nsa, rsum, pc, succ, nsucc, Q, V,
                F, bon,
            )  # fmt: skip
        for i in range(s_lo, s_hi):
            s = vis[1, i]
            changed_value, changed_action = _greedy(tie, S, A, Hm, h, s, nsa, Q, V, pol)
            if changed_value:
                n_changed += 1
                mark[new + s] = 1
            if changed_action and h > policy_from:
                policy_from = h
        cur, new = new, cur
    if n_stale > 0 or n_changed > 0:
        for s in range(2 * S):
            mark[flags + s] = 0
    return policy_from


@njit(parallel=True, cache=True, error_model="numpy")
def plan_all(
    variant, tie, H, known, r_known, bonus_scale, c_bonus, L, c_g, unvisited,
    nsa, rsum, nhs, pc, succ, nsucc, Q, V, pol, F, g, bon,
):  # fmt: skip
    """:func:`plan_seed` for every seed (the plan the agent's constructor makes with no data).
    Arrays as in :func:`run_segment`."""
    B, Hm, S, A = nsa.shape
    vis = np.zeros((2, 1), np.int64)
    n_vis = np.zeros(2, np.int64)
    for b in prange(B):
        mark = np.zeros(Hm * S * A + 2 * S, np.int8)
        plan_seed(
            variant, tie, H, known, r_known, bonus_scale, c_bonus, L, c_g, unvisited,
            S, A, Hm, nsa[b].reshape(-1), rsum[b].reshape(-1), nhs[b].reshape(-1),
            pc[b].reshape(-1), succ[b].reshape(-1), nsucc[b].reshape(-1), Q[b].reshape(-1),
            V[b].reshape(-1), pol[b].reshape(-1), F[b].reshape(-1), g[b].reshape(-1),
            bon[b].reshape(-1), True, vis, n_vis, mark,
        )  # fmt: skip


@njit(cache=True, error_model="numpy")
def q_learning_step(variant, H, qc, S, A, t, s, a, rwd, y, N, Q, V, pol, mu, sigma, beta):
    """One update of optimistic Q-learning after step t = (s, a, rwd, y) of one seed (Jin et al.
    2018, Alg. 1 line 7-8 / Alg. 2 lines 7-11), in place. N, Q (H, S, A) and V (H+1, S), pol
    (H, S), mu, sigma, beta (H, S, A), flattened; qc = [c, c1, c2, iota, H^3 iota,
    sqrt(H^7 S A)] as the Python agent computes them."""
    i = (t * S + s) * A + a
    N[i] += 1.0
    tt = N[i]  # t = N_h(x_h, a_h)
    alpha = (H + 1.0) / (H + tt)  # alpha_t = (H + 1) / (H + t)
    v_next = V[(t + 1) * S + y]  # V_{h+1}(x_{h+1}) before its own update
    hoeffding = np.sqrt(qc[4] / tt)  # sqrt(H^3 iota / t)
    if variant == VARIANT_QH:
        bonus = qc[0] * hoeffding  # b_t = c sqrt(H^3 iota / t)
    else:  # W_t: empirical variance of the next-state values; b_t from beta_t (beta_0 = 0)
        mu[i] += v_next
        sigma[i] += v_next * v_next
        m = mu[i] / tt
        W = sigma[i] / tt - m * m
        W = W if W > 0.0 else 0.0
        beta_prev = beta[i]
        first = qc[1] * (np.sqrt(H / tt * (W + H) * qc[3]) + qc[5] * qc[3] / tt)
        second = qc[2] * hoeffding
        beta[i] = first if first < second else second
        bonus = (beta[i] - (1.0 - alpha) * beta_prev) / (2.0 * alpha)
    Q[i] = (1.0 - alpha) * Q[i] + alpha * ((rwd + v_next) + bonus)
    q0 = (t * S + s) * A
    best = Q[q0]
    act = 0
    for a2 in range(1, A):
        if Q[q0 + a2] > best:
            best = Q[q0 + a2]
            act = a2
    V[t * S + s] = H if H < best else best  # V_h(x) = min{H, max_a Q_h(x, a)}
    changed = pol[t * S + s] != act
    pol[t * S + s] = act  # the greedy action of the next episode
    return changed


@njit(parallel=True, cache=True, error_model="numpy")
def run_segment(
    variant, tie, H, known, r_known, bonus_scale, c_bonus, L, c_g, unvisited,
    indptr, indices, data, cum, last, n_stages, R, bernoulli, mu0, mu0_cdf, last_mu0, v_star,
    nsa, rsum, nhs, cnt, pc, succ, nsucc, Q, V, pol, F, g, bon, work, qc, qstat,
    vpi, eval_from, vis, incremental, k0, rng, regret, returns, estimates,
):  # fmt: skip
    """The next n episodes of every seed (see the module docstring), parallel over seeds.

    True model: the stacked CSR ``(n_stages*S*A, S)`` (indptr, indices, data), its sampler
    (cum, last), R (n_R, S, A), mu0 (S,), mu0_cdf (S,), last_mu0, v_star = V*_1(mu0).
    Learner state (updated in place): nsa, rsum (B, Hm, S, A); nhs (B, H+1, S); succ
    (B, Hm, S, A, cap) observed successors, ascending, nsucc (B, Hm, S, A) how many, cnt and pc
    (B, Hm, S, A, cap) the counts N(s, a, succ_j) and P_hat(succ_j | s, a) at them (cap: the
    true model's longest row); Q (B, H, S, A); V (B, H+1, S); pol (B, H, S). Scratch:
    F (B, S, 4), g (B, H+1, S), bon (B, S, A), work (B, 3S + H + 2 + 3H), vis (B, 2, H) int64
    (the pairs and states an episode visited, :func:`plan_seed`). Q-learning: constants qc (6,)
    and statistics qstat (B, 3, H*S*A) (mu, sigma, beta; N is nsa with Hm = H). Exact
    evaluation carried between episodes: vpi (B, H+1, S) = V^{pi}_h of the last evaluated
    policy and eval_from (B,) the largest step whose greedy action changed since then
    (H - 1: evaluate in full; -1: the policy is unchanged, so is its value). rng (B, 4)
    uint64: each seed's environment PCG64 state, advanced by 1 + 3H draws per episode
    (:func:`pcg64_random`). k0: episodes run before this segment (epsilon-greedy's eps_k;
    qc = [epsilon, 0 constant / 1 inv-sqrt] there). incremental: False plans and evaluates in
    full every episode (the same numbers, slower; tests/test_whole_run.py compares the two).
    Out: regret, returns, estimates (B, n).
    """
    B, n_ep = regret.shape
    Hm, S, A = nsa.shape[1], nsa.shape[2], nsa.shape[3]
    n_steps = Q.shape[1]
    n_R = R.shape[0]
    q_learning = variant == VARIANT_QH or variant == VARIANT_QB
    mixed = variant == VARIANT_EPS
    worst_path = variant == VARIANT_MAXWP  # regret under the worst-path objective
    iterated = variant == VARIANT_ICVAR  # regret under the iterated CVaR at alpha = c_g
    for b in prange(B):
        nsa_b, rsum_b, nhs_b = nsa[b].reshape(-1), rsum[b].reshape(-1), nhs[b].reshape(-1)
        cnt_b, pc_b, succ_b = cnt[b].reshape(-1), pc[b].reshape(-1), succ[b].reshape(-1)
        nsucc_b, Q_b, V_b = nsucc[b].reshape(-1), Q[b].reshape(-1), V[b].reshape(-1)
        pol_b, F_b, g_b, bon_b = pol[b].reshape(-1), F[b].reshape(-1), g[b].reshape(-1), bon[b]
        bon_b = bon_b.reshape(-1)
        vpi_b = vpi[b].reshape(-1)
        vis_b = vis[b]
        n_vis = np.zeros(2, np.int64)
        mark = np.zeros(Hm * S * A + 2 * S, np.int8)  # plan_seed's scratch
        w = work[b]
        for k in range(n_ep):
            eps = _epsilon(qc, k0 + k + 1) if mixed else 0.0  # eps_k, k = 1, 2, ...
            # (1) value estimate of the current plan: sum_s mu0(s) V_{k,1}(s), pairwise
            #     (epsilon-greedy: of the played policy on the empirical model, in g)
            if mixed:
                _evaluate_mixed_on_model(
                    eps, known, r_known, unvisited, S, A, Hm, n_steps, nsa_b, rsum_b, pc_b,
                    succ_b, nsucc_b, pol_b, g_b, w, 3 * S + 4 * n_steps + 2,
                )  # fmt: skip
            for s in range(S):
                w[s] = (g_b[s] if mixed else V_b[s]) * mu0[s]
            estimates[b, k] = pairwise_sum(w, 0, S)

            # (2) exact value of the greedy policy on the true model (evaluate_policies):
            #     V^pi_h(s) = R_h(s, pi_h(s)) + sum_{s'} P_h(s' | s, pi_h(s)) V^pi_{h+1}(s'),
            #     for h = eval_from .. 1 only: above it the policy, hence V^pi_h, is unchanged
            #     (epsilon-greedy: sum_a pi_h(a | s) (R_h(s, a) + P_h V^pi_{h+1}(s, a)))
            if not incremental or (mixed and qc[1] != 0.0):  # eps_k changed: in full
                eval_from[b] = n_steps - 1
            for h in range(eval_from[b], -1, -1):
                base = min(h, n_stages - 1) * S * A
                hr = min(h, n_R - 1)
                nxt = (h + 1) * S
                if iterated:
                    _sort_values(vpi_b, nxt, S, F_b)
                for s in range(S):
                    greedy_a = pol_b[h * S + s]
                    if iterated:  # r + CVaR^alpha_{P_h(. | s, pi_h(s))}(V^pi_{h+1})
                        vpi_b[h * S + s] = R[hr, s, greedy_a] + cvar_of_true_row(
                            c_g, indptr, indices, data, base + s * A + greedy_a, S, F_b
                        )
                        continue
                    if mixed:  # (pi_h * Q_h).sum(axis=-1), pairwise over the actions
                        off = 3 * S + 4 * n_steps + 2
                        for a in range(A):
                            row = base + s * A + a
                            acc = 0.0
                            for j in range(indptr[row], indptr[row + 1]):
                                acc += data[j] * vpi_b[nxt + indices[j]]
                            w[off + a] = _mixed_prob(eps, A, greedy_a, a) * (R[hr, s, a] + acc)
                        vpi_b[h * S + s] = pairwise_sum(w, off, A)
                        continue
                    row = base + s * A + greedy_a
                    if worst_path:  # r + min over the support of P_h(. | s, pi_h(s))
                        acc = np.inf
                        for j in range(indptr[row], indptr[row + 1]):
                            v = vpi_b[nxt + indices[j]]
                            acc = v if v < acc else acc
                        vpi_b[h * S + s] = R[hr, s, greedy_a] + acc
                        continue
                    acc = 0.0
                    for j in range(indptr[row], indptr[row + 1]):
                        acc += data[j] * vpi_b[nxt + indices[j]]
                    vpi_b[h * S + s] = R[hr, s, greedy_a] + acc
            eval_from[b] = -1
            for s in range(S):
                w[s] = vpi_b[s] * mu0[s]
            regret[b, k] = v_star - pairwise_sum(w, 0, S)

            # (3) rollout of pi_k from the episode's uniforms [mu0, (action, next, reward) x H],
            #     drawn as the Python loop's rng.random(1 + 3H)
            u = 3 * S + n_steps  # the uniforms in w[u : u + 1 + 3H]
            for i in range(1 + 3 * n_steps):
                w[u + i] = pcg64_random(rng[b])
            u0 = w[u]
            c = 0
            for x in range(S):
                if mu0_cdf[x] <= u0:
                    c += 1
            s = min(c, last_mu0)
            rew0 = 3 * S  # the episode's rewards in w[3S : 3S + H]
            n_vis[0] = 0  # pooled model: distinct pairs and states visited
            n_vis[1] = 0
            for t in range(n_steps):
                a = pol_b[t * S + s]
                if mixed:  # the action of pi_t(. | s) for the uniform U[1 + 3t]
                    a = _mixed_action(eps, A, a, w[u + 1 + 3 * t])
                mean = R[min(t, n_R - 1), s, a]
                if bernoulli:
                    rwd = 1.0 if w[u + 3 + 3 * t] < mean else 0.0
                else:
                    rwd = mean
                y = _search(
                    indptr, indices, cum, last, min(t, n_stages - 1) * S * A + s * A + a,
                    w[u + 2 + 3 * t],
                )  # fmt: skip
                w[rew0 + t] = rwd
                if q_learning:  # model-free: the step's Q-learning update
                    if q_learning_step(
                        variant, H, qc, S, A, t, s, a, rwd, y, nsa_b, Q_b, V_b, pol_b,
                        qstat[b, 0], qstat[b, 1], qstat[b, 2],
                    ) and t > eval_from[b]:  # fmt: skip
                        eval_from[b] = t
                    s = y
                    continue

                # (4) counts (EmpiricalModel.update): N(s,a), R_sum(s,a), N(s,a,y) (a new
                #     successor is inserted in ascending order), N'_{k,t}(s); P_hat's row
                if Hm > 1:  # per-step model: the pair of step t, at step t
                    vis_b[0, t] = s * A + a
                    vis_b[1, t] = s
                else:  # pooled: the distinct pairs and states of the episode
                    _add_distinct(vis_b[0], n_vis, 0, s * A + a)
                    _add_distinct(vis_b[1], n_vis, 1, s)
                _count(
                    ((t if Hm > 1 else 0) * S + s) * A + a, y, rwd, nsa_b, rsum_b, cnt_b,
                    pc_b, succ_b, nsucc_b,
                )  # fmt: skip
                nhs_b[t * S + s] += 1.0
                s = y
            returns[b, k] = pairwise_sum(w, rew0, n_steps)
            if q_learning:
                continue
            nhs_b[n_steps * S + s] += 1.0  # x_{k,H+1}, the state after the last action

            # (5) the next episode's plan, recomputing what the new counts can change
            for i in range(n_steps if Hm > 1 else n_vis[0]):  # the visited pairs' rows
                mark[(i * S * A if Hm > 1 else 0) + vis_b[0, i]] = 1
            eval_from[b] = plan_seed(
                variant, tie, H, known, r_known, bonus_scale, c_bonus, L, c_g, unvisited,
                S, A, Hm, nsa_b, rsum_b, nhs_b, pc_b, succ_b, nsucc_b, Q_b, V_b, pol_b, F_b,
                g_b, bon_b, not incremental, vis_b, n_vis, mark,
            )  # fmt: skip
            for i in range(n_steps if Hm > 1 else n_vis[0]):
                mark[(i * S * A if Hm > 1 else 0) + vis_b[0, i]] = 0


@njit(cache=True, error_model="numpy", inline="always")
def _count(row, y, rwd, nsa, rsum, cnt, pc, succ, nsucc):
    """One transition (row = the pair's flat index, y the next state, rwd the reward) added to
    one seed's counts, as ``EmpiricalModel.update``: N(s,a), R_sum(s,a), N(s,a,y) (a new
    successor is inserted in ascending order) and P_hat's row N(s,a,.) / N(s,a)."""
    cap = pc.shape[0] // nsa.shape[0]
    nsa[row] += 1.0
    rsum[row] += rwd
    j0 = row * cap  # the row's successors: succ, cnt, pc at j0 .. j0 + nsucc - 1
    j1 = j0 + nsucc[row]
    j = j0
    while j < j1 and succ[j] < y:
        j += 1
    if j == j1 or succ[j] != y:  # a new successor: insert it at j
        for i in range(j1, j, -1):
            succ[i] = succ[i - 1]
            cnt[i] = cnt[i - 1]
        succ[j] = y
        cnt[j] = 0.0
        nsucc[row] += 1
        j1 += 1
    cnt[j] += 1.0
    n = nsa[row]
    for i in range(j0, j1):  # P_hat(y|s,a) = N(s,a,y) / N(s,a)
        pc[i] = cnt[i] / n


@njit(cache=True, error_model="numpy", inline="always")
def _add_distinct(lst, n, which, x):
    """Append x to ``lst[:n[which]]`` unless it is already there."""
    for i in range(n[which]):
        if lst[i] == x:
            return
    lst[n[which]] = x
    n[which] += 1


@njit(cache=True, error_model="numpy", inline="always")
def _epsilon(qc, k):
    """eps_k of ``EpsilonGreedy.epsilon_at(k)``: qc[0] (constant, qc[1] = 0) or
    min(1, qc[0] / sqrt(k)) (inv-sqrt)."""
    if qc[1] == 0.0:
        return qc[0]
    v = qc[0] / np.sqrt(np.float64(k))
    return v if v < 1.0 else 1.0


@njit(cache=True, error_model="numpy", inline="always")
def _mixed_prob(eps, A, greedy_a, a):
    """pi(a | s) = (1 - eps) 1{a = greedy_a} + eps / A, as ``(1 - eps) * eye[greedy] + eps / A``
    computes it."""
    return ((1.0 - eps) if a == greedy_a else 0.0) + eps / A


@njit(cache=True, error_model="numpy", inline="always")
def _mixed_action(eps, A, greedy_a, u):
    """The action a stochastic policy row draws for the uniform u (the rollout's rule): the
    count of cumulative probabilities <= u, clamped to the last action of positive probability."""
    cdf = 0.0
    c = 0
    last = 0
    for a in range(A):
        p = _mixed_prob(eps, A, greedy_a, a)
        cdf += p
        if cdf <= u:
            c += 1
        if p > 0.0:
            last = a
    return c if c < last else last


@njit(cache=True, error_model="numpy")
def _evaluate_mixed_on_model(
    eps, known, r_known, unvisited, S, A, Hm, n_steps, nsa, rsum, pc, succ, nsucc, pol, Vh, w,
    off,
):  # fmt: skip
    """Epsilon-greedy's value estimate V_hat^{pi_k}_h (``CertaintyEquivalentGreedy._plan``):
    the played policy on the empirical model, Q_hat = r_hat + P_hat V_hat_{h+1} on visited pairs
    (else ``unvisited``), V_hat_h(s) = sum_a pi_h(a | s) Q_hat_h(s, a) summed as numpy's
    ``.sum(axis=-1)`` (pairwise, over w[off : off + A]); into Vh (H+1, S), Vh[H] = 0."""
    n_R = r_known.shape[0]
    cap = pc.shape[0] // nsa.shape[0]
    for s in range(S):
        Vh[n_steps * S + s] = 0.0
    for h in range(n_steps - 1, -1, -1):
        m = h if Hm > 1 else 0
        nv = (h + 1) * S
        hr = min(h, n_R - 1)
        for s in range(S):
            greedy_a = pol[h * S + s]
            for a in range(A):
                row = (m * S + s) * A + a
                n = nsa[row]
                if n > 0:
                    r = r_known[hr, s, a] if known else rsum[row] / max(n, 1.0)
                    PV = 0.0
                    for j in range(row * cap, row * cap + nsucc[row]):
                        PV += pc[j] * Vh[nv + succ[j]]
                    q = r + PV
                else:
                    q = unvisited
                w[off + a] = _mixed_prob(eps, A, greedy_a, a) * q
            Vh[h * S + s] = pairwise_sum(w, off, A)


@njit(cache=True, error_model="numpy")
def _sort_values(V, off, S, F):
    """For the empirical CVaR (``algorithms/risk/iterated_cvar.py``, cvar_next): the values
    ``V[off : off + S]`` in stable ascending order into F[2S:3S] and each state's position in
    that order into F[3S:4S] (as floats)."""
    order = np.argsort(V[off : off + S], kind="mergesort")
    for i in range(S):
        F[2 * S + i] = V[off + order[i]]
        F[3 * S + order[i]] = i


@njit(cache=True, error_model="numpy", inline="always")
def cvar_of_true_row(alpha, indptr, indices, data, row, S, F):
    """CVaR^alpha of the next-state values under the true model's CSR row ``row``, the values
    sorted by :func:`_sort_values` into F (the row's probabilities are placed at their states'
    positions in F[0:S], then :func:`_cvar_sorted`): the exact iterated-CVaR evaluation's step."""
    for i in range(S):
        F[i] = 0.0
    for j in range(indptr[row], indptr[row + 1]):
        F[int(F[3 * S + indices[j]])] = data[j]
    return _cvar_sorted(alpha, S, F)


@njit(cache=True, error_model="numpy", inline="always")
def _cvar_sorted(alpha, S, F):
    """CVaR^alpha of the distribution F[0:S] (probabilities in ascending order of the values
    F[2S:3S]) as ``cvar_next`` computes it: masses m_i = min(p_i, max(alpha - F_{i-1}, 0)) with
    F_{i-1} = cumsum(p)_i - p_i (``tail_masses``), then sum_i m_i v_i in numpy's pairwise order
    (over F[S:2S], the zero terms included: they decide the grouping) divided by alpha."""
    c = 0.0
    for i in range(S):
        p = F[i]
        c += p
        t = alpha - (c - p)
        t = t if t >= 0.0 else 0.0  # np.maximum(t, 0.0)
        m = p if p <= t else t  # np.minimum(p, t)
        F[S + i] = m * F[2 * S + i]
    return pairwise_sum(F, S, S) / alpha
