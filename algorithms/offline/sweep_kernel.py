r"""Compiled N-sweep of the tabular pessimistic algorithms: draw, count and plan in one numba call.

What it implements
------------------
:func:`sweep` runs, for B seeds in parallel (``prange``), what ``theorylab.runners.offline`` does
per seed with ``loop="python"``:

1. draw the seed's dataset of ``n_max`` transitions exactly as
   :func:`theorylab.algorithms.offline.dataset.make_dataset` does (i.i.d. ``"samples"``, finite
   horizon or discounted, and finite-horizon ``"trajectories"``), from the same uniforms: each
   seed's numpy PCG64 stream is stepped inside the kernel
   (:func:`pcg64_random`: numpy's algorithm, as the online whole-run kernels step
   it, with a native 128-bit multiply). ``g.random((3, n))`` fills
   row by row, so the three uniforms of sample i sit at stream positions i, n + i and 2 n + i;
   the driver hands the kernel three copies of the state, advanced by 0, n and 2 n
   (``PCG64.advance``). Trajectories read one stream in order (1 + 3 H doubles per episode);
2. for every N of the sweep, fit the algorithm on the first N rows (nested datasets, the
   runner's ``head(N)``) and return its Q and V tables (and, for VI-LCB, its policy); the
   greedy policy, the value estimate V_hat(mu0) and the exact evaluation stay in Python
   (``theorylab.algorithms.offline.compiled_sweep``), on the same functions as the Python path.

Algorithms (``FIT_*``; each is the recursion of its module, whose docstring carries the paper's
equations and the bound): pessimistic VI with the Hoeffding and the Bernstein penalty (sum and
max forms; ``pessimistic_vi.py``, Li et al. 2022, Algorithm 2), tabular PEVI (``pevi.py``, Jin,
Yang, Wang 2021, Algorithm 2 with one-hot features) and VI-LCB (``vi_lcb.py``, Rashidinejad et
al. 2021, Algorithm 3, data split into T + 1 contiguous folds).

Bit-for-bit agreement with the Python path (tests/test_offline_compiled_sweep.py)
--------------------------------------------------------------------------------
Every floating-point expression is the reference's, operation for operation and in its order:

* inverse-CDF searches are numpy's ``searchsorted(side="right")`` algorithm
  (``numpy/_core/src/npysort/binsearch.cpp``), including its carry-over of the previous key's
  bounds, run over the same keys in the same order (one search state per numpy call: per stage h
  for the next states of finite-horizon data), so even an array that round-off left unsorted
  returns numpy's index;
* per-pair sums (counts, rewards, V(s'), squared deviations) add the samples in their order, as
  ``np.bincount(..., weights=...)`` does; counts are integers, exact in float64;
* constants that the reference computes with ``np.log`` / ``math.log`` (L, T, beta) are computed
  by the driver with the same calls and passed in; in the kernel only +, -, *, /, sqrt, min, max
  (IEEE-exact operations, the same in numba and numpy) act on them;
* ties in VI-LCB's greedy step follow ``result.greedy``'s rule (smallest action within
  ``GREEDY_ATOL (1 + |max Q|)``).

fastmath is off (no reassociation, no fused multiply-add). Memory: about 24 bytes per transition
per thread (a seed group's buffers: int32 pair, next state, stage, order; float64 reward), so
10^7 transitions take 240 MB a thread.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from theorylab.kernels.pcg64 import pcg64_random

FIT_PVI_HOEFFDING, FIT_PVI_BERNSTEIN_SUM, FIT_PVI_BERNSTEIN_MAX = 0, 1, 2
FIT_PEVI_TABULAR, FIT_VI_LCB = 3, 4
DATA_SAMPLES, DATA_TRAJECTORIES = 0, 1
_TINY = 1e-300  # empirical._TINY: n = 0 gives sums = 0, and 0 / tiny = 0


@njit(cache=True, error_model="numpy")
def searchsorted_right(arr, off, n_arr, key, state, fstate, k):
    """numpy's ``searchsorted(arr[off:off+n_arr], key, side="right")`` for one key of a sequence
    of keys searched in one numpy call. ``state[k] = (min_idx, max_idx)`` and ``fstate[k]`` (the
    previous key) carry numpy's narrowing from one key to the next; start a call with
    ``state[k] = (0, n_arr)`` and ``fstate[k] = -inf``."""
    min_idx = state[k, 0]
    max_idx = state[k, 1]
    if fstate[k] <= key:
        max_idx = n_arr
    else:
        min_idx = 0
        max_idx = max_idx + 1 if max_idx < n_arr else n_arr
    fstate[k] = key
    while min_idx < max_idx:
        mid = min_idx + ((max_idx - min_idx) >> 1)
        if arr[off + mid] <= key:
            min_idx = mid + 1
        else:
            max_idx = mid
    state[k, 0] = min_idx
    state[k, 1] = max_idx
    return min_idx


@njit(cache=True, error_model="numpy")
def _next_state(keys, kidx, klast, koff, stage, S, A, s, a, u, state, fstate, k):
    """``NextStateSampler.sample`` for one pair: the first key > row + u in the stage's keys,
    clamped to the row's last positive entry."""
    row = s * A + a
    off = koff[stage]
    j = searchsorted_right(keys, off, koff[stage + 1] - off, np.float64(row) + u, state, fstate, k)
    last = klast[stage, row]
    return kidx[off + min(j, last)]


@njit(cache=True, error_model="numpy", inline="always")
def _count_le(arr, off, lo, hi, x):
    """The number of entries <= x of the sorted ``arr[off:...]``, known to lie in [lo, hi]."""
    while hi - lo > 8:
        mid = (lo + hi) >> 1
        if arr[off + mid] <= x:
            lo = mid + 1
        else:
            hi = mid
    while lo < hi and arr[off + lo] <= x:
        lo += 1
    return lo


@njit(cache=True, error_model="numpy", inline="always")
def _guided(arr, off, tab, t0, G, x, u):
    """``searchsorted(arr[off:], x, side="right")`` for a sorted array, where x is a monotone
    function of the uniform u (u itself, or row + u): bucket b = floor(u G) (exact, G a power
    of 2) and ``tab[t0 + b]``, ``tab[t0 + b + 1]`` = the counts of entries <= x at u = b / G and
    u = (b + 1) / G bound the answer."""
    b = np.int64(u * G)
    return _count_le(arr, off, tab[t0 + b], tab[t0 + b + 1], x)


@njit(cache=True, error_model="numpy")
def _reward(R, bern, h, s, a, u):
    mean = R[min(h, R.shape[0] - 1), s, a]
    if bern:
        return 1.0 if u < mean else 0.0
    return mean


@njit(cache=True, error_model="numpy")
def _draw_samples(
    finite, H, S, A, n, st, cat_cdf, cat_last, keys, kidx, klast, koff, R, bern, pair, nxt,
    rew, stage, fast, cat_tab, G_cat, ns_tab, G_ns,
):  # fmt: skip
    """``_finite_samples`` / ``_discounted_samples``: n i.i.d. rows from the three streams
    ``st (3, 4)`` (positions i, n + i, 2 n + i of the seed's uniforms)."""
    SA = S * A
    n_stages = koff.shape[0] - 1
    cat_state = np.zeros((1, 2), np.int64)
    cat_state[0, 1] = cat_cdf.shape[0]
    cat_f = np.full(1, -np.inf)
    nh = H if finite else 1
    ns_state = np.zeros((nh, 2), np.int64)
    ns_f = np.full(nh, -np.inf)
    for h in range(nh):
        sg = min(h, n_stages - 1)
        ns_state[h, 1] = koff[sg + 1] - koff[sg]
    s0 = st[0]
    s1 = st[1]
    s2 = st[2]
    for i in range(n):
        u0 = pcg64_random(s0)
        u1 = pcg64_random(s1)
        u2 = pcg64_random(s2)
        if fast:
            flat = _guided(cat_cdf, 0, cat_tab, 0, G_cat, u0, u0)
        else:
            flat = searchsorted_right(cat_cdf, 0, cat_cdf.shape[0], u0, cat_state, cat_f, 0)
        flat = min(flat, cat_last)
        h = flat // SA if finite else 0
        rest = flat - h * SA
        s = rest // A
        a = rest - s * A
        sg = min(h, n_stages - 1)
        if fast:
            off = koff[sg]
            j = _guided(keys, off, ns_tab[sg], rest * (G_ns + 1), G_ns, np.float64(rest) + u1, u1)
            nxt[i] = kidx[off + min(j, klast[sg, rest])]
        else:
            nxt[i] = _next_state(keys, kidx, klast, koff, sg, S, A, s, a, u1, ns_state, ns_f, h)
        rew[i] = _reward(R, bern, h, s, a, u2)
        pair[i] = rest
        stage[i] = h


@njit(cache=True, error_model="numpy")
def _draw_trajectories(
    H, S, A, K, st, cdf0, last0, pol_cdf, pol_last, keys, kidx, klast, koff, R, bern, pair, nxt,
    rew, stage, fast, cat_tab, G_cat, ns_tab, G_ns,
):  # fmt: skip
    """``_finite_trajectories``: K episodes of the behaviour policy from one stream, 1 + 3 H
    uniforms per episode (initial state, then per step action, next state, reward); row k H + h
    is step h of episode k. Initial states are one numpy search over the K episodes, next states
    one per stage h."""
    n_stages = koff.shape[0] - 1
    s0_state = np.zeros((1, 2), np.int64)
    s0_state[0, 1] = cdf0.shape[0]
    s0_f = np.full(1, -np.inf)
    ns_state = np.zeros((H, 2), np.int64)
    ns_f = np.full(H, -np.inf)
    for h in range(H):
        sg = min(h, n_stages - 1)
        ns_state[h, 1] = koff[sg + 1] - koff[sg]
    g = st[0]
    for k in range(K):
        u0 = pcg64_random(g)
        if fast:
            s = _guided(cdf0, 0, cat_tab, 0, G_cat, u0, u0)
        else:
            s = searchsorted_right(cdf0, 0, cdf0.shape[0], u0, s0_state, s0_f, 0)
        s = min(s, last0)
        for h in range(H):
            ua = pcg64_random(g)
            us = pcg64_random(g)
            ur = pcg64_random(g)
            a = 0
            for b in range(A):  # _policy_actions: the count of cdf <= u, clamped
                if pol_cdf[h, s, b] <= ua:
                    a += 1
            a = min(a, pol_last[h, s])
            sg = min(h, n_stages - 1)
            if fast:
                row = s * A + a
                off = koff[sg]
                j = _guided(keys, off, ns_tab[sg], row * (G_ns + 1), G_ns, np.float64(row) + us, us)
                s_next = kidx[off + min(j, klast[sg, row])]
            else:
                s_next = _next_state(keys, kidx, klast, koff, sg, S, A, s, a, us, ns_state, ns_f, h)
            i = k * H + h
            pair[i] = s * A + a
            nxt[i] = s_next
            rew[i] = _reward(R, bern, h, s, a, ur)
            stage[i] = h
            s = s_next


@njit(cache=True, error_model="numpy")
def _stage_order(stage, n, H, order):
    """Rows grouped by stage, each group in row order (``stage_blocks``' stable sort): fills
    ``order (n,)`` and returns the group starts ``start (H + 1,)``."""
    start = np.zeros(H + 1, np.int64)
    for i in range(n):
        start[stage[i] + 1] += 1
    for h in range(H):
        start[h + 1] += start[h]
    fill = start[:H].copy()
    for i in range(n):
        h = stage[i]
        order[fill[h]] = i
        fill[h] += 1
    return start


@njit(cache=True, error_model="numpy")
def _prefix_end(order, lo, hi, n):
    """First position in ``order[lo:hi]`` (increasing row numbers) holding a row >= n."""
    while lo < hi:
        mid = (lo + hi) // 2
        if order[mid] < n:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, error_model="numpy")
def _fit_finite(
    variant, H, S, A, n, order, start, pair, nxt, rew, L, chH, c_b, cbH, two_cbH, beta, lam, V,
    Q, cnt,
):  # fmt: skip
    """Backward induction of pessimistic VI / tabular PEVI on the first n rows (the recursions
    of pessimistic_vi.py and pevi.py, expression for expression). Writes V ``(H + 1, S)``,
    Q ``(H, S, A)`` and the stage counts ``cnt (H, S, A)``."""
    SA = S * A
    n_ = np.zeros(SA)
    s1 = np.zeros(SA)  # rewards (PEVI: rewards + V(s'))
    s2 = np.zeros(SA)  # V_{h+1}(s')
    s3 = np.zeros(SA)  # y = V_{h+1}(s') - (H - h - 1) / 2 (Bernstein)
    s4 = np.zeros(SA)  # y^2
    for s in range(S):
        V[H, s] = 0.0
    for h in range(H - 1, -1, -1):
        n_[:] = 0.0
        s1[:] = 0.0
        s2[:] = 0.0
        s3[:] = 0.0
        s4[:] = 0.0
        shift = (H - h - 1) / 2.0
        end = _prefix_end(order, start[h], start[h + 1], n)
        for j in range(start[h], end):  # each sum in row order, as np.bincount adds
            i = order[j]
            p = pair[i]
            v = V[h + 1, nxt[i]]
            n_[p] += 1.0
            if variant == FIT_PEVI_TABULAR:
                s1[p] += rew[i] + v
            else:
                s1[p] += rew[i]
                s2[p] += v
                if variant != FIT_PVI_HOEFFDING:
                    y = v - shift
                    s3[p] += y
                    s4[p] += y * y
        for p in range(SA):
            cnt[h, p // A, p % A] = n_[p]
        for s in range(S):
            best = -np.inf
            for a in range(A):
                p = s * A + a
                cnt_p = n_[p]
                if variant == FIT_PEVI_TABULAR:
                    fit = s1[p] / (cnt_p + lam)
                    gam = beta * np.sqrt(1.0 / (cnt_p + lam))
                    q = min(max(fit - gam, 0.0), np.float64(H - h))
                else:
                    n1 = max(cnt_p, 1.0)
                    div = max(cnt_p, _TINY)
                    r_hat = s1[p] / div
                    pv = s2[p] / div
                    if variant == FIT_PVI_HOEFFDING:
                        b = min(chH * np.sqrt(L / n1), np.float64(H))
                    else:
                        m1 = s3[p] / div
                        var = max(s4[p] / div - m1 * m1, 0.0)
                        width = np.sqrt(c_b * L * var / n1)
                        if variant == FIT_PVI_BERNSTEIN_SUM:
                            b = min(width + cbH * L / n1, np.float64(H))
                        else:
                            b = min(max(width, two_cbH * L / n1), np.float64(H))
                    if not cnt_p > 0:
                        b = np.float64(H)
                    q = max(r_hat + pv - b, 0.0)
                Q[h, s, a] = q
                if q > best:
                    best = q
            V[h, s] = best


@njit(cache=True, error_model="numpy")
def _greedy_row(Q, s, A, atol):
    """``result.greedy`` for one state: the smallest action within atol (1 + |max|) of the max."""
    best = Q[s, 0]
    for a in range(1, A):
        if Q[s, a] > best:
            best = Q[s, a]
    thr = best - atol * (1.0 + abs(best))
    for a in range(A):
        if Q[s, a] >= thr:
            return a
    return 0


@njit(cache=True, error_model="numpy")
def _fit_vi_lcb(S, A, n, T, Lc, vmax, gam, behaviour_start, pi0, atol, pair, nxt, rew, V, Q, pol):
    """VI-LCB (vi_lcb.py) on the first n rows: T + 1 contiguous folds, fold t drives iteration t.
    Writes V ``(S,)``, Q ``(S, A)`` (the last iteration's) and the policy ``(S,)``."""
    SA = S * A
    folds = T + 1
    m = np.zeros(SA)
    rs = np.zeros(SA)
    vs = np.zeros(SA)
    for s in range(S):
        V[s] = 0.0
        for a in range(A):
            Q[s, a] = 0.0
    if behaviour_start:
        hi0 = (n * 1) // folds
        for i in range(0, hi0):
            m[pair[i]] += 1.0
        for s in range(S):  # argmax_a m_0(s, a), first maximum
            best = m[s * A]
            arg = 0
            for a in range(1, A):
                if m[s * A + a] > best:
                    best = m[s * A + a]
                    arg = a
            pol[s] = arg
    else:
        for s in range(S):
            pol[s] = pi0[s]
    Vmid = np.empty(S)
    for t in range(1, T + 1):
        lo = (n * t) // folds
        hi = (n * (t + 1)) // folds
        m[:] = 0.0
        rs[:] = 0.0
        vs[:] = 0.0
        for i in range(lo, hi):
            p = pair[i]
            m[p] += 1.0
            rs[p] += rew[i]
            vs[p] += V[nxt[i]]
        for s in range(S):
            best = -np.inf
            for a in range(A):
                p = s * A + a
                b = vmax * np.sqrt(Lc / max(m[p], 1.0))
                div = max(m[p], _TINY)
                q = rs[p] / div - b + gam * (vs[p] / div)
                Q[s, a] = q
                if q > best:
                    best = q
            Vmid[s] = best
        for s in range(S):
            if Vmid[s] > V[s]:
                pol[s] = _greedy_row(Q, s, A, atol)
                V[s] = Vmid[s]


@njit(parallel=True, cache=True, error_model="numpy")
def sweep(
    data_kind, finite, H, S, A, n_max, rng, cat_cdf, cat_last, pol_cdf, pol_last, keys, kidx,
    klast, koff, R, bern, fast, cat_tab, G_cat, ns_tab, G_ns, variant, sizes, L, chH, c_b, cbH,
    two_cbH, beta, lam, T, Lc, vmax, gam, behaviour_start, pi0, atol, Q_out, V_out, pol_out,
    cnt_out, n_groups,
):  # fmt: skip
    """Draw every seed's data and fit the algorithm at every N of ``sizes`` (module docstring).

    The first 22 arguments describe the data (``dataset.compiled_draw_inputs``): rng
    ``(B, 3, 4)`` uint64 PCG64 states (samples: advanced by 0, n_max, 2 n_max; trajectories:
    row 0), the categorical cdf of (h, s, a) (trajectories: of the initial state), the
    behaviour's action cdfs, NextStateSampler's keys, the rewards, and the guide tables.
    sizes: ``(M,)`` increasing; L: ``(B, M)``, beta, T, Lc: ``(M,)``.
    Finite horizon writes Q_out ``(B, M, H, S, A)``, V_out ``(B, M, H + 1, S)``, cnt_out
    ``(B, M, H, S, A)``; VI-LCB writes Q_out ``(B, M, 1, S, A)``, V_out ``(B, M, 1, S)`` and
    pol_out ``(B, M, S)``. n_groups: the seeds are split into this many contiguous groups (one
    per thread), each drawing into one set of buffers (24 bytes per transition)."""
    B = rng.shape[0]
    M = sizes.shape[0]
    for grp in prange(n_groups):  # one buffer set per group of seeds (one group per thread)
        pair = np.empty(n_max, np.int32)
        nxt = np.empty(n_max, np.int32)
        rew = np.empty(n_max)
        stage = np.empty(n_max, np.int32)
        order = np.empty(n_max if finite else 0, np.int32)
        for b in range((grp * B) // n_groups, ((grp + 1) * B) // n_groups):
            _sweep_seed(
                data_kind, finite, variant, H, S, A, n_max, sizes, rng[b], cat_cdf, cat_last,
                pol_cdf, pol_last, keys, kidx, klast, koff, R, bern, L[b], chH, c_b, cbH,
                two_cbH, beta, lam, T, Lc, vmax, gam, behaviour_start, pi0[b], atol, Q_out[b],
                V_out[b], pol_out[b], cnt_out[b], fast, cat_tab, G_cat, ns_tab, G_ns, pair, nxt,
                rew, stage, order, M,
            )  # fmt: skip


@njit(cache=True, error_model="numpy")
def _sweep_seed(
    data_kind, finite, variant, H, S, A, n_max, sizes, rng_b, cat_cdf, cat_last, pol_cdf,
    pol_last, keys, kidx, klast, koff, R, bern, L_b, chH, c_b, cbH, two_cbH, beta, lam, T, Lc,
    vmax, gam, behaviour_start, pi0_b, atol, Q_b, V_b, pol_b, cnt_b, fast, cat_tab, G_cat,
    ns_tab, G_ns, pair, nxt, rew, stage, order, M,
):  # fmt: skip
    """One seed of :func:`sweep`: draw its data into the buffers, fit every N."""
    st = rng_b.copy()
    if data_kind == DATA_TRAJECTORIES:
        _draw_trajectories(
            H, S, A, n_max // H, st, cat_cdf, cat_last, pol_cdf, pol_last, keys, kidx, klast,
            koff, R, bern, pair, nxt, rew, stage, fast, cat_tab, G_cat, ns_tab, G_ns,
        )  # fmt: skip
    else:
        _draw_samples(
            finite, H, S, A, n_max, st, cat_cdf, cat_last, keys, kidx, klast, koff, R, bern,
            pair, nxt, rew, stage, fast, cat_tab, G_cat, ns_tab, G_ns,
        )  # fmt: skip
    if finite:
        start = _stage_order(stage, n_max, H, order)
        for j in range(M):
            _fit_finite(
                variant, H, S, A, sizes[j], order, start, pair, nxt, rew, L_b[j], chH, c_b,
                cbH, two_cbH, beta[j], lam, V_b[j], Q_b[j], cnt_b[j],
            )  # fmt: skip
    else:
        for j in range(M):
            _fit_vi_lcb(
                S, A, sizes[j], T[j], Lc[j], vmax, gam, behaviour_start, pi0_b, atol, pair,
                nxt, rew, V_b[j, 0], Q_b[j, 0], pol_b[j],
            )  # fmt: skip


@njit(parallel=True, cache=True, error_model="numpy")
def draw_batch(
    data_kind, finite, H, S, A, n, rng, cat_cdf, cat_last, pol_cdf, pol_last, keys, kidx, klast,
    koff, R, bern, fast, cat_tab, G_cat, ns_tab, G_ns, n_groups, states, actions, rewards,
    next_states, stages,
):  # fmt: skip
    """``make_dataset``'s arrays ``(B, n)`` for B seeds, drawn as :func:`sweep` draws them (the
    first 22 arguments as there), parallel over groups of seeds."""
    B = rng.shape[0]
    for grp in prange(n_groups):
        pair = np.empty(n, np.int32)
        nxt = np.empty(n, np.int32)
        stage = np.empty(n, np.int32)
        for b in range((grp * B) // n_groups, ((grp + 1) * B) // n_groups):
            st = rng[b].copy()
            if data_kind == DATA_TRAJECTORIES:
                _draw_trajectories(
                    H, S, A, n // H, st, cat_cdf, cat_last, pol_cdf, pol_last, keys, kidx,
                    klast, koff, R, bern, pair, nxt, rewards[b], stage, fast, cat_tab, G_cat,
                    ns_tab, G_ns,
                )  # fmt: skip
            else:
                _draw_samples(
                    finite, H, S, A, n, st, cat_cdf, cat_last, keys, kidx, klast, koff, R, bern,
                    pair, nxt, rewards[b], stage, fast, cat_tab, G_cat, ns_tab, G_ns,
                )  # fmt: skip
            for i in range(n):
                p = pair[i]
                states[b, i] = p // A
                actions[b, i] = p - (p // A) * A
                next_states[b, i] = nxt[i]
                stages[b, i] = stage[i]
