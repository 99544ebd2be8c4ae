"""BroRL (Hu et al. 2025, "BroRL: Scaling Reinforcement Learning via Broadened Exploration",
arXiv 2510.01180): the one-step RL update on a softmax over a finite vocabulary and the exact
probability, over the N rollouts, that it grows the probability mass of the correct tokens. Seed
row 002-004#G2 (``seed-catalogue-002-004.md#G2``).

What was read. [V] the abstract (one-step RL assumption; sampled tokens always expand the correct
mass; unsampled tokens may gain or lose "depending on their distribution and the net reward
balance"; the unsampled effect diminishes as the number N of rollouts per prompt grows) and, from
a third-party summary of Section 3 (not the paper's PDF), the printed mass-balance equation

    dQ_pos = (eta / N) [ (R_c - S_R) Q_neg A_2 + (S_R - R_w) Q_pos B_2
                         + S_R (Q_pos U_neg,2 - Q_neg U_pos,2) ],

with rewards R_c >= 0 >= R_w of correct and incorrect tokens, the "batch mood"
S_R = R_c P_pos + R_w P_neg (P_pos, P_neg: the probability mass of the sampled correct /
incorrect tokens), Q_pos, Q_neg the total correct / incorrect mass, A_2, B_2 the sums of p_i^2
over the sampled correct / incorrect tokens and U_pos,2, U_neg,2 those over the unsampled ones.

What was reconstructed [A]: the logit update that yields exactly that equation to first order,

    dz_i = (eta / N) p_i (R_i 1[i in S] - S_R),      S = the distinct tokens among N draws,

(the logit gradient of (eta / N) sum_{j in S} p_j R_j), and dQ_pos its first-order effect
sum_i p_i dz_i (c_i - Q_pos) through the softmax Jacobian (``correct_mass_rate``). The first two
terms (sampled tokens) are >= 0 for every S; the third (unsampled tokens) has the sign of S_R
times a difference and vanishes as S fills the vocabulary, which it does with probability
-> 1 as N grows. [M] The exact probability that dQ_pos > 0 over the N i.i.d. draws from p:
every subset S of the vocabulary enumerated, P(distinct draws = S) by inclusion-exclusion,
P(S) = sum_{T subset S} (-1)^{|S|-|T|} p(T)^N (``set_probabilities``; V <= 16).

Deviations: a single prompt's vocabulary (the paper's token-level picture); the PPO machinery of
the paper's large-scale runs (ProRL recipe, N = 512) is not reproduced. The run ``brorl`` of
:mod:`~theorylab.algorithms.deep.regression_runs` applies the update to each prompt's responses
of a token tree as the vocabulary (sequence-level softmax).

Arrays: ``p`` (V,) a distribution with p > 0; ``correct`` (V,) bool; ``sampled`` (V,) bool or
(M, V) bool for M sets at once.
"""

from __future__ import annotations

import numpy as np

MAX_VOCAB = 16  # 2^16 sets for the exact enumeration


def _check(p: np.ndarray, correct: np.ndarray, r_c: float, r_w: float) -> None:
    p, correct = np.asarray(p), np.asarray(correct)
    if p.ndim != 1 or correct.shape != p.shape:
        raise ValueError(f"p and correct must be (V,) arrays of one shape, got {p.shape} and "
                         f"{correct.shape}")  # fmt: skip
    if not (p > 0).all() or abs(p.sum() - 1.0) > 1e-9:
        raise ValueError("p must be a distribution with every entry > 0")
    if not r_c >= 0 >= r_w or r_c == r_w:
        raise ValueError(f"rewards need R_c >= 0 >= R_w and R_c > R_w, got R_c={r_c}, R_w={r_w}")


def logit_update(p, correct, sampled, n: int, *, r_c=1.0, r_w=-1.0, eta=1.0) -> np.ndarray:
    """(..., V) dz_i = (eta / n) p_i (R_i 1[i in S] - S_R), S_R = sum_{j in S} p_j R_j."""
    rewards = np.where(correct, r_c, r_w)  # (V,)
    s = np.asarray(sampled, dtype=float)  # (..., V)
    mood = (s * p * rewards).sum(-1, keepdims=True)  # (..., 1) S_R
    return eta / n * p * (rewards * s - mood)


def correct_mass_rate(p, correct, dz) -> np.ndarray:
    """(...) first-order change of Q_pos = sum_{i correct} softmax(z)_i under z -> z + dz:
    sum_i p_i dz_i (c_i - Q_pos) (the softmax Jacobian)."""
    c = np.asarray(correct, dtype=float)
    return (p * dz * (c - (p * c).sum())).sum(-1)


def all_sets(V: int) -> np.ndarray:
    """(2^V, V) bool: every subset of the vocabulary, row m the binary digits of m."""
    if not 1 <= V <= MAX_VOCAB:
        raise ValueError(f"exact enumeration needs 1 <= V <= {MAX_VOCAB}, got V={V}")
    return ((np.arange(2**V)[:, None] >> np.arange(V)) & 1).astype(bool)


def set_probabilities(p, n: int) -> np.ndarray:
    """(2^V,) P(the distinct tokens among n i.i.d. draws from p are exactly S), S = all_sets(V)
    row m, by inclusion-exclusion over the subsets T of S (a Moebius transform)."""
    if n < 1:
        raise ValueError(f"the number of rollouts N must be >= 1, got {n!r}")
    sets = all_sets(len(p))
    f = (sets @ np.asarray(p, dtype=float)) ** n  # (2^V,) P(all draws in T)
    for i in range(len(p)):  # Moebius inversion over the subset lattice, one bit at a time
        bit = sets[:, i]
        f[bit] -= f[~bit]
    return f


def growth_probability(p, correct, n: int, *, r_c=1.0, r_w=-1.0) -> float:
    """P over n rollouts that the one-step update grows the correct mass (dQ_pos > 0), exact."""
    _check(p, correct, r_c, r_w)
    sets = all_sets(len(p))
    rate = correct_mass_rate(p, correct, logit_update(p, correct, sets, n, r_c=r_c, r_w=r_w))
    return float(set_probabilities(p, n)[rate > 0].sum())


def sample_sets(p, n: int, draws: int, rng: np.random.Generator) -> np.ndarray:
    """(draws, V) bool: the distinct tokens of each of ``draws`` independent batches of n
    rollouts (a multinomial count > 0)."""
    return rng.multinomial(n, p, size=draws) > 0


def brorl_iterates(seq_logp, correct, steps: int, n: int | None, rng, *, eta, r_c=1.0, r_w=-1.0):
    """[(P, Y)] sequence log-probabilities after 0..steps updates, each prompt's responses the
    vocabulary (z = log pi), S from n rollouts per prompt (n None: every response, the N -> oo
    limit), each step dz = eta p (R 1_S - S_R) (eta is the paper's eta / N, so that the limit
    is the same step for every n). The iterates at every step (len steps + 1)."""
    z = np.array(seq_logp, dtype=float)
    out = [z.copy()]
    for _ in range(steps):
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        for x in range(z.shape[0]):
            s = np.ones(z.shape[1], bool) if n is None else sample_sets(p[x], n, 1, rng)[0]
            z[x] += logit_update(p[x], correct[x], s, 1, r_c=r_c, r_w=r_w, eta=eta)
        z -= np.logaddexp.reduce(z, axis=1, keepdims=True)
        out.append(z.copy())
    return out


def small_n_losses(p, correct, n: int, *, r_c=1.0, r_w=-1.0) -> tuple[float, float]:
    """(P(dQ_pos < 0), P(some unsampled correct token's logit falls relative to the mass-weighted
    mean, i.e. its probability drops to first order)) over n rollouts, exact."""
    _check(p, correct, r_c, r_w)
    sets = all_sets(len(p))
    dz = logit_update(p, correct, sets, n, r_c=r_c, r_w=r_w)  # (M, V)
    rate = correct_mass_rate(p, correct, dz)
    dp = p * (dz - (p * dz).sum(-1, keepdims=True))  # (M, V) first-order d p_i
    lose = ((dp < 0) & ~sets & np.asarray(correct)).any(-1)
    prob = set_probabilities(p, n)
    return float(prob[rate < 0].sum()), float(prob[lose].sum())


__all__ = [
    "all_sets",
    "brorl_iterates",
    "correct_mass_rate",
    "growth_probability",
    "logit_update",
    "sample_sets",
    "set_probabilities",
    "small_n_losses",
]
