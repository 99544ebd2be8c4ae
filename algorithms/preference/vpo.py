r"""VPO offline: the value-regularised reward MLE of a finite-response KL bandit, exactly.

Seed reference: ``seed-catalogue-002-004.md#E7``. Paper: Cen, Mei, Goshvadi, Dai, Yang, Yang,
Schuurmans, Chi, Dai, "Value-Incentivized Preference Optimization: A Unified Approach to Online and
Offline RLHF", ICLR 2025, arXiv:2405.19320. Card: docs/algorithms/vpo.md.

What was read [V]: the abstract and the introduction (VPO "regularizes the maximum-likelihood
estimate of the reward function with the corresponding value function, modulated by a sign to
indicate whether the optimism or pessimism is chosen"; guarantees "matching the rates of their
standard RL counterparts"; the reward calibration by a policy pi_cal exploits the shift ambiguity
of Bradley-Terry). The theorem statements and their constants were not read: the objective below
is reconstructed from the abstract, the catalogue row and the loss already in the registry
(``vpo`` in ``algorithms/deep/preference_losses.py``) [A].

Objective (one context per row s, weight rho(s); responses A, reference ``ref (S, A)``, KL weight
beta, rewards r (S, A) in the box [-R, R] (the bounded reward class of the theory [A])):

    F(r) = sum_{i, j} wins_s[i, j] (-log sigma(r_i - r_j))
           - sign alpha rho(s) ( beta log sum_a ref(a|s) e^{r_a / beta} - <pi_cal(.|s), r> ),

where wins_s[i, j] is the share of the n comparisons in context s won by i over j, beta log Z(r)
= max_pi E_pi r - beta KL(pi || ref) is the value of r (closed form) and <pi_cal, r> calibrates the
shift. sign = -1 (offline, pessimism) penalises a reward whose value is high: a response the data
seldom compare cannot get a large reward for free. F is convex in r for sign = -1; the played policy
is the Gibbs policy ref e^{r / beta} / Z. alpha = 0 is the plain reward MLE (in the box) and its
Gibbs policy -- DPO's minimiser in the bounded class -- the baseline the paper improves on.

Registered ``vpo-offline`` (kind ``preference-offline``): sign = -1, alpha_n = alpha / sqrt(n) (the
1/sqrt(n) scaling of the pessimism weight is our reading of "matching the rates" [A]), pi_cal =
the reference policy (``calibration="reference"``) or the empirical chosen responses
(``"chosen"``, RPO's practical baseline). Solved per context by projected Newton on the smooth
convex objective (analytic gradient and Hessian) to a projected-gradient norm below 1e-10.

Measured (claim ``vpo-offline-pessimism``, instance ``spurious-coverage``, eps_n = 1/n so that the
spurious response is compared a Poisson number of times whatever n): the plain MLE's
sub-optimality stays flat (it plays the spurious response whenever s wins its comparisons) while
VPO's falls; its log-log slope is measured, not assumed (the KL-regularised sub-optimality is
second order in the reward error on the covered responses).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, log_expit, logsumexp, softmax

from theorylab.algorithms.registry import register
from theorylab.mdps.kl_bandit import KLBandit
from theorylab.mdps.preference import PairwiseDataset, PreferenceError

CALIBRATIONS = ("reference", "chosen")


class VPOError(PreferenceError):
    """Bad input to VPO / RPO / XPO's bandit twins, or a failed solve."""


def regularised_objective(r, ref, cal, wins, beta: float, alpha: float, sign: int = -1):
    """F(r) of the module docstring and its gradient in ``r (A,)`` (one context; ``ref, cal
    (A,)``, ``wins (A, A)``; alpha already carries rho(s))."""
    d = r[:, None] - r[None, :]  # (A, A): r_i - r_j
    i, j = np.nonzero(wins)
    nll = float(-(wins[i, j] * log_expit(d[i, j])).sum())
    g = wins * expit(-d)  # d/dr_i of -log sigma(r_i - r_j) is -g_ij, d/dr_j is +g_ij
    grad = -(g.sum(1) - g.sum(0))
    lz = float(logsumexp(r / beta, b=ref))
    pi = ref * np.exp(r / beta - lz)
    val = nll - sign * alpha * (beta * lz - float(cal @ r))
    grad = grad - sign * alpha * (pi - cal)
    return val, grad


def _hessian(r, ref, wins, beta: float, alpha: float, sign: int) -> np.ndarray:
    """The Hessian of :func:`regularised_objective` in ``r (A,)``: ``(A, A)``."""
    d = r[:, None] - r[None, :]
    c = (wins + wins.T) * expit(d) * expit(-d)  # symmetric pair curvatures
    H = np.diag(c.sum(1)) - c
    pi = softmax(np.log(ref) + r / beta)
    return H - sign * alpha / beta * (np.diag(pi) - np.outer(pi, pi))


def regularised_rewards(
    ref, cal, wins, beta: float, alpha: float, R: float, sign: int = -1, r0=None
) -> np.ndarray:
    """argmin of :func:`regularised_objective` over the box [-R, R]^A by projected Newton (the
    coordinates at a bound whose gradient points out are held, a Newton step on the others --
    the Hessian shifted to be positive definite where sign = +1 makes it indefinite --
    backtracking on the projected path) from ``r0`` (default 0), to a projected-gradient norm below
    1e-10; ``(A,)``."""
    ref = np.asarray(ref, dtype=np.float64)
    cal, wins = np.asarray(cal, float), np.asarray(wins, float)
    x = np.zeros(ref.size) if r0 is None else np.clip(np.asarray(r0, dtype=np.float64), -R, R)
    args = (ref, cal, wins, beta, alpha, sign)
    f, g = regularised_objective(x, *args)
    for _ in range(500):
        held = ((x <= -R) & (g > 0)) | ((x >= R) & (g < 0))
        free = ~held
        if not free.any() or np.abs(g[free]).max() <= 1e-10:
            return x
        H = _hessian(x, ref, wins, beta, alpha, sign)[np.ix_(free, free)]
        lo = float(np.linalg.eigvalsh(H)[0])  # sign = +1: not convex, shift H to be positive
        H = H + (max(0.0, -lo) * 1.01 + 1e-10) * np.eye(H.shape[0])  # (the shift is flat)
        step = np.zeros_like(x)
        step[free] = -np.linalg.solve(H, g[free])
        t = 1.0
        while t > 1e-12:
            y = np.clip(x + t * step, -R, R)
            fy, gy = regularised_objective(y, *args)
            if fy <= f + 1e-4 * (g @ (y - x)):
                break
            t *= 0.5
        if fy >= f and np.abs(y - x).max() < 1e-14:
            break
        x, f, g = y, fy, gy
    held = ((x <= -R) & (g > 0)) | ((x >= R) & (g < 0))
    gn = float(np.abs(g[~held]).max()) if (~held).any() else 0.0
    if sign == -1 and gn > 1e-7:
        raise VPOError(f"value-regularised MLE: projected Newton stopped at gradient {gn:.1e}")
    return x


def wins_matrix(data: PairwiseDataset, b: int, s: int, A: int) -> np.ndarray:
    """wins[i, j] = (1/n) #{comparisons of seed b in context s won by i over j}: ``(A, A)``."""
    win = np.where(data.y[b] == 1, data.a1[b], data.a0[b])
    lose = np.where(data.y[b] == 1, data.a0[b], data.a1[b])
    m = data.states[b] == s
    w = np.zeros((A, A))
    np.add.at(w, (win[m], lose[m]), 1.0 / data.n)
    np.fill_diagonal(w, 0.0)  # a response compared with itself carries no information
    return w


def calibration(kind: str, ref: np.ndarray, wins: np.ndarray) -> np.ndarray:
    """pi_cal (A,): the reference row, or the empirical distribution of the chosen responses
    (the reference row where the context has no comparison)."""
    if kind == "reference":
        return ref
    tot = wins.sum()
    return wins.sum(1) / tot if tot > 0 else ref


@dataclass
class RegularisedFit:
    """Per seed: ``suboptimality (B,)`` exact KL-regularised, ``policy (B, S, A)`` the Gibbs policy
    of ``rewards (B, S, A)``, ``queries (B,)``."""

    policy: np.ndarray
    rewards: np.ndarray
    suboptimality: np.ndarray
    queries: np.ndarray


def check_problem(bandit, data, name: str) -> KLBandit:
    """The one-hot KL bandit and pairwise data the bandit twins need, else an error naming them."""
    if not isinstance(bandit, KLBandit):
        raise VPOError(f"{name} needs a KL bandit (spurious-coverage), got {type(bandit).__name__}")
    if not isinstance(data, PairwiseDataset):
        raise VPOError(f"{name} fits pairwise comparisons, got {type(data).__name__}")
    S, A, d = bandit.phi.shape
    if d != S * A or not np.array_equal(bandit.phi.reshape(S * A, d), np.eye(d)):
        raise VPOError(
            f"{name} fits a tabular reward: it needs one-hot features (d = S A), got "
            f"{bandit.name} with phi of shape {bandit.phi.shape}"
        )
    return bandit


def check_weight(name: str, key: str, value) -> float:
    """A finite weight >= 0, else an error naming the algorithm, the key and the value."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise VPOError(f"{name}: {key} must be a number >= 0, got {value!r}")
    if not np.isfinite(value):
        raise VPOError(f"{name}: {key} must be finite, got {value!r}")
    return float(value)


def check_bound(name: str, R) -> float:
    """The reward bound R > 0 (finite), else an error naming the algorithm and the value."""
    R = check_weight(name, "R", R)
    if R == 0:
        raise VPOError(f"{name}: R (the reward bound) must be > 0, got 0")
    return R


def fit_regularised(
    bandit: KLBandit, data: PairwiseDataset, weight: float, cal: str, R: float
) -> RegularisedFit:
    """The pessimistic value-regularised MLE with weight ``weight`` per seed and context, its
    Gibbs policy and exact sub-optimality (shared by ``vpo-offline`` and ``rpo-offline``)."""
    if cal not in CALIBRATIONS:
        raise VPOError(f"calibration must be one of {CALIBRATIONS}, got {cal!r}")
    S, A, B = bandit.S, bandit.A, data.n_seeds
    rew = np.empty((B, S, A))
    for b in range(B):
        for s in range(S):
            w = wins_matrix(data, b, s, A)
            c = calibration(cal, bandit.ref[s], w)
            a = weight * bandit.rho[s]
            rew[b, s] = regularised_rewards(bandit.ref[s], c, w, bandit.eta, a, R)
    pol = softmax(np.log(bandit.ref) + rew / bandit.eta, axis=-1)
    sub = np.array([bandit.suboptimality(p) for p in pol])
    q = data.queries if data.queries is not None else np.full(B, data.n)
    return RegularisedFit(pol, rew, sub, q)


@register(
    "vpo-offline",
    kind="preference-offline",
    problem="pref-bandit",
    bounds=(),
    feedback=("btl",),
    feedback_note="the value-regularised MLE fits pairs",
    papers=("002-004#E7",),
)
def vpo_offline(
    bandit, data, alpha: float = 1.0, R: float = 4.0, calibration: str = "reference"
) -> RegularisedFit:
    """VPO offline (Cen et al. 2025): the reward MLE minus alpha / sqrt(n) times its calibrated
    value (pessimism), per context, and its Gibbs policy; alpha = 0 is the plain MLE."""
    bandit = check_problem(bandit, data, "vpo-offline")
    alpha = check_weight("vpo-offline", "alpha", alpha)
    R = check_bound("vpo-offline", R)
    return fit_regularised(bandit, data, alpha / np.sqrt(data.n), calibration, R)
