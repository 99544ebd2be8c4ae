r"""DR-PO: RLHF policy optimisation whose rollouts reset to states of the offline preference data.

Seed reference: ``seed-catalogue-002-004.md#E4`` (row 002-004#E4). Paper: Jonathan D. Chang,
Wenhao Zhan, Owen Oertell, Kianté Brantley, Dipendra Misra, Jason D. Lee, Wen Sun, "Dataset Reset
Policy Optimization for RLHF", 2024 (arXiv:2404.08495).

What was read [V] (the catalogue row's quotations of the abstract): the two-step RLHF recipe,
"learning a reward model from an offline preference dataset followed by running online RL"; DR-PO
"directly resets the policy optimizer to the states in the offline dataset, instead of always
starting from the initial state distribution"; "DR-PO learns to perform at least as good as any
policy that is covered by the offline dataset under general function approximation with finite
sample complexity". The paper's algorithm box, its estimator and its constants were not read
(a time-boxed search found the abstract on public listing pages; the authors' code,
github.com/Cornell-RL/drpo, was not read); the twin below is reconstructed [A] from those
sentences and the catalogue's twin ("tabular finite-horizon token MDP; offline preference dataset
of trajectory pairs from a good policy pi_D; BTL reward MLE; NPG whose start-state distribution
mixes rho_0 with dataset states").

Algorithm (``dr-po``; [A] throughout), on a finite-horizon tabular MDP with policies
``pi (H, S, A)``:

1. data: ``pairs`` pairs of trajectories of pi_D = (1 - noise) pi* + noise Unif(A) (pi* by
   backward induction: a good policy, "covered" because the data are its own trajectories), each
   labelled by BTL on the true returns, P(tau^1 > tau^2) = sigma(R(tau^1) - R(tau^2));
2. reward model (``reward="mle"``): an *outcome* reward, a function of the last pair
   (s_{H-1}, a_{H-1}) alone -- a response-level reward, as in RLHF, where the last state of the
   token MDP is the whole response -- fitted by the constrained BTL MLE of
   :func:`theorylab.algorithms.preference.mle.btl_mle` (features: one-hot of the last pair,
   1'theta = 0, ||theta|| <= ``B``). ``reward="true"`` uses the true mean rewards instead;
3. K iterations of sampled natural policy gradient (softmax NPG, Kakade 2002 [M]): draw
   ``resets`` start points (h, s) from the reset distribution, at each take every action a once
   and then follow pi_k to the end, so Q_hat_h(s, a) is one unbiased draw of Q^{pi_k}_h(s, a)
   under the reward model; average the draws per (h, s) and step
   log pi_{k+1}(.|h, s) = log pi_k(.|h, s) + eta Q_hat_h(s, .) - log Z on the visited (h, s)
   (unvisited ones keep pi_k: nothing was learned there).

The reset distribution is the paper's one change (``reset``): ``"dataset"`` (DR-PO) draws a
trajectory of the offline data uniformly and a stage h uniformly and resets to its state s_h;
``"initial"`` (the baseline the paper improves on) rolls pi_k from rho_0 to a uniform stage h and
branches there, so it can only learn where pi_k already goes. The two spend the same number of
rollouts, resets * A per iteration.

What is measured exactly (no sampling): V^{pi_k}(rho_0) under the true reward for every iterate
(``objective``), the reward model's value (``regularised``), and V^{pi_D} (``config``).
On ``combination-lock:H,A`` with an outcome reward, pi_0 = uniform reaches the goal with
probability A^-H, so the no-reset baseline sees no signal within any polynomial budget (its value
stays near A^-H), while dataset resets land on path states at every depth, where one step of
the correct action is rewarded: the lock is learned backwards, stage by stage, and the output
exceeds V^{pi_D} = (1 - noise + noise / A)^H (``drpo-matches-covered-policy`` in
``validations/claims/preference.py``). Card: docs/algorithms/dr-po.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, logsumexp

from theorylab.algorithms.planning.evaluation import policy_values
from theorylab.algorithms.planning.finite_horizon import backward_induction
from theorylab.algorithms.planning.soft_value_iteration import policy_entropy
from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
)
from theorylab.algorithms.preference.mle import btl_mle
from theorylab.algorithms.registry import register

PAPERS = ("002-004#E4",)
RESETS = ("dataset", "initial")
REWARDS = ("mle", "true")


@dataclass(frozen=True)
class PreferenceData:
    """Trajectory pairs: states, actions ``(n, 2, H)`` int; y ``(n,)`` 1 when tau^1 was preferred;
    returns ``(n, 2)`` the true returns."""

    states: np.ndarray
    actions: np.ndarray
    y: np.ndarray
    returns: np.ndarray


def noisy_expert(mdp, noise: float) -> np.ndarray:
    """pi_D (H, S, A) = (1 - noise) pi* + noise Unif(A), pi* the backward-induction optimum."""
    H, S, A = mdp.horizon, mdp.S, mdp.A
    star = np.asarray(backward_induction(mdp).policy)  # (H, S) int
    pi = np.full((H, S, A), noise / A)
    np.put_along_axis(pi, star[..., None], (1.0 - noise) + noise / A, axis=-1)
    return pi


def _transitions(mdp) -> np.ndarray:
    """Cumulative transition rows (H, S, A, S) for inverse-CDF sampling."""
    P = mdp.dense_P()
    if P.ndim == 3:
        P = np.broadcast_to(P, (mdp.horizon, *P.shape))
    return np.cumsum(P, axis=-1)


def _draw(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Index of the first cdf entry above u, per row: cdf (n, K), u (n,) -> (n,)."""
    return np.minimum((u[:, None] >= cdf).sum(axis=1), cdf.shape[1] - 1)


def rollout(mdp, policy, stages, states, first_actions, reward, rng, cdf=None) -> np.ndarray:
    """Sum of ``reward`` (H, S, A) from (stages[i], states[i]) with first action first_actions[i]
    (-1: drawn from the policy), then pi to the horizon: one draw of Q^pi_h(s, a) per start (n,).
    """
    H = mdp.horizon
    cdf = _transitions(mdp) if cdf is None else cdf
    s = np.asarray(states, dtype=np.int64).copy()
    h0 = np.asarray(stages, dtype=np.int64)
    ret = np.zeros(s.size)
    pcdf = np.cumsum(policy, axis=-1)  # (H, S, A)
    for h in range(int(h0.min()) if h0.size else H, H):
        live = np.flatnonzero(h0 <= h)
        a = _draw(pcdf[h, s[live]], rng.random(live.size))
        forced = (h0[live] == h) & (first_actions[live] >= 0)
        a[forced] = first_actions[live][forced]
        ret[live] += reward[h, s[live], a]
        s[live] = _draw(cdf[h, s[live], a], rng.random(live.size))
    return ret


def sample_trajectories(mdp, policy: np.ndarray, n: int, rng, cdf=None):
    """n trajectories of ``policy`` (H, S, A) from mu0: states, actions (n, H) int."""
    H = mdp.horizon
    cdf = _transitions(mdp) if cdf is None else cdf
    s = _draw(np.cumsum(mdp.mu0)[None].repeat(n, 0), rng.random(n))
    pcdf = np.cumsum(policy, axis=-1)
    states, actions = np.empty((n, H), np.int64), np.empty((n, H), np.int64)
    for h in range(H):
        a = _draw(pcdf[h, s], rng.random(n))
        states[:, h], actions[:, h] = s, a
        s = _draw(cdf[h, s, a], rng.random(n))
    return states, actions


def true_returns(mdp, states: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """sum_h r_h(s_h, a_h) (mean rewards) of trajectories (..., H) -> (...)."""
    R = np.stack([mdp.reward(h) for h in range(mdp.horizon)])  # (H, S, A)
    return R[np.arange(mdp.horizon), states, actions].sum(axis=-1)


def preference_data(mdp, pi_d: np.ndarray, pairs: int, rng) -> PreferenceData:
    """``pairs`` BTL-labelled trajectory pairs of pi_D (step 1 of the module docstring)."""
    cdf = _transitions(mdp)
    st, ac = sample_trajectories(mdp, pi_d, 2 * pairs, rng, cdf)
    st, ac = st.reshape(pairs, 2, -1), ac.reshape(pairs, 2, -1)
    R = true_returns(mdp, st, ac)  # (n, 2)
    y = (rng.random(pairs) < expit(R[:, 0] - R[:, 1])).astype(np.float64)
    return PreferenceData(st, ac, y, R)


def outcome_features(mdp, states: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """One-hot of the last pair (s_{H-1}, a_{H-1}): (..., H) -> (..., S A)."""
    idx = states[..., -1] * mdp.A + actions[..., -1]
    return np.eye(mdp.S * mdp.A)[idx]


def fit_outcome_reward(mdp, data: PreferenceData, B: float) -> np.ndarray:
    """The constrained BTL MLE of the outcome reward, as a reward (H, S, A) paid at h = H - 1."""
    F = outcome_features(mdp, data.states, data.actions)  # (n, 2, S A)
    X = F[:, 0] - F[:, 1]
    theta = btl_mle(X[None], data.y[None], B)[0]
    reward = np.zeros((mdp.horizon, mdp.S, mdp.A))
    reward[-1] = theta.reshape(mdp.S, mdp.A)
    return reward


def reset_points(mdp, policy, data: PreferenceData, n: int, reset: str, rng, cdf=None):
    """n start points (stages (n,), states (n,)): dataset states (``"dataset"``, DR-PO) or states
    pi reaches from mu0 (``"initial"``), at a uniform stage."""
    H = mdp.horizon
    stages = rng.integers(0, H, size=n)
    if reset == "dataset":
        flat = data.states.reshape(-1, H)
        return stages, flat[rng.integers(0, flat.shape[0], size=n), stages]
    states, _ = sample_trajectories(mdp, policy, n, rng, cdf)
    return stages, states[np.arange(n), stages]


def reward_values(mdp, policies: np.ndarray, reward: np.ndarray) -> np.ndarray:
    """Exact V^pi_0(mu0) of policies (B, H, S, A) under a reward (H, S, A) of any range: (B,)."""
    V = np.zeros((policies.shape[0], mdp.S))  # (B, S)
    for h in range(mdp.horizon - 1, -1, -1):
        Q = reward[h][None] + mdp.expected_next(V, h)  # (B, S, A)
        V = (policies[:, h] * Q).sum(axis=-1)
    return V @ mdp.mu0


def npg_step(logits, stages, states, q_hat, eta: float) -> np.ndarray:
    """log pi += eta * mean Q_hat on the visited (h, s), renormalised (H, S, A)."""
    H, S, A = logits.shape
    total, count = np.zeros((H, S, A)), np.zeros((H, S))
    np.add.at(total, (stages, states), q_hat)
    np.add.at(count, (stages, states), 1.0)
    seen = count > 0
    new = logits.copy()
    new[seen] += eta * total[seen] / count[seen][:, None]
    return new - logsumexp(new, axis=-1, keepdims=True)


@register("dr-po", kind="policy-optimization", problem="tabular", papers=PAPERS)
def drpo_iterates(
    mdp,
    iterations: int,
    *,
    pairs: int = 4000,
    noise: float = 0.1,
    resets: int = 64,
    eta: float = 1.0,
    reset: str = "dataset",
    reward: str = "mle",
    B: float = 10.0,
    sample_seed: int = 0,
) -> PolicyPath:
    """DR-PO (Chang et al. 2024): BTL outcome-reward MLE from pi_D's trajectory pairs, then
    sampled NPG whose rollouts reset to dataset states (``reset="initial"``: the baseline;
    module docstring)."""
    who = "dr-po"
    K = check_iterations(who, iterations)
    if reset not in RESETS:
        raise ValueError(f"{who}: reset must be one of {RESETS}, got {reset!r}")
    if reward not in REWARDS:
        raise ValueError(f"{who}: reward must be one of {REWARDS}, got {reward!r}")
    for name, value in (("pairs", pairs), ("resets", resets)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{who}: {name} must be a positive integer, got {value!r}")
    eta = check_number(who, "eta", eta)
    B = check_number(who, "B", B)
    noise = check_number(who, "noise", noise, positive=False)
    if noise > 1:
        raise ValueError(f"{who}: noise must lie in [0, 1], got {noise!r}")
    if getattr(mdp, "horizon", None) is None:
        raise ValueError(
            f"{who} is stated for finite-horizon MDPs; give one with H (e.g. "
            f"combination-lock:H=8,A=4), got {getattr(mdp, 'name', mdp)!r}"
        )
    H, S, A = mdp.horizon, mdp.S, mdp.A
    rng = np.random.default_rng(sample_seed)
    cdf = _transitions(mdp)
    pi_d = noisy_expert(mdp, noise)
    data = preference_data(mdp, pi_d, int(pairs), rng)
    if reward == "mle":
        r_hat = fit_outcome_reward(mdp, data, B)
    else:
        r_hat = np.stack([mdp.reward(h) for h in range(H)])
    logits = np.full((H, S, A), -np.log(A))
    pis = [np.exp(logits)]
    for _ in range(K):
        pi = pis[-1]
        stages, states = reset_points(mdp, pi, data, int(resets), reset, rng, cdf)
        starts_h, starts_s = np.repeat(stages, A), np.repeat(states, A)
        first = np.tile(np.arange(A), int(resets))
        q_hat = rollout(mdp, pi, starts_h, starts_s, first, r_hat, rng, cdf).reshape(-1, A)
        logits = npg_step(logits, stages, states, q_hat, eta)
        pis.append(np.exp(logits))
    policies = np.stack(pis)  # (K+1, H, S, A)
    values = policy_values(mdp, policies, batched=True)  # (K+1,)
    model_values = reward_values(mdp, policies, r_hat)
    return PolicyPath(
        objective=np.asarray(values, dtype=np.float64),
        regularised=np.asarray(model_values, dtype=np.float64),
        entropy=policy_entropy(policies).mean(axis=(-1, -2)),
        target_gap=np.full(K + 1, np.nan),
        target_value=float("nan"),
        policies=policies,
        config={
            "reset": reset,
            "reward": reward,
            "pairs": int(pairs),
            "noise": float(noise),
            "resets": int(resets),
            "eta": float(eta),
            "B": float(B),
            "sample_seed": int(sample_seed),
            "rollouts_per_iteration": int(resets) * A,
            "value_pi_D": float(policy_values(mdp, pi_d)),
        },
    )
