r"""Demonstration-regularised RL: behaviour cloning, then RL regularised toward the clone.

Seed rows ``seed-catalogue-001.md#24`` = ``seed-catalogue-002-004.md#A2``: D. Tiapkin,
D. Belomestny, D. Calandriello, E. Moulines, R. Munos, A. Naumov, P. Perrault, M. Valko,
P. Menard, "Demonstration-Regularized RL", ICLR 2024 (arXiv:2310.17303).

What was read [V] (the abstract, through the stored ICLR text's first page): the method
"leverages the expert demonstrations by KL-regularization for a policy learned by behavior
cloning"; with N^E expert demonstrations an optimal policy is identified with
O~(Poly(S, A, H) / (eps^2 N^E)) samples in finite MDPs; tight guarantees for behaviour cloning.
A third-party summary [S] adds that the finite-MDP clone is the maximum-likelihood estimate with
a logarithmic regulariser that keeps every action's probability positive. Not read: the
exploration algorithm (the catalogue names it UCBVI-Ent+), its bonuses and its constants.
Reconstructed [A]:

* behaviour cloning (the log-regularised MLE, which is add-kappa smoothing of the counts):
  pi_BC_h(a|s) = (N_h(s, a) + kappa) / (N_h(s) + A kappa) from N_E expert trajectories;
* KL-regularised backward induction toward pi_BC (the planning floor's
  :func:`~theorylab.algorithms.planning.soft_value_iteration.soft_backward_induction`):
  V_h(s) = lam log sum_a pi_BC_h(a|s) exp(Q_h(s, a) / lam); as lam -> 0 it is backward induction
  (0 <= V*_h - V^lam_h <= lam sum_{h' >= h} max_s log(1 / pi_BC_{h'}(a*|s)), derived [A]), as
  lam -> infinity it evaluates pi_BC;
* the exploration phase (optimistic KL-regularised planning toward pi_BC on an estimated model,
  with a stopping certificate) and the paper's guarantee -- samples to eps falling like 1 / N_E --
  are ``demo-regularised-bpi`` (:mod:`theorylab.algorithms.online.demo_regularised_bpi`).

Algorithm (``demo-regularised-vi``): BC from N_E expert episodes of the optimal policy, then the
regularised optimum toward pi_BC on the known model along lam_k = lam decay^k (k = 0..K), each
iterate scored exactly: J(pi_k), the regularised optimum V^lam_k(mu0), the entropy; V*(mu0) as the
target (the lam -> 0 limit).
"""

from __future__ import annotations

import numpy as np

from theorylab.algorithms.planning.evaluation import evaluate_policies
from theorylab.algorithms.planning.finite_horizon import backward_induction
from theorylab.algorithms.planning.soft_value_iteration import (
    policy_entropy,
    soft_backward_induction,
)
from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_positive,
)
from theorylab.algorithms.registry import register

PAPERS = ("001#24", "002-004#A2")


def expert_demonstrations(mdp, n: int, rng: np.random.Generator):
    """N_E trajectories (states, actions: (N_E, H)) of the optimal deterministic policy."""
    if n == 0:
        return np.zeros((0, mdp.horizon), np.int64), np.zeros((0, mdp.horizon), np.int64)
    policy = backward_induction(mdp).policy  # (H, S)
    tr = mdp.rollout(policy, n_seeds=int(n), rng=rng)
    return tr.states, tr.actions


def behaviour_cloning(states, actions, S: int, A: int, H: int, smoothing: float) -> np.ndarray:
    """pi_BC (H, S, A) = (N_h(s, a) + kappa) / (N_h(s) + A kappa) from (N_E, H) states and
    actions (kappa = smoothing > 0; no demonstrations: the uniform policy)."""
    counts = np.zeros((H, S, A))
    if np.size(states):
        h = np.broadcast_to(np.arange(H), np.shape(states))
        np.add.at(counts, (h.ravel(), np.ravel(states), np.ravel(actions)), 1.0)
    counts += smoothing
    return counts / counts.sum(axis=-1, keepdims=True)


def regularised_return(mdp, policy: np.ndarray, lam: float, reference: np.ndarray) -> float:
    """E_pi sum_h [r_h - lam KL(pi_h(s_h) || ref_h(s_h))] from mu0, exactly (H, S, A) policies."""
    H = mdp.horizon
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = np.where(policy > 0, policy * (np.log(policy) - np.log(reference)), 0.0).sum(-1)
    V = np.zeros(mdp.S)
    for h in range(H - 1, -1, -1):
        Q = mdp.reward(h) + mdp.expected_next(V, h)
        V = (policy[h] * Q).sum(axis=1) - lam * kl[h]
    return float(V @ mdp.mu0)


def demo_regularised_iterates(
    mdp,
    iterations: int,
    *,
    demonstrations: int,
    lam: float,
    decay: float = 0.5,
    smoothing: float = 1.0,
    seed: int = 0,
) -> PolicyPath:
    """BC from ``demonstrations`` expert episodes (drawn from ``seed``), then KL-regularised
    backward induction toward pi_BC at lam_k = lam decay^k, k = 0..K (module docstring)."""
    iterations = check_iterations("demo-regularised-vi", iterations)
    if (
        isinstance(demonstrations, bool)
        or not isinstance(demonstrations, (int, np.integer))
        or demonstrations < 0
    ):
        raise ValueError(
            f"demo-regularised-vi: demonstrations must be an integer >= 0, got {demonstrations!r}"
        )
    check_positive("demo-regularised-vi", lam=lam, smoothing=smoothing, decay=decay)
    if decay >= 1:
        raise ValueError(f"demo-regularised-vi: decay must be in (0, 1), got {decay!r}")
    if getattr(mdp, "horizon", None) is None or getattr(mdp, "gamma", None) is not None:
        raise ValueError(
            "demo-regularised-vi is stated for finite-horizon MDPs; give one with H and no "
            f"gamma (e.g. random:S=5,A=3,H=5), got {getattr(mdp, 'name', mdp)!r}"
        )
    H, S, A = mdp.horizon, mdp.S, mdp.A
    states, actions = expert_demonstrations(mdp, demonstrations, np.random.default_rng(seed))
    ref = behaviour_cloning(states, actions, S, A, H, smoothing)
    lams = lam * decay ** np.arange(iterations + 1)
    solved = [soft_backward_induction(mdp, float(lk), ref) for lk in lams]
    pis = np.stack([pi for _, _, pi in solved])  # (K+1, H, S, A)
    values = evaluate_policies(mdp, pis, batched=True)[:, 0] @ mdp.mu0  # (K+1,)
    return PolicyPath(
        objective=values,
        regularised=np.array([float(V[0] @ mdp.mu0) for V, _, _ in solved]),
        entropy=policy_entropy(pis).mean(axis=(-1, -2)),
        target_gap=np.full(pis.shape[0], np.nan),
        target_value=float(backward_induction(mdp).value),
        policies=pis,
        config={
            "demonstrations": int(demonstrations),
            "lam": [float(x) for x in lams],
            "smoothing": float(smoothing),
            "seed": int(seed),
            "bc_policy": ref,
        },
    )


@register("demo-regularised-vi", kind="policy-optimization", problem="tabular", papers=PAPERS)
def demo_regularised_vi(
    problem,
    iterations,
    demonstrations: int = 10,
    lam: float = 1.0,
    decay: float = 0.5,
    smoothing: float = 1.0,
    seed: int = 0,
):
    """BC from expert demonstrations, then KL-regularised backward induction toward pi_BC
    along lam_k = lam decay^k (k = 0..K): lam -> 0 recovers backward induction."""
    return demo_regularised_iterates(
        problem,
        iterations,
        demonstrations=demonstrations,
        lam=lam,
        decay=decay,
        smoothing=smoothing,
        seed=seed,
    )
