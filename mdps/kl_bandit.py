r"""The reverse-KL-regularised contextual bandit of RLHF: the Gibbs policy and its exact value.

Setting (Xiong et al., "Iterative Preference Learning from Human Feedback: Bridging Theory and
Practice for RLHF under KL-Constraint", ICML 2024, arXiv:2312.11456, section 2; card
docs/algorithms/gshf.md). A :class:`KLBandit` is a :class:`ComparisonBandit` (contexts s ~ rho,
known features ``phi (S, A, d)``, reward r(s, a) = <theta*, phi(s, a)>, BTL comparisons) with a
reference policy ``ref (S, A)`` (full support) and a KL weight ``eta > 0``. Its objective is

    J(pi) = E_{s~rho} [ sum_a pi(a|s) r(s, a) - eta KL(pi(.|s) || ref(.|s)) ],

maximised by the Gibbs policy pi_r(a|s) = ref(a|s) exp(r(s, a) / eta) / Z_r(s) (the "policy
improvement oracle" of the paper). Identity used throughout (exact, checked in tests):

    J(pi) = E_s [ eta log Z_r(s) - eta KL(pi(.|s) || pi_r(.|s)) ],

so the KL-regularised sub-optimality of any pi is eta E_s KL(pi || pi*), and J(pi*) = eta E_s log
Z(s). For a plug-in Gibbs policy of an estimated reward r_hat the sub-optimality is therefore
second order in r_hat - r*: it falls like 1/n when r_hat errs like n^(-1/2) (measured in claim
``gshf-kl-regularised-rates``).

Instances (registered in ``mdps/families/kl_bandit_instances.py``):

* ``kl-bandit:S=3,A=6,d=5,B=1,norm=1,eta=0.5,seed=0`` -- the random comparison bandit of
  :func:`theorylab.mdps.preference.random_comparison_bandit` with a uniform reference policy;
* ``gshf-coverage:S=2,eps=0.005,eta=0.5,gap=3`` -- poorly covered: one-hot features (d = S A),
  rewards (0.2, 0, -0.2, gap) - mean in every context, and a reference policy that gives the best
  action eps and the others (1 - eps) / 3 -- data drawn from ref x ref seldom compare the best
  action, which the Gibbs policy plays with probability 0.66 at gap = 3, eta = 0.5;
* ``sparse-reward:A=64,d=32,k=2,norm=2,eta=0.5,seed=0`` -- one context, Gaussian features, a
  k-sparse theta* (the RLHF / DPO sample-gap construction, docs/algorithms/rlhf-dpo-dichotomy.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.special import logsumexp, softmax

from theorylab.mdps.preference import (
    ComparisonBandit,
    LinearBTLOracle,
    PairwiseDataset,
    PreferenceError,
    random_comparison_bandit,
)
from theorylab.seeding import ENV_STREAM, generators, seed_indices


def gibbs_policy(ref: np.ndarray, rewards: np.ndarray, eta: float) -> np.ndarray:
    """pi(a|s) ∝ ref(a|s) exp(r(s, a) / eta): ``ref (S, A)``, ``rewards (..., S, A)`` ->
    ``(..., S, A)``."""
    return softmax(np.log(ref) + np.asarray(rewards, dtype=np.float64) / eta, axis=-1)


def kl_rows(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """KL(p(.|s) || q(.|s)) per row with 0 log 0 = 0: ``(..., A)`` -> ``(...)``."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0)
    return t.sum(axis=-1)


@dataclass(frozen=True)
class KLBandit(ComparisonBandit):
    """A comparison bandit with a reference policy ``ref (S, A)`` and KL weight ``eta``; its
    ``value``, ``optimal_policy`` and ``suboptimality`` are the KL-regularised ones."""

    ref: np.ndarray = None
    eta: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.ref is None:
            raise PreferenceError("KLBandit needs a reference policy ref (S, A)")
        ref = np.array(self.ref, dtype=np.float64)
        if ref.shape != (self.S, self.A):
            raise PreferenceError(
                f"ref must have shape (S, A) = ({self.S}, {self.A}), got {ref.shape}"
            )
        if (ref <= 0).any() or np.abs(ref.sum(-1) - 1).max() > 1e-9:
            raise PreferenceError("ref's rows must be full-support distributions")
        if not (isinstance(self.eta, (int, float)) and self.eta > 0):
            raise PreferenceError(f"eta (the KL weight) must be > 0, got {self.eta!r}")
        ref.setflags(write=False)
        object.__setattr__(self, "ref", ref)
        object.__setattr__(self, "eta", float(self.eta))

    def gibbs(self, rewards) -> np.ndarray:
        """The Gibbs policy of ``rewards (..., S, A)``."""
        return gibbs_policy(self.ref, rewards, self.eta)

    def optimal_policy(self) -> np.ndarray:
        """pi* = the Gibbs policy of the true rewards ``(S, A)``."""
        return self.gibbs(self.rewards)

    def value(self, policy, theta=None) -> float:
        """J(pi) = E_rho [<pi, r> - eta KL(pi || ref)] (r from theta, default theta*)."""
        t = self.theta if theta is None else np.asarray(theta, dtype=np.float64)
        pi = self.policy_matrix(policy)
        lin = np.einsum("sa,sa->s", pi, self.phi @ t)
        return float(self.rho @ (lin - self.eta * kl_rows(pi, self.ref)))

    def optimal_value(self) -> float:
        """J(pi*) = eta E_rho log sum_a ref(a|s) exp(r(s, a) / eta) (closed form)."""
        return float(self.eta * self.rho @ logsumexp(self.rewards / self.eta, b=self.ref, axis=-1))

    def suboptimality(self, policy) -> float:
        """J(pi*) - J(pi), exact (closed-form J(pi*))."""
        return self.optimal_value() - self.value(policy)

    def reference_features(self) -> np.ndarray:
        """nu = E_{s~rho} E_{a~ref(s)} phi(s, a): ``(d,)`` (the reference vector of the bound)."""
        return np.einsum("s,sa,sad->d", self.rho, self.ref, self.phi)


def kl_bandit(
    S: int = 3,
    A: int = 6,
    d: int = 5,
    B: float = 1.0,
    norm: float = 1.0,
    eta: float = 0.5,
    seed: int = 0,
) -> KLBandit:
    """The random comparison bandit (phi ~ N(0, 1/d), theta* on the sum-zero sphere of radius
    ``norm``) with a uniform reference policy and KL weight ``eta``."""
    base = random_comparison_bandit(S=S, A=A, d=d, B=B, norm=norm, seed=seed)
    return KLBandit(
        base.phi, base.rho, base.theta, base.B, "kl-bandit", np.full((S, A), 1.0 / A), eta
    )


def gshf_coverage(S: int = 2, eps: float = 0.005, eta: float = 0.5, gap: float = 3.0) -> KLBandit:
    """The poorly covered instance (module docstring): 4 actions, one-hot features, the best
    action (index 3, reward ``gap`` above the others' mean level) given ``eps`` by ref."""
    if not 0 < eps < 1:
        raise PreferenceError(
            f"eps (the reference mass of the best action) must lie in (0, 1), got {eps!r}"
        )
    if isinstance(S, bool) or int(S) != S or S < 1:
        raise PreferenceError(f"S (contexts) must be a positive integer, got {S!r}")
    S, A = int(S), 4
    r = np.tile(np.array([0.2, 0.0, -0.2, float(gap)]), (S, 1))  # (S, A)
    theta = (r - r.mean()).reshape(-1)  # one-hot features: theta = r up to the global mean
    phi = np.eye(S * A).reshape(S, A, S * A)
    ref = np.tile(np.array([(1 - eps) / 3] * 3 + [eps]), (S, 1))
    B = float(np.linalg.norm(theta)) * 1.5
    return KLBandit(phi, np.full(S, 1.0 / S), theta, B, "gshf-coverage", ref, eta)


def spurious_coverage(eps: float = 0.001, eta: float = 0.5, gap: float = 1.0) -> KLBandit:
    """The spurious-response instance of VPO / RPO (card docs/algorithms/vpo.md): one context,
    three responses a, b, s with rewards (gap, 0, 0) (one-hot features) and a reference policy
    ((1 - eps) / 2, (1 - eps) / 2, eps): ref x ref data seldom compare s, which is no better than
    b; a reward MLE that sees s win its few comparisons puts it on top (over-optimisation)."""
    if not 0 < eps < 1:
        raise PreferenceError(
            f"eps (the reference mass of the spurious response) must lie in (0, 1), got {eps!r}"
        )
    if not (isinstance(gap, (int, float)) and gap > 0):
        raise PreferenceError(
            f"gap (the reward of the covered best response) must be > 0, got {gap!r}"
        )
    r = np.array([float(gap), 0.0, 0.0])
    theta = r - r.mean()  # one-hot features: theta = r up to its mean
    ref = np.array([[(1 - eps) / 2, (1 - eps) / 2, eps]])
    B = float(np.linalg.norm(theta)) * 1.5
    return KLBandit(np.eye(3)[None], np.ones(1), theta, B, "spurious-coverage", ref, eta)


def sample_reference_pairs(
    bandit: KLBandit, n: int, *, seeds: int | Sequence[int] = 1, seed: int = 0
) -> PairwiseDataset:
    """n comparisons per seed: s ~ rho, a0, a1 ~ ref(s) independently (the offline data of
    RLHF, drawn by the reference policy; equal pairs carry no information but count), labelled by
    BTL on theta*. Seed b draws from its own environment stream (``theorylab.seeding``)."""
    if not isinstance(bandit, KLBandit):
        raise PreferenceError(f"reference pairs need a KLBandit, got {type(bandit).__name__}")
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise PreferenceError(f"n (comparisons) must be a positive integer, got {n!r}")
    rngs = generators(seed, seed_indices(seeds), ENV_STREAM)
    B, n = len(rngs), int(n)
    st = np.empty((B, n), np.int64)
    a0 = np.empty((B, n), np.int64)
    a1 = np.empty((B, n), np.int64)
    cum = bandit.ref.cumsum(-1)  # (S, A)
    for b, rng in enumerate(rngs):
        st[b] = rng.choice(bandit.S, size=n, p=bandit.rho)
        for out in (a0, a1):
            u = rng.random((n, 1))
            out[b] = np.minimum((u > cum[st[b]]).sum(-1), bandit.A - 1)
    oracle = LinearBTLOracle(bandit.theta, rngs)
    y = oracle.compare(bandit.phi[st, a1], bandit.phi[st, a0])
    return PairwiseDataset(st, a0, a1, y, oracle.queries.copy())


# ------------------------------------------------------------------ groups (MaxMin-RLHF)
def maxmin_dual(ref, rho, rewards: np.ndarray, eta: float) -> tuple[np.ndarray, np.ndarray, float]:
    """max_pi min_k E_rho[<pi, r_k> - eta KL(pi || ref)] by its dual, min over lambda in the
    simplex of eta E_rho log sum_a ref exp(sum_k lambda_k r_k / eta) (convex; softmax
    parametrisation, BFGS from K + 1 starts): ``rewards (K, S, A)`` -> (lambda* (K,), the max-min
    policy Gibbs(sum_k lambda*_k r_k) (S, A), the max-min value)."""
    from scipy.optimize import minimize

    K = rewards.shape[0]

    def f(z):
        lam = softmax(z)
        mix = np.einsum("k,ksa->sa", lam, rewards)
        val = float(eta * rho @ logsumexp(mix / eta, b=ref, axis=-1))
        g_lam = np.einsum("s,sa,ksa->k", rho, gibbs_policy(ref, mix, eta), rewards)  # d/d lambda
        return val, lam * (g_lam - lam @ g_lam)  # through the softmax

    best = None
    for start in [np.zeros(K), *(4.0 * np.eye(K))]:
        res = minimize(f, start, jac=True, method="BFGS", options={"gtol": 1e-12})
        if best is None or res.fun < best.fun:
            best = res
    lam = softmax(best.x)
    return lam, gibbs_policy(ref, np.einsum("k,ksa->sa", lam, rewards), eta), float(best.fun)


@dataclass(frozen=True)
class GroupKLBandit(KLBandit):
    """K user groups with parameters ``group_thetas (K, d)`` and population ``weights (K,)``;
    each user gives ``per_user`` comparisons. ``theta`` (the base class's) is the weighted mean
    parameter. Its ``value`` is the egalitarian min_k U_k(pi), U_k the KL-regularised value
    under group k's reward; ``optimal_value`` / ``optimal_policy`` the max-min ones (dual)."""

    group_thetas: np.ndarray = None
    weights: np.ndarray = None
    per_user: int = 10

    def __post_init__(self) -> None:
        super().__post_init__()
        th = np.array(self.group_thetas, dtype=np.float64)
        w = np.array(self.weights, dtype=np.float64)
        if th.ndim != 2 or th.shape[1] != self.d or w.shape != (th.shape[0],):
            raise PreferenceError(
                f"group_thetas must be (K, d = {self.d}) and weights (K,), got {th.shape}, "
                f"{w.shape}"
            )
        if (w <= 0).any() or abs(w.sum() - 1) > 1e-9:
            raise PreferenceError(f"weights must be a positive distribution, got {w.tolist()}")
        if (
            isinstance(self.per_user, bool)
            or int(self.per_user) != self.per_user
            or self.per_user < 1
        ):
            raise PreferenceError(f"per_user must be a positive integer, got {self.per_user!r}")
        for k, v in (("group_thetas", th), ("weights", w)):
            v.setflags(write=False)
            object.__setattr__(self, k, v)

    @property
    def group_rewards(self) -> np.ndarray:
        """r_k(s, a) = <theta_k, phi(s, a)>: ``(K, S, A)``."""
        return np.einsum("sad,kd->ksa", self.phi, self.group_thetas)

    def utilities(self, policy) -> np.ndarray:
        """U_k(pi) = E_rho[<pi, r_k> - eta KL(pi || ref)] per group: ``(K,)``."""
        pi = self.policy_matrix(policy)
        kl = self.rho @ kl_rows(pi, self.ref)
        return np.einsum("s,sa,ksa->k", self.rho, pi, self.group_rewards) - self.eta * kl

    def value(self, policy, theta=None) -> float:
        if theta is not None:
            return super().value(policy, theta)
        return float(self.utilities(policy).min())

    @cached_property
    def _maxmin(self) -> tuple[np.ndarray, np.ndarray, float]:
        return maxmin_dual(self.ref, self.rho, self.group_rewards, self.eta)  # solved once

    def optimal_policy(self) -> np.ndarray:
        return self._maxmin[1].copy()

    def optimal_value(self) -> float:
        return self._maxmin[2]


@dataclass(frozen=True)
class GroupPairwiseDataset(PairwiseDataset):
    """Pairwise data by users: ``per_user`` consecutive comparisons per user; ``groups (B, U)``
    the users' true groups (never shown to a learner; the claims check EM against them)."""

    per_user: int = 1
    groups: np.ndarray = None


def maxmin_groups(
    eta: float = 0.3, minority: float = 0.2, gap: float = 3.0, per_user: int = 10
) -> GroupKLBandit:
    """One context, three responses, one-hot features: the majority (weight 1 - ``minority``)
    has rewards (gap, 0, 0.6 gap), the minority (0, gap, 0.6 gap); uniform reference."""
    if not 0 < minority < 0.5:
        raise PreferenceError(
            f"minority (the smaller group's weight) must lie in (0, 1/2), got {minority!r}"
        )
    r = np.array([[gap, 0.0, 0.6 * gap], [0.0, gap, 0.6 * gap]])
    th = r - r.mean(axis=1, keepdims=True)  # (K, 3)
    w = np.array([1 - minority, minority])
    B = float(np.linalg.norm(th, axis=1).max()) * 1.5
    return GroupKLBandit(
        np.eye(3)[None],
        np.ones(1),
        w @ th,
        B,
        "maxmin-groups",
        np.full((1, 3), 1 / 3),
        eta,
        th,
        w,
        per_user,
    )


def sample_group_pairs(
    bandit: GroupKLBandit, n: int, *, seeds: int | Sequence[int] = 1, seed: int = 0
) -> GroupPairwiseDataset:
    """n // per_user users per seed, each of group k with probability w_k, each labelling
    ``per_user`` comparisons (s ~ rho, distinct actions uniformly) by BTL on theta_k."""
    L = bandit.per_user
    if isinstance(n, bool) or int(n) != n or n < L:
        raise PreferenceError(f"n must be an integer >= per_user = {L}, got {n!r}")
    rngs = generators(seed, seed_indices(seeds), ENV_STREAM)
    B, U = len(rngs), int(n) // L
    m = U * L
    st, a0, a1, y = (np.empty((B, m), np.int64) for _ in range(4))
    groups = np.empty((B, U), np.int64)
    for b, rng in enumerate(rngs):
        groups[b] = rng.choice(len(bandit.weights), size=U, p=bandit.weights)
        st[b] = rng.choice(bandit.S, size=m, p=bandit.rho)
        a0[b] = rng.integers(bandit.A, size=m)
        a1[b] = (a0[b] + 1 + rng.integers(bandit.A - 1, size=m)) % bandit.A
        th = bandit.group_thetas[np.repeat(groups[b], L)]  # (m, d)
        z = np.einsum("md,md->m", bandit.phi[st[b], a1[b]] - bandit.phi[st[b], a0[b]], th)
        y[b] = rng.random(m) < 1.0 / (1.0 + np.exp(-z))
    return GroupPairwiseDataset(st, a0, a1, y, np.full(B, m), L, groups)


# ------------------------------------------------------------------ hindsight feedback (RLHS)
RLHS_FEEDBACK = ("foresight", "hindsight", "simulated")


def rlhs_ratings(p_good: float) -> tuple[np.ndarray, np.ndarray]:
    """(true utility, foresight rating), each ``(2, 3)``: contexts (good, bad) x messages
    (honest, praise, hedge) of the model in ``theorylab.algorithms.preference.rlhs``."""
    belief = np.array([[1.0, 1.0, p_good], [0.0, 1.0, p_good]])  # P(good) the user believes
    buys = belief >= 0.5
    truth = np.array([[1.0], [-1.0]])  # buying a good / a bad item
    utility = np.where(buys, truth, 0.0)
    foresight = np.where(buys, 2.0 * belief - 1.0, 0.0)
    return utility, foresight


@dataclass(frozen=True)
class RLHSBandit(KLBandit):
    """The two-step hindsight model as a KL bandit: contexts (good, bad) with prior (p_good,
    1 - p_good), messages (honest, praise, hedge), one-hot features; ``theta`` is the centred
    feedback rating x ``scale`` (what the evaluator's comparisons follow), ``true_rewards (S, A)``
    the true utility x ``scale``. ``value`` and the optimum are the true utility's."""

    true_rewards: np.ndarray = None
    p_good: float = 0.4
    scale: float = 3.0

    def feedback_theta(self, feedback: str, accuracy: float = 1.0) -> np.ndarray:
        """The centred rating parameter of a feedback type (``simulated``: alpha hindsight +
        (1 - alpha) foresight)."""
        if feedback not in RLHS_FEEDBACK:
            raise PreferenceError(f"feedback must be one of {RLHS_FEEDBACK}, got {feedback!r}")
        u, f = rlhs_ratings(self.p_good)
        a = {"foresight": 0.0, "hindsight": 1.0}.get(feedback, accuracy)
        r = self.scale * (a * u + (1 - a) * f)
        return (r - r.mean()).reshape(-1)

    def value(self, policy, theta=None) -> float:
        if theta is not None:
            return super().value(policy, theta)
        pi = self.policy_matrix(policy)
        lin = np.einsum("sa,sa->s", pi, self.true_rewards)
        return float(self.rho @ (lin - self.eta * kl_rows(pi, self.ref)))

    def optimal_policy(self) -> np.ndarray:
        return self.gibbs(self.true_rewards)

    def optimal_value(self) -> float:
        z = logsumexp(self.true_rewards / self.eta, b=self.ref, axis=-1)
        return float(self.eta * self.rho @ z)


def rlhs_problem(
    feedback: str = "foresight",
    accuracy: float = 1.0,
    p_good: float = 0.4,
    eta: float = 0.5,
    scale: float = 3.0,
) -> RLHSBandit:
    """The hindsight model with the evaluator's default ``feedback`` (the labels of its data)."""
    if not 0 < p_good < 1:
        raise PreferenceError(f"p_good must lie in (0, 1), got {p_good!r}")
    if not 0 <= accuracy <= 1:
        raise PreferenceError(f"accuracy must lie in [0, 1], got {accuracy!r}")
    u, _ = rlhs_ratings(p_good)
    probe = RLHSBandit(
        np.eye(6).reshape(2, 3, 6),
        np.array([p_good, 1 - p_good]),
        np.zeros(6),
        10 * scale,
        "rlhs",
        np.full((2, 3), 1 / 3),
        eta,
        scale * u,
        p_good,
        scale,
    )
    theta = probe.feedback_theta(feedback, accuracy)
    return RLHSBandit(
        probe.phi, probe.rho, theta, probe.B, "rlhs", probe.ref, eta, scale * u, p_good, scale
    )


# ------------------------------------------------------------------ sparse reward (RLHF vs DPO)
def sparse_reward(
    A: int = 64, d: int = 32, k: int = 2, norm: float = 2.0, eta: float = 0.5, seed: int = 0
) -> KLBandit:
    """One context, A responses with features phi ~ N(0, I_d), a true theta* with k non-zero
    entries (+-norm / sqrt(k), summing to 0; k even), a uniform reference policy."""
    for name, v, lo in (("A", A, 2), ("d", d, 2), ("k", k, 2)):
        if isinstance(v, bool) or int(v) != v or v < lo:
            raise PreferenceError(f"{name} must be an integer >= {lo}, got {v!r}")
    if int(k) % 2 or k > d:
        raise PreferenceError(f"k (non-zeros of theta*) must be even and <= d = {d}, got {k!r}")
    if not (isinstance(norm, (int, float)) and norm > 0):
        raise PreferenceError(f"norm (||theta*||) must be > 0, got {norm!r}")
    A, d, k = int(A), int(d), int(k)
    rng = np.random.default_rng(seed)
    phi = rng.standard_normal((1, A, d))
    theta = np.zeros(d)
    support = rng.choice(d, size=k, replace=False)
    theta[support] = np.tile([1.0, -1.0], k // 2) * norm / np.sqrt(k)
    return KLBandit(
        phi, np.ones(1), theta, 1.5 * norm, "sparse-reward", np.full((1, A), 1.0 / A), eta
    )
