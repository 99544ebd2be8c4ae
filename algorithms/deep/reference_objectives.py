"""The deep losses' exact expected objectives, written from the papers' printed formulas and
independently of the loss code: nothing here imports ``preference_losses``,
``policy_gradient_losses``, ``offline_losses``, ``kl``, ``groups`` or ``masking``. The claims
``deep-loss-reference-objectives``, ``deep-loss-gradients-mc`` and ``deep-length-normalisations``
compare the registered losses' exact expectations (and sampled estimates) with these.

Every objective is an exact sum over a small token tree (or its variable-length variant,
:mod:`theorylab.mdps.eos_tree`) given as :class:`Tables`: the policy's per-token log-probabilities
``tok`` (P, Y, T) (with gradient), the reference's ``ref_tok`` (P, Y, T), the response mask
``mask`` (Y, T) and the mean rewards ``r`` (P, Y). Prompts are weighted uniformly. Sampling
distributions enter with their probabilities *detached* where the loss is differentiated per
sample (on-policy groups, the KL estimators): the objective's gradient is then the expected
gradient of the sampled loss, the quantity a training step follows.

Formulas (h = log pi(y_w)/ref(y_w) - log pi(y_l)/ref(y_l), sequence log-probabilities summed over
a response's tokens; pairs (a, b) ~ ref x ref labelled by Bradley-Terry
P(a > b) = sigma(r_a - r_b)):

* DPO: E[-log sigma(beta h)] (Rafailov et al., NeurIPS 2023, eq. (7)).
* IPO: E[(h - 1/(2 tau))^2] (Azar et al., AISTATS 2024, eq. (17)).
* chi-PO: E[-log sigma(clip_{[-2R, 2R]} beta (phi(z_w) - phi(z_l)))], phi(z) = z + log z,
  z = pi/ref (Huang et al., ICLR 2025, arXiv 2407.13399, Alg. 1).
* RPO: L_DPO + eta beta E_{y ~ pi_base}[-log pi(y|x)] (Liu et al. 2024, arXiv 2405.16436,
  eq. (4.8); pi_base = ref here).
* VPO: L_DPO - sign alpha J(r_pi) with the value of the implicit reward r_pi = beta log pi/ref
  calibrated so that E_{pi_cal}[r_pi] = 0: J = -beta E_{y ~ pi_cal}[log pi(y|x)/ref(y|x)], i.e.
  L_DPO + sign alpha beta E_{pi_cal}[log pi] up to a constant, which is dropped (Cen et al., ICLR
  2025, arXiv 2405.19320, Sec. 4; sign +1 online/optimistic, -1 offline/pessimistic;
  pi_cal = ref here).
* XPO: L_DPO + alpha E_{y ~ pi_ref}[log pi(y|x)] (Xie et al., ICLR 2025, arXiv 2405.21046,
  Alg. 1: the bonus alpha sum_{y~ in D_ref} log pi(y~|x) over responses y~ ~ pi_ref; TRL's
  XPOTrainer: ``xpo_losses = alpha * model_logprobs_ref_data_sum``).
* PPO-clip with a KL penalty: E_{y ~ pi_old}[(1/|y|) sum_t -min(rho_t A, clip(rho_t, 1 +- eps) A)
  + beta k3_t], rho_t = pi(y_t|h_t)/pi_old(y_t|h_t) (Schulman et al. 2017, eq. (7); the penalty
  as in GRPO eq. (3)-(4)).
* KL estimators (Schulman 2020, "Approximating KL divergence"), per token with
  u = ref(y_t|h)/pi(y_t|h): k1 = -log u, k2 = (log u)^2 / 2, k3 = u - log u - 1, summed over
  the response, expectation under pi (detached).
* GRPO: for a group of G i.i.d. responses, (1/G) sum_i N_i sum_t [-min(rho A_i, clip(rho) A_i)
  + beta k3_{i,t}], A_i = (r_i - mean r) / (std r + eps) (Shao et al. 2024, arXiv 2402.03300,
  eqs. (3)-(4), outcome supervision Sec. 4.1.2; std with n - 1 and eps = 1e-4, the conventions
  of TRL and of Dr. GRPO's code), N_i = 1/|o_i|.
* Dr. GRPO: the same with A_i = r_i - mean r and N_i = 1/L_max, a constant (Liu et al. 2025,
  arXiv 2503.20783, Sec. 3.2, eq. (3)).
* token mean (DAPO, Yu et al. 2025, arXiv 2503.14476, eq. (8)): the token losses of the group
  summed and divided by sum_i |o_i|.
* RLOO: -(1/G) sum_i (r~_i - (1/(G-1)) sum_{j != i} r~_j) log pi(o_i|x), r~ = r - beta
  sum_t log pi/ref (no gradient through r~) (Ahmadian et al. 2024, arXiv 2402.14740, Sec. 3).
* CQL(H): E_{(s,a) ~ D}[alpha (log sum_a' exp Q(s,a') - Q(s,a)) + (Q(s,a) - y(s,a))^2 / 2]
  (Kumar et al., NeurIPS 2020, eq. (4) with the entropy regulariser).
* f-DVL's value surrogates on x = Q(s,a) - V(s) (Sikchi et al., ICLR 2024; official code
  hari-sikchi/DVL): chi-square lam max(x + x^2/4, 0) - (1 - lam) x; total variation
  lam max(x, 0) - (1 - lam) x.

Group expectations enumerate the Y^G *ordered* G-tuples (the twins' exact objectives enumerate
multisets with their multinomial counts: a second, independent enumeration).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

NORMALISATIONS = ("seq", "const", "token")  # 1/|o_i|, 1/L_max, sum over tokens / sum |o_i|


@dataclass
class Tables:
    """tok, ref_tok: (P, Y, T) per-token log-probabilities; mask: (Y, T); r: (P, Y)."""

    tok: torch.Tensor
    ref_tok: torch.Tensor
    mask: torch.Tensor
    r: torch.Tensor

    @property
    def seq(self) -> torch.Tensor:
        """(P, Y) log pi(y|x)."""
        return (self.tok * self.mask).sum(-1)

    @property
    def ref_seq(self) -> torch.Tensor:
        """(P, Y) log ref(y|x)."""
        return (self.ref_tok * self.mask).sum(-1)


def _log_sigmoid(z: torch.Tensor) -> torch.Tensor:
    """log sigma(z) = -log(1 + e^{-z}), written stably."""
    return -torch.logaddexp(torch.zeros_like(z), -z)


# --------------------------------------------------------------------------- preference pairs
def bradley_terry_expectation(t: Tables, pair_loss: Callable) -> torch.Tensor:
    """E_{a, b ~ ref x ref} E_{label ~ BT}[pair_loss(log-ratio of the winner, of the loser)]."""
    lr = t.seq - t.ref_seq  # (P, Y)
    win, lose = (
        lr[:, :, None].expand(-1, -1, lr.shape[1]),
        lr[:, None, :].expand(-1, lr.shape[1], -1),
    )
    p_ab = torch.sigmoid(t.r[:, :, None] - t.r[:, None, :])  # (P, Y, Y): P(a beats b)
    ref = t.ref_seq.exp()
    joint = ref[:, :, None] * ref[:, None, :]  # (P, Y, Y) P(a, b)
    a_wins, b_wins = pair_loss(win, lose), pair_loss(lose, win)
    return (joint * (p_ab * a_wins + (1.0 - p_ab) * b_wins)).sum((1, 2)).mean()


def dpo(t: Tables, beta: float) -> torch.Tensor:
    return bradley_terry_expectation(t, lambda w, l: -_log_sigmoid(beta * (w - l)))


def ipo(t: Tables, tau: float) -> torch.Tensor:
    return bradley_terry_expectation(t, lambda w, l: (w - l - 1.0 / (2.0 * tau)) ** 2)


def chipo(t: Tables, beta: float, clip_r: float) -> torch.Tensor:
    def loss(w, l):
        phi_w, phi_l = torch.exp(w) + w, torch.exp(l) + l
        return -_log_sigmoid(torch.clamp(beta * (phi_w - phi_l), -2 * clip_r, 2 * clip_r))

    return bradley_terry_expectation(t, loss)


def _under_ref(t: Tables, values: torch.Tensor) -> torch.Tensor:
    """E_{x uniform, y ~ ref(.|x)}[values] for values (P, Y)."""
    return (t.ref_seq.exp() * values).sum(1).mean()


def rpo(t: Tables, beta: float, eta: float) -> torch.Tensor:
    return dpo(t, beta) + eta * beta * _under_ref(t, -t.seq)


def vpo(t: Tables, beta: float, alpha: float, sign: int) -> torch.Tensor:
    value = -beta * _under_ref(t, t.seq)  # J(r_pi) up to the constant beta E_cal log ref
    return dpo(t, beta) - sign * alpha * value


def xpo(t: Tables, beta: float, alpha: float) -> torch.Tensor:
    return dpo(t, beta) + alpha * _under_ref(t, t.seq)


# --------------------------------------------------------------------------- per-token pieces
def kl_estimate(log_u: torch.Tensor, estimator: str) -> torch.Tensor:
    """Schulman's k1, k2, k3 of u = ref/pi at a token (log_u = log ref - log pi)."""
    if estimator == "k1":
        return -log_u
    if estimator == "k2":
        return 0.5 * log_u**2
    if estimator == "k3":
        return torch.exp(log_u) - log_u - 1.0
    raise ValueError(f"unknown estimator {estimator!r}")


def _clipped_surrogate(rho: torch.Tensor, adv: torch.Tensor, eps: float) -> torch.Tensor:
    return torch.minimum(rho * adv, torch.clamp(rho, 1.0 - eps, 1.0 + eps) * adv)


def kl_in_loss(t: Tables, estimator: str) -> torch.Tensor:
    """E_{y ~ pi (detached)}[sum_t k(u_t)]: the on-policy KL estimator placed in the loss."""
    per = (kl_estimate(t.ref_tok - t.tok, estimator) * t.mask).sum(-1)  # (P, Y)
    return (t.seq.detach().exp() * per).sum(1).mean()


def ppo_clip(
    t: Tables, old_tok: torch.Tensor, adv: torch.Tensor, beta: float, eps: float
) -> torch.Tensor:
    """E_{y ~ pi_old}[(1/|y|) sum_t (-clipped surrogate + beta k3)]; old_tok (P, Y, T) the old
    policy's token log-probabilities, adv (P, Y)."""
    rho = torch.exp(t.tok - old_tok)
    per_tok = -_clipped_surrogate(rho, adv[..., None], eps) + beta * kl_estimate(
        t.ref_tok - t.tok, "k3"
    )
    per_y = (per_tok * t.mask).sum(-1) / t.mask.sum(-1)
    old = (old_tok * t.mask).sum(-1).exp()  # (P, Y) pi_old(y|x)
    return (old * per_y).sum(1).mean()


# --------------------------------------------------------------------------- groups
def group_expectation(t: Tables, G: int, per_group: Callable) -> torch.Tensor:
    """E over G i.i.d. responses from pi(.|x) (detached), by enumerating the Y^G ordered tuples:
    ``per_group(x, tuples)`` (M, G) -> (M,) the loss of each group at prompt x."""
    P, Y = t.seq.shape
    if Y**G > 200_000:
        raise ValueError(f"{Y}^{G} groups is too many to enumerate")
    tuples = torch.as_tensor(np.array(list(itertools.product(range(Y), repeat=G))))
    total = torch.zeros((), dtype=t.tok.dtype)
    for x in range(P):
        p = t.seq[x].detach().exp()
        total = total + (p[tuples].prod(1) * per_group(x, tuples)).sum()
    return total / P


def _normalise(per_tok: torch.Tensor, mask: torch.Tensor, norm: str) -> torch.Tensor:
    """(M, G, T) token losses -> (M,) group loss with the length normalisation ``norm``."""
    sums = (per_tok * mask).sum(-1)  # (M, G)
    if norm == "seq":
        return (sums / mask.sum(-1)).mean(1)
    if norm == "const":
        return (sums / mask.shape[-1]).mean(1)
    if norm == "token":
        return sums.sum(1) / mask.sum((1, 2))
    raise ValueError(f"unknown normalisation {norm!r}; expected one of {NORMALISATIONS}")


def group_policy_gradient(
    t: Tables, G: int, *, advantage: str, norm: str, beta: float, kl: str = "k3",
    eps_std: float = 1e-4, clip_eps: float = 0.2,
) -> torch.Tensor:  # fmt: skip
    """GRPO (advantage "std") / Dr. GRPO ("mean") on-policy: rho = pi / stopgrad(pi) = 1 with the
    policy's gradient; ``norm`` the length normalisation (module docstring)."""

    def per_group(x, tuples):
        r = t.r[x][tuples]  # (M, G)
        dev = r - r.mean(1, keepdim=True)
        if advantage == "std":
            std = torch.sqrt((dev**2).sum(1, keepdim=True) / (G - 1))
            adv = dev / (std + eps_std)
        elif advantage == "mean":
            adv = dev
        else:
            raise ValueError(f"unknown advantage {advantage!r}")
        tok = t.tok[x][tuples]  # (M, G, T)
        rho = torch.exp(tok - tok.detach())
        per_tok = -_clipped_surrogate(rho, adv[..., None], clip_eps)
        per_tok = per_tok + beta * kl_estimate(t.ref_tok[x][tuples] - tok, kl)
        return _normalise(per_tok, t.mask[tuples], norm)

    return group_expectation(t, G, per_group)


def rloo(t: Tables, G: int, beta: float) -> torch.Tensor:
    """RLOO with the k1 KL folded into the reward (no gradient through it)."""
    kl_seq = ((t.tok - t.ref_tok) * t.mask).sum(-1).detach()  # (P, Y)

    def per_group(x, tuples):
        shaped = (t.r[x] - beta * kl_seq[x])[tuples]  # (M, G)
        others = (shaped.sum(1, keepdim=True) - shaped) / (G - 1)
        return -((shaped - others) * t.seq[x][tuples]).mean(1)

    return group_expectation(t, G, per_group)


# --------------------------------------------------------------------------- offline
def data_weights(task, ref_seq: np.ndarray) -> np.ndarray:
    """(P, N, V) the distribution of the (x, node, a) tokens of responses y ~ ref, each response's
    |y| tokens sharing its probability, prompts uniform."""
    P = task.n_prompts
    mask = task.token_mask
    w = np.exp(ref_seq)[:, :, None] * mask[None] / mask.sum(1)[None, :, None] / P  # (P, Y, T)
    mu = np.zeros((P, task.n_nodes, task.V))
    for x in range(P):
        np.add.at(mu[x], (task.token_nodes, task.tokens), w[x])
    return mu


def cql(q: torch.Tensor, td: torch.Tensor, mu: torch.Tensor, alpha: float) -> torch.Tensor:
    """CQL(H) over the table q (P, N, V) with targets td (P, N, V) and data weights mu (P, N, V)."""
    per = alpha * (torch.logsumexp(q, -1, keepdim=True) - q) + 0.5 * (q - td) ** 2
    return (mu * per).sum()


def fdvl_value(
    q: torch.Tensor, v: torch.Tensor, mu: torch.Tensor, divergence: str, lam: float
) -> torch.Tensor:
    """f-DVL's value surrogate over x = q (P, N, V) - v (P, N, 1) with data weights mu."""
    x = q - v
    if divergence == "chi-square":
        per = lam * torch.clamp(x + x**2 / 4.0, min=0.0) - (1.0 - lam) * x
    elif divergence == "total-variation":
        per = lam * torch.clamp(x, min=0.0) - (1.0 - lam) * x
    else:
        raise ValueError(f"unknown divergence {divergence!r}")
    return (mu * per).sum()
