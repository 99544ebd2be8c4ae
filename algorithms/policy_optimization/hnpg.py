r"""Hybrid natural policy gradient (HNPG): NPG whose critic is fit on offline data and on-policy
data together, on a discounted tabular MDP.

Seed rows ``seed-catalogue-000.md#20`` = ``seed-catalogue-002-004.md#C6``: Y. Zhou, A. Sekhari,
Y. Song, W. Sun, "Offline Data Enhanced On-Policy Policy Gradient with Provable Guarantees",
ICLR 2024 (arXiv:2311.08384).

What was read [V]: the abstract (an on-policy NPG actor-critic into which "a procedure of
off-policy training on the offline data" is integrated; "best-of-both-worlds": the offline-RL
guarantee when its assumptions hold, "while at the same time maintaining the theoretical
guarantees of on-policy NPG regardless of the offline RL assumptions' validity"); a review's
summary of the method (a hybrid fitted policy evaluation that "learns value functions by jointly
minimizing TD error on offline data and estimation error on online data", then a softmax / NPG
policy update); and the authors' code (github.com/YifeiZhou02/HNPG, ``trpo.py``,
``TRPO.update_q``): per stage, the critic's loss is the mean squared error to on-policy Monte
Carlo returns plus the mean squared TD error (target r + Q_{h+1}(s', a' ~ pi)) on an offline
minibatch, the two added with equal weight. Not read: the paper's equations, its choice of the
weight lambda and its theorems' constants.

Reconstructed [A] (tabular, discounted; Agarwal, Kakade, Lee & Mahajan 2021 for NPG [M]):

* on-policy data (the Q-NPG estimator of Agarwal et al., Alg. 3 [M], with the exploratory
  restart distribution nu taken to its limit: every pair restarts): at iterate t, ``m`` unbiased
  Monte Carlo estimates G of Q^{pi_t}(s, a) from every pair (s, a) and run (roll pi_t on from
  (s, a), stopping after each step with probability 1 - gamma, summing the undiscounted mean
  rewards). [A]: restarting from every pair rather than sampling s ~ d^{pi_t}_nu keeps every
  pair covered by on-policy data, so NPG itself needs no exploration and a pair's critic error
  is its Monte Carlo noise, of order 1 / ((1 - gamma) sqrt(m)) (the quantity the offline data
  can reduce);
* hybrid critic: the fixed point of the semi-gradient least-squares problem

      min_Q  sum_{(s,a,r,s') in D_off} (Q(s,a) - r - gamma sum_a' pi_t(a'|s') Q(s',a'))^2
             + lam sum_{(s,a,G) in D_on} (Q(s,a) - G)^2,

  i.e. per pair ``(n_off + lam n_on) Q = r_sum + gamma C Pi_t Q + lam G_sum`` (C the offline
  next-state counts, Pi_t the policy's action average): a strictly diagonally dominant linear
  system, solved exactly; a pair with no data of either kind gets Q = 0 (the ridge limit).
  lam weighs one on-policy sample against one offline sample; ``critic="offline-only"`` drops
  the on-policy terms (the offline fitted-Q evaluation alone: the baseline that trusts the
  offline data). [A]: lam = 10 by default. What lam trades (measured, docs/algorithms/hnpg.md):
  on a pair with n_off offline and n_on on-policy samples the offline share is
  n_off / (n_off + lam n_on): valid offline data cut the critic's variance by it, data from a
  *different MDP* bias the critic by it, so no single lam is free of both effects; data that are
  valid but cover only bad actions (the offline-RL coverage assumption violated) add no bias of
  their own (their TD targets are the true model's);
* actor: the NPG step of a tabular softmax policy, ``pi_{t+1} ∝ pi_t exp(eta Q_hat)``
  (Agarwal et al. 2021, Lemma 5.1 [M]; :func:`~.mdpo.md_step`).
* offline data (``offline=``): "none" (pure on-policy NPG), "uniform" (N samples from the
  uniform behaviour's discounted occupancy on the true MDP: good coverage), "inverted-rewards"
  (the same draws with rewards 1 - r: data from a different MDP), "bad-actions" (the adversarial
  behaviour of :mod:`theorylab.algorithms.offline.dataset`: only strictly sub-optimal actions).

Algorithm (``hnpg``): ``runs`` independent runs of K iterations from the uniform policy; every
iterate scored exactly (J(pi_t) = V^{pi_t}(mu0) by a linear solve; V*(mu0) by value iteration as
the target). ``objective`` is the mean over runs, ``policies`` run 0's iterates;
``config["values"]`` holds each run's (K+1,) values, ``config["samples"]`` the on-policy rollouts
spent per iteration and run (m S A).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from theorylab.algorithms.planning.evaluation import evaluate_discounted
from theorylab.algorithms.planning.soft_value_iteration import policy_entropy
from theorylab.algorithms.planning.value_iteration import value_iteration
from theorylab.algorithms.policy_optimization.mdpo import md_step
from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
    check_positive,
)
from theorylab.algorithms.registry import register

PAPERS = ("000#20", "002-004#C6")
OFFLINE_DATA = ("none", "uniform", "inverted-rewards", "bad-actions")
CRITICS = ("hybrid", "offline-only")
MAX_STEPS = 2000  # cap on a geometric walk (gamma <= 0.99: survival 0.99^2000 < 2e-9)


@dataclasses.dataclass(frozen=True)
class PairData:
    """Counts of one data source per run: n (R, S, A) samples, total (R, S, A) the sum of their
    targets (rewards r or returns G), next (R, S, A, S) next-state counts (offline only)."""

    n: np.ndarray
    total: np.ndarray
    next: np.ndarray | None = None


def empty_pairs(R: int, S: int, A: int) -> PairData:
    """No data: all counts zero."""
    return PairData(np.zeros((R, S, A)), np.zeros((R, S, A)), np.zeros((R, S, A, S)))


def offline_pairs(mdp, data: str, size: int, R: int, seed: int) -> PairData:
    """The offline dataset of ``data`` (module docstring), as counts per run."""
    from theorylab.algorithms.offline.dataset import make_dataset

    S, A = mdp.S, mdp.A
    if data == "none" or size == 0:
        return empty_pairs(R, S, A)
    other = "adversarial" if data == "bad-actions" else "uniform"
    ds = make_dataset(mdp, size, coverage=0.0, other=other, kind="samples", seeds=R, seed=seed)
    rewards = 1.0 - ds.rewards if data == "inverted-rewards" else ds.rewards  # (R, N)
    n, total, nxt = np.zeros((R, S, A)), np.zeros((R, S, A)), np.zeros((R, S, A, S))
    for r in range(R):
        np.add.at(n[r], (ds.states[r], ds.actions[r]), 1.0)
        np.add.at(total[r], (ds.states[r], ds.actions[r]), rewards[r])
        np.add.at(nxt[r], (ds.states[r], ds.actions[r], ds.next_states[r]), 1.0)
    return PairData(n, total, nxt)


def _step(P_cum: np.ndarray, s: np.ndarray, a: np.ndarray, u: np.ndarray) -> np.ndarray:
    """s' ~ P(.|s, a) for many walkers by inverse CDF; P_cum (S, A, S) cumulative rows."""
    rows = P_cum[s, a]  # (W, S)
    return np.minimum((rows <= u[:, None]).sum(axis=1), P_cum.shape[-1] - 1)


def _actions(pi: np.ndarray, run: np.ndarray, s: np.ndarray, u: np.ndarray) -> np.ndarray:
    """a ~ pi[run, s] (pi (R, S, A)) by inverse CDF."""
    cdf = np.cumsum(pi[run, s], axis=1)
    return np.minimum((cdf <= u[:, None]).sum(axis=1), pi.shape[-1] - 1)


def on_policy_pairs(mdp, pi: np.ndarray, m: int, rng: np.random.Generator) -> PairData:
    """m Monte Carlo estimates G of Q^pi(s, a) from every pair of every run (module docstring):
    unbiased, since sum_t Pr(alive at t) r_t = sum_t gamma^t r_t. pi (R, S, A)."""
    R, S, A = pi.shape
    g = float(mdp.gamma)
    P_cum = np.cumsum(mdp.dense_P(), axis=-1)  # (S, A, S)
    reward = mdp.reward(0)  # (S, A) mean rewards
    run = np.repeat(np.arange(R), S * A * m)  # (W,) walker -> run, W = R S A m
    s0 = np.tile(np.repeat(np.arange(S), A * m), R)
    a0 = np.tile(np.repeat(np.arange(A), m), R * S)
    G = np.zeros(run.size)
    cs, ca = s0.copy(), a0.copy()
    alive = np.ones(run.size, dtype=bool)
    for _ in range(MAX_STEPS):
        idx = np.flatnonzero(alive)
        if idx.size == 0:
            break
        G[idx] += reward[cs[idx], ca[idx]]
        cs[idx] = _step(P_cum, cs[idx], ca[idx], rng.random(idx.size))
        alive[idx] = rng.random(idx.size) < g
        idx = np.flatnonzero(alive)
        ca[idx] = _actions(pi, run[idx], cs[idx], rng.random(idx.size))
    n, total = np.zeros((R, S, A)), np.zeros((R, S, A))
    np.add.at(n, (run, s0, a0), 1.0)
    np.add.at(total, (run, s0, a0), G)
    return PairData(n, total)


def hybrid_critic(
    off: PairData, on: PairData, pi: np.ndarray, gamma: float, lam: float
) -> np.ndarray:
    """Q_hat (R, S, A): the fixed point of the hybrid least-squares problem (module docstring),
    ``(n_off + lam n_on) Q = r_sum + gamma C Pi Q + lam G_sum``; pairs without data get 0."""
    R, S, A = pi.shape
    D = off.n + lam * on.n  # (R, S, A)
    b = off.total + lam * on.total  # (R, S, A)
    Q = np.zeros((R, S, A))
    ridge = 1e-9
    for r in range(R):
        # (C Pi Q)(s, a) = sum_{s', a'} C(s, a, s') pi(a'|s') Q(s', a'): (S*A, S*A)
        M = (off.next[r][:, :, :, None] * pi[r][None, None]).reshape(S * A, S * A)
        lhs = np.diag(D[r].ravel() + ridge) - gamma * M
        Q[r] = np.linalg.solve(lhs, b[r].ravel()).reshape(S, A)
    return Q


def hnpg_runs(
    mdp,
    iterations: int,
    *,
    on_policy: int,
    offline: str,
    offline_size: int,
    lam: float,
    eta: float,
    runs: int,
    seed: int,
    critic: str = "hybrid",
) -> np.ndarray:
    """Each run's policies (R, K+1, S, A) (module docstring)."""
    S, A, R = mdp.S, mdp.A, runs
    off = offline_pairs(mdp, offline, offline_size, R, seed)
    rng = np.random.default_rng([seed, 20])
    log_pi = np.full((R, S, A), -np.log(A))
    pis = [np.exp(log_pi)]
    for _ in range(iterations):
        pi = np.exp(log_pi)
        on = on_policy_pairs(mdp, pi, on_policy, rng)
        if critic == "offline-only":
            on = empty_pairs(R, S, A)
        Q = hybrid_critic(off, on, pi, float(mdp.gamma), lam)
        log_pi = md_step(log_pi.reshape(R * S, A), Q.reshape(R * S, A), eta).reshape(R, S, A)
        pis.append(np.exp(log_pi))
    return np.stack(pis, axis=1)


def check_hnpg_inputs(mdp, on_policy, offline, offline_size, lam, eta, runs, seed, critic) -> None:
    """One-line errors for every bad input, before any work."""
    if getattr(mdp, "gamma", None) is None or getattr(mdp, "horizon", None) is not None:
        raise ValueError(
            "hnpg is stated for discounted MDPs; give one with gamma (e.g. "
            f"random:S=6,A=3,gamma=0.8), got {getattr(mdp, 'name', mdp)!r}"
        )
    if getattr(mdp, "stage_dependent", False) or getattr(mdp, "reward_stage_dependent", False):
        raise ValueError("hnpg needs a stationary (not stage-dependent) MDP")
    if offline not in OFFLINE_DATA:
        raise ValueError(f"hnpg: offline must be one of {OFFLINE_DATA}, got {offline!r}")
    if critic not in CRITICS:
        raise ValueError(f"hnpg: critic must be one of {CRITICS}, got {critic!r}")
    if critic == "offline-only" and (offline == "none" or offline_size == 0):
        raise ValueError("hnpg: critic='offline-only' needs offline data (offline='none' given)")
    for name, value, low in (
        ("on_policy", on_policy, 1),
        ("offline_size", offline_size, 0),
        ("runs", runs, 1),
        ("seed", seed, 0),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"hnpg: {name} must be an integer >= {low}, got {value!r}")
    check_positive("hnpg", lam=lam, eta=eta)
    check_number("hnpg", "gamma", float(mdp.gamma))
    if float(mdp.gamma) > 0.99:
        raise ValueError(f"hnpg: gamma must be <= 0.99 (Monte Carlo walks), got {mdp.gamma!r}")


@register("hnpg", kind="policy-optimization", problem="tabular-discounted", papers=PAPERS)
def hnpg_path(
    problem,
    iterations: int,
    *,
    on_policy: int = 2,
    offline: str = "uniform",
    offline_size: int = 400,
    lam: float = 10.0,
    eta: float = 0.3,
    runs: int = 16,
    seed: int = 0,
    critic: str = "hybrid",
) -> PolicyPath:
    """Hybrid NPG: a softmax NPG step on a critic fit to offline TD targets and on-policy Monte
    Carlo returns together (offline="none": pure on-policy NPG); K iterations in ``runs`` runs,
    every iterate scored exactly (module docstring)."""
    mdp = problem  # a discounted tabular model (the runner's "problem")
    iterations = check_iterations("hnpg", iterations)
    check_hnpg_inputs(mdp, on_policy, offline, offline_size, lam, eta, runs, seed, critic)
    pis = hnpg_runs(
        mdp,
        iterations,
        on_policy=int(on_policy),
        offline=offline,
        offline_size=int(offline_size),
        lam=float(lam),
        eta=float(eta),
        runs=int(runs),
        seed=int(seed),
        critic=critic,
    )  # (R, K+1, S, A)
    mu = mdp.mu0
    values = np.array([[evaluate_discounted(mdp, p) @ mu for p in run] for run in pis])  # (R, K+1)
    V_star = np.asarray(value_iteration(mdp, tol=1e-13).V).ravel()
    return PolicyPath(
        objective=values.mean(axis=0),
        regularised=np.full(pis.shape[1], np.nan),
        entropy=policy_entropy(pis).mean(axis=(0, 2)),
        target_gap=np.full(pis.shape[1], np.nan),
        target_value=float(V_star @ mu),
        policies=pis[0],
        config={
            "on_policy": int(on_policy),
            "offline": offline,
            "offline_size": int(offline_size),
            "lam": float(lam),
            "eta": float(eta),
            "runs": int(runs),
            "seed": int(seed),
            "critic": critic,
            "gamma": float(mdp.gamma),
            "values": values.tolist(),
            "samples": int(on_policy) * mdp.S * mdp.A,
        },
    )
