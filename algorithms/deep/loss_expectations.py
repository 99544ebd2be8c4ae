"""Exact expected objectives, and sampled batches, for the registered losses that are averages
over independent examples (the ones the group twins of :mod:`theorylab.algorithms.deep.twins` do
not cover): RPO, VPO (+1 online, -1 offline), XPO, PPO-clip with a k3 KL penalty, the KL
estimators k1/k2/k3 in the loss, CQL(H) and f-DVL's value loss (chi-square and total-variation
surrogates), each on a token-tree task with a logit table ``theta`` (P, N, V).

Every such loss is ``reduce_examples`` (a mean, or ``sum_b w_b loss_b``) of per-example terms, so
its expectation over a sampling distribution is the same registered loss called on *every*
example with its probability as the weight: that is the registered exact objective here
(:meth:`CaseObjective.exact`, :func:`registered_objective`). It is not checked against itself:
:func:`reference_objective` evaluates the paper's objective written independently of the loss
code (:mod:`theorylab.algorithms.deep.reference_objectives`), and the claims
``deep-loss-reference-objectives`` (the two agree in value and gradient) and
``deep-loss-gradients-mc`` (the mean gradient of the loss on sampled batches matches the paper's
objective's) compare them. Responses may have variable lengths (``tokentree-eos``: the policy's
``mask``). The sampling distributions (the probabilities are detached: the sampled loss is
differentiated per sample, as in training):

* rpo, vpo+1, vpo-1, xpo: pairs (a, b) ~ ref x ref per prompt with Bradley-Terry labels, and the
  extra term's responses y ~ ref (the baseline / calibration / exploration sampler);
* ppo-clip: responses from a fixed "old" policy (a second logit table) with advantages
  A = r - E_old r, clip_eps 0.2, beta 0.5, k3 in the loss, aggregation seq-mean-token-mean
  (equal lengths: the same as token-mean, which takes no weights);
* kl-k1, kl-k2, kl-k3: responses from the current policy (on-policy, pathwise only: E[grad k1]
  = 0, E[grad k2] = grad of sum_h d(h) KL(pi_h || ref_h), E[grad k3] = that of the forward KL);
* cql, fdvl: the tokens (x, node, a) of responses y ~ ref (each of a response's |y| tokens an
  example of weight 1/|y|);
  CQL's Q-values are theta[x, node] with fixed TD targets; f-DVL's V(x, node) is theta[x, node, 0]
  with fixed Q(x, node, a).

The group losses grpo / dr-grpo (k3, k2) / rloo (``GROUP_CASES``) take their registered exact
objective from the twins' enumeration of every multiset of G responses. Not covered, and why:
cvar-grpo (no independent reference is written);
f-DVL with ``divergence="kl"`` divides by exp(max over the batch), a batch-dependent stabiliser,
so its sampled loss is not an unbiased estimate of any fixed expected objective.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from theorylab.algorithms.deep import reference_objectives as ref
from theorylab.algorithms.deep.registry import make_loss
from theorylab.algorithms.deep.twins import LogitTable, _pairs
from theorylab.kernels.sampling import draws_per_row
from theorylab.mdps.token_tree import TokenTreeTask

D = torch.float64
PAIR_CASES = ("rpo", "vpo+1", "vpo-1", "xpo")
CASES = (*PAIR_CASES, "ppo-clip", "kl-k1", "kl-k2", "kl-k3", "cql", "fdvl-chi-square", "fdvl-tv")


def case_loss(case: str, scale: float = 1.0):
    """The registered loss of ``case`` with its hyper-parameters (``scale`` multiplies the one a
    negative control changes: eta, alpha, beta, alpha, lambda shift)."""
    s = scale
    specs = {
        "rpo": ("rpo", {"beta": 0.5, "eta": 1.0 * s}),
        "vpo+1": ("vpo", {"beta": 0.5, "alpha": 1.0 * s, "sign": 1}),
        "vpo-1": ("vpo", {"beta": 0.5, "alpha": 1.0 * s, "sign": -1}),
        "xpo": ("xpo", {"beta": 0.5, "alpha": 0.25 * s}),
        "ppo-clip": (
            "ppo-clip",
            {"beta": 0.5 * s, "clip_eps": 0.2, "kl": "k3", "aggregation": "seq-mean-token-mean"},
        ),
        "cql": ("cql", {"alpha": 1.0 * s}),
        "dpo": ("dpo", {"beta": 0.5 * s}),
        "ipo": ("ipo", {"tau": 0.5 * s}),
        "chipo": ("chipo", {"beta": 0.5 * s, "clip_r": 1.0}),
        "fdvl-chi-square": ("fdvl-value", {"divergence": "chi-square", "lam": 0.5 * s}),
        "fdvl-tv": ("fdvl-value", {"divergence": "total-variation", "lam": 0.5 * s}),
    }
    if case in ("kl-k1", "kl-k2", "kl-k3"):
        return make_loss(case)
    if case not in specs:
        raise ValueError(f"unknown case {case!r}; expected one of {(*CASES, *specs)}")
    name, params = specs[case]
    return make_loss(name, **params)


@dataclass
class CaseData:
    """The fixed tables a case needs besides the policy (drawn once from a seed)."""

    old_cond: np.ndarray  # (P, N, V) log old-policy conditionals (ppo-clip)
    td_targets: np.ndarray  # (P, N, V) CQL's regression targets
    q_table: np.ndarray  # (P, N, V) f-DVL's Q


def case_data(task: TokenTreeTask, seed: int) -> CaseData:
    rng = np.random.default_rng(seed)
    shape = (task.n_prompts, task.n_nodes, task.V)
    old = rng.standard_normal(shape) * 0.7
    old -= np.log(np.exp(old).sum(-1, keepdims=True))
    return CaseData(old, rng.standard_normal(shape), rng.standard_normal(shape))


class CaseObjective:
    """``exact()``: the loss on every example with its probability as weight; ``sampled()``: the
    loss on a fresh batch of ``batch`` examples per prompt (a torch scalar each)."""

    def __init__(
        self, task: TokenTreeTask, case: str, policy: LogitTable, data: CaseData,
        batch: int = 16, seed: int = 0, scale: float = 1.0,
    ) -> None:  # fmt: skip
        self.task, self.case, self.pol, self.data, self.batch = task, case, policy, data, batch
        self.loss = case_loss(case, scale)
        self.rng = np.random.default_rng(seed)
        self.ref_cond = torch.as_tensor(np.log(task.ref_cond))
        self.ref_seq = torch.as_tensor(task.ref_logprobs)
        self.old_cond = torch.as_tensor(data.old_cond)
        P, Y = task.n_prompts, task.n_responses
        self.all_x = torch.arange(P).repeat_interleave(Y)
        self.all_y = torch.arange(Y).repeat(P)

    # ------------------------------------------------------------------ per-example terms
    def _responses(self, cond, x, y, w):
        """The loss on responses (x, y) (B,) with weights w (or None: the mean)."""
        task, pol, case = self.task, self.pol, self.case
        logp = pol.token_logp(cond, x, y)
        ref = pol.token_logp(self.ref_cond, x, y)
        mask = pol.mask[y]
        if case == "ppo-clip":
            old = pol.token_logp(self.old_cond, x, y)
            r = torch.as_tensor(task.mean_reward)
            old_seq = torch.as_tensor(task.sequence_logprobs(self.data.old_cond))
            adv = r[x, y] - (old_seq.exp() * r).sum(1)[x]
            return self.loss(logp, old, adv, mask, ref, w)
        per = self.loss(logp, ref, mask)  # kl-k*: (B,) per response
        return per.mean() if w is None else (w * per).sum()

    def _tokens(self, cond, x, y, w):
        """CQL / f-DVL on the tokens of responses (x, y) (B,): one example per real token, each
        response's |y| tokens sharing its weight."""
        pol = self.pol
        real = pol.mask[y] > 0  # (B, L)
        nodes, acts = pol.nodes[y][real], pol.tokens[y][real]
        lengths = real.sum(1)
        xs = x.repeat_interleave(lengths)
        ww = None if w is None else (w / lengths).repeat_interleave(lengths)
        if self.case == "cql":
            q = self.pol.theta[xs, nodes]  # (B L, V): the logit table read as Q-values
            y_td = torch.as_tensor(self.data.td_targets)[xs, nodes, acts]
            return self.loss(q, acts, y_td, ww)
        v = self.pol.theta[xs, nodes, 0]
        q = torch.as_tensor(self.data.q_table)[xs, nodes, acts]
        return self.loss(q, v, ww)

    def _with_extra(self, cond, pairs, extra):
        """RPO / VPO / XPO: pairs (x, yw, yl, w) and the extra term's responses (x, y, w)."""
        x, yw, yl, w = pairs
        seq = self.pol.seq_logp(cond)
        xe, ye, we = extra
        return self.loss(
            seq[x, yw], seq[x, yl], self.ref_seq[x, yw], self.ref_seq[x, yl], seq[xe, ye], w, we
        )

    # ------------------------------------------------------------------ the two objectives
    def exact(self) -> torch.Tensor:
        task, pol = self.task, self.pol
        P = task.n_prompts
        cond = pol.cond_logp()
        x, y = self.all_x, self.all_y
        if self.case in PAIR_CASES:
            w_ref = self.ref_seq.exp()[x, y] / P
            return self._with_extra(cond, _pairs(task), (x, y, w_ref))
        if self.case == "ppo-clip":
            old_seq = torch.as_tensor(task.sequence_logprobs(self.data.old_cond))
            return self._responses(cond, x, y, old_seq.exp()[x, y] / P)
        if self.case.startswith("kl-"):
            with torch.no_grad():
                w = pol.seq_logp(cond).exp()[x, y] / P
            return self._responses(cond, x, y, w)
        return self._tokens(cond, x, y, self.ref_seq.exp()[x, y] / P)

    def sampled(self) -> torch.Tensor:
        task, pol, n = self.task, self.pol, self.batch
        P = task.n_prompts
        cond = pol.cond_logp()
        xs = np.repeat(np.arange(P), n)
        ref = np.exp(task.ref_logprobs)
        if self.case in PAIR_CASES:
            a = draws_per_row(self.rng, ref, n).reshape(-1)
            b = draws_per_row(self.rng, ref, n).reshape(-1)
            r = task.mean_reward
            a_wins = self.rng.random(a.shape[0]) < 1.0 / (1.0 + np.exp(-(r[xs, a] - r[xs, b])))
            yw, yl = np.where(a_wins, a, b), np.where(a_wins, b, a)
            ye = draws_per_row(self.rng, ref, n).reshape(-1)
            t = torch.as_tensor
            return self._with_extra(cond, (t(xs), t(yw), t(yl), None), (t(xs), t(ye), None))
        if self.case == "ppo-clip":
            probs = np.exp(task.sequence_logprobs(self.data.old_cond))
        elif self.case.startswith("kl-"):
            probs = pol.numpy_seq_logp()
            probs = np.exp(probs)
        else:
            probs = ref
        ys = torch.as_tensor(draws_per_row(self.rng, probs, n).reshape(-1))
        xt = torch.as_tensor(xs)
        if self.case in ("cql", "fdvl-chi-square", "fdvl-tv"):  # each response weighs 1/B
            return self._tokens(cond, xt, ys, torch.full((len(ys),), 1.0 / len(ys), dtype=D))
        return self._responses(cond, xt, ys, None)


# --------------------------------------------------------------------------- independent references
GROUP_CASES = ("grpo", "dr-grpo", "dr-grpo-k2", "rloo")
GROUP_BETA = 0.5


def policy_tables(task, pol: LogitTable, cond: torch.Tensor) -> ref.Tables:
    """The policy's and the reference's per-token log-probabilities of every response, as the
    independent objectives of :mod:`theorylab.algorithms.deep.reference_objectives` take them."""
    x = torch.arange(task.n_prompts)[:, None, None]
    nodes, toks = pol.nodes[None], pol.tokens[None]
    ref_cond = torch.as_tensor(np.log(task.ref_cond))
    return ref.Tables(
        cond[x, nodes, toks], ref_cond[x, nodes, toks], pol.mask, torch.as_tensor(task.mean_reward)
    )


PAIR_TWIN_CASES = ("dpo", "ipo", "chipo")
REFERENCE_CASES = (*PAIR_TWIN_CASES, *CASES, *GROUP_CASES)


def reference_objective(
    task, case: str, pol: LogitTable, data: CaseData, group_size: int = 4, scale: float = 1.0
) -> torch.Tensor:
    """The paper's exact objective of ``case`` (a torch scalar with gradient), from
    :mod:`~theorylab.algorithms.deep.reference_objectives`, with the hyper-parameters of
    :func:`case_loss` (``scale`` multiplies the one a control changes) and, for the group cases,
    beta = 0.5 x scale and G = ``group_size``."""
    cond = pol.cond_logp()
    t = policy_tables(task, pol, cond)
    hp = dict(case_loss(case, scale).keywords) if case not in GROUP_CASES else {}
    if case == "dpo":
        return ref.dpo(t, hp["beta"])
    if case == "ipo":
        return ref.ipo(t, hp["tau"])
    if case == "chipo":
        return ref.chipo(t, hp["beta"], hp["clip_r"])
    if case == "rpo":
        return ref.rpo(t, hp["beta"], hp["eta"])
    if case in ("vpo+1", "vpo-1"):
        return ref.vpo(t, hp["beta"], hp["alpha"], hp["sign"])
    if case == "xpo":
        return ref.xpo(t, hp["beta"], hp["alpha"])
    if case == "ppo-clip":
        x = torch.arange(task.n_prompts)[:, None, None]
        old_tok = torch.as_tensor(data.old_cond)[x, pol.nodes[None], pol.tokens[None]]
        old = ((old_tok * t.mask).sum(-1)).exp()
        adv = t.r - (old * t.r).sum(1, keepdim=True)
        return ref.ppo_clip(t, old_tok, adv, hp["beta"], hp["clip_eps"])
    if case.startswith("kl-"):
        return ref.kl_in_loss(t, case[3:])
    if case in ("cql", "fdvl-chi-square", "fdvl-tv"):
        mu = torch.as_tensor(ref.data_weights(task, task.ref_logprobs))
        if case == "cql":
            return ref.cql(pol.theta, torch.as_tensor(data.td_targets), mu, hp["alpha"])
        div = "chi-square" if case == "fdvl-chi-square" else "total-variation"
        return ref.fdvl_value(torch.as_tensor(data.q_table), pol.theta[..., :1], mu, div, hp["lam"])
    G, beta = group_size, GROUP_BETA * scale
    if case == "grpo":
        return ref.group_policy_gradient(t, G, advantage="std", norm="seq", beta=beta)
    if case == "dr-grpo":
        return ref.group_policy_gradient(t, G, advantage="mean", norm="const", beta=beta)
    if case == "dr-grpo-k2":
        return ref.group_policy_gradient(t, G, advantage="mean", norm="const", beta=beta, kl="k2")
    if case == "rloo":
        return ref.rloo(t, G, beta)
    raise ValueError(f"no reference objective for {case!r}")


def registered_objective(
    task, case: str, pol: LogitTable, data: CaseData, group_size: int = 4
) -> torch.Tensor:
    """The registered loss's exact expectation of ``case``: :class:`CaseObjective`'s, or for the
    group cases the registered loss over every multiset of G responses
    (:class:`~theorylab.algorithms.deep.twins.ExactObjective` with ``enumerate=True``)."""
    from theorylab.algorithms.deep.twins import ExactObjective

    if case in GROUP_CASES:
        return ExactObjective(task, case, GROUP_BETA, group_size, 0.25, pol, enumerate=True)()
    if case in PAIR_TWIN_CASES:  # the pair twins' exact objective: the registered pair loss
        return ExactObjective(task, case, 0.5, group_size, 0.25, pol)()
    return CaseObjective(task, case, pol, data).exact()
