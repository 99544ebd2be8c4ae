"""EXO (Ji et al. 2024, "Towards Efficient and Exact Optimization of Language Model Alignment",
arXiv 2402.00856): the registered loss and its exact twin on a token tree. Seed row 000#11
(``seed-catalogue-000.md#11``).

For K responses y_1..y_K to a prompt (drawn from the reference here), EXO matches two
distributions over the K indices: p_theta(i) ∝ exp(log pi_theta(y_i)/ref(y_i)) (the policy's
implicit reward) and p_r(i) ∝ exp(r(y_i)/beta), by the *reverse* KL(p_theta || p_r). As K grows
the K-sample distributions tend to pi_theta and pi*_beta, so E[L_K] -> KL(pi_theta || pi*_beta)
= -(J_beta(pi_theta) - J_beta(pi*))/beta: EXO's gradient points along the KL-regularised RL
gradient (the paper's claim, "in the same direction as the RL algorithms asymptotically"). DPO
corresponds to the *forward* KL(p_r || p_theta) (K = 2 with preference labels), whose limit
KL(pi* || pi_theta) is mode-covering: its direction differs. Read [V]: the abstract; the K-sample
form with p_theta's temperature equal to p_r's (beta_pi = beta_r) is reconstructed [A] from the
paper's description and TRL's pairwise ``loss_type="exo_pair"`` (its K = 2, label-smoothed form).

Misspecification (the paper's mode-seeking vs mean-seeking comparison, reconstructed [A]): on a
finite-response bandit whose policy class pi_theta(y) ∝ ref(y) exp(theta . phi(y)) cannot
represent pi*_beta (:func:`misspecified_bandit`: a bimodal pi*, one monotone feature), the
population minimisers of the registered exo loss (every ordered K-tuple of reference responses,
:func:`exo_bandit_objective`) and of the registered dpo loss (every ordered pair with its
Bradley-Terry label, :func:`dpo_bandit_objective`) are found by L-BFGS (:func:`fit_log_linear`)
and compared with the reverse-KL projection argmin_theta KL(pi_theta || pi*) = the maximiser of
J_beta over the class (found by scipy on the closed-form KL, :func:`reverse_kl_projection`).

Tensors: ``logratios`` (B, K) log pi/ref of each prompt's K responses (sequence sums),
``rewards`` (B, K); ``weights`` (B,) for an exact expectation.
"""

from __future__ import annotations

import itertools

import numpy as np
import torch

from theorylab.algorithms.deep.masking import InvalidBatchError, check_positive, reduce_examples
from theorylab.algorithms.deep.registry import register_loss


def exo_divergence(log_p_theta: torch.Tensor, log_p_r: torch.Tensor) -> torch.Tensor:
    """KL(p_theta || p_r) per row (B,) of (B, K) log-distributions (EXO's reverse KL)."""
    return (log_p_theta.exp() * (log_p_theta - log_p_r)).sum(-1)


@register_loss(
    "exo",
    summary="EXO: reverse KL between the policy's and the reward's K-sample softmax (Ji 2024).",
)
def exo(
    logratios: torch.Tensor,
    rewards: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    beta: float = 0.1,
) -> torch.Tensor:
    """mean_b KL(softmax_i logratios[b, i] || softmax_i rewards[b, i] / beta)."""
    check_positive("beta", beta)
    if logratios.ndim != 2 or logratios.shape != rewards.shape or logratios.shape[1] < 2:
        raise InvalidBatchError(
            f"logratios {tuple(logratios.shape)} and rewards {tuple(rewards.shape)} must both be "
            "(B, K) with K >= 2 responses per prompt"
        )
    log_p_theta = torch.log_softmax(logratios, dim=-1)
    log_p_r = torch.log_softmax(rewards.detach() / beta, dim=-1)
    return reduce_examples(exo_divergence(log_p_theta, log_p_r), weights)


def exo_expectation(task, seq_logp: torch.Tensor, K: int, beta: float) -> torch.Tensor:
    """E over K i.i.d. reference responses per prompt of the registered exo loss (every ordered
    K-tuple with its probability; prompts averaged): a torch scalar with seq_logp's gradient."""
    from theorylab.algorithms.deep.registry import make_loss

    P, Y = task.n_prompts, task.n_responses
    if Y**K * P > 2_000_000:
        raise ValueError(f"{P} x {Y}^{K} K-tuples is too many to enumerate")
    tup = torch.as_tensor(np.array(list(itertools.product(range(Y), repeat=K))))  # (M, K)
    ref = torch.as_tensor(task.ref_logprobs)
    r = torch.as_tensor(task.mean_reward)
    rows = torch.arange(P).repeat_interleave(len(tup))
    tt = tup.repeat(P, 1)
    w = ref.exp()[rows[:, None], tt].prod(1) / P
    logratios = (seq_logp - ref)[rows[:, None], tt]
    return make_loss("exo", beta=beta)(logratios, r[rows[:, None], tt], w)


# --------------------------------------------------------------------------- misspecification
def misspecified_bandit():
    """(log ref (Y,), r (Y,), phi (Y, d)): four responses, uniform reference, a bimodal reward
    (2 at y = 0, 1.7 at y = 3, 0 between) and one feature (y - 1.5) / 1.5, so pi_theta is
    monotone in y and cannot put mass on both ends without the middle."""
    Y = 4
    y = np.arange(Y, dtype=float)
    return np.full(Y, -np.log(Y)), np.array([2.0, 0.0, 0.0, 1.7]), ((y - 1.5) / 1.5)[:, None]


def log_linear(theta, log_ref, phi):
    """log pi_theta (Y,) ∝ log ref + phi theta (torch or numpy)."""
    if isinstance(theta, torch.Tensor):
        s = torch.as_tensor(log_ref) + torch.as_tensor(phi) @ theta
        return s - torch.logsumexp(s, 0)
    s = log_ref + phi @ theta
    return s - np.log(np.exp(s - s.max()).sum()) - s.max()


def exo_bandit_objective(log_ref, r, phi, K: int, beta: float):
    """theta -> E over K i.i.d. reference responses of the registered exo loss (torch)."""
    from theorylab.algorithms.deep.registry import make_loss

    Y = len(r)
    tup = np.array(list(itertools.product(range(Y), repeat=K)))  # (Y^K, K)
    w = torch.as_tensor(np.exp(log_ref[tup].sum(1)))
    rk = torch.as_tensor(r[tup])
    loss = make_loss("exo", beta=beta)
    return lambda th: loss((log_linear(th, log_ref, phi) - torch.as_tensor(log_ref))[tup], rk, w)


def dpo_bandit_objective(log_ref, r, phi, beta: float):
    """theta -> E over (a, b) ~ ref x ref labelled a > b with probability sigmoid(r(a) - r(b))
    of the registered dpo loss (torch)."""
    from theorylab.algorithms.deep.registry import make_loss

    Y = len(r)
    a, b = (m.ravel() for m in np.meshgrid(np.arange(Y), np.arange(Y), indexing="ij"))
    w = torch.as_tensor(np.exp(log_ref[a] + log_ref[b]) / (1.0 + np.exp(-(r[a] - r[b]))))
    loss = make_loss("dpo", beta=beta)
    ref = torch.as_tensor(log_ref)

    def objective(th):
        lp = log_linear(th, log_ref, phi)
        return loss(lp[a], lp[b], ref[a], ref[b], w)

    return objective


def fit_log_linear(objective, d: int, starts=(0.0, 3.0, -3.0)) -> np.ndarray:
    """argmin over theta (d,) of a torch objective by L-BFGS from several starts (the best)."""
    best, best_value = None, np.inf
    for x0 in starts:
        th = torch.full((d,), x0, dtype=torch.float64, requires_grad=True)
        opt = torch.optim.LBFGS([th], max_iter=500, tolerance_grad=1e-13, tolerance_change=1e-16,
                                line_search_fn="strong_wolfe")  # fmt: skip

        def closure(th=th, opt=opt):
            opt.zero_grad()
            v = objective(th)
            v.backward()
            return v

        for _ in range(5):
            opt.step(closure)
        value = float(objective(th.detach()))
        if value < best_value:
            best, best_value = th.detach().numpy().copy(), value
    return best


def reverse_kl_projection(log_ref, r, phi, beta: float) -> np.ndarray:
    """argmin_theta KL(pi_theta || pi*_beta) by scipy BFGS from several starts (numpy only)."""
    from scipy.optimize import minimize

    log_star = log_ref + r / beta
    log_star = log_star - np.log(np.exp(log_star).sum())

    def kl(th):
        lp = log_linear(th, log_ref, phi)
        return float(np.exp(lp) @ (lp - log_star))

    d = phi.shape[1]
    fits = [minimize(kl, np.full(d, x0), method="BFGS", options={"gtol": 1e-12})
            for x0 in (0.0, 5.0, -5.0)]  # fmt: skip
    return min(fits, key=lambda f: f.fun).x
