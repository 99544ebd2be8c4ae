r"""Whole-run compiled loop of LSVI-UCB at small d: K episodes in one numba call per segment.

The episode loop of ``theorylab.runners.online`` for :class:`~theorylab.algorithms.online.
lsvi_ucb.LSVIUCB` (Jin, Yang, Wang, Jordan 2020, Algorithm 1, beta = c d H sqrt(iota); the bound
it carries, ``jin2020-lsvi-ucb``, is unchanged), parallel over seeds (``prange``), in the
``targets="statistics"`` form of :mod:`theorylab.algorithms.linear.lsvi`: on a finite-state linear
MDP the regression sum over all past data is ``sum_tau phi^tau_h [r^tau_h + V(x^tau_{h+1})] =
b_h + M_h V`` with ``b_h = sum_tau phi^tau_h r^tau_h`` (d,) and ``M_h = sum_tau phi^tau_h
e_{x^tau_{h+1}}^T`` (d, S), so an episode costs O(H (d^2 + S A d + d S)) whatever k. Each episode
of every seed, in the Python loop's order:

1. the value estimate V^k_1(mu0) = sum_s mu0(s) max_a Q^k_1(s, a) (numpy's pairwise order);
2. the exact regret V*_1(mu0) - V^{pi_k}_1(mu0) of the greedy policy, by backward induction on
   the true model (its positive entries summed left to right, as the tabular kernel does);
3. the rollout of pi_k from the episode's 1 + 3H uniforms (numpy's PCG64 stream, stepped by
   :func:`~theorylab.kernels.pcg64.pcg64_random` exactly as the Python
   loop's ``rng.random(1 + 3H)``; ``TabularMDP.rollout``'s rule);
4. ``LeastSquaresValueIteration.add``: for h = 1..H, with x = phi(x^k_h, a^k_h), the
   Sherman-Morrison step u = Lambda_h^{-1} x, denom = 1 + x^T u, Lambda_h^{-1} <- Lambda_h^{-1} -
   u u^T / denom, and the squared widths of all pairs q(s, a) <- max(q(s, a) - (phi(s, a)^T u)^2
   / denom, 0); every ``WIDTH_REFRESH`` episodes the widths are recomputed exactly,
   q = max(phi^T Lambda_h^{-1} phi, 0) (the same schedule, by the episode count); then
   M_h[:, x^k_{h+1}] += x and b_h += x r^k_h;
5. the plan (``LeastSquaresValueIteration.plan``, Algorithm 1 lines 4-6), h = H..1 with
   V_{H+1} = 0: w_h = Lambda_h^{-1} (b_h + M_h V_{h+1}), Q_h(s, a) = min{w_h^T phi(s, a) + beta
   sqrt(q_h(s, a)), H}, V_h(s) = max_a Q_h(s, a), pi_h(s) = the first maximiser (the Python
   loop's ``argmax``).

Agreement with the Python loop (tests/test_whole_run.py): the Python agent forms its small
products (``Lambda^{-1} x``, ``M_h V``, ``Lambda^{-1} b``, ``phi w``, ``phi u``, ``phi
Lambda^{-1}``) with numpy's ``matmul`` (BLAS or numpy's loops, whose summation order and use of
fused multiply-add depend on the build, the CPU and the shapes); here every product is a
left-to-right sum and the elementwise-product sums are numpy's pairwise sums. The two therefore
agree to round-off, not bit for bit: Q, V and the value estimates to 1e-12, and the actions, hence
the trajectories, the returns and the exact regret, are identical as long as no two actions' Q
values tie to within round-off (exact ties, such as two pairs at the cap H, are exact in both and
go to the smallest action in both). With ``targets="history"`` the Python agent sums the k past
targets per pair instead (another order): the same agreement.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit, prange

from theorylab.algorithms.linear.lsvi import WIDTH_REFRESH
from theorylab.algorithms.online.segmented_loop import SegmentedLoop, true_model_args
from theorylab.algorithms.online.whole_run_kernel import _search, pairwise_sum
from theorylab.kernels.pcg64 import pcg64_random

STATE_FIELDS = ("Linv", "width", "M", "b_r", "Q", "V", "pol")


@njit(cache=True, error_model="numpy")
def _sherman_morrison_step(phi, row, Linv_h, width_h, u, tmp):
    """``LeastSquaresValueIteration.add`` for one (seed, h) and x = phi[row]: the
    Sherman-Morrison update of Linv_h (d, d) in place and the widths width_h (SA,) after it."""
    SA, d = phi.shape
    for i in range(d):  # u = Lambda^{-1} x
        acc = 0.0
        for j in range(d):
            acc += Linv_h[i, j] * phi[row, j]
        u[i] = acc
    for i in range(d):  # 1 + (x * u).sum(), numpy's pairwise order
        tmp[i] = phi[row, i] * u[i]
    denom = 1.0 + pairwise_sum(tmp, 0, d)
    for i in range(d):
        for j in range(d):
            Linv_h[i, j] -= (u[i] * u[j]) / denom
    for r in range(SA):  # q(s, a) -= (phi(s, a)^T u)^2 / denom, clipped at 0
        proj = 0.0
        for j in range(d):
            proj += phi[r, j] * u[j]
        q = width_h[r] - proj * proj / denom
        width_h[r] = q if q > 0.0 else 0.0


@njit(cache=True, error_model="numpy")
def _exact_widths(phi, Linv_h, width_h, tmp):
    """q(s, a) = max(phi^T Lambda^{-1} phi, 0) for every pair (``quadratic_form``)."""
    SA, d = phi.shape
    for r in range(SA):
        for j in range(d):  # (phi^T Lambda^{-1})_j
            acc = 0.0
            for i in range(d):
                acc += phi[r, i] * Linv_h[i, j]
            tmp[j] = acc * phi[r, j]
        q = pairwise_sum(tmp, 0, d)
        width_h[r] = q if q > 0.0 else 0.0


@njit(cache=True, error_model="numpy")
def plan_lsvi_seed(phi, beta, Hf, Linv, width, M, b_r, Q, V, pol, ysum, w):
    """Algorithm 1 lines 4-6 for one seed (module docstring, step 5). Linv (H, d, d), width
    (H, SA), M (H, d, S), b_r (H, d); out Q (H, S, A), V (H+1, S), pol (H, S); scratch ysum, w
    (d,)."""
    SA, d = phi.shape
    H, S, A = Q.shape
    for s in range(S):
        V[H, s] = 0.0
    for h in range(H - 1, -1, -1):
        for i in range(d):  # b_h + M_h V_{h+1}
            acc = 0.0
            for s in range(S):
                acc += M[h, i, s] * V[h + 1, s]
            ysum[i] = b_r[h, i] + acc
        for i in range(d):  # w_h = Lambda_h^{-1} (b_h + M_h V_{h+1})
            acc = 0.0
            for j in range(d):
                acc += Linv[h, i, j] * ysum[j]
            w[i] = acc
        for s in range(S):
            best = -np.inf
            arg = 0
            for a in range(A):
                r = s * A + a
                mean = 0.0
                for j in range(d):
                    mean += phi[r, j] * w[j]
                q = mean + beta * np.sqrt(width[h, r])
                q = q if q < Hf else Hf  # np.minimum(q, H)
                Q[h, s, a] = q
                if a == 0 or q > best:  # the first maximiser
                    best = q
                    arg = a
            V[h, s] = best
            pol[h, s] = arg


@njit(parallel=True, cache=True, error_model="numpy")
def run_lsvi_segment(
    phi, beta, Hf, refresh, indptr, indices, data, cum, last, n_stages, R, bernoulli, mu0,
    mu0_cdf, last_mu0, v_star, Linv, width, M, b_r, Q, V, pol, vpi, k0, rng, regret, returns,
    estimates,
):  # fmt: skip
    """The next n episodes of every seed (module docstring), parallel over seeds.

    phi (S*A, d) features; beta, Hf = float(H); refresh = WIDTH_REFRESH. True model: the
    stacked CSR (indptr, indices, data) of its positive entries and its sampler (cum, last),
    n_stages, R (n_R, S, A), bernoulli, mu0, mu0_cdf (S,), last_mu0, v_star = V*_1(mu0).
    Learner state, in place: Linv (B, H, d, d), width (B, H, S*A), M (B, H, d, S), b_r (B, H, d),
    Q (B, H, S, A), V (B, H+1, S), pol (B, H, S); scratch vpi (B, H+1, S). k0: episodes run
    before this segment (the width refresh schedule). rng (B, 4) uint64 PCG64 states. Out:
    regret, returns, estimates (B, n).
    """
    B, n_ep = regret.shape
    SA, d = phi.shape
    H, S, A = Q.shape[1], Q.shape[2], Q.shape[3]
    n_R = R.shape[0]
    for b in prange(B):
        wk = np.empty(max(S, H))
        uni = np.empty(1 + 3 * H)
        sa = np.empty(H, np.int64)
        nxt = np.empty(H, np.int64)
        rew = np.empty(H)
        u = np.empty(d)
        tmp = np.empty(d)
        ysum = np.empty(d)
        w = np.empty(d)
        vpi_b = vpi[b]
        for k in range(n_ep):
            # (1) value estimate of the current plan
            for s in range(S):
                wk[s] = V[b, 0, s] * mu0[s]
            estimates[b, k] = pairwise_sum(wk, 0, S)

            # (2) exact value of the greedy policy on the true model
            for s in range(S):
                vpi_b[H, s] = 0.0
            for h in range(H - 1, -1, -1):
                base = min(h, n_stages - 1) * S * A
                hr = min(h, n_R - 1)
                for s in range(S):
                    a = pol[b, h, s]
                    row = base + s * A + a
                    acc = 0.0
                    for j in range(indptr[row], indptr[row + 1]):
                        acc += data[j] * vpi_b[h + 1, indices[j]]
                    vpi_b[h, s] = R[hr, s, a] + acc
            for s in range(S):
                wk[s] = vpi_b[0, s] * mu0[s]
            regret[b, k] = v_star - pairwise_sum(wk, 0, S)

            # (3) rollout from the episode's uniforms [mu0, (action, next, reward) x H]
            for i in range(1 + 3 * H):
                uni[i] = pcg64_random(rng[b])
            c = 0
            for x in range(S):
                if mu0_cdf[x] <= uni[0]:
                    c += 1
            s = min(c, last_mu0)
            for t in range(H):
                a = pol[b, t, s]
                mean = R[min(t, n_R - 1), s, a]
                if bernoulli:
                    rwd = 1.0 if uni[3 + 3 * t] < mean else 0.0
                else:
                    rwd = mean
                y = _search(
                    indptr, indices, cum, last, min(t, n_stages - 1) * S * A + s * A + a,
                    uni[2 + 3 * t],
                )  # fmt: skip
                sa[t] = s * A + a
                nxt[t] = y
                rew[t] = rwd
                wk[t] = rwd
                s = y
            returns[b, k] = pairwise_sum(wk, 0, H)

            # (4) the data: Sherman-Morrison, widths, then the target statistics
            for h in range(H):
                _sherman_morrison_step(phi, sa[h], Linv[b, h], width[b, h], u, tmp)
            if (k0 + k + 1) % refresh == 0:  # exact widths on the k-only schedule
                for h in range(H):
                    _exact_widths(phi, Linv[b, h], width[b, h], tmp)
            for h in range(H):
                row = sa[h]
                for i in range(d):
                    M[b, h, i, nxt[h]] += phi[row, i]
                    b_r[b, h, i] += phi[row, i] * rew[h]

            # (5) the next episode's plan
            plan_lsvi_seed(
                phi, beta, Hf, Linv[b], width[b], M[b], b_r[b], Q[b], V[b], pol[b], ysum, w
            )


class LSVIUCBLoop(SegmentedLoop):
    """The state of B seeds of LSVI-UCB on one finite linear MDP, advanced by the compiled
    kernel; the interface of :class:`~theorylab.algorithms.online.whole_run.CompiledLoop` (so
    :func:`~theorylab.algorithms.online.whole_run.run_whole` segments, checkpoints and resumes
    it). agent: a freshly constructed LSVIUCB (k = 0; its features, beta, Gram inverses, widths
    and initial plan are read; its ``targets`` mode does not matter: the kernel keeps the
    statistics form)."""

    STATE_FIELDS = STATE_FIELDS
    CARRIED = ("_vpi",)  # V^pi of the last evaluated policy

    def __init__(self, agent, mdp, v_star: float, env_rngs: Sequence[np.random.Generator]):

        if mdp.horizon is None:
            raise ValueError(f"{mdp!r} has no finite horizon; online episodic runs need one")
        if agent.k != 0:
            raise ValueError(
                f"lsvi-ucb: the compiled loop starts from a fresh agent (k = {agent.k})"
            )
        B = agent.n_seeds
        if len(env_rngs) != B:
            raise ValueError(f"got {len(env_rngs)} environment generators for {B} seeds")
        S, A, H, d = agent.S, agent.A, agent.H, agent.d
        if (S, A, H) != (mdp.S, mdp.A, int(mdp.horizon)):
            raise ValueError(
                f"lsvi-ucb: the agent's (S, A, H) = {(S, A, H)} is not the MDP's "
                f"{(mdp.S, mdp.A, mdp.horizon)}"
            )
        self.B, self.S, self.A, self.H, self.d = B, S, A, H, d
        self.env_rngs, self.v_star = list(env_rngs), float(v_star)
        self.episodes_done = 0
        self.incremental = True  # (the tabular loop's switch; nothing to skip here)
        self.phi = np.ascontiguousarray(agent.phi_flat, dtype=np.float64)  # (S*A, d)
        self.beta = float(agent.beta)
        self.Hf = float(agent.q_cap(0))
        self.model_args = true_model_args(mdp, self.v_star)
        self.state = {
            "Linv": np.ascontiguousarray(agent.Lambda_inv, dtype=np.float64).copy(),
            "width": np.ascontiguousarray(agent.width_sq, dtype=np.float64).copy(),
            "M": np.zeros((B, H, d, S)),
            "b_r": np.zeros((B, H, d)),
            "Q": np.ascontiguousarray(agent.Q, dtype=np.float64).copy(),
            "V": np.ascontiguousarray(agent.V, dtype=np.float64).copy(),
            "pol": np.ascontiguousarray(agent.policy(), dtype=np.int64).copy(),
        }
        self._vpi = np.zeros((B, H + 1, S))

    def _run_segment(self, rng: np.ndarray, out: dict[str, np.ndarray]) -> None:
        st = self.state
        run_lsvi_segment(
            self.phi, self.beta, self.Hf, WIDTH_REFRESH, *self.model_args, st["Linv"],
            st["width"], st["M"], st["b_r"], st["Q"], st["V"], st["pol"], self._vpi,
            self.episodes_done, rng, out["regret"], out["returns"], out["estimates"],
        )  # fmt: skip
