r"""Pessimistic MLE (Zhu, Jordan, Jiao 2023, Algorithm 1) and the greedy-on-MLE contrast.

Paper: Zhu, Jordan, Jiao, "Principled RLHF from Pairwise or K-wise Comparisons", ICML 2023,
arXiv:2301.11270, section 3 (Lemma 3.1, Algorithm 1, Theorem 3.2; Theorem 3.9 for greedy's
failure). Card: docs/algorithms/preference-mle.md. Bound carried: ``zjj-thm3.2`` (provenance [M]:
the theorem text was not readable here; the form is the reference's, consistent with the [S]
third-party reproduction; see the card for what was checked).

Contextual bandit with known features phi (S, A, d), contexts s ~ rho, theta* in Theta_B. From
pairwise data with differences x_i and Sigma_D = (1/n) sum_i x_i x_i^T:

    gamma  = 1 / (2 + e^{-LB} + e^{LB})                (min of sigma' on [-LB, LB]; L = max ||phi||)
    f      = C sqrt( (d + log(1/delta)) / (gamma^2 n) + lambda B^2 )          (Lemma 3.1 radius)
    Theta  = { theta : ||theta - theta_hat||_{Sigma_D + lambda I} <= f }
    J_hat(pi) = min_{theta in Theta} <theta, u_pi>,   u_pi = E_{s~rho} E_{a~pi(s)} phi(s, a) - v
    pi_PE  = argmax_pi J_hat(pi)                                                 (Algorithm 1)

Deviation (exact, documented in the reference): the confidence set is the ellipsoid alone, without
the intersection with Theta_B. Then the inner minimum is in closed form,

    J_hat(pi) = <theta_hat, u_pi> - f ||u_pi||_{(Sigma_D + lambda I)^{-1}},

a lower bound on the paper's J_hat (equal when the ellipsoid lies inside Theta_B). It is concave
in the stochastic policy pi (u_pi is linear in pi), so the max over pi is a second-order cone
program, solved with cvxpy (Clarabel). It is *not* per-context greedy: the norm couples the
contexts. Theorem 3.2's proof goes through unchanged with it: on the event theta* in Theta,
SubOpt(pi_PE) <= J(pi*) - J_hat(pi*) <= 2 f ||u_{pi*}||_{(Sigma_D + lambda I)^{-1}}, which is
the bound this module evaluates (``bound``) with C given (C = 1 unless told; [M] unspecified).

The greedy contrast plays argmax_a <theta_hat, phi(s, a)> in each context (ties: first action).

Which margin gamma is taken at (issue 26). The margins the MLE's curvature argument meets are
<theta, x_i> with theta in Theta_B and x_i = phi(s, a1) - phi(s, a0), so they reach max ||x|| B
(up to 2 L B), where sigma' is smaller than at L B (on the Theorem 3.9 instance: slope 0.046 at
L B vs 0.0067 at the largest reachable margin). gamma here stays at L B because that is the
formula as printed: the reference records gamma = 1/(2 + e^{-LB} + e^{LB}) with L = max ||phi||
as [S] (verbatim in the third-party reproduction) and flags the 2 L B reading as unchecked; the
paper's text beyond the abstract is not among the stored pages (searched: only the arXiv /
OpenReview abstracts of 2301.11270), so no sentence of the paper can be quoted either way. What
was measured instead (claim ``zjj-mle-radius-coverage``): with C = 1 the printed-formula radius
covers theta* on every seed, 2.5x (B = 0.5) to 8.4x (B = 2) above the 90% quantile of
||theta_hat - theta*||_{Sigma_D + lambda I}, so the L B reading is not undersized in practice;
at max ||x|| B the radius would grow by sigma'(LB) / sigma'(max||x|| B) (6.8x on Theorem 3.9).
The claim pins the library's f to the printed formula to 1e-9, so either change is visible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from theorylab.algorithms.preference.mle import (
    MLEError,
    ball_constrained_minimiser,
    btl_loss,
    fit_btl,
    solve_clarabel,
)
from theorylab.mdps.preference import (
    ComparisonBandit,
    PairwiseDataset,
    coverage_term,
    sigmoid_slope_min,
)


def curvature(L: float, B: float) -> float:
    """gamma = 1 / (2 + e^{-LB} + e^{LB}) (Zhu-Jordan-Jiao's Lemma 3.1 constant, [S])."""
    return sigmoid_slope_min(L * B)


def mle_radius(
    n: int, d: int, delta: float, lam: float, B: float, L: float, C: float = 1.0
) -> float:
    """f(n, d, delta, lambda) = C sqrt((d + log(1/delta)) / (gamma^2 n) + lambda B^2)."""
    if not 0.0 < delta < 1.0:
        raise MLEError(f"delta must lie in (0, 1), got {delta!r}")
    if n < 1 or lam < 0 or C <= 0:
        raise MLEError(f"need n >= 1, lambda >= 0, C > 0; got n={n}, lambda={lam}, C={C}")
    g = curvature(L, B)
    return C * math.sqrt((d + math.log(1.0 / delta)) / (g * g * n) + lam * B * B)


def greedy_policy(bandit: ComparisonBandit, theta_hat: np.ndarray) -> np.ndarray:
    """argmax_a <theta_hat, phi(s, a)> per context: ``theta_hat (B, d)`` -> ``(B, S)`` int."""
    return np.einsum("sad,bd->bsa", bandit.phi, np.atleast_2d(theta_hat)).argmax(axis=-1)


def pessimistic_value(
    bandit: ComparisonBandit, policy, theta_hat, M: np.ndarray, radius: float, v=None
) -> float:
    """J_hat(pi) = <theta_hat, u_pi> - f ||u_pi||_{M^-1}, one seed (``M = Sigma_D + lam I``)."""
    u = bandit.feature_expectation(policy) - (0.0 if v is None else np.asarray(v, float))
    return float(theta_hat @ u - radius * math.sqrt(u @ np.linalg.solve(M, u)))


def pessimistic_policy(
    bandit: ComparisonBandit, theta_hat: np.ndarray, M: np.ndarray, radius: float, v=None
) -> tuple[np.ndarray, float]:
    """argmax over stochastic policies ``(S, A)`` of J_hat (one seed) and its value, by cvxpy.

    theta_hat: ``(d,)``; M: ``(d, d)`` = Sigma_D + lambda I (positive definite)."""
    import cvxpy as cp

    S, A, d = bandit.phi.shape
    Lc = np.linalg.cholesky(np.linalg.inv(M))  # ||u||_{M^-1} = ||Lc^T u||
    pi = cp.Variable((S, A), nonneg=True)
    v0 = np.zeros(d) if v is None else np.asarray(v, float)
    u = sum(bandit.rho[s] * (pi[s, :] @ bandit.phi[s]) for s in range(S)) - v0
    obj = theta_hat @ u - radius * cp.norm(Lc.T @ u, 2)
    prob = cp.Problem(cp.Maximize(obj), [cp.sum(pi, axis=1) == 1])
    solve_clarabel(prob, "pessimistic policy", MLEError)
    p = np.clip(pi.value, 0.0, None)
    p /= p.sum(axis=1, keepdims=True)
    return p, pessimistic_value(bandit, p, theta_hat, M, radius, v)


@dataclass
class PessimisticMLEResult:
    """Per-seed output of :func:`fit_pessimistic_mle` (B seeds).

    theta_hat ``(B, d)``; policy ``(B, S, A)`` (pessimistic); greedy ``(B, S)`` (greedy on the
    MLE); radius f; suboptimality and greedy_suboptimality ``(B,)`` exact; pessimistic_value
    ``(B,)`` J_hat(pi_PE); coverage ``(B,)`` ||(Sigma_D + lam I)^{-1/2} u_{pi*}||; bound ``(B,)``
    = 2 f coverage (Theorem 3.2 with the given C); queries ``(B,)`` comparisons used."""

    theta_hat: np.ndarray
    policy: np.ndarray
    greedy: np.ndarray
    radius: float
    suboptimality: np.ndarray
    greedy_suboptimality: np.ndarray
    pessimistic_value: np.ndarray
    coverage: np.ndarray
    bound: np.ndarray
    queries: np.ndarray


def fit_pessimistic_mle(
    bandit: ComparisonBandit,
    data: PairwiseDataset,
    *,
    delta: float = 0.1,
    lam: float = 1e-3,
    C: float = 1.0,
    v=None,
    solver: str = "newton",
) -> PessimisticMLEResult:
    """Algorithm 1 on every seed of ``data``, with greedy-on-MLE beside it and Theorem 3.2's
    bound evaluated exactly (C = 1 [M]: the paper's constant is unspecified)."""
    theta_hat = fit_btl(bandit, data, solver=solver)
    Sigma = data.covariance(bandit)  # (B, d, d)
    f = mle_radius(data.n, bandit.d, delta, lam, bandit.B, bandit.L, C)
    B = theta_hat.shape[0]
    M = Sigma + lam * np.eye(bandit.d)
    pols = np.empty((B, bandit.S, bandit.A))
    jhat = np.empty(B)
    for b in range(B):
        pols[b], jhat[b] = pessimistic_policy(bandit, theta_hat[b], M[b], f, v)
    greedy = greedy_policy(bandit, theta_hat)
    sub = np.array([bandit.suboptimality(p) for p in pols])
    gsub = np.array([bandit.suboptimality(g) for g in greedy])
    cov = coverage_term(bandit, Sigma, bandit.optimal_policy(), lam, v)
    q = data.queries if data.queries is not None else np.full(B, data.n)
    return PessimisticMLEResult(theta_hat, pols, greedy, f, sub, gsub, jhat, cov, 2 * f * cov, q)


@dataclass
class ExactOutcomes:
    """Exact laws over the data of the Theorem 3.9 instance at one n (see :func:`zjj_thm39_exact`).

    greedy_failure: P[SubOpt(greedy) >= 0.1]; greedy_mean / pessimistic_mean: E[SubOpt];
    mass: the probability of the enumerated outcomes (1 up to the truncation tolerance)."""

    n: int
    greedy_failure: float
    greedy_mean: float
    pessimistic_mean: float
    mass: float


def zjj_thm39_exact(
    n: int,
    *,
    delta: float = 0.1,
    lam: float = 1e-3,
    C: float = 1.0,
    tail: float = 1e-12,
    pessimism: bool = True,
) -> ExactOutcomes:
    """Exact expectations over the Theorem 3.9 data by enumeration, not sampling.

    The data are sufficient through k = wins of a2 over a1 among the n - 1 comparisons of
    (a1, a2) (Binomial(n - 1, sigma(r(a2) - r(a1)))) and the single label y of (a2, a3)
    (P(a3 wins) = sigma(1)). Each (k, y) gives one MLE and one policy; outcomes are weighted by
    their exact probabilities. k is enumerated over its central range holding all but ``tail``
    of the binomial mass (all k for small n)."""
    from scipy.stats import binom

    from theorylab.mdps.preference import sigmoid, zjj_thm39

    bandit = zjj_thm39()
    r = bandit.rewards[0]
    p12, p23 = sigmoid(r[1] - r[0]), sigmoid(r[2] - r[1])  # P(a2 beats a1), P(a3 beats a2)
    lo, hi = (int(v) for v in binom.interval(1.0 - tail, n - 1, p12))
    ks = np.arange(lo, hi + 1)
    x12 = bandit.phi[0, 1] - bandit.phi[0, 0]  # a1 = a2's features minus a0 = a1's
    x23 = bandit.phi[0, 2] - bandit.phi[0, 1]
    f = mle_radius(n, bandit.d, delta, lam, bandit.B, bandit.L, C)
    # Sigma_D is the same for every outcome: (n - 1) x12 x12^T + x23 x23^T, over n
    M = (np.outer(x12, x12) * (n - 1) + np.outer(x23, x23)) / n + lam * np.eye(bandit.d)
    fail = gmean = pmean = mass = 0.0
    for y in (0, 1):
        py = p23 if y == 1 else 1.0 - p23
        for k in ks:
            w = binom.pmf(k, n - 1, p12) * py
            # two distinct rows, weighted: expand to a small dataset with the same loss
            X = np.array([x12, x12, x23])
            yy = np.array([1.0, 0.0, float(y)])
            cnt = np.array([k, n - 1 - k, 1.0])
            keep = cnt > 0
            loss = btl_loss(X[keep], yy[keep], cnt[keep])
            theta = ball_constrained_minimiser(loss, bandit.d, bandit.B)
            g = int(np.argmax(bandit.phi[0] @ theta))
            sub = float(r.max() - r[g])
            fail += w * (sub >= 0.1 - 1e-12)
            gmean += w * sub
            if pessimism:
                pol, _ = pessimistic_policy(bandit, theta, M, f)
                pmean += w * bandit.suboptimality(pol)
            mass += w
    return ExactOutcomes(n, fail, gmean, pmean if pessimism else float("nan"), mass)
