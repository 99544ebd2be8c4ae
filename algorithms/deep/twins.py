"""Tabular twins: a logit-table policy on a token-tree task trained with one registered loss.

The policy is ``theta[x, node, a]`` (P, N, V), pi(a | x, node) = softmax(theta[x, node]). A twin
trains it by gradient descent on

* ``mode="exact"``: the loss's exact expected value (a weighted sum over every pair or group, or
  its closed-form expected update -- see :mod:`theorylab.algorithms.deep.fixed_points` -- where
  groups are too many to enumerate; tests/test_deep_twins.py checks the two agree to 1e-12 on
  trees small enough to enumerate), or
* ``mode="sampled"``: the registered loss on sampled batches (pairs from ref x ref with
  Bradley-Terry labels, or G responses per prompt from the current policy with sampled rewards).

After every ``record_every`` steps it records exact metrics of the current policy: its TV and KL
to the twin's *predicted* fixed point, its KL to pi*_beta, expected reward, accuracy and pass@k.
Twins (``TWINS``): dpo, ipo, chipo, rloo (KL in the reward), grpo (std advantage, k3 in the
loss, 0/1 rewards), dr-grpo (group mean, k3), dr-grpo-k2 (group mean, k2), cvar-grpo.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from theorylab.algorithms.deep.fixed_points import (
    chipo_optimum,
    grpo_fixed_point,
    grpo_kappa,
    ipo_optimum,
    node_recursion,
)
from theorylab.algorithms.deep.group_enumeration import enumerate_multisets, group_probabilities
from theorylab.algorithms.deep.registry import make_loss
from theorylab.kernels.sampling import draws_per_row
from theorylab.mdps.token_tree import TokenTreeTask

D = torch.float64
TWINS = ("dpo", "ipo", "chipo", "rloo", "grpo", "dr-grpo", "dr-grpo-k2", "cvar-grpo")
MODES = ("exact", "sampled")
PAIR_TWINS = ("dpo", "ipo", "chipo")


@dataclass
class TwinTrace:
    """Exact metrics of a twin's policy along training (arrays of length n_records)."""

    twin: str
    task: str
    params: dict
    steps: np.ndarray
    tv_predicted: np.ndarray  # mean over prompts of TV(pi_t, predicted)
    kl_predicted: np.ndarray  # mean over prompts of KL(pi_t || predicted)
    kl_optimum: np.ndarray  # mean over prompts of KL(pi_t || pi*_beta)
    expected_reward: np.ndarray
    accuracy: np.ndarray
    pass_at_k: np.ndarray
    final_seq_logp: np.ndarray  # (P, Y)
    predicted_seq_logp: np.ndarray  # (P, Y)
    optimum_seq_logp: np.ndarray  # (P, Y) pi*_beta
    wall_seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    def arrays(self) -> dict[str, np.ndarray]:
        names = ("steps", "tv_predicted", "kl_predicted", "kl_optimum", "expected_reward")
        out = {k: getattr(self, k) for k in names}
        out.update(
            accuracy=self.accuracy,
            pass_at_k=self.pass_at_k,
            final_seq_logp=self.final_seq_logp,
            predicted_seq_logp=self.predicted_seq_logp,
            optimum_seq_logp=self.optimum_seq_logp,
        )
        return out


# --------------------------------------------------------------------------- the policy
class LogitTable:
    """Softmax logit table (P, N, V) over a task's prefix tree, as a torch parameter (the task: a
    :class:`TokenTreeTask` or an :class:`~theorylab.mdps.eos_tree.EosTokenTree`, whose responses
    have variable lengths: ``mask`` (Y, L) marks their tokens)."""

    def __init__(self, task: TokenTreeTask, theta: np.ndarray | None = None) -> None:
        self.task = task
        init = np.zeros((task.n_prompts, task.n_nodes, task.V)) if theta is None else theta
        self.theta = torch.tensor(init, dtype=D, requires_grad=True)
        self.nodes = torch.as_tensor(task.token_nodes)  # (Y, L)
        self.tokens = torch.as_tensor(task.tokens)  # (Y, L)
        self.mask = torch.as_tensor(task.token_mask, dtype=D)  # (Y, L)

    def cond_logp(self) -> torch.Tensor:
        return torch.log_softmax(self.theta, dim=-1)

    def token_logp(self, cond: torch.Tensor, prompts: torch.Tensor, responses: torch.Tensor):
        """(B, L) per-token log-probabilities of responses (B,) to prompts (B,) (padding
        positions hold a real log-probability: mask them with ``self.mask[responses]``)."""
        return cond[prompts[:, None], self.nodes[responses], self.tokens[responses]]

    def seq_logp(self, cond: torch.Tensor) -> torch.Tensor:
        """(P, Y) sequence log-probabilities."""
        return (cond[:, self.nodes, self.tokens] * self.mask).sum(-1)

    def visits(self, cond: torch.Tensor) -> torch.Tensor:
        """(P, N) probability of reaching each node (the prefix's marginal), no gradient."""
        task = self.task
        P, V = task.n_prompts, task.V
        with torch.no_grad():
            pi = cond.exp()
            d = torch.empty(P, task.n_nodes, dtype=D)
            level = torch.ones(P, 1, dtype=D)
            for t in range(task.L):
                lo, hi = task.level_offset(t), task.level_offset(t + 1)
                d[:, lo:hi] = level
                level = (level[..., None] * pi[:, lo:hi, :]).reshape(P, V ** (t + 1))
            return d

    def numpy_seq_logp(self) -> np.ndarray:
        with torch.no_grad():
            return self.seq_logp(self.cond_logp()).numpy().copy()


# --------------------------------------------------------------------------- predictions
def predicted_point(task: TokenTreeTask, twin: str, beta: float, G: int, alpha: float):
    """The twin's predicted fixed point as (P, Y) sequence log-probabilities."""
    if twin in ("dpo", "rloo"):
        return task.soft_optimum(beta).seq_logp
    if twin == "ipo":
        return ipo_optimum(task, beta)
    if twin == "chipo":
        return chipo_optimum(task, beta)
    kappa = np.full(task.n_prompts, (G - 1) / G)
    if twin == "dr-grpo":
        return task.sequence_logprobs(node_recursion(task, kappa, beta, "k3"))
    if twin == "dr-grpo-k2":
        return task.sequence_logprobs(node_recursion(task, kappa, beta, "k2"))
    if twin == "grpo":
        return task.sequence_logprobs(grpo_fixed_point(task, beta, G))
    if twin == "cvar-grpo":
        _, optimal = task.cvar_optimum(alpha)
        w = optimal / optimal.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore"):
            return np.log(w)
    raise ValueError(f"unknown twin {twin!r}; expected one of {TWINS}")


def pair_loss(twin: str, beta: float):
    """The registered loss of a pair twin as f(chosen, rejected, ref_chosen, ref_rejected, w)."""
    if twin == "dpo":
        return make_loss("dpo", beta=beta)
    if twin == "ipo":
        return make_loss("ipo", tau=beta)
    if twin == "chipo":  # R = 1 covers the margins of rewards in [0, 1]: the clip stays inactive
        return make_loss("chipo", beta=beta, clip_r=1.0)
    raise ValueError(f"{twin!r} is not a pair twin")


def group_loss(twin: str, beta: float, alpha: float):
    """The registered loss of a group twin as f(logp, ref_logp, mask, rewards, group, weights)."""
    if twin == "rloo":
        return make_loss("rloo", beta=beta)
    if twin == "cvar-grpo":
        loss = make_loss("cvar-grpo", alpha=alpha)
    elif twin in ("grpo", "dr-grpo", "dr-grpo-k2"):
        name = "grpo" if twin == "grpo" else "dr-grpo"
        loss = make_loss(name, beta=beta, kl="k2" if twin == "dr-grpo-k2" else "k3")
    else:
        raise ValueError(f"{twin!r} is not a group twin")

    def f(logp, ref_logp, mask, rewards, group, weights=None):
        return loss(logp, None, ref_logp, mask, rewards, group, weights)

    return f


# --------------------------------------------------------------------------- exact objectives
def _pairs(task: TokenTreeTask):
    """Every ordered pair (x, y_w, y_l) with its probability when (a, b) ~ ref x ref is labelled
    by Bradley-Terry, P(a > b) = sigmoid(r(a) - r(b))."""
    P, Y = task.n_prompts, task.n_responses
    x, yw, yl = np.meshgrid(np.arange(P), np.arange(Y), np.arange(Y), indexing="ij")
    x, yw, yl = x.reshape(-1), yw.reshape(-1), yl.reshape(-1)
    ref = np.exp(task.ref_logprobs)
    r = task.mean_reward
    # an unordered draw {a, b} ~ ref x ref lands on the ordered (y_w, y_l) from (a, b) = (y_w, y_l)
    # or (y_l, y_w): probability 2 ref(y_w) ref(y_l) sigma(r_w - r_l); the weights sum to 1
    w = 2.0 * ref[x, yw] * ref[x, yl] / (1.0 + np.exp(-(r[x, yw] - r[x, yl]))) / P
    return torch.as_tensor(x), torch.as_tensor(yw), torch.as_tensor(yl), torch.as_tensor(w)


class ExactObjective:
    """The expected loss of a twin (a torch scalar whose gradient is the exact expected update)."""

    def __init__(self, task, twin, beta, G, alpha, policy: LogitTable, enumerate: bool = False):
        self.task, self.twin, self.beta, self.G, self.alpha = task, twin, beta, G, alpha
        self.enumerate = enumerate or twin == "cvar-grpo"
        self.policy = policy
        self.ref_seq = torch.as_tensor(task.ref_logprobs)
        self.ref_cond = torch.as_tensor(np.log(task.ref_cond))
        self.r = torch.as_tensor(task.mean_reward)
        if twin in PAIR_TWINS:
            self.pairs = _pairs(task)
        if (
            twin == "grpo"
            and not self.enumerate
            and not np.isin(task.mean_reward, (0.0, 1.0)).all()
        ):
            raise ValueError("the grpo twin's closed form needs 0/1 rewards (reward=binary)")
        if self.enumerate and twin not in PAIR_TWINS:  # pairs are always enumerated
            self._setup_groups()

    def _setup_groups(self):
        task = self.task
        P, Y, K = task.reward_values.shape
        atoms = [
            (y, k) for y in range(Y) for k in range(K) if (task.reward_probs[:, y, k] > 0).any()
        ]
        self.atom_y = torch.as_tensor([a[0] for a in atoms])
        self.atom_k = torch.as_tensor([a[1] for a in atoms])
        tuples, counts = enumerate_multisets(len(atoms), self.G)
        self.tuples = torch.as_tensor(tuples)  # (M, G) sorted
        self.counts = torch.as_tensor(counts)  # (M,) orderings of each multiset
        self.loss = group_loss(self.twin, self.beta, self.alpha)

    def __call__(self) -> torch.Tensor:
        pol, task = self.policy, self.task
        cond = pol.cond_logp()
        if self.twin in PAIR_TWINS:
            x, yw, yl, w = self.pairs
            seq = pol.seq_logp(cond)
            args = (seq[x, yw], seq[x, yl], self.ref_seq[x, yw], self.ref_seq[x, yl], w)
            return pair_loss(self.twin, self.beta)(*args)
        if self.enumerate:
            return self._enumerated_groups(cond)
        seq = pol.seq_logp(cond)
        pi = seq.exp()
        J = (pi * self.r).sum(1)  # (P,)
        if self.twin == "rloo":
            kl = (pi * (seq - self.ref_seq)).sum(1)
            return -(J - self.beta * kl).mean()
        d = pol.visits(cond)  # (P, N)
        pc = cond.exp()
        if self.twin == "dr-grpo-k2":
            node_kl = (pc * (cond - self.ref_cond)).sum(-1)  # KL(pi_h || ref_h)
        else:
            node_kl = (self.ref_cond.exp() * (self.ref_cond - cond)).sum(-1)  # KL(ref_h || pi_h)
        if self.twin == "grpo":
            with torch.no_grad():
                acc = (pi * torch.as_tensor(task.correct, dtype=D)).sum(1).numpy()
            kappa = torch.as_tensor(grpo_kappa(acc, self.G))
        else:
            kappa = torch.full((task.n_prompts,), (self.G - 1) / self.G, dtype=D)
        per_prompt = -kappa * J + self.beta * (d * node_kl).sum(1)
        return per_prompt.mean() / task.L

    def _enumerated_groups(self, cond) -> torch.Tensor:
        """E over every group of G (response, reward atom) draws of the registered loss, averaged
        over prompts (groups enumerated as multisets with their multinomial counts)."""
        task, pol = self.task, self.policy
        M, G = self.tuples.shape
        total = 0.0
        seq = pol.seq_logp(cond)
        for x in range(task.n_prompts):
            with torch.no_grad():
                probs_atoms = seq[x, self.atom_y].exp() * torch.as_tensor(
                    task.reward_probs[x][self.atom_y.numpy(), self.atom_k.numpy()]
                )
            w_groups = self.counts * group_probabilities(self.tuples, probs_atoms)  # (M,)
            flat = self.tuples.reshape(-1)
            ys = self.atom_y[flat]
            rewards = torch.as_tensor(task.reward_values[x][ys.numpy(), self.atom_k[flat].numpy()])
            prompts = torch.full_like(ys, x)
            logp = pol.token_logp(cond, prompts, ys)
            ref_logp = pol.token_logp(self.ref_cond, prompts, ys)
            mask = pol.mask[ys]
            group = torch.arange(M).repeat_interleave(G)
            w = (w_groups[:, None] / G).expand(M, G).reshape(-1)  # P(group) / G per response
            total = total + self.loss(logp, ref_logp, mask, rewards, group, w)
        return total / task.n_prompts


# --------------------------------------------------------------------------- sampled batches
class SampledObjective:
    """The registered loss on a sampled batch (a fresh batch on every call)."""

    def __init__(self, task, twin, beta, G, alpha, policy: LogitTable, batch: int, seed: int):
        self.task, self.twin, self.beta, self.G = task, twin, beta, G
        self.policy, self.batch = policy, batch
        self.rng = np.random.default_rng(seed)
        self.ref_seq = task.ref_logprobs
        if twin in PAIR_TWINS:
            self.loss = pair_loss(twin, beta)
        else:
            self.loss = group_loss(twin, beta, alpha)

    def __call__(self) -> torch.Tensor:
        task, pol = self.task, self.policy
        P = task.n_prompts
        cond = pol.cond_logp()
        if self.twin in PAIR_TWINS:
            ref = np.exp(self.ref_seq)
            a = draws_per_row(self.rng, ref, self.batch)
            b = draws_per_row(self.rng, ref, self.batch)
            r = task.mean_reward
            x = np.repeat(np.arange(P), self.batch)
            a, b = a.reshape(-1), b.reshape(-1)
            p_ab = 1.0 / (1.0 + np.exp(-(r[x, a] - r[x, b])))
            a_wins = self.rng.random(a.shape[0]) < p_ab
            yw, yl = np.where(a_wins, a, b), np.where(a_wins, b, a)
            seq = pol.seq_logp(cond)
            xt, ywt, ylt = (torch.as_tensor(v) for v in (x, yw, yl))
            ref_t = torch.as_tensor(self.ref_seq)
            return self.loss(seq[xt, ywt], seq[xt, ylt], ref_t[xt, ywt], ref_t[xt, ylt])
        with torch.no_grad():
            probs = pol.seq_logp(cond).exp().numpy()
        groups_per_prompt = max(self.batch // self.G, 1)
        ys = draws_per_row(self.rng, probs, groups_per_prompt * self.G).reshape(-1)
        x = np.repeat(np.arange(P), groups_per_prompt * self.G)
        k = draws_per_row(self.rng, task.reward_probs[x, ys], 1)[:, 0]  # reward atom per sample
        rewards = torch.as_tensor(task.reward_values[x, ys, k])
        xt, yt = torch.as_tensor(x), torch.as_tensor(ys)
        logp = pol.token_logp(cond, xt, yt)
        mask = pol.mask[yt]
        group = torch.arange(P * groups_per_prompt).repeat_interleave(self.G)
        ref_logp = pol.token_logp(torch.as_tensor(np.log(task.ref_cond)), xt, yt)
        return self.loss(logp, ref_logp, mask, rewards, group)


# --------------------------------------------------------------------------- training
def train_twin(
    task: TokenTreeTask,
    twin: str,
    *,
    steps: int = 1500,
    lr: float = 1.0,
    beta: float = 0.5,
    group_size: int = 4,
    alpha: float = 0.25,
    mode: str = "exact",
    batch: int = 64,
    k: int = 4,
    seed: int = 0,
    record_every: int = 0,
    theta0: np.ndarray | None = None,
    enumerate_groups: bool = False,
) -> TwinTrace:
    """Train a twin by gradient descent and record exact metrics.

    lr: the step size per prompt (every prompt has its own table and the objective is the mean
    over prompts, so the gradient is multiplied by P: a step does not shrink as prompts are added).

    beta: the loss's KL temperature (IPO's tau); group_size: G; alpha: CVaR level; batch:
    pairs (or responses) per prompt per step in sampled mode; k: the k of pass@k;
    record_every: metrics every this many steps (0: about 100 records); enumerate_groups: exact
    mode trains the group twins on the *registered* loss over every multiset of G responses (the
    claims' setting) instead of the closed-form expected update (faster on large trees; the two
    agree to 1e-12, tests/test_deep_twins.py).
    """
    if twin not in TWINS:
        raise ValueError(f"unknown twin {twin!r}; expected one of {TWINS}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {beta!r}")
    if group_size < 2:
        raise ValueError(f"group_size must be >= 2, got {group_size}")
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the tensors are tiny: one thread is several times faster
    try:
        return _train(
            task,
            twin,
            steps,
            lr,
            beta,
            group_size,
            alpha,
            mode,
            batch,
            k,
            seed,
            record_every,
            theta0,
            enumerate_groups,
        )
    finally:
        torch.set_num_threads(threads)


def _train(
    task, twin, steps, lr, beta, group_size, alpha, mode, batch, k, seed, record_every, theta0,
    enumerate_groups=False,
) -> TwinTrace:  # fmt: skip
    t0 = time.perf_counter()
    pol = LogitTable(task, theta0)
    if mode == "exact":
        objective = ExactObjective(
            task, twin, beta, group_size, alpha, pol, enumerate=enumerate_groups
        )
    else:
        objective = SampledObjective(task, twin, beta, group_size, alpha, pol, batch, seed)
    predicted = predicted_point(task, twin, beta, group_size, alpha)
    optimum = task.soft_optimum(beta).seq_logp
    support = np.isfinite(predicted)
    every = record_every or max(steps // 100, 1)
    marks, seqs = [0], [pol.numpy_seq_logp()]
    for step in range(1, steps + 1):
        loss = objective()
        (g,) = torch.autograd.grad(loss, pol.theta)
        with torch.no_grad():  # lr per prompt: each prompt's table sees 1/P of the mean's gradient
            pol.theta -= lr * task.n_prompts * g
        if step % every == 0 or step == steps:
            marks.append(step)
            seqs.append(pol.numpy_seq_logp())
    params = {"beta": beta, "lr": lr, "group_size": group_size, "alpha": alpha, "mode": mode,
              "batch": batch, "k": k, "steps": steps, "seed": seed}  # fmt: skip
    support = np.isfinite(predicted)
    tv = None
    if twin == "cvar-grpo":  # the optimum is a set: the distance to it is the mass outside
        tv = np.asarray([float(1.0 - (np.exp(seq) * support).sum(1).mean()) for seq in seqs])
    return trace_from_policies(
        task, twin, params, marks, seqs, predicted, optimum, k, t0, tv=tv,
        extra={"theta": pol.theta.detach().numpy().copy()},  # (P, N, V) the final logit table
    )  # fmt: skip


def trace_from_policies(
    task, twin, params, marks, seqs, predicted, optimum, k, t0, *, tv=None, extra=None
) -> TwinTrace:
    """A TwinTrace from the policies ``seqs`` (each (P, Y) sequence log-probabilities) at the
    recorded steps ``marks``; ``tv`` replaces the TV to ``predicted`` where the prediction is a
    set (CVaR-GRPO). Also used by :mod:`regression_runs`."""
    finite = np.isfinite(predicted).all()

    def curve(f):
        return np.asarray([float(f(s)) for s in seqs])

    return TwinTrace(
        twin,
        task.name,
        params,
        np.asarray(marks),
        curve(lambda s: task.tv(s, predicted).mean()) if tv is None else tv,
        curve(lambda s: task.kl(s, predicted).mean() if finite else np.nan),
        curve(lambda s: task.kl(s, optimum).mean()),
        curve(lambda s: task.expected_reward(s).mean()),
        curve(lambda s: task.accuracy(s).mean()),
        curve(lambda s: task.pass_at_k(s, k).mean()),
        seqs[-1],
        predicted,
        optimum,
        wall_seconds=time.perf_counter() - t0,
        extra=extra or {},
    )
