"""Brute-force oracles for tiny MDPs: enumerate every policy and every outcome path.

Independent of the lattice code (exact float rewards, explicit path enumeration, no dynamic
programming), so that the planners can be tested against them (theory.md section 9.5):

* every outcome path ``(s_1, a_1, k_1, ..., s_H, a_H, k_H)`` with positive probability is listed,
  with its probability ``mu0(s_1) prod_t q_t(k_t|s_t, a_t) P_t(s_{t+1}|s_t, a_t)`` and its return
  (k_t is the reward outcome: the mean for deterministic rewards, 0 or 1 for Bernoulli rewards);
* a deterministic policy class is a set of *information nodes* (what the policy may look at before
  acting) and a policy is one action per node:

  - ``"markov"``: ``(h, s_h)``;
  - ``"augmented"``: ``(h, s_h, return so far)`` (the Bauerle-Ott class);
  - ``"history"``: the whole observation history ``(s_1, k_1, ..., s_h)``, i.e. every deterministic
    history-dependent policy (earlier actions are functions of earlier observations);

* the probability of a path under a policy is its probability times the indicator that the policy
  takes the path's actions at the path's nodes; static CVaR (or the worst path) of each policy
  follows by sorting the path returns.

The number of policies is ``A ** n_nodes``; :class:`TooManyPoliciesError` is raised beyond
``max_policies`` (default 2**16). Intended for S, A, H of 2-3.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.errors import TheorylabError
from theorylab.risk_measures import _check_tau, tail_masses

POLICY_CLASSES = ("markov", "augmented", "history")


class TooManyPoliciesError(TheorylabError, ValueError):
    """The policy class is too large to enumerate."""


@dataclass(frozen=True)
class OutcomePaths:
    """All positive-probability paths of an MDP, for every action sequence.

    states, actions, outcomes: ``(N, H)`` int; rewards: ``(N, H)`` float (realised rewards);
    probs: ``(N,)`` path probabilities *given* the actions (the product of the environment's
    factors; for a fixed deterministic policy the consistent paths sum to 1).
    """

    states: np.ndarray
    actions: np.ndarray
    outcomes: np.ndarray
    rewards: np.ndarray
    probs: np.ndarray

    @property
    def returns(self) -> np.ndarray:
        return self.rewards.sum(axis=1)


@dataclass(frozen=True)
class BruteForceResult:
    """value: the best objective value in the class; policy: node key -> action of a maximiser;
    values: ``(n_policies,)`` objective value of every policy; n_policies, policy_class."""

    value: float
    policy: dict
    values: np.ndarray
    n_policies: int
    policy_class: str


def outcome_paths(mdp) -> OutcomePaths:
    """Every (state, action, reward outcome) path with positive environment probability."""
    H, S, A = mdp.horizon, mdp.S, mdp.A
    P = mdp.dense_P()
    P = P if P.ndim == 4 else np.broadcast_to(P, (H, S, A, S))
    bern = mdp.reward_model == "bernoulli"
    paths: list[tuple[list, list, list, list, float]] = []

    def extend(h: int, s: int, st, ac, oc, rw, p: float) -> None:
        for a in range(A):
            mean = float(mdp.reward(h)[s, a])
            outcomes = [(0, 0.0, 1.0 - mean), (1, 1.0, mean)] if bern else [(0, mean, 1.0)]
            for k, r, qk in outcomes:
                if qk <= 0.0:
                    continue
                st2, ac2, oc2, rw2 = st + [s], ac + [a], oc + [k], rw + [r]
                if h == H - 1:
                    paths.append((st2, ac2, oc2, rw2, p * qk))
                    continue
                for s2 in np.flatnonzero(P[h, s, a] > 0):
                    extend(h + 1, int(s2), st2, ac2, oc2, rw2, p * qk * float(P[h, s, a, s2]))

    for s0 in np.flatnonzero(mdp.mu0 > 0):
        extend(0, int(s0), [], [], [], [], float(mdp.mu0[s0]))
    st, ac, oc, rw, pr = zip(*paths, strict=True)
    return OutcomePaths(
        np.array(st, np.int64),
        np.array(ac, np.int64),
        np.array(oc, np.int64),
        np.array(rw, np.float64),
        np.array(pr, np.float64),
    )


def _node_key(paths: OutcomePaths, i: int, h: int, policy_class: str):
    s = int(paths.states[i, h])
    if policy_class == "markov":
        return (h, s)
    if policy_class == "augmented":
        return (h, s, round(float(paths.rewards[i, :h].sum()), 9))
    obs = []
    for t in range(h):
        obs += [int(paths.states[i, t]), int(paths.outcomes[i, t])]
    return (*obs, s)


def _policy_consistency(paths: OutcomePaths, policy_class: str):
    """Node index ``(N, H)`` of every path step, and the list of node keys."""
    N, H = paths.states.shape
    keys: dict = {}
    nodes = np.empty((N, H), np.int64)
    for i in range(N):
        for h in range(H):
            nodes[i, h] = keys.setdefault(_node_key(paths, i, h, policy_class), len(keys))
    return nodes, list(keys)


def _enumerate(mdp, policy_class: str, max_policies: int, score, chunk: int = 4096):
    if policy_class not in POLICY_CLASSES:
        raise ValueError(f"policy_class must be one of {POLICY_CLASSES}, got {policy_class!r}")
    paths = outcome_paths(mdp)
    nodes, keys = _policy_consistency(paths, policy_class)
    A = mdp.A
    n_policies = A ** len(keys)
    if n_policies > max_policies:
        raise TooManyPoliciesError(
            f"{policy_class} policies: {A}^{len(keys)} = {n_policies} > max_policies="
            f"{max_policies}; use a smaller MDP"
        )
    values = np.empty(n_policies)
    powers = A ** np.arange(len(keys), dtype=np.int64)
    for start in range(0, n_policies, chunk):
        idx = np.arange(start, min(start + chunk, n_policies), dtype=np.int64)
        table = (idx[:, None] // powers[None, :]) % A  # (n, n_nodes): policy -> action per node
        consistent = (table[:, nodes] == paths.actions[None]).all(axis=2)  # (n, N)
        values[idx] = score(consistent * paths.probs[None], paths)
    best = int(np.argmax(values))
    table = (best // powers) % A
    return BruteForceResult(
        value=float(values[best]),
        policy={k: int(a) for k, a in zip(keys, table, strict=True)},
        values=values,
        n_policies=n_policies,
        policy_class=policy_class,
    )


def brute_force_static_cvar(
    mdp, tau: float, *, policy_class: str = "history", max_policies: int = 2**16
) -> BruteForceResult:
    """``max over a deterministic policy class of CVaR_tau(Z^pi)`` by full enumeration."""
    tau = _check_tau(tau)
    order = None

    def score(probs: np.ndarray, paths: OutcomePaths) -> np.ndarray:
        nonlocal order
        if order is None:
            order = np.argsort(paths.returns, kind="stable")
        ps = probs[:, order]
        return (tail_masses(ps, tau) * paths.returns[order][None]).sum(axis=1) / tau

    return _enumerate(mdp, policy_class, max_policies, score)


def brute_force_mean(
    mdp, *, policy_class: str = "markov", max_policies: int = 2**16
) -> BruteForceResult:
    """``max over a policy class of E[Z^pi]`` (the risk-neutral optimum) by enumeration."""

    def score(probs: np.ndarray, paths: OutcomePaths) -> np.ndarray:
        return probs @ paths.returns

    return _enumerate(mdp, policy_class, max_policies, score)


def brute_force_worst_path(
    mdp, *, policy_class: str = "markov", max_policies: int = 2**16
) -> BruteForceResult:
    """``max over a policy class of min{ Z^pi on a positive-probability path }`` (Du et al. Eq. 2).

    Rewards enter through their means (as in :mod:`.iterated_cvar`), so this oracle needs
    deterministic rewards.
    """
    if mdp.reward_model != "deterministic":
        raise ValueError("the worst-path oracle is defined for deterministic rewards")

    def score(probs: np.ndarray, paths: OutcomePaths) -> np.ndarray:
        return np.where(probs > 0, paths.returns[None], np.inf).min(axis=1)

    return _enumerate(mdp, policy_class, max_policies, score)


def enumerate_markov_policies(mdp) -> np.ndarray:
    """All ``A ** (H * S)`` deterministic Markov policies, ``(n, H, S)`` int64 (tiny MDPs only)."""
    H, S, A = mdp.horizon, mdp.S, mdp.A
    n = A ** (H * S)
    if n > 2**20:
        raise TooManyPoliciesError(f"{A}^{H * S} = {n} Markov policies is too many to list")
    idx = np.arange(n, dtype=np.int64)
    powers = A ** np.arange(H * S, dtype=np.int64)
    return ((idx[:, None] // powers[None, :]) % A).reshape(n, H, S)
