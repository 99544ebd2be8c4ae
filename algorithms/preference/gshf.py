r"""GSHF: offline (pessimistic), online (iterative, batch exploration) and hybrid preference
learning under a KL constraint, and rejection sampling toward the Gibbs policy.

Seed reference: ``seed-catalogue-000.md#35``. Paper: Xiong, Dong, Ye, Wang, Zhong, Ji, Jiang,
Zhang, "Iterative Preference Learning from Human Feedback: Bridging Theory and Practice for RLHF
under KL-Constraint", ICML 2024, arXiv:2312.11456. Card: docs/algorithms/gshf.md.

What was read [V]: the abstract and the table of contents of arXiv:2312.11456v4 (the reverse-KL
regularised contextual bandit; offline learning with pessimism (section 3), online iterative
learning with batch exploration (section 4), hybrid learning (appendix D); iterative DPO and
multi-step rejection sampling as the practical oracles). The algorithm statements and theorems
were not among the stored pages (searched 2026-11-27); everything below is reconstructed [A]/[M].

Problem (:class:`theorylab.mdps.kl_bandit.KLBandit`): J(pi) = E_s[<pi, r> - eta KL(pi || ref)],
r = <theta*, phi>, BTL comparisons, the Gibbs policy pi_r ∝ ref exp(r / eta) its maximiser.

Offline, Algorithm 1 (pessimism, [A] in the form of Zhu-Jordan-Jiao's Algorithm 1 with the KL
term added; the paper's "Option I"): theta_hat the constrained BTL MLE
(:func:`theorylab.algorithms.preference.mle.fit_btl`), M = Sigma_D + lambda I (Sigma_D normalised
by 1/n), f the Lemma 3.1 radius (:func:`pessimistic.mle_radius`, C = 1 [M]), nu = E phi(s, ref)
the reference vector ([A]: the paper's nu is "a reference vector"; ours is the reference policy's
features, which keeps u orthogonal to directions no comparison can see), and

    pi_hat = argmax_pi  <theta_hat, u_pi> - f ||u_pi||_{M^-1} - eta E_s KL(pi || ref),
    u_pi = E_s E_{a~pi} phi(s, a) - nu,

a concave program over stochastic policies (cvxpy, Clarabel, exponential cone). On the event
theta* in {||theta - theta_hat||_M <= f}, J(pi*) - J(pi_hat) <= 2 f ||u_{pi*}||_{M^-1} (the
pessimism argument goes through with the KL term unchanged: it is the same on both sides) --
the bound (card ``gshf-offline-pessimism``). With ``C = 0`` the pessimism vanishes and pi_hat is
the Gibbs policy of the MLE, which is exactly offline DPO's optimum over the log-linear policy
class pi_w ∝ ref exp(<w, phi> / eta): DPO's loss -log sigma(eta (log pi_w(a_w)/ref(a_w) -
log pi_w(a_l)/ref(a_l))) = -log sigma(<w, phi(a_w) - phi(a_l)>) is the BTL likelihood in w
(tested by minimising the DPO loss directly).

Online, Algorithm 2 (iterative, batch exploration, [M]): T rounds of m comparisons. In round t,
theta_t is the MLE on all comparisons so far (theta = 0 before any), the main agent plays
pi_t^1 = Gibbs(<theta_t, phi>) and the enhancer pi_t^2 = Gibbs(<theta_t, phi> + f_t w_t), the
Gibbs policy of an optimistic reward with the uncertainty width

    w_t(s, a) = ||phi(s, a) - E_{a'~pi_t^1(s)} phi(s, a')||_{(Sigma_t + lambda I)^{-1}}

(the paper's enhancer maximises this uncertainty relative to the main agent within a confidence
set; the per-action optimistic Gibbs policy is our reconstruction). m pairs s ~ rho, a1 ~ pi^1,
a2 ~ pi^2 are labelled by the oracle. The output is the last main agent's Gibbs policy of the MLE
on all n comparisons. Hybrid ([M], appendix D's setting): the rounds start from a share of the
offline data (``offline_fraction``), and spend the rest of the budget online.

Rejection sampling ([A]; Liu et al.'s statistical rejection sampling used by the paper's
practical oracle): draw a ~ ref, accept with probability exp((r(a) - max r) / eta), at most M
draws; if none is accepted return the M-th draw. With p = sum_a ref(a) exp((r(a) - max r) / eta)
the acceptance probability of one draw, an accepted draw has law pi_r and a rejected one
rho(a) = ref(a) (1 - exp((r(a) - max r) / eta)) / (1 - p), so the output's law is exactly

    q_M = (1 - (1 - p)^M) pi_r + (1 - p)^M rho,

and TV(q_M, pi_r) = (1 - p)^M TV(rho, pi_r) -> 0 geometrically (:func:`rejection_sampling_law`,
checked against the enumeration of every draw sequence and against Monte Carlo).

Measured (claim ``gshf-kl-regularised-rates``): see the card.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from theorylab.algorithms.preference.mle import MLEError, btl_mle, fit_btl, solve_clarabel
from theorylab.algorithms.preference.pessimistic import mle_radius
from theorylab.algorithms.registry import register
from theorylab.mdps.kl_bandit import KLBandit
from theorylab.mdps.preference import PairwiseDataset, PreferenceError


class GSHFError(MLEError):
    """Bad input to GSHF (budget, batch, fractions, the problem) or a failed solve."""


def _check_bandit(bandit, name: str) -> KLBandit:
    if not isinstance(bandit, KLBandit):
        raise GSHFError(
            f"{name} needs a KL-regularised comparison bandit (kl-bandit, gshf-coverage), got "
            f"{type(bandit).__name__}"
        )
    return bandit


def kl_pessimistic_policy(
    bandit: KLBandit, theta_hat: np.ndarray, M: np.ndarray, radius: float
) -> np.ndarray:
    """argmax over stochastic policies ``(S, A)`` of <theta_hat, u_pi> - radius ||u_pi||_{M^-1}
    - eta E_rho KL(pi || ref), u_pi = E phi(pi) - nu (one seed; cvxpy, Clarabel). With radius 0
    it is the Gibbs policy of theta_hat (returned in closed form)."""
    if radius == 0.0:
        return bandit.gibbs(bandit.phi @ theta_hat)
    import cvxpy as cp

    S, A, d = bandit.phi.shape
    Lc = np.linalg.cholesky(np.linalg.inv(M))  # ||u||_{M^-1} = ||Lc^T u||
    pi = cp.Variable((S, A), nonneg=True)
    u = (
        sum(bandit.rho[s] * (pi[s, :] @ bandit.phi[s]) for s in range(S))
        - bandit.reference_features()
    )
    kl = sum(bandit.rho[s] * cp.sum(cp.rel_entr(pi[s, :], bandit.ref[s])) for s in range(S))
    obj = theta_hat @ u - radius * cp.norm(Lc.T @ u, 2) - bandit.eta * kl
    prob = cp.Problem(cp.Maximize(obj), [cp.sum(pi, axis=1) == 1])
    solve_clarabel(prob, "KL-pessimistic policy", GSHFError)
    p = np.clip(pi.value, 1e-300, None)
    return p / p.sum(axis=1, keepdims=True)


def coverage_norm(bandit: KLBandit, policy: np.ndarray, M: np.ndarray) -> np.ndarray:
    """||E phi(pi) - nu||_{M^-1} per seed: ``policy (S, A)``, ``M (B, d, d)`` -> ``(B,)``."""
    u = np.einsum("s,sa,sad->d", bandit.rho, policy, bandit.phi) - bandit.reference_features()
    return np.sqrt(
        np.einsum(
            "i,bi->b", u, np.linalg.solve(M, np.broadcast_to(u, M.shape[:2])[..., None])[..., 0]
        )
    )


@dataclass
class GSHFResult:
    """Per seed ``(B,)``: exact KL-regularised ``suboptimality``, ``queries``; ``policy
    (B, S, A)``; ``theta_hat (B, d)``; offline only: ``bound (B,)`` = 2 f ||u_pi*||_{M^-1} and
    the radius f (nan for the iterative runs)."""

    theta_hat: np.ndarray
    policy: np.ndarray
    suboptimality: np.ndarray
    queries: np.ndarray
    bound: np.ndarray
    radius: float = math.nan


@register(
    "gshf-offline",
    kind="preference-offline",
    problem="pref-bandit",
    bounds=("gshf-offline-pessimism",),
    feedback=("btl",),
    feedback_note="the MLE and its radius are pairwise (BTL)",
    papers=("000#35",),
)
def gshf_offline(
    bandit, data, delta: float = 0.1, lam: float = 1e-3, C: float = 1.0, solver: str = "newton"
) -> GSHFResult:
    """GSHF's offline Algorithm 1 (pessimistic MLE under the KL constraint); ``C = 0``: the Gibbs
    policy of the MLE (offline DPO's optimum over log-linear policies)."""
    bandit = _check_bandit(bandit, "gshf-offline")
    if not isinstance(data, PairwiseDataset):
        raise GSHFError(f"gshf-offline fits pairwise comparisons, got {type(data).__name__}")
    if not (isinstance(C, (int, float)) and C >= 0):
        raise GSHFError(f"gshf-offline: C (the radius constant) must be >= 0, got {C!r}")
    theta_hat = fit_btl(bandit, data, solver=solver)  # (B, d)
    M = data.covariance(bandit) + lam * np.eye(bandit.d)  # (B, d, d)
    f = mle_radius(data.n, bandit.d, delta, lam, bandit.B, bandit.L, 1.0) * C
    pol = np.stack(
        [kl_pessimistic_policy(bandit, t, m, f) for t, m in zip(theta_hat, M, strict=True)]
    )
    sub = np.array([bandit.suboptimality(p) for p in pol])
    bound = 2.0 * f * coverage_norm(bandit, bandit.optimal_policy(), M)
    q = data.queries if data.queries is not None else np.full(len(pol), data.n)
    return GSHFResult(theta_hat, pol, sub, q, bound, f)


def enhancer_rewards(
    bandit: KLBandit, theta: np.ndarray, main: np.ndarray, M: np.ndarray, radius: float
) -> np.ndarray:
    """The enhancer's optimistic rewards <theta, phi> + radius w: ``theta (B, d)``, ``main
    (B, S, A)``, ``M (B, d, d)`` -> ``(B, S, A)``; w as in the module docstring."""
    mean = np.einsum("bsa,sad->bsd", main, bandit.phi)  # (B, S, d)
    diff = bandit.phi[None] - mean[:, :, None, :]  # (B, S, A, d)
    Minv = np.linalg.inv(M)  # (B, d, d)
    w = np.sqrt(np.einsum("bsai,bij,bsaj->bsa", diff, Minv, diff).clip(0.0))
    return np.einsum("sad,bd->bsa", bandit.phi, theta) + radius * w


@register(
    "gshf-iterative",
    kind="preference-offline",
    problem="pref-bandit",
    bounds=(),
    feedback=("btl",),
    feedback_note="the rounds ask pairwise (BTL) comparisons of the main agent and the enhancer",
    papers=("000#35",),
)
def gshf_iterative(
    bandit,
    data,
    oracle=None,
    batch: int = 50,
    offline_fraction: float = 0.0,
    delta: float = 0.1,
    lam: float = 1e-3,
    C: float = 1.0,
    solver: str = "newton",
) -> GSHFResult:
    """GSHF's online Algorithm 2 (main agent + optimistic enhancer, rounds of ``batch``
    comparisons) with a budget of ``data.n`` comparisons per seed; ``offline_fraction``: the
    share of ``data`` (its first comparisons) the rounds start from (hybrid; 0 = online)."""
    bandit = _check_bandit(bandit, "gshf-iterative")
    if not isinstance(data, PairwiseDataset):
        raise GSHFError(
            f"gshf-iterative starts from pairwise comparisons, got {type(data).__name__}"
        )
    if oracle is None:
        raise GSHFError("gshf-iterative asks comparisons online: it needs the runner's oracle")
    if isinstance(batch, bool) or int(batch) != batch or batch < 1:
        raise GSHFError(f"gshf-iterative: batch must be a positive integer, got {batch!r}")
    if not (isinstance(offline_fraction, (int, float)) and 0.0 <= offline_fraction <= 1.0):
        raise GSHFError(
            f"gshf-iterative: offline_fraction must lie in [0, 1], got {offline_fraction!r}"
        )
    if not (isinstance(C, (int, float)) and C >= 0):
        raise GSHFError(
            f"gshf-iterative: C (the exploration radius constant) must be >= 0, got {C!r}"
        )
    n, B = data.n, data.n_seeds
    n_off = int(round(offline_fraction * n))
    st, a0, a1, y = (np.asarray(v)[:, :n_off] for v in (data.states, data.a0, data.a1, data.y))
    oracle.queries[:] = 0
    rngs = oracle.rngs
    S, A = bandit.S, bandit.A
    while st.shape[1] < n:
        m = min(int(batch), n - st.shape[1])
        theta = _mle(bandit, st, a0, a1, y, solver)  # (B, d)
        main = bandit.gibbs(np.einsum("sad,bd->bsa", bandit.phi, theta))  # (B, S, A)
        M = _gram(bandit, st, a0, a1, lam)
        f = C * mle_radius(max(st.shape[1], 1), bandit.d, delta, lam, bandit.B, bandit.L, 1.0)
        enh = bandit.gibbs(enhancer_rewards(bandit, theta, main, M, f))
        s_new = np.stack([rng.choice(S, size=m, p=bandit.rho) for rng in rngs])  # (B, m)
        x1 = np.empty((B, m), np.int64)
        x2 = np.empty((B, m), np.int64)
        for b, rng in enumerate(rngs):
            cm, ce = main[b, s_new[b]].cumsum(-1), enh[b, s_new[b]].cumsum(-1)  # (m, A)
            x1[b] = np.minimum((rng.random((m, 1)) > cm).sum(-1), A - 1)
            x2[b] = np.minimum((rng.random((m, 1)) > ce).sum(-1), A - 1)
        y_new = oracle.compare(bandit.phi[s_new, x2], bandit.phi[s_new, x1])  # 1: x2 preferred
        st, a0, a1, y = (
            np.concatenate(p, axis=1) for p in ((st, s_new), (a0, x1), (a1, x2), (y, y_new))
        )
    theta = _mle(bandit, st, a0, a1, y, solver)
    pol = bandit.gibbs(np.einsum("sad,bd->bsa", bandit.phi, theta))
    sub = np.array([bandit.suboptimality(p) for p in pol])
    queries = oracle.queries + n_off
    return GSHFResult(theta, pol, sub, queries, np.full(B, np.nan))


def _mle(bandit: KLBandit, st, a0, a1, y, solver: str) -> np.ndarray:
    """The constrained BTL MLE per seed on the comparisons so far (0 before any)."""
    if st.shape[1] == 0:
        return np.zeros((st.shape[0], bandit.d))
    X = bandit.phi[st, a1] - bandit.phi[st, a0]  # (B, n, d)
    return btl_mle(X, y, bandit.B, solver=solver)


def _gram(bandit: KLBandit, st, a0, a1, lam: float) -> np.ndarray:
    """Sigma + lambda I with Sigma the 1/n-normalised covariance of the differences (0 if none)."""
    X = bandit.phi[st, a1] - bandit.phi[st, a0]  # (B, n, d)
    Sig = np.einsum("bni,bnj->bij", X, X) / max(X.shape[1], 1)
    return Sig + lam * np.eye(bandit.d)


# ------------------------------------------------------------------------ rejection sampling
def _acceptance(ref: np.ndarray, rewards: np.ndarray, eta: float) -> np.ndarray:
    """Per-action acceptance probabilities exp((r - max r) / eta): ``(A,)``."""
    r = np.asarray(rewards, dtype=np.float64)
    return np.exp((r - r.max()) / eta)


def rejection_sampling_law(ref, rewards, eta: float, M: int) -> np.ndarray:
    """The exact law ``(A,)`` of the M-draw rejection sampler (module docstring)."""
    ref = np.asarray(ref, dtype=np.float64)
    if isinstance(M, bool) or int(M) != M or M < 1:
        raise PreferenceError(f"M (draws) must be a positive integer, got {M!r}")
    if not eta > 0:
        raise PreferenceError(f"eta must be > 0, got {eta!r}")
    acc = _acceptance(ref, rewards, eta)
    p = float(ref @ acc)
    gibbs = np.exp(
        np.log(ref) + np.asarray(rewards) / eta - logsumexp(np.asarray(rewards) / eta, b=ref)
    )
    miss = (1.0 - p) ** int(M)
    if p >= 1.0:  # every draw accepted: rewards all equal, the Gibbs policy is ref
        return gibbs
    rejected = ref * (1.0 - acc) / (1.0 - p)  # the law of a draw given it was rejected
    return (1.0 - miss) * gibbs + miss * rejected


def rejection_sample(ref, rewards, eta: float, M: int, size: int, rng: np.random.Generator):
    """``size`` independent outputs of the M-draw rejection sampler: ``(size,)`` actions."""
    ref = np.asarray(ref, dtype=np.float64)
    acc = _acceptance(ref, rewards, eta)
    draws = rng.choice(ref.size, size=(size, int(M)), p=ref)  # (size, M)
    accepted = rng.random((size, int(M))) < acc[draws]
    first = np.where(accepted.any(axis=1), accepted.argmax(axis=1), int(M) - 1)
    return draws[np.arange(size), first]


def total_variation(p: np.ndarray, q: np.ndarray) -> float:
    return float(0.5 * np.abs(np.asarray(p) - np.asarray(q)).sum())
