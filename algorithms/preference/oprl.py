r"""Online Process Reward Learning (OPRL), exactly on a token tree: an implicit process reward
model trained by trajectory DPO, whose step rewards are beta log pi(a_t|h_t) / ref(a_t|h_t).

Seed reference: ``seed-catalogue-001.md#56``. Paper: "Online Process Reward Learning for Agentic
Reinforcement Learning" (2025; catalogue L345, title typo as in the source). Card:
docs/algorithms/oprl.md.

What was read [V] (the abstract, through the catalogue row): OPRL trains an implicit PRM "via a
trajectory-based DPO objective" and uses step plus episode advantages; "Theoretical findings
guarantee that the learned step rewards are consistent with trajectory preferences and act as
potential-based shaping rewards, providing bounded gradients to stabilize training". The step
reward r_t = beta log pi(a_t|h_t) / ref(a_t|h_t) is the catalogue's assumption (the standard DPO
implicit reward, per token) [A]; the paper's equations, its agentic environments and its
advantage mixing were not read.

The twin (deterministic tree MDP: a node h is a prefix, an action a token, a leaf a response y with
outcome reward R(y); responses of different lengths with ``tokentree-eos``):

* trajectory DPO (population): pairs (y, y') ~ ref x ref labelled by Bradley-Terry on R, the loss
  E[-p log s(beta (l(y) - l(y'))) - (1 - p) log s(-beta (l(y) - l(y')))], l = log pi / ref of
  the whole response, minimised over the autoregressive policy (conditional logits (P, N, V),
  L-BFGS with the exact gradient, then Newton on the gradient); its minimiser is pi*_beta
  (beta l = R + c);
* step rewards (:func:`step_rewards`) r(h, a) = beta (log pi(a|h) - log ref(a|h)), a (P, N, V)
  table; along a response they sum to beta l(y), the trajectory's DPO implicit reward (so
  differences of sums are the DPO logits: consistent with the preferences);
* at the DPO minimiser pi*(a|h) = ref(a|h) e^{(Q*(h, a) - V*(h)) / beta} (soft VI on the tree),
  so r(h, a) = V*(ha) - V*(h) on an internal edge and R(y) - V*(h) on the last: **the outcome
  reward plus the potential-based shaping Phi(h') - Phi(h) with Phi = V*_beta** (Phi = 0 after
  the end) [derived here]. Hence soft value iteration at any temperature lam with the step
  rewards on the edges (:func:`edge_soft_vi`) gives the same policy as with the outcome reward
  (Ng et al. 1999's invariance, which carries over to the soft Bellman operator: Q shifts by
  Phi(h) per node), and |r| <= max R - min R (V* lies between the extreme rewards): bounded.

Registered ``oprl`` (kind ``policy-optimization``, a token-tree task): the L-BFGS iterates of the
trajectory-DPO fit (conditional log-probabilities), ``target_gap`` = KL(pi_k || pi*_beta).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit, logsumexp

from theorylab.algorithms.planning.kl_policy_gradient import log_softmax, weighted_score
from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
    kl_scored_sequences,
)
from theorylab.algorithms.registry import register
from theorylab.mdps.token_tree import TreeTask

PAPERS = ("001#56",)


def step_rewards(task: TreeTask, cond_logp: np.ndarray, beta: float) -> np.ndarray:
    """(P, N, V) OPRL's implicit step rewards beta (log pi(a|h) - log ref(a|h))."""
    return beta * (cond_logp - np.log(task.ref_cond))


def path_sums(task: TreeTask, edge: np.ndarray) -> np.ndarray:
    """(P, Y) the sum of an edge table ``edge (P, N, V)`` along every response's path."""
    return (edge[:, task.token_nodes, task.tokens] * task.token_mask).sum(-1)


def dpo_loss(task: TreeTask, logits: np.ndarray, beta: float) -> tuple[float, np.ndarray]:
    """The population trajectory-DPO loss (pairs ref x ref, Bradley-Terry labels on R) and its
    gradient in the conditional logits (P, N, V)."""
    ref_seq = task.ref_logprobs  # (P, Y)
    l_seq = task.sequence_logprobs(log_softmax(logits)) - ref_seq  # (P, Y) log pi / ref
    w = np.exp(ref_seq)[:, :, None] * np.exp(ref_seq)[:, None, :]  # (P, Y, Y') pair weights
    r = task.mean_reward
    p = expit(r[:, :, None] - r[:, None, :])  # (P, Y, Y') P(y > y')
    z = beta * (l_seq[:, :, None] - l_seq[:, None, :])  # the DPO logit
    val = float(-(w * (p * log_expit(z) + (1 - p) * log_expit(-z))).sum() / task.n_prompts)
    dz = w * (expit(z) - p) * beta / task.n_prompts  # dL / dz
    d_seq = dz.sum(2) - dz.sum(1)  # (P, Y) dL / d log pi(y)
    return val, weighted_score(task, logits, d_seq)


def fit_dpo(task: TreeTask, beta: float, max_iter: int = 500, polish: int = 2):
    """(cond_logp (P, N, V) of the fit, list of the iterates' conditional log-probabilities):
    L-BFGS on the loss, then ``polish`` Newton steps on its gradient (the loss is flat to float
    precision near the minimum, which stops L-BFGS near 1e-7 in log-probability; the Hessian by
    central differences of the exact gradient, solved by pseudo-inverse: the logits of a node are
    shift-invariant)."""
    shape = task.ref_cond.shape
    its = [np.log(task.ref_cond)]

    def fun(x):
        val, g = dpo_loss(task, x.reshape(shape), beta)
        return val, g.reshape(-1)

    res = minimize(
        fun, its[0].reshape(-1), jac=True, method="L-BFGS-B",
        callback=lambda x: its.append(log_softmax(x.reshape(shape))),
        options={"gtol": 1e-15, "ftol": 0.0, "maxiter": int(max_iter), "maxcor": 50},
    )  # fmt: skip
    x, h = res.x, 1e-5
    for _ in range(polish):
        g = fun(x)[1]
        H = np.stack([(fun(x + h * e)[1] - fun(x - h * e)[1]) / (2 * h) for e in np.eye(x.size)])
        x = x - np.linalg.pinv(0.5 * (H + H.T), rcond=1e-10) @ g
        its.append(log_softmax(x.reshape(shape)))
    return log_softmax(x.reshape(shape)), its


def edge_soft_vi(task: TreeTask, edge: np.ndarray, leaf: np.ndarray, lam: float):
    """(Q (P, N, V), the conditional log-policy (P, N, V)) of soft value iteration at temperature
    ``lam`` relative to the reference, with reward ``edge[h, a]`` on every edge and ``leaf[y]`` at
    the end: Q(h, a) = edge(h, a) + V(ha) or + leaf(y), V(h) = lam log sum_a ref(a|h)
    e^{Q(h, a) / lam}, children first; lam = 0 is hard VI, V(h) = max_a Q(h, a), and its policy
    is NaN (the argmax set is read off Q)."""
    child_node, child_resp = task.children()
    P, N, V = edge.shape
    log_ref = np.log(task.ref_cond)
    q, v = np.zeros((P, N, V)), np.zeros((P, N))
    for h in range(N - 1, -1, -1):
        for a in range(V):
            c, y = child_node[h, a], child_resp[h, a]
            q[:, h, a] = edge[:, h, a] + (leaf[:, y] if y >= 0 else v[:, c])
        v[:, h] = q[:, h].max(-1) if lam == 0 else lam * logsumexp(log_ref[:, h] + q[:, h] / lam,
                                                                     axis=-1)  # fmt: skip
    if lam == 0:
        return q, np.full(q.shape, np.nan)
    return q, log_ref + (q - v[..., None]) / lam


@register("oprl", kind="policy-optimization", problem="token-tree", papers=PAPERS)
def oprl(problem, iterations, beta: float = 0.5) -> PolicyPath:
    """OPRL's implicit PRM (trajectory DPO on a token tree): the L-BFGS iterates of its fit."""
    if not isinstance(problem, TreeTask):
        raise ValueError(f"oprl runs on a token-tree task (e.g. tokentree-eos:V=3,L=3), got "
                         f"{type(problem).__name__}")  # fmt: skip
    K = check_iterations("oprl", iterations)
    beta = check_number("oprl", "beta", beta)
    fit, its = fit_dpo(problem, beta, max_iter=K)
    its = (its + [fit] * (K + 1))[: K + 1]  # converged: hold the fit
    conds = np.stack(its)  # (K+1, P, N, V)
    seqs = np.stack([problem.sequence_logprobs(c) for c in conds])  # (K+1, P, Y)
    return kl_scored_sequences(problem, seqs, beta, conds, {"beta": beta, "task": problem.name})
