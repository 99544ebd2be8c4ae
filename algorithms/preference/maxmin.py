r"""MaxMin-RLHF: EM over a mixture of BTL groups and the egalitarian (max-min) KL-regularised
policy, against the single-reward RLHF policy.

Seed reference: ``seed-catalogue-002-004.md#E9``. Paper: Chakraborty, Qiu, Yuan, Koppel, Huang,
Manocha, Bedi, Wang, "MaxMin-RLHF: Alignment with Diverse Human Preferences", ICML 2024,
arXiv:2402.08925. Card: docs/algorithms/maxmin-rlhf.md.

What was read [V]: the abstract and the catalogue row (an impossibility result for a single reward;
a mixture of preference distributions learned by expectation-maximisation; a MaxMin objective from
the egalitarian principle). The EM, the objective's KL form and the instance are reconstructed
[A]/[M]; the paper's theorem constants were not read.

Problem (:class:`theorylab.mdps.kl_bandit.GroupKLBandit`): K groups with rewards r_k = <theta_k,
phi> and population weights w_k; a user of group k labels pairs by BTL on r_k. Group utility
U_k(pi) = E_s [<pi, r_k> - eta KL(pi || ref)].

* Single-reward RLHF: the BTL MLE on the pooled data (users' groups unknown), then its Gibbs
  policy -- K = 1 of the algorithm below, identical to ``gshf-offline`` with C = 0.
* EM ([A]): each user u gives L comparisons; E-step: the posterior q_uk ∝ w_k prod_i
  sigma(+-<theta_k, x_ui>); M-step: theta_k the weighted constrained BTL MLE (weights q_uk,
  :func:`mle.btl_loss` with counts), w_k = mean_u q_uk. Started from K perturbations of the pooled
  MLE (deterministic: +- the leading principal direction of the per-user score differences).
* MaxMin ([M] KL form): pi_MM = argmax_pi min_k U_k(pi). By minimax duality (U_k concave in pi,
  the simplex compact) max_pi min_k U_k = min_{lambda in simplex} max_pi sum_k lambda_k U_k
  = min_lambda eta E_s log sum_a ref exp(sum_k lambda_k r_k / eta), a convex problem in lambda,
  and pi_MM = Gibbs(sum_k lambda*_k r_k) (:func:`theorylab.mdps.kl_bandit.maxmin_dual`); the
  claim checks it against the primal solved by cvxpy (:func:`maxmin_primal`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import log_expit, logsumexp

from theorylab.algorithms.preference.mle import (
    MLEError,
    ball_constrained_minimiser,
    btl_loss,
    solve_clarabel,
)
from theorylab.algorithms.registry import register
from theorylab.mdps.kl_bandit import GroupKLBandit, GroupPairwiseDataset, kl_rows, maxmin_dual


class MaxMinError(MLEError):
    """Bad input to MaxMin-RLHF (K, iterations, the problem, the data)."""


def group_utilities(bandit: GroupKLBandit, policy: np.ndarray) -> np.ndarray:
    """U_k(pi) for every true group: ``policy (S, A)`` -> ``(K,)``."""
    kl = bandit.rho @ kl_rows(policy, bandit.ref)
    return np.einsum("s,sa,ksa->k", bandit.rho, policy, bandit.group_rewards) - bandit.eta * kl


def maxmin_primal(ref, rho, rewards: np.ndarray, eta: float) -> tuple[np.ndarray, float]:
    """max over pi of min_k U_k(pi) by cvxpy (Clarabel): the independent answer."""
    import cvxpy as cp

    K, S, A = rewards.shape
    pi = cp.Variable((S, A), nonneg=True)
    t = cp.Variable()
    kl = sum(rho[s] * cp.sum(cp.rel_entr(pi[s, :], ref[s])) for s in range(S))
    cons = [cp.sum(pi, axis=1) == 1]
    for k in range(K):
        cons.append(t <= sum(rho[s] * (pi[s, :] @ rewards[k, s]) for s in range(S)) - eta * kl)
    prob = cp.Problem(cp.Maximize(t), cons)
    solve_clarabel(prob, "max-min primal", MaxMinError)
    p = np.clip(pi.value, 0, None)
    return p / p.sum(-1, keepdims=True), float(t.value)


def _user_loglik(X: np.ndarray, y: np.ndarray, thetas: np.ndarray) -> np.ndarray:
    """sum over a user's comparisons of log P(label | theta_k): ``X (U, L, d)``, ``y (U, L)``,
    ``thetas (K, d)`` -> ``(U, K)``."""
    z = np.einsum("uld,kd->ukl", X, thetas)
    return (y[:, None, :] * log_expit(z) + (1 - y[:, None, :]) * log_expit(-z)).sum(-1)


def em_groups(X, y, K: int, B: float, iterations: int) -> tuple[np.ndarray, np.ndarray]:
    """EM for a K-group BTL mixture over users (module docstring): ``X (U, L, d)``, ``y (U, L)``
    -> (thetas (K, d), weights (K,))."""
    U, L, d = X.shape
    flat_X, flat_y = X.reshape(U * L, d), y.reshape(U * L)
    pooled = ball_constrained_minimiser(btl_loss(flat_X, flat_y), d, B)
    if K == 1:
        return pooled[None], np.ones(1)
    # start: the pooled MLE pushed along the leading direction of the per-user residual scores
    resid = np.einsum("uld,ul->ud", X, y - 0.5)
    direction = np.linalg.svd(resid - resid.mean(0), full_matrices=False)[2][0]
    direction -= direction.mean()
    direction *= 0.5 * B / max(np.linalg.norm(direction), 1e-12)
    thetas = np.stack([pooled + c * direction for c in np.linspace(-1, 1, K)])
    w = np.full(K, 1.0 / K)
    for _ in range(iterations):
        ll = _user_loglik(X, y, thetas) + np.log(w)  # (U, K)
        q = np.exp(ll - logsumexp(ll, axis=1, keepdims=True))
        w = q.mean(0)
        for k in range(K):
            counts = np.repeat(q[:, k], L)
            thetas[k] = ball_constrained_minimiser(btl_loss(flat_X, flat_y, counts), d, B)
    return thetas, w


def policy_of_groups(bandit: GroupKLBandit, rewards: np.ndarray, weights: np.ndarray):
    """The max-min policy of fitted group ``rewards (K, S, A)`` (``weights (K,)`` unused: the
    egalitarian objective ignores group sizes): ``(S, A)``."""
    return maxmin_dual(bandit.ref, bandit.rho, rewards, bandit.eta)[1]


@dataclass
class MaxMinResult:
    """Per seed: ``suboptimality (B,)`` (max-min value - min_k U_k(pi_hat), exact), ``utilities
    (B, K)`` the true groups' U_k(pi_hat), ``thetas (B, K_fit, d)``, ``weights (B, K_fit)``,
    ``policy (B, S, A)``, ``queries (B,)``."""

    policy: np.ndarray
    suboptimality: np.ndarray
    utilities: np.ndarray
    thetas: np.ndarray
    weights: np.ndarray
    queries: np.ndarray


@register(
    "maxmin-rlhf",
    kind="preference-offline",
    problem="pref-bandit",
    bounds=(),
    feedback=("btl",),
    feedback_note="the EM mixes pairwise BTL likelihoods per user",
    papers=("002-004#E9",),
)
def maxmin_rlhf(bandit, data, K: int = 2, em_iterations: int = 50) -> MaxMinResult:
    """MaxMin-RLHF (Chakraborty et al. 2024): EM over K BTL groups from users' comparisons, then
    the max-min KL-regularised policy of the fitted rewards; K = 1 is single-reward RLHF."""
    if not isinstance(bandit, GroupKLBandit):
        raise MaxMinError(
            f"maxmin-rlhf needs a group bandit (maxmin-groups), got {type(bandit).__name__}"
        )
    if not isinstance(data, GroupPairwiseDataset):
        raise MaxMinError("maxmin-rlhf needs users' comparisons: run it with design='groups'")
    if isinstance(K, bool) or int(K) != K or K < 1:
        raise MaxMinError(f"maxmin-rlhf: K (groups fitted) must be a positive integer, got {K!r}")
    if isinstance(em_iterations, bool) or int(em_iterations) != em_iterations or em_iterations < 1:
        raise MaxMinError(f"maxmin-rlhf: em_iterations must be >= 1, got {em_iterations!r}")
    K = int(K)
    nB, L = data.n_seeds, data.per_user
    X = data.differences(bandit).reshape(nB, -1, L, bandit.d)
    y = np.asarray(data.y, float).reshape(nB, -1, L)
    pols = np.empty((nB, bandit.S, bandit.A))
    th = np.empty((nB, K, bandit.d))
    ws = np.empty((nB, K))
    for b in range(nB):
        th[b], ws[b] = em_groups(X[b], y[b], K, bandit.B, int(em_iterations))
        pols[b] = policy_of_groups(bandit, np.einsum("sad,kd->ksa", bandit.phi, th[b]), ws[b])
    util = np.stack([group_utilities(bandit, p) for p in pols])
    sub = bandit.optimal_value() - util.min(-1)
    q = data.queries if data.queries is not None else np.full(nB, data.n)
    return MaxMinResult(pols, sub, util, th, ws, q)
