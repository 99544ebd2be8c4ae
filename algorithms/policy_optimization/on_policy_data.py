r"""Preference fine-tuning objectives on a categorical policy: offline MLE, offline DPO, forward KL
and on-policy reverse-KL policy gradient, as exact (expected) plain-gradient steps in the logits.

Seed row ``seed-catalogue-002-004.md#E12``: F. Tajwar, A. Singh, A. Sharma, R. Rafailov,
J. Schneider, T. Xie, S. Ermon, C. Finn, A. Kumar, "Preference Fine-Tuning of LLMs Should
Leverage Suboptimal, On-Policy Data", arXiv:2404.14367 (ICML 2024). An analysis paper without a
theorem in the catalogue row; the library implements its didactic bandit and the claim
``on-policy-data-reaches-peak`` checks what is exactly true of it.

What was read [V] (the abstract and a third-party overview of the paper, through the stored
pages; the paper's sections, equations and constants were not read): "approaches that use
on-policy sampling or attempt to push down the likelihood on certain responses (i.e., employ a
'negative gradient') outperform offline and maximum likelihood objectives"; "Mode-seeking
objectives are able to alter probability mass on specific bins of a categorical distribution at a
fast rate compared to maximum likelihood"; the didactic bandits have known ground-truth rewards,
and the hard case puts the optimal responses in low-probability regions of the reference policy.
Reconstructed [A] (the catalogue row and this module):

* the bandit ``tokentree-bins`` (:mod:`theorylab.mdps.families.token_tree`): B bins, reference
  pi_ref = softmax(-(y - mode)^2 / (2 width^2)), reward r(y) = exp(-(y - peak)^2 / (2 w_r^2));
  the peak bin b* sits far from the reference's mode (pi_ref(b*) = 5e-5 at the defaults);
* the parametrisation: **softmax logits theta (B,), plain (Euclidean) gradient steps theta <-
  theta - eta grad L(theta), the same learning rate eta for every objective**, from theta_0 =
  log pi_ref. Every gradient is the exact expectation over the data or the policy (no sampling);
* offline data: the ``coverage`` most likely bins S of pi_ref (default B // 2); pairs y1, y2
  i.i.d. from pi_ref restricted to S, the preferred response the higher-reward one (ties split
  evenly): the preferred-sample law D(y) = sum over ordered pairs (:func:`preferred_distribution`);
* ``mle``: maximum likelihood on preferred samples, ``L = -E_{y ~ D} log pi(y)``, gradient
  step ``Delta theta = eta (D - pi)``;
* ``dpo``: offline DPO over the same pairs, ``L = -E_(w, l) log sigma(beta_dpo ((theta_w -
  theta_l) - (log pi_ref(w) - log pi_ref(l))))`` (the normaliser log Z cancels in a logit
  difference): step ``+eta c`` on theta_w and ``-eta c`` on theta_l, ``c = beta_dpo
  sigma(-z)`` per pair weight -- the negative gradient on the dispreferred bin;
* ``forward-kl``: supervised learning on samples of the target pi* = pi_ref e^(r/beta) / Z,
  ``L = KL(pi* || pi)``: ``Delta theta = eta (pi* - pi)``;
* ``reverse-kl``: on-policy policy gradient on ``E_pi r - beta KL(pi || pi_ref)`` (= -beta
  KL(pi || pi*) + const): ``Delta theta = eta pi (g - E_pi g)``, ``g = r - beta (log pi - log
  pi_ref)``.

What is exactly true (derived here; checked by claim ``on-policy-data-reaches-peak`` on every
iterate): each of the four steps has coordinates summing to 0, so the mean logit is conserved and
the centred logits c = log pi - mean(log pi) move by exactly the step. Offline data that miss b*
(D(b*) = 0) give ``Delta c(b*) = -eta pi_k(b*) < 0`` (MLE) and ``Delta c(b*) = 0`` (DPO: b* is in
no pair). As ``max_y c_k(y) >= mean c_k = 0``, every offline iterate obeys

    pi_k(b*) <= exp(c_k(b*) - max_y c_k(y)) <= exp(c_0(b*)) = pi_ref(b*) / GM(pi_ref),

GM the geometric mean of pi_ref over the B bins -- a bound fixed by the reference alone, for any
eta and any number of steps (2.2e-2 at the defaults, against pi*(b*) = 0.41 at beta = 0.1 and
0.93 at beta = 0.05). Writing r = beta log(pi*/pi_ref) + beta log Z in g, the on-policy step is

    Delta c(b*) = eta beta pi_k(b*) (KL(pi_k || pi*) + log(pi*(b*) / pi_k(b*))),

positive whenever pi_k(b*) <= pi*(b*): on-policy sampling always pulls the missing bin up, and
the iteration's only fixed point is pi*. Measured (claim, eta = 1, beta = 0.1, B = 20, mode 3,
peak 15, coverage 10): the three identities hold to 1.5e-14; offline MLE and DPO never put more
than 5.1e-5 on b* (2000 and 60000 steps); on-policy reverse-KL PG reaches 0.9 pi*(b*) at step
15119.
Its KL to pi* then stays near 1.3e-2 through 60000 steps: bin 16 (pi* = 1.4e-2) was starved to
1e-4 on the way and recovers at a rate proportional to its own mass (plain softmax gradients),
so the claim checks the reach and the identities, not a KL tolerance.

The speed ordering (the row's (i), "mode-seeking < MLE" in steps to 90% of the mass), measured in
this parametrisation, is the opposite: with plain logit gradients from a far-away mode the
on-policy reverse-KL step on b* is proportional to pi(b*) (5e-5 at the start; the mass on b* even
falls first, to 1e-7 at beta = 0.05, while the policy gathers on nearer bins), while the
forward-KL step is pi*(b*) - pi(b*) = O(1). On the defaults (beta = 0.1, target 0.9 pi*(b*))
forward KL needs 26 steps at eta = 1 and reverse KL 15119 (eta = 0.1: 264 vs 151166); at beta =
0.05 (pi*(b*) = 0.93) reverse KL does not reach 0.9 within 20000 steps at eta = 1, 5 or 20. Under
natural gradients the reverse-KL step ``theta <- theta + (1/beta) (g - E g)`` reaches pi* in one
step, so (i) depends on the geometry of the update (and, in the paper, presumably on the reward
being reachable through neighbouring bins of a function approximator, which a tabular softmax
lacks [A]); the claim reports the counts and checks (ii).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log_softmax

from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
)
from theorylab.algorithms.registry import register
from theorylab.mdps.token_tree import TokenTreeTask

PAPERS = ("002-004#E12",)
OBJECTIVES = ("mle", "dpo", "forward-kl", "reverse-kl")
OFFLINE = ("mle", "dpo")


def check_bins(task) -> TokenTreeTask:
    """The task as a categorical policy (one prompt, one token), or a one-line error."""
    if not isinstance(task, TokenTreeTask) or task.L != 1 or task.n_prompts != 1:
        raise ValueError(
            "on-policy-data runs on a categorical policy: a token tree with L = 1 and one prompt "
            f"(e.g. tokentree-bins:B=20), got {getattr(task, 'name', type(task).__name__)!r}"
        )
    return task


def covered_bins(ref_logp: np.ndarray, coverage: int) -> np.ndarray:
    """(B,) bool: the ``coverage`` most likely bins of pi_ref (the offline data's support)."""
    B = ref_logp.size
    if isinstance(coverage, bool) or not isinstance(coverage, (int, np.integer)):
        raise ValueError(f"on-policy-data: coverage must be an integer in 1..{B}, got {coverage!r}")
    if not 1 <= coverage <= B:
        raise ValueError(f"on-policy-data: coverage must be an integer in 1..{B}, got {coverage!r}")
    mask = np.zeros(B, dtype=bool)
    mask[np.argsort(-ref_logp, kind="stable")[: int(coverage)]] = True
    return mask


def pair_weights(ref_logp: np.ndarray, reward: np.ndarray, support: np.ndarray) -> np.ndarray:
    """(B, B) W[w, l]: the probability that an ordered pair drawn i.i.d. from pi_ref restricted to
    ``support`` has preferred response w and dispreferred l (a tie r_w = r_l: half each way)."""
    q = np.where(support, np.exp(ref_logp), 0.0)
    q = q / q.sum()  # (B,)
    joint = q[:, None] * q[None, :]  # (B, B) ordered pairs
    win = (reward[:, None] > reward[None, :]) + 0.5 * (reward[:, None] == reward[None, :])
    return 2.0 * joint * win * ~np.eye(q.size, dtype=bool) + np.diag(np.diag(joint))


def preferred_distribution(ref_logp, reward, support) -> np.ndarray:
    """(B,) D(y): the law of the preferred response of a pair (:func:`pair_weights`)."""
    return pair_weights(ref_logp, reward, support).sum(axis=1)


def target(ref_logp: np.ndarray, reward: np.ndarray, beta: float) -> np.ndarray:
    """(B,) log pi* = log softmax(log pi_ref + r / beta): the reverse-KL-regularised optimum."""
    return log_softmax(ref_logp + reward / beta)


def step_direction(theta, objective, *, ref_logp, reward, beta, data, pairs, beta_dpo):
    """(B,) minus the exact gradient of the objective's loss in the logits (module docstring)."""
    logp = log_softmax(theta)
    p = np.exp(logp)
    if objective == "mle":
        return data - p
    if objective == "forward-kl":
        return np.exp(target(ref_logp, reward, beta)) - p
    if objective == "reverse-kl":
        g = reward - beta * (logp - ref_logp)
        return p * (g - p @ g)
    # dpo: z[w, l] = beta_dpo ((theta_w - theta_l) - (ref_w - ref_l)); weight pairs[w, l]
    h = theta - ref_logp
    c = pairs * beta_dpo * expit(-beta_dpo * (h[:, None] - h[None, :]))  # (B, B)
    np.fill_diagonal(c, 0.0)  # a pair of one bin with itself carries no preference
    return c.sum(axis=1) - c.sum(axis=0)


def on_policy_data(
    task,
    iterations: int,
    *,
    objective: str = "reverse-kl",
    eta: float = 1.0,
    beta: float = 0.05,
    coverage: int | None = None,
    beta_dpo: float = 1.0,
) -> PolicyPath:
    """K exact plain-gradient steps in the logits from pi_ref on one of ``OBJECTIVES``; target:
    pi* = pi_ref e^(r/beta) / Z. ``coverage`` None: the B // 2 most likely bins."""
    task = check_bins(task)
    if objective not in OBJECTIVES:
        raise ValueError(
            f"on-policy-data: objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}"
        )
    K = check_iterations("on-policy-data", iterations)
    eta, beta, beta_dpo = (
        check_number("on-policy-data", "eta", eta),
        check_number("on-policy-data", "beta", beta),
        check_number("on-policy-data", "beta_dpo", beta_dpo),
    )
    ref_logp, reward = task.ref_logprobs[0], task.mean_reward[0]  # (B,), (B,)
    coverage = max(1, ref_logp.size // 2) if coverage is None else coverage
    support = covered_bins(ref_logp, coverage)
    pairs = pair_weights(ref_logp, reward, support)
    data = preferred_distribution(ref_logp, reward, support)
    theta = ref_logp.copy()
    iterates = [ref_logp]
    for _ in range(K):
        theta = theta + eta * step_direction(
            theta,
            objective,
            ref_logp=ref_logp,
            reward=reward,
            beta=beta,
            data=data,
            pairs=pairs,
            beta_dpo=beta_dpo,
        )
        iterates.append(log_softmax(theta))
    logps = np.stack(iterates)  # (K+1, B)
    p = np.exp(logps)
    star = target(ref_logp, reward, beta)
    objective_values = p @ reward  # (K+1,)
    kl_ref = (p * (logps - ref_logp)).sum(-1)
    p_star = np.exp(star)
    return PolicyPath(
        objective=objective_values,
        regularised=objective_values - beta * kl_ref,
        entropy=-(p * logps).sum(-1),
        target_gap=(p * (logps - star)).sum(-1),
        target_value=float(p_star @ reward - beta * (p_star @ (star - ref_logp))),
        policies=logps[:, None, None, :],  # (K+1, 1, 1, B): the tree's (P, N, V) conditionals
        config={
            "objective": objective,
            "eta": float(eta),
            "beta": float(beta),
            "coverage": int(coverage),
            "beta_dpo": float(beta_dpo),
            "parametrisation": "softmax logits, plain gradient",
            "peak": int(np.argmax(reward)),
            "data_mass_on_peak": float(data[np.argmax(reward)]),
        },
    )


@register("on-policy-data", kind="policy-optimization", problem="token-tree", papers=PAPERS)
def on_policy_data_entry(
    problem, iterations, objective="reverse-kl", eta=1.0, beta=0.05, coverage=None, beta_dpo=1.0
):
    """Offline MLE / DPO vs forward KL vs on-policy reverse-KL PG on a categorical policy."""
    return on_policy_data(
        problem,
        iterations,
        objective=objective,
        eta=eta,
        beta=beta,
        coverage=coverage,
        beta_dpo=beta_dpo,
    )
