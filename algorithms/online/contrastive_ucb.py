r"""Contrastive UCB: low-rank features from a contrastive loss, then LSVI-UCB on them.

Seed reference: ``seed-catalogue-000.md#12``. Paper: Shuang Qiu, Lingxiao Wang, Chenjia Bai,
Zhuoran Yang, Zhaoran Wang, "Contrastive UCB: Provably Efficient Contrastive Self-Supervised
Learning in Online Reinforcement Learning", ICML 2022, arXiv:2207.14800. Read: the abstract and
third-party summaries [V] (the method: "extract the correct feature representations of the
low-rank model by minimizing a contrastive loss", a UCB bonus on the learned features, a
sample complexity O~(1/eps^2) for an eps-optimal policy, the zero-sum Markov-game extension);
the body (Algorithm 1, the exact loss and constants) was not readable here, so the loss below and
the planning step are reconstructed [A] from the abstract, the catalogue row and the standard
noise-contrastive construction.

Contrastive loss [A]. For a step h, positives are observed transitions (s, a, s') and each
positive is paired with ``n_negatives`` negatives (s, a, s~) with s~ drawn from a fixed *negative
law* P^-, here uniform over the S states. A score f(s, a, s') > 0 classifies positive against
negative with P(positive) = f / (1 + f); the logistic loss over counts C+ (positives) and C-
(negatives)::

    L(f) = sum_{s,a,s'} C+(s,a,s') log(1 + 1/f(s,a,s')) + C-(s,a,s') log(1 + f(s,a,s'))

is minimised pointwise by f = C+ / C-, whose population value is

    f*(s, a, s') = n_+(s,a) P(s'|s,a) / (n_-(s,a) P^-(s')) = P(s'|s,a) / (n_negatives P^-(s')).

On a low-rank MDP P(s'|s,a) = phi*(s,a)^T mu*(s') this is rank d: f* = phi*(s,a)^T psi*(s') with
psi*(s') = mu*(s') / (n_negatives P^-(s')). The learner fits f = phi^T psi with phi(s, a) =
softmax(U[s, a]) on the simplex (the class of ``theorylab.mdps.lowrank``) and psi(s') =
exp(W[s']) >= 0, so f > 0 and f* is realisable; the column space of the learned (SA, d) map
phi_hat then converges to that of phi* (when mu* has rank d). Minimised by Adam over (U, W),
batched over seeds and steps, warm-started every episode (``fit_iters`` steps per episode, an
approximate oracle like Rep-UCB's EM budget).

Planning: LSVI-UCB (Jin et al. 2020) on phi_hat, per step, from the counts [A]::

    Lambda_h = sum_{s,a} N_h(s,a) phi_hat_h phi_hat_h^T + lambda I
    w_h      = Lambda_h^{-1} sum_{s,a} phi_hat_h(s,a) sum_{s'} C_h(s,a,s') V_{h+1}(s')
    Q_h      = min{ r_h + phi_hat_h^T w_h + beta ||phi_hat_h||_{Lambda_h^{-1}}, H }

with beta = c d H sqrt(iota), iota = log(2 d K H / delta) (LSVI-UCB's width, ``jin_beta``; the
paper's beta is an order only in what was read [M]). Known rewards are used as given (the paper's
setting); unknown rewards are regressed with the values (r + V as LSVI-UCB's target).

Deviations, each deliberate: the loss is the pointwise noise-contrastive one above (the paper's
exact form and its normalisation were not read); one (phi_h, psi_h) per step h (the paper's
stage-dependent model); data are the on-policy transitions (no extra uniform-action roll-outs);
lambda = ``lam`` fixed.

Not implemented: the zero-sum Markov-game version (upper and lower confidence bounds and a
per-state matrix game / CCE step): left, see docs/algorithms/contrastive-ucb.md.

Memory: counts ``(B, H, SA, S)`` (positives and negatives), O(H S^2 A) per seed.
"""

from __future__ import annotations

import math

import numpy as np

from theorylab.agent import EnvSpec, read_only_copy
from theorylab.algorithms.linear.gram import elliptical_norm_sq
from theorylab.algorithms.online.lsvi_ucb import jin_beta
from theorylab.algorithms.registry import register

ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8
F_FLOOR = 1e-12


def features_of(U: np.ndarray) -> np.ndarray:
    """phi = softmax(U) along the last axis: ``(..., SA, d)`` rows on the simplex."""
    z = np.exp(U - U.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def contrastive_loss(
    U: np.ndarray, W: np.ndarray, pos: np.ndarray, neg: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The contrastive loss per positive and its gradients; batched over leading axes.

    U: ``(..., SA, d)`` feature logits; W: ``(..., S, d)`` log psi; pos, neg: ``(..., SA, S)``
    counts of positive and negative triples. Returns ``(loss (...), dL/dU, dL/dW)`` with the
    loss divided by the number of positives (at least 1).
    """
    phi = features_of(U)  # (..., SA, d)
    psi = np.exp(W)  # (..., S, d)
    f = np.maximum(np.matmul(phi, np.swapaxes(psi, -1, -2)), F_FLOOR)  # (..., SA, S)
    n = np.maximum(pos.sum(axis=(-1, -2)), 1.0)[..., None, None]  # (..., 1, 1)
    loss = (pos * np.log1p(1.0 / f) + neg * np.log1p(f)).sum(axis=(-1, -2)) / n[..., 0, 0]
    g_f = (neg * f - pos) / (f * (1.0 + f)) / n  # dL/df: (..., SA, S)
    g_phi = np.matmul(g_f, psi)  # (..., SA, d)
    g_U = phi * (g_phi - (phi * g_phi).sum(axis=-1, keepdims=True))  # softmax Jacobian
    g_W = psi * np.matmul(np.swapaxes(g_f, -1, -2), phi)  # (..., S, d)
    return loss, g_U, g_W


class ContrastiveFit:
    """Adam on the contrastive loss over (U, W), batched over leading axes, warm-startable."""

    def __init__(self, shape: tuple[int, ...], SA: int, S: int, d: int, rng, lr: float) -> None:
        self.U = 0.1 * rng.standard_normal((*shape, SA, d))  # (..., SA, d)
        self.W = 0.1 * rng.standard_normal((*shape, S, d))  # (..., S, d)
        self.lr = float(lr)
        self.m = [np.zeros_like(self.U), np.zeros_like(self.W)]
        self.v = [np.zeros_like(self.U), np.zeros_like(self.W)]
        self.t = 0
        self.loss = np.full(shape, np.nan)

    def steps(self, pos: np.ndarray, neg: np.ndarray, n_iter: int) -> np.ndarray:
        """``n_iter`` Adam steps on the counts ``(..., SA, S)``; returns the loss before the
        last step ``(...)``."""
        b1, b2 = ADAM_BETAS
        for _ in range(n_iter):
            self.loss, gU, gW = contrastive_loss(self.U, self.W, pos, neg)
            self.t += 1
            for i, (x, g) in enumerate(((self.U, gU), (self.W, gW))):
                self.m[i] = b1 * self.m[i] + (1 - b1) * g
                self.v[i] = b2 * self.v[i] + (1 - b2) * g * g
                mh = self.m[i] / (1 - b1**self.t)
                vh = self.v[i] / (1 - b2**self.t)
                x -= self.lr * mh / (np.sqrt(vh) + ADAM_EPS)
        return self.loss

    @property
    def phi(self) -> np.ndarray:
        """The learned features ``(..., SA, d)``."""
        return features_of(self.U)

    @property
    def psi(self) -> np.ndarray:
        """The learned next-state factor ``(..., S, d)``."""
        return np.exp(self.W)


def sample_negatives(
    new: np.ndarray, counts: np.ndarray, n_negatives: int, rng: np.random.Generator
) -> np.ndarray:
    """Negative counts for the positives ``new (..., SA, S)``: each positive at (s, a) gets
    ``n_negatives`` next states drawn from the negative law P^- = uniform over S.

    ``counts`` (all positives so far, same shape) is not read by the uniform law; it is the
    argument through which a different law (e.g. the mutation that draws negatives from the
    positive distribution itself) sees the data. Returns ``(..., SA, S)`` counts.
    """
    S = new.shape[-1]
    n = new.sum(axis=-1).astype(np.int64) * n_negatives  # (..., SA)
    return rng.multinomial(n, np.full(S, 1.0 / S)).astype(np.float64)


@register(
    "contrastive-ucb",
    kind="online",
    problem="lowrank",
    papers=("000#12", "001#29"),
    summary="Contrastive UCB (Qiu et al. 2022): contrastive low-rank features + LSVI-UCB bonus",
)
class ContrastiveUCB:
    """Contrastive UCB (Qiu et al. 2022), episodic: contrastive fit of phi, LSVI-UCB on it."""

    name = "contrastive-ucb"

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs,
        *,
        episodes: int,
        rank: int | None = None,
        c: float = 0.1,
        delta: float = 0.1,
        lam: float = 1.0,
        n_negatives: int = 1,
        fit_iters: int = 5,
        lr: float = 0.05,
    ) -> None:
        if isinstance(episodes, bool) or int(episodes) != episodes or episodes < 1:
            raise ValueError(
                f"contrastive-ucb: episodes must be a positive integer, got {episodes!r}"
            )
        if rank is None or isinstance(rank, bool) or int(rank) != rank or rank < 1:
            raise ValueError(
                f"contrastive-ucb: rank must be a positive integer (the feature dimension d to "
                f"learn, e.g. rank=3), got {rank!r}"
            )
        if not (c >= 0 and math.isfinite(c)):
            raise ValueError(f"contrastive-ucb: c must be finite and >= 0, got {c!r}")
        if not 0.0 < delta < 1.0:
            raise ValueError(f"contrastive-ucb: delta must lie in (0, 1), got {delta!r}")
        if not (lam > 0 and math.isfinite(lam)):
            raise ValueError(f"contrastive-ucb: lam must be > 0, got {lam!r}")
        for key, val in (("n_negatives", n_negatives), ("fit_iters", fit_iters)):
            if isinstance(val, bool) or int(val) != val or val < 1:
                raise ValueError(f"contrastive-ucb: {key} must be a positive integer, got {val!r}")
        if not (lr > 0 and math.isfinite(lr)):
            raise ValueError(f"contrastive-ucb: lr must be > 0, got {lr!r}")
        if len(rngs) != n_seeds:
            raise ValueError(f"contrastive-ucb: got {len(rngs)} generators for n_seeds={n_seeds}")
        self.env, self.rngs = env, rngs
        self.n_seeds = B = int(n_seeds)
        self.S, self.A, self.H = S, A, H = env.S, env.A, env.H
        self.episodes, self.d = int(episodes), int(rank)
        self.c, self.delta, self.lam = float(c), float(delta), float(lam)
        self.n_negatives, self.fit_iters = int(n_negatives), int(fit_iters)
        self.mu0 = np.asarray(env.mu0, dtype=np.float64)  # (S,)
        self.known_rewards = env.reward is not None
        if self.known_rewards:  # r_h: (H, SA)
            self.r = np.broadcast_to(np.asarray(env.reward, dtype=np.float64), (H, S, A)).reshape(
                H, S * A
            )
        init = np.random.default_rng([int(rngs[0].integers(2**31)), 12])
        self.fit = ContrastiveFit((B, H), S * A, S, self.d, init, lr)
        self.pos = np.zeros((B, H, S * A, S))  # C+_h(s, a, s'): (B, H, SA, S)
        self.neg = np.zeros((B, H, S * A, S))  # C-_h(s, a, s~): (B, H, SA, S)
        self.R_sum = np.zeros((B, H, S * A))  # (B, H, SA)
        self.k = 0
        self.plan()

    @property
    def beta(self) -> float:
        """beta = c d H sqrt(iota), iota = log(2 d K H / delta) (LSVI-UCB's width)."""
        return jin_beta(self.c, self.d, self.H, self.episodes, self.delta)

    def policy(self) -> np.ndarray:
        """``(B, H, S)`` int: greedy in the optimistic Q."""
        return read_only_copy(self._policy)

    def value_estimate(self) -> np.ndarray:
        """``(B,)``: V_1(mu0) of the optimistic Q."""
        return (self._V[:, 0] * self.mu0).sum(axis=-1)

    @property
    def features(self) -> np.ndarray:
        """The learned features ``(B, H, S*A, d)``."""
        return self.fit.phi

    def update(self, traj) -> None:
        B, H, A = self.n_seeds, self.H, self.A
        sa = traj.states * A + traj.actions  # (B, H)
        bi, hi = np.arange(B)[:, None], np.arange(H)[None, :]
        new = np.zeros_like(self.pos)  # (B, H, SA, S)
        new[bi, hi, sa, traj.next_states] = 1.0
        self.pos += new
        for b in range(B):
            self.neg[b] += sample_negatives(new[b], self.pos[b], self.n_negatives, self.rngs[b])
        self.R_sum[bi, hi, sa] += traj.rewards
        self.k += 1
        self.fit.steps(self.pos, self.neg, self.fit_iters)
        self.plan()

    def plan(self) -> None:
        """LSVI-UCB backward induction on the learned features (module docstring)."""
        B, H, S, A, d = self.n_seeds, self.H, self.S, self.A, self.d
        Hf = float(H)
        phi = self.fit.phi  # (B, H, SA, d)
        N = self.pos.sum(axis=-1)  # (B, H, SA)
        Lam = np.matmul(np.swapaxes(N[..., None] * phi, -1, -2), phi) + self.lam * np.eye(d)
        Lam_inv = np.linalg.inv(Lam)  # (B, H, d, d)
        bonus = np.minimum(self.beta * np.sqrt(elliptical_norm_sq(Lam_inv, phi)), Hf)  # (B,H,SA)
        V = np.zeros((B, H + 1, S))  # (B, H+1, S)
        Q = np.zeros((B, H, S, A))  # (B, H, S, A)
        for h in range(H - 1, -1, -1):
            target = np.matmul(self.pos[:, h], V[:, h + 1, :, None])[..., 0]  # (B, SA)
            if self.known_rewards:
                r = self.r[h]  # (SA,)
            else:
                r = 0.0
                target = target + self.R_sum[:, h]
            b = np.matmul(target[:, None, :], phi[:, h])[:, 0]  # (B, d)
            w = np.matmul(Lam_inv[:, h], b[..., None])[..., 0]  # (B, d)
            fitted = np.matmul(phi[:, h], w[..., None])[..., 0]  # (B, SA)
            Q[:, h] = np.minimum(r + fitted + bonus[:, h], Hf).reshape(B, S, A)
            V[:, h] = Q[:, h].max(axis=-1)
        self._Q, self._V = Q, V
        self._policy = Q.argmax(axis=-1)  # (B, H, S)
