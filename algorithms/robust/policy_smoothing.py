r"""Policy smoothing: a certified lower bound on the return under an l2 observation attack.

Seed row ``seed-catalogue-002-004.md#D2``: A. Kumar, A. Levine, S. Feizi, "Policy Smoothing for
Provably Robust Reinforcement Learning" (ICLR 2022, arXiv:2106.11420).

What was read [V] (the abstract, through the search tool): the agent "adds a Gaussian noise to
its observation at each time-step before passing it through the policy function"; the main
result is an *adaptive* Neyman-Pearson lemma (the perturbation at a time step may depend on the
past observations, states and actions), from which the certificate "guarantee[s] that the final
total reward obtained by policy smoothing remains above a certain threshold".

Reconstructed [A] (the certificate's form; the theorem's text was not found): with the
perturbations (delta_1..delta_H) of an episode bounded in total, sqrt(sum_h ||delta_h||^2) <= B,
and noise N(0, sigma^2 I) added at every step, for every threshold r

    P_attack[R >= r] >= Phi(Phi^{-1}(P_clean[R >= r]) - B / sigma)                     (cert)

(randomized smoothing's Gaussian bound, Cohen, Rosenfeld & Kolter 2019, applied to the
episode's concatenated noise; the adaptive lemma is what makes it hold for adaptive attacks).
P_clean[R >= r] is replaced by a one-sided Clopper-Pearson lower bound at level alpha from n
clean Monte-Carlo episodes, so (cert) holds with probability >= 1 - alpha over the samples. The
certified p-th percentile of the attacked return is the largest r with certificate > 1 - p (the
smallest return when there is none: the certificate is then vacuous).

The instance [A] (a combination lock, ``combination-lock:H=..,A=2``): at path stage h the
agent observes a scalar o_h = m_h + delta_h + sigma xi_h (m_h its margin: how clearly the
observation shows the correct move) and its base policy plays the correct action iff the
smoothed observation is > 0, otherwise it falls off the path; the return is the lock's: 1 iff
all H moves are correct. One *critical* stage has a small margin (``critical_margin``), the
others ``margin``. Clean, P[R >= 1] = prod_h Phi(m_h / sigma) exactly; under a deterministic
attack spending delta_h <= 0 at stage h it is prod_h Phi((m_h + delta_h) / sigma). The
``critical`` attack spends the whole budget at the critical stage (delta = -B there), where the
event is a half-space in that stage's noise, so (cert) is nearly tight (exactly when the other
stages never fail); ``spread`` spends B / sqrt(H) at every stage.

Registered as ``policy-smoothing`` (kind ``policy-optimization``; the K + 1 "iterates" are the
budgets B_k = k budget / K): objective[k] the exact attacked P[R >= 1] (= E R) at B_k,
``regularised`` the certificate at B_k from ``samples`` clean episodes, ``target_gap`` their
difference (negative: the certificate failed), ``target_value`` the exact clean P[R >= 1],
``policies`` (K + 1, H) the attacked probability of the correct move per stage.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import beta as beta_dist
from scipy.stats import norm

from theorylab.algorithms.policy_optimization.path import PolicyPath, check_iterations, check_number
from theorylab.algorithms.registry import register

PAPERS = ("002-004#D2",)
ATTACKS = ("critical", "spread")


def budget_shift(budget: float, sigma: float, horizon: int) -> float:
    """The shift B / sigma of (cert) in Phi^{-1} units; B is the l2 norm of the whole
    episode's perturbations, so the horizon does not enter."""
    return budget / sigma


def clopper_pearson_lower(successes: int, n: int, alpha: float) -> float:
    """One-sided (1 - alpha) lower confidence bound on a binomial probability."""
    if successes <= 0:
        return 0.0
    return float(beta_dist.ppf(alpha, successes, n - successes + 1))


def certified_probability(p_lower: float, budget: float, sigma: float, horizon: int) -> float:
    """(cert): Phi(Phi^{-1}(p_lower) - B / sigma), 0 when p_lower = 0."""
    if p_lower <= 0.0:
        return 0.0
    return float(norm.cdf(norm.ppf(p_lower) - budget_shift(budget, sigma, horizon)))


def certified_percentile(thresholds: np.ndarray, certificates: np.ndarray, p: float,
                         minimum: float) -> float:  # fmt: skip
    """The certified p-th percentile of the attacked return: the largest threshold r whose
    certificate on P[R >= r] exceeds 1 - p, else the smallest return (vacuous)."""
    ok = np.asarray(certificates) > 1.0 - p
    return float(np.max(np.asarray(thresholds)[ok])) if ok.any() else float(minimum)


def margins(H: int, margin: float, critical_margin: float, critical_step: int) -> np.ndarray:
    """(H,) the observation margin m_h of each stage."""
    m = np.full(H, float(margin))
    m[critical_step] = float(critical_margin)
    return m


def attack_shifts(m: np.ndarray, budget: float, attack: str, critical_step: int) -> np.ndarray:
    """(H,) the perturbation delta_h (<= 0: towards falling) of a deterministic attack with total
    l2 norm ``budget``."""
    d = np.zeros(m.size)
    if attack == "critical":
        d[critical_step] = -budget
    else:
        d[:] = -budget / math.sqrt(m.size)
    return d


def success_probabilities(m: np.ndarray, shifts: np.ndarray, sigma: float) -> np.ndarray:
    """(H,) the probability Phi((m_h + delta_h) / sigma) of the correct move at each stage."""
    return norm.cdf((m + shifts) / sigma)


def clean_successes(m: np.ndarray, sigma: float, n: int, rng: np.random.Generator) -> int:
    """How many of n clean smoothed episodes open the lock (Monte Carlo: every stage's
    smoothed observation m_h + sigma xi_h > 0)."""
    obs = m[None, :] + sigma * rng.standard_normal((n, m.size))  # (n, H)
    return int(np.all(obs > 0.0, axis=1).sum())


@register("policy-smoothing", kind="policy-optimization", problem="tabular", papers=PAPERS)
def policy_smoothing_path(
    problem,
    iterations,
    sigma: float = 1.0,
    budget: float = 2.0,
    margin: float = 4.0,
    critical_margin: float = 1.0,
    critical_step: int = 0,
    attack: str = "critical",
    samples: int = 10_000,
    alpha: float = 0.01,
    mc_seed: int = 0,
):
    """Policy smoothing (Kumar, Levine & Feizi 2022) on a combination lock: cert vs attack."""
    who = "policy-smoothing"
    K = check_iterations(who, iterations)
    sigma = check_number(who, "sigma", sigma)
    budget = check_number(who, "budget", budget, positive=False)
    margin = check_number(who, "margin", margin)
    critical_margin = check_number(who, "critical_margin", critical_margin)
    name = str(getattr(problem, "name", ""))
    H = getattr(problem, "H", None)
    if not name.startswith("combination-lock") or problem.A != 2:
        raise ValueError(
            f"{who} runs on a two-action combination lock (combination-lock:H=..,A=2), got "
            f"{name or type(problem).__name__}"
        )
    if (
        isinstance(critical_step, bool)
        or not isinstance(critical_step, (int, np.integer))
        or not (0 <= critical_step < H)
    ):
        raise ValueError(
            f"{who}: critical_step must be an integer in [0, {H}), got {critical_step!r}"
        )
    if attack not in ATTACKS:
        raise ValueError(f"{who}: attack must be critical or spread, got {attack!r}")
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise ValueError(f"{who}: samples must be a positive integer, got {samples!r}")
    if not (isinstance(alpha, float) and 0 < alpha < 1):
        raise ValueError(f"{who}: alpha must be a float in (0, 1), got {alpha!r}")
    m = margins(H, margin, critical_margin, int(critical_step))
    k = clean_successes(m, sigma, int(samples), np.random.default_rng(mc_seed))
    p_lower = clopper_pearson_lower(k, int(samples), alpha)
    budgets = budget * np.arange(K + 1) / K
    per_stage = np.stack(
        [
            success_probabilities(m, attack_shifts(m, b, attack, critical_step), sigma)
            for b in budgets
        ]
    )  # (K + 1, H)
    attacked = per_stage.prod(axis=1)
    cert = np.array([certified_probability(p_lower, b, sigma, H) for b in budgets])
    return PolicyPath(
        objective=attacked,
        regularised=cert,
        entropy=np.zeros(K + 1),
        target_gap=attacked - cert,
        target_value=float(success_probabilities(m, np.zeros(H), sigma).prod()),
        policies=per_stage,
        config={
            "sigma": sigma,
            "budgets": budgets.tolist(),
            "margins": m.tolist(),
            "attack": attack,
            "samples": int(samples),
            "alpha": float(alpha),
            "clean_successes": k,
            "p_hat": k / int(samples),
            "p_lower": p_lower,
            "certified_median": [
                certified_percentile(np.array([1.0]), [c], 0.5, 0.0) for c in cert
            ],
            "horizon": int(H),
        },
    )
