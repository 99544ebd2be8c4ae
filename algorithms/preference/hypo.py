r"""HyPO and the coverage dichotomy of offline preference learning: DPO's minimisers under
partial coverage, RLHF's bounded-reward policy, and HyPO's online KL term, exactly.

Seed reference: ``seed-catalogue-000.md#45``. Paper: Song, Swamy, Sun et al., "The Importance of
Online Data: Understanding Preference Fine-tuning via Coverage", NeurIPS 2024, arXiv:2406.01462.
Card: docs/algorithms/hypo.md.

What was read [V]: the abstract and a third-party summary (global coverage: the offline data
cover every response; local / partial coverage: they cover the policies in a KL ball around the
reference; offline contrastive methods like DPO need global coverage, RLHF (reward model + online
RL with the reverse KL) needs only partial coverage; HyPO = DPO's offline loss plus a reverse-KL
regulariser estimated on the policy's own samples). The theorems' statements and constants were
not read; the instance and everything computed below are ours [M].

Population setting (one context; responses Y, a full-support reference ``ref (Y,)``, a reward r,
BTL preferences p_ij = sigma(r_i - r_j), pair weights ``mu (Y, Y)`` of the offline data, beta the
KL weight; h = log pi - log ref):

    L_DPO(pi)  = sum_{i<j} mu_ij [ -p_ij log sigma(beta (h_i - h_j))
                                   - p_ji log sigma(beta (h_j - h_i)) ]
    L_HyPO(pi) = L_DPO(pi) + lam KL(pi || ref).

L_DPO depends on pi only through the differences of h on the pairs the data contain. With C the
responses the data compare (one connected component) and U the others, its minimum is attained by
every pi with beta (h_i - h_j) = r_i - r_j on C -- whatever mass pi puts on U. The family
pi_t = (1 - t) Gibbs_C + t ref_U / ref(U), t in [0, 1), is therefore made of exact DPO minimisers
and KL(pi_t || ref) -> log(1 / ref(U)) as t -> 1: unbounded as ref(U) -> 0 (and the true
regularised value J(pi_t) follows the unseen responses' reward). RLHF instead fits a reward in a
bounded class (values in [0, R]) and plays its Gibbs policy, whose KL to ref is at most R / beta
whatever the reward on U (:func:`rlhf_kl_sup`). HyPO's minimiser is unique: KL(pi || ref)
decomposes as KL(m || ref(C)) + m KL(pi_C || ref_C) + (1 - m) KL(pi_U || ref_U), m = pi(C), so pi_U
= ref_U / ref(U) and m / (1 - m) = ref(C) e^{-K_C} / ref(U) with K_C = KL(pi_C || ref_C); what
remains is a smooth problem on C (:func:`hypo_minimiser` solves the full problem over all logits;
the claim checks it against this reduction).

Registered algorithm ``hypo`` (kind ``preference-offline``, a KL bandit with one-hot features):
per context, the empirical DPO loss on the data (mean over the n comparisons) plus lam rho(s)
KL(pi(.|s) || ref(.|s)) -- the reverse KL HyPO estimates online is taken exactly -- minimised over
the logits (scipy L-BFGS-B on the smooth objective; unique minimiser for lam > 0). lam = 0 is
offline DPO's empirical minimiser reached from h = 0 (unique on strongly connected data).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit, logsumexp, softmax

from theorylab.algorithms.registry import register
from theorylab.mdps.kl_bandit import KLBandit, kl_rows
from theorylab.mdps.preference import PairwiseDataset, PreferenceError


class HyPOError(PreferenceError):
    """Bad input to HyPO (weights, features, the problem) or a failed solve."""


def dpo_loss(h: np.ndarray, wins: np.ndarray, beta: float) -> float:
    """sum_{i,j} wins[i, j] (-log sigma(beta (h_i - h_j))): ``h (Y,)``, ``wins (Y, Y)`` the
    (expected or counted) weight of i beating j."""
    i, j = np.nonzero(wins)  # only the compared pairs (h may be -inf off the data)
    return float(-(wins[i, j] * log_expit(beta * (h[i] - h[j]))).sum())


def _dpo_grad(h: np.ndarray, wins: np.ndarray, beta: float) -> np.ndarray:
    d = beta * (h[:, None] - h[None, :])
    g = wins * expit(-d) * beta  # d/dh_i of -log sigma(beta(h_i - h_j)) is -g_ij
    return -(g.sum(1) - g.sum(0))


def population_wins(mu: np.ndarray, r: np.ndarray) -> np.ndarray:
    """wins[i, j] = (mu_ij + mu_ji) sigma(r_i - r_j): ``mu (Y, Y)`` the weights of the compared
    pairs (an unordered pair's weight is mu_ij + mu_ji), BTL labels."""
    mu = np.asarray(mu, float)
    return (mu + mu.T) * expit(np.asarray(r)[:, None] - np.asarray(r)[None, :])


def hypo_objective(z, ref, wins, beta: float, lam: float, weight: float = 1.0):
    """L_DPO + lam weight KL(softmax(log ref + z) || ref) and its gradient in ``z (Y,)`` (the
    logits' offset from log ref; h = z - log-normaliser, which L_DPO does not see)."""
    logpi = np.log(ref) + z - logsumexp(z, b=ref)
    pi = np.exp(logpi)
    h = logpi - np.log(ref)
    kl = float(pi @ h)
    val = dpo_loss(h, wins, beta) + lam * weight * kl
    grad = _dpo_grad(h, wins, beta)  # in h; shifts of h cost nothing, so also in z
    grad = grad + lam * weight * pi * (h - kl)  # d KL / dz
    return val, grad


def hypo_minimiser(ref, wins, beta: float, lam: float, weight: float = 1.0) -> np.ndarray:
    """argmin over pi of :func:`hypo_objective` (``ref (Y,)``, ``wins (Y, Y)``), from z = 0, by
    L-BFGS-B to a gradient norm below 1e-10; ``(Y,)``."""
    ref = np.asarray(ref, dtype=np.float64)
    res = minimize(
        hypo_objective,
        np.zeros(ref.size),
        args=(ref, np.asarray(wins, float), beta, lam, weight),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 5000},
    )
    g = np.abs(res.jac).max()
    if g > 1e-7:
        raise HyPOError(f"HyPO minimiser: L-BFGS-B stopped at gradient {g:.1e} ({res.message})")
    return softmax(np.log(ref) + res.x)


def dpo_minimiser_family(ref, r, covered, beta: float, t: float) -> np.ndarray:
    """pi_t = (1 - t) Gibbs on the covered responses + t ref on the others (renormalised): an
    exact DPO population minimiser for every t in [0, 1) (module docstring)."""
    ref = np.asarray(ref, float)
    covered = np.asarray(covered, bool)
    g = np.where(covered, ref * np.exp((np.asarray(r) - np.max(r)) / beta), 0.0)
    u = np.where(covered, 0.0, ref)
    if not covered.any() or covered.all():
        raise HyPOError("the family needs covered and uncovered responses")
    return (1 - t) * g / g.sum() + t * u / u.sum()


def rlhf_kl_sup(ref, r, covered, beta: float, R: float, grid: int = 201) -> float:
    """sup of KL(Gibbs(r_hat) || ref) over the rewards r_hat with values in [0, R] that the data
    cannot tell from r (r_hat - r constant on the covered responses, free elsewhere): a grid over
    the shift and, the objective being convex in each free reward, the corners 0 and R on U."""
    import itertools

    ref, r = np.asarray(ref, float), np.asarray(r, float)
    covered = np.asarray(covered, bool)
    rc = r[covered]
    lo, hi = -rc.min(), R - rc.max()
    if lo > hi:
        raise HyPOError(f"the covered rewards span {np.ptp(rc):.3g} > R = {R}")
    best = 0.0
    idx = np.flatnonzero(~covered)
    for shift in np.linspace(lo, hi, grid):
        for corner in itertools.product((0.0, R), repeat=idx.size):
            rh = np.where(covered, r + shift, 0.0)
            rh[idx] = corner
            pi = softmax(np.log(ref) + rh / beta)
            best = max(best, float(kl_rows(pi, ref)))
    return best


@dataclass
class HyPOResult:
    """Per seed: ``suboptimality (B,)`` exact KL-regularised, ``kl (B,)`` E_rho KL(pi || ref),
    ``policy (B, S, A)``, ``queries (B,)``."""

    policy: np.ndarray
    suboptimality: np.ndarray
    kl: np.ndarray
    queries: np.ndarray


def _one_hot(bandit: KLBandit) -> None:
    S, A, d = bandit.phi.shape
    if d != S * A or not np.array_equal(bandit.phi.reshape(S * A, d), np.eye(d)):
        raise HyPOError(
            f"hypo optimises a tabular policy: it needs one-hot features (d = S A), got "
            f"{bandit.name} with phi of shape {bandit.phi.shape}"
        )


@register(
    "hypo",
    kind="preference-offline",
    problem="pref-bandit",
    bounds=(),
    feedback=("btl",),
    feedback_note="the DPO loss is on pairs",
    papers=("000#45",),
)
def hypo(bandit, data, lam: float = 1.0) -> HyPOResult:
    """HyPO (Song et al. 2024): the empirical DPO loss plus lam E_rho KL(pi || ref), minimised
    exactly per context; lam = 0 is offline DPO's empirical minimiser from h = 0."""
    if not isinstance(bandit, KLBandit):
        raise HyPOError(f"hypo needs a KL bandit (gshf-coverage), got {type(bandit).__name__}")
    if not isinstance(data, PairwiseDataset):
        raise HyPOError(f"hypo fits pairwise comparisons, got {type(data).__name__}")
    if not (isinstance(lam, (int, float)) and lam >= 0):
        raise HyPOError(f"hypo: lam (the KL weight) must be >= 0, got {lam!r}")
    _one_hot(bandit)
    S, A = bandit.S, bandit.A
    B, n = data.n_seeds, data.n
    pol = np.empty((B, S, A))
    win = np.where(data.y == 1, data.a1, data.a0)
    lose = np.where(data.y == 1, data.a0, data.a1)
    for b in range(B):
        for s in range(S):
            m = data.states[b] == s
            wins = np.zeros((A, A))
            np.add.at(wins, (win[b, m], lose[b, m]), 1.0 / n)
            pol[b, s] = hypo_minimiser(bandit.ref[s], wins, bandit.eta, lam, bandit.rho[s])
    sub = np.array([bandit.suboptimality(p) for p in pol])
    kl = np.array([float(bandit.rho @ kl_rows(p, bandit.ref)) for p in pol])
    q = data.queries if data.queries is not None else np.full(B, n)
    return HyPOResult(pol, sub, kl, q)
