r"""Whole-run torch loop: the tabular optimistic family's K episodes as a device-resident program.

``theorylab.run(..., loop="torch", device="cpu"|"cuda")`` hands the run to :class:`TorchLoop`,
driven in segments by :func:`theorylab.algorithms.online.whole_run.run_whole` (progress and
checkpoints are the compiled loop's). Every seed's learner state lives in torch tensors on one
device, batched over seeds; each episode is one fixed sequence of tensor operations (no Python
branch on data, no ``.item()`` or host copy inside a segment), and the curves come back to the
host once per segment.

What an episode does (per seed, all seeds at once), as ``theorylab.runners.online``'s Python
loop and the numba kernel (:mod:`theorylab.algorithms.online.whole_run_kernel`, whose docstring
carries the papers' equations for each variant) do it:

1. the value estimate V_{k,1}(mu0) of the current plan;
2. the exact regret V*_1(mu0) - V^{pi_k}_1(mu0) by backward induction on the true model;
3. one rollout of pi_k on the true model from 1 + 3H uniforms (``TabularMDP.rollout``'s rule:
   the first state of mu0's CDF above u_0, then per step t the first successor whose
   cumulative probability exceeds u_{2+3t}, a Bernoulli reward 1{u_{3+3t} < R});
4. the count update (one ``scatter_add_`` per count array for the whole episode);
5. the next plan, or for optimistic Q-learning the H updates made right after each step of the
   rollout.

Algorithms (the numba kernel's ``VARIANT_*``; the bound each carries is its Python agent's,
unchanged):

* UCBVI-CH -- Azar, Osband, Munos 2017, Algorithms 1-3: b(x,a) = 7 H L sqrt(1/N(x,a)),
  Q_{k,h} = min{Q_{k-1,h}, H, r + P_hat V_{k,h+1} + b};
* UCBVI-BF -- the same paper, Algorithm 4 (the empirical-Bernstein bonus with the
  min{100^2 H^3 S^2 A L^2 / N'_{k,h+1}(y), H^2} correction term);
* UCBVI (AJKS) -- Agarwal, Jiang, Kakade, Sun, *RL: Theory and Algorithms*, Ch. 7: per-step
  model, b_h = 2 H sqrt(L / N_h(s,a)), Q_h = min{r_h + b_h + P_hat_h V_{h+1}, H};
* greedy -- certainty-equivalent planning on the empirical model (the linear-regret contrast);
* optimistic Q-learning -- Jin, Allen-Zhu, Bubeck, Jordan 2018, Algorithm 1 (UCB-Hoeffding) and
  Algorithm 2 (UCB-Bernstein), alpha_t = (H + 1) / (H + t).

Every expression is the kernel's (and so the Python agent's), operation for operation; only the
summation order of reductions differs (torch's own).

Layout. The true model is held row-padded (ELL): every row of the stacked ``(n_stages S A, S)``
transition matrix keeps its positive entries in column order, padded to the longest row ``W``
(``positive_entries``). The empirical model's successor counts are stored on the same support:
for each pair (s, a) the union over stages of its true successors (``U`` of them), so a product
P_hat V costs O(S A U) per seed and step, not O(S^2 A) (RiverSwim: U = 3). Every state tensor
has the seeds as its last dimension (``nsa`` (Hm, S A, B), ``Q`` (H, S A, B), ``V`` (H+1, S, B),
...): gathering model rows copies B contiguous values, and reductions over successors run over
an outer dimension (measured on the CPU: 2.5-3x faster than seeds first; on a GPU, neighbouring
threads read neighbouring seeds).

Randomness. The environment's uniforms come from one ``torch.Generator`` on the device, seeded
from the run's seeds (:func:`torch_seed`), one ``(B, 1 + 3H)`` draw per episode, so segment
lengths and checkpoints change nothing. Torch's generators are not numpy's PCG64: trajectories
differ from the Python loop's (which one seed sees also depends on the batch it runs in); the
two agree in distribution (``tests/test_whole_run_torch.py`` compares mean regret curves). With
``uniforms="numpy"`` the loop instead draws each episode's uniforms from the seeds' numpy
generators, exactly the Python loop's numbers (a host-to-device copy per episode, for tests):
then the curves equal the Python loop's to round-off (the sums over S and H and the products
with P and P_hat are torch's reductions, whose summation order is its own).

Deviation: on CUDA, ``scatter_add_`` of float rewards into a pair visited twice in one episode
uses atomics, so reward sums may differ in the last bit between runs (counts are exact).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from contextlib import contextmanager

import numpy as np

from theorylab.algorithms.online.segmented_loop import CURVES, MAX_SEGMENT_BYTES, positive_entries
from theorylab.algorithms.online.whole_run import loop_constants
from theorylab.algorithms.online.whole_run_kernel import (
    VARIANT_AJKS,
    VARIANT_BF,
    VARIANT_CH,
    VARIANT_GREEDY,
    VARIANT_QB,
    VARIANT_QH,
)

TORCH_STATE = ("nsa", "rsum", "nhs", "cnt", "Q", "V", "pol", "qstat")
DEFAULT_SEGMENT = 2_000
TORCH_VARIANTS = (VARIANT_CH, VARIANT_BF, VARIANT_AJKS, VARIANT_GREEDY, VARIANT_QH, VARIANT_QB)
"""The compiled loop's kernels that have a torch port (the others are refused)."""
"""Episodes per segment unless asked otherwise: the torch loop runs some 10^2-10^3 episodes per
second on a CPU (each a fixed sequence of small operations), so the compiled loop's 100,000 would
leave the progress bar still for minutes; a segment boundary costs one host copy."""


def torch_device(device: str = "cpu"):
    """The ``torch.device`` for ``device`` ("cpu", "cuda", "cuda:n", "gpu"); raises
    ``BackendUnavailableError`` when torch is missing or it names CUDA and torch sees none."""
    from theorylab.backends import BackendUnavailableError, get_backend

    try:
        return get_backend("torch", device).tdevice
    except BackendUnavailableError as e:
        raise BackendUnavailableError(
            f"the torch whole-run loop cannot run on device {device!r}: {e}; run it with "
            "device='cpu' (--device cpu) or use loop='compiled'"
        ) from e


def torch_seed(seed: int, seeds: Sequence[int]) -> int:
    """The torch generator's seed for root seed ``seed`` and the seed indices ``seeds``: a
    CRC32 of both, so a different seed list gives a different stream (63-bit)."""
    text = json.dumps([int(seed), [int(i) for i in seeds]])
    return (int(seed) * 0x9E3779B1 + zlib.crc32(text.encode())) % (2**63)


def ell_model(model) -> dict[str, np.ndarray]:
    """The true model's positive entries, row-padded to the longest row W (module docstring).

    Returns ``idx`` (rows, W) int64 columns (padding: 0), ``data`` (rows, W) probabilities
    (padding: 0.0), ``cum`` (rows, W) within-row cumulative sums (padding: +inf, so no uniform
    lands there), ``last`` (rows,) the position of the row's last positive entry, and the
    empirical model's support: ``supp`` (S A, U) the union over stages of each pair's
    successors in ascending order (padding: 0), ``upos`` (rows, W) the position of each entry
    within its pair's support (padding: 0)."""
    indptr, indices, data, cum, last = positive_entries(model)
    rows = indptr.size - 1
    width = np.diff(indptr)
    W = max(1, int(width.max()))
    pos = np.arange(indices.size) - np.repeat(indptr[:-1], width)
    row_of = np.repeat(np.arange(rows), width)
    idx = np.zeros((rows, W), np.int64)
    dat = np.zeros((rows, W))
    cm = np.full((rows, W), np.inf)
    idx[row_of, pos] = indices
    dat[row_of, pos] = data
    cm[row_of, pos] = cum
    S, A = model.S, model.A
    pair = row_of % (S * A)
    # the support: distinct (pair, column) keys, sorted, so each pair's columns ascend
    key = pair * S + indices
    keys = np.unique(key)
    key_pair, key_col = keys // S, keys % S
    n_succ = np.bincount(key_pair, minlength=S * A)
    first = np.zeros(S * A + 1, np.int64)
    np.cumsum(n_succ, out=first[1:])
    U = max(1, int(n_succ.max()))
    supp = np.zeros((S * A, U), np.int64)
    supp[key_pair, np.arange(keys.size) - first[key_pair]] = key_col
    upos = np.zeros((rows, W), np.int64)
    upos[row_of, pos] = np.searchsorted(keys, key) - first[pair]
    return {
        "idx": idx, "data": dat, "cum": cm, "last": last - indptr[:-1], "supp": supp,
        "upos": upos,
    }  # fmt: skip


class TorchLoop:
    """The learner state of B seeds of one agent on one MDP as torch tensors on ``device``,
    advanced a segment at a time (the interface :func:`whole_run.run_whole` drives).

    agent: a freshly constructed agent with a whole-run loop (``whole_run.compiled_variant``);
    only its constants are read. mdp: the true finite-horizon TabularMDP. v_star: V*_1(mu0).
    env_rngs: the seeds' numpy generators (read only with ``uniforms="numpy"``, and kept in
    checkpoints then). device: "cpu" or "cuda[:n]". generator_seed: the torch generator's seed
    (:func:`torch_seed`). uniforms: "torch" (the device generator) or "numpy" (the Python
    loop's streams, copied to the device each episode; for tests).
    """

    def __init__(
        self,
        agent,
        mdp,
        v_star: float,
        env_rngs: Sequence[np.random.Generator],
        *,
        device: str = "cpu",
        generator_seed: int = 0,
        uniforms: str = "torch",
    ) -> None:
        import torch

        from theorylab.backends import transition_model

        if uniforms not in ("torch", "numpy"):
            raise ValueError(f"uniforms must be 'torch' or 'numpy', got {uniforms!r}")
        c = loop_constants(agent, mdp)
        if c.variant not in TORCH_VARIANTS:  # the compiled loop's other kernels have no port
            raise ValueError(f"{type(agent).__name__} has no torch whole-run loop")
        B = agent.n_seeds
        if len(env_rngs) != B:
            raise ValueError(f"got {len(env_rngs)} environment generators for {B} seeds")
        self.torch = torch
        self.dev = dev = torch_device(device)
        self.c = c
        self.B, self.S, self.A, self.H = B, c.S, c.A, c.H
        self.v_star = float(v_star)
        self.env_rngs = list(env_rngs)
        self.uniforms = uniforms
        self.gen = torch.Generator(device=dev)
        self.gen.manual_seed(int(generator_seed))
        S, A, H, Hm = c.S, c.A, c.H, c.Hm
        model = transition_model(mdp)
        ell = ell_model(model)
        U = ell["supp"].shape[1]
        if not c.q_learning:
            need = 8 * B * Hm * S * A * U * 2  # counts and P_hat
            if need > 4 * 2**30:
                raise MemoryError(
                    f"the torch loop's counts (B, Hm, S A, U) = {(B, Hm, S * A, U)} need "
                    f"{need / 2**30:.1f} GiB; run fewer seeds at a time"
                )

        def t(x, dtype=torch.float64):
            return torch.tensor(np.asarray(x), dtype=dtype, device=dev)

        i64 = torch.int64
        self.m = {name: t(ell[name], i64) for name in ("idx", "last", "supp", "upos")}
        self.m.update({name: t(ell[name]) for name in ("data", "cum")})
        _, _, mu0_cdf, last_mu0 = model.sampler()
        self.n_stages = int(model.n_stages)
        self.R = t(np.asarray(model.R, dtype=np.float64).reshape(-1, S * A))  # (n_R, S A)
        self.bernoulli = bool(model.bernoulli)
        self.mu0 = t(model.mu0)
        self.mu0_cdf = t(mu0_cdf)
        self.last_mu0 = int(last_mu0)
        self.r_known = t(c.r_known.reshape(-1, S * A))  # (n_R, S A)
        self.U = U
        self.work = B * S * A * max(U, ell["idx"].shape[1])  # elements of the largest tensor
        self.episodes_done = 0
        f64 = torch.float64
        # seeds last: a gather of model rows then copies contiguous runs of B values, and the
        # reductions over successors run over an outer dimension (both vectorise over seeds);
        # on a GPU, neighbouring threads read neighbouring seeds
        self.state = {
            "nsa": torch.zeros((Hm, S * A, B), dtype=f64, device=dev),
            "rsum": torch.zeros((Hm, S * A, B), dtype=f64, device=dev),
            "nhs": torch.zeros((H + 1, S, B), dtype=f64, device=dev),
            "cnt": torch.zeros((Hm, S * A, 1 if c.q_learning else U, B), dtype=f64, device=dev),
            "Q": torch.full((H, S * A, B), c.Hf, dtype=f64, device=dev),
            "V": torch.zeros((H + 1, S, B), dtype=f64, device=dev),
            "pol": torch.zeros((H, S, B), dtype=i64, device=dev),
            # Q-learning (Bernstein): running sums mu, sigma of V_{h+1}(x') and beta per (h,s,a)
            "qstat": torch.zeros((3, H * S * A if c.q_learning else 1, B), dtype=f64, device=dev),
        }
        self.ones_H = torch.ones((H, B), dtype=f64, device=dev)
        self.ones_H1 = torch.ones((H + 1, B), dtype=f64, device=dev)
        self.hS = (torch.arange(H + 1, device=dev) * S).unsqueeze(1)  # (H + 1, 1): h S
        self.ar_A = torch.arange(A, device=dev).unsqueeze(1)  # (A, 1)
        self._tables()
        if c.q_learning:  # Q_h = H, V_h = H, V_{H+1} = 0, greedy action 0
            self.state["V"][:H] = c.Hf
        else:
            self._plan()

    # ------------------------------------------------------------------ the episode
    def _tables(self) -> None:
        """Per-step views of the model (no copies): the true model's stage rows and rewards at
        step h, the known rewards at h, the flattened support, constants."""
        torch = self.torch
        S, A, H, SA = self.S, self.A, self.H, self.S * self.A
        m = self.m
        self.step = []  # per step h: (idx, data, cum, last, upos, R) with rows s A + a
        for h in range(H):
            lo = min(h, self.n_stages - 1) * SA
            rows = slice(lo, lo + SA)
            self.step.append(
                (
                    m["idx"][rows], m["data"][rows].unsqueeze(-1), m["cum"][rows],
                    m["last"][rows], m["upos"][rows],
                    self.R[min(h, self.R.shape[0] - 1)].unsqueeze(-1),
                )
            )  # fmt: skip
        self.r_known_h = [
            self.r_known[min(h, self.r_known.shape[0] - 1)].unsqueeze(-1) for h in range(H)
        ]  # (S A, 1) each
        self.supp_flat = m["supp"].reshape(-1)
        self.sA = (torch.arange(S, device=self.dev) * A).unsqueeze(1)  # (S, 1): s A
        self.mu0_col = self.mu0.unsqueeze(1)  # (S, 1)
        self.vpi0 = torch.zeros((S, self.B), dtype=torch.float64, device=self.dev)

    def _plan(self) -> None:
        """Q, V and the greedy policy of every seed from its counts (``plan_seed``), written
        in place. Unvisited pairs get ``unvisited``; with a positive bonus scale UCBVI-CH and
        -AJKS reach it through their infinite bonus (min{H, inf} = H), without a select."""
        from theorylab.algorithms.online.whole_run_kernel import (
            TIE_FIRST,
            VARIANT_AJKS,
            VARIANT_BF,
            VARIANT_CH,
        )

        torch, c, st = self.torch, self.c, self.state
        B, S, A, H, U = self.B, self.S, self.A, self.H, self.U
        SA = S * A
        nsa, Q, V, pol = st["nsa"], st["Q"], st["V"], st["pol"]
        phat = st["cnt"] / nsa.clamp(min=1.0).unsqueeze(2)  # (Hm, S A, U, B); 0 unvisited
        Hf = c.Hf
        variant = c.variant
        r_hat = None if c.known else st["rsum"] / nsa.clamp(min=1.0)  # (Hm, S A, B)
        if variant == VARIANT_BF:  # g(y) = min{c / N'_{k,h}(y), H^2}, H^2 where N' = 0
            nhs = st["nhs"]
            g = torch.where(nhs > 0, (c.c_g / nhs.clamp(min=1.0)).clamp(max=Hf * Hf), Hf * Hf)
        if variant == VARIANT_CH:  # b(x, a) = 7 H L sqrt(1 / N(x, a)); inf where N = 0
            bon = c.bonus_scale * (c.c_bonus * torch.sqrt(1.0 / nsa[0]))
        by_bonus = c.bonus_scale > 0 and variant in (VARIANT_CH, VARIANT_AJKS)
        for h in range(H - 1, -1, -1):
            m = h if c.Hm > 1 else 0
            n = nsa[m]  # (S A, B)
            p = phat[m]  # (S A, U, B)
            Vn = V[h + 1]  # (S, B)
            r = self.r_known_h[h] if c.known else r_hat[m]
            if variant == VARIANT_BF:  # P_hat applied to [V, W, W^2, g], W = V - max V
                w = Vn - Vn.amax(dim=0, keepdim=True)
                F = torch.stack((Vn, w, w * w, g[h + 1]), dim=1)  # (S, 4, B)
                F = F.index_select(0, self.supp_flat).view(SA, U, 4, B)
                e = (p.unsqueeze(2) * F).sum(dim=1)  # (S A, 4, B)
                PV = e[:, 0]
                var = (e[:, 2] - e[:, 1] * e[:, 1]).clamp(min=0.0)
                bonus = (
                    torch.sqrt(c.c_bonus * var / n)
                    + (14.0 * Hf * c.L) / (3.0 * n)
                    + torch.sqrt(8.0 * e[:, 3] / n)
                )
            else:
                PV = (p * Vn.index_select(0, self.supp_flat).view(SA, U, B)).sum(dim=1)
            Qh = Q[h]  # (S A, B)
            if variant == VARIANT_CH:  # Q = min{Q_prev, H, (r + PV) + b}
                q = torch.minimum(Qh.clamp(max=Hf), (r + PV) + bon)
            elif variant == VARIANT_BF:
                q = torch.minimum(Qh.clamp(max=Hf), (r + PV) + c.bonus_scale * bonus)
            elif variant == VARIANT_AJKS:  # Q_h = min{(r_h + b_h) + P_hat_h V_{h+1}, H}
                b = c.c_bonus * torch.sqrt(c.L / n)
                q = ((r + c.bonus_scale * b) + PV).clamp(max=Hf)
            else:  # greedy: r + P_hat V
                q = r + PV
            if not by_bonus:
                q = torch.where(n > 0, q, c.unvisited)
            Qh.copy_(q)
            q = q.view(S, A, B)
            if c.tie == TIE_FIRST:
                torch.max(q, dim=1, out=(V[h], pol[h]))  # the first maximiser
            else:  # the least-visited maximiser (the first among them)
                best = q.amax(dim=1)
                V[h] = best
                fewest = torch.where(q == best.unsqueeze(1), n.view(S, A, B), torch.inf)
                torch.argmin(fewest, dim=1, out=pol[h])

    def _episode(self, k: int, out, u) -> None:
        """Episode ``k`` of the segment (curves into ``out`` (3, n, B)) from uniforms ``u``
        (1 + 3H, B)."""
        from theorylab.algorithms.online.whole_run_kernel import VARIANT_QH

        torch, c, st = self.torch, self.c, self.state
        B, A, H = self.B, self.A, self.H
        SA = self.S * A
        V, pol = st["V"], st["pol"]
        # (1) value estimate of the current plan
        torch.sum(V[0] * self.mu0_col, dim=0, out=out[2, k])
        # (2) exact value of the greedy policy on the true model: Q^pi_h(s, a) for every pair,
        #     then the policy's action
        vpi = self.vpi0
        for h in range(H - 1, -1, -1):
            idx, data, _, _, _, R = self.step[h]
            nxt = vpi.index_select(0, idx.view(-1)).view(SA, -1, B)  # (S A, W, B)
            q_pi = R + (data * nxt).sum(dim=1)  # (S A, B)
            vpi = q_pi.gather(0, self.sA + pol[h])  # (S, B)
        torch.sub(self.v_star, (vpi * self.mu0_col).sum(dim=0), out=out[0, k])
        # (3) rollout (Q-learning: its updates), keeping the steps for the count update (4)
        s = (self.mu0_cdf.unsqueeze(1) <= u[0]).sum(dim=0).clamp(max=self.last_mu0)  # (B,)
        states, pairs, rewards, succ = [s], [], [], []
        for t in range(H):
            idx, _, cum, last, upos, R = self.step[t]
            a = pol[t].gather(0, s.unsqueeze(0)).squeeze(0)  # (B,)
            sa = s * A + a
            mean = R.take(sa)
            rwd = (u[3 + 3 * t] < mean).to(torch.float64) if self.bernoulli else mean
            pos = (cum.index_select(0, sa) <= u[2 + 3 * t].unsqueeze(1)).sum(dim=1)
            pos = torch.minimum(pos, last.take(sa)).unsqueeze(1)  # (B, 1)
            y = idx.index_select(0, sa).gather(1, pos).squeeze(1)  # (B,)
            rewards.append(rwd)
            if c.q_learning:
                self._q_step(t, s, a, rwd, y, variant_qh=c.variant == VARIANT_QH)
            else:
                pairs.append(sa if c.Hm == 1 else sa + t * SA)
                succ.append(upos.index_select(0, sa).gather(1, pos).squeeze(1))
                states.append(y)
            s = y
        rewards = torch.stack(rewards)  # (H, B)
        torch.sum(rewards, dim=0, out=out[1, k])
        if c.q_learning:
            return
        # (4) counts: N(s, a), R_sum(s, a), N(s, a, y), N'_{k,h}(s) (x_{H+1} included)
        pairs = torch.stack(pairs)  # (H, B)
        st["nsa"].view(-1, B).scatter_add_(0, pairs, self.ones_H)
        st["rsum"].view(-1, B).scatter_add_(0, pairs, rewards)
        st["cnt"].view(-1, B).scatter_add_(0, pairs * self.U + torch.stack(succ), self.ones_H)
        visited = torch.stack(states) + self.hS  # (H + 1, B): h S + x_h
        st["nhs"].view(-1, B).scatter_add_(0, visited, self.ones_H1)
        # (5) the next plan
        self._plan()

    def _q_step(self, t, s, a, rwd, y, *, variant_qh: bool) -> None:
        """Optimistic Q-learning's update after step t = (s, a, rwd, y) of every seed (each
        (B,)), as ``whole_run_kernel.q_learning_step``."""
        torch, c, st = self.torch, self.c, self.state
        B, S, A = self.B, self.S, self.A
        Hf, qc = c.Hf, c.qc
        N = st["nsa"].view(-1, B)  # (H S A, B)
        Qf = st["Q"].view(-1, B)
        V, pol = st["V"], st["pol"]
        s, y, rwd = s.unsqueeze(0), y.unsqueeze(0), rwd.unsqueeze(0)  # (1, B)
        i = (s + t * S) * A + a  # (1, B)
        tt = N.gather(0, i) + 1.0  # t = N_h(x_h, a_h)
        N.scatter_(0, i, tt)
        alpha = (Hf + 1.0) / (Hf + tt)
        v_next = V[t + 1].gather(0, y)  # V_{h+1}(x_{h+1}) before its own update
        hoeffding = torch.sqrt(float(qc[4]) / tt)  # sqrt(H^3 iota / t)
        if variant_qh:
            bonus = float(qc[0]) * hoeffding
        else:
            mu, sigma, beta = st["qstat"][0], st["qstat"][1], st["qstat"][2]
            mu_i = mu.gather(0, i) + v_next
            sigma_i = sigma.gather(0, i) + v_next * v_next
            mu.scatter_(0, i, mu_i)
            sigma.scatter_(0, i, sigma_i)
            mean = mu_i / tt
            W = (sigma_i / tt - mean * mean).clamp(min=0.0)
            beta_prev = beta.gather(0, i)
            iota = float(qc[3])
            first = float(qc[1]) * (
                torch.sqrt(Hf / tt * (W + Hf) * iota) + float(qc[5]) * iota / tt
            )
            beta_i = torch.minimum(first, float(qc[2]) * hoeffding)
            beta.scatter_(0, i, beta_i)
            bonus = (beta_i - (1.0 - alpha) * beta_prev) / (2.0 * alpha)
        q_i = (1.0 - alpha) * Qf.gather(0, i) + alpha * ((rwd + v_next) + bonus)
        Qf.scatter_(0, i, q_i)
        row = Qf.gather(0, (s + t * S) * A + self.ar_A)  # (A, B): Q_t(x_t, .)
        best, act = row.max(dim=0, keepdim=True)
        V[t].scatter_(0, s, best.clamp(max=Hf))  # V_h(x) = min{H, max_a Q_h(x, a)}
        pol[t].scatter_(0, s, act)

    # ------------------------------------------------------------------ driver interface
    def segment_length(self, requested: int) -> int:
        """Episodes per segment: ``requested``, capped so that one segment's curves stay under
        ``MAX_SEGMENT_BYTES``."""
        per_episode = 8 * self.B * len(CURVES)
        return max(1, min(int(requested), MAX_SEGMENT_BYTES // per_episode))

    @contextmanager
    def _threads(self):
        """On the CPU, one torch thread while the largest tensor of an episode is smaller than
        the torch backend's ``PARALLEL_MIN_WORK`` (its docstring: OpenMP wake-ups cost more than
        small operations gain on a loaded machine)."""
        from theorylab.backends.torch_backend import PARALLEL_MIN_WORK

        torch = self.torch
        if self.dev.type != "cpu" or self.work >= PARALLEL_MIN_WORK:
            yield
            return
        saved = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(saved)

    def _uniforms(self):
        """One episode's uniforms, (1 + 3H, B)."""
        n = 1 + 3 * self.H
        if self.uniforms == "numpy":  # the Python loop's draws (a host copy per episode)
            U = np.stack([g.random(n) for g in self.env_rngs], axis=1)
            return self.torch.from_numpy(U).to(self.dev)
        return self.torch.rand(
            (n, self.B), generator=self.gen, dtype=self.torch.float64, device=self.dev
        )

    def advance(self, n: int) -> dict[str, np.ndarray]:
        """Run the next ``n`` episodes of every seed; returns ``regret``, ``returns`` and
        ``estimates`` as numpy arrays ``(B, n)`` (one device-to-host copy)."""
        torch = self.torch
        out = torch.empty((3, n, self.B), dtype=torch.float64, device=self.dev)
        with torch.inference_mode(), self._threads():
            for k in range(n):
                self._episode(k, out, self._uniforms())
        host = out.cpu().numpy()
        self.episodes_done += n
        return {name: np.ascontiguousarray(host[i].T) for i, name in enumerate(CURVES)}

    def snapshot(self) -> dict[str, np.ndarray]:
        """Arrays that restore this loop: the state tensors, episodes done, the torch
        generator's state and (JSON) the numpy generators' states."""
        return {
            **{name: self.state[name].cpu().numpy() for name in TORCH_STATE},
            "episodes_done": np.array(self.episodes_done),
            "torch_rng": self.gen.get_state().numpy(),
            "rng_states": np.array(json.dumps([g.bit_generator.state for g in self.env_rngs])),
        }

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        """Load a :meth:`snapshot` of the same shapes."""
        torch = self.torch
        for name in TORCH_STATE:
            if name not in arrays or tuple(arrays[name].shape) != tuple(self.state[name].shape):
                got = arrays[name].shape if name in arrays else "nothing"
                raise ValueError(
                    f"checkpoint array {name!r}: found {got}, this torch loop needs "
                    f"{tuple(self.state[name].shape)}"
                )
            self.state[name].copy_(torch.from_numpy(np.asarray(arrays[name])))
        self.episodes_done = int(arrays["episodes_done"])
        self.gen.set_state(torch.from_numpy(np.asarray(arrays["torch_rng"], dtype=np.uint8)))
        for g, state in zip(self.env_rngs, json.loads(str(arrays["rng_states"])), strict=True):
            g.bit_generator.state = state
