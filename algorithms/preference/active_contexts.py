r"""Active context selection for preference alignment (AE-Borda, linear BTL specialisation).

Seed reference: ``seed-catalogue-001.md#18``. Paper: Mehta, Belakaria, Das, Neopane, Dai,
Bogunovic, Engelhardt, Ermon, Schneider, Neiswanger, "Sample Efficient Preference Alignment in
LLMs via Active Exploration", COLM 2025, arXiv:2312.00267 (v3). Card:
docs/algorithms/active-contexts.md.

What was read [V]: the abstract (the learner "can often choose contexts at which to obtain human
feedback to most efficiently identify a good policy"; the setting is an "active contextual dueling
bandit"; the algorithm has "a polynomial worst-case regret bound") and a third-party summary (the
method is AE-Borda: "contextual Borda function estimation and uncertainty-guided exploration",
kernelised). The algorithm's equations, its radius and the exponent of its bound were not found in
the stored pages (searched for ~5 minutes), so no bound card is carried.

Reconstructed [A] in the catalogue's model (linear BTL P(a > a' | x) = sigma(<theta*, phi(x, a) -
phi(x, a')>), logistic MLE, confidence ellipsoids, a finite context set). In the linear BTL model
the contextual Borda score E_{a'} sigma(r(x, a) - r(x, a')) is increasing in r(x, a), so the
Borda argmax is the reward argmax and the MLE of theta is the natural estimator. After t
comparisons with differences x_i:

    M_t      = (1/t) sum_i x_i x_i^T + lambda I,         f_t = Zhu-Jordan-Jiao Lemma 3.1's radius
    pi_t(x)  = argmax_a <theta_t, phi(x, a)>                                  (greedy; ties: first)
    z_t(x, a) = phi(x, a) - phi(x, pi_t(x))
    U_t(x, a) = <theta_t, z_t(x, a)> + f_t ||z_t(x, a)||_{M_t^-1}
    g_t(x)   = max(0, max_{a != pi_t(x)} U_t(x, a))

On the event ||theta_t - theta*||_{M_t} <= f_t, r(x, a*) - r(x, pi_t(x)) <= g_t(x) for every x,
so max_x g_t(x) is a certified bound on the *worst-context* sub-optimality (the paper's criterion).
The active learner asks at x_t = argmax_x g_t(x) (the context whose value is least certain) the
pair (pi_t(x_t), argmax_{a != pi_t} U_t(x_t, a)) (greedy against its optimistic challenger); the
uniform baseline draws x_t ~ rho and asks the same pair there. theta_t is refitted (the
constrained BTL MLE of :mod:`theorylab.algorithms.preference.mle`) at t = 1, 2, ... geometrically
(every ``refit`` factor, at least every step early on); between refits the Gram matrix is updated
after every max(1, floor(t / 64)) queries (``GRAM_STEPS``; every query while t < 64), so the
selection within a block spreads over contexts. This batching is a deviation for speed [A]: the
paper's loop updates after every query; a batch is at most 1/64 of the data already asked.

Constants and deviations: f_t is :func:`theorylab.algorithms.preference.pessimistic.mle_radius`
(C = 1, delta, lambda; gamma = 1/(2 + e^{-LB} + e^{LB})), a fixed-design radius applied to
adaptively collected data -- the paper's kernel radius was not read [M]; the claim measures how
often it covers. The output is greedy (the paper's output is the argmax of the estimated Borda
function, the same action here). The paper's LLM extensions (online / offline DPO) are not built.

Registered ``active-contexts`` (kind ``preference-offline``, like ``xpo-bandit``: a budget of
``data.n`` comparisons asked online through the runner's oracle); ``contexts="uniform"`` is the
baseline the paper improves on (the control of claim ``active-contexts-worst-case``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from theorylab.algorithms.preference.mle import MLEError, btl_mle
from theorylab.algorithms.preference.pessimistic import mle_radius
from theorylab.algorithms.registry import register
from theorylab.mdps.preference import ComparisonBandit, PairwiseDataset

CONTEXT_RULES = ("active", "uniform")
GRAM_STEPS = 64  # Gram updates per doubling of t (every query while t < 64)


@dataclass
class ActiveContextFit:
    """theta_hat ``(B, d)``, greedy policy ``(B, S)``; per seed ``(B,)``: rho-average and
    worst-context sub-optimality, the certified worst-context bound max_x g(x), queries;
    ``counts (B, S)`` comparisons asked per context; ``data`` the comparisons asked (a0 the
    greedy action, a1 the challenger, y = 1 when a1 won)."""

    theta_hat: np.ndarray
    policy: np.ndarray
    suboptimality: np.ndarray
    worst_context: np.ndarray
    bound: np.ndarray
    queries: np.ndarray
    counts: np.ndarray
    data: PairwiseDataset
    extra_values: dict = field(default_factory=dict)


def block_terms(
    phi: np.ndarray, theta_hat: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What stays fixed between refits: greedy ``(B, S)``, the estimated gaps
    <theta_hat, z(x, a)> ``(B, S, A)`` (-inf at the greedy action, which is no challenger) and
    the outer products z z^T flattened, ``(B, S * A, d * d)``, of z(x, a) = phi(x, a) -
    phi(x, greedy(x))."""
    S, A, d = phi.shape
    r = np.einsum("sad,bd->bsa", phi, theta_hat)  # (B, S, A)
    greedy = r.argmax(-1)  # (B, S)
    gap = r - np.take_along_axis(r, greedy[..., None], -1)  # (B, S, A), <= 0
    np.put_along_axis(gap, greedy[..., None], -np.inf, -1)
    z = phi[None] - phi[np.arange(S)[None, :], greedy][:, :, None, :]  # (B, S, A, d)
    zz = (z[..., :, None] * z[..., None, :]).reshape(len(theta_hat), S * A, d * d)
    return greedy, gap, zz


def context_indices(
    gap: np.ndarray, zz: np.ndarray, M_inv: np.ndarray, radius: float
) -> tuple[np.ndarray, np.ndarray]:
    """g(x) = max(0, max_{a != greedy} U(x, a)) ``(B, S)`` and the challenger argmax_{a !=
    greedy} U ``(B, S)``, from :func:`block_terms`' gap and zz and M_inv ``(B, d, d)``."""
    B, S, A = gap.shape
    w2 = (zz @ M_inv.reshape(B, -1, 1)).reshape(B, S, A)  # ||z||^2_{M^-1}
    U = gap + radius * np.sqrt(np.maximum(w2, 0.0))  # (B, S, A)
    return np.maximum(U.max(-1), 0.0), U.argmax(-1)


def worst_context_suboptimality(bandit: ComparisonBandit, policy: np.ndarray) -> np.ndarray:
    """max_x [max_a r(x, a) - r(x, pi(x))] for deterministic ``policy (B, S)``: ``(B,)``."""
    r = bandit.rewards  # (S, A)
    played = r[np.arange(bandit.S)[None, :], policy]  # (B, S)
    return (r.max(-1)[None, :] - played).max(-1)


def _check(bandit, contexts, delta, lam, refit, C) -> None:
    if not isinstance(bandit, ComparisonBandit):
        raise MLEError(f"active-contexts needs a comparison bandit, got {type(bandit).__name__}")
    if contexts not in CONTEXT_RULES:
        raise MLEError(
            f"active-contexts: contexts must be one of {CONTEXT_RULES}, got {contexts!r}"
        )
    if not (isinstance(delta, float | int) and 0.0 < delta < 1.0):
        raise MLEError(f"active-contexts: delta must lie in (0, 1), got {delta!r}")
    if not (isinstance(lam, float | int) and lam > 0):
        raise MLEError(f"active-contexts: lam must be > 0, got {lam!r}")
    if not (isinstance(refit, float | int) and refit > 1.0):
        raise MLEError(
            f"active-contexts: refit (growth factor of the refit times) must be > 1, got {refit!r}"
        )
    if not (isinstance(C, float | int) and C > 0):
        raise MLEError(f"active-contexts: C must be > 0, got {C!r}")


def active_exploration(
    bandit: ComparisonBandit,
    n: int,
    oracle,
    *,
    contexts: str = "active",
    delta: float = 0.1,
    lam: float = 1e-6,
    refit: float = 1.5,
    C: float = 1.0,
) -> ActiveContextFit:
    """n comparisons per seed chosen by the active (or uniform) context rule; ``oracle`` a
    :class:`theorylab.mdps.preference.LinearBTLOracle` with one generator per seed."""
    _check(bandit, contexts, delta, lam, refit, C)
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise MLEError(f"active-contexts: the budget n must be a positive integer, got {n!r}")
    phi, S, d = bandit.phi, bandit.S, bandit.d
    B = len(oracle.rngs)
    oracle.queries[:] = 0
    st, a0, a1 = (np.zeros((B, n), np.int64) for _ in range(3))  # contexts, greedy, challenger
    y = np.zeros((B, n), np.int64)  # 1: the challenger a1 won
    V = np.zeros((B, d, d))  # sum_i x_i x_i^T
    theta = np.zeros((B, d))
    I = np.eye(d)
    rows = np.arange(B)[:, None]
    t = 0
    while t < n:
        stop = min(n, max(t + 1, int(np.ceil(t * refit))))
        greedy, gap, zz = block_terms(phi, theta)
        k = t
        while k < stop:  # theta fixed; the Gram matrix updated every max(1, k // GRAM_STEPS)
            m = min(stop, k + max(1, k // GRAM_STEPS)) - k
            M_inv = np.linalg.inv(V / max(k, 1) + lam * I)
            f = mle_radius(max(k, 1), d, delta, lam, bandit.B, bandit.L, C)
            g, chall = context_indices(gap, zz, M_inv, f)
            if contexts == "active":
                x = np.repeat(g.argmax(-1)[:, None], m, axis=1)  # (B, m)
            else:
                x = np.stack([rng.choice(S, size=m, p=bandit.rho) for rng in oracle.rngs])
            st[:, k : k + m], a0[:, k : k + m], a1[:, k : k + m] = (
                x,
                greedy[rows, x],
                chall[rows, x],
            )
            Xm = phi[x, a1[:, k : k + m]] - phi[x, a0[:, k : k + m]]  # (B, m, d)
            V += np.einsum("bmi,bmj->bij", Xm, Xm)
            k += m
        # label the block (the labels do not affect the selection inside it)
        blk = slice(t, stop)
        y[:, blk] = oracle.compare(phi[st[:, blk], a1[:, blk]], phi[st[:, blk], a0[:, blk]])
        t = stop
        theta = btl_mle(phi[st[:, :t], a1[:, :t]] - phi[st[:, :t], a0[:, :t]], y[:, :t], bandit.B)
    M_inv = np.linalg.inv(V / n + lam * I)
    f = mle_radius(n, d, delta, lam, bandit.B, bandit.L, C)
    greedy, gap, zz = block_terms(phi, theta)
    g, _ = context_indices(gap, zz, M_inv, f)
    sub = np.array([bandit.suboptimality(bandit.policy_matrix(p)) for p in greedy])
    worst = worst_context_suboptimality(bandit, greedy)
    counts = np.stack([np.bincount(s, minlength=S) for s in st])
    return ActiveContextFit(
        theta,
        greedy,
        sub,
        worst,
        g.max(-1),
        oracle.queries.copy(),
        counts,
        PairwiseDataset(st, a0, a1, y, oracle.queries.copy()),
        {"worst_context": worst, "last_context_share": counts[:, -1] / n},
    )


@register(
    "active-contexts",
    kind="preference-offline",
    problem="pref-bandit",
    bounds=(),
    feedback=("btl",),
    feedback_note="the rounds ask pairwise (BTL) comparisons at the chosen context",
    papers=("001#18",),
)
def active_contexts(
    bandit,
    data,
    oracle=None,
    contexts: str = "active",
    delta: float = 0.1,
    lam: float = 1e-6,
    refit: float = 1.5,
    C: float = 1.0,
) -> ActiveContextFit:
    """Active context selection (Mehta et al. 2025, linear BTL [A]) with a budget of ``data.n``
    comparisons per seed; ``contexts="uniform"`` draws contexts from rho (the baseline)."""
    if oracle is None:
        raise MLEError("active-contexts asks comparisons online: it needs the runner's oracle")
    return active_exploration(
        bandit, data.n, oracle, contexts=contexts, delta=delta, lam=lam, refit=refit, C=C
    )
